//! OTLP/HTTP: `POST /v1/traces`, `/v1/metrics`, `/v1/logs`.
//!
//! Request: `Content-Type: application/x-protobuf` (or `application/protobuf`) or
//! `application/json`; optional `Content-Encoding: gzip`. Response: the signal's
//! `Export*ServiceResponse` in the request's encoding, with `partial_success` when some items
//! were rejected. Errors carry a `google.rpc.Status` body in the request's encoding (JSON when
//! the content type itself was refused): 400 malformed or every item rejected, 401 missing or
//! unknown token, 413 body, decompressed body, item count or estimated decoded size over a
//! limit (counted by the pre-scan before anything is decoded), 415 content type or
//! encoding not supported, 429 too many requests in flight or the in-flight decoded-bytes
//! budget (`max_inflight_decoded_bytes`) spent, 503 memory budget exhausted or
//! shutting down (both with `Retry-After`), 500 store failure.

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsPartialSuccess, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceResponse,
};
use prost::Message as _;

use super::AppState;
use crate::error::IngestError;
use crate::grpc::rpc;
use crate::ingest::{Body as ExportBody, Outcome};
use crate::otlp::{Encoding, SignalKind};
use crate::telemetry::Transport;

/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/traces", post(traces))
        .route("/v1/metrics", post(metrics))
        .route("/v1/logs", post(logs))
}

async fn traces(State(st): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    handle(st, SignalKind::Traces, headers, body).await
}

async fn metrics(State(st): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    handle(st, SignalKind::Metrics, headers, body).await
}

async fn logs(State(st): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    handle(st, SignalKind::Logs, headers, body).await
}

/// The encoding named by a `Content-Type` header value.
pub fn content_type(headers: &HeaderMap) -> Result<Encoding, IngestError> {
    let raw = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = raw
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match media.as_str() {
        "application/x-protobuf" | "application/protobuf" => Ok(Encoding::Protobuf),
        "application/json" => Ok(Encoding::Json),
        _ => Err(IngestError::UnsupportedMediaType(format!(
            "unsupported content type {raw:?}: use application/x-protobuf or application/json"
        ))),
    }
}

/// Whether the body is gzip-compressed (`Content-Encoding`); other codings are refused.
pub fn is_gzip(headers: &HeaderMap) -> Result<bool, IngestError> {
    match headers.get(header::CONTENT_ENCODING).map(|v| v.to_str()) {
        None => Ok(false),
        Some(Ok(v)) => match v.trim().to_ascii_lowercase().as_str() {
            "" | "identity" => Ok(false),
            "gzip" | "x-gzip" => Ok(true),
            other => Err(IngestError::UnsupportedMediaType(format!(
                "unsupported content encoding {other:?}: use gzip or none"
            ))),
        },
        Some(Err(_)) => Err(IngestError::UnsupportedMediaType(
            "unreadable Content-Encoding header".into(),
        )),
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

async fn handle(st: AppState, signal: SignalKind, headers: HeaderMap, body: Body) -> Response {
    let enc = match content_type(&headers) {
        Ok(e) => e,
        Err(e) => {
            st.refused(signal, Transport::Http, &e);
            return error_response(&e, Encoding::Json);
        }
    };
    match receive(&st, signal, enc, &headers, body).await {
        Ok(outcome) => success_response(signal, enc, outcome),
        Err(e) => error_response(&e, enc),
    }
}

async fn receive(
    st: &AppState,
    signal: SignalKind,
    enc: Encoding,
    headers: &HeaderMap,
    body: Body,
) -> Result<Outcome, IngestError> {
    let refuse = |e: IngestError| {
        st.refused(signal, Transport::Http, &e);
        e
    };
    let tenant = st
        .tenant(
            headers
                .get(header::AUTHORIZATION)
                .map(HeaderValue::as_bytes),
            headers.get("x-scope-orgid").map(HeaderValue::as_bytes),
        )
        .map_err(refuse)?;
    let gzip = is_gzip(headers).map_err(refuse)?;
    let limits = st.limits().clone();
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limits.max_body_bytes as u64) {
        return Err(refuse(IngestError::TooLarge(format!(
            "request body of {} bytes exceeds the limit of {} bytes",
            declared.unwrap_or_default(),
            limits.max_body_bytes
        ))));
    }
    let _permit = st.admit().map_err(refuse)?;
    let bytes = read_body(body, limits.max_body_bytes)
        .await
        .map_err(refuse)?;
    st.telemetry()
        .received_bytes(signal, Transport::Http, bytes.len() as u64);
    let body = ExportBody {
        bytes,
        gzip,
        encoding: enc,
    };
    st.export(signal, Transport::Http, tenant, body).await
}

fn success_response(signal: SignalKind, enc: Encoding, o: Outcome) -> Response {
    let rejected = i64::try_from(o.rejected).unwrap_or(i64::MAX);
    // Also with nothing rejected when content was truncated: the message says so.
    let partial = o.rejected > 0 || !o.message.is_empty();
    match enc {
        Encoding::Protobuf => {
            let body = match signal {
                SignalKind::Traces => ExportTraceServiceResponse {
                    partial_success: partial.then(|| ExportTracePartialSuccess {
                        rejected_spans: rejected,
                        error_message: o.message.clone(),
                    }),
                }
                .encode_to_vec(),
                SignalKind::Metrics => ExportMetricsServiceResponse {
                    partial_success: partial.then(|| ExportMetricsPartialSuccess {
                        rejected_data_points: rejected,
                        error_message: o.message.clone(),
                    }),
                }
                .encode_to_vec(),
                SignalKind::Logs => ExportLogsServiceResponse {
                    partial_success: partial.then(|| ExportLogsPartialSuccess {
                        rejected_log_records: rejected,
                        error_message: o.message.clone(),
                    }),
                }
                .encode_to_vec(),
            };
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/x-protobuf")],
                body,
            )
                .into_response()
        }
        Encoding::Json => {
            let field = match signal {
                SignalKind::Traces => "rejectedSpans",
                SignalKind::Metrics => "rejectedDataPoints",
                SignalKind::Logs => "rejectedLogRecords",
            };
            let body = if partial {
                serde_json::json!({"partialSuccess": {field: rejected.to_string(), "errorMessage": o.message}})
            } else {
                serde_json::json!({})
            };
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                body.to_string(),
            )
                .into_response()
        }
    }
}

/// The HTTP response of a refused request: status, `Retry-After`, and a `google.rpc.Status`
/// body in `enc`.
pub fn error_response(e: &IngestError, enc: Encoding) -> Response {
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let st = rpc::status_of(e);
    let mut resp = match enc {
        Encoding::Protobuf => (
            status,
            [(header::CONTENT_TYPE, "application/x-protobuf")],
            st.encode_to_vec(),
        )
            .into_response(),
        Encoding::Json => {
            let details: Vec<serde_json::Value> = e
                .retry_after()
                .map(|d| {
                    serde_json::json!({
                        "@type": rpc::RETRY_INFO_TYPE,
                        "retryDelay": format!("{}s", d.as_secs_f64()),
                    })
                })
                .into_iter()
                .collect();
            let body =
                serde_json::json!({"code": st.code, "message": st.message, "details": details});
            (
                status,
                [(header::CONTENT_TYPE, "application/json")],
                body.to_string(),
            )
                .into_response()
        }
    };
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
