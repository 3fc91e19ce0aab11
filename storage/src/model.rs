//! The rows callers append: spans, log records and metric samples with their series.
//!
//! These are plain Rust values; [`crate::columnar`] turns a batch of them into an Arrow
//! `RecordBatch` with the schema from [`crate::schema`]. Mapping OpenTelemetry protocol messages
//! onto these rows (GenAI alias normalisation, metric name rules) is the ingest layer's job.

use serde::{Deserialize, Serialize};

use crate::types::{SeriesId, SpanId, TraceId, UnixNanos};

/// An attribute value, as in OpenTelemetry's `AnyValue`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttrValue {
    /// A UTF-8 string.
    Str(String),
    /// A boolean.
    Bool(bool),
    /// A signed 64-bit integer.
    Int(i64),
    /// A 64-bit float.
    Double(f64),
    /// Raw bytes.
    Bytes(Vec<u8>),
    /// A list of values.
    Array(Vec<AttrValue>),
    /// A nested key-value list.
    KvList(Vec<(String, AttrValue)>),
    /// An explicitly empty value.
    Empty,
}

impl AttrValue {
    /// The kind code stored in the `kind` field of attribute value structs.
    pub fn kind(&self) -> AttrKind {
        match self {
            AttrValue::Str(_) => AttrKind::Str,
            AttrValue::Bool(_) => AttrKind::Bool,
            AttrValue::Int(_) => AttrKind::Int,
            AttrValue::Double(_) => AttrKind::Double,
            AttrValue::Bytes(_) => AttrKind::Bytes,
            AttrValue::Array(_) => AttrKind::Array,
            AttrValue::KvList(_) => AttrKind::KvList,
            AttrValue::Empty => AttrKind::Empty,
        }
    }

    /// The value rendered as text: strings verbatim, numbers and booleans in their canonical
    /// form, bytes as lowercase hex, arrays and key-value lists as JSON. Equality predicates and
    /// postings compare against this form.
    pub fn render(&self) -> String {
        match self {
            AttrValue::Str(s) => s.clone(),
            AttrValue::Bool(b) => b.to_string(),
            AttrValue::Int(i) => i.to_string(),
            AttrValue::Double(d) => d.to_string(),
            AttrValue::Bytes(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
            AttrValue::Array(_) | AttrValue::KvList(_) => self.to_json().to_string(),
            AttrValue::Empty => String::new(),
        }
    }

    /// A JSON rendering that keeps the structure (used for arrays and key-value lists).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            AttrValue::Str(s) => Value::String(s.clone()),
            AttrValue::Bool(b) => Value::Bool(*b),
            AttrValue::Int(i) => Value::from(*i),
            AttrValue::Double(d) => serde_json::Number::from_f64(*d)
                .map(Value::Number)
                .unwrap_or_else(|| Value::String(d.to_string())),
            AttrValue::Bytes(b) => Value::String(b.iter().map(|x| format!("{x:02x}")).collect()),
            AttrValue::Array(items) => Value::Array(items.iter().map(AttrValue::to_json).collect()),
            AttrValue::KvList(kvs) => {
                Value::Object(kvs.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
            AttrValue::Empty => Value::Null,
        }
    }

    /// Lossless, order-preserving JSON in the shape of OpenTelemetry's JSON `AnyValue`
    /// (`{"stringValue": ..}`, `{"intValue": "5"}`, `{"arrayValue": {"values": [..]}}`,
    /// `{"kvlistValue": {"values": [{"key": .., "value": ..}]}}`), with bytes as lowercase hex
    /// and non-finite doubles as `"NaN"`, `"Infinity"`, `"-Infinity"`. Nested attribute values
    /// are stored in this form.
    pub fn to_typed_json(&self) -> serde_json::Value {
        use serde_json::{Value, json};
        match self {
            AttrValue::Str(s) => json!({ "stringValue": s }),
            AttrValue::Bool(b) => json!({ "boolValue": b }),
            AttrValue::Int(i) => json!({ "intValue": i.to_string() }),
            AttrValue::Double(d) => match serde_json::Number::from_f64(*d) {
                Some(n) => json!({ "doubleValue": Value::Number(n) }),
                None => {
                    json!({ "doubleValue": if d.is_nan() { "NaN" } else if *d > 0.0 { "Infinity" } else { "-Infinity" } })
                }
            },
            AttrValue::Bytes(b) => {
                json!({ "bytesValue": b.iter().map(|x| format!("{x:02x}")).collect::<String>() })
            }
            AttrValue::Array(items) => json!({
                "arrayValue": { "values": items.iter().map(AttrValue::to_typed_json).collect::<Vec<_>>() }
            }),
            AttrValue::KvList(kvs) => json!({
                "kvlistValue": { "values": kvs.iter().map(|(k, v)| json!({ "key": k, "value": v.to_typed_json() })).collect::<Vec<_>>() }
            }),
            AttrValue::Empty => json!({}),
        }
    }

    /// Inverse of [`AttrValue::to_typed_json`]; `None` when the JSON is not of that shape.
    pub fn from_typed_json(v: &serde_json::Value) -> Option<Self> {
        let obj = v.as_object()?;
        let Some((kind, inner)) = obj.iter().next() else {
            return Some(AttrValue::Empty);
        };
        Some(match kind.as_str() {
            "stringValue" => AttrValue::Str(inner.as_str()?.to_owned()),
            "boolValue" => AttrValue::Bool(inner.as_bool()?),
            "intValue" => AttrValue::Int(match inner {
                serde_json::Value::String(s) => s.parse().ok()?,
                other => other.as_i64()?,
            }),
            "doubleValue" => AttrValue::Double(match inner {
                serde_json::Value::String(s) => match s.as_str() {
                    "NaN" => f64::NAN,
                    "Infinity" => f64::INFINITY,
                    "-Infinity" => f64::NEG_INFINITY,
                    _ => return None,
                },
                other => other.as_f64()?,
            }),
            "bytesValue" => {
                let s = inner.as_str()?;
                if s.len() % 2 != 0 {
                    return None;
                }
                AttrValue::Bytes(
                    (0..s.len() / 2)
                        .map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
                        .collect::<Option<Vec<u8>>>()?,
                )
            }
            "arrayValue" => AttrValue::Array(
                inner
                    .get("values")
                    .and_then(|v| v.as_array())
                    .map(|a| {
                        a.iter()
                            .map(AttrValue::from_typed_json)
                            .collect::<Option<Vec<_>>>()
                    })
                    .unwrap_or(Some(Vec::new()))?,
            ),
            "kvlistValue" => AttrValue::KvList(
                inner
                    .get("values")
                    .and_then(|v| v.as_array())
                    .map(|a| {
                        a.iter()
                            .map(|kv| {
                                Some((
                                    kv.get("key")?.as_str()?.to_owned(),
                                    AttrValue::from_typed_json(kv.get("value")?)?,
                                ))
                            })
                            .collect::<Option<Vec<_>>>()
                    })
                    .unwrap_or(Some(Vec::new()))?,
            ),
            _ => return None,
        })
    }

    /// Approximate heap size, for memory accounting.
    pub fn heap_size(&self) -> usize {
        match self {
            AttrValue::Str(s) => s.len(),
            AttrValue::Bytes(b) => b.len(),
            AttrValue::Array(a) => a.iter().map(|v| v.heap_size() + 16).sum(),
            AttrValue::KvList(kv) => kv.iter().map(|(k, v)| k.len() + v.heap_size() + 16).sum(),
            _ => 0,
        }
    }
}

/// Kind code of an attribute value as stored on disk (the `kind` child of attribute structs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum AttrKind {
    /// `str` holds the value.
    Str = 0,
    /// `bool` holds the value.
    Bool = 1,
    /// `int` holds the value.
    Int = 2,
    /// `double` holds the value.
    Double = 3,
    /// `bytes` holds the value.
    Bytes = 4,
    /// `str` holds a JSON array.
    Array = 5,
    /// `str` holds a JSON object.
    KvList = 6,
    /// No value.
    Empty = 7,
}

impl AttrKind {
    /// Decodes a stored kind code.
    pub fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => Self::Str,
            1 => Self::Bool,
            2 => Self::Int,
            3 => Self::Double,
            4 => Self::Bytes,
            5 => Self::Array,
            6 => Self::KvList,
            7 => Self::Empty,
            _ => return None,
        })
    }
}

/// An ordered list of attributes. Order is kept as received; keys are unique per list by
/// OpenTelemetry's rules, which the ingest layer enforces.
pub type Attributes = Vec<(String, AttrValue)>;

/// Approximate heap size of an attribute list.
pub fn attributes_heap_size(attrs: &Attributes) -> usize {
    attrs
        .iter()
        .map(|(k, v)| k.len() + v.heap_size() + 48)
        .sum()
}

/// Span kind as in OpenTelemetry (`SPAN_KIND_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[repr(u8)]
pub enum SpanKind {
    /// Unspecified.
    #[default]
    Unspecified = 0,
    /// Internal operation.
    Internal = 1,
    /// Server side of a request.
    Server = 2,
    /// Client side of a request.
    Client = 3,
    /// Message producer.
    Producer = 4,
    /// Message consumer.
    Consumer = 5,
}

impl SpanKind {
    /// From the protocol's integer; unknown values map to `Unspecified`.
    pub fn from_code(code: i32) -> Self {
        match code {
            1 => Self::Internal,
            2 => Self::Server,
            3 => Self::Client,
            4 => Self::Producer,
            5 => Self::Consumer,
            _ => Self::Unspecified,
        }
    }
}

/// Span status code as in OpenTelemetry (`STATUS_CODE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[repr(u8)]
pub enum StatusCode {
    /// Not set.
    #[default]
    Unset = 0,
    /// Explicitly OK.
    Ok = 1,
    /// Error.
    Error = 2,
}

impl StatusCode {
    /// From the protocol's integer; unknown values map to `Unset`.
    pub fn from_code(code: i32) -> Self {
        match code {
            1 => Self::Ok,
            2 => Self::Error,
            _ => Self::Unset,
        }
    }

    /// Lowercase name, as used by TraceQL (`unset`, `ok`, `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unset => "unset",
            Self::Ok => "ok",
            Self::Error => "error",
        }
    }
}

/// The OpenTelemetry GenAI semantic-convention fields promoted to typed columns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GenAiFields {
    /// `gen_ai.operation.name` (chat, embeddings, execute_tool, ...).
    pub operation_name: Option<String>,
    /// `gen_ai.provider.name` (formerly `gen_ai.system`).
    pub provider_name: Option<String>,
    /// `gen_ai.request.model`.
    pub request_model: Option<String>,
    /// `gen_ai.response.model`.
    pub response_model: Option<String>,
    /// `gen_ai.usage.input_tokens`.
    pub input_tokens: Option<i64>,
    /// `gen_ai.usage.output_tokens`.
    pub output_tokens: Option<i64>,
    /// `gen_ai.usage.total_tokens` (de-facto).
    pub total_tokens: Option<i64>,
    /// `gen_ai.usage.cache_read.input_tokens`.
    pub cache_read_input_tokens: Option<i64>,
    /// `gen_ai.usage.cost` (de-facto, in the provider's currency unit).
    pub cost: Option<f64>,
    /// `gen_ai.request.temperature`.
    pub temperature: Option<f64>,
    /// `gen_ai.response.finish_reasons`.
    pub finish_reasons: Vec<String>,
    /// `gen_ai.conversation.id`.
    pub conversation_id: Option<String>,
}

/// Answer-quality values computed at ingest from token logprobs and retrieved context.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QualityFields {
    /// Mean token entropy (nats).
    pub entropy_mean: Option<f64>,
    /// Maximum token entropy (nats).
    pub entropy_max: Option<f64>,
    /// Number of tokens below the low-confidence threshold.
    pub low_confidence_tokens: Option<i64>,
    /// Hallucination index in `[0, 1]`.
    pub hallucination_index: Option<f64>,
}

/// A timed event inside a span.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpanEvent {
    /// When it happened.
    pub time: UnixNanos,
    /// Event name.
    pub name: String,
    /// Event attributes.
    pub attributes: Attributes,
}

/// A link from a span to another span.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpanLink {
    /// Linked trace.
    pub trace_id: TraceId,
    /// Linked span.
    pub span_id: SpanId,
    /// W3C trace state of the link.
    pub trace_state: String,
    /// Link attributes.
    pub attributes: Attributes,
}

/// One span.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpanRecord {
    /// Trace the span belongs to.
    pub trace_id: TraceId,
    /// The span's id.
    pub span_id: SpanId,
    /// Parent span, if not a root.
    pub parent_span_id: Option<SpanId>,
    /// W3C trace state.
    pub trace_state: String,
    /// Trace flags.
    pub flags: u32,
    /// `service.name` of the resource.
    pub service_name: String,
    /// The span's name.
    pub name: String,
    /// Span kind.
    pub kind: SpanKind,
    /// Start time.
    pub start: UnixNanos,
    /// End time (at or after start).
    pub end: UnixNanos,
    /// Status code.
    pub status_code: StatusCode,
    /// Status message.
    pub status_message: String,
    /// Instrumentation scope name.
    pub scope_name: String,
    /// Instrumentation scope version.
    pub scope_version: String,
    /// Promoted GenAI fields.
    pub gen_ai: GenAiFields,
    /// Computed quality fields.
    pub quality: QualityFields,
    /// Resource attributes other than `service.name`.
    pub resource_attributes: Attributes,
    /// Span attributes not promoted to columns.
    pub attributes: Attributes,
    /// Events.
    pub events: Vec<SpanEvent>,
    /// Links.
    pub links: Vec<SpanLink>,
}

impl SpanRecord {
    /// A span with the required fields set and everything else empty.
    pub fn new(
        trace_id: TraceId,
        span_id: SpanId,
        service_name: impl Into<String>,
        name: impl Into<String>,
        start: UnixNanos,
        end: UnixNanos,
    ) -> Self {
        Self {
            trace_id,
            span_id,
            parent_span_id: None,
            trace_state: String::new(),
            flags: 0,
            service_name: service_name.into(),
            name: name.into(),
            kind: SpanKind::Unspecified,
            start,
            end,
            status_code: StatusCode::Unset,
            status_message: String::new(),
            scope_name: String::new(),
            scope_version: String::new(),
            gen_ai: GenAiFields::default(),
            quality: QualityFields::default(),
            resource_attributes: Vec::new(),
            attributes: Vec::new(),
            events: Vec::new(),
            links: Vec::new(),
        }
    }

    /// Duration in nanoseconds (zero when the end precedes the start).
    pub fn duration_nanos(&self) -> i64 {
        self.end.0.saturating_sub(self.start.0).max(0)
    }
}

/// One log record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogRecord {
    /// When the event happened (falls back to the observed time when unset).
    pub time: UnixNanos,
    /// When the collector saw it.
    pub observed_time: UnixNanos,
    /// Severity number (1-24, 0 unspecified).
    pub severity_number: i32,
    /// Severity text.
    pub severity_text: String,
    /// Body: a string, or a structured value (stored as JSON text).
    pub body: AttrValue,
    /// Correlated trace.
    pub trace_id: Option<TraceId>,
    /// Correlated span.
    pub span_id: Option<SpanId>,
    /// Trace flags.
    pub flags: u32,
    /// `service.name` of the resource.
    pub service_name: String,
    /// Instrumentation scope name.
    pub scope_name: String,
    /// Event name (`event_name` field of OTLP logs).
    pub event_name: String,
    /// Resource attributes other than `service.name`.
    pub resource_attributes: Attributes,
    /// Log attributes.
    pub attributes: Attributes,
}

/// The metric types of the OpenTelemetry data model, as they appear in the series catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum MetricKind {
    /// Type not known.
    #[default]
    Unknown = 0,
    /// Monotonic cumulative sum (Prometheus counter).
    Counter = 1,
    /// Gauge or non-monotonic sum.
    Gauge = 2,
    /// Histogram bucket/sum/count series.
    Histogram = 3,
    /// Summary quantile/sum/count series.
    Summary = 4,
}

impl MetricKind {
    /// Decodes a stored code.
    pub fn from_code(code: u8) -> Self {
        match code {
            1 => Self::Counter,
            2 => Self::Gauge,
            3 => Self::Histogram,
            4 => Self::Summary,
            _ => Self::Unknown,
        }
    }

    /// Prometheus metadata type name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
            Self::Summary => "summary",
        }
    }
}

/// The label name that holds a series' metric name, as in Prometheus.
pub const METRIC_NAME_LABEL: &str = "__name__";

/// A metric series: name plus label set. Its id is derived from both.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesDef {
    /// Stable id (see [`SeriesDef::compute_id`]).
    pub id: SeriesId,
    /// Metric name (the `__name__` label).
    pub metric_name: String,
    /// Metric type.
    pub kind: MetricKind,
    /// Unit (UCUM, as sent).
    pub unit: String,
    /// Description.
    pub help: String,
    /// Labels sorted by name, without `__name__`.
    pub labels: Vec<(String, String)>,
}

impl SeriesDef {
    /// Builds a series, sorting the labels and deriving its id.
    pub fn new(
        metric_name: impl Into<String>,
        kind: MetricKind,
        mut labels: Vec<(String, String)>,
    ) -> Self {
        let metric_name = metric_name.into();
        labels.sort();
        labels.dedup_by(|a, b| a.0 == b.0);
        let id = Self::compute_id(&metric_name, &labels);
        Self {
            id,
            metric_name,
            kind,
            unit: String::new(),
            help: String::new(),
            labels,
        }
    }

    /// Stable series id: XXH3-64 over the metric name and the sorted labels, each string
    /// length-prefixed so that no two different label sets encode to the same bytes.
    pub fn compute_id(metric_name: &str, sorted_labels: &[(String, String)]) -> SeriesId {
        Self::id_of(
            metric_name,
            sorted_labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        )
    }

    /// [`SeriesDef::compute_id`] of borrowed labels, already sorted by name and without
    /// `__name__`; nothing is allocated.
    pub fn id_of<'a>(
        metric_name: &str,
        sorted_labels: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> SeriesId {
        let mut h = xxhash_rust::xxh3::Xxh3Default::new();
        let mut push = |s: &str| {
            h.update(&(s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        };
        push(metric_name);
        for (k, v) in sorted_labels {
            push(k);
            push(v);
        }
        SeriesId(h.digest())
    }

    /// The value of label `name`, with `__name__` resolving to the metric name; `""` if absent
    /// (Prometheus treats a missing label as the empty string).
    pub fn label(&self, name: &str) -> &str {
        if name == METRIC_NAME_LABEL {
            return &self.metric_name;
        }
        self.labels
            .binary_search_by(|(k, _)| k.as_str().cmp(name))
            .map(|i| self.labels[i].1.as_str())
            .unwrap_or("")
    }
}

/// One metric sample. Timestamps are kept at millisecond resolution, as in Prometheus.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The series.
    pub series: SeriesId,
    /// Milliseconds since the epoch.
    pub timestamp_ms: i64,
    /// The value (NaN values are kept; Prometheus' stale marker is a NaN bit pattern).
    pub value: f64,
}

/// A batch of metric samples with the definitions of the series they use.
///
/// Every sample's series must be defined in `series` or already known to the store.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetricBatch {
    /// Series definitions (new or already known; known ones are ignored).
    pub series: Vec<SeriesDef>,
    /// The samples.
    pub samples: Vec<Sample>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids are stored on disk: the streaming hash must give the one-shot hash of the
    /// length-prefixed strings, for short and long label sets alike.
    #[test]
    fn series_id_is_the_one_shot_hash_of_its_strings() {
        for n in [0usize, 1, 3, 40] {
            let labels: Vec<(String, String)> = (0..n)
                .map(|i| (format!("label_{i:03}"), "v".repeat(i * 7)))
                .collect();
            let mut buf = Vec::new();
            for s in std::iter::once("metric_total")
                .chain(labels.iter().flat_map(|(k, v)| [k.as_str(), v.as_str()]))
            {
                buf.extend_from_slice(&(s.len() as u64).to_le_bytes());
                buf.extend_from_slice(s.as_bytes());
            }
            let one_shot = SeriesId(xxhash_rust::xxh3::xxh3_64(&buf));
            assert_eq!(SeriesDef::compute_id("metric_total", &labels), one_shot);
        }
        assert_eq!(
            SeriesDef::compute_id("up", &[("job".into(), "a".into())]),
            SeriesId(0x19ba_06a8_bb01_bb54),
            "the id of a known series changed"
        );
    }

    #[test]
    fn series_id_is_order_independent_and_unambiguous() {
        let a = SeriesDef::new(
            "m",
            MetricKind::Gauge,
            vec![("b".into(), "2".into()), ("a".into(), "1".into())],
        );
        let b = SeriesDef::new(
            "m",
            MetricKind::Gauge,
            vec![("a".into(), "1".into()), ("b".into(), "2".into())],
        );
        assert_eq!(a.id, b.id);
        let c = SeriesDef::new("m", MetricKind::Gauge, vec![("a".into(), "1b".into())]);
        let d = SeriesDef::new("m", MetricKind::Gauge, vec![("a1".into(), "b".into())]);
        assert_ne!(c.id, d.id);
        assert_eq!(a.label("a"), "1");
        assert_eq!(a.label("__name__"), "m");
        assert_eq!(a.label("zz"), "");
    }

    #[test]
    fn render_is_canonical() {
        assert_eq!(AttrValue::Int(-3).render(), "-3");
        assert_eq!(AttrValue::Bytes(vec![0xab, 1]).render(), "ab01");
        assert_eq!(
            AttrValue::Array(vec![AttrValue::Int(1), AttrValue::Str("x".into())]).render(),
            "[1,\"x\"]"
        );
    }
}
