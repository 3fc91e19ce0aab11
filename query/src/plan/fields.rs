//! Typed access to the columns a plan reads: numeric fields (durations, token counts, cost,
//! quality scores) as `f64` per row, and group keys (promoted columns or attributes) as strings
//! per row. Every downcast is checked: a batch of an unexpected shape is an error, not a panic.

use std::borrow::Cow;

use arrow_array::types::Int32Type;
use arrow_array::{
    Array, DictionaryArray, Float64Array, Int32Array, Int64Array, MapArray, RecordBatch,
    StringArray, TimestampNanosecondArray, UInt8Array,
};

/// A string column read dictionary-encoded ([`sightline_storage::ScanRequest::dictionary`]).
pub(crate) type Int32DictionaryArray = DictionaryArray<Int32Type>;
use sightline_storage::columnar::AttrReader;
use sightline_storage::model::StatusCode;
use sightline_storage::predicate::span_kind_name;
use sightline_storage::schema::{self, col};
use sightline_storage::{Signal, StorageError};

use crate::error::{QueryError, Result};

/// Numeric fields by signal: the name a plan uses and the column that holds it. Durations and
/// times are nanoseconds.
pub const KNOWN_FIELDS: &[(Signal, &str, &str)] = &[
    (Signal::Spans, "duration", col::DURATION),
    (Signal::Spans, "start_time", col::START_TIME),
    (
        Signal::Spans,
        "gen_ai.usage.input_tokens",
        col::GEN_AI_INPUT_TOKENS,
    ),
    (
        Signal::Spans,
        "gen_ai.usage.output_tokens",
        col::GEN_AI_OUTPUT_TOKENS,
    ),
    (
        Signal::Spans,
        "gen_ai.usage.total_tokens",
        col::GEN_AI_TOTAL_TOKENS,
    ),
    (
        Signal::Spans,
        "gen_ai.usage.cache_read_input_tokens",
        col::GEN_AI_CACHE_READ_TOKENS,
    ),
    (Signal::Spans, "gen_ai.usage.cost", col::GEN_AI_COST),
    (
        Signal::Spans,
        "gen_ai.request.temperature",
        col::GEN_AI_TEMPERATURE,
    ),
    (Signal::Spans, "token_entropy_mean", col::ENTROPY_MEAN),
    (Signal::Spans, "token_entropy_max", col::ENTROPY_MAX),
    (
        Signal::Spans,
        "low_confidence_tokens",
        col::LOW_CONFIDENCE_TOKENS,
    ),
    (
        Signal::Spans,
        "hallucination_index",
        col::HALLUCINATION_INDEX,
    ),
    (Signal::Logs, "time", col::TIME),
    (Signal::Logs, "severity_number", col::SEVERITY_NUMBER),
];

/// The time column of a signal.
pub fn time_column(signal: Signal) -> &'static str {
    match signal {
        Signal::Logs => col::TIME,
        Signal::Samples => col::TIMESTAMP,
        Signal::Spans => col::START_TIME,
    }
}

/// A numeric field resolved to its column.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NumericField {
    pub(crate) column: &'static str,
}

/// Resolves a numeric field name (see [`KNOWN_FIELDS`]).
pub(crate) fn numeric_field(signal: Signal, name: &str) -> Result<NumericField> {
    KNOWN_FIELDS
        .iter()
        .find(|(s, n, _)| *s == signal && *n == name)
        .map(|(_, _, c)| NumericField { column: c })
        .ok_or_else(|| {
            let known: Vec<&str> = KNOWN_FIELDS
                .iter()
                .filter(|(s, _, _)| *s == signal)
                .map(|(_, n, _)| *n)
                .collect();
            QueryError::BadRequest(format!(
                "unknown numeric field {name:?}; known: {}",
                known.join(", ")
            ))
        })
}

/// Storage columns that hold key `k`: its promoted column, or both attribute maps.
pub(crate) fn key_columns(signal: Signal, k: &str) -> Vec<&'static str> {
    match schema::promoted_column(signal, k) {
        Some(c) => vec![c],
        None => vec![col::ATTRIBUTES, col::RESOURCE_ATTRIBUTES],
    }
}

fn missing(column: &str) -> QueryError {
    QueryError::Storage(StorageError::InvalidQuery(format!(
        "column {column} missing from the scan or of an unexpected type"
    )))
}

/// A numeric column of one batch.
pub(crate) enum NumCol<'a> {
    I64(&'a Int64Array),
    I32(&'a Int32Array),
    F64(&'a Float64Array),
    Ts(&'a TimestampNanosecondArray),
}

impl<'a> NumCol<'a> {
    pub(crate) fn new(batch: &'a RecordBatch, column: &str) -> Result<Self> {
        let a = batch
            .column_by_name(column)
            .ok_or_else(|| missing(column))?;
        let any = a.as_any();
        if let Some(a) = any.downcast_ref() {
            Ok(NumCol::I64(a))
        } else if let Some(a) = any.downcast_ref() {
            Ok(NumCol::F64(a))
        } else if let Some(a) = any.downcast_ref() {
            Ok(NumCol::Ts(a))
        } else if let Some(a) = any.downcast_ref() {
            Ok(NumCol::I32(a))
        } else {
            Err(missing(column))
        }
    }

    /// The value of row `i`, `None` when null.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<f64> {
        match self {
            NumCol::I64(a) => (!a.is_null(i)).then(|| a.value(i) as f64),
            NumCol::I32(a) => (!a.is_null(i)).then(|| f64::from(a.value(i))),
            NumCol::F64(a) => (!a.is_null(i)).then(|| a.value(i)),
            NumCol::Ts(a) => (!a.is_null(i)).then(|| a.value(i) as f64),
        }
    }
}

/// The time column of one batch, as nanoseconds.
pub(crate) fn times(batch: &RecordBatch, signal: Signal) -> Result<&TimestampNanosecondArray> {
    let c = time_column(signal);
    batch
        .column_by_name(c)
        .and_then(|a| a.as_any().downcast_ref())
        .ok_or_else(|| missing(c))
}

fn attr_map<'a>(batch: &'a RecordBatch, column: &str) -> Result<AttrReader<'a>> {
    let map: &MapArray = batch
        .column_by_name(column)
        .and_then(|a| a.as_any().downcast_ref())
        .ok_or_else(|| missing(column))?;
    Ok(AttrReader::new(map)?)
}

/// A group key column of one batch.
pub(crate) enum KeyCol<'a> {
    Str(&'a StringArray),
    /// A string column read dictionary-encoded: each row's key into the values.
    Dict(&'a Int32DictionaryArray, &'a StringArray),
    Status(&'a UInt8Array),
    Kind(&'a UInt8Array),
    Int(&'a Int32Array),
    Attr {
        attrs: AttrReader<'a>,
        resource: AttrReader<'a>,
        key: &'a str,
    },
}

impl<'a> KeyCol<'a> {
    pub(crate) fn new(batch: &'a RecordBatch, signal: Signal, key: &'a str) -> Result<Self> {
        match schema::promoted_column(signal, key) {
            Some(c) => {
                let a = batch.column_by_name(c).ok_or_else(|| missing(c))?;
                let any = a.as_any();
                if c == col::STATUS_CODE {
                    any.downcast_ref().map(KeyCol::Status)
                } else if c == col::SPAN_KIND {
                    any.downcast_ref().map(KeyCol::Kind)
                } else if let Some(s) = any.downcast_ref() {
                    Some(KeyCol::Str(s))
                } else if let Some(d) = any.downcast_ref::<Int32DictionaryArray>() {
                    d.values()
                        .as_any()
                        .downcast_ref()
                        .map(|values| KeyCol::Dict(d, values))
                } else {
                    any.downcast_ref().map(KeyCol::Int)
                }
                .ok_or_else(|| missing(c))
            }
            None => Ok(KeyCol::Attr {
                attrs: attr_map(batch, col::ATTRIBUTES)?,
                resource: attr_map(batch, col::RESOURCE_ATTRIBUTES)?,
                key,
            }),
        }
    }

    /// The key of row `i` (`""` when absent).
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Cow<'a, str> {
        match self {
            KeyCol::Str(a) if a.is_null(i) => Cow::Borrowed(""),
            KeyCol::Str(a) => Cow::Borrowed(a.value(i)),
            KeyCol::Dict(d, _) if d.is_null(i) => Cow::Borrowed(""),
            KeyCol::Dict(d, values) => {
                let k = d.keys().value(i);
                match usize::try_from(k) {
                    Ok(k) if k < values.len() && !values.is_null(k) => {
                        Cow::Borrowed(values.value(k))
                    }
                    _ => Cow::Borrowed(""),
                }
            }
            KeyCol::Status(a) => {
                Cow::Borrowed(StatusCode::from_code(i32::from(a.value(i))).as_str())
            }
            KeyCol::Kind(a) => Cow::Borrowed(span_kind_name(a.value(i))),
            KeyCol::Int(a) => Cow::Owned(a.value(i).to_string()),
            KeyCol::Attr {
                attrs,
                resource,
                key,
            } => attrs
                .find(i, key)
                .ok()
                .flatten()
                .or_else(|| resource.find(i, key).ok().flatten())
                .unwrap_or(Cow::Borrowed("")),
        }
    }
}
