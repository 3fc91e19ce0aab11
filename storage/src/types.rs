//! Newtypes for the identifiers and units that cross the storage API.
//!
//! Every id and every timestamp has its own type so that a span id can never be passed where a
//! trace id is expected, and nanoseconds never mix with milliseconds.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{Result, StorageError};

/// Longest tenant id accepted, in bytes.
pub const TENANT_ID_MAX_LEN: usize = 128;

/// A tenant: the unit of isolation. Every row belongs to exactly one tenant.
///
/// Tenant ids appear in directory names, so they are restricted to `[A-Za-z0-9._-]`, must not
/// start with a dot, and are at most [`TENANT_ID_MAX_LEN`] bytes long.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TenantId(String);

impl TenantId {
    /// The tenant used when a request names none.
    pub const DEFAULT: &'static str = "default";

    /// Validates and wraps a tenant id.
    pub fn new(id: impl Into<String>) -> Result<Self> {
        let id = id.into();
        let valid = !id.is_empty()
            && id.len() <= TENANT_ID_MAX_LEN
            && !id.starts_with('.')
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
        if valid {
            Ok(Self(id))
        } else {
            Err(StorageError::InvalidInput(format!(
                "invalid tenant id {id:?}: use 1-{TENANT_ID_MAX_LEN} characters of [A-Za-z0-9._-], not starting with '.'"
            )))
        }
    }

    /// The default tenant.
    pub fn default_tenant() -> Self {
        Self(Self::DEFAULT.to_owned())
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for TenantId {
    type Error = StorageError;
    fn try_from(value: String) -> Result<Self> {
        Self::new(value)
    }
}

impl From<TenantId> for String {
    fn from(value: TenantId) -> Self {
        value.0
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn parse_hex<const N: usize>(what: &str, s: &str) -> Result<[u8; N]> {
    let bytes = s.as_bytes();
    if bytes.len() != N * 2 {
        return Err(StorageError::InvalidInput(format!(
            "{what} must be {} hex characters, got {}",
            N * 2,
            bytes.len()
        )));
    }
    let mut out = [0u8; N];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        let hi = hex_val(pair[0]);
        let lo = hex_val(pair[1]);
        match (hi, lo) {
            (Some(hi), Some(lo)) => out[i] = (hi << 4) | lo,
            _ => {
                return Err(StorageError::InvalidInput(format!(
                    "{what} {s:?} is not hexadecimal"
                )));
            }
        }
    }
    Ok(out)
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    for b in bytes {
        write!(f, "{b:02x}")?;
    }
    Ok(())
}

macro_rules! byte_id {
    ($(#[$doc:meta])* $name:ident, $len:expr, $what:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub [u8; $len]);

        impl $name {
            /// Length of the id in bytes.
            pub const LEN: usize = $len;

            /// Wraps raw bytes; fails unless exactly the right length and not all zero
            /// (the OpenTelemetry spec calls an all-zero id invalid).
            pub fn from_slice(bytes: &[u8]) -> Result<Self> {
                let arr: [u8; $len] = bytes.try_into().map_err(|_| {
                    StorageError::InvalidInput(format!(
                        "{} must be {} bytes, got {}",
                        $what,
                        $len,
                        bytes.len()
                    ))
                })?;
                if arr == [0u8; $len] {
                    return Err(StorageError::InvalidInput(format!("{} is all zeros", $what)));
                }
                Ok(Self(arr))
            }

            /// Parses the lowercase or uppercase hex form.
            pub fn from_hex(s: &str) -> Result<Self> {
                let arr = parse_hex::<$len>($what, s)?;
                Self::from_slice(&arr)
            }

            /// The raw bytes.
            pub fn as_bytes(&self) -> &[u8; $len] {
                &self.0
            }

            /// Lowercase hex form.
            pub fn to_hex(&self) -> String {
                self.to_string()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write_hex(f, &self.0)
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_hex())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::from_hex(&s).map_err(serde::de::Error::custom)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}(", stringify!($name))?;
                write_hex(f, &self.0)?;
                f.write_str(")")
            }
        }
    };
}

byte_id!(
    /// A 16-byte OpenTelemetry trace id.
    TraceId,
    16,
    "trace id"
);
byte_id!(
    /// An 8-byte OpenTelemetry span id.
    SpanId,
    8,
    "span id"
);

/// A point in time, in nanoseconds since the Unix epoch (UTC).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct UnixNanos(pub i64);

impl UnixNanos {
    /// Nanoseconds per millisecond.
    pub const PER_MILLI: i64 = 1_000_000;
    /// Nanoseconds per second.
    pub const PER_SEC: i64 = 1_000_000_000;

    /// From whole seconds.
    pub const fn from_secs(secs: i64) -> Self {
        Self(secs.saturating_mul(Self::PER_SEC))
    }

    /// From milliseconds.
    pub const fn from_millis(ms: i64) -> Self {
        Self(ms.saturating_mul(Self::PER_MILLI))
    }

    /// From the unsigned nanoseconds OpenTelemetry uses; fails past year 2262 (i64 range).
    pub fn from_otlp(nanos: u64) -> Result<Self> {
        i64::try_from(nanos).map(Self).map_err(|_| {
            StorageError::InvalidInput(format!("timestamp {nanos} ns is beyond year 2262"))
        })
    }

    /// Floor to milliseconds (the metric sample resolution).
    pub const fn as_millis(self) -> i64 {
        self.0.div_euclid(Self::PER_MILLI)
    }

    /// Adds a duration in nanoseconds, saturating.
    pub const fn saturating_add(self, nanos: i64) -> Self {
        Self(self.0.saturating_add(nanos))
    }
}

/// UTC calendar date `(year, month, day)` of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A half-open time range `[start, end)` in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeRange {
    /// Inclusive start.
    pub start: UnixNanos,
    /// Exclusive end.
    pub end: UnixNanos,
}

impl TimeRange {
    /// Every representable instant.
    pub const ALL: TimeRange = TimeRange {
        start: UnixNanos(i64::MIN),
        end: UnixNanos(i64::MAX),
    };

    /// A new range; fails when `end < start`.
    pub fn new(start: UnixNanos, end: UnixNanos) -> Result<Self> {
        if end < start {
            return Err(StorageError::InvalidInput(format!(
                "time range end {} is before start {}",
                end.0, start.0
            )));
        }
        Ok(Self { start, end })
    }

    /// Whether `t` lies in the range.
    pub fn contains(&self, t: UnixNanos) -> bool {
        t >= self.start && t < self.end
    }

    /// Whether the closed interval `[min, max]` overlaps this range.
    pub fn overlaps_closed(&self, min: UnixNanos, max: UnixNanos) -> bool {
        min < self.end && max >= self.start
    }
}

/// Id of a metric series: a stable hash of its metric name and sorted label set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SeriesId(pub u64);

/// Log sequence number: the position of a record in the write-ahead log, strictly increasing.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Lsn(pub u64);

/// Id of an immutable segment, unique within a data directory and never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SegmentId(pub u64);

impl fmt::Display for SegmentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// The three kinds of telemetry Sightline stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Signal {
    /// Trace spans.
    Spans,
    /// Log records.
    Logs,
    /// Metric samples.
    Samples,
}

impl Signal {
    /// All signals, in a fixed order.
    pub const ALL: [Signal; 3] = [Signal::Spans, Signal::Logs, Signal::Samples];

    /// Directory and display name.
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Spans => "spans",
            Signal::Logs => "logs",
            Signal::Samples => "samples",
        }
    }

    pub(crate) fn code(self) -> u8 {
        match self {
            Signal::Spans => 1,
            Signal::Logs => 2,
            Signal::Samples => 3,
        }
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_ids_are_validated() {
        assert!(TenantId::new("acme-prod_1.eu").is_ok());
        for bad in ["", ".hidden", "a/b", "..", "a b", &"x".repeat(129)] {
            assert!(TenantId::new(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn ids_round_trip_hex_and_reject_bad_input() {
        let t = TraceId::from_hex("5B8EFFF798038103D269B633813FC60C").expect("valid");
        assert_eq!(t.to_hex(), "5b8efff798038103d269b633813fc60c");
        assert!(TraceId::from_hex("00000000000000000000000000000000").is_err());
        assert!(TraceId::from_hex("5b8e").is_err());
        assert!(TraceId::from_hex("zz8efff798038103d269b633813fc60c").is_err());
        assert!(SpanId::from_slice(&[1, 2, 3]).is_err());
        assert_eq!(SpanId::from_slice(&[1; 8]).expect("valid").0, [1; 8]);
    }

    #[test]
    fn time_range_semantics() {
        let r = TimeRange::new(UnixNanos(10), UnixNanos(20)).expect("valid");
        assert!(r.contains(UnixNanos(10)) && !r.contains(UnixNanos(20)));
        assert!(r.overlaps_closed(UnixNanos(19), UnixNanos(30)));
        assert!(!r.overlaps_closed(UnixNanos(20), UnixNanos(30)));
        assert!(TimeRange::new(UnixNanos(2), UnixNanos(1)).is_err());
        assert_eq!(UnixNanos(-1).as_millis(), -1);
    }
}
