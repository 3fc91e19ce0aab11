//! Times and durations as the HTTP APIs and the CLI accept them: RFC 3339 timestamps or Unix
//! seconds (with fractions), and Prometheus-style durations (`1h30m`, `500ms`, `2.5s`, or plain
//! seconds).

use sightline_storage::UnixNanos;

use crate::error::{QueryError, Result};

/// Parses `2026-01-01T00:00:00Z` (any RFC 3339 offset) or Unix seconds such as `1767225600.5`.
pub fn parse_time(s: &str) -> Result<UnixNanos> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<f64>() {
        if !secs.is_finite() || secs.abs() > 9.2e9 {
            return Err(QueryError::BadRequest(format!(
                "time {s:?} is out of range"
            )));
        }
        return Ok(UnixNanos((secs * 1e9).round() as i64));
    }
    let t = chrono::DateTime::parse_from_rfc3339(s).map_err(|e| {
        QueryError::BadRequest(format!(
            "cannot parse {s:?} as a time (RFC 3339 or Unix seconds): {e}"
        ))
    })?;
    t.timestamp_nanos_opt()
        .map(UnixNanos)
        .ok_or_else(|| QueryError::BadRequest(format!("time {s:?} is out of range")))
}

/// Parses a duration into nanoseconds: `1h30m`, `5m`, `250ms`, `1.5s`, `2d`, `1w`, `1y`
/// (365 days), or a plain number of seconds. Negative durations are refused.
pub fn parse_duration(s: &str) -> Result<i64> {
    let s = s.trim();
    let bad = || QueryError::BadRequest(format!("cannot parse {s:?} as a duration"));
    if let Ok(secs) = s.parse::<f64>() {
        if !secs.is_finite() || !(0.0..=9.2e9).contains(&secs) {
            return Err(bad());
        }
        return Ok((secs * 1e9).round() as i64);
    }
    if s.is_empty() {
        return Err(bad());
    }
    let mut total: i128 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if num_end == 0 {
            return Err(bad());
        }
        let n: f64 = rest[..num_end].parse().map_err(|_| bad())?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit: i128 = match &rest[..unit_end] {
            "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "d" => 86_400_000_000_000,
            "w" => 604_800_000_000_000,
            "y" => 31_536_000_000_000_000,
            _ => return Err(bad()),
        };
        rest = &rest[unit_end..];
        total += (n * unit as f64).round() as i128;
        if total > i64::MAX as i128 {
            return Err(bad());
        }
    }
    Ok(total as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(parse_time("4").ok(), Some(UnixNanos(4_000_000_000)));
        assert_eq!(parse_time("1.5").ok(), Some(UnixNanos(1_500_000_000)));
        assert_eq!(
            parse_time("2026-01-01T00:00:00Z").ok(),
            Some(UnixNanos(1_767_225_600_000_000_000))
        );
        assert_eq!(
            parse_time("2026-01-01T01:00:00+01:00").ok(),
            Some(UnixNanos(1_767_225_600_000_000_000))
        );
        assert!(parse_time("yesterday").is_err());
        assert!(parse_time("NaN").is_err());
        assert!(parse_time("1e300").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1h30m").ok(), Some(5_400_000_000_000));
        assert_eq!(parse_duration("250ms").ok(), Some(250_000_000));
        assert_eq!(parse_duration("1.5s").ok(), Some(1_500_000_000));
        assert_eq!(parse_duration("15").ok(), Some(15_000_000_000));
        assert_eq!(parse_duration("2d").ok(), Some(172_800_000_000_000));
        for bad in ["", "5x", "m", "-1s", "1h-", "999999999y"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
