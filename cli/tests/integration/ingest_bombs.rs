//! Decompression and protobuf amplification bombs against the real binary, with auth on: a
//! gRPC gzip bomb without a token is refused from its metadata alone, with a token by the
//! message limit or the pre-scan; an OTLP/HTTP gzip bomb and a remote-write snappy bomb are
//! refused before decoding. The server runs under an address-space limit (so a regression
//! fails the test instead of exhausting the machine), its RSS stays flat, `/health` answers
//! and a normal export is stored right after each bomb. The in-flight decoded-bytes budget is
//! checked in-process: a spent budget answers 429 / `RESOURCE_EXHAUSTED` with a retry delay.

use std::io::Write as _;
use std::net::SocketAddr;

use bytes::{Buf as _, BufMut as _, Bytes};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message as _;
use tonic::codec::{Codec, CompressionEncoding, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::{Code, Status};

use crate::common::{ServerProcess, cap_address_space, http, status_kib};

const TOKEN: &str = "bomb-secret";
const TRACES: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// Sends and receives raw message bytes (the bombs are not valid requests to build).
#[derive(Default)]
struct RawCodec;
struct RawEncoder;
struct RawDecoder;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawEncoder;
    type Decoder = RawDecoder;
    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }
    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}

impl Encoder for RawEncoder {
    type Item = Bytes;
    type Error = Status;
    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for RawDecoder {
    type Item = Bytes;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

pub(crate) fn grpc_export(
    addr: SocketAddr,
    body: Bytes,
    token: Option<&str>,
    gzip: bool,
) -> Result<(), Status> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let mut grpc = tonic::client::Grpc::new(channel);
        if gzip {
            grpc = grpc.send_compressed(CompressionEncoding::Gzip);
        }
        grpc.ready()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let mut req = tonic::Request::new(body);
        if let Some(t) = token {
            req.metadata_mut()
                .insert("authorization", format!("Bearer {t}").parse().unwrap());
        }
        let path = tonic::codegen::http::uri::PathAndQuery::from_static(TRACES);
        grpc.unary(req, path, RawCodec).await.map(|_| ())
    })
}

/// One `ResourceSpans` / `ScopeSpans` holding `n` empty spans (2 bytes each).
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

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

pub(crate) fn one_span(seed: u8) -> Vec<u8> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans: vec![Span {
                    trace_id: vec![seed; 16],
                    span_id: vec![seed; 8],
                    name: "after-the-bomb".into(),
                    start_time_unix_nano: now,
                    end_time_unix_nano: now + 1000,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

/// RSS after a bomb, next to the baseline: never more than `slack_mib` above it.
fn assert_rss_flat(s: &mut ServerProcess, before_kib: u64, slack_mib: u64, what: &str) {
    assert!(
        s.child.try_wait().unwrap().is_none(),
        "{what}: the server died (address-space limit hit?); log:\n{}",
        std::fs::read_to_string(&s.log).unwrap_or_default()
    );
    let after = status_kib(s.child.id(), "VmRSS:");
    assert!(
        after <= before_kib + slack_mib * 1024,
        "{what}: RSS grew from {before_kib} kB to {after} kB"
    );
}

/// `/health` answers and one more span is stored, over HTTP and over gRPC.
fn assert_serving(s: &ServerProcess, seed: u8) {
    let h = http(s.http, "GET", "/health", &[], b"").unwrap();
    assert_eq!(h.status, 200);
    let auth = format!("Bearer {TOKEN}");
    let r = http(
        s.http,
        "POST",
        "/v1/traces",
        &[
            ("content-type", "application/x-protobuf"),
            ("authorization", &auth),
        ],
        &one_span(seed),
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    grpc_export(s.grpc, Bytes::from(one_span(seed + 1)), Some(TOKEN), true).unwrap();
}

#[test]
fn bombs_are_refused_before_decoding() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("{TOKEN} bombed\n")).unwrap();
    let mut s = ServerProcess::start(
        &dir.path().join("data"),
        &[
            "--auth-tokens-file",
            tokens.to_str().unwrap(),
            "--fsync",
            "never",
        ],
        dir.path().join("server.log"),
    );
    let pid = s.child.id();
    // Headroom of 3 GiB of address space over what the started server has mapped: every
    // bomb below asked for several GB before the pre-scan existed.
    cap_address_space(&s, 3 << 30);
    assert_serving(&s, 1);
    let baseline = status_kib(pid, "VmRSS:");

    // gRPC: 64 MiB of empty spans, about 63 KiB gzipped.
    let bomb = Bytes::from(empty_spans(32 << 20));
    let unauth = grpc_export(s.grpc, bomb.clone(), None, true).unwrap_err();
    assert_eq!(unauth.code(), Code::Unauthenticated, "{unauth:?}");
    assert_rss_flat(&mut s, baseline, 64, "gRPC bomb without a token");
    let authed = grpc_export(s.grpc, bomb, Some(TOKEN), true).unwrap_err();
    assert_eq!(authed.code(), Code::ResourceExhausted, "{authed:?}");
    // Within the 16 MiB message limit: 7 M empty spans, refused by the pre-scan.
    let dense = Bytes::from(empty_spans(7 << 20));
    let scanned = grpc_export(s.grpc, dense, Some(TOKEN), true).unwrap_err();
    assert_eq!(scanned.code(), Code::ResourceExhausted, "{scanned:?}");
    assert!(scanned.message().contains("items"), "{}", scanned.message());
    assert_rss_flat(&mut s, baseline, 160, "gRPC bombs with a token");
    assert_serving(&s, 3);

    // OTLP/HTTP: ~8 KiB of gzip inflating to millions of empty ResourceSpans.
    let auth = format!("Bearer {TOKEN}");
    let body = gzip(&[0x0a, 0x00].repeat(4 << 20));
    assert!(body.len() < 16 << 10, "{} bytes", body.len());
    let r = http(
        s.http,
        "POST",
        "/v1/traces",
        &[
            ("content-type", "application/x-protobuf"),
            ("content-encoding", "gzip"),
            ("authorization", &auth),
        ],
        &body,
    )
    .unwrap();
    assert_eq!(r.status, 413, "{}", r.text());
    assert_rss_flat(&mut s, baseline, 160, "OTLP/HTTP gzip bomb");
    assert_serving(&s, 5);

    // Remote write: ~3 MB of snappy inflating to 33 M empty samples (64 MiB).
    let mut raw = vec![0x0a];
    let samples = [0x12u8, 0x00].repeat(33_000_000);
    prost::encoding::encode_varint(samples.len() as u64, &mut raw);
    raw.extend_from_slice(&samples);
    let body = snap::raw::Encoder::new().compress_vec(&raw).unwrap();
    drop((raw, samples));
    assert!(body.len() < 4 << 20, "{} bytes", body.len());
    let r = http(
        s.http,
        "POST",
        "/api/v1/write",
        &[
            ("content-type", "application/x-protobuf"),
            ("content-encoding", "snappy"),
            ("authorization", &auth),
        ],
        &body,
    )
    .unwrap();
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(r.text().contains("samples"), "{}", r.text());
    assert_rss_flat(&mut s, baseline, 160, "remote-write snappy bomb");
    assert_serving(&s, 7);
    s.stop();
}

#[test]
fn a_spent_decoded_budget_answers_retry_later() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = sightline_server::Config {
        data_dir: dir.path().join("data"),
        http_addr: "127.0.0.1:0".parse().unwrap(),
        grpc_addr: "127.0.0.1:0".parse().unwrap(),
        ..sightline_server::Config::default()
    };
    config.storage.fsync = sightline_server::config::FsyncMode::Never;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(sightline_server::serve::start(config)).unwrap();
    let (http_addr, grpc_addr) = (server.http_addr, server.grpc_addr);
    let ingest = server.ingest().clone();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let done = rt.spawn(async move {
        server
            .run_until(async {
                let _ = rx.await;
            })
            .await
            .unwrap();
    });
    // Another request holds all but a few bytes of the budget.
    let budget = ingest.budget();
    let mut held = budget.reservation();
    held.grow(budget.limit() - 16).unwrap();
    let r = http(
        http_addr,
        "POST",
        "/v1/traces",
        &[("content-type", "application/x-protobuf")],
        &one_span(9),
    )
    .unwrap();
    assert_eq!(r.status, 429, "{}", r.text());
    assert_eq!(r.header("retry-after"), Some("1"));
    let e = grpc_export(grpc_addr, Bytes::from(one_span(10)), None, false).unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    let details = sightline_server::grpc::rpc::Status::decode(e.details()).unwrap();
    assert_eq!(
        details.details[0].type_url,
        sightline_server::grpc::rpc::RETRY_INFO_TYPE
    );
    // The refused requests' items (one span each) are counted, not one per request.
    let m = http(http_addr, "GET", "/metrics", &[], b"").unwrap().text();
    // Where memory goes: the process, unflushed data, segment indexes, rollup cache.
    for gauge in [
        "sightline_process_resident_bytes ",
        "sightline_memtable_bytes ",
        "sightline_segment_index_bytes ",
        "sightline_rollup_cache_bytes ",
        "sightline_token_dictionary_cache_bytes ",
    ] {
        assert!(m.contains(gauge), "{gauge}missing from\n{m}");
    }
    let rss: f64 = m
        .lines()
        .find_map(|l| l.strip_prefix("sightline_process_resident_bytes "))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(rss > 1e6, "resident {rss} B");
    assert!(
        m.contains("sightline_ingest_rejected_items_total{signal=\"traces\",reason=\"busy\"} 2"),
        "{m}"
    );
    drop(held);
    assert_eq!(budget.used(), 0);
    let ok = http(
        http_addr,
        "POST",
        "/v1/traces",
        &[("content-type", "application/x-protobuf")],
        &one_span(11),
    )
    .unwrap();
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert_eq!(
        budget.used(),
        0,
        "reservations are given back after the append"
    );
    let _ = tx.send(());
    rt.block_on(done).unwrap();
}

#[test]
fn a_request_over_the_memory_budget_counts_its_items() {
    use sightline_server::ingest::{Body, Ingest};
    use sightline_server::otlp::{Encoding, SignalKind};
    use sightline_server::telemetry::{Telemetry, Transport};
    use sightline_storage::{Store, StoreConfig, TenantId};
    let dir = tempfile::tempdir().unwrap();
    // No background flush: the memtables keep what is appended.
    let store = Store::open(
        dir.path(),
        StoreConfig {
            background: false,
            memory_budget_bytes: 1 << 20,
            ..StoreConfig::default()
        },
    )
    .unwrap();
    let store = std::sync::Arc::new(store);
    let telemetry = std::sync::Arc::new(Telemetry::new());
    let ingest = std::sync::Arc::new(Ingest::new(
        store.clone(),
        sightline_server::Limits::default(),
        sightline_server::auth::Auth::default(),
        telemetry.clone(),
    ));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let send_as = |seq: u64, spans: usize, gzipped: bool| {
        let raw = sightline_server::loadgen::traces_body(seq, spans);
        let body = Body {
            bytes: Bytes::from(if gzipped { gzip(&raw) } else { raw }),
            gzip: gzipped,
            encoding: Encoding::Protobuf,
        };
        rt.block_on(ingest.export(
            SignalKind::Traces,
            Transport::Http,
            TenantId::new("load").unwrap(),
            body,
        ))
    };
    let send = |seq: u64, spans: usize| send_as(seq, spans, false);
    // The first request fills the budget (an empty store admits one batch of any size) ...
    let mut seq = 0;
    while send(seq, 2_000).is_ok() {
        seq += 1;
        assert!(seq < 100, "the 1 MiB budget never filled");
    }
    // ... and each refused one counts its 2,000 spans, gzip-compressed or not.
    let e = send(seq + 1, 2_000).unwrap_err();
    assert_eq!(e.reason(), "over_budget", "{e}");
    let e = send_as(seq + 2, 2_000, true).unwrap_err();
    assert_eq!(e.reason(), "over_budget", "{e}");
    // Refused by the store's budget every time, before decoding: nothing more was appended.
    let stats = store.stats();
    assert_eq!(stats.rejected_over_budget, 3);
    assert_eq!(stats.rows_appended, seq * 2_000);
    let m = telemetry.render(None);
    assert!(
        m.contains(
            "sightline_ingest_rejected_items_total{signal=\"traces\",reason=\"over_budget\"} 6000"
        ),
        "{m}"
    );
}
