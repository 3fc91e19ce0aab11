//! Generators of OTLP and remote-write requests for the pre-scan's property tests, and
//! [`Heap`], the heap a decoded value owns.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, EntityRef, InstrumentationScope, KeyValue, KeyValueList, any_value,
};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::metrics::v1::{
    Exemplar, ExponentialHistogram, ExponentialHistogramDataPoint, Gauge, Histogram,
    HistogramDataPoint, Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum, Summary,
    SummaryDataPoint, exemplar, exponential_histogram_data_point::Buckets, metric,
    number_data_point, summary_data_point::ValueAtQuantile,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status, span};
use proptest::prelude::*;

use std::mem::size_of;

use crate::prompb as prom;

/// Heap bytes a decoded value owns: its `Vec` and `String` capacities, recursively (what the
/// decoder allocated and the value keeps).
pub(super) trait Heap {
    fn heap(&self) -> usize;
}

macro_rules! leaf {
    ($($t:ty),*) => { $(impl Heap for $t { fn heap(&self) -> usize { 0 } })* };
}
leaf!(u8, u32, u64, i32, i64, f64, bool);

impl Heap for String {
    fn heap(&self) -> usize {
        self.capacity()
    }
}

impl<T: Heap> Heap for Vec<T> {
    fn heap(&self) -> usize {
        self.capacity() * size_of::<T>() + self.iter().map(Heap::heap).sum::<usize>()
    }
}

impl<T: Heap> Heap for Option<T> {
    fn heap(&self) -> usize {
        self.as_ref().map_or(0, Heap::heap)
    }
}

macro_rules! fields {
    ($($t:ty: $($f:ident),*;)*) => {
        $(impl Heap for $t { fn heap(&self) -> usize { 0 $(+ self.$f.heap())* } })*
    };
}
fields! {
    ExportTraceServiceRequest: resource_spans;
    ExportLogsServiceRequest: resource_logs;
    ExportMetricsServiceRequest: resource_metrics;
    Resource: attributes, entity_refs;
    InstrumentationScope: name, version, attributes;
    KeyValue: key, value;
    AnyValue: value;
    ArrayValue: values;
    KeyValueList: values;
    EntityRef: schema_url, r#type, id_keys, description_keys;
    ResourceSpans: resource, scope_spans, schema_url;
    ScopeSpans: scope, spans, schema_url;
    Span: trace_id, span_id, trace_state, parent_span_id, name, attributes, events, links, status;
    span::Event: name, attributes;
    span::Link: trace_id, span_id, trace_state, attributes;
    Status: message;
    ResourceLogs: resource, scope_logs, schema_url;
    ScopeLogs: scope, log_records, schema_url;
    LogRecord: severity_text, body, attributes, trace_id, span_id, event_name;
    ResourceMetrics: resource, scope_metrics, schema_url;
    ScopeMetrics: scope, metrics, schema_url;
    Metric: name, description, unit, metadata, data;
    Gauge: data_points;
    Sum: data_points;
    Histogram: data_points;
    ExponentialHistogram: data_points;
    Summary: data_points;
    NumberDataPoint: attributes, exemplars;
    HistogramDataPoint: attributes, bucket_counts, explicit_bounds, exemplars;
    ExponentialHistogramDataPoint: attributes, positive, negative, exemplars;
    Buckets: bucket_counts;
    SummaryDataPoint: attributes, quantile_values;
    ValueAtQuantile: ;
    Exemplar: filtered_attributes, span_id, trace_id;
}

impl Heap for any_value::Value {
    fn heap(&self) -> usize {
        use any_value::Value as V;
        match self {
            V::StringValue(s) => s.heap(),
            V::BytesValue(b) => b.heap(),
            V::ArrayValue(a) => a.heap(),
            V::KvlistValue(k) => k.heap(),
            V::BoolValue(_) | V::IntValue(_) | V::DoubleValue(_) | V::StringValueStrindex(_) => 0,
        }
    }
}

impl Heap for metric::Data {
    fn heap(&self) -> usize {
        match self {
            metric::Data::Gauge(g) => g.heap(),
            metric::Data::Sum(s) => s.heap(),
            metric::Data::Histogram(h) => h.heap(),
            metric::Data::ExponentialHistogram(h) => h.heap(),
            metric::Data::Summary(s) => s.heap(),
        }
    }
}

pub(super) fn text() -> impl Strategy<Value = String> {
    prop_oneof![3 => "[a-z._]{0,12}", 1 => "\\PC{0,6}"]
}

pub(super) fn blob() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..20)
}

pub(super) fn finite() -> impl Strategy<Value = f64> {
    -1e9f64..1e9
}

pub(super) fn any_value() -> impl Strategy<Value = AnyValue> {
    use any_value::Value as V;
    let leaf = prop_oneof![
        text().prop_map(V::StringValue),
        any::<bool>().prop_map(V::BoolValue),
        any::<i64>().prop_map(V::IntValue),
        finite().prop_map(V::DoubleValue),
        blob().prop_map(V::BytesValue),
    ];
    let leaf = prop::option::of(leaf).prop_map(|value| AnyValue { value });
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|values| AnyValue {
                value: Some(V::ArrayValue(ArrayValue { values }))
            }),
            prop::collection::vec((text(), prop::option::of(inner)), 0..3).prop_map(|kvs| {
                let values = kvs
                    .into_iter()
                    .map(|(key, value)| KeyValue {
                        key,
                        value,
                        ..Default::default()
                    })
                    .collect();
                AnyValue {
                    value: Some(V::KvlistValue(KeyValueList { values })),
                }
            }),
        ]
    })
}

pub(super) fn attrs() -> impl Strategy<Value = Vec<KeyValue>> {
    prop::collection::vec(
        (text(), prop::option::of(any_value())).prop_map(|(key, value)| KeyValue {
            key,
            value,
            ..Default::default()
        }),
        0..4,
    )
}

pub(super) fn resource() -> impl Strategy<Value = Option<Resource>> {
    let entity = (text(), text(), prop::collection::vec(text(), 0..3)).prop_map(
        |(schema_url, r#type, id_keys)| EntityRef {
            schema_url,
            r#type,
            description_keys: id_keys.iter().rev().cloned().collect(),
            id_keys,
        },
    );
    prop::option::of(
        (attrs(), any::<u32>(), prop::collection::vec(entity, 0..2)).prop_map(
            |(attributes, dropped_attributes_count, entity_refs)| Resource {
                attributes,
                dropped_attributes_count,
                entity_refs,
            },
        ),
    )
}

pub(super) fn scope() -> impl Strategy<Value = Option<InstrumentationScope>> {
    prop::option::of(
        (text(), text(), attrs()).prop_map(|(name, version, attributes)| InstrumentationScope {
            name,
            version,
            attributes,
            dropped_attributes_count: 1,
        }),
    )
}

pub(super) fn span() -> impl Strategy<Value = Span> {
    let event = (any::<u64>(), text(), attrs()).prop_map(|(time_unix_nano, name, attributes)| {
        span::Event {
            time_unix_nano,
            name,
            attributes,
            dropped_attributes_count: 0,
        }
    });
    let link = (blob(), blob(), text(), attrs(), any::<u32>()).prop_map(
        |(trace_id, span_id, trace_state, attributes, flags)| span::Link {
            trace_id,
            span_id,
            trace_state,
            attributes,
            dropped_attributes_count: 2,
            flags,
        },
    );
    let status =
        prop::option::of((text(), 0..3i32).prop_map(|(message, code)| Status { message, code }));
    (
        (blob(), blob(), blob(), text(), text(), any::<i32>()),
        (any::<u64>(), any::<u64>(), attrs(), any::<u32>()),
        (
            prop::collection::vec(event, 0..3),
            prop::collection::vec(link, 0..2),
            status,
        ),
    )
        .prop_map(
            |(
                (trace_id, span_id, parent_span_id, trace_state, name, kind),
                (start, end, attributes, flags),
                (events, links, status),
            )| Span {
                trace_id,
                span_id,
                trace_state,
                parent_span_id,
                flags,
                name,
                kind,
                start_time_unix_nano: start,
                end_time_unix_nano: end,
                attributes,
                dropped_attributes_count: 3,
                events,
                dropped_events_count: 0,
                links,
                dropped_links_count: 1,
                status,
            },
        )
}

pub(super) fn traces() -> impl Strategy<Value = ExportTraceServiceRequest> {
    let scope_spans = (scope(), prop::collection::vec(span(), 0..5), text()).prop_map(
        |(scope, spans, schema_url)| ScopeSpans {
            scope,
            spans,
            schema_url,
        },
    );
    let resource_spans = (resource(), prop::collection::vec(scope_spans, 0..3), text()).prop_map(
        |(resource, scope_spans, schema_url)| ResourceSpans {
            resource,
            scope_spans,
            schema_url,
        },
    );
    prop::collection::vec(resource_spans, 0..3)
        .prop_map(|resource_spans| ExportTraceServiceRequest { resource_spans })
}

pub(super) fn logs() -> impl Strategy<Value = ExportLogsServiceRequest> {
    let record = (
        (
            any::<u64>(),
            any::<u64>(),
            any::<i32>(),
            text(),
            prop::option::of(any_value()),
        ),
        (attrs(), any::<u32>(), blob(), blob(), text()),
    )
        .prop_map(
            |(
                (time, observed, severity_number, severity_text, body),
                (attributes, flags, trace_id, span_id, event_name),
            )| LogRecord {
                time_unix_nano: time,
                observed_time_unix_nano: observed,
                severity_number,
                severity_text,
                body,
                attributes,
                dropped_attributes_count: 0,
                flags,
                trace_id,
                span_id,
                event_name,
            },
        );
    let scope_logs = (scope(), prop::collection::vec(record, 0..5), text()).prop_map(
        |(scope, log_records, schema_url)| ScopeLogs {
            scope,
            log_records,
            schema_url,
        },
    );
    let resource_logs = (resource(), prop::collection::vec(scope_logs, 0..3), text()).prop_map(
        |(resource, scope_logs, schema_url)| ResourceLogs {
            resource,
            scope_logs,
            schema_url,
        },
    );
    prop::collection::vec(resource_logs, 0..3)
        .prop_map(|resource_logs| ExportLogsServiceRequest { resource_logs })
}

pub(super) fn exemplars() -> impl Strategy<Value = Vec<Exemplar>> {
    let value = prop::option::of(prop_oneof![
        finite().prop_map(exemplar::Value::AsDouble),
        any::<i64>().prop_map(exemplar::Value::AsInt),
    ]);
    prop::collection::vec(
        (attrs(), any::<u64>(), blob(), blob(), value).prop_map(
            |(filtered_attributes, time_unix_nano, span_id, trace_id, value)| Exemplar {
                filtered_attributes,
                time_unix_nano,
                span_id,
                trace_id,
                value,
            },
        ),
        0..2,
    )
}

pub(super) fn numbers() -> impl Strategy<Value = Vec<NumberDataPoint>> {
    let value = prop::option::of(prop_oneof![
        finite().prop_map(number_data_point::Value::AsDouble),
        any::<i64>().prop_map(number_data_point::Value::AsInt),
    ]);
    prop::collection::vec(
        (attrs(), any::<u64>(), exemplars(), value).prop_map(
            |(attributes, t, exemplars, value)| NumberDataPoint {
                attributes,
                start_time_unix_nano: t / 2,
                time_unix_nano: t,
                exemplars,
                flags: 0,
                value,
            },
        ),
        0..4,
    )
}

pub(super) fn data() -> impl Strategy<Value = Option<metric::Data>> {
    let counts = || prop::collection::vec(any::<u64>(), 0..6);
    let histogram = prop::collection::vec(
        (
            attrs(),
            counts(),
            prop::collection::vec(finite(), 0..6),
            exemplars(),
            prop::option::of(finite()),
        )
            .prop_map(
                |(attributes, bucket_counts, explicit_bounds, exemplars, sum)| HistogramDataPoint {
                    attributes,
                    count: 3,
                    sum,
                    bucket_counts,
                    explicit_bounds,
                    exemplars,
                    min: sum,
                    ..Default::default()
                },
            ),
        0..4,
    );
    let buckets = || {
        prop::option::of(
            (any::<i32>(), counts()).prop_map(|(offset, bucket_counts)| Buckets {
                offset,
                bucket_counts,
            }),
        )
    };
    let exponential = prop::collection::vec(
        (attrs(), any::<i32>(), buckets(), buckets(), exemplars()).prop_map(
            |(attributes, scale, positive, negative, exemplars)| ExponentialHistogramDataPoint {
                attributes,
                scale,
                positive,
                negative,
                exemplars,
                zero_threshold: 0.5,
                ..Default::default()
            },
        ),
        0..4,
    );
    let quantiles = prop::collection::vec(
        (finite(), finite()).prop_map(|(quantile, value)| ValueAtQuantile { quantile, value }),
        0..4,
    );
    let summary = prop::collection::vec(
        (attrs(), quantiles).prop_map(|(attributes, quantile_values)| SummaryDataPoint {
            attributes,
            quantile_values,
            count: 1,
            ..Default::default()
        }),
        0..4,
    );
    prop::option::of(prop_oneof![
        numbers().prop_map(|data_points| metric::Data::Gauge(Gauge { data_points })),
        (numbers(), any::<bool>()).prop_map(|(data_points, is_monotonic)| metric::Data::Sum(Sum {
            data_points,
            aggregation_temporality: 2,
            is_monotonic,
        })),
        histogram.prop_map(|data_points| metric::Data::Histogram(Histogram {
            data_points,
            aggregation_temporality: 1
        })),
        exponential.prop_map(|data_points| metric::Data::ExponentialHistogram(
            ExponentialHistogram {
                data_points,
                aggregation_temporality: 1
            }
        )),
        summary.prop_map(|data_points| metric::Data::Summary(Summary { data_points })),
    ])
}

pub(super) fn metrics() -> impl Strategy<Value = ExportMetricsServiceRequest> {
    let metric = (text(), text(), text(), attrs(), data()).prop_map(
        |(name, description, unit, metadata, data)| Metric {
            name,
            description,
            unit,
            metadata,
            data,
        },
    );
    let scope_metrics = (scope(), prop::collection::vec(metric, 0..4), text()).prop_map(
        |(scope, metrics, schema_url)| ScopeMetrics {
            scope,
            metrics,
            schema_url,
        },
    );
    let resource_metrics = (
        resource(),
        prop::collection::vec(scope_metrics, 0..3),
        text(),
    )
        .prop_map(|(resource, scope_metrics, schema_url)| ResourceMetrics {
            resource,
            scope_metrics,
            schema_url,
        });
    prop::collection::vec(resource_metrics, 0..3)
        .prop_map(|resource_metrics| ExportMetricsServiceRequest { resource_metrics })
}

pub(crate) fn prom_write() -> impl Strategy<Value = prom::WriteRequest> {
    let label = || (text(), text()).prop_map(|(name, value)| prom::Label { name, value });
    let sample =
        (finite(), any::<i64>()).prop_map(|(value, timestamp)| prom::Sample { value, timestamp });
    let exemplar = (prop::collection::vec(label(), 0..2), finite(), any::<i64>()).prop_map(
        |(labels, value, timestamp)| prom::Exemplar {
            labels,
            value,
            timestamp,
        },
    );
    let series = (
        prop::collection::vec(label(), 0..4),
        prop::collection::vec(sample, 0..6),
        prop::collection::vec(exemplar, 0..2),
        prop::collection::vec(blob(), 0..2),
    )
        .prop_map(
            |(labels, samples, exemplars, histograms)| prom::TimeSeries {
                labels,
                samples,
                exemplars,
                histograms,
            },
        );
    let meta =
        (0..8i32, text(), text(), text()).prop_map(|(r#type, metric_family_name, help, unit)| {
            prom::MetricMetadata {
                r#type,
                metric_family_name,
                help,
                unit,
            }
        });
    (
        prop::collection::vec(series, 0..4),
        prop::collection::vec(meta, 0..2),
    )
        .prop_map(|(timeseries, metadata)| prom::WriteRequest {
            timeseries,
            metadata,
        })
}
