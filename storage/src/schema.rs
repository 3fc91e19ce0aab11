//! Arrow schemas of the three signals and the series catalog, defined once.
//!
//! Attribute lists are stored as `Map<Utf8, Struct<kind, str, int, double, bool, bytes>>`: the
//! `kind` code ([`crate::model::AttrKind`]) says which child holds the value, arrays and key-value
//! lists are kept as JSON text in `str`. Nothing is dropped and any Parquet reader can use them
//! (`attributes['user.id'].str` in DuckDB).
//!
//! Timestamps of spans and logs are `Timestamp(Nanosecond)`, UTC; metric sample timestamps are
//! `Timestamp(Millisecond)`, the Prometheus resolution, which halves the entropy the on-disk
//! encoding must spend on jitter.

use std::sync::{Arc, LazyLock};

use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

use crate::types::Signal;

/// Column names, shared by writers, readers and predicates.
pub mod col {
    /// Span/log: 16-byte trace id.
    pub const TRACE_ID: &str = "trace_id";
    /// Span/log: 8-byte span id.
    pub const SPAN_ID: &str = "span_id";
    /// Span: parent span id (null for roots).
    pub const PARENT_SPAN_ID: &str = "parent_span_id";
    /// Span: W3C trace state.
    pub const TRACE_STATE: &str = "trace_state";
    /// Span/log: trace flags.
    pub const FLAGS: &str = "flags";
    /// Span/log: resource `service.name`.
    pub const SERVICE_NAME: &str = "service_name";
    /// Span: span name.
    pub const SPAN_NAME: &str = "span_name";
    /// Span: kind code.
    pub const SPAN_KIND: &str = "span_kind";
    /// Span: start time.
    pub const START_TIME: &str = "start_time_unix_nano";
    /// Span: duration in nanoseconds.
    pub const DURATION: &str = "duration_nano";
    /// Span: status code.
    pub const STATUS_CODE: &str = "status_code";
    /// Span: status message.
    pub const STATUS_MESSAGE: &str = "status_message";
    /// Span/log: scope name.
    pub const SCOPE_NAME: &str = "scope_name";
    /// Span: scope version.
    pub const SCOPE_VERSION: &str = "scope_version";
    /// Span: `gen_ai.operation.name`.
    pub const GEN_AI_OPERATION: &str = "gen_ai_operation_name";
    /// Span: `gen_ai.provider.name`.
    pub const GEN_AI_PROVIDER: &str = "gen_ai_provider_name";
    /// Span: `gen_ai.request.model`.
    pub const GEN_AI_REQUEST_MODEL: &str = "gen_ai_request_model";
    /// Span: `gen_ai.response.model`.
    pub const GEN_AI_RESPONSE_MODEL: &str = "gen_ai_response_model";
    /// Span: `gen_ai.usage.input_tokens`.
    pub const GEN_AI_INPUT_TOKENS: &str = "gen_ai_usage_input_tokens";
    /// Span: `gen_ai.usage.output_tokens`.
    pub const GEN_AI_OUTPUT_TOKENS: &str = "gen_ai_usage_output_tokens";
    /// Span: `gen_ai.usage.total_tokens`.
    pub const GEN_AI_TOTAL_TOKENS: &str = "gen_ai_usage_total_tokens";
    /// Span: `gen_ai.usage.cache_read.input_tokens`.
    pub const GEN_AI_CACHE_READ_TOKENS: &str = "gen_ai_usage_cache_read_input_tokens";
    /// Span: `gen_ai.usage.cost`.
    pub const GEN_AI_COST: &str = "gen_ai_usage_cost";
    /// Span: `gen_ai.request.temperature`.
    pub const GEN_AI_TEMPERATURE: &str = "gen_ai_request_temperature";
    /// Span: `gen_ai.response.finish_reasons`.
    pub const GEN_AI_FINISH_REASONS: &str = "gen_ai_response_finish_reasons";
    /// Span: `gen_ai.conversation.id`.
    pub const GEN_AI_CONVERSATION_ID: &str = "gen_ai_conversation_id";
    /// Span: mean token entropy.
    pub const ENTROPY_MEAN: &str = "token_entropy_mean";
    /// Span: max token entropy.
    pub const ENTROPY_MAX: &str = "token_entropy_max";
    /// Span: low-confidence token count.
    pub const LOW_CONFIDENCE_TOKENS: &str = "low_confidence_tokens";
    /// Span: hallucination index.
    pub const HALLUCINATION_INDEX: &str = "hallucination_index";
    /// Span/log: resource attributes.
    pub const RESOURCE_ATTRIBUTES: &str = "resource_attributes";
    /// Span/log: attributes.
    pub const ATTRIBUTES: &str = "attributes";
    /// Span: events.
    pub const EVENTS: &str = "events";
    /// Span: links.
    pub const LINKS: &str = "links";
    /// Log: event time.
    pub const TIME: &str = "time_unix_nano";
    /// Log: observed time.
    pub const OBSERVED_TIME: &str = "observed_time_unix_nano";
    /// Log: severity number.
    pub const SEVERITY_NUMBER: &str = "severity_number";
    /// Log: severity text.
    pub const SEVERITY_TEXT: &str = "severity_text";
    /// Log: body text (JSON for structured bodies).
    pub const BODY: &str = "body";
    /// Log: body kind code (see `AttrKind`).
    pub const BODY_KIND: &str = "body_kind";
    /// Log: event name.
    pub const EVENT_NAME: &str = "event_name";
    /// Sample/series: series id.
    pub const SERIES_ID: &str = "series_id";
    /// Sample: timestamp (ms).
    pub const TIMESTAMP: &str = "timestamp";
    /// Sample: value.
    pub const VALUE: &str = "value";
    /// Series: metric name.
    pub const METRIC_NAME: &str = "metric_name";
    /// Series: metric kind code.
    pub const METRIC_KIND: &str = "metric_kind";
    /// Series: unit.
    pub const UNIT: &str = "unit";
    /// Series: description.
    pub const HELP: &str = "help";
    /// Series: sorted labels.
    pub const LABELS: &str = "labels";
}

/// Attribute keys (in OpenTelemetry naming) of the span columns that predicates can address.
/// Each maps to the column that holds the value.
pub const SPAN_PROMOTED_KEYS: &[(&str, &str)] = &[
    ("service.name", col::SERVICE_NAME),
    ("name", col::SPAN_NAME),
    ("status", col::STATUS_CODE),
    ("kind", col::SPAN_KIND),
    ("gen_ai.operation.name", col::GEN_AI_OPERATION),
    ("gen_ai.provider.name", col::GEN_AI_PROVIDER),
    ("gen_ai.request.model", col::GEN_AI_REQUEST_MODEL),
    ("gen_ai.response.model", col::GEN_AI_RESPONSE_MODEL),
    ("gen_ai.conversation.id", col::GEN_AI_CONVERSATION_ID),
    ("gen_ai.usage.input_tokens", col::GEN_AI_INPUT_TOKENS),
    ("gen_ai.usage.output_tokens", col::GEN_AI_OUTPUT_TOKENS),
];

/// Attribute keys of the log columns that predicates can address.
pub const LOG_PROMOTED_KEYS: &[(&str, &str)] = &[
    ("service.name", col::SERVICE_NAME),
    ("severity_text", col::SEVERITY_TEXT),
    ("severity_number", col::SEVERITY_NUMBER),
    ("event_name", col::EVENT_NAME),
    ("scope.name", col::SCOPE_NAME),
];

/// The promoted column for an attribute key of `signal`, if any.
pub fn promoted_column(signal: Signal, key: &str) -> Option<&'static str> {
    let table = match signal {
        Signal::Spans => SPAN_PROMOTED_KEYS,
        Signal::Logs => LOG_PROMOTED_KEYS,
        Signal::Samples => return None,
    };
    table.iter().find(|(k, _)| *k == key).map(|(_, c)| *c)
}

fn ts_ns() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, None)
}

/// The struct type of one attribute value.
pub fn attr_value_fields() -> Fields {
    Fields::from(vec![
        Field::new("kind", DataType::UInt8, false),
        Field::new("str", DataType::Utf8, true),
        Field::new("int", DataType::Int64, true),
        Field::new("double", DataType::Float64, true),
        Field::new("bool", DataType::Boolean, true),
        Field::new("bytes", DataType::Binary, true),
    ])
}

/// The map entry struct field of attribute columns.
pub fn attr_entries_field() -> Arc<Field> {
    Arc::new(Field::new(
        "entries",
        DataType::Struct(Fields::from(vec![
            Field::new("key", DataType::Utf8, false),
            Field::new("value", DataType::Struct(attr_value_fields()), false),
        ])),
        false,
    ))
}

/// The type of an attribute column.
pub fn attributes_type() -> DataType {
    DataType::Map(attr_entries_field(), false)
}

fn attributes_field(name: &str) -> Field {
    Field::new(name, attributes_type(), false)
}

/// Struct fields of one span event.
pub fn event_fields() -> Fields {
    Fields::from(vec![
        Field::new("time_unix_nano", ts_ns(), false),
        Field::new("name", DataType::Utf8, false),
        attributes_field("attributes"),
    ])
}

/// Struct fields of one span link.
pub fn link_fields() -> Fields {
    Fields::from(vec![
        Field::new(col::TRACE_ID, DataType::FixedSizeBinary(16), false),
        Field::new(col::SPAN_ID, DataType::FixedSizeBinary(8), false),
        Field::new(col::TRACE_STATE, DataType::Utf8, false),
        attributes_field("attributes"),
    ])
}

/// The list item field of `gen_ai_response_finish_reasons`.
pub fn finish_reason_item() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Utf8, false))
}

/// Span schema.
pub static SPANS: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new(col::TRACE_ID, DataType::FixedSizeBinary(16), false),
        Field::new(col::SPAN_ID, DataType::FixedSizeBinary(8), false),
        Field::new(col::PARENT_SPAN_ID, DataType::FixedSizeBinary(8), true),
        Field::new(col::TRACE_STATE, DataType::Utf8, false),
        Field::new(col::FLAGS, DataType::UInt32, false),
        Field::new(col::SERVICE_NAME, DataType::Utf8, false),
        Field::new(col::SPAN_NAME, DataType::Utf8, false),
        Field::new(col::SPAN_KIND, DataType::UInt8, false),
        Field::new(col::START_TIME, ts_ns(), false),
        Field::new(col::DURATION, DataType::Int64, false),
        Field::new(col::STATUS_CODE, DataType::UInt8, false),
        Field::new(col::STATUS_MESSAGE, DataType::Utf8, false),
        Field::new(col::SCOPE_NAME, DataType::Utf8, false),
        Field::new(col::SCOPE_VERSION, DataType::Utf8, false),
        Field::new(col::GEN_AI_OPERATION, DataType::Utf8, true),
        Field::new(col::GEN_AI_PROVIDER, DataType::Utf8, true),
        Field::new(col::GEN_AI_REQUEST_MODEL, DataType::Utf8, true),
        Field::new(col::GEN_AI_RESPONSE_MODEL, DataType::Utf8, true),
        Field::new(col::GEN_AI_INPUT_TOKENS, DataType::Int64, true),
        Field::new(col::GEN_AI_OUTPUT_TOKENS, DataType::Int64, true),
        Field::new(col::GEN_AI_TOTAL_TOKENS, DataType::Int64, true),
        Field::new(col::GEN_AI_CACHE_READ_TOKENS, DataType::Int64, true),
        Field::new(col::GEN_AI_COST, DataType::Float64, true),
        Field::new(col::GEN_AI_TEMPERATURE, DataType::Float64, true),
        Field::new(
            col::GEN_AI_FINISH_REASONS,
            DataType::List(finish_reason_item()),
            false,
        ),
        Field::new(col::GEN_AI_CONVERSATION_ID, DataType::Utf8, true),
        Field::new(col::ENTROPY_MEAN, DataType::Float64, true),
        Field::new(col::ENTROPY_MAX, DataType::Float64, true),
        Field::new(col::LOW_CONFIDENCE_TOKENS, DataType::Int64, true),
        Field::new(col::HALLUCINATION_INDEX, DataType::Float64, true),
        attributes_field(col::RESOURCE_ATTRIBUTES),
        attributes_field(col::ATTRIBUTES),
        Field::new(
            col::EVENTS,
            DataType::List(Arc::new(Field::new(
                "item",
                DataType::Struct(event_fields()),
                false,
            ))),
            false,
        ),
        Field::new(
            col::LINKS,
            DataType::List(Arc::new(Field::new(
                "item",
                DataType::Struct(link_fields()),
                false,
            ))),
            false,
        ),
    ]))
});

/// Log schema.
pub static LOGS: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new(col::TIME, ts_ns(), false),
        Field::new(col::OBSERVED_TIME, ts_ns(), false),
        Field::new(col::SEVERITY_NUMBER, DataType::Int32, false),
        Field::new(col::SEVERITY_TEXT, DataType::Utf8, false),
        Field::new(col::BODY, DataType::Utf8, false),
        Field::new(col::BODY_KIND, DataType::UInt8, false),
        Field::new(col::TRACE_ID, DataType::FixedSizeBinary(16), true),
        Field::new(col::SPAN_ID, DataType::FixedSizeBinary(8), true),
        Field::new(col::FLAGS, DataType::UInt32, false),
        Field::new(col::SERVICE_NAME, DataType::Utf8, false),
        Field::new(col::SCOPE_NAME, DataType::Utf8, false),
        Field::new(col::EVENT_NAME, DataType::Utf8, false),
        attributes_field(col::RESOURCE_ATTRIBUTES),
        attributes_field(col::ATTRIBUTES),
    ]))
});

/// Metric sample schema.
pub static SAMPLES: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new(col::SERIES_ID, DataType::UInt64, false),
        Field::new(
            col::TIMESTAMP,
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        ),
        Field::new(col::VALUE, DataType::Float64, false),
    ]))
});

/// The label map entry field of the series catalog.
pub fn label_entries_field() -> Arc<Field> {
    Arc::new(Field::new(
        "entries",
        DataType::Struct(Fields::from(vec![
            Field::new("key", DataType::Utf8, false),
            Field::new("value", DataType::Utf8, false),
        ])),
        false,
    ))
}

/// Series catalog schema (one row per series; written next to each sample segment).
pub static SERIES: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new(col::SERIES_ID, DataType::UInt64, false),
        Field::new(col::METRIC_NAME, DataType::Utf8, false),
        Field::new(col::METRIC_KIND, DataType::UInt8, false),
        Field::new(col::UNIT, DataType::Utf8, false),
        Field::new(col::HELP, DataType::Utf8, false),
        Field::new(
            col::LABELS,
            DataType::Map(label_entries_field(), false),
            false,
        ),
    ]))
});

/// The schema of a signal.
pub fn of(signal: Signal) -> SchemaRef {
    match signal {
        Signal::Spans => SPANS.clone(),
        Signal::Logs => LOGS.clone(),
        Signal::Samples => SAMPLES.clone(),
    }
}

/// The column holding each row's timestamp, used for partitioning and time pruning.
pub fn time_column(signal: Signal) -> &'static str {
    match signal {
        Signal::Spans => col::START_TIME,
        Signal::Logs => col::TIME,
        Signal::Samples => col::TIMESTAMP,
    }
}

/// Multiplier from the time column's unit to nanoseconds.
pub fn time_unit_nanos(signal: Signal) -> i64 {
    match signal {
        Signal::Samples => 1_000_000,
        _ => 1,
    }
}
