//! OTLP/JSON decoding.
//!
//! `opentelemetry-proto`'s `with-serde` derives implement the OTLP/JSON rules we need, which
//! the tests below pin down: trace and span ids as hex strings (`""` for an absent parent),
//! lowerCamelCase field names, enums as integers, 64-bit integers (timestamps, `asInt`,
//! `intValue`, `count`, `bucketCounts`) as strings or numbers, unknown fields ignored. What
//! it does not do, this module adds: a clear error naming the position of the problem, and
//! rejecting trailing garbage. serde_json's recursion limit (128) bounds nesting.

use serde::de::DeserializeOwned;

use crate::error::IngestError;

/// Decodes an OTLP/JSON message.
pub fn decode<T: DeserializeOwned>(body: &[u8], what: &str) -> Result<T, IngestError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = T::deserialize(&mut de)
        .map_err(|e| IngestError::Malformed(format!("invalid JSON {what}: {e}")))?;
    de.end()
        .map_err(|e| IngestError::Malformed(format!("invalid JSON {what}: {e}")))?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as NumValue;

    #[test]
    fn spec_example_trace() {
        let body = br#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},
          "scopeSpans":[{"scope":{"name":"lib"},"spans":[{"traceId":"5B8EFFF798038103D269B633813FC60C",
          "spanId":"EEE19B7EC3C1B174","parentSpanId":"","name":"op","kind":2,
          "startTimeUnixNano":"1544712660000000000","endTimeUnixNano":1544712661000000000,
          "attributes":[{"key":"n","value":{"intValue":"42"}},{"key":"m","value":{"intValue":7}}],
          "status":{"code":2,"message":"boom"},"unknownField":true}]}]}]}"#;
        let req: ExportTraceServiceRequest =
            decode(body, "traces").unwrap_or_else(|e| panic!("{e}"));
        let span = &req.resource_spans[0].scope_spans[0].spans[0];
        assert_eq!(span.trace_id.len(), 16);
        assert_eq!(span.trace_id[0], 0x5b);
        assert_eq!(span.span_id.len(), 8);
        assert!(span.parent_span_id.is_empty());
        assert_eq!(span.kind, 2);
        assert_eq!(span.start_time_unix_nano, 1_544_712_660_000_000_000);
        assert_eq!(span.end_time_unix_nano, 1_544_712_661_000_000_000);
        assert_eq!(
            span.attributes[0]
                .value
                .as_ref()
                .and_then(|v| v.value.clone()),
            Some(Value::IntValue(42))
        );
        assert_eq!(
            span.attributes[1]
                .value
                .as_ref()
                .and_then(|v| v.value.clone()),
            Some(Value::IntValue(7))
        );
        assert_eq!(span.status.as_ref().map(|s| s.code), Some(2));
    }

    #[test]
    fn metrics_strings_or_numbers() {
        let body = br#"{"resourceMetrics":[{"scopeMetrics":[{"metrics":[
          {"name":"c","sum":{"aggregationTemporality":2,"isMonotonic":true,"dataPoints":[{"timeUnixNano":"1000","asInt":"5"}]}},
          {"name":"h","histogram":{"aggregationTemporality":2,"dataPoints":[{"timeUnixNano":1000,"count":"3","sum":1.5,"bucketCounts":["1",2],"explicitBounds":[1.0]}]}}
        ]}]}]}"#;
        let req: ExportMetricsServiceRequest =
            decode(body, "metrics").unwrap_or_else(|e| panic!("{e}"));
        let ms = &req.resource_metrics[0].scope_metrics[0].metrics;
        match &ms[0].data {
            Some(Data::Sum(s)) => {
                assert!(s.is_monotonic);
                assert_eq!(s.data_points[0].value, Some(NumValue::AsInt(5)));
                assert_eq!(s.data_points[0].time_unix_nano, 1000);
            }
            other => panic!("{other:?}"),
        }
        match &ms[1].data {
            Some(Data::Histogram(h)) => {
                assert_eq!(h.data_points[0].count, 3);
                assert_eq!(h.data_points[0].bucket_counts, vec![1, 2]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn logs_and_errors() {
        let body = br#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"5","severityNumber":9,
          "body":{"kvlistValue":{"values":[{"key":"a","value":{"boolValue":true}}]}},
          "traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174"}]}]}]}"#;
        let req: ExportLogsServiceRequest = decode(body, "logs").unwrap_or_else(|e| panic!("{e}"));
        let rec = &req.resource_logs[0].scope_logs[0].log_records[0];
        assert_eq!(rec.severity_number, 9);
        assert_eq!(rec.trace_id.len(), 16);
        assert!(decode::<ExportLogsServiceRequest>(b"{", "logs").is_err());
        assert!(decode::<ExportLogsServiceRequest>(b"{} x", "logs").is_err());
        assert!(
            decode::<ExportTraceServiceRequest>(
                br#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}"#,
                "traces"
            )
            .is_err()
        );
    }
}
