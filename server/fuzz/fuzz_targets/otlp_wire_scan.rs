//! Fuzzes the protobuf pre-scan against `prost`: no input may panic, the scan must accept
//! exactly what `prost` decodes, and where both accept, the scan's item count is at least the
//! decoded count (equal for canonical encodings).
#![no_main]

use libfuzzer_sys::fuzz_target;
use prost::Message as _;
use sightline_server::otlp::wire::{self, Bounds, Root};
use sightline_server::otlp::{logs, metrics, traces};

const OPEN: Bounds = Bounds {
    max_items: u64::MAX,
    max_decoded_bytes: u64::MAX,
};

fuzz_target!(|data: &[u8]| {
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest as L;
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest as M;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest as T;
    let t = wire::scan(Root::Traces, data, OPEN);
    match (t, T::decode(data)) {
        (Ok(s), Ok(r)) => assert!(s.items >= traces::count_spans(&r) as u64),
        (Err(_), Err(_)) => {}
        (s, r) => panic!("traces: scan {s:?}, prost {:?}", r.err()),
    }
    match (wire::scan(Root::Logs, data, OPEN), L::decode(data)) {
        (Ok(s), Ok(r)) => assert!(s.items >= logs::count_logs(&r) as u64),
        (Err(_), Err(_)) => {}
        (s, r) => panic!("logs: scan {s:?}, prost {:?}", r.err()),
    }
    match (wire::scan(Root::Metrics, data, OPEN), M::decode(data)) {
        (Ok(s), Ok(r)) => assert!(s.items >= metrics::count_points(&r) as u64),
        (Err(_), Err(_)) => {}
        (s, r) => panic!("metrics: scan {s:?}, prost {:?}", r.err()),
    }
    let _ = wire::json::scan(Root::Traces, data, OPEN);
});
