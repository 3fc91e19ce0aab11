//! Tests of the pre-scans against `prost` and serde_json on generated requests (item counts,
//! estimate against the real heap of the decoded message) and on random and damaged bytes
//! (never a panic, the same accept/refuse answer as `prost`).

#![allow(clippy::unwrap_used)]

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, ArrayValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use proptest::prelude::*;
use prost::Message;

pub(crate) mod strategies;

use super::*;
use crate::otlp::{self, Encoding, SignalKind};
use strategies::*;

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

pub(crate) fn mutations(seed: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
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
                Root::Traces => SignalKind::Traces,
                Root::Logs => SignalKind::Logs,
                _ => SignalKind::Metrics,
            };
            let real = match otlp::decode(signal, &body, Encoding::Json) {
                Ok(crate::otlp::ExportRequest::Traces(r)) => size_of_val(&r) + r.heap(),
                Ok(crate::otlp::ExportRequest::Logs(r)) => size_of_val(&r) + r.heap(),
                Ok(crate::otlp::ExportRequest::Metrics(r)) => size_of_val(&r) + r.heap(),
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
    // Realistic requests at the default item limit stay under the default decoded limit
    // (protobuf: 100,000 GenAI spans estimate about 210 MB). OTLP/JSON costs serde's buffering
    // of flattened objects too: spans and logs still fit, but one JSON metric of 100,000
    // points (278 MB estimated) does not; 90,000 do.
    let limits = crate::Limits::default();
    let items = limits.max_items_per_request;
    for (signal, root, body) in [
        (
            SignalKind::Traces,
            Root::Traces,
            crate::loadgen::traces_body(1, items),
        ),
        (
            SignalKind::Logs,
            Root::Logs,
            crate::loadgen::logs_body(1, items),
        ),
        (
            SignalKind::Metrics,
            Root::Metrics,
            crate::loadgen::metrics_body(1, 90_000),
        ),
    ] {
        let s = otlp::scan_body(signal, Encoding::Protobuf, &body, &limits)
            .unwrap_or_else(|e| panic!("{signal:?} of {} bytes: {e}", body.len()));
        assert!(s.items >= 90_000);
        let json = match otlp::decode(signal, &body, Encoding::Protobuf).unwrap() {
            crate::otlp::ExportRequest::Traces(r) => serde_json::to_vec(&r),
            crate::otlp::ExportRequest::Logs(r) => serde_json::to_vec(&r),
            crate::otlp::ExportRequest::Metrics(r) => serde_json::to_vec(&r),
        }
        .unwrap();
        let j = json::scan(root, &json, OPEN).unwrap();
        assert_eq!(j.items, s.items);
        assert!(
            j.decoded_bytes <= limits.max_decoded_bytes as u64,
            "{signal:?}: {j:?}"
        );
    }
}
