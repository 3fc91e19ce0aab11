//! Conversion of row batches ([`crate::model`]) into Arrow `RecordBatch`es and back.
//!
//! Encoding is the hot path of ingest: each column is built in one pass with Arrow's builders, and
//! nested attribute maps are assembled from flat child arrays plus offsets.

mod decode;
mod take;

use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, FixedSizeBinaryBuilder, Float64Builder, Int32Builder,
    Int64Builder, StringBuilder, UInt8Builder, UInt32Builder, UInt64Builder,
};
use arrow_array::{
    ArrayRef, ListArray, MapArray, RecordBatch, StructArray, TimestampMillisecondArray,
    TimestampNanosecondArray,
};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};

pub(crate) use decode::column as decode_column;
pub use decode::{AttrReader, LogRows};
pub use decode::{json_to_attr, logs_from_batch, series_from_batch, spans_from_batch};
pub(crate) use take::take_batch;

use crate::error::Result;
use crate::model::{
    AttrValue, Attributes, LogRecord, Sample, SeriesDef, SpanEvent, SpanLink, SpanRecord,
};
use crate::schema;

/// Builds an attribute map column from many attribute lists.
pub(crate) struct AttrColumnBuilder {
    offsets: Vec<i32>,
    keys: StringBuilder,
    kind: UInt8Builder,
    str_: StringBuilder,
    int: Int64Builder,
    double: Float64Builder,
    bool_: BooleanBuilder,
    bytes: BinaryBuilder,
}

impl AttrColumnBuilder {
    pub(crate) fn with_capacity(lists: usize) -> Self {
        let mut offsets = Vec::with_capacity(lists + 1);
        offsets.push(0);
        Self {
            offsets,
            keys: StringBuilder::new(),
            kind: UInt8Builder::new(),
            str_: StringBuilder::new(),
            int: Int64Builder::new(),
            double: Float64Builder::new(),
            bool_: BooleanBuilder::new(),
            bytes: BinaryBuilder::new(),
        }
    }

    fn push_value(&mut self, v: &AttrValue) {
        self.kind.append_value(v.kind() as u8);
        let (s, i, d, b, by): (Option<String>, _, _, _, Option<&[u8]>) = match v {
            AttrValue::Str(s) => {
                self.str_.append_value(s);
                (None, None, None, None, None)
            }
            AttrValue::Bool(x) => (None, None, None, Some(*x), None),
            AttrValue::Int(x) => (None, Some(*x), None, None, None),
            AttrValue::Double(x) => (None, None, Some(*x), None, None),
            AttrValue::Bytes(x) => (None, None, None, None, Some(x.as_slice())),
            AttrValue::Array(_) | AttrValue::KvList(_) => {
                (Some(v.to_typed_json().to_string()), None, None, None, None)
            }
            AttrValue::Empty => (None, None, None, None, None),
        };
        if !matches!(v, AttrValue::Str(_)) {
            self.str_.append_option(s);
        }
        self.int.append_option(i);
        self.double.append_option(d);
        self.bool_.append_option(b);
        self.bytes.append_option(by);
    }

    pub(crate) fn push_list(&mut self, attrs: &Attributes) {
        for (k, v) in attrs {
            self.keys.append_value(k);
            self.push_value(v);
        }
        let last = self.offsets.last().copied().unwrap_or(0);
        self.offsets.push(last + attrs.len() as i32);
    }

    pub(crate) fn finish(mut self) -> MapArray {
        let values = StructArray::new(
            schema::attr_value_fields(),
            vec![
                Arc::new(self.kind.finish()) as ArrayRef,
                Arc::new(self.str_.finish()),
                Arc::new(self.int.finish()),
                Arc::new(self.double.finish()),
                Arc::new(self.bool_.finish()),
                Arc::new(self.bytes.finish()),
            ],
            None,
        );
        let entry_fields = match schema::attr_entries_field().data_type() {
            arrow_schema::DataType::Struct(f) => f.clone(),
            _ => unreachable!("attr_entries_field is a struct"),
        };
        let entries = StructArray::new(
            entry_fields,
            vec![Arc::new(self.keys.finish()) as ArrayRef, Arc::new(values)],
            None,
        );
        MapArray::new(
            schema::attr_entries_field(),
            OffsetBuffer::new(ScalarBuffer::from(self.offsets)),
            entries,
            None,
            false,
        )
    }
}

fn list_offsets(lens: impl Iterator<Item = usize>) -> OffsetBuffer<i32> {
    let mut offsets = vec![0i32];
    let mut acc = 0i32;
    for l in lens {
        acc += l as i32;
        offsets.push(acc);
    }
    OffsetBuffer::new(ScalarBuffer::from(offsets))
}

fn struct_fields(dt: arrow_schema::DataType) -> arrow_schema::Fields {
    match dt {
        arrow_schema::DataType::Struct(f) => f,
        _ => arrow_schema::Fields::empty(),
    }
}

fn events_array(spans: &[SpanRecord]) -> ListArray {
    let all: Vec<&SpanEvent> = spans.iter().flat_map(|s| s.events.iter()).collect();
    let mut time = Vec::with_capacity(all.len());
    let mut name = StringBuilder::new();
    let mut attrs = AttrColumnBuilder::with_capacity(all.len());
    for e in &all {
        time.push(e.time.0);
        name.append_value(&e.name);
        attrs.push_list(&e.attributes);
    }
    let fields = schema::event_fields();
    let items = StructArray::new(
        fields.clone(),
        vec![
            Arc::new(TimestampNanosecondArray::from(time)) as ArrayRef,
            Arc::new(name.finish()),
            Arc::new(attrs.finish()),
        ],
        None,
    );
    let item_field = match schema::SPANS
        .field_with_name(schema::col::EVENTS)
        .map(|f| f.data_type().clone())
    {
        Ok(arrow_schema::DataType::List(f)) => f,
        _ => unreachable!("events column is a list"),
    };
    ListArray::new(
        item_field,
        list_offsets(spans.iter().map(|s| s.events.len())),
        Arc::new(items),
        None,
    )
}

fn links_array(spans: &[SpanRecord]) -> ListArray {
    let all: Vec<&SpanLink> = spans.iter().flat_map(|s| s.links.iter()).collect();
    let mut trace = FixedSizeBinaryBuilder::with_capacity(all.len(), 16);
    let mut span = FixedSizeBinaryBuilder::with_capacity(all.len(), 8);
    let mut state = StringBuilder::new();
    let mut attrs = AttrColumnBuilder::with_capacity(all.len());
    for l in &all {
        // Lengths are fixed by the newtypes, so these appends cannot fail.
        let _ = trace.append_value(l.trace_id.0);
        let _ = span.append_value(l.span_id.0);
        state.append_value(&l.trace_state);
        attrs.push_list(&l.attributes);
    }
    let items = StructArray::new(
        schema::link_fields(),
        vec![
            Arc::new(trace.finish()) as ArrayRef,
            Arc::new(span.finish()),
            Arc::new(state.finish()),
            Arc::new(attrs.finish()),
        ],
        None,
    );
    let item_field = match schema::SPANS
        .field_with_name(schema::col::LINKS)
        .map(|f| f.data_type().clone())
    {
        Ok(arrow_schema::DataType::List(f)) => f,
        _ => unreachable!("links column is a list"),
    };
    ListArray::new(
        item_field,
        list_offsets(spans.iter().map(|s| s.links.len())),
        Arc::new(items),
        None,
    )
}

/// Encodes spans with the [`schema::SPANS`] schema.
pub fn spans_to_batch(spans: &[SpanRecord]) -> Result<RecordBatch> {
    let n = spans.len();
    let mut trace = FixedSizeBinaryBuilder::with_capacity(n, 16);
    let mut span = FixedSizeBinaryBuilder::with_capacity(n, 8);
    let mut parent = FixedSizeBinaryBuilder::with_capacity(n, 8);
    let mut trace_state = StringBuilder::new();
    let mut flags = UInt32Builder::with_capacity(n);
    let mut service = StringBuilder::new();
    let mut name = StringBuilder::new();
    let mut kind = UInt8Builder::with_capacity(n);
    let mut start = Vec::with_capacity(n);
    let mut duration = Int64Builder::with_capacity(n);
    let mut status = UInt8Builder::with_capacity(n);
    let mut status_msg = StringBuilder::new();
    let mut scope_name = StringBuilder::new();
    let mut scope_version = StringBuilder::new();
    let mut op = StringBuilder::new();
    let mut provider = StringBuilder::new();
    let mut req_model = StringBuilder::new();
    let mut resp_model = StringBuilder::new();
    let mut in_tok = Int64Builder::with_capacity(n);
    let mut out_tok = Int64Builder::with_capacity(n);
    let mut total_tok = Int64Builder::with_capacity(n);
    let mut cache_tok = Int64Builder::with_capacity(n);
    let mut cost = Float64Builder::with_capacity(n);
    let mut temp = Float64Builder::with_capacity(n);
    let mut finish = StringBuilder::new();
    let mut conv = StringBuilder::new();
    let mut ent_mean = Float64Builder::with_capacity(n);
    let mut ent_max = Float64Builder::with_capacity(n);
    let mut low_conf = Int64Builder::with_capacity(n);
    let mut halluc = Float64Builder::with_capacity(n);
    let mut res_attrs = AttrColumnBuilder::with_capacity(n);
    let mut attrs = AttrColumnBuilder::with_capacity(n);
    for s in spans {
        let _ = trace.append_value(s.trace_id.0);
        let _ = span.append_value(s.span_id.0);
        match s.parent_span_id {
            Some(p) => {
                let _ = parent.append_value(p.0);
            }
            None => parent.append_null(),
        }
        trace_state.append_value(&s.trace_state);
        flags.append_value(s.flags);
        service.append_value(&s.service_name);
        name.append_value(&s.name);
        kind.append_value(s.kind as u8);
        start.push(s.start.0);
        duration.append_value(s.duration_nanos());
        status.append_value(s.status_code as u8);
        status_msg.append_value(&s.status_message);
        scope_name.append_value(&s.scope_name);
        scope_version.append_value(&s.scope_version);
        let g = &s.gen_ai;
        op.append_option(g.operation_name.as_deref());
        provider.append_option(g.provider_name.as_deref());
        req_model.append_option(g.request_model.as_deref());
        resp_model.append_option(g.response_model.as_deref());
        in_tok.append_option(g.input_tokens);
        out_tok.append_option(g.output_tokens);
        total_tok.append_option(g.total_tokens);
        cache_tok.append_option(g.cache_read_input_tokens);
        cost.append_option(g.cost);
        temp.append_option(g.temperature);
        for r in &g.finish_reasons {
            finish.append_value(r);
        }
        conv.append_option(g.conversation_id.as_deref());
        let q = &s.quality;
        ent_mean.append_option(q.entropy_mean);
        ent_max.append_option(q.entropy_max);
        low_conf.append_option(q.low_confidence_tokens);
        halluc.append_option(q.hallucination_index);
        res_attrs.push_list(&s.resource_attributes);
        attrs.push_list(&s.attributes);
    }
    let finish_reasons = ListArray::new(
        schema::finish_reason_item(),
        list_offsets(spans.iter().map(|s| s.gen_ai.finish_reasons.len())),
        Arc::new(finish.finish()),
        None,
    );
    let columns: Vec<ArrayRef> = vec![
        Arc::new(trace.finish()),
        Arc::new(span.finish()),
        Arc::new(parent.finish()),
        Arc::new(trace_state.finish()),
        Arc::new(flags.finish()),
        Arc::new(service.finish()),
        Arc::new(name.finish()),
        Arc::new(kind.finish()),
        Arc::new(TimestampNanosecondArray::from(start)),
        Arc::new(duration.finish()),
        Arc::new(status.finish()),
        Arc::new(status_msg.finish()),
        Arc::new(scope_name.finish()),
        Arc::new(scope_version.finish()),
        Arc::new(op.finish()),
        Arc::new(provider.finish()),
        Arc::new(req_model.finish()),
        Arc::new(resp_model.finish()),
        Arc::new(in_tok.finish()),
        Arc::new(out_tok.finish()),
        Arc::new(total_tok.finish()),
        Arc::new(cache_tok.finish()),
        Arc::new(cost.finish()),
        Arc::new(temp.finish()),
        Arc::new(finish_reasons),
        Arc::new(conv.finish()),
        Arc::new(ent_mean.finish()),
        Arc::new(ent_max.finish()),
        Arc::new(low_conf.finish()),
        Arc::new(halluc.finish()),
        Arc::new(res_attrs.finish()),
        Arc::new(attrs.finish()),
        Arc::new(events_array(spans)),
        Arc::new(links_array(spans)),
    ];
    Ok(RecordBatch::try_new(schema::SPANS.clone(), columns)?)
}

/// Encodes log records with the [`schema::LOGS`] schema.
pub fn logs_to_batch(logs: &[LogRecord]) -> Result<RecordBatch> {
    let n = logs.len();
    let mut time = Vec::with_capacity(n);
    let mut observed = Vec::with_capacity(n);
    let mut sev = Int32Builder::with_capacity(n);
    let mut sev_text = StringBuilder::new();
    let mut body = StringBuilder::new();
    let mut body_kind = UInt8Builder::with_capacity(n);
    let mut trace = FixedSizeBinaryBuilder::with_capacity(n, 16);
    let mut span = FixedSizeBinaryBuilder::with_capacity(n, 8);
    let mut flags = UInt32Builder::with_capacity(n);
    let mut service = StringBuilder::new();
    let mut scope = StringBuilder::new();
    let mut event = StringBuilder::new();
    let mut res_attrs = AttrColumnBuilder::with_capacity(n);
    let mut attrs = AttrColumnBuilder::with_capacity(n);
    for l in logs {
        time.push(l.time.0);
        observed.push(l.observed_time.0);
        sev.append_value(l.severity_number);
        sev_text.append_value(&l.severity_text);
        match &l.body {
            AttrValue::Str(s) => body.append_value(s),
            other => body.append_value(other.render()),
        }
        body_kind.append_value(l.body.kind() as u8);
        match l.trace_id {
            Some(t) => {
                let _ = trace.append_value(t.0);
            }
            None => trace.append_null(),
        }
        match l.span_id {
            Some(s) => {
                let _ = span.append_value(s.0);
            }
            None => span.append_null(),
        }
        flags.append_value(l.flags);
        service.append_value(&l.service_name);
        scope.append_value(&l.scope_name);
        event.append_value(&l.event_name);
        res_attrs.push_list(&l.resource_attributes);
        attrs.push_list(&l.attributes);
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(TimestampNanosecondArray::from(time)),
        Arc::new(TimestampNanosecondArray::from(observed)),
        Arc::new(sev.finish()),
        Arc::new(sev_text.finish()),
        Arc::new(body.finish()),
        Arc::new(body_kind.finish()),
        Arc::new(trace.finish()),
        Arc::new(span.finish()),
        Arc::new(flags.finish()),
        Arc::new(service.finish()),
        Arc::new(scope.finish()),
        Arc::new(event.finish()),
        Arc::new(res_attrs.finish()),
        Arc::new(attrs.finish()),
    ];
    Ok(RecordBatch::try_new(schema::LOGS.clone(), columns)?)
}

/// Encodes samples with the [`schema::SAMPLES`] schema.
pub fn samples_to_batch(samples: &[Sample]) -> Result<RecordBatch> {
    let mut series = UInt64Builder::with_capacity(samples.len());
    let mut ts = Vec::with_capacity(samples.len());
    let mut values = Float64Builder::with_capacity(samples.len());
    for s in samples {
        series.append_value(s.series.0);
        ts.push(s.timestamp_ms);
        values.append_value(s.value);
    }
    Ok(RecordBatch::try_new(
        schema::SAMPLES.clone(),
        vec![
            Arc::new(series.finish()),
            Arc::new(TimestampMillisecondArray::from(ts)),
            Arc::new(values.finish()),
        ],
    )?)
}

/// Encodes series definitions with the [`schema::SERIES`] schema.
pub fn series_to_batch(series: &[&SeriesDef]) -> Result<RecordBatch> {
    let mut id = UInt64Builder::with_capacity(series.len());
    let mut name = StringBuilder::new();
    let mut kind = UInt8Builder::with_capacity(series.len());
    let mut unit = StringBuilder::new();
    let mut help = StringBuilder::new();
    let mut keys = StringBuilder::new();
    let mut values = StringBuilder::new();
    for s in series {
        id.append_value(s.id.0);
        name.append_value(&s.metric_name);
        kind.append_value(s.kind as u8);
        unit.append_value(&s.unit);
        help.append_value(&s.help);
        for (k, v) in &s.labels {
            keys.append_value(k);
            values.append_value(v);
        }
    }
    let entries = StructArray::new(
        struct_fields(schema::label_entries_field().data_type().clone()),
        vec![
            Arc::new(keys.finish()) as ArrayRef,
            Arc::new(values.finish()),
        ],
        None,
    );
    let labels = MapArray::new(
        schema::label_entries_field(),
        list_offsets(series.iter().map(|s| s.labels.len())),
        entries,
        None,
        false,
    );
    Ok(RecordBatch::try_new(
        schema::SERIES.clone(),
        vec![
            Arc::new(id.finish()),
            Arc::new(name.finish()),
            Arc::new(kind.finish()),
            Arc::new(unit.finish()),
            Arc::new(help.finish()),
            Arc::new(labels),
        ],
    )?)
}

/// Approximate in-memory size of a record batch (Arrow buffers).
pub fn batch_bytes(batch: &RecordBatch) -> usize {
    batch.get_array_memory_size()
}
