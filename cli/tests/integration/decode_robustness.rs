//! A cheap, deterministic stand-in for the cargo-fuzz targets in `server/fuzz` (which need
//! libFuzzer): mutated protobuf, JSON and gzip bodies through the pre-scan and every
//! decode+map path must never panic, and a protobuf body the pre-scan accepts must decode.

use sightline_server::Limits;
use sightline_server::otlp::{self, Encoding, MapContext, SignalKind};

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut XorShift, seed: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..=rng.below(4) {
        match rng.below(4) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = rng.next() as u8;
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v.truncate(i);
            }
            2 => {
                let i = rng.below(v.len() + 1);
                v.insert(i, rng.next() as u8);
            }
            _ if v.len() > 2 => {
                let (a, b) = (rng.below(v.len()), rng.below(v.len()));
                v.swap(a, b);
            }
            _ => {}
        }
    }
    v
}

fn run_all(data: &[u8], ctx: &MapContext) {
    // The pre-scan never panics, and a protobuf body it accepts decodes.
    for signal in [SignalKind::Traces, SignalKind::Metrics, SignalKind::Logs] {
        for enc in [Encoding::Protobuf, Encoding::Json] {
            let scanned = otlp::scan_body(signal, enc, data, &ctx.limits);
            if enc == Encoding::Protobuf && scanned.is_ok() {
                assert!(
                    otlp::decode(signal, data, enc).is_ok(),
                    "{signal:?}: the scan accepted what prost refuses: {data:02x?}"
                );
            }
        }
    }
    for enc in [Encoding::Protobuf, Encoding::Json] {
        if let Ok(r) = otlp::decode_traces(data, enc) {
            let _ = otlp::traces::map_traces(&r, ctx);
        }
        if let Ok(r) = otlp::decode_metrics(data, enc) {
            let _ = otlp::metrics::map_metrics(&r, ctx);
        }
        if let Ok(r) = otlp::decode_logs(data, enc) {
            let _ = otlp::logs::map_logs(&r, ctx);
        }
    }
    let _ = otlp::gunzip(data, 1 << 16);
}

const SEEDS_JSON: &[&str] = &[
    r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"s"}}]},"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"x","startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000000000001","attributes":[{"key":"gen_ai.response.logprobs","value":{"stringValue":"{\"content\":[{\"token\":\"a\",\"logprob\":-0.5,\"top_logprobs\":[{\"token\":\"b\",\"logprob\":-1}]}]}"}},{"key":"gen_ai.retrieval.documents","value":{"stringValue":"[{\"id\":\"1\",\"text\":\"Paris is in France.\"}]"}},{"key":"gen_ai.output.messages","value":{"stringValue":"[{\"role\":\"assistant\",\"parts\":[{\"type\":\"text\",\"content\":\"Paris is in Spain.\"}]}]"}}]}]}]}]}"#,
    r#"{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"h","unit":"s","exponentialHistogram":{"aggregationTemporality":1,"dataPoints":[{"timeUnixNano":"1700000000000000000","scale":3,"count":"4","zeroCount":"1","positive":{"offset":-2,"bucketCounts":["1","2"]},"negative":{"offset":1,"bucketCounts":["0"]}}]}},{"name":"c","sum":{"isMonotonic":true,"aggregationTemporality":2,"dataPoints":[{"timeUnixNano":"1700000000000000000","asInt":"3"}]}},{"name":"q","summary":{"dataPoints":[{"timeUnixNano":"1700000000000000000","count":"2","sum":3,"quantileValues":[{"quantile":0.5,"value":1}]}]}}]}]}]}"#,
    r#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"1700000000000000000","body":{"kvlistValue":{"values":[{"key":"a","value":{"arrayValue":{"values":[{"intValue":"1"}]}}}]}},"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708"}]}]}]}"#,
];

#[test]
fn mutated_inputs_never_panic() {
    let ctx = MapContext::at(&Limits::default(), sightline_query::time::now());
    let mut seeds: Vec<Vec<u8>> = SEEDS_JSON.iter().map(|s| s.as_bytes().to_vec()).collect();
    // Protobuf seeds: the JSON seeds re-encoded.
    use prost::Message as _;
    seeds.push(
        otlp::decode_traces(SEEDS_JSON[0].as_bytes(), Encoding::Json)
            .unwrap()
            .encode_to_vec(),
    );
    seeds.push(
        otlp::decode_metrics(SEEDS_JSON[1].as_bytes(), Encoding::Json)
            .unwrap()
            .encode_to_vec(),
    );
    seeds.push(
        otlp::decode_logs(SEEDS_JSON[2].as_bytes(), Encoding::Json)
            .unwrap()
            .encode_to_vec(),
    );
    // The seeds themselves map cleanly.
    let (t, _) = otlp::traces::map_traces(
        &otlp::decode_traces(&seeds[3], Encoding::Protobuf).unwrap(),
        &ctx,
    );
    assert_eq!((t.accepted, t.rejected), (1, 0));
    assert!(t.rows[0].quality.hallucination_index.is_some());
    let m = otlp::metrics::map_metrics(
        &otlp::decode_metrics(&seeds[4], Encoding::Protobuf).unwrap(),
        &ctx,
    );
    assert_eq!((m.accepted, m.rejected), (3, 0));
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for i in 0..30_000 {
        let seed = &seeds[i % seeds.len()];
        let data = mutate(&mut rng, seed);
        run_all(&data, &ctx);
    }
}
