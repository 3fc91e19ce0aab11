//! Tests of the pre-scans against `prost` and serde_json on generated requests (item counts,
//! estimate against the real heap of the decoded message) and on random and damaged bytes
//! (never a panic, the same accept/refuse answer as `prost`).

#![allow(clippy::unwrap_used)]

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
use prost::Message;

use super::*;
use crate::http::prometheus::remote_write::proto as prom;
use crate::otlp::{self, Encoding};

/// Heap bytes a decoded value owns: its `Vec` and `String` capacities, recursively (what the
/// decoder allocated and the value keeps).
trait Heap {
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
    prom::WriteRequest: timeseries, metadata;
    prom::TimeSeries: labels, samples, exemplars, histograms;
    prom::Label: name, value;
    prom::Sample: ;
    prom::Exemplar: labels;
    prom::MetricMetadata: metric_family_name, help, unit;
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

// ---- generators ----

fn text() -> impl Strategy<Value = String> {
    prop_oneof![3 => "[a-z._]{0,12}", 1 => "\\PC{0,6}"]
}

fn blob() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..20)
}

fn finite() -> impl Strategy<Value = f64> {
    -1e9f64..1e9
}

fn any_value() -> impl Strategy<Value = AnyValue> {
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

fn attrs() -> impl Strategy<Value = Vec<KeyValue>> {
    prop::collection::vec(
        (text(), prop::option::of(any_value())).prop_map(|(key, value)| KeyValue {
            key,
            value,
            ..Default::default()
        }),
        0..4,
    )
}

fn resource() -> impl Strategy<Value = Option<Resource>> {
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

fn scope() -> impl Strategy<Value = Option<InstrumentationScope>> {
    prop::option::of(
        (text(), text(), attrs()).prop_map(|(name, version, attributes)| InstrumentationScope {
            name,
            version,
            attributes,
            dropped_attributes_count: 1,
        }),
    )
}

fn span() -> impl Strategy<Value = Span> {
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

fn traces() -> impl Strategy<Value = ExportTraceServiceRequest> {
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

fn logs() -> impl Strategy<Value = ExportLogsServiceRequest> {
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

fn exemplars() -> impl Strategy<Value = Vec<Exemplar>> {
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

fn numbers() -> impl Strategy<Value = Vec<NumberDataPoint>> {
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

fn data() -> impl Strategy<Value = Option<metric::Data>> {
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

fn metrics() -> impl Strategy<Value = ExportMetricsServiceRequest> {
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

fn prom_write() -> impl Strategy<Value = prom::WriteRequest> {
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

// ---- checks ----

const OPEN: Bounds = Bounds {
    max_items: u64::MAX,
    max_decoded_bytes: u64::MAX,
};

/// The scan of a canonical encoding: exact items, real heap <= estimate <= 4 x real heap.
fn check_canonical<M: Message + Default + Heap>(
    root: Root,
    msg: &M,
    items: usize,
) -> Result<(), TestCaseError> {
    let bytes = msg.encode_to_vec();
    let scan = scan(root, &bytes, OPEN).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let decoded = M::decode(bytes.as_slice()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let real = (size_of::<M>() + decoded.heap()) as u64;
    prop_assert_eq!(scan.items, items as u64);
    prop_assert!(
        real <= scan.decoded_bytes,
        "real {} > estimate {}",
        real,
        scan.decoded_bytes
    );
    prop_assert!(
        scan.decoded_bytes <= 4 * real,
        "estimate {} > 4 x real {}",
        scan.decoded_bytes,
        real
    );
    Ok(())
}

/// Random or damaged bytes: no panic, and the scan accepts exactly what `prost` accepts.
fn check_agrees<M: Message + Default>(root: Root, bytes: &[u8]) -> Result<(), TestCaseError> {
    let scanned = scan(root, bytes, OPEN);
    let decoded = M::decode(bytes);
    prop_assert_eq!(
        scanned.is_ok(),
        decoded.is_ok(),
        "scan {:?}, prost {:?}",
        scanned,
        decoded.err()
    );
    if let Err(e) = &scanned {
        prop_assert!(matches!(e, IngestError::Malformed(_)), "{e:?}");
    }
    Ok(())
}

fn mutations(seed: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let n = seed.len().max(1);
    prop::collection::vec((0..n, any::<u8>(), 0..3u8), 1..4).prop_map(move |edits| {
        let mut v = seed.clone();
        for (i, b, op) in edits {
            let i = i.min(v.len());
            match op {
                0 if i < v.len() => v[i] = b,
                1 => v.truncate(i),
                _ => v.insert(i, b),
            }
        }
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn traces_scan_matches_decode(req in traces()) {
        check_canonical(Root::Traces, &req, otlp::traces::count_spans(&req))?;
    }

    #[test]
    fn logs_scan_matches_decode(req in logs()) {
        check_canonical(Root::Logs, &req, otlp::logs::count_logs(&req))?;
    }

    #[test]
    fn metrics_scan_matches_decode(req in metrics()) {
        check_canonical(Root::Metrics, &req, otlp::metrics::count_points(&req))?;
    }

    #[test]
    fn prom_scan_matches_decode(req in prom_write()) {
        let samples = req.timeseries.iter().map(|t| t.samples.len()).sum();
        check_canonical(Root::PromWrite, &req, samples)?;
    }

    #[test]
    fn json_scan_counts_and_bounds(req in traces(), l in logs(), m in metrics()) {
        let cases: [(Root, Vec<u8>, usize); 3] = [
            (Root::Traces, serde_json::to_vec(&req).unwrap(), otlp::traces::count_spans(&req)),
            (Root::Logs, serde_json::to_vec(&l).unwrap(), otlp::logs::count_logs(&l)),
            (Root::Metrics, serde_json::to_vec(&m).unwrap(), otlp::metrics::count_points(&m)),
        ];
        for (root, body, items) in cases {
            let s = json::scan(root, &body, OPEN).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(s.items, items as u64);
            let signal = match root {
                Root::Traces => crate::otlp::SignalKind::Traces,
                Root::Logs => crate::otlp::SignalKind::Logs,
                _ => crate::otlp::SignalKind::Metrics,
            };
            let real = match otlp::decode(signal, &body, Encoding::Json) {
                Ok(crate::ingest::ExportRequest::Traces(r)) => size_of_val(&r) + r.heap(),
                Ok(crate::ingest::ExportRequest::Logs(r)) => size_of_val(&r) + r.heap(),
                Ok(crate::ingest::ExportRequest::Metrics(r)) => size_of_val(&r) + r.heap(),
                Err(e) => return Err(TestCaseError::fail(e.to_string())),
            };
            prop_assert!(real as u64 <= s.decoded_bytes, "real {} > estimate {}", real, s.decoded_bytes);
        }
    }

    #[test]
    fn random_bytes_agree_with_prost(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        check_agrees::<ExportTraceServiceRequest>(Root::Traces, &bytes)?;
        check_agrees::<ExportLogsServiceRequest>(Root::Logs, &bytes)?;
        check_agrees::<ExportMetricsServiceRequest>(Root::Metrics, &bytes)?;
        check_agrees::<prom::WriteRequest>(Root::PromWrite, &bytes)?;
        let _ = json::scan(Root::Traces, &bytes, OPEN);
    }

    #[test]
    fn damaged_traces_agree_with_prost(bytes in traces().prop_flat_map(|r| mutations(r.encode_to_vec()))) {
        check_agrees::<ExportTraceServiceRequest>(Root::Traces, &bytes)?;
    }

    #[test]
    fn damaged_metrics_agree_with_prost(bytes in metrics().prop_flat_map(|r| mutations(r.encode_to_vec()))) {
        check_agrees::<ExportMetricsServiceRequest>(Root::Metrics, &bytes)?;
    }

    #[test]
    fn damaged_logs_agree_with_prost(bytes in logs().prop_flat_map(|r| mutations(r.encode_to_vec()))) {
        check_agrees::<ExportLogsServiceRequest>(Root::Logs, &bytes)?;
    }

    #[test]
    fn damaged_prom_agrees_with_prost(bytes in prom_write().prop_flat_map(|r| mutations(r.encode_to_vec()))) {
        check_agrees::<prom::WriteRequest>(Root::PromWrite, &bytes)?;
    }

    #[test]
    fn damaged_json_never_panics(body in logs().prop_flat_map(|r| mutations(serde_json::to_vec(&r).unwrap_or_default()))) {
        let _ = json::scan(Root::Logs, &body, OPEN);
    }
}

/// A `ScopeSpans` of `n` empty spans inside one `ResourceSpans`: 2 bytes a span.
fn empty_spans(n: usize) -> Vec<u8> {
    let spans = [0x12u8, 0x00].repeat(n);
    let mut scope = vec![0x12];
    prost::encoding::encode_varint(spans.len() as u64, &mut scope);
    scope.extend_from_slice(&spans);
    let mut out = vec![0x0a];
    prost::encoding::encode_varint(scope.len() as u64, &mut out);
    out.extend_from_slice(&scope);
    out
}

#[test]
fn empty_span_bomb_is_refused_by_count_and_size() {
    let body = empty_spans(1_000_000);
    let by_items = scan(
        Root::Traces,
        &body,
        Bounds {
            max_items: 100_000,
            max_decoded_bytes: u64::MAX,
        },
    );
    assert!(
        matches!(&by_items, Err(IngestError::TooLarge(m)) if m.contains("100000 items")),
        "{by_items:?}"
    );
    let by_size = scan(
        Root::Traces,
        &body,
        Bounds {
            max_items: u64::MAX,
            max_decoded_bytes: 256 << 20,
        },
    );
    assert!(
        matches!(by_size, Err(IngestError::TooLarge(_))),
        "{by_size:?}"
    );
    let open = scan(Root::Traces, &body, OPEN).unwrap();
    assert_eq!(open.items, 1_000_000);
    assert!(open.decoded_bytes >= 1_000_000 * size_of::<Span>() as u64);
}

/// An `AnyValue` nested `depth` times through `arrayValue`, as a span attribute.
fn nested_attribute(depth: usize) -> ExportTraceServiceRequest {
    let mut v = AnyValue {
        value: Some(any_value::Value::IntValue(1)),
    };
    for _ in 0..depth {
        v = AnyValue {
            value: Some(any_value::Value::ArrayValue(ArrayValue { values: vec![v] })),
        };
    }
    let span = Span {
        attributes: vec![KeyValue {
            key: "k".into(),
            value: Some(v),
            ..Default::default()
        }],
        ..Default::default()
    };
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans: vec![span],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

#[test]
fn nesting_is_capped_like_prost() {
    for depth in [10, 40, 46, 47, 48, 60, 200] {
        let body = nested_attribute(depth).encode_to_vec();
        let scanned = scan(Root::Traces, &body, OPEN);
        let decoded = ExportTraceServiceRequest::decode(body.as_slice());
        assert_eq!(
            scanned.is_ok(),
            decoded.is_ok(),
            "depth {depth}: {scanned:?}"
        );
    }
    assert!(scan(Root::Traces, &nested_attribute(10).encode_to_vec(), OPEN).is_ok());
    assert!(scan(Root::Traces, &nested_attribute(200).encode_to_vec(), OPEN).is_err());
}

#[test]
fn unknown_fields_groups_and_bad_strings() {
    // An unknown group field (99) holding a varint and a nested group, inside a span.
    let mut span = vec![0x2a, 0x01, b'x'];
    span.extend_from_slice(&[0x9b, 0x06, 0x08, 0x01, 0xa3, 0x06, 0xa4, 0x06, 0x9c, 0x06]);
    let mut body = vec![
        0x0a,
        (span.len() + 4) as u8,
        0x12,
        (span.len() + 2) as u8,
        0x12,
        span.len() as u8,
    ];
    body.extend_from_slice(&span);
    let s = scan(Root::Traces, &body, OPEN).unwrap();
    assert_eq!(s.items, 1);
    assert!(ExportTraceServiceRequest::decode(body.as_slice()).is_ok());
    // A mismatched end group.
    let bad_group = [0x9b, 0x06, 0xa4, 0x06];
    assert!(matches!(
        scan(Root::Traces, &bad_group, OPEN),
        Err(IngestError::Malformed(_))
    ));
    assert!(ExportTraceServiceRequest::decode(&bad_group[..]).is_err());
    // A span name that is not UTF-8.
    let bad_name = [0x0a, 0x07, 0x12, 0x05, 0x12, 0x03, 0x2a, 0x01, 0xff];
    assert!(matches!(
        scan(Root::Traces, &bad_name, OPEN),
        Err(IngestError::Malformed(_))
    ));
    assert!(ExportTraceServiceRequest::decode(&bad_name[..]).is_err());
    // A known field with the wrong wire type (span name as a varint).
    let bad_wire = [0x0a, 0x06, 0x12, 0x04, 0x12, 0x02, 0x28, 0x01];
    assert!(scan(Root::Traces, &bad_wire, OPEN).is_err());
    assert!(ExportTraceServiceRequest::decode(&bad_wire[..]).is_err());
}

#[test]
fn json_bombs_are_refused() {
    let bounds = Bounds {
        max_items: 100_000,
        max_decoded_bytes: 256 << 20,
    };
    let mut body = br#"{"resourceSpans":[{"scopeSpans":[{"spans":["#.to_vec();
    body.extend_from_slice(&b"{},".repeat(200_000));
    body.extend_from_slice(b"{}]}]}]}");
    let r = json::scan(Root::Traces, &body, bounds);
    assert!(
        matches!(&r, Err(IngestError::TooLarge(m)) if m.contains("items")),
        "{r:?}"
    );
    // Empty objects under a key the scan does not know are charged as the largest type.
    let mut unknown = br#"{"resourceSpans":[{"x":["#.to_vec();
    unknown.extend_from_slice(&b"{},".repeat(1_000_000));
    unknown.extend_from_slice(b"{}]}]}");
    assert!(matches!(
        json::scan(Root::Traces, &unknown, bounds),
        Err(IngestError::TooLarge(_))
    ));
    // Deep nesting: refused by the scan and by serde_json alike, without recursion.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(matches!(
        json::scan(Root::Traces, deep.as_bytes(), bounds),
        Err(IngestError::Malformed(_))
    ));
    let nested = format!(
        r#"{{"resourceSpans":{}{}}}"#,
        "[".repeat(140),
        "]".repeat(140)
    );
    assert!(otlp::decode_traces(nested.as_bytes(), Encoding::Json).is_err());
}

#[test]
fn loadgen_requests_fit_the_default_limits() {
    // Realistic requests at the default item limit stay under the default decoded limit.
    let limits = crate::Limits::default();
    let items = limits.max_items_per_request;
    for (signal, body) in [
        (
            crate::otlp::SignalKind::Traces,
            crate::loadgen::traces_body(1, items),
        ),
        (
            crate::otlp::SignalKind::Logs,
            crate::loadgen::logs_body(1, items),
        ),
        (
            crate::otlp::SignalKind::Metrics,
            crate::loadgen::metrics_body(1, items),
        ),
    ] {
        let s = otlp::scan_body(signal, Encoding::Protobuf, &body, &limits)
            .unwrap_or_else(|e| panic!("{signal:?} of {} bytes: {e}", body.len()));
        assert!(s.items > 0);
        eprintln!(
            "{signal:?}: {} bytes, {} items, estimate {} bytes",
            body.len(),
            s.items,
            s.decoded_bytes
        );
    }
}
