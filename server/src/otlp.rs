//! OTLP decoding (protobuf, JSON, gzip) and the mapping of OTLP messages onto storage rows.
//!
//! Each signal has a `decode_*` function (bytes to the protobuf message, whichever the wire
//! encoding) and a `map_*` function in its module (message to rows, with per-item rejections).
//! Both are pure and never panic on any input, which the fuzz targets in `server/fuzz` check.
//! Before a protobuf or JSON body is decoded, [`scan_body`] (the [`wire`] pre-scan) counts its
//! items and bounds its decoded size, so no body makes the decoder allocate past the limits.

pub mod attributes;
pub mod genai;
pub mod json;
pub mod logs;
pub mod metrics;
pub mod traces;
pub mod wire;

use std::io::Read as _;

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;
use sightline_storage::UnixNanos;

use crate::error::IngestError;
use crate::limits::Limits;

/// How a request body is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `application/x-protobuf`.
    Protobuf,
    /// `application/json` (OTLP/JSON: hex ids, lowerCamelCase, integer enums).
    Json,
}

/// The three OTLP signals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SignalKind {
    /// Spans.
    Traces,
    /// Metric data points.
    Metrics,
    /// Log records.
    Logs,
}

impl SignalKind {
    /// Lowercase name, used in metrics labels and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Traces => "traces",
            Self::Metrics => "metrics",
            Self::Logs => "logs",
        }
    }
}

/// Why one item (span, log record, data point) was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RejectReason {
    /// Trace or span id of the wrong length or all zeros.
    InvalidId,
    /// Timestamp zero, beyond year 2262, too far in the future, or end before start.
    InvalidTimestamp,
    /// More attributes than `max_attributes_per_item`.
    TooManyAttributes,
    /// A string/bytes value longer than `max_attribute_value_bytes`.
    ValueTooLong,
    /// Values nested deeper than `max_attribute_depth`.
    TooDeep,
    /// A data point without a value, or an inconsistent histogram.
    InvalidValue,
    /// A data point of a new series when the tenant is at `max_series_per_tenant`.
    SeriesLimit,
}

impl RejectReason {
    /// Label used in the server's own metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidId => "invalid_id",
            Self::InvalidTimestamp => "invalid_timestamp",
            Self::TooManyAttributes => "too_many_attributes",
            Self::ValueTooLong => "value_too_long",
            Self::TooDeep => "too_deep",
            Self::InvalidValue => "invalid_value",
            Self::SeriesLimit => "series_limit",
        }
    }
}

/// One rejected item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemError {
    /// Category.
    pub reason: RejectReason,
    /// Human-readable detail.
    pub message: String,
}

impl ItemError {
    /// A new item error.
    pub fn new(reason: RejectReason, message: impl Into<String>) -> Self {
        Self {
            reason,
            message: message.into(),
        }
    }
}

/// Most distinct item error messages kept for the response.
const MAX_MESSAGES: usize = 5;

/// Rows mapped from one request plus what was rejected.
#[derive(Debug, Default)]
pub struct Mapped<T> {
    /// The accepted rows.
    pub rows: T,
    /// Items accepted (spans, log records, data points).
    pub accepted: u64,
    /// Items rejected.
    pub rejected: u64,
    /// Rejections per reason.
    pub reasons: Vec<(RejectReason, u64)>,
    /// The first few rejection messages.
    pub messages: Vec<String>,
    /// Rejected items that one of `messages` describes.
    pub described: u64,
    /// Accepted items whose LLM content was truncated.
    pub truncated: u64,
}

impl<T> Mapped<T> {
    /// Records a rejected item.
    pub fn reject(&mut self, e: ItemError) {
        self.reject_many(e, 1);
    }

    /// Records `n` items rejected for the same reason, described by one message.
    pub fn reject_many(&mut self, e: ItemError, n: u64) {
        if n == 0 {
            return;
        }
        self.rejected += n;
        match self.reasons.iter_mut().find(|(r, _)| *r == e.reason) {
            Some((_, k)) => *k += n,
            None => self.reasons.push((e.reason, n)),
        }
        if self.messages.len() < MAX_MESSAGES {
            self.messages.push(e.message);
            self.described += n;
        }
    }

    /// The `error_message` of a partial-success response (also sent when nothing was
    /// rejected but content was truncated).
    pub fn error_message(&self) -> String {
        let mut m = self.messages.join("; ");
        if self.rejected > self.described {
            m.push_str(&format!(" (and {} more)", self.rejected - self.described));
        }
        if self.truncated > 0 {
            if !m.is_empty() {
                m.push_str("; ");
            }
            m.push_str(&format!(
                "{} items had LLM content over max_content_bytes_per_span truncated (see their sightline.truncated_attributes)",
                self.truncated
            ));
        }
        m
    }
}

/// What mapping needs besides the message: limits and the server clock.
#[derive(Clone, Debug)]
pub struct MapContext {
    /// Limits in force.
    pub limits: Limits,
    /// The server's current time (receive time).
    pub now: UnixNanos,
}

impl MapContext {
    /// A context receiving at `now` (the store's clock: [`crate::ingest::Ingest::now`]).
    pub fn at(limits: &Limits, now: UnixNanos) -> Self {
        Self {
            limits: limits.clone(),
            now,
        }
    }

    /// Latest acceptable timestamp.
    pub fn max_time(&self) -> UnixNanos {
        let skew = i64::try_from(self.limits.max_future_skew_secs)
            .unwrap_or(i64::MAX)
            .saturating_mul(UnixNanos::PER_SEC);
        self.now.saturating_add(skew)
    }

    /// Validates a required OTLP timestamp (`what` names it in messages).
    pub fn timestamp(&self, what: &str, nanos: u64) -> Result<UnixNanos, ItemError> {
        if nanos == 0 {
            return Err(ItemError::new(
                RejectReason::InvalidTimestamp,
                format!("{what} is zero"),
            ));
        }
        let t = UnixNanos::from_otlp(nanos)
            .map_err(|e| ItemError::new(RejectReason::InvalidTimestamp, format!("{what}: {e}")))?;
        if t > self.max_time() {
            return Err(ItemError::new(
                RejectReason::InvalidTimestamp,
                format!(
                    "{what} {nanos} is more than {} s in the future",
                    self.limits.max_future_skew_secs
                ),
            ));
        }
        Ok(t)
    }
}

/// Decompresses a gzip body, refusing to produce more than `limit` bytes (gzip bombs).
pub fn gunzip(body: &[u8], limit: usize) -> Result<Vec<u8>, IngestError> {
    gunzip_with(body, limit, |_| Ok(()))
}

/// [`gunzip`], calling `grow` with each increase of the output buffer's capacity before it
/// is allocated (the in-flight budget reserves it; an error from `grow` stops the
/// decompression and is returned).
pub fn gunzip_with(
    body: &[u8],
    limit: usize,
    mut grow: impl FnMut(u64) -> Result<(), IngestError>,
) -> Result<Vec<u8>, IngestError> {
    const CHUNK: usize = 64 << 10;
    let too_large = || {
        IngestError::TooLarge(format!(
            "decompressed body exceeds the limit of {limit} bytes"
        ))
    };
    let mut decoder = flate2::read::MultiGzDecoder::new(body);
    let mut chunk = vec![0u8; CHUNK];
    let mut out: Vec<u8> = Vec::new();
    loop {
        let n = match decoder.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(IngestError::Malformed(format!("invalid gzip body: {e}"))),
        };
        if n == 0 {
            return Ok(out);
        }
        let len = out.len() + n;
        if len > limit {
            return Err(too_large());
        }
        if len > out.capacity() {
            let target = out
                .capacity()
                .saturating_mul(2)
                .max(len)
                .max(CHUNK)
                .min(limit);
            grow((target - out.capacity()) as u64)?;
            out.reserve_exact(target - out.len());
            if out.capacity() > target {
                grow((out.capacity() - target) as u64)?;
            }
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

/// The pre-scan of a body of `signal` in `enc` ([`wire::scan`], [`wire::json::scan`]): its
/// item count and estimated decoded size, refused with `TooLarge` over
/// `max_items_per_request` or `max_decoded_bytes`, `Malformed` where decoding would fail.
pub fn scan_body(
    signal: SignalKind,
    enc: Encoding,
    body: &[u8],
    limits: &Limits,
) -> Result<wire::Scan, IngestError> {
    let bounds = wire::Bounds {
        max_items: limits.max_items_per_request as u64,
        max_decoded_bytes: limits.max_decoded_bytes as u64,
    };
    let root = match signal {
        SignalKind::Traces => wire::Root::Traces,
        SignalKind::Metrics => wire::Root::Metrics,
        SignalKind::Logs => wire::Root::Logs,
    };
    match enc {
        Encoding::Protobuf => wire::scan(root, body, bounds),
        Encoding::Json => wire::json::scan(root, body, bounds),
    }
}

fn proto_error(what: &str, e: prost::DecodeError) -> IngestError {
    IngestError::Malformed(format!("invalid protobuf {what}: {e}"))
}

/// A decoded export request of any signal.
#[derive(Debug)]
pub enum ExportRequest {
    /// Spans.
    Traces(ExportTraceServiceRequest),
    /// Metrics.
    Metrics(ExportMetricsServiceRequest),
    /// Logs.
    Logs(ExportLogsServiceRequest),
}

impl ExportRequest {
    /// The request's signal.
    pub fn signal(&self) -> SignalKind {
        match self {
            Self::Traces(_) => SignalKind::Traces,
            Self::Metrics(_) => SignalKind::Metrics,
            Self::Logs(_) => SignalKind::Logs,
        }
    }
}

/// Decodes a body of `signal` (call [`scan_body`] first: decoding allocates what the body
/// describes).
pub fn decode(
    signal: SignalKind,
    body: &[u8],
    enc: Encoding,
) -> Result<ExportRequest, IngestError> {
    Ok(match signal {
        SignalKind::Traces => ExportRequest::Traces(decode_traces(body, enc)?),
        SignalKind::Metrics => ExportRequest::Metrics(decode_metrics(body, enc)?),
        SignalKind::Logs => ExportRequest::Logs(decode_logs(body, enc)?),
    })
}

/// Decodes an `ExportTraceServiceRequest`.
pub fn decode_traces(body: &[u8], enc: Encoding) -> Result<ExportTraceServiceRequest, IngestError> {
    match enc {
        Encoding::Protobuf => ExportTraceServiceRequest::decode(body)
            .map_err(|e| proto_error("ExportTraceServiceRequest", e)),
        Encoding::Json => json::decode(body, "ExportTraceServiceRequest"),
    }
}

/// Decodes an `ExportMetricsServiceRequest`.
pub fn decode_metrics(
    body: &[u8],
    enc: Encoding,
) -> Result<ExportMetricsServiceRequest, IngestError> {
    match enc {
        Encoding::Protobuf => ExportMetricsServiceRequest::decode(body)
            .map_err(|e| proto_error("ExportMetricsServiceRequest", e)),
        Encoding::Json => json::decode(body, "ExportMetricsServiceRequest"),
    }
}

/// Decodes an `ExportLogsServiceRequest`.
pub fn decode_logs(body: &[u8], enc: Encoding) -> Result<ExportLogsServiceRequest, IngestError> {
    match enc {
        Encoding::Protobuf => ExportLogsServiceRequest::decode(body)
            .map_err(|e| proto_error("ExportLogsServiceRequest", e)),
        Encoding::Json => json::decode(body, "ExportLogsServiceRequest"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gunzip_caps_output() {
        use std::io::Write as _;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&vec![0u8; 1 << 20])
            .unwrap_or_else(|e| panic!("{e}"));
        let gz = enc.finish().unwrap_or_else(|e| panic!("{e}"));
        assert!(gz.len() < 10_000);
        assert!(matches!(gunzip(&gz, 1000), Err(IngestError::TooLarge(_))));
        assert_eq!(gunzip(&gz, 1 << 20).map(|v| v.len()), Ok(1 << 20));
        assert!(matches!(
            gunzip(b"not gzip", 100),
            Err(IngestError::Malformed(_))
        ));
    }

    #[test]
    fn gunzip_reserves_before_it_allocates() {
        use std::io::Write as _;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&vec![7u8; 3 << 20])
            .unwrap_or_else(|e| panic!("{e}"));
        let gz = enc.finish().unwrap_or_else(|e| panic!("{e}"));
        let mut reserved = 0u64;
        let out = gunzip_with(&gz, 4 << 20, |n| {
            reserved += n;
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out.len(), 3 << 20);
        assert!(
            reserved >= out.capacity() as u64,
            "{reserved} < {}",
            out.capacity()
        );
        assert!(reserved <= 2 * out.len() as u64);
        // A refused reservation stops the decompression with its error.
        let mut left = 1u64 << 20;
        let r = gunzip_with(&gz, 4 << 20, |n| {
            if n > left {
                return Err(IngestError::Busy {
                    retry_after: std::time::Duration::from_secs(1),
                });
            }
            left -= n;
            Ok(())
        });
        assert!(matches!(r, Err(IngestError::Busy { .. })), "{r:?}");
    }

    #[test]
    fn scan_body_refuses_over_the_limits_before_decoding() {
        let limits = Limits {
            max_items_per_request: 10,
            ..Limits::default()
        };
        // 11 empty spans in one ScopeSpans.
        let mut scope = vec![0x12, 22];
        scope.extend_from_slice(&[0x12, 0x00].repeat(11));
        let mut body = vec![0x0a, scope.len() as u8];
        body.extend_from_slice(&scope);
        let r = scan_body(SignalKind::Traces, Encoding::Protobuf, &body, &limits);
        assert!(matches!(r, Err(IngestError::TooLarge(_))), "{r:?}");
        let json =
            br#"{"resourceSpans":[{"scopeSpans":[{"spans":[{},{},{},{},{},{},{},{},{},{},{}]}]}]}"#;
        let r = scan_body(SignalKind::Traces, Encoding::Json, json, &limits);
        assert!(matches!(r, Err(IngestError::TooLarge(_))), "{r:?}");
        let ok = Limits::default();
        let s = scan_body(SignalKind::Traces, Encoding::Protobuf, &body, &ok)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.items, 11);
        let s = scan_body(SignalKind::Traces, Encoding::Json, json, &ok)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.items, 11);
    }
}
