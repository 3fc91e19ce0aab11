//! Stored spans back to OTLP: the reverse of `otlp::traces` + `otlp::attributes` +
//! `otlp::genai`.
//!
//! Spans are grouped into one `ResourceSpans` per (service, resource attributes) and one
//! `ScopeSpans` per (scope name, version), in order of first appearance. `service.name` goes back
//! into the resource attributes (first). Promoted GenAI columns go back under their canonical
//! attribute names (appended after the stored attributes) unless the stored attributes already
//! carry that key (promotion keeps an attribute whose type did not fit its column, and then the
//! stored one is the original). Quality values computed at ingest appear as
//! `sightline.entropy.mean`, `sightline.entropy.max`, `sightline.low_confidence_tokens` and
//! `sightline.hallucination_index`. A span that only carried an alias (`gen_ai.system`) shows
//! the canonical key as well.

use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList, any_value::Value,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::{Event, Link};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use sightline_storage::{AttrValue, Attributes, SpanRecord};

/// One attribute value as OTLP.
pub fn any_value(v: &AttrValue) -> AnyValue {
    let value = match v {
        AttrValue::Str(s) => Some(Value::StringValue(s.clone())),
        AttrValue::Bool(b) => Some(Value::BoolValue(*b)),
        AttrValue::Int(i) => Some(Value::IntValue(*i)),
        AttrValue::Double(d) => Some(Value::DoubleValue(*d)),
        AttrValue::Bytes(b) => Some(Value::BytesValue(b.clone())),
        AttrValue::Array(items) => Some(Value::ArrayValue(ArrayValue {
            values: items.iter().map(any_value).collect(),
        })),
        AttrValue::KvList(kvs) => Some(Value::KvlistValue(KeyValueList {
            values: key_values(kvs),
        })),
        AttrValue::Empty => None,
    };
    AnyValue { value }
}

/// An attribute list as OTLP key-values.
pub fn key_values(attrs: &Attributes) -> Vec<KeyValue> {
    attrs
        .iter()
        .map(|(k, v)| KeyValue {
            key: k.clone(),
            value: Some(any_value(v)),
            key_strindex: 0,
        })
        .collect()
}

/// The span's attributes with the promoted and computed columns restored.
pub fn span_attributes(s: &SpanRecord) -> Attributes {
    let mut out = s.attributes.clone();
    let mut add = |key: &str, v: Option<AttrValue>| {
        if let Some(v) = v
            && !out.iter().any(|(k, _)| k == key)
        {
            out.push((key.to_owned(), v));
        }
    };
    let g = &s.gen_ai;
    add(
        "gen_ai.operation.name",
        g.operation_name.clone().map(AttrValue::Str),
    );
    add(
        "gen_ai.provider.name",
        g.provider_name.clone().map(AttrValue::Str),
    );
    add(
        "gen_ai.request.model",
        g.request_model.clone().map(AttrValue::Str),
    );
    add(
        "gen_ai.response.model",
        g.response_model.clone().map(AttrValue::Str),
    );
    add(
        "gen_ai.usage.input_tokens",
        g.input_tokens.map(AttrValue::Int),
    );
    add(
        "gen_ai.usage.output_tokens",
        g.output_tokens.map(AttrValue::Int),
    );
    add(
        "gen_ai.usage.total_tokens",
        g.total_tokens.map(AttrValue::Int),
    );
    add(
        "gen_ai.usage.cache_read.input_tokens",
        g.cache_read_input_tokens.map(AttrValue::Int),
    );
    add("gen_ai.usage.cost", g.cost.map(AttrValue::Double));
    add(
        "gen_ai.request.temperature",
        g.temperature.map(AttrValue::Double),
    );
    add(
        "gen_ai.response.finish_reasons",
        (!g.finish_reasons.is_empty()).then(|| {
            AttrValue::Array(
                g.finish_reasons
                    .iter()
                    .cloned()
                    .map(AttrValue::Str)
                    .collect(),
            )
        }),
    );
    add(
        "gen_ai.conversation.id",
        g.conversation_id.clone().map(AttrValue::Str),
    );
    let q = &s.quality;
    add(
        "sightline.entropy.mean",
        q.entropy_mean.map(AttrValue::Double),
    );
    add(
        "sightline.entropy.max",
        q.entropy_max.map(AttrValue::Double),
    );
    add(
        "sightline.low_confidence_tokens",
        q.low_confidence_tokens.map(AttrValue::Int),
    );
    add(
        "sightline.hallucination_index",
        q.hallucination_index.map(AttrValue::Double),
    );
    out
}

fn nanos(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// One stored span as an OTLP span.
pub fn span(s: &SpanRecord) -> Span {
    Span {
        trace_id: s.trace_id.as_bytes().to_vec(),
        span_id: s.span_id.as_bytes().to_vec(),
        trace_state: s.trace_state.clone(),
        parent_span_id: s
            .parent_span_id
            .map(|p| p.as_bytes().to_vec())
            .unwrap_or_default(),
        flags: s.flags,
        name: s.name.clone(),
        kind: s.kind as i32,
        start_time_unix_nano: nanos(s.start.0),
        end_time_unix_nano: nanos(s.end.0),
        attributes: key_values(&span_attributes(s)),
        dropped_attributes_count: 0,
        events: s
            .events
            .iter()
            .map(|e| Event {
                time_unix_nano: nanos(e.time.0),
                name: e.name.clone(),
                attributes: key_values(&e.attributes),
                dropped_attributes_count: 0,
            })
            .collect(),
        dropped_events_count: 0,
        links: s
            .links
            .iter()
            .map(|l| Link {
                trace_id: l.trace_id.as_bytes().to_vec(),
                span_id: l.span_id.as_bytes().to_vec(),
                trace_state: l.trace_state.clone(),
                attributes: key_values(&l.attributes),
                dropped_attributes_count: 0,
                flags: 0,
            })
            .collect(),
        dropped_links_count: 0,
        status: Some(Status {
            message: s.status_message.clone(),
            code: s.status_code as i32,
        }),
    }
}

/// Groups spans into OTLP resource spans (see the module docs).
pub fn resource_spans(spans: &[SpanRecord]) -> Vec<ResourceSpans> {
    let mut out: Vec<(String, Attributes, Vec<ScopeSpans>)> = Vec::new();
    for s in spans {
        let pos = out
            .iter()
            .position(|(svc, attrs, _)| *svc == s.service_name && *attrs == s.resource_attributes);
        let i = match pos {
            Some(i) => i,
            None => {
                out.push((
                    s.service_name.clone(),
                    s.resource_attributes.clone(),
                    Vec::new(),
                ));
                out.len() - 1
            }
        };
        let scopes = &mut out[i].2;
        let sp = scopes.iter().position(|ss| {
            ss.scope
                .as_ref()
                .is_some_and(|sc| sc.name == s.scope_name && sc.version == s.scope_version)
        });
        let j = match sp {
            Some(j) => j,
            None => {
                scopes.push(ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: s.scope_name.clone(),
                        version: s.scope_version.clone(),
                        attributes: Vec::new(),
                        dropped_attributes_count: 0,
                    }),
                    spans: Vec::new(),
                    schema_url: String::new(),
                });
                scopes.len() - 1
            }
        };
        scopes[j].spans.push(span(s));
    }
    out.into_iter()
        .map(|(svc, attrs, scope_spans)| {
            let mut all = vec![("service.name".to_owned(), AttrValue::Str(svc))];
            all.extend(attrs);
            ResourceSpans {
                resource: Some(Resource {
                    attributes: key_values(&all),
                    dropped_attributes_count: 0,
                    entity_refs: Vec::new(),
                }),
                scope_spans,
                schema_url: String::new(),
            }
        })
        .collect()
}
