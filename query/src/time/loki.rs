//! Loki's query API times and steps (`TimeDialect::Loki`, `DurationDialect::LokiStep`).

use sightline_storage::UnixNanos;

use super::{Dialect, DurationDialect, Nanos, TimeDialect, TimeError, TimeErrorKind, units};
use crate::error::QueryError;

/// An integer (nanoseconds; 10 digits or fewer are seconds), a float (seconds), or RFC 3339.
pub(super) fn parse_time(s: &str) -> Result<UnixNanos, TimeError> {
    let s = s.trim();
    let bad = |kind| {
        TimeError::new(
            Dialect::Time(TimeDialect::Loki),
            kind,
            format!("invalid timestamp {s:?}: use Unix nanoseconds, seconds or RFC3339"),
        )
    };
    if let Ok(n) = s.parse::<i64>() {
        let digits = s.trim_start_matches('-').len();
        return if digits <= 10 {
            n.checked_mul(1_000_000_000)
                .map(UnixNanos)
                .ok_or_else(|| bad(TimeErrorKind::OutOfRange))
        } else {
            Ok(UnixNanos(n))
        };
    }
    if let Ok(f) = s.parse::<f64>() {
        let ns = f * 1e9;
        return if ns.is_finite() && ns.abs() < 9.2e18 {
            Ok(UnixNanos(ns.round() as i64))
        } else {
            Err(bad(TimeErrorKind::OutOfRange))
        };
    }
    // RFC 3339 (any offset), through the same parser as the native APIs.
    units::parse_rfc3339_or_seconds(s).map_err(|e| bad(e.kind()))
}

/// Integer nanoseconds when they have more than 10 digits (fewer would read as seconds),
/// RFC 3339 otherwise.
pub(super) fn render_time(t: UnixNanos) -> String {
    if t.0.unsigned_abs() >= 10_000_000_000 {
        t.0.to_string()
    } else {
        units::render_rfc3339(t)
    }
}

/// A step or window: a positive number of seconds (`15`, `0.5`) or a LogQL duration.
pub(super) fn parse_step(s: &str) -> Result<Nanos, TimeError> {
    let s = s.trim();
    let d = Dialect::Duration(DurationDialect::LokiStep);
    if let Ok(f) = s.parse::<f64>() {
        let ns = f * 1e9;
        if ns.is_finite() && (1.0..9.2e18).contains(&ns) {
            return Ok(Nanos(ns.round() as i64));
        }
        let kind = if ns.is_finite() && ns < 1.0 {
            TimeErrorKind::NotPositive
        } else {
            TimeErrorKind::OutOfRange
        };
        return Err(TimeError::new(
            d,
            kind,
            format!("invalid step {s:?}: must be positive"),
        ));
    }
    units::parse_logql(s).map_err(|e| {
        let kind = e.kind();
        TimeError::new(d, kind, QueryError::from(e).to_string())
    })
}
