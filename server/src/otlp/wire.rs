//! A bounded pre-scan of protobuf request bodies, run before `prost` decodes them.
//!
//! [`scan`] walks the wire format of an OTLP export request
//! along its schema without building any message: an explicit stack instead of recursion,
//! nesting capped exactly as `prost` caps it (100 levels), no allocation but the stack. It
//! counts the request's items (spans, log records, metric data points)
//! and estimates the heap the decoded `prost` structs will take, and stops as soon as either
//! passes its bound, so a body of millions of empty spans is refused after reading the first
//! few kilobytes past the limit instead of being materialised.
//!
//! The estimate adds, over the message occurrences of the body:
//!
//! * each element of a repeated field (message, string, bytes, packed or unpacked number)
//!   twice the `size_of` of its Rust type, and, for the first element of each repeated field
//!   of one message, twice that again (a `Vec` grows by doubling from a capacity of 4);
//! * each non-empty string or bytes value its length, at least 8 (`Vec<u8>`'s smallest
//!   allocation);
//! * the `size_of` of the request struct itself. Singular and oneof message fields live
//!   inline in their parent (no `Box` in these schemas), so they add nothing of their own.
//!
//! For a canonical encoding (each singular field at most once, as every encoder writes) the
//! real heap use after decoding (`Vec` capacities and string lengths, plus the request
//! struct) is never above the estimate and the estimate at most 4 times the real use; the
//! property tests in `wire/tests.rs` check both against a counting allocator. Repeated
//! singular fields, which `prost` overwrites or merges, only make the estimate and the item
//! count larger, never smaller.
//!
//! The scan accepts exactly the bodies `prost` accepts: same varint and key rules, wire types
//! of known fields checked, strings checked for UTF-8, unknown fields (groups included)
//! skipped, lengths checked against the enclosing message, the same recursion limit. So a
//! body it accepts decodes, and one it refuses (`Malformed`) is one `prost` refuses too.

use std::mem::size_of;

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, EntityRef, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::metrics::v1::{
    Exemplar, ExponentialHistogram, ExponentialHistogramDataPoint, Gauge, Histogram,
    HistogramDataPoint, Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum, Summary,
    SummaryDataPoint, exponential_histogram_data_point::Buckets,
    summary_data_point::ValueAtQuantile,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status, span};
use prost::encoding::{WireType, decode_key, decode_varint};

use crate::error::IngestError;

pub mod json;
#[cfg(test)]
pub(crate) mod tests;

/// The request a body should hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Root {
    /// `ExportTraceServiceRequest` (items: spans).
    Traces,
    /// `ExportMetricsServiceRequest` (items: data points of every kind).
    Metrics,
    /// `ExportLogsServiceRequest` (items: log records).
    Logs,
}

impl Root {
    fn msg(self) -> Msg {
        match self {
            Self::Traces => Msg::TraceRequest,
            Self::Metrics => Msg::MetricsRequest,
            Self::Logs => Msg::LogsRequest,
        }
    }

    /// `size_of` the decoded request struct.
    pub fn size(self) -> usize {
        self.msg().size()
    }

    /// The protobuf message name, for error messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Traces => "ExportTraceServiceRequest",
            Self::Metrics => "ExportMetricsServiceRequest",
            Self::Logs => "ExportLogsServiceRequest",
        }
    }
}

/// Bounds the scan refuses past (both `IngestError::TooLarge`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Most items.
    pub max_items: u64,
    /// Largest estimated decoded size, in bytes.
    pub max_decoded_bytes: u64,
}

/// What a scan found in a body it accepted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// Items (spans, log records, data points, samples).
    pub items: u64,
    /// Estimated heap of the decoded message, in bytes (see the module documentation).
    pub decoded_bytes: u64,
}

/// `prost`'s recursion limit (`prost::RECURSION_LIMIT`, not exported).
const RECURSION_LIMIT: u32 = 100;

/// The message types of the schemas walked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Msg {
    TraceRequest,
    MetricsRequest,
    LogsRequest,
    Resource,
    Scope,
    KeyValue,
    AnyValue,
    ArrayValue,
    KeyValueList,
    EntityRef,
    ResourceSpans,
    ScopeSpans,
    Span,
    Event,
    Link,
    Status,
    ResourceLogs,
    ScopeLogs,
    LogRecord,
    ResourceMetrics,
    ScopeMetrics,
    Metric,
    Gauge,
    Sum,
    Histogram,
    ExpHistogram,
    Summary,
    NumberPoint,
    HistogramPoint,
    ExpHistogramPoint,
    Buckets,
    SummaryPoint,
    Quantile,
    Exemplar,
}

/// How a known field is encoded and stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    /// A singular number of this wire type (varint, fixed32, fixed64).
    Scalar(WireType),
    /// A repeated number (packed or not) of this wire type, stored as `elem` bytes each.
    Repeated(WireType, usize),
    /// A singular string (UTF-8 checked).
    Str,
    /// A singular bytes value.
    Bytes,
    /// A repeated string.
    RepStr,
    /// A singular or oneof message, stored inline.
    Message(Msg),
    /// A repeated message.
    RepMessage(Msg),
}

use Field::{Bytes, Message, RepMessage, RepStr, Repeated, Scalar, Str};
const VARINT: WireType = WireType::Varint;
const FIXED32: WireType = WireType::ThirtyTwoBit;
const FIXED64: WireType = WireType::SixtyFourBit;

impl Msg {
    /// `size_of` the `prost` struct.
    fn size(self) -> usize {
        match self {
            Self::TraceRequest => size_of::<ExportTraceServiceRequest>(),
            Self::MetricsRequest => size_of::<ExportMetricsServiceRequest>(),
            Self::LogsRequest => size_of::<ExportLogsServiceRequest>(),
            Self::Resource => size_of::<Resource>(),
            Self::Scope => size_of::<InstrumentationScope>(),
            Self::KeyValue => size_of::<KeyValue>(),
            Self::AnyValue => size_of::<AnyValue>(),
            Self::ArrayValue => size_of::<ArrayValue>(),
            Self::KeyValueList => size_of::<KeyValueList>(),
            Self::EntityRef => size_of::<EntityRef>(),
            Self::ResourceSpans => size_of::<ResourceSpans>(),
            Self::ScopeSpans => size_of::<ScopeSpans>(),
            Self::Span => size_of::<Span>(),
            Self::Event => size_of::<span::Event>(),
            Self::Link => size_of::<span::Link>(),
            Self::Status => size_of::<Status>(),
            Self::ResourceLogs => size_of::<ResourceLogs>(),
            Self::ScopeLogs => size_of::<ScopeLogs>(),
            Self::LogRecord => size_of::<LogRecord>(),
            Self::ResourceMetrics => size_of::<ResourceMetrics>(),
            Self::ScopeMetrics => size_of::<ScopeMetrics>(),
            Self::Metric => size_of::<Metric>(),
            Self::Gauge => size_of::<Gauge>(),
            Self::Sum => size_of::<Sum>(),
            Self::Histogram => size_of::<Histogram>(),
            Self::ExpHistogram => size_of::<ExponentialHistogram>(),
            Self::Summary => size_of::<Summary>(),
            Self::NumberPoint => size_of::<NumberDataPoint>(),
            Self::HistogramPoint => size_of::<HistogramDataPoint>(),
            Self::ExpHistogramPoint => size_of::<ExponentialHistogramDataPoint>(),
            Self::Buckets => size_of::<Buckets>(),
            Self::SummaryPoint => size_of::<SummaryDataPoint>(),
            Self::Quantile => size_of::<ValueAtQuantile>(),
            Self::Exemplar => size_of::<Exemplar>(),
        }
    }

    /// Whether one occurrence is one item of the request's item limit.
    fn is_item(self) -> bool {
        matches!(
            self,
            Self::Span
                | Self::LogRecord
                | Self::NumberPoint
                | Self::HistogramPoint
                | Self::ExpHistogramPoint
                | Self::SummaryPoint
        )
    }

    /// The field with this tag (`None`: unknown, skipped as `prost` skips it). Tags and types
    /// follow the `opentelemetry-proto` definitions field by field.
    fn field(self, tag: u32) -> Option<Field> {
        const U64: usize = size_of::<u64>();
        let f = match (self, tag) {
            (Self::TraceRequest, 1) => RepMessage(Self::ResourceSpans),
            (Self::MetricsRequest, 1) => RepMessage(Self::ResourceMetrics),
            (Self::LogsRequest, 1) => RepMessage(Self::ResourceLogs),
            // common.v1, resource.v1
            (Self::Resource, 1) => RepMessage(Self::KeyValue),
            (Self::Resource, 2) => Scalar(VARINT),
            (Self::Resource, 3) => RepMessage(Self::EntityRef),
            (Self::Scope, 1 | 2) => Str,
            (Self::Scope, 3) => RepMessage(Self::KeyValue),
            (Self::Scope, 4) => Scalar(VARINT),
            (Self::KeyValue, 1) => Str,
            (Self::KeyValue, 2) => Message(Self::AnyValue),
            (Self::KeyValue, 3) => Scalar(VARINT),
            (Self::AnyValue, 1) => Str,
            (Self::AnyValue, 2 | 3 | 8) => Scalar(VARINT),
            (Self::AnyValue, 4) => Scalar(FIXED64),
            (Self::AnyValue, 5) => Message(Self::ArrayValue),
            (Self::AnyValue, 6) => Message(Self::KeyValueList),
            (Self::AnyValue, 7) => Bytes,
            (Self::ArrayValue, 1) => RepMessage(Self::AnyValue),
            (Self::KeyValueList, 1) => RepMessage(Self::KeyValue),
            (Self::EntityRef, 1 | 2) => Str,
            (Self::EntityRef, 3 | 4) => RepStr,
            // trace.v1
            (Self::ResourceSpans, 1) => Message(Self::Resource),
            (Self::ResourceSpans, 2) => RepMessage(Self::ScopeSpans),
            (Self::ResourceSpans, 3) => Str,
            (Self::ScopeSpans, 1) => Message(Self::Scope),
            (Self::ScopeSpans, 2) => RepMessage(Self::Span),
            (Self::ScopeSpans, 3) => Str,
            (Self::Span, 1 | 2 | 4) => Bytes,
            (Self::Span, 3 | 5) => Str,
            (Self::Span, 6 | 10 | 12 | 14) => Scalar(VARINT),
            (Self::Span, 7 | 8) => Scalar(FIXED64),
            (Self::Span, 9) => RepMessage(Self::KeyValue),
            (Self::Span, 11) => RepMessage(Self::Event),
            (Self::Span, 13) => RepMessage(Self::Link),
            (Self::Span, 15) => Message(Self::Status),
            (Self::Span, 16) => Scalar(FIXED32),
            (Self::Event, 1) => Scalar(FIXED64),
            (Self::Event, 2) => Str,
            (Self::Event, 3) => RepMessage(Self::KeyValue),
            (Self::Event, 4) => Scalar(VARINT),
            (Self::Link, 1 | 2) => Bytes,
            (Self::Link, 3) => Str,
            (Self::Link, 4) => RepMessage(Self::KeyValue),
            (Self::Link, 5) => Scalar(VARINT),
            (Self::Link, 6) => Scalar(FIXED32),
            (Self::Status, 2) => Str,
            (Self::Status, 3) => Scalar(VARINT),
            // logs.v1
            (Self::ResourceLogs, 1) => Message(Self::Resource),
            (Self::ResourceLogs, 2) => RepMessage(Self::ScopeLogs),
            (Self::ResourceLogs, 3) => Str,
            (Self::ScopeLogs, 1) => Message(Self::Scope),
            (Self::ScopeLogs, 2) => RepMessage(Self::LogRecord),
            (Self::ScopeLogs, 3) => Str,
            (Self::LogRecord, 1 | 11) => Scalar(FIXED64),
            (Self::LogRecord, 2 | 7) => Scalar(VARINT),
            (Self::LogRecord, 3 | 12) => Str,
            (Self::LogRecord, 5) => Message(Self::AnyValue),
            (Self::LogRecord, 6) => RepMessage(Self::KeyValue),
            (Self::LogRecord, 8) => Scalar(FIXED32),
            (Self::LogRecord, 9 | 10) => Bytes,
            // metrics.v1
            (Self::ResourceMetrics, 1) => Message(Self::Resource),
            (Self::ResourceMetrics, 2) => RepMessage(Self::ScopeMetrics),
            (Self::ResourceMetrics, 3) => Str,
            (Self::ScopeMetrics, 1) => Message(Self::Scope),
            (Self::ScopeMetrics, 2) => RepMessage(Self::Metric),
            (Self::ScopeMetrics, 3) => Str,
            (Self::Metric, 1..=3) => Str,
            (Self::Metric, 5) => Message(Self::Gauge),
            (Self::Metric, 7) => Message(Self::Sum),
            (Self::Metric, 9) => Message(Self::Histogram),
            (Self::Metric, 10) => Message(Self::ExpHistogram),
            (Self::Metric, 11) => Message(Self::Summary),
            (Self::Metric, 12) => RepMessage(Self::KeyValue),
            (Self::Gauge, 1) => RepMessage(Self::NumberPoint),
            (Self::Sum, 1) => RepMessage(Self::NumberPoint),
            (Self::Sum, 2 | 3) => Scalar(VARINT),
            (Self::Histogram, 1) => RepMessage(Self::HistogramPoint),
            (Self::Histogram, 2) => Scalar(VARINT),
            (Self::ExpHistogram, 1) => RepMessage(Self::ExpHistogramPoint),
            (Self::ExpHistogram, 2) => Scalar(VARINT),
            (Self::Summary, 1) => RepMessage(Self::SummaryPoint),
            (Self::NumberPoint, 7) => RepMessage(Self::KeyValue),
            (Self::NumberPoint, 2..=4 | 6) => Scalar(FIXED64),
            (Self::NumberPoint, 5) => RepMessage(Self::Exemplar),
            (Self::NumberPoint, 8) => Scalar(VARINT),
            (Self::HistogramPoint, 9) => RepMessage(Self::KeyValue),
            (Self::HistogramPoint, 2..=5 | 11 | 12) => Scalar(FIXED64),
            (Self::HistogramPoint, 6 | 7) => Repeated(FIXED64, U64),
            (Self::HistogramPoint, 8) => RepMessage(Self::Exemplar),
            (Self::HistogramPoint, 10) => Scalar(VARINT),
            (Self::ExpHistogramPoint, 1) => RepMessage(Self::KeyValue),
            (Self::ExpHistogramPoint, 2..=5 | 7 | 12..=14) => Scalar(FIXED64),
            (Self::ExpHistogramPoint, 6 | 10) => Scalar(VARINT),
            (Self::ExpHistogramPoint, 8 | 9) => Message(Self::Buckets),
            (Self::ExpHistogramPoint, 11) => RepMessage(Self::Exemplar),
            (Self::Buckets, 1) => Scalar(VARINT),
            (Self::Buckets, 2) => Repeated(VARINT, U64),
            (Self::SummaryPoint, 7) => RepMessage(Self::KeyValue),
            (Self::SummaryPoint, 2..=5) => Scalar(FIXED64),
            (Self::SummaryPoint, 6) => RepMessage(Self::Quantile),
            (Self::SummaryPoint, 8) => Scalar(VARINT),
            (Self::Quantile, 1 | 2) => Scalar(FIXED64),
            (Self::Exemplar, 7) => RepMessage(Self::KeyValue),
            (Self::Exemplar, 2 | 3 | 6) => Scalar(FIXED64),
            (Self::Exemplar, 4 | 5) => Bytes,
            _ => return None,
        };
        Some(f)
    }
}

/// One open message or group on the walker's stack.
#[derive(Clone, Copy, Debug)]
struct Frame {
    /// The message, or `None` for a group being skipped.
    msg: Option<Msg>,
    /// Offset where the message ends (unused for groups, which end at their end tag).
    end: usize,
    /// The group's field number (groups only).
    group_tag: u32,
    /// `prost`'s recursion budget for the fields of this message.
    depth_left: u32,
    /// Repeated fields (by tag, below 64) already seen in this message.
    seen: u64,
}

/// The walker's running totals and bounds.
struct Walk<'a> {
    buf: &'a [u8],
    pos: usize,
    bounds: Bounds,
    root: Root,
    scan: Scan,
}

impl Walk<'_> {
    fn malformed(&self, what: &str) -> IngestError {
        IngestError::Malformed(format!(
            "invalid protobuf {}: {what} at byte {}",
            self.root.name(),
            self.pos
        ))
    }

    fn varint(&mut self) -> Result<u64, IngestError> {
        let mut rest = &self.buf[self.pos.min(self.buf.len())..];
        let v = decode_varint(&mut rest).map_err(|e| self.malformed(&e.to_string()))?;
        self.pos = self.buf.len() - rest.len();
        Ok(v)
    }

    fn key(&mut self) -> Result<(u32, WireType), IngestError> {
        let mut rest = &self.buf[self.pos.min(self.buf.len())..];
        let k = decode_key(&mut rest).map_err(|e| self.malformed(&e.to_string()))?;
        self.pos = self.buf.len() - rest.len();
        Ok(k)
    }

    /// Advances over `n` bytes that must be in the buffer.
    fn advance(&mut self, n: u64) -> Result<(), IngestError> {
        let left = (self.buf.len() - self.pos) as u64;
        if n > left {
            return Err(self.malformed("buffer underflow"));
        }
        self.pos += n as usize;
        Ok(())
    }

    /// A length prefix, checked against what is left of the buffer.
    fn length(&mut self) -> Result<usize, IngestError> {
        let n = self.varint()?;
        if n > (self.buf.len() - self.pos) as u64 {
            return Err(self.malformed("buffer underflow"));
        }
        Ok(n as usize)
    }

    fn charge(&mut self, bytes: u64) -> Result<(), IngestError> {
        self.scan.decoded_bytes = self.scan.decoded_bytes.saturating_add(bytes);
        if self.scan.decoded_bytes > self.bounds.max_decoded_bytes {
            return Err(IngestError::TooLarge(format!(
                "{} would take more than {} bytes decoded, over the limit",
                self.root.name(),
                self.bounds.max_decoded_bytes
            )));
        }
        Ok(())
    }

    /// Charges `n` more elements of `elem` bytes of a repeated field (`first`: the field's
    /// first elements in this message).
    fn charge_elements(&mut self, n: u64, elem: usize, first: bool) -> Result<(), IngestError> {
        let elem = elem as u64;
        let bonus = if first { 2 * elem } else { 0 };
        self.charge(n.saturating_mul(2 * elem).saturating_add(bonus))
    }

    fn item(&mut self) -> Result<(), IngestError> {
        self.scan.items += 1;
        if self.scan.items > self.bounds.max_items {
            return Err(IngestError::TooLarge(format!(
                "more than {} items in one request, over the limit",
                self.bounds.max_items
            )));
        }
        Ok(())
    }

    /// Skips the value of an unknown field that is not a group.
    fn skip(&mut self, wire: WireType) -> Result<(), IngestError> {
        match wire {
            WireType::Varint => self.varint().map(|_| ()),
            WireType::ThirtyTwoBit => self.advance(4),
            WireType::SixtyFourBit => self.advance(8),
            WireType::LengthDelimited => {
                let n = self.varint()?;
                self.advance(n)
            }
            WireType::StartGroup | WireType::EndGroup => {
                Err(self.malformed("unexpected end group tag"))
            }
        }
    }

    /// A string or bytes value; returns its length.
    fn bytes_value(&mut self, wire: WireType, utf8: bool) -> Result<usize, IngestError> {
        self.expect(wire, WireType::LengthDelimited)?;
        let n = self.length()?;
        let start = self.pos;
        self.pos += n;
        if utf8 && std::str::from_utf8(&self.buf[start..self.pos]).is_err() {
            return Err(self.malformed("invalid string value: data is not UTF-8 encoded"));
        }
        if n > 0 {
            self.charge(n.max(8) as u64)?;
        }
        Ok(n)
    }

    fn expect(&self, actual: WireType, expected: WireType) -> Result<(), IngestError> {
        if actual != expected {
            return Err(self.malformed(&format!(
                "invalid wire type: {actual:?} (expected {expected:?})"
            )));
        }
        Ok(())
    }

    /// A repeated number: one element, or a packed run of them. Returns the element count.
    fn numbers(&mut self, actual: WireType, wire: WireType) -> Result<u64, IngestError> {
        if actual == WireType::LengthDelimited {
            let n = self.length()?;
            let end = self.pos + n;
            let mut count = 0u64;
            match wire {
                WireType::Varint => {
                    while self.pos < end {
                        self.varint()?;
                        count += 1;
                    }
                }
                _ => {
                    let width = if wire == WireType::SixtyFourBit { 8 } else { 4 };
                    if n % width != 0 {
                        return Err(self.malformed("delimited length exceeded"));
                    }
                    count = (n / width) as u64;
                    self.pos = end;
                }
            }
            if self.pos != end {
                return Err(self.malformed("delimited length exceeded"));
            }
            Ok(count)
        } else {
            self.expect(actual, wire)?;
            self.skip(wire)?;
            Ok(1)
        }
    }
}

/// Walks `buf` as a `root` message: its items and estimated decoded size, or the reason to
/// refuse it (`Malformed` where `prost` would fail, `TooLarge` past a bound). Never panics.
pub fn scan(root: Root, buf: &[u8], bounds: Bounds) -> Result<Scan, IngestError> {
    let mut w = Walk {
        buf,
        pos: 0,
        bounds,
        root,
        scan: Scan::default(),
    };
    w.charge(root.msg().size() as u64)?;
    let mut stack: Vec<Frame> = Vec::with_capacity(16);
    stack.push(Frame {
        msg: Some(root.msg()),
        end: buf.len(),
        group_tag: 0,
        depth_left: RECURSION_LIMIT,
        seen: 0,
    });
    while let Some(top) = stack.last().copied() {
        let Some(msg) = top.msg else {
            // Inside a group of an unknown field: skip to its end tag.
            let (tag, wire) = w.key()?;
            if wire == WireType::EndGroup {
                if tag != top.group_tag {
                    return Err(w.malformed("unexpected end group tag"));
                }
                stack.pop();
                continue;
            }
            if top.depth_left == 0 {
                return Err(w.malformed("recursion limit reached"));
            }
            if wire == WireType::StartGroup {
                stack.push(group(tag, top.depth_left - 1));
            } else {
                w.skip(wire)?;
            }
            continue;
        };
        if w.pos >= top.end {
            if w.pos > top.end {
                return Err(w.malformed("delimited length exceeded"));
            }
            stack.pop();
            continue;
        }
        let (tag, wire) = w.key()?;
        let Some(field) = msg.field(tag) else {
            if top.depth_left == 0 {
                return Err(w.malformed("recursion limit reached"));
            }
            if wire == WireType::StartGroup {
                stack.push(group(tag, top.depth_left - 1));
            } else {
                w.skip(wire)?;
            }
            continue;
        };
        let bit = if tag < 64 { 1u64 << tag } else { 0 };
        let first = top.seen & bit == 0;
        if let Some(f) = stack.last_mut() {
            f.seen |= bit;
        }
        match field {
            Scalar(expected) => {
                w.expect(wire, expected)?;
                w.skip(wire)?;
            }
            Repeated(expected, elem) => {
                let n = w.numbers(wire, expected)?;
                if n > 0 {
                    w.charge_elements(n, elem, first)?;
                }
            }
            Str | Bytes => {
                w.bytes_value(wire, field == Str)?;
            }
            RepStr => {
                w.bytes_value(wire, true)?;
                w.charge_elements(1, size_of::<Vec<u8>>(), first)?;
            }
            Message(child) | RepMessage(child) => {
                w.expect(wire, WireType::LengthDelimited)?;
                if top.depth_left == 0 {
                    return Err(w.malformed("recursion limit reached"));
                }
                let n = w.length()?;
                if matches!(field, RepMessage(_)) {
                    w.charge_elements(1, child.size(), first)?;
                }
                if child.is_item() {
                    w.item()?;
                }
                stack.push(Frame {
                    msg: Some(child),
                    end: w.pos + n,
                    group_tag: 0,
                    depth_left: top.depth_left - 1,
                    seen: 0,
                });
            }
        }
    }
    Ok(w.scan)
}

fn group(tag: u32, depth_left: u32) -> Frame {
    Frame {
        msg: None,
        end: 0,
        group_tag: tag,
        depth_left,
        seen: 0,
    }
}
