//! The bounded pre-scan of OTLP/JSON bodies: one pass over the bytes, no recursion (an
//! explicit stack of open objects and arrays), no allocation but that stack.
//!
//! JSON has no schema to walk exactly, so the estimate goes by the field names OTLP/JSON
//! uses: an element of an array under a known key (`spans`, `attributes`, `dataPoints`, ...)
//! costs twice the `size_of` of the Rust type it decodes to, plus twice that again for the
//! first element of each array (as in the protobuf scan); an element of an array under any
//! other key the largest of those types. Every string value costs its raw length (at least
//! 8), which bounds what it decodes to (escapes and hex only shrink). Objects that
//! `opentelemetry-proto`'s serde derives read through `#[serde(flatten)]` (`AnyValue`,
//! `Metric`, data points, exemplars) are buffered whole as serde `Content` before they are
//! decoded, and that buffer is freed once the object is decoded: every value inside one costs
//! [`CONTENT_BYTES`], and the estimate adds the largest such buffer (the outermost flattened
//! object with the most values), not their sum. Items are the elements
//! of `spans`, `logRecords` and `dataPoints`.
//!
//! Nesting: serde_json refuses bodies nested deeper than 128 containers (its recursion
//! limit), so the scan refuses deeper than [`MAX_DEPTH`] itself and never reaches them.

use std::mem::size_of;

use opentelemetry_proto::tonic::common::v1::{AnyValue, EntityRef, KeyValue};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::metrics::v1::{
    Exemplar, ExponentialHistogramDataPoint, HistogramDataPoint, Metric, NumberDataPoint,
    ResourceMetrics, ScopeMetrics, SummaryDataPoint, summary_data_point::ValueAtQuantile,
};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, span};

use super::{Bounds, Root, Scan};
use crate::error::IngestError;

/// Deepest nesting of objects and arrays scanned (serde_json stops at 128).
pub const MAX_DEPTH: usize = 160;

/// What one JSON value inside a flattened object costs while serde buffers it as `Content`:
/// a map entry of two 32-byte `Content`s, doubled for `Vec` growth. (A flattened object
/// nested in another is collected again from the outer buffer by moving its entries; the
/// structs' own doubling in the estimate covers that list.)
pub const CONTENT_BYTES: u64 = 128;

const fn max(a: usize, b: usize) -> usize {
    if a > b { a } else { b }
}

const POINT: usize = max(
    max(
        size_of::<NumberDataPoint>(),
        size_of::<HistogramDataPoint>(),
    ),
    max(
        size_of::<ExponentialHistogramDataPoint>(),
        size_of::<SummaryDataPoint>(),
    ),
);

const LARGEST: usize = max(
    max(max(POINT, size_of::<Span>()), size_of::<LogRecord>()),
    max(
        max(size_of::<Metric>(), size_of::<span::Link>()),
        max(size_of::<ResourceSpans>(), size_of::<ResourceMetrics>()),
    ),
);

/// The element type of an array under `key`: its size, whether its elements are items, and
/// whether serde reads them through `flatten`.
fn element(key: &[u8]) -> (usize, bool, bool) {
    match key {
        b"resourceSpans" | b"resource_spans" => (size_of::<ResourceSpans>(), false, false),
        b"scopeSpans" | b"scope_spans" => (size_of::<ScopeSpans>(), false, false),
        b"spans" => (size_of::<Span>(), true, false),
        b"events" => (size_of::<span::Event>(), false, false),
        b"links" => (size_of::<span::Link>(), false, false),
        b"attributes" | b"filteredAttributes" | b"filtered_attributes" | b"metadata" => {
            (size_of::<KeyValue>(), false, false)
        }
        b"values" => (
            max(size_of::<AnyValue>(), size_of::<KeyValue>()),
            false,
            true,
        ),
        b"entityRefs" | b"entity_refs" => (size_of::<EntityRef>(), false, false),
        b"idKeys" | b"id_keys" | b"descriptionKeys" | b"description_keys" => {
            (size_of::<String>(), false, false)
        }
        b"resourceLogs" | b"resource_logs" => (size_of::<ResourceLogs>(), false, false),
        b"scopeLogs" | b"scope_logs" => (size_of::<ScopeLogs>(), false, false),
        b"logRecords" | b"log_records" => (size_of::<LogRecord>(), true, false),
        b"resourceMetrics" | b"resource_metrics" => (size_of::<ResourceMetrics>(), false, false),
        b"scopeMetrics" | b"scope_metrics" => (size_of::<ScopeMetrics>(), false, false),
        b"metrics" => (size_of::<Metric>(), false, true),
        b"dataPoints" | b"data_points" => (POINT, true, true),
        b"exemplars" => (size_of::<Exemplar>(), false, true),
        b"bucketCounts" | b"bucket_counts" | b"explicitBounds" | b"explicit_bounds" => {
            (size_of::<u64>(), false, false)
        }
        b"quantileValues" | b"quantile_values" => (size_of::<ValueAtQuantile>(), false, false),
        _ => (LARGEST, false, true),
    }
}

/// Whether an object under this (singular) key is read through `flatten` (an `AnyValue`).
fn flattened_object(key: &[u8]) -> bool {
    matches!(key, b"value" | b"body")
}

#[derive(Clone, Copy, Debug)]
struct Open {
    array: bool,
    /// Arrays: element size, items, flattened elements.
    elem: (usize, bool, bool),
    /// Arrays: no element seen yet.
    empty: bool,
    /// Objects: the next string is a key.
    expect_key: bool,
    /// Objects: the last key (range in the body).
    key: (usize, usize),
    /// Inside an object serde buffers as `Content`.
    buffered: bool,
    /// The outermost buffered object (its buffer is freed when it closes).
    outermost: bool,
}

struct Totals {
    /// Decoded structs and strings.
    structs: u64,
    /// `Content` of the outermost buffered object open now.
    content: u64,
    /// The largest `Content` of a closed one.
    content_max: u64,
    scan: Scan,
    bounds: Bounds,
    root: Root,
}

impl Totals {
    fn charge(&mut self, n: u64) -> Result<(), IngestError> {
        self.structs = self.structs.saturating_add(n);
        self.check()
    }

    fn charge_content(&mut self) -> Result<(), IngestError> {
        self.content = self.content.saturating_add(CONTENT_BYTES);
        self.check()
    }

    fn close_buffer(&mut self) {
        self.content_max = self.content_max.max(self.content);
        self.content = 0;
    }

    fn check(&mut self) -> Result<(), IngestError> {
        self.scan.decoded_bytes = self
            .structs
            .saturating_add(self.content.max(self.content_max));
        if self.scan.decoded_bytes > self.bounds.max_decoded_bytes {
            return Err(IngestError::TooLarge(format!(
                "JSON {} would take more than {} bytes decoded, over the limit",
                self.root.name(),
                self.bounds.max_decoded_bytes
            )));
        }
        Ok(())
    }
}

/// Scans an OTLP/JSON body of `root` (the estimate starts at the request struct's size).
/// Malformed JSON is left to serde_json to describe; the scan only refuses what is
/// over a bound or nested deeper than [`MAX_DEPTH`]. Never panics.
pub fn scan(root: Root, body: &[u8], bounds: Bounds) -> Result<Scan, IngestError> {
    let mut t = Totals {
        structs: 0,
        content: 0,
        content_max: 0,
        scan: Scan::default(),
        bounds,
        root,
    };
    t.charge(root.size() as u64)?;
    let mut stack: Vec<Open> = Vec::with_capacity(32);
    let mut i = 0usize;
    while i < body.len() {
        let c = body[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b':' => {
                if let Some(o) = stack.last_mut() {
                    o.expect_key = false;
                }
                i += 1;
                continue;
            }
            b',' => {
                if let Some(o) = stack.last_mut() {
                    o.expect_key = !o.array;
                }
                i += 1;
                continue;
            }
            b'}' | b']' => {
                if stack.pop().is_some_and(|o| o.outermost) {
                    t.close_buffer();
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        // A string, object, array or scalar starts here.
        if c == b'"' {
            let start = i + 1;
            let mut j = start;
            while j < body.len() && body[j] != b'"' {
                j += if body[j] == b'\\' { 2 } else { 1 };
            }
            let end = j.min(body.len());
            i = j.saturating_add(1);
            if let Some(o) = stack.last_mut()
                && !o.array
                && o.expect_key
            {
                o.key = (start, end);
                continue;
            }
            value_start(&mut t, &mut stack, body, false)?;
            let len = (end - start) as u64;
            if len > 0 {
                t.charge(len.max(8))?;
            }
            continue;
        }
        let buffered = value_start(&mut t, &mut stack, body, c == b'{')?;
        match c {
            b'{' | b'[' => {
                if stack.len() >= MAX_DEPTH {
                    return Err(IngestError::Malformed(format!(
                        "invalid JSON {}: nested deeper than {MAX_DEPTH}",
                        root.name()
                    )));
                }
                let elem = match stack.last() {
                    Some(o) if !o.array => element(&body[o.key.0..o.key.1]),
                    _ => element(b""),
                };
                let outermost = buffered && !stack.last().is_some_and(|o| o.buffered);
                stack.push(Open {
                    array: c == b'[',
                    elem,
                    empty: true,
                    expect_key: c == b'{',
                    key: (0, 0),
                    buffered,
                    outermost,
                });
                i += 1;
            }
            _ => {
                // Number, true, false, null (or garbage serde_json will name).
                i += 1;
                while i < body.len()
                    && !matches!(
                        body[i],
                        b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r' | b'"'
                    )
                {
                    i += 1;
                }
            }
        }
    }
    Ok(t.scan)
}

/// Accounts for a value starting in the innermost open container; returns whether, if it is
/// an object, serde buffers it (it is flattened or inside a buffered one).
fn value_start(
    t: &mut Totals,
    stack: &mut [Open],
    body: &[u8],
    object: bool,
) -> Result<bool, IngestError> {
    let Some(o) = stack.last_mut() else {
        return Ok(false);
    };
    let mut buffered = o.buffered;
    if buffered {
        t.charge_content()?;
    }
    if o.array {
        let (size, item, flat) = o.elem;
        let size = size as u64;
        let bonus = if o.empty { 2 * size } else { 0 };
        o.empty = false;
        t.charge(2 * size + bonus)?;
        if item {
            t.scan.items += 1;
            if t.scan.items > t.bounds.max_items {
                return Err(IngestError::TooLarge(format!(
                    "more than {} items in one request, over the limit",
                    t.bounds.max_items
                )));
            }
        }
        buffered |= object && flat;
    } else {
        o.expect_key = false;
        buffered |= object && flattened_object(&body[o.key.0..o.key.1]);
    }
    Ok(buffered)
}
