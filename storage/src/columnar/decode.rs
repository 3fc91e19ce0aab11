//! Arrow `RecordBatch` -> row structs: the inverse of the encoders in the parent module.
//!
//! Batches may come from files on disk, so every downcast and index is checked and a mismatch is
//! reported as [`StorageError::Corruption`] rather than a panic.

use arrow_array::{
    Array, BinaryArray, BooleanArray, FixedSizeBinaryArray, Float64Array, Int32Array, Int64Array,
    ListArray, MapArray, RecordBatch, StringArray, StructArray, TimestampNanosecondArray,
    UInt8Array, UInt32Array, UInt64Array,
};

use crate::error::{Result, StorageError};
use crate::model::{
    AttrKind, AttrValue, Attributes, GenAiFields, LogRecord, MetricKind, QualityFields, SeriesDef,
    SpanEvent, SpanKind, SpanLink, SpanRecord, StatusCode,
};
use crate::schema::col;
use crate::types::{SeriesId, SpanId, TraceId, UnixNanos};

fn bad(detail: impl Into<String>) -> StorageError {
    StorageError::corruption("<record batch>", detail)
}

pub(crate) fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> Result<&'a T> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| bad(format!("column {name} missing or of the wrong type")))
}

fn child<T: 'static>(s: &StructArray, idx: usize) -> Result<&T> {
    s.columns()
        .get(idx)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| bad(format!("struct child {idx} missing or of the wrong type")))
}

fn opt_str(a: &StringArray, i: usize) -> Option<String> {
    (!a.is_null(i)).then(|| a.value(i).to_owned())
}

fn opt_i64(a: &Int64Array, i: usize) -> Option<i64> {
    (!a.is_null(i)).then(|| a.value(i))
}

fn opt_f64(a: &Float64Array, i: usize) -> Option<f64> {
    (!a.is_null(i)).then(|| a.value(i))
}

/// Reads an attribute map column (`attributes`, `resource_attributes`, or the event and link
/// attribute lists) of a batch without copying: entries of a row, their keys, and their values
/// as text or typed.
///
/// This is the one reader of the `Map<Utf8, Struct<kind, str, int, double, bool, bytes>>`
/// layout: the store, the segment writer and `sightline-query` all read attributes through it.
/// A layout or kind code that does not match is [`StorageError::Corruption`].
pub struct AttrReader<'a> {
    offsets: &'a [i32],
    keys: &'a StringArray,
    kind: &'a UInt8Array,
    str_: &'a StringArray,
    int: &'a Int64Array,
    double: &'a Float64Array,
    bool_: &'a BooleanArray,
    bytes: &'a BinaryArray,
}

impl<'a> AttrReader<'a> {
    /// Wraps a map column; fails when its layout is not the attribute map's.
    pub fn new(map: &'a MapArray) -> Result<Self> {
        let entries = map.entries();
        let keys = child::<StringArray>(entries, 0)?;
        let values = child::<StructArray>(entries, 1)?;
        Ok(Self {
            offsets: map.value_offsets(),
            keys,
            kind: child(values, 0)?,
            str_: child(values, 1)?,
            int: child(values, 2)?,
            double: child(values, 3)?,
            bool_: child(values, 4)?,
            bytes: child(values, 5)?,
        })
    }

    /// The entry index range of row `row`.
    pub fn range(&self, row: usize) -> Result<std::ops::Range<usize>> {
        let start = *self
            .offsets
            .get(row)
            .ok_or_else(|| bad("map row out of range"))?;
        let end = *self
            .offsets
            .get(row + 1)
            .ok_or_else(|| bad("map row out of range"))?;
        if start < 0 || end < start || end as usize > self.keys.len() {
            return Err(bad("map offsets out of range"));
        }
        Ok(start as usize..end as usize)
    }

    pub(crate) fn value_kind(&self, entry: usize) -> Option<AttrKind> {
        AttrKind::from_code(self.kind.value(entry))
    }

    /// The key of entry `entry`.
    pub fn key(&self, entry: usize) -> &'a str {
        self.keys.value(entry)
    }

    /// The typed value of entry `entry` (array and kv-list values are parsed from their JSON).
    pub fn value(&self, entry: usize) -> Result<AttrValue> {
        let kind = AttrKind::from_code(self.kind.value(entry))
            .ok_or_else(|| bad(format!("unknown attribute kind {}", self.kind.value(entry))))?;
        Ok(match kind {
            AttrKind::Str => AttrValue::Str(self.str_.value(entry).to_owned()),
            AttrKind::Bool => AttrValue::Bool(self.bool_.value(entry)),
            AttrKind::Int => AttrValue::Int(self.int.value(entry)),
            AttrKind::Double => AttrValue::Double(self.double.value(entry)),
            AttrKind::Bytes => AttrValue::Bytes(self.bytes.value(entry).to_vec()),
            AttrKind::Array | AttrKind::KvList => {
                let json: serde_json::Value = serde_json::from_str(self.str_.value(entry))
                    .map_err(|e| bad(format!("attribute JSON: {e}")))?;
                AttrValue::from_typed_json(&json)
                    .ok_or_else(|| bad("attribute JSON is not a typed value"))?
            }
            AttrKind::Empty => AttrValue::Empty,
        })
    }

    /// The rendered value of `entry` without allocating an `AttrValue` for strings.
    pub fn rendered(&self, entry: usize) -> Result<std::borrow::Cow<'a, str>> {
        if self.kind.value(entry) == AttrKind::Str as u8 {
            return Ok(std::borrow::Cow::Borrowed(self.str_.value(entry)));
        }
        Ok(std::borrow::Cow::Owned(self.value(entry)?.render()))
    }

    /// The value of `key` in row `row` as text, if the row has the key.
    pub fn find(&self, row: usize, key: &str) -> Result<Option<std::borrow::Cow<'a, str>>> {
        for e in self.range(row)? {
            if self.key(e) == key {
                return self.rendered(e).map(Some);
            }
        }
        Ok(None)
    }

    /// The typed value of `key` in row `row`, if the row has the key (the first entry wins).
    pub fn get(&self, row: usize, key: &str) -> Result<Option<AttrValue>> {
        for e in self.range(row)? {
            if self.key(e) == key {
                return self.value(e).map(Some);
            }
        }
        Ok(None)
    }

    /// Every `(key, value)` entry of row `row`, in stored order.
    pub fn row(&self, row: usize) -> Result<Attributes> {
        self.range(row)?
            .map(|e| Ok((self.key(e).to_owned(), self.value(e)?)))
            .collect()
    }
}

/// Maps JSON back to an attribute value (numbers become `Int` when integral, else `Double`).
pub fn json_to_attr(v: &serde_json::Value) -> AttrValue {
    use serde_json::Value;
    match v {
        Value::Null => AttrValue::Empty,
        Value::Bool(b) => AttrValue::Bool(*b),
        Value::Number(n) => n
            .as_i64()
            .map(AttrValue::Int)
            .unwrap_or_else(|| AttrValue::Double(n.as_f64().unwrap_or(f64::NAN))),
        Value::String(s) => AttrValue::Str(s.clone()),
        Value::Array(items) => AttrValue::Array(items.iter().map(json_to_attr).collect()),
        Value::Object(map) => AttrValue::KvList(
            map.iter()
                .map(|(k, v)| (k.clone(), json_to_attr(v)))
                .collect(),
        ),
    }
}

fn trace_id_at(a: &FixedSizeBinaryArray, i: usize) -> Result<TraceId> {
    TraceId::from_slice(a.value(i)).map_err(|e| bad(e.to_string()))
}

fn span_id_at(a: &FixedSizeBinaryArray, i: usize) -> Result<SpanId> {
    SpanId::from_slice(a.value(i)).map_err(|e| bad(e.to_string()))
}

fn list_range(list: &ListArray, row: usize) -> Result<std::ops::Range<usize>> {
    let offs = list.value_offsets();
    let (s, e) = (offs[row], offs[row + 1]);
    if s < 0 || e < s || e as usize > list.values().len() {
        return Err(bad("list offsets out of range"));
    }
    Ok(s as usize..e as usize)
}

/// Decodes a span batch (full schema) back into rows.
pub fn spans_from_batch(batch: &RecordBatch) -> Result<Vec<SpanRecord>> {
    let trace = column::<FixedSizeBinaryArray>(batch, col::TRACE_ID)?;
    let span = column::<FixedSizeBinaryArray>(batch, col::SPAN_ID)?;
    let parent = column::<FixedSizeBinaryArray>(batch, col::PARENT_SPAN_ID)?;
    let trace_state = column::<StringArray>(batch, col::TRACE_STATE)?;
    let flags = column::<UInt32Array>(batch, col::FLAGS)?;
    let service = column::<StringArray>(batch, col::SERVICE_NAME)?;
    let name = column::<StringArray>(batch, col::SPAN_NAME)?;
    let kind = column::<UInt8Array>(batch, col::SPAN_KIND)?;
    let start = column::<TimestampNanosecondArray>(batch, col::START_TIME)?;
    let duration = column::<Int64Array>(batch, col::DURATION)?;
    let status = column::<UInt8Array>(batch, col::STATUS_CODE)?;
    let status_msg = column::<StringArray>(batch, col::STATUS_MESSAGE)?;
    let scope_name = column::<StringArray>(batch, col::SCOPE_NAME)?;
    let scope_version = column::<StringArray>(batch, col::SCOPE_VERSION)?;
    let op = column::<StringArray>(batch, col::GEN_AI_OPERATION)?;
    let provider = column::<StringArray>(batch, col::GEN_AI_PROVIDER)?;
    let req_model = column::<StringArray>(batch, col::GEN_AI_REQUEST_MODEL)?;
    let resp_model = column::<StringArray>(batch, col::GEN_AI_RESPONSE_MODEL)?;
    let in_tok = column::<Int64Array>(batch, col::GEN_AI_INPUT_TOKENS)?;
    let out_tok = column::<Int64Array>(batch, col::GEN_AI_OUTPUT_TOKENS)?;
    let total_tok = column::<Int64Array>(batch, col::GEN_AI_TOTAL_TOKENS)?;
    let cache_tok = column::<Int64Array>(batch, col::GEN_AI_CACHE_READ_TOKENS)?;
    let cost = column::<Float64Array>(batch, col::GEN_AI_COST)?;
    let temp = column::<Float64Array>(batch, col::GEN_AI_TEMPERATURE)?;
    let finish = column::<ListArray>(batch, col::GEN_AI_FINISH_REASONS)?;
    let finish_values = finish
        .values()
        .as_any()
        .downcast_ref::<StringArray>()
        .ok_or_else(|| bad("finish reasons are not strings"))?;
    let conv = column::<StringArray>(batch, col::GEN_AI_CONVERSATION_ID)?;
    let ent_mean = column::<Float64Array>(batch, col::ENTROPY_MEAN)?;
    let ent_max = column::<Float64Array>(batch, col::ENTROPY_MAX)?;
    let low_conf = column::<Int64Array>(batch, col::LOW_CONFIDENCE_TOKENS)?;
    let halluc = column::<Float64Array>(batch, col::HALLUCINATION_INDEX)?;
    let res_attrs = AttrReader::new(column::<MapArray>(batch, col::RESOURCE_ATTRIBUTES)?)?;
    let attrs = AttrReader::new(column::<MapArray>(batch, col::ATTRIBUTES)?)?;

    let events = column::<ListArray>(batch, col::EVENTS)?;
    let ev_items = events
        .values()
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| bad("events are not structs"))?;
    let ev_time = child::<TimestampNanosecondArray>(ev_items, 0)?;
    let ev_name = child::<StringArray>(ev_items, 1)?;
    let ev_attrs = AttrReader::new(child::<MapArray>(ev_items, 2)?)?;

    let links = column::<ListArray>(batch, col::LINKS)?;
    let ln_items = links
        .values()
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| bad("links are not structs"))?;
    let ln_trace = child::<FixedSizeBinaryArray>(ln_items, 0)?;
    let ln_span = child::<FixedSizeBinaryArray>(ln_items, 1)?;
    let ln_state = child::<StringArray>(ln_items, 2)?;
    let ln_attrs = AttrReader::new(child::<MapArray>(ln_items, 3)?)?;

    let mut out = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let start_ns = start.value(i);
        let mut ev = Vec::new();
        for e in list_range(events, i)? {
            ev.push(SpanEvent {
                time: UnixNanos(ev_time.value(e)),
                name: ev_name.value(e).to_owned(),
                attributes: ev_attrs.row(e)?,
            });
        }
        let mut ln = Vec::new();
        for l in list_range(links, i)? {
            ln.push(SpanLink {
                trace_id: trace_id_at(ln_trace, l)?,
                span_id: span_id_at(ln_span, l)?,
                trace_state: ln_state.value(l).to_owned(),
                attributes: ln_attrs.row(l)?,
            });
        }
        out.push(SpanRecord {
            trace_id: trace_id_at(trace, i)?,
            span_id: span_id_at(span, i)?,
            parent_span_id: if parent.is_null(i) {
                None
            } else {
                Some(span_id_at(parent, i)?)
            },
            trace_state: trace_state.value(i).to_owned(),
            flags: flags.value(i),
            service_name: service.value(i).to_owned(),
            name: name.value(i).to_owned(),
            kind: SpanKind::from_code(i32::from(kind.value(i))),
            start: UnixNanos(start_ns),
            end: UnixNanos(start_ns.saturating_add(duration.value(i))),
            status_code: StatusCode::from_code(i32::from(status.value(i))),
            status_message: status_msg.value(i).to_owned(),
            scope_name: scope_name.value(i).to_owned(),
            scope_version: scope_version.value(i).to_owned(),
            gen_ai: GenAiFields {
                operation_name: opt_str(op, i),
                provider_name: opt_str(provider, i),
                request_model: opt_str(req_model, i),
                response_model: opt_str(resp_model, i),
                input_tokens: opt_i64(in_tok, i),
                output_tokens: opt_i64(out_tok, i),
                total_tokens: opt_i64(total_tok, i),
                cache_read_input_tokens: opt_i64(cache_tok, i),
                cost: opt_f64(cost, i),
                temperature: opt_f64(temp, i),
                finish_reasons: list_range(finish, i)?
                    .map(|j| finish_values.value(j).to_owned())
                    .collect(),
                conversation_id: opt_str(conv, i),
            },
            quality: QualityFields {
                entropy_mean: opt_f64(ent_mean, i),
                entropy_max: opt_f64(ent_max, i),
                low_confidence_tokens: opt_i64(low_conf, i),
                hallucination_index: opt_f64(halluc, i),
            },
            resource_attributes: res_attrs.row(i)?,
            attributes: attrs.row(i)?,
            events: ev,
            links: ln,
        });
    }
    Ok(out)
}

/// Decodes a log batch (full schema) back into rows.
pub fn logs_from_batch(batch: &RecordBatch) -> Result<Vec<LogRecord>> {
    let rows = LogRows::new(batch)?;
    (0..batch.num_rows()).map(|i| rows.row(i)).collect()
}

/// The columns of a log batch, to decode chosen rows of it one at a time. A batch of the full
/// schema decodes every field ([`LogRows::new`]); a scan's projected batch decodes the fields
/// it holds, the others as their empty values ([`LogRows::projected`]).
pub struct LogRows<'a> {
    time: Option<&'a TimestampNanosecondArray>,
    observed: Option<&'a TimestampNanosecondArray>,
    sev: Option<&'a Int32Array>,
    sev_text: Option<&'a StringArray>,
    body: Option<(&'a StringArray, &'a UInt8Array)>,
    trace: Option<&'a FixedSizeBinaryArray>,
    span: Option<&'a FixedSizeBinaryArray>,
    flags: Option<&'a UInt32Array>,
    service: Option<&'a StringArray>,
    scope: Option<&'a StringArray>,
    event: Option<&'a StringArray>,
    res_attrs: Option<AttrReader<'a>>,
    attrs: Option<AttrReader<'a>>,
    rows: usize,
}

impl<'a> LogRows<'a> {
    /// The columns of `batch`; an error when one is missing or of another type.
    pub fn new(batch: &'a RecordBatch) -> Result<Self> {
        Self::read(batch, true)
    }

    /// The columns `batch` holds (a projection of the log schema); a field whose column is
    /// absent decodes as empty (`""`, 0, no id, no attributes; the body needs its kind column
    /// too). An error when a column present is of another type.
    pub fn projected(batch: &'a RecordBatch) -> Result<Self> {
        Self::read(batch, false)
    }

    fn read(batch: &'a RecordBatch, all: bool) -> Result<Self> {
        fn get<'b, T: 'static>(b: &'b RecordBatch, name: &str, all: bool) -> Result<Option<&'b T>> {
            if all || b.column_by_name(name).is_some() {
                column::<T>(b, name).map(Some)
            } else {
                Ok(None)
            }
        }
        let body = get::<StringArray>(batch, col::BODY, all)?;
        let body_kind = get::<UInt8Array>(batch, col::BODY_KIND, all)?;
        let attrs = |name| -> Result<Option<AttrReader<'a>>> {
            get::<MapArray>(batch, name, all)?
                .map(AttrReader::new)
                .transpose()
        };
        Ok(Self {
            time: get(batch, col::TIME, all)?,
            observed: get(batch, col::OBSERVED_TIME, all)?,
            sev: get(batch, col::SEVERITY_NUMBER, all)?,
            sev_text: get(batch, col::SEVERITY_TEXT, all)?,
            body: body.zip(body_kind),
            trace: get(batch, col::TRACE_ID, all)?,
            span: get(batch, col::SPAN_ID, all)?,
            flags: get(batch, col::FLAGS, all)?,
            service: get(batch, col::SERVICE_NAME, all)?,
            scope: get(batch, col::SCOPE_NAME, all)?,
            event: get(batch, col::EVENT_NAME, all)?,
            res_attrs: attrs(col::RESOURCE_ATTRIBUTES)?,
            attrs: attrs(col::ATTRIBUTES)?,
            rows: batch.num_rows(),
        })
    }

    /// Row `i` of the batch; an error when there is no such row.
    pub fn row(&self, i: usize) -> Result<LogRecord> {
        if i >= self.rows {
            return Err(bad(format!("row {i} of a batch of {}", self.rows)));
        }
        let body = match self.body {
            Some((text, kind)) => body_at(text.value(i), kind.value(i))?,
            None => AttrValue::Empty,
        };
        let text = |a: Option<&StringArray>| a.map_or_else(String::new, |a| a.value(i).to_owned());
        Ok(LogRecord {
            time: UnixNanos(self.time.map_or(0, |a| a.value(i))),
            observed_time: UnixNanos(self.observed.map_or(0, |a| a.value(i))),
            severity_number: self.sev.map_or(0, |a| a.value(i)),
            severity_text: text(self.sev_text),
            body,
            trace_id: match self.trace {
                Some(a) if !a.is_null(i) => Some(trace_id_at(a, i)?),
                _ => None,
            },
            span_id: match self.span {
                Some(a) if !a.is_null(i) => Some(span_id_at(a, i)?),
                _ => None,
            },
            flags: self.flags.map_or(0, |a| a.value(i)),
            service_name: text(self.service),
            scope_name: text(self.scope),
            event_name: text(self.event),
            resource_attributes: self
                .res_attrs
                .as_ref()
                .map_or(Ok(Vec::new()), |r| r.row(i))?,
            attributes: self.attrs.as_ref().map_or(Ok(Vec::new()), |r| r.row(i))?,
        })
    }
}

/// A log body from its stored text and kind.
fn body_at(text: &str, kind: u8) -> Result<AttrValue> {
    Ok(match AttrKind::from_code(kind) {
        Some(AttrKind::Str) => AttrValue::Str(text.to_owned()),
        Some(AttrKind::Empty) => AttrValue::Empty,
        Some(AttrKind::Bool) => AttrValue::Bool(text == "true"),
        Some(AttrKind::Int) => AttrValue::Int(text.parse().map_err(|_| bad("int body"))?),
        Some(AttrKind::Double) => AttrValue::Double(text.parse().map_err(|_| bad("double body"))?),
        Some(AttrKind::Bytes) => AttrValue::Bytes(
            (0..text.len() / 2)
                .map(|j| u8::from_str_radix(text.get(2 * j..2 * j + 2).unwrap_or(""), 16))
                .collect::<std::result::Result<_, _>>()
                .map_err(|_| bad("bytes body"))?,
        ),
        Some(AttrKind::Array | AttrKind::KvList) => {
            json_to_attr(&serde_json::from_str(text).map_err(|e| bad(format!("body JSON: {e}")))?)
        }
        None => return Err(bad("unknown body kind")),
    })
}

/// Decodes a series catalog batch.
pub fn series_from_batch(batch: &RecordBatch) -> Result<Vec<SeriesDef>> {
    let id = column::<UInt64Array>(batch, col::SERIES_ID)?;
    let name = column::<StringArray>(batch, col::METRIC_NAME)?;
    let kind = column::<UInt8Array>(batch, col::METRIC_KIND)?;
    let unit = column::<StringArray>(batch, col::UNIT)?;
    let help = column::<StringArray>(batch, col::HELP)?;
    let labels = column::<MapArray>(batch, col::LABELS)?;
    let keys = child::<StringArray>(labels.entries(), 0)?;
    let values = child::<StringArray>(labels.entries(), 1)?;
    let offsets = labels.value_offsets();
    let mut out = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let (s, e) = (offsets[i], offsets[i + 1]);
        if s < 0 || e < s || e as usize > keys.len() {
            return Err(bad("label offsets out of range"));
        }
        let labels: Vec<(String, String)> = (s as usize..e as usize)
            .map(|j| (keys.value(j).to_owned(), values.value(j).to_owned()))
            .collect();
        let def = SeriesDef {
            id: SeriesId(id.value(i)),
            metric_name: name.value(i).to_owned(),
            kind: MetricKind::from_code(kind.value(i)),
            unit: unit.value(i).to_owned(),
            help: help.value(i).to_owned(),
            labels,
        };
        if SeriesDef::compute_id(&def.metric_name, &def.labels) != def.id {
            return Err(bad(format!(
                "series {:#x} does not match its labels",
                def.id.0
            )));
        }
        out.push(def);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columnar::spans_to_batch;

    #[test]
    fn attr_reader_reads_typed_values_rows_and_keys() {
        let mut a = SpanRecord::new(
            TraceId([1; 16]),
            SpanId([1; 8]),
            "svc",
            "op",
            UnixNanos(1),
            UnixNanos(2),
        );
        a.attributes = vec![
            ("s".into(), AttrValue::Str("x".into())),
            ("i".into(), AttrValue::Int(7)),
            ("d".into(), AttrValue::Double(1.5)),
            ("b".into(), AttrValue::Bool(true)),
            (
                "arr".into(),
                AttrValue::Array(vec![AttrValue::Int(1), AttrValue::Str("y".into())]),
            ),
        ];
        let mut b = a.clone();
        b.span_id = SpanId([2; 8]);
        b.attributes = Vec::new();
        let batch = spans_to_batch(&[a.clone(), b]).expect("batch");
        let reader = AttrReader::new(column::<MapArray>(&batch, col::ATTRIBUTES).expect("map"))
            .expect("reader");
        assert_eq!(reader.row(0).expect("row"), a.attributes);
        assert!(reader.row(1).expect("row").is_empty());
        assert_eq!(reader.get(0, "i").expect("get"), Some(AttrValue::Int(7)));
        assert_eq!(
            reader.get(0, "d").expect("get"),
            Some(AttrValue::Double(1.5))
        );
        assert_eq!(
            reader.get(0, "b").expect("get"),
            Some(AttrValue::Bool(true))
        );
        assert_eq!(reader.get(0, "nope").expect("get"), None);
        assert_eq!(reader.get(1, "s").expect("get"), None);
        assert_eq!(reader.find(0, "s").expect("find").as_deref(), Some("x"));
        let e = reader.range(0).expect("range").start + 1;
        assert_eq!(reader.key(e), "i");
        assert_eq!(reader.value(e).expect("value"), AttrValue::Int(7));
        assert!(reader.range(2).is_err(), "row past the end is an error");
    }
}
