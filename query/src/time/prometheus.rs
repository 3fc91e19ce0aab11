//! The Prometheus HTTP API's times and durations, in milliseconds, with Prometheus' error
//! wording (`TimeDialect::Prometheus`, `DurationDialect::Prometheus`).

use super::{Dialect, DurationDialect, Millis, TimeDialect, TimeError, TimeErrorKind, UnixMillis};

/// The Prometheus duration units, in the order they must appear, in milliseconds.
const UNITS: [(&str, i64); 7] = [
    ("y", 365 * 86_400_000),
    ("w", 7 * 86_400_000),
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1000),
    ("ms", 1),
];

pub(super) fn unit_millis(unit: &str) -> Option<i64> {
    UNITS.iter().find(|(u, _)| *u == unit).map(|(_, ms)| *ms)
}

pub(super) fn time_error(raw: &str) -> TimeError {
    TimeError::new(
        Dialect::Time(TimeDialect::Prometheus),
        TimeErrorKind::Syntax,
        format!("cannot parse \"{raw}\" to a valid timestamp"),
    )
}

pub(super) fn duration_overflow(raw: &str) -> TimeError {
    TimeError::new(
        Dialect::Duration(DurationDialect::Prometheus),
        TimeErrorKind::OutOfRange,
        format!("cannot parse \"{raw}\" to a valid duration. It overflows int64"),
    )
}

/// Milliseconds since the epoch: Unix seconds (fractions rounded to the millisecond) or
/// RFC 3339.
pub(super) fn parse_time(raw: &str) -> Result<UnixMillis, TimeError> {
    if let Ok(secs) = raw.parse::<f64>() {
        if !secs.is_finite() {
            return Err(time_error(raw));
        }
        let ms = (secs * 1000.0).round();
        // Prometheus' own min/max time (about +-292 million years) is wider than an i64 of
        // milliseconds; we bound to what that holds.
        if ms.abs() >= 9.2e18 {
            return Err(time_error(raw));
        }
        return Ok(UnixMillis(ms as i64));
    }
    chrono::DateTime::parse_from_rfc3339(raw)
        .map(|t| UnixMillis(t.timestamp_millis()))
        .map_err(|_| time_error(raw))
}

/// Unix seconds with three decimals (`1435781451.781`, `-1.500`).
pub(super) fn render_time(t: UnixMillis) -> String {
    let sign = if t.0 < 0 { "-" } else { "" };
    let a = t.0.unsigned_abs();
    format!("{sign}{}.{:03}", a / 1000, a % 1000)
}

/// Float seconds or a Prometheus duration string (`1y2w3d4h5m6s7ms`).
pub(super) fn parse_duration(raw: &str) -> Result<Millis, TimeError> {
    if let Ok(secs) = raw.parse::<f64>() {
        let ms = secs * 1000.0;
        if !ms.is_finite() || ms.abs() >= 9.2e15 {
            return Err(duration_overflow(raw));
        }
        return Ok(Millis(ms.round() as i64));
    }
    parse_units(raw).map(Millis).ok_or_else(|| {
        TimeError::new(
            Dialect::Duration(DurationDialect::Prometheus),
            TimeErrorKind::Syntax,
            format!("cannot parse \"{raw}\" to a valid duration"),
        )
    })
}

/// `model.ParseDuration`: integer components, units in [`UNITS`] order, each at most once.
fn parse_units(s: &str) -> Option<i64> {
    if s.is_empty() {
        return None;
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut total: i64 = 0;
    let mut last_unit: Option<usize> = None;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        let n: i64 = s.get(start..i)?.parse().ok()?;
        let ustart = i;
        while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
            i += 1;
        }
        let unit = s.get(ustart..i)?;
        let idx = UNITS.iter().position(|(u, _)| *u == unit)?;
        if last_unit.is_some_and(|l| idx <= l) {
            return None;
        }
        last_unit = Some(idx);
        total = total.checked_add(n.checked_mul(UNITS[idx].1)?)?;
    }
    Some(total)
}

/// Prometheus' own form (`model.Duration.String`): `1d2h3m4s5ms`, `0s` for zero; float seconds
/// (`-1.5`) for a negative duration, which that form cannot spell.
pub(super) fn render_duration(d: Millis) -> String {
    if d.0 < 0 {
        let a = d.0.unsigned_abs();
        return format!("-{}.{:03}", a / 1000, a % 1000);
    }
    if d.0 == 0 {
        return "0s".into();
    }
    let mut n = d.0;
    let mut out = String::new();
    for (unit, size) in UNITS {
        if n >= size {
            out.push_str(&format!("{}{unit}", n / size));
            n %= size;
        }
    }
    out
}
