//! Times relative to now, as the CLI takes them (`-6h`, `now`).

use sightline_storage::UnixNanos;

use super::{Nanos, TimeError, units};

/// A time given on the command line (`--start`, `--end`, `--time`; `--since D` is `-D`):
///
/// * `now`;
/// * `-DURATION`: that long before now, `DURATION` in the `SecondsOrUnits` unit grammar
///   (`-6h`, `-1h30m`, `-250ms`); a `-` followed by a plain number (`-5`, `-1.5`) is not
///   relative but negative Unix seconds;
/// * anything else: an absolute time in the `Rfc3339OrSeconds` dialect.
///
/// Errors are those of the `SecondsOrUnits` duration or the `Rfc3339OrSeconds` time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelativeTime {
    /// `now`.
    Now,
    /// `-DURATION`.
    Ago(Nanos),
    /// An absolute time.
    At(UnixNanos),
}

impl RelativeTime {
    /// Parses a CLI time.
    pub fn parse(s: &str) -> Result<Self, TimeError> {
        if s == "now" {
            return Ok(Self::Now);
        }
        if let Some(d) = s.strip_prefix('-')
            && !d.is_empty()
            && d.parse::<f64>().is_err()
        {
            return units::parse_seconds_or_units(d).map(Self::Ago);
        }
        units::parse_rfc3339_or_seconds(s).map(Self::At)
    }

    /// The time it names when it is `now` (saturating).
    pub fn resolve(self, now: UnixNanos) -> UnixNanos {
        match self {
            Self::Now => now,
            Self::Ago(d) => UnixNanos(now.0.saturating_sub(d.0)),
            Self::At(t) => t,
        }
    }

    /// `now`, `-1h30m`, or RFC 3339; [`RelativeTime::parse`] reads it back.
    pub fn render(self) -> String {
        match self {
            Self::Now => "now".into(),
            Self::Ago(d) => format!("-{}", units::render_units(d)),
            Self::At(t) => units::render_rfc3339(t),
        }
    }
}
