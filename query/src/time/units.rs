//! Unit-suffixed durations (`SecondsOrUnits`, `LogQl`, `TraceQl`) and the float-seconds or
//! RFC 3339 times (`Rfc3339OrSeconds`, `UnixSeconds`).

use sightline_storage::UnixNanos;

use super::{Dialect, DurationDialect, Nanos, TimeDialect, TimeError, TimeErrorKind};

fn err(d: Dialect, kind: TimeErrorKind, message: String) -> TimeError {
    TimeError::new(d, kind, message)
}

/// `TimeDialect::Rfc3339OrSeconds`.
pub(super) fn parse_rfc3339_or_seconds(s: &str) -> Result<UnixNanos, TimeError> {
    let d = Dialect::Time(TimeDialect::Rfc3339OrSeconds);
    let s = s.trim();
    let out_of_range = || {
        err(
            d,
            TimeErrorKind::OutOfRange,
            format!("time {s:?} is out of range"),
        )
    };
    if let Ok(secs) = s.parse::<f64>() {
        if !secs.is_finite() || secs.abs() > 9.2e9 {
            return Err(out_of_range());
        }
        return Ok(UnixNanos((secs * 1e9).round() as i64));
    }
    let t = chrono::DateTime::parse_from_rfc3339(s).map_err(|e| {
        err(
            d,
            TimeErrorKind::Syntax,
            format!("cannot parse {s:?} as a time (RFC 3339 or Unix seconds): {e}"),
        )
    })?;
    t.timestamp_nanos_opt()
        .map(UnixNanos)
        .ok_or_else(out_of_range)
}

/// RFC 3339 in UTC with nine fractional digits (exact for every [`UnixNanos`]).
pub(super) fn render_rfc3339(t: UnixNanos) -> String {
    chrono::DateTime::from_timestamp_nanos(t.0).to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}

/// `TimeDialect::UnixSeconds`.
pub(super) fn parse_unix_seconds(v: &str) -> Result<UnixNanos, TimeError> {
    let d = Dialect::Time(TimeDialect::UnixSeconds);
    let s: f64 = v.trim().parse().map_err(|_| {
        err(
            d,
            TimeErrorKind::Syntax,
            format!("expected unix seconds, got {v:?}"),
        )
    })?;
    if !s.is_finite() || s.abs() > 9.2e9 {
        return Err(err(
            d,
            TimeErrorKind::OutOfRange,
            format!("{v} is out of range"),
        ));
    }
    Ok(UnixNanos((s * 1e9).round() as i64))
}

/// Nanoseconds per unit of `SecondsOrUnits` (and so `LogQl`).
pub(super) fn sightline_unit(unit: &str) -> Option<i128> {
    Some(match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        "w" => 604_800_000_000_000,
        "y" => 31_536_000_000_000_000,
        _ => return None,
    })
}

/// Nanoseconds per unit of Go's `time.ParseDuration` (`TraceQl`).
pub(super) fn go_unit(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" => 60e9,
        "h" => 3600e9,
        _ => return None,
    })
}

/// Splits `NUMBER UNIT NUMBER UNIT ...` (numbers of digits and dots), calling `component` with
/// each number's text and unit; `None` when the text is not in that shape.
fn components(s: &str, mut component: impl FnMut(&str, &str) -> Option<()>) -> Option<()> {
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        if num_end == 0 {
            return None;
        }
        let number = &rest[..num_end];
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        component(number, &rest[..unit_end])?;
        rest = &rest[unit_end..];
    }
    Some(())
}

/// `DurationDialect::SecondsOrUnits`.
pub(super) fn parse_seconds_or_units(s: &str) -> Result<Nanos, TimeError> {
    let s = s.trim();
    let bad = || {
        err(
            Dialect::Duration(DurationDialect::SecondsOrUnits),
            TimeErrorKind::Syntax,
            format!("cannot parse {s:?} as a duration"),
        )
    };
    if let Ok(secs) = s.parse::<f64>() {
        if !secs.is_finite() || !(0.0..=9.2e9).contains(&secs) {
            return Err(bad());
        }
        return Ok(Nanos((secs * 1e9).round() as i64));
    }
    if s.is_empty() {
        return Err(bad());
    }
    let mut total: i128 = 0;
    components(s, |number, unit| {
        let n: f64 = number.parse().ok()?;
        let unit = sightline_unit(unit)?;
        total += (n * unit as f64).round() as i128;
        (total <= i64::MAX as i128).then_some(())
    })
    .ok_or_else(bad)?;
    Ok(Nanos(total as i64))
}

/// `DurationDialect::LogQl`.
pub(super) fn parse_logql(s: &str) -> Result<Nanos, TimeError> {
    let s = s.trim();
    let d = Dialect::Duration(DurationDialect::LogQl);
    if s.parse::<f64>().is_ok() {
        return Err(err(
            d,
            TimeErrorKind::MissingUnit,
            format!("bad duration {s:?}: a unit is needed"),
        ));
    }
    let total = parse_seconds_or_units(s)
        .map_err(|_| err(d, TimeErrorKind::Syntax, format!("bad duration {s:?}")))?;
    if total.0 <= 0 {
        return Err(err(
            d,
            TimeErrorKind::NotPositive,
            format!("duration {s:?} must be positive"),
        ));
    }
    Ok(total)
}

/// `DurationDialect::TraceQl`.
pub(super) fn parse_traceql(src: &str) -> Result<Nanos, TimeError> {
    let s = src.trim();
    let bad = |kind| {
        err(
            Dialect::Duration(DurationDialect::TraceQl),
            kind,
            format!("bad duration {src:?} (use e.g. 250ms, 1.5s, 1m30s)"),
        )
    };
    if s.is_empty() {
        return Err(bad(TimeErrorKind::Syntax));
    }
    if s == "0" {
        return Ok(Nanos(0));
    }
    let mut total = 0f64;
    components(s, |number, unit| {
        let value: f64 = number.parse().ok()?;
        total += value * go_unit(unit)?;
        Some(())
    })
    .ok_or_else(|| bad(TimeErrorKind::Syntax))?;
    if !total.is_finite() || total > i64::MAX as f64 {
        return Err(bad(TimeErrorKind::OutOfRange));
    }
    Ok(Nanos(total.round() as i64))
}

/// `1h2m3s4ms5us6ns` with the zero components left out (`0s` for zero); the magnitude of a
/// negative duration.
pub(super) fn render_units(d: Nanos) -> String {
    let mut n = d.0.unsigned_abs();
    if n == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    for (unit, size) in [
        ("h", 3_600_000_000_000u64),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ] {
        if n >= size {
            out.push_str(&format!("{}{unit}", n / size));
            n %= size;
        }
    }
    out
}
