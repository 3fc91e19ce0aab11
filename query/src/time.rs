//! Every way Sightline reads a time or a duration, in one place: the Prometheus, Loki, Tempo
//! and native HTTP APIs, query plans, LogQL and TraceQL durations, and the CLI's relative
//! times (`-6h`, `now`).
//!
//! Each grammar is a named dialect ([`TimeDialect`], [`DurationDialect`]) whose `///` docs give
//! its exact grammar and upstream reference. Results are typed: [`UnixNanos`] and [`Nanos`],
//! or [`UnixMillis`] and [`Millis`] where the dialect works in milliseconds (Prometheus, whose
//! range is wider than nanoseconds hold). Every failure is one [`TimeError`], whose message is
//! the dialect's own wording (Prometheus' for Prometheus), and which converts into
//! [`QueryError`] (a `Parse` error for LogQL, `BadRequest` otherwise).
//!
//! Submodules hold the grammars: `prometheus` (Prometheus API), `loki` (Loki API times and
//! steps), `units` (unit-suffixed durations: native, LogQL, TraceQL), `relative` (CLI).

mod loki;
mod prometheus;
mod relative;
mod units;

#[cfg(test)]
mod tests;

pub use relative::RelativeTime;
pub use sightline_storage::UnixNanos;
use sightline_storage::{Clock, SystemClock};

use crate::error::{QueryError, Result};

/// Now, from the system clock (storage's [`SystemClock`]); before 1970 reads as 0.
pub fn now() -> UnixNanos {
    SystemClock.now()
}

/// Milliseconds since the Unix epoch (Prometheus' sample and API time resolution).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixMillis(pub i64);

impl From<UnixNanos> for UnixMillis {
    /// Floors to the millisecond.
    fn from(t: UnixNanos) -> Self {
        Self(t.as_millis())
    }
}

/// A signed duration in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(pub i64);

/// A signed duration in milliseconds (Prometheus).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Millis(pub i64);

/// Unix seconds of `t` as `f64`, computed as [`std::time::Duration::as_secs_f64`] does (whole
/// seconds plus the fraction), for clients that send float seconds.
pub fn unix_secs_f64(t: UnixNanos) -> f64 {
    t.0.div_euclid(UnixNanos::PER_SEC) as f64 + t.0.rem_euclid(UnixNanos::PER_SEC) as f64 / 1e9
}

/// The grammars of a point in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeDialect {
    /// The Prometheus HTTP API's `time`, `start` and `end` (upstream: `parseTime` in
    /// `web/api/v1/api.go`): a float of Unix seconds (Rust's `f64` syntax, so `1.5`, `-2`,
    /// `1e3`; not trimmed), rounded to the millisecond and refused when not finite or
    /// `|ms| >= 9.2e18`; otherwise RFC 3339 (any offset), truncated to the millisecond.
    /// Error: `cannot parse "RAW" to a valid timestamp`. Native resolution: milliseconds
    /// ([`prometheus_time`]).
    Prometheus,
    /// Loki's query API times (upstream: `ParseTime` in `pkg/util/time.go` of Loki), trimmed:
    /// an integer (`i64`) of at most 10 characters after any leading `-` is Unix seconds, a
    /// longer one Unix nanoseconds; otherwise a float of seconds (`|ns| < 9.2e18`); otherwise
    /// RFC 3339. Error: `invalid timestamp "S": use Unix nanoseconds, seconds or RFC3339`.
    Loki,
    /// Sightline's native APIs, query plans and the CLI, trimmed: a float of Unix seconds
    /// (`|s| <= 9.2e9`, rounded to the nanosecond) or RFC 3339 with any offset. Errors:
    /// `time "S" is out of range`, `cannot parse "S" as a time (RFC 3339 or Unix seconds):
    /// REASON`.
    Rfc3339OrSeconds,
    /// The native trace API's and Tempo's `start`/`end` (upstream: Tempo's search API takes
    /// Unix epoch seconds): only a float of Unix seconds (trimmed, `|s| <= 9.2e9`, rounded to
    /// the nanosecond). Errors: `expected unix seconds, got "RAW"`, `RAW is out of range`
    /// (callers prefix the parameter name).
    UnixSeconds,
}

impl TimeDialect {
    /// Parses `s` in this dialect. Prometheus times outside what [`UnixNanos`] holds are
    /// refused here; [`prometheus_time`] reads the Prometheus dialect at its full range.
    pub fn parse(self, s: &str) -> Result<UnixNanos, TimeError> {
        match self {
            TimeDialect::Prometheus => {
                let ms = prometheus::parse_time(s)?;
                ms.0.checked_mul(UnixNanos::PER_MILLI)
                    .map(UnixNanos)
                    .ok_or_else(|| prometheus::time_error(s))
            }
            TimeDialect::Loki => loki::parse_time(s),
            TimeDialect::Rfc3339OrSeconds => units::parse_rfc3339_or_seconds(s),
            TimeDialect::UnixSeconds => units::parse_unix_seconds(s),
        }
    }

    /// Renders `t` so that [`TimeDialect::parse`] reads it back: exactly for `Loki` and
    /// `Rfc3339OrSeconds` (RFC 3339 with nanoseconds, or Loki's integer nanoseconds), to the
    /// millisecond for `Prometheus` (`1435781451.781`), and as `SECS.NNNNNNNNN` (a float, so
    /// within two microseconds) for `UnixSeconds`.
    pub fn render(self, t: UnixNanos) -> String {
        match self {
            TimeDialect::Prometheus => prometheus::render_time(UnixMillis::from(t)),
            TimeDialect::Loki => loki::render_time(t),
            TimeDialect::Rfc3339OrSeconds => units::render_rfc3339(t),
            TimeDialect::UnixSeconds => {
                let sign = if t.0 < 0 { "-" } else { "" };
                let a = t.0.unsigned_abs();
                format!("{sign}{}.{:09}", a / 1_000_000_000, a % 1_000_000_000)
            }
        }
    }
}

/// The grammars of a duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DurationDialect {
    /// The Prometheus HTTP API's `step`, `timeout` and friends (upstream: `parseDuration` in
    /// `web/api/v1/api.go` and `model.ParseDuration` in `prometheus/common`), not trimmed:
    /// a float of seconds (`1.5`, `-2`; refused with `... It overflows int64` when not finite
    /// or `|ms| >= 9.2e15`), rounded to the millisecond; otherwise
    /// `[0-9]+y? [0-9]+w? [0-9]+d? [0-9]+h? [0-9]+m? [0-9]+s? [0-9]+ms?`: integer components,
    /// units in that order, each at most once, at least one, `y` = 365 days, no overflow of
    /// `i64` milliseconds. Errors: `cannot parse "RAW" to a valid duration` (and `. It
    /// overflows int64`). Native resolution: milliseconds ([`prometheus_duration`]).
    Prometheus,
    /// Sightline's native durations (query plan buckets, detector windows, the CLI), trimmed:
    /// a float of seconds in `0..=9.2e9`, or one or more `NUMBER UNIT` components, `NUMBER`
    /// digits and dots (`1.5`), `UNIT` one of `ns`, `us`, `µs`, `ms`, `s`, `m`, `h`, `d`, `w`,
    /// `y` (365 days), in any order and repeatable, summed (each rounded to the nanosecond);
    /// no sign; at most `i64::MAX` ns. Go's `time.ParseDuration` plus `d`, `w`, `y` and plain
    /// seconds. Error: `cannot parse "S" as a duration`.
    SecondsOrUnits,
    /// LogQL range and duration literals (`[5m]`, `offset 1h`, `> 250ms`; upstream: Loki's
    /// LogQL lexer reads Prometheus/Go durations): the `SecondsOrUnits` unit grammar, trimmed,
    /// without plain numbers, and positive. Errors (parse errors): `bad duration "S": a unit is
    /// needed`, `bad duration "S"`, `duration "S" must be positive`.
    LogQl,
    /// Loki's `step` and `since` (upstream: `parseSecondsOrDuration` in Loki's
    /// `pkg/loghttp/params.go`), trimmed: a float of seconds giving `1 <= ns < 9.2e18`
    /// (`invalid step "S": must be positive`), otherwise [`DurationDialect::LogQl`], whose
    /// errors read `parse error: ...` as the LogQL parser reports them.
    LokiStep,
    /// TraceQL and Tempo durations (`duration > 2s`, `minDuration`; upstream: Go's
    /// `time.ParseDuration`, which Tempo uses) without a sign: `0`, or one or more
    /// `NUMBER UNIT` components (`NUMBER` digits and dots, `UNIT` one of `ns`, `us`, `µs`,
    /// `ms`, `s`, `m`, `h`), summed in `f64` (exact below 2^53 ns, about 104 days) and rounded,
    /// at most `i64::MAX` ns; trimmed. Error: `bad duration "RAW" (use e.g. 250ms, 1.5s,
    /// 1m30s)`.
    TraceQl,
    /// The native trace API's `min_duration`, `max_duration` and `step`: an integer (`i64`,
    /// trimmed, any sign) of nanoseconds, otherwise [`DurationDialect::TraceQl`].
    NanosOrTraceQl,
}

impl DurationDialect {
    /// Parses `s` in this dialect into nanoseconds. Prometheus durations outside what `i64`
    /// nanoseconds hold are refused here; [`prometheus_duration`] reads them at full range.
    pub fn parse(self, s: &str) -> Result<Nanos, TimeError> {
        match self {
            DurationDialect::Prometheus => {
                let ms = prometheus::parse_duration(s)?;
                ms.0.checked_mul(1_000_000)
                    .map(Nanos)
                    .ok_or_else(|| prometheus::duration_overflow(s))
            }
            DurationDialect::SecondsOrUnits => units::parse_seconds_or_units(s),
            DurationDialect::LogQl => units::parse_logql(s),
            DurationDialect::LokiStep => loki::parse_step(s),
            DurationDialect::TraceQl => units::parse_traceql(s),
            DurationDialect::NanosOrTraceQl => match s.trim().parse::<i64>() {
                Ok(n) => Ok(Nanos(n)),
                Err(_) => units::parse_traceql(s),
            },
        }
    }

    /// Renders `d` so that [`DurationDialect::parse`] reads it back exactly (`Prometheus`: to
    /// the millisecond, its own `1d2h3m4s5ms` form for `d >= 0`, float seconds below; `TraceQl`:
    /// exact below 2^53 ns). Durations these grammars cannot spell (negative ones for all but
    /// `Prometheus` and `NanosOrTraceQl`, zero for `LogQl` and `LokiStep`) are rendered as
    /// their magnitude in units, which the parser then refuses.
    pub fn render(self, d: Nanos) -> String {
        match self {
            DurationDialect::Prometheus => prometheus::render_duration(Millis(d.0 / 1_000_000)),
            DurationDialect::NanosOrTraceQl => d.0.to_string(),
            _ => units::render_units(d),
        }
    }

    /// Nanoseconds per `unit` in this dialect's unit table (`"ms"` -> `1e6`), for lexers that
    /// read `NUMBER UNIT` tokens themselves (TraceQL's `duration > 1.5e3ms`).
    pub fn unit_nanos(self, unit: &str) -> Option<f64> {
        match self {
            DurationDialect::Prometheus => prometheus::unit_millis(unit).map(|ms| ms as f64 * 1e6),
            DurationDialect::SecondsOrUnits
            | DurationDialect::LogQl
            | DurationDialect::LokiStep => units::sightline_unit(unit).map(|n| n as f64),
            DurationDialect::TraceQl | DurationDialect::NanosOrTraceQl => units::go_unit(unit),
        }
    }
}

/// A Prometheus API time at its full millisecond range ([`TimeDialect::Prometheus`]).
pub fn prometheus_time(s: &str) -> Result<UnixMillis, TimeError> {
    prometheus::parse_time(s)
}

/// A Prometheus API duration at its full millisecond range ([`DurationDialect::Prometheus`]).
pub fn prometheus_duration(s: &str) -> Result<Millis, TimeError> {
    prometheus::parse_duration(s)
}

/// [`TimeDialect::Rfc3339OrSeconds`] with a [`QueryError`] (query plans, detectors).
pub fn parse_time(s: &str) -> Result<UnixNanos> {
    Ok(TimeDialect::Rfc3339OrSeconds.parse(s)?)
}

/// [`DurationDialect::SecondsOrUnits`] in nanoseconds with a [`QueryError`] (query plans,
/// detectors, the CLI).
pub fn parse_duration(s: &str) -> Result<i64> {
    Ok(DurationDialect::SecondsOrUnits.parse(s)?.0)
}

/// [`DurationDialect::LogQl`] in nanoseconds with a [`QueryError::Parse`] (the LogQL lexer,
/// which re-exports it as `logs::logql::parse_duration`).
pub fn parse_logql_duration(s: &str) -> Result<i64> {
    Ok(DurationDialect::LogQl.parse(s)?.0)
}

/// Which grammar refused the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// A time.
    Time(TimeDialect),
    /// A duration.
    Duration(DurationDialect),
}

/// What was wrong with the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeErrorKind {
    /// It is not in the grammar.
    Syntax,
    /// It is in the grammar but its value does not fit (too large, not finite).
    OutOfRange,
    /// A plain number where the grammar needs a unit (LogQL).
    MissingUnit,
    /// Zero or negative where the grammar needs a positive duration.
    NotPositive,
}

/// A time or duration the dialect refuses. Its message is the dialect's own wording (see each
/// dialect), which clients and tests read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TimeError {
    dialect: Dialect,
    kind: TimeErrorKind,
    message: String,
}

impl TimeError {
    pub(crate) fn new(dialect: Dialect, kind: TimeErrorKind, message: String) -> Self {
        Self {
            dialect,
            kind,
            message,
        }
    }

    /// The grammar that refused the text.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// What was wrong.
    pub fn kind(&self) -> TimeErrorKind {
        self.kind
    }
}

impl From<TimeError> for QueryError {
    /// LogQL durations are part of a query text (`Parse`); every other dialect reads a request
    /// parameter (`BadRequest`).
    fn from(e: TimeError) -> Self {
        match e.dialect {
            Dialect::Duration(DurationDialect::LogQl) => QueryError::Parse(e.message),
            _ => QueryError::BadRequest(e.message),
        }
    }
}
