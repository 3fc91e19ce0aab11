//! Prometheus remote write 1.0: `POST /api/v1/write`.
//!
//! Request: `Content-Type: application/x-protobuf`, `Content-Encoding: snappy` (block format,
//! not framed), body a `prometheus.WriteRequest` (prompb/remote.proto, types.proto). Each
//! `TimeSeries` becomes one series: `__name__` is the metric name, the other labels its
//! labels (labels with empty values are dropped, as Prometheus treats them as absent);
//! samples are stored as sent, timestamps in milliseconds, values bit for bit (so the
//! staleness-marker NaN stays a staleness marker). `MetricMetadata` is remembered per tenant
//! and gives type, help and unit to series created afterwards and to `/api/v1/metadata`.
//! Exemplars and native histograms are not stored (counted in
//! `sightline_ingest_rejected_items_total{reason="unsupported_exemplar"|"unsupported_native_histogram"}`).
//!
//! Answers: 204 stored; 400 (plain-text message) bad snappy, bad protobuf, an empty,
//! duplicate or invalid label name, a missing `__name__`, too many labels or too long a value,
//! a timestamp too far in the future; 401 missing or unknown token; 413 body, decompressed body
//! (the snappy header's length, checked before allocating), sample count or estimated decoded
//! size over a limit (counted by the pre-scan before decoding); 415 another content type or
//! encoding (remote write 2.0 included); 429 too many requests in flight or the in-flight
//! decoded-bytes budget spent, 503 memory budget exhausted or shutting down
//! (both with `Retry-After`; Prometheus retries 5xx, and 429 with `retry_on_http_429`). A
//! refused request stores nothing: the batch is appended in one durable store append, or not
//! at all.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use axum::Extension;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use prost::Message as _;
use sightline_storage::{MetricBatch, MetricKind, Sample, SeriesDef, TenantId};

use super::meta::valid_label_name;
use super::{FamilyMeta, PromState};
use crate::error::IngestError;
use crate::http::AppState;
use crate::ingest::budget::{DecodedBudget, Reservation};
use crate::limits::Limits;
use crate::otlp::SignalKind;
use crate::prompb as proto;
use crate::telemetry::Transport;

/// The Prometheus type name of a `MetricType` code.
pub fn metric_type_name(code: i32) -> &'static str {
    match code {
        1 => "counter",
        2 => "gauge",
        3 => "histogram",
        4 => "gaugehistogram",
        5 => "summary",
        6 => "info",
        7 => "stateset",
        _ => "unknown",
    }
}

fn kind_of(name: &str) -> MetricKind {
    match name {
        "counter" => MetricKind::Counter,
        "gauge" => MetricKind::Gauge,
        "histogram" | "gaugehistogram" => MetricKind::Histogram,
        "summary" => MetricKind::Summary,
        _ => MetricKind::Unknown,
    }
}

/// Whether `name` is a valid Prometheus metric name.
pub fn valid_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Decompresses and decodes a request body within `limits`: the length the snappy header
/// declares is checked against `max_decompressed_bytes` and reserved in `budget` before the
/// buffer is allocated; the protobuf is pre-scanned ([`crate::otlp::wire`]: samples against
/// `max_items_per_request`, estimated decoded size against `max_decoded_bytes`, reserved too)
/// before `prost` decodes it. The returned reservation holds the decoded request's share of
/// the budget; keep it until the request is stored.
pub fn decode(
    body: &[u8],
    limits: &Limits,
    budget: &Arc<DecodedBudget>,
) -> Result<(proto::WriteRequest, Reservation), IngestError> {
    use crate::otlp::wire;
    let max_decompressed = limits.max_decompressed_bytes;
    let len = snap::raw::decompress_len(body)
        .map_err(|e| IngestError::Malformed(format!("invalid snappy body: {e}")))?;
    if len > max_decompressed {
        return Err(IngestError::TooLarge(format!(
            "decompressed body of {len} bytes exceeds the limit of {max_decompressed} bytes"
        )));
    }
    let mut reserved = budget.reservation();
    reserved.grow(len as u64)?;
    let raw = snap::raw::Decoder::new()
        .decompress_vec(body)
        .map_err(|e| IngestError::Malformed(format!("invalid snappy body: {e}")))?;
    let bounds = wire::Bounds {
        max_items: limits.max_items_per_request as u64,
        max_decoded_bytes: limits.max_decoded_bytes as u64,
    };
    let scan = wire::scan(wire::Root::PromWrite, &raw, bounds).map_err(|e| match e {
        IngestError::TooLarge(m) => IngestError::TooLarge(m.replace("items", "samples")),
        e => e,
    })?;
    reserved.grow(scan.decoded_bytes)?;
    let req = proto::WriteRequest::decode(raw.as_slice())
        .map_err(|e| IngestError::Malformed(format!("invalid prometheus.WriteRequest: {e}")))?;
    drop(raw);
    reserved.release(len as u64);
    Ok((req, reserved))
}

/// What a mapped request holds besides its batch.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Mapped {
    /// Series and samples to append.
    pub batch: MetricBatch,
    /// Exemplars dropped.
    pub exemplars: u64,
    /// Native histogram samples dropped.
    pub histograms: u64,
}

/// Metadata of the families in a request.
pub fn request_metadata(req: &proto::WriteRequest) -> Vec<(String, FamilyMeta)> {
    req.metadata
        .iter()
        .filter(|m| !m.metric_family_name.is_empty())
        .map(|m| {
            (
                m.metric_family_name.clone(),
                FamilyMeta {
                    kind: metric_type_name(m.r#type).to_owned(),
                    help: m.help.clone(),
                    unit: m.unit.clone(),
                },
            )
        })
        .collect()
}

/// Maps a request onto a storage batch, or refuses all of it. `meta` finds the metadata of a
/// family by name.
pub fn map_request(
    req: &proto::WriteRequest,
    limits: &Limits,
    now_ms: i64,
    meta: &dyn Fn(&str) -> Option<FamilyMeta>,
) -> Result<Mapped, IngestError> {
    let samples: usize = req.timeseries.iter().map(|t| t.samples.len()).sum();
    if samples > limits.max_items_per_request {
        return Err(IngestError::TooLarge(format!(
            "{samples} samples in one request, over the limit of {}",
            limits.max_items_per_request
        )));
    }
    let max_ts = now_ms.saturating_add(
        i64::try_from(limits.max_future_skew_secs.saturating_mul(1000)).unwrap_or(i64::MAX),
    );
    let mut out = Mapped::default();
    out.batch.samples.reserve(samples);
    let mut defined = HashSet::new();
    for (i, ts) in req.timeseries.iter().enumerate() {
        out.exemplars += ts.exemplars.len() as u64;
        out.histograms += ts.histograms.len() as u64;
        let bad = |m: String| IngestError::Malformed(format!("series {i}: {m}"));
        if ts.labels.len() > limits.max_attributes_per_item {
            return Err(bad(format!(
                "{} labels, over the limit of {}",
                ts.labels.len(),
                limits.max_attributes_per_item
            )));
        }
        let mut name: Option<&str> = None;
        let mut labels: Vec<(String, String)> = Vec::with_capacity(ts.labels.len());
        let mut seen: HashSet<&str> = HashSet::with_capacity(ts.labels.len());
        for l in &ts.labels {
            if l.name.is_empty() {
                return Err(bad("empty label name".into()));
            }
            if !seen.insert(l.name.as_str()) {
                return Err(bad(format!("duplicate label name {:?}", l.name)));
            }
            if !valid_label_name(&l.name) {
                return Err(bad(format!("invalid label name {:?}", l.name)));
            }
            if l.value.len() > limits.max_attribute_value_bytes {
                return Err(bad(format!(
                    "value of label {:?} is {} bytes, over the limit of {}",
                    l.name,
                    l.value.len(),
                    limits.max_attribute_value_bytes
                )));
            }
            if l.name == "__name__" {
                name = Some(l.value.as_str());
            } else if !l.value.is_empty() {
                labels.push((l.name.clone(), l.value.clone()));
            }
        }
        let name = name
            .filter(|n| !n.is_empty())
            .ok_or_else(|| bad("missing __name__ label".into()))?;
        if !valid_metric_name(name) {
            return Err(bad(format!("invalid metric name {name:?}")));
        }
        if let Some(s) = ts.samples.iter().find(|s| s.timestamp > max_ts) {
            return Err(bad(format!(
                "sample timestamp {} ms is more than {} s in the future",
                s.timestamp, limits.max_future_skew_secs
            )));
        }
        if ts.samples.is_empty() {
            continue;
        }
        let family_meta = meta(name).or_else(|| {
            ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|sfx| name.strip_suffix(sfx))
                .and_then(meta)
                .filter(|m| matches!(m.kind.as_str(), "histogram" | "gaugehistogram" | "summary"))
        });
        let mut def = SeriesDef::new(
            name,
            family_meta
                .as_ref()
                .map_or(MetricKind::Unknown, |m| kind_of(&m.kind)),
            labels,
        );
        let id = def.id;
        if defined.insert(id) {
            if let Some(m) = family_meta {
                def.help = m.help;
                def.unit = m.unit;
            }
            out.batch.series.push(def);
        }
        out.batch.samples.extend(ts.samples.iter().map(|s| Sample {
            series: id,
            timestamp_ms: s.timestamp,
            value: s.value,
        }));
    }
    Ok(out)
}

fn check_headers(headers: &HeaderMap) -> Result<(), IngestError> {
    if let Some(ct) = headers.get(header::CONTENT_TYPE) {
        let ct = ct.to_str().unwrap_or("").to_ascii_lowercase();
        let mut parts = ct.split(';').map(str::trim);
        let media = parts.next().unwrap_or("");
        let proto = parts
            .find_map(|p| p.strip_prefix("proto="))
            .unwrap_or("prometheus.writerequest");
        if !matches!(media, "application/x-protobuf" | "application/protobuf")
            || proto != "prometheus.writerequest"
        {
            return Err(IngestError::UnsupportedMediaType(format!(
                "unsupported content type {ct:?}: remote write 1.0 needs application/x-protobuf (prometheus.WriteRequest)"
            )));
        }
    }
    match headers.get(header::CONTENT_ENCODING).map(|v| v.to_str()) {
        None => Ok(()),
        Some(Ok(v)) if v.trim().eq_ignore_ascii_case("snappy") => Ok(()),
        Some(v) => Err(IngestError::UnsupportedMediaType(format!(
            "unsupported content encoding {:?}: remote write 1.0 needs snappy",
            v.unwrap_or("")
        ))),
    }
}

async fn read_body(body: Body, limit: usize) -> Result<bytes::Bytes, IngestError> {
    match Limited::new(body, limit).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(IngestError::TooLarge(
            format!("request body exceeds the limit of {limit} bytes"),
        )),
        Err(e) => Err(IngestError::Malformed(format!(
            "could not read the request body: {e}"
        ))),
    }
}

async fn receive(
    st: &AppState,
    ps: &Arc<PromState>,
    headers: &HeaderMap,
    body: Body,
) -> Result<u64, IngestError> {
    let tenant: TenantId = st.tenant(
        headers.get("authorization").map(|v| v.as_bytes()),
        headers.get("x-scope-orgid").map(|v| v.as_bytes()),
    )?;
    check_headers(headers)?;
    let limits = st.limits().clone();
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = declared.filter(|n| *n > limits.max_body_bytes as u64) {
        return Err(IngestError::TooLarge(format!(
            "request body of {n} bytes exceeds the limit of {} bytes",
            limits.max_body_bytes
        )));
    }
    if st.is_shutting_down() {
        return Err(IngestError::Unavailable("server is shutting down".into()));
    }
    let _permit = st.admit()?;
    let bytes = read_body(body, limits.max_body_bytes).await?;
    st.telemetry().received_bytes(
        SignalKind::Metrics,
        Transport::RemoteWrite,
        bytes.len() as u64,
    );
    let store = Arc::clone(st.store());
    let telemetry = Arc::clone(st.telemetry());
    let ps = Arc::clone(ps);
    let budget = Arc::clone(st.budget());
    let now_ms = st.now().as_millis();
    tokio::task::spawn_blocking(move || {
        // Refused before decoding while the memtables are at their budget (see
        // `Store::check_memory`); the compressed size stands in for the rows'.
        store.check_memory(bytes.len())?;
        let (req, _reserved) = decode(&bytes, &limits, &budget)?;
        drop(bytes);
        ps.remember_metadata(&tenant, request_metadata(&req));
        let lookup = |family: &str| ps.family_metadata(&tenant, family);
        let mapped = map_request(&req, &limits, now_ms, &lookup)?;
        drop(req);
        for (reason, n) in [
            ("unsupported_exemplar", mapped.exemplars),
            ("unsupported_native_histogram", mapped.histograms),
        ] {
            telemetry.rejected(SignalKind::Metrics, reason, n);
        }
        store.append_metrics(&tenant, &mapped.batch)?;
        Ok(mapped.batch.samples.len() as u64)
    })
    .await
    .unwrap_or_else(|e| Err(IngestError::Internal(format!("ingest task failed: {e}"))))
}

/// `POST /api/v1/write`.
pub async fn write(
    State(st): State<AppState>,
    Extension(ps): Extension<Arc<PromState>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let started = Instant::now();
    let (signal, transport) = (SignalKind::Metrics, Transport::RemoteWrite);
    match receive(&st, &ps, &headers, body).await {
        Ok(n) => {
            st.telemetry().accepted(signal, transport, n);
            st.telemetry()
                .request(signal, transport, "ok", started.elapsed());
            StatusCode::NO_CONTENT.into_response()
        }
        Err(e) => {
            st.refused(signal, transport, &e);
            tracing::debug!(error = %e, "remote write refused");
            error_response(&e)
        }
    }
}

/// A refused remote-write request: status, `Retry-After` when retryable, plain-text message.
pub fn error_response(e: &IngestError) -> Response {
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{e}\n"),
    )
        .into_response();
    if let Some(d) = e.retry_after() {
        let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
        if let Ok(v) = HeaderValue::from_str(&secs.max(1).to_string()) {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }
    if matches!(e, IngestError::Unauthenticated(_)) {
        resp.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompb::*;

    fn series(labels: &[(&str, &str)], samples: &[(i64, f64)]) -> TimeSeries {
        TimeSeries {
            labels: labels
                .iter()
                .map(|(n, v)| Label {
                    name: (*n).into(),
                    value: (*v).into(),
                })
                .collect(),
            samples: samples
                .iter()
                .map(|(t, v)| proto::Sample {
                    value: *v,
                    timestamp: *t,
                })
                .collect(),
            exemplars: vec![],
            histograms: vec![],
        }
    }

    fn map(ts: Vec<TimeSeries>) -> Result<Mapped, IngestError> {
        let req = WriteRequest {
            timeseries: ts,
            metadata: vec![],
        };
        map_request(&req, &Limits::default(), 10_000, &|_| None)
    }

    #[test]
    fn maps_labels_and_samples() {
        let stale = f64::from_bits(0x7ff0_0000_0000_0002);
        let m = map(vec![series(
            &[("job", "a"), ("__name__", "up"), ("empty", "")],
            &[(1000, 1.0), (2000, stale)],
        )])
        .unwrap_or_default();
        assert_eq!(m.batch.series.len(), 1);
        let d = &m.batch.series[0];
        assert_eq!(d.metric_name, "up");
        assert_eq!(d.labels, vec![("job".to_owned(), "a".to_owned())]);
        assert_eq!(m.batch.samples.len(), 2);
        assert_eq!(m.batch.samples[1].value.to_bits(), 0x7ff0_0000_0000_0002);
        assert_eq!(m.batch.samples[0].series, d.id);
    }

    #[test]
    fn refuses_bad_labels() {
        for labels in [
            vec![("job", "a")],
            vec![("__name__", "")],
            vec![("__name__", "up"), ("", "x")],
            vec![("__name__", "up"), ("a", "1"), ("a", "2")],
            vec![("__name__", "up"), ("a-b", "1")],
            vec![("__name__", "1up")],
        ] {
            let r = map(vec![series(&labels, &[(1, 1.0)])]);
            assert!(
                matches!(r, Err(IngestError::Malformed(_))),
                "{labels:?}: {r:?}"
            );
        }
        let far = map(vec![series(
            &[("__name__", "up")],
            &[(10_000 + 3_601_000, 1.0)],
        )]);
        assert!(matches!(far, Err(IngestError::Malformed(_))));
    }

    #[test]
    fn metadata_types_new_series() {
        let req = WriteRequest {
            timeseries: vec![series(
                &[("__name__", "rpc_seconds_bucket"), ("le", "1")],
                &[(1, 1.0)],
            )],
            metadata: vec![MetricMetadata {
                r#type: 3,
                metric_family_name: "rpc_seconds".into(),
                help: "RPC latency".into(),
                unit: "seconds".into(),
            }],
        };
        let meta = request_metadata(&req);
        let m = map_request(&req, &Limits::default(), 10, &|f| {
            meta.iter().find(|(n, _)| n == f).map(|(_, m)| m.clone())
        })
        .unwrap_or_default();
        assert_eq!(m.batch.series[0].kind, MetricKind::Histogram);
        assert_eq!(m.batch.series[0].help, "RPC latency");
    }

    #[test]
    fn decode_refuses_garbage() {
        let limits = Limits {
            max_decompressed_bytes: 1 << 20,
            ..Limits::default()
        };
        let budget = DecodedBudget::new(1 << 30);
        assert!(matches!(
            decode(b"\xff\xff\xff\xff\xff", &limits, &budget),
            Err(IngestError::Malformed(_))
        ));
        let not_proto = snap::raw::Encoder::new()
            .compress_vec(b"\x0a\xff\xff\xff")
            .unwrap_or_default();
        assert!(matches!(
            decode(&not_proto, &limits, &budget),
            Err(IngestError::Malformed(_))
        ));
        let big = snap::raw::Encoder::new()
            .compress_vec(&vec![0u8; 4096])
            .unwrap_or_default();
        let small = Limits {
            max_decompressed_bytes: 1024,
            ..Limits::default()
        };
        assert!(matches!(
            decode(&big, &small, &budget),
            Err(IngestError::TooLarge(_))
        ));
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn decode_counts_samples_before_decoding() {
        // 200,000 empty samples: 400 kB of protobuf, tens of MB once decoded.
        let mut series = [0x12u8, 0x00].repeat(200_000);
        let mut raw = vec![0x0a];
        prost::encoding::encode_varint(series.len() as u64, &mut raw);
        raw.append(&mut series);
        let body = snap::raw::Encoder::new()
            .compress_vec(&raw)
            .unwrap_or_default();
        let budget = DecodedBudget::new(1 << 30);
        let r = decode(&body, &Limits::default(), &budget);
        assert!(
            matches!(&r, Err(IngestError::TooLarge(m)) if m.contains("samples")),
            "{r:?}"
        );
        assert_eq!(budget.used(), 0);
        let ok = Limits {
            max_items_per_request: 200_000,
            ..Limits::default()
        };
        let (req, held) = decode(&body, &ok, &budget).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(req.timeseries[0].samples.len(), 200_000);
        assert_eq!(budget.used(), held.bytes());
        assert!(held.bytes() >= 200_000 * std::mem::size_of::<proto::Sample>() as u64);
        drop(held);
        assert_eq!(budget.used(), 0);
    }
}
