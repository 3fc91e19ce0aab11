//! Prometheus remote write 1.0: `POST /api/v1/write`.
//!
//! Request: `Content-Type: application/x-protobuf`, `Content-Encoding: snappy` (block format,
//! not framed), body a `prometheus.WriteRequest` (prompb/remote.proto, types.proto). Each
//! `TimeSeries` becomes one series: `__name__` is the metric name, the other labels its
//! labels (labels with empty values are dropped, as Prometheus treats them as absent);
//! samples are stored as sent, timestamps in milliseconds, values bit for bit (so the
//! staleness-marker NaN stays a staleness marker). The body is decoded as a borrowed view
//! ([`crate::prompb::view`]); a series the store already holds is identified by the hash of its
//! labels and appended by id, and only a new series is validated in full and defined.
//! `MetricMetadata` is remembered per tenant and gives type, help and unit to series created
//! afterwards and to `/api/v1/metadata`.
//! Exemplars and native histograms are not stored (counted in
//! `sightline_ingest_rejected_items_total{reason="unsupported_exemplar"|"unsupported_native_histogram"}`).
//!
//! Answers: 204 stored; 400 (plain-text message) bad snappy, bad protobuf, an empty,
//! duplicate or invalid label name, a missing `__name__`, too many labels or too long a value,
//! a timestamp too far in the future; 401 missing or unknown token; 413 body, decompressed body
//! (the snappy header's length, checked before allocating), sample count or decoded size over
//! a limit (counted while decoding, refused at the first sample past it); 415 another content type or
//! encoding (remote write 2.0 included); 429 too many requests in flight or the in-flight
//! decoded-bytes budget spent, 503 memory budget exhausted or shutting down
//! (both with `Retry-After`; Prometheus retries 5xx, and 429 with `retry_on_http_429`). A
//! refused request stores nothing: the batch is appended in one durable store append, or not
//! at all.

use std::sync::Arc;
use std::time::Instant;

use axum::Extension;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use sightline_storage::model::METRIC_NAME_LABEL;
use sightline_storage::{MetricBatch, MetricKind, Sample, SeriesDef, SeriesId, TenantId};

use super::meta::valid_label_name;
use super::{FamilyMeta, PromState};
use crate::error::IngestError;
use crate::http::AppState;
use crate::ingest::budget::{DecodedBudget, Reservation};
use crate::limits::Limits;
use crate::otlp::SignalKind;
use crate::prompb::view::{self, WriteView};
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

/// Decompresses a request body within `limits`: the length the snappy header declares is
/// checked against `max_decompressed_bytes` and reserved in `budget` before the buffer is
/// allocated. The returned reservation holds the buffer's share of the budget; [`decode`]
/// grows it with the decoded view's. Keep it until the request is stored.
pub fn decompress(
    body: &[u8],
    limits: &Limits,
    budget: &Arc<DecodedBudget>,
) -> Result<(Vec<u8>, Reservation), IngestError> {
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
    Ok((raw, reserved))
}

/// Decodes a decompressed body into a view borrowing from it, within `limits` (samples
/// against `max_items_per_request`, labels per series against `max_attributes_per_item`,
/// the view's memory against `max_decoded_bytes` and in `reserved`), refusing as soon as one
/// is passed.
pub fn decode<'a>(
    raw: &'a [u8],
    limits: &Limits,
    reserved: &mut Reservation,
) -> Result<WriteView<'a>, IngestError> {
    let bounds = view::Bounds {
        max_samples: limits.max_items_per_request,
        max_labels: limits.max_attributes_per_item,
        max_decoded_bytes: limits.max_decoded_bytes as u64,
    };
    view::decode(raw, bounds, reserved)
}

/// What a mapped request holds besides its batch.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Mapped {
    /// Series and samples to append: a definition for each series the store did not know.
    pub batch: MetricBatch,
    /// Exemplars dropped.
    pub exemplars: u64,
    /// Native histogram samples dropped.
    pub histograms: u64,
}

/// Metadata of the families in a request.
pub fn request_metadata(view: &WriteView<'_>) -> Vec<(String, FamilyMeta)> {
    view.metadata
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

/// The metric name and id of a series from its wire labels, checking what every request must
/// satisfy (no empty or repeated label name, a non-empty `__name__`); `sorted` is scratch
/// space. Allocates nothing when the labels come sorted, as Prometheus sends them.
fn identify<'a>(
    labels: &[(&'a str, &'a str)],
    sorted: &mut Vec<(&'a str, &'a str)>,
) -> Result<(&'a str, SeriesId), String> {
    sorted.clear();
    sorted.extend_from_slice(labels);
    if !sorted.windows(2).all(|w| w[0].0 < w[1].0) {
        sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
        if let Some(w) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(format!("duplicate label name {:?}", w[0].0));
        }
    }
    if sorted.first().is_some_and(|(n, _)| n.is_empty()) {
        return Err("empty label name".into());
    }
    let name = sorted
        .iter()
        .find(|(n, _)| *n == METRIC_NAME_LABEL)
        .map(|(_, v)| *v)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| "missing __name__ label".to_owned())?;
    let id = SeriesDef::id_of(
        name,
        sorted
            .iter()
            .filter(|(n, v)| *n != METRIC_NAME_LABEL && !v.is_empty())
            .copied(),
    );
    Ok((name, id))
}

/// The definition of a series the store does not know yet, after the checks a new series must
/// pass (label names, value lengths, the metric name); `meta` gives its family's metadata.
fn define(
    labels: &[(&str, &str)],
    name: &str,
    limits: &Limits,
    meta: &dyn Fn(&str) -> Option<FamilyMeta>,
) -> Result<SeriesDef, String> {
    let mut owned = Vec::with_capacity(labels.len());
    for &(n, v) in labels {
        if !valid_label_name(n) {
            return Err(format!("invalid label name {n:?}"));
        }
        if v.len() > limits.max_attribute_value_bytes {
            return Err(format!(
                "value of label {n:?} is {} bytes, over the limit of {}",
                v.len(),
                limits.max_attribute_value_bytes
            ));
        }
        if n != METRIC_NAME_LABEL && !v.is_empty() {
            owned.push((n.to_owned(), v.to_owned()));
        }
    }
    if !valid_metric_name(name) {
        return Err(format!("invalid metric name {name:?}"));
    }
    let family_meta = meta(name).or_else(|| {
        ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|sfx| name.strip_suffix(sfx))
            .and_then(meta)
            .filter(|m| matches!(m.kind.as_str(), "histogram" | "gaugehistogram" | "summary"))
    });
    let kind = family_meta
        .as_ref()
        .map_or(MetricKind::Unknown, |m| kind_of(&m.kind));
    let mut def = SeriesDef::new(name, kind, owned);
    if let Some(m) = family_meta {
        def.help = m.help;
        def.unit = m.unit;
    }
    Ok(def)
}

/// Maps a request onto a storage batch, or refuses all of it. `meta` finds the metadata of a
/// family by name; `known` says which series ids the store already holds (one answer per
/// id). Every series is identified and its samples checked; only the ones the store does not
/// know are validated in full and defined, so a request of known series allocates nothing
/// per label.
pub fn map_request(
    view: &WriteView<'_>,
    limits: &Limits,
    now_ms: i64,
    meta: &dyn Fn(&str) -> Option<FamilyMeta>,
    known: &dyn Fn(&[SeriesId]) -> Vec<bool>,
) -> Result<Mapped, IngestError> {
    if view.samples.len() > limits.max_items_per_request {
        return Err(IngestError::TooLarge(format!(
            "{} samples in one request, over the limit of {}",
            view.samples.len(),
            limits.max_items_per_request
        )));
    }
    let max_ts = now_ms.saturating_add(
        i64::try_from(limits.max_future_skew_secs.saturating_mul(1000)).unwrap_or(i64::MAX),
    );
    let bad = |i: usize, m: String| IngestError::Malformed(format!("series {i}: {m}"));
    let mut out = Mapped::default();
    let mut sorted = Vec::new();
    let mut ids = Vec::with_capacity(view.series.len());
    let mut names = Vec::with_capacity(view.series.len());
    for (i, s) in view.series.iter().enumerate() {
        out.exemplars += s.exemplars;
        out.histograms += s.histograms;
        let (name, id) = identify(view.labels_of(s), &mut sorted).map_err(|m| bad(i, m))?;
        if let Some(p) = view.samples_of(s).iter().find(|p| p.timestamp > max_ts) {
            return Err(bad(
                i,
                format!(
                    "sample timestamp {} ms is more than {} s in the future",
                    p.timestamp, limits.max_future_skew_secs
                ),
            ));
        }
        ids.push(id);
        names.push(name);
    }
    let known = known(&ids);
    debug_assert_eq!(known.len(), ids.len(), "one answer per id");
    let mut defined = std::collections::HashSet::new();
    out.batch.samples.reserve(view.samples.len());
    for (i, s) in view.series.iter().enumerate() {
        let id = ids[i];
        if !known.get(i).copied().unwrap_or(false) && !defined.contains(&id) {
            // Checked like any new series; defined only once it has samples.
            let def = define(view.labels_of(s), names[i], limits, meta).map_err(|m| bad(i, m))?;
            debug_assert_eq!(
                def.id, id,
                "the definition hashes to the id it was found by"
            );
            if !s.samples.is_empty() {
                defined.insert(id);
                out.batch.series.push(def);
            }
        }
        out.batch
            .samples
            .extend(view.samples_of(s).iter().map(|p| Sample {
                series: id,
                timestamp_ms: p.timestamp,
                value: p.value,
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
        let (raw, mut reserved) = decompress(&bytes, &limits, &budget)?;
        drop(bytes);
        let view = decode(&raw, &limits, &mut reserved)?;
        ps.remember_metadata(&tenant, request_metadata(&view));
        let lookup = |family: &str| ps.family_metadata(&tenant, family);
        let known = |ids: &[SeriesId]| store.known_series(&tenant, ids);
        let mapped = map_request(&view, &limits, now_ms, &lookup, &known)?;
        drop(view);
        drop(raw);
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
    use prost::Message as _;

    use super::*;
    use crate::prompb::{self as proto, Label, MetricMetadata, TimeSeries, WriteRequest};

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

    /// Maps `req` as the handler does, the store knowing the series in `known`.
    fn map_with(
        req: &WriteRequest,
        known: &[SeriesId],
        meta: &dyn Fn(&str) -> Option<FamilyMeta>,
    ) -> Result<Mapped, IngestError> {
        let raw = req.encode_to_vec();
        let budget = DecodedBudget::new(1 << 30);
        let mut held = budget.reservation();
        let view = decode(&raw, &Limits::default(), &mut held)?;
        let known = |ids: &[SeriesId]| ids.iter().map(|id| known.contains(id)).collect();
        map_request(&view, &Limits::default(), 10_000, meta, &known)
    }

    fn map(ts: Vec<TimeSeries>) -> Result<Mapped, IngestError> {
        let req = WriteRequest {
            timeseries: ts,
            metadata: vec![],
        };
        map_with(&req, &[], &|_| None)
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
    fn known_series_are_not_defined_again() {
        let req = WriteRequest {
            timeseries: vec![
                series(&[("__name__", "up"), ("job", "a")], &[(1, 1.0)]),
                series(&[("job", "b"), ("__name__", "up")], &[(1, 2.0)]),
                series(&[("__name__", "up"), ("job", "a")], &[(2, 3.0)]),
            ],
            metadata: vec![],
        };
        let fresh = map_with(&req, &[], &|_| None).unwrap_or_default();
        assert_eq!(
            fresh.batch.series.len(),
            2,
            "a repeated series is defined once"
        );
        let a = fresh.batch.series[0].id;
        let b = fresh.batch.series[1].id;
        assert_eq!(
            a,
            SeriesDef::new("up", MetricKind::Unknown, vec![("job".into(), "a".into())]).id
        );
        let later = map_with(&req, &[a], &|_| None).unwrap_or_default();
        assert_eq!(later.batch.series.len(), 1);
        assert_eq!(
            later.batch.series[0].id, b,
            "labels out of order find the same id"
        );
        let ids: Vec<SeriesId> = later.batch.samples.iter().map(|s| s.series).collect();
        assert_eq!(ids, vec![a, b, a]);
    }

    #[test]
    fn refuses_bad_labels() {
        for labels in [
            vec![("job", "a")],
            vec![("__name__", "")],
            vec![("__name__", "up"), ("", "x")],
            vec![("__name__", "up"), ("a", "1"), ("a", "2")],
            vec![("a", "1"), ("__name__", "up"), ("a", "2")],
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
        let raw = req.encode_to_vec();
        let budget = DecodedBudget::new(1 << 30);
        let mut held = budget.reservation();
        let meta = decode(&raw, &Limits::default(), &mut held)
            .map(|v| request_metadata(&v))
            .unwrap_or_default();
        let m = map_with(&req, &[], &|f| {
            meta.iter().find(|(n, _)| n == f).map(|(_, m)| m.clone())
        })
        .unwrap_or_default();
        assert_eq!(m.batch.series[0].kind, MetricKind::Histogram);
        assert_eq!(m.batch.series[0].help, "RPC latency");
    }

    #[test]
    fn decompress_refuses_garbage() {
        let limits = Limits {
            max_decompressed_bytes: 1 << 20,
            ..Limits::default()
        };
        let budget = DecodedBudget::new(1 << 30);
        assert!(matches!(
            decompress(b"\xff\xff\xff\xff\xff", &limits, &budget),
            Err(IngestError::Malformed(_))
        ));
        let (not_proto, mut held) = decompress(
            &snap::raw::Encoder::new()
                .compress_vec(b"\x0a\xff\xff\xff")
                .unwrap_or_default(),
            &limits,
            &budget,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            decode(&not_proto, &limits, &mut held),
            Err(IngestError::Malformed(_))
        ));
        drop(held);
        let big = snap::raw::Encoder::new()
            .compress_vec(&vec![0u8; 4096])
            .unwrap_or_default();
        let small = Limits {
            max_decompressed_bytes: 1024,
            ..Limits::default()
        };
        assert!(matches!(
            decompress(&big, &small, &budget),
            Err(IngestError::TooLarge(_))
        ));
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn decode_counts_samples_as_it_goes() {
        // 200,000 empty samples: 400 kB of protobuf, 3.2 MB once decoded.
        let mut series = [0x12u8, 0x00].repeat(200_000);
        let mut raw = vec![0x0a];
        prost::encoding::encode_varint(series.len() as u64, &mut raw);
        raw.append(&mut series);
        let budget = DecodedBudget::new(1 << 30);
        let mut held = budget.reservation();
        let r = decode(&raw, &Limits::default(), &mut held);
        assert!(
            matches!(&r, Err(IngestError::TooLarge(m)) if m.contains("samples")),
            "{r:?}"
        );
        drop(held);
        assert_eq!(budget.used(), 0);
        let ok = Limits {
            max_items_per_request: 200_000,
            ..Limits::default()
        };
        let mut held = budget.reservation();
        let view = decode(&raw, &ok, &mut held).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(view.samples.len(), 200_000);
        assert_eq!(budget.used(), held.bytes());
        assert!(held.bytes() >= 200_000 * std::mem::size_of::<view::Sample>() as u64);
        drop(view);
        drop(held);
        assert_eq!(budget.used(), 0);
    }
}
