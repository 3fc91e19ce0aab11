//! The one error answer of every HTTP route: [`ApiError`], classified once from the errors of
//! the layers below (query, storage, ingest, detectors), so the same mistake gets the same
//! status on every route.
//!
//! | kind | status | when |
//! |---|---|---|
//! | `bad_data` | 400 | unparsable or out-of-range parameters, bad queries, invalid tenant ids |
//! | `unauthorized` | 401 | missing or unknown bearer token (with `WWW-Authenticate: Bearer`) |
//! | `forbidden` | 403 | a `Host` or `Origin` the server does not answer |
//! | `not_found` | 404 | unknown trace, detector, ... |
//! | `conflict` | 409 | creating a detector whose name exists |
//! | `too_large` | 413 | body, decompressed body or item count over a limit |
//! | `unsupported_media_type` | 415 | a content type the route does not take |
//! | `execution` | 422 | valid query that cannot run: type errors, sample or series budgets |
//! | `busy` | 429 | the tenant's share of query slots or a quota is used up (`Retry-After`) |
//! | `internal` | 500 | storage failures |
//! | `timeout` | 503 | the request's deadline passed (the work is cancelled) |
//! | `unavailable` | 503 | memory budget exhausted, shutting down (`Retry-After`) |
//!
//! The body has the shape of the API the route belongs to ([`Dialect`]): the native and
//! Prometheus APIs answer `{"status":"error","errorType":kind,"error":message}`; the Loki and
//! Tempo APIs answer the message as plain text, as those servers do. A handler just returns an
//! [`ApiError`]; the router of a plain-text API re-renders it with [`plain_text_errors`].

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sightline_query::QueryError;
use sightline_storage::StorageError;

use crate::error::IngestError;

/// What went wrong, which decides the status code (see the module table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// 400.
    BadData,
    /// 401.
    Unauthorized,
    /// 403.
    Forbidden,
    /// 404.
    NotFound,
    /// 409.
    Conflict,
    /// 413.
    TooLarge,
    /// 415.
    UnsupportedMediaType,
    /// 422.
    Execution,
    /// 429.
    Busy,
    /// 500.
    Internal,
    /// 503, the deadline passed.
    Timeout,
    /// 503, retry later.
    Unavailable,
}

impl ErrorKind {
    /// The HTTP status of this kind.
    pub fn status(self) -> StatusCode {
        match self {
            Self::BadData => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::Conflict => StatusCode::CONFLICT,
            Self::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Execution => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Busy => StatusCode::TOO_MANY_REQUESTS,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Timeout | Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The `errorType` of the JSON body (Prometheus' names where it has one).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BadData => "bad_data",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::Conflict => "conflict",
            Self::TooLarge => "too_large",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::Execution => "execution",
            Self::Busy => "busy",
            Self::Internal => "internal",
            Self::Timeout => "timeout",
            Self::Unavailable => "unavailable",
        }
    }
}

/// The shape of an error body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// `{"status":"error","errorType":..,"error":..}` (native and Prometheus APIs).
    Json,
    /// The message as `text/plain` (Loki and Tempo APIs).
    PlainText,
}

/// An error answer: its kind, message and, for retryable ones, the delay to advertise.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// What went wrong.
    pub kind: ErrorKind,
    /// For the client.
    pub message: String,
    /// `Retry-After`, for retryable errors.
    pub retry_after: Option<Duration>,
}

impl ApiError {
    /// An error of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 400 `bad_data`.
    pub fn bad_data(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::BadData, message)
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    /// 422 `execution`.
    pub fn execution(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Execution, message)
    }

    /// 503 `timeout`.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Timeout, message)
    }

    /// 500 `internal`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// 429 `busy` with `Retry-After`.
    pub fn busy(message: impl Into<String>, retry_after: Duration) -> Self {
        Self::new(ErrorKind::Busy, message).with_retry_after(retry_after)
    }

    /// Sets the advertised retry delay.
    pub fn with_retry_after(mut self, d: Duration) -> Self {
        self.retry_after = Some(d);
        self
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.kind.status()
    }

    /// Prefixes the message (`invalid parameter "query": ...`).
    pub fn context(mut self, prefix: impl std::fmt::Display) -> Self {
        self.message = format!("{prefix}: {}", self.message);
        self
    }

    /// The response in `dialect`.
    pub fn render(&self, dialect: Dialect) -> Response {
        let mut resp = match dialect {
            Dialect::Json => {
                let body = serde_json::json!({
                    "status": "error",
                    "errorType": self.kind.as_str(),
                    "error": self.message,
                });
                (
                    self.status(),
                    [(header::CONTENT_TYPE, "application/json")],
                    body.to_string(),
                )
                    .into_response()
            }
            Dialect::PlainText => (
                self.status(),
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                self.message.clone(),
            )
                .into_response(),
        };
        let headers = resp.headers_mut();
        if self.kind == ErrorKind::Unauthorized {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(d) = self.retry_after {
            let secs = d.as_secs().max(1);
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                headers.insert(header::RETRY_AFTER, v);
            }
        }
        resp.extensions_mut().insert(self.clone());
        resp
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.render(Dialect::Json)
    }
}

/// Middleware for the plain-text APIs (Loki, Tempo): re-renders every [`ApiError`] answer of
/// the routes below it as plain text.
pub async fn plain_text_errors(resp: Response) -> Response {
    match resp.extensions().get::<ApiError>() {
        Some(e) => e.render(Dialect::PlainText),
        None => resp,
    }
}

impl From<StorageError> for ApiError {
    fn from(e: StorageError) -> Self {
        match e {
            StorageError::DeadlineExceeded => {
                Self::timeout("query timed out in expression evaluation")
            }
            StorageError::OverBudget { retry_after, .. } => {
                Self::new(ErrorKind::Unavailable, e.to_string()).with_retry_after(retry_after)
            }
            // A query that alone needs more than the budget will not fit by retrying; one that
            // meets other queries' rows may once they finish.
            StorageError::ScanMemory { others_bytes, .. } => {
                if others_bytes == 0 {
                    Self::new(ErrorKind::Execution, e.to_string())
                } else {
                    Self::new(ErrorKind::Unavailable, e.to_string())
                        .with_retry_after(Duration::from_secs(1))
                }
            }
            StorageError::Closed => Self::new(
                ErrorKind::Unavailable,
                "store is closed (server shutting down)",
            )
            .with_retry_after(Duration::from_secs(1)),
            StorageError::InvalidQuery(m) | StorageError::InvalidInput(m) => Self::bad_data(m),
            e if e.is_client_error() => Self::bad_data(e.to_string()),
            e => Self::internal(e.to_string()),
        }
    }
}

impl From<QueryError> for ApiError {
    fn from(e: QueryError) -> Self {
        match e {
            QueryError::Parse(_) | QueryError::Unsupported(_) => Self::bad_data(e.to_string()),
            QueryError::BadRequest(m) => Self::bad_data(m),
            QueryError::Execution(m) => Self::execution(m),
            QueryError::Timeout => Self::timeout("query timed out in expression evaluation"),
            QueryError::Storage(s) => s.into(),
            other => Self::execution(other.to_string()),
        }
    }
}

impl From<IngestError> for ApiError {
    fn from(e: IngestError) -> Self {
        let kind = match &e {
            IngestError::Unauthenticated(_) => ErrorKind::Unauthorized,
            IngestError::Malformed(_)
            | IngestError::InvalidTenant(_)
            | IngestError::AllRejected { .. } => ErrorKind::BadData,
            IngestError::TooLarge(_) => ErrorKind::TooLarge,
            IngestError::UnsupportedMediaType(_) => ErrorKind::UnsupportedMediaType,
            IngestError::Busy { .. } => ErrorKind::Busy,
            IngestError::OverBudget { .. } | IngestError::Unavailable(_) => ErrorKind::Unavailable,
            _ => ErrorKind::Internal,
        };
        let retry = e.retry_after();
        let mut out = Self::new(kind, e.to_string());
        out.retry_after = retry;
        out
    }
}

impl From<sightline_detectors::DetectorError> for ApiError {
    fn from(e: sightline_detectors::DetectorError) -> Self {
        use sightline_detectors::DetectorError as D;
        match e {
            D::NotFound(_) => Self::not_found(e.to_string()),
            D::Invalid(_) => Self::bad_data(e.to_string()),
            D::Exists(_) => Self::new(ErrorKind::Conflict, e.to_string()),
            D::Disabled => Self::new(ErrorKind::Unavailable, e.to_string()),
            other => Self::internal(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_classification_for_each_layer() {
        let q: ApiError = QueryError::Parse("x".into()).into();
        assert_eq!(q.status(), StatusCode::BAD_REQUEST);
        let s: ApiError = StorageError::InvalidQuery("bad regex".into()).into();
        assert_eq!(
            (s.status(), s.message.as_str()),
            (StatusCode::BAD_REQUEST, "bad regex")
        );
        let s: ApiError = QueryError::Storage(StorageError::InvalidInput("x".into())).into();
        assert_eq!(s.status(), StatusCode::BAD_REQUEST);
        let d: ApiError = QueryError::Storage(StorageError::DeadlineExceeded).into();
        assert_eq!(d.kind, ErrorKind::Timeout);
        let t: ApiError = IngestError::InvalidTenant("x".into()).into();
        assert_eq!(t.status(), StatusCode::BAD_REQUEST);
        let u: ApiError = IngestError::Unauthenticated("x".into()).into();
        assert_eq!(u.status(), StatusCode::UNAUTHORIZED);
        let b: ApiError = IngestError::Busy {
            retry_after: Duration::from_secs(2),
        }
        .into();
        assert_eq!(
            (b.status(), b.retry_after),
            (StatusCode::TOO_MANY_REQUESTS, Some(Duration::from_secs(2)))
        );
    }

    #[test]
    fn renders_in_each_dialect() {
        let e = ApiError::new(ErrorKind::Unauthorized, "missing bearer token");
        let json = e.render(Dialect::Json);
        assert_eq!(json.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            json.headers().get(header::WWW_AUTHENTICATE),
            Some(&HeaderValue::from_static("Bearer"))
        );
        let text = e.render(Dialect::PlainText);
        assert_eq!(
            text.headers().get(header::CONTENT_TYPE),
            Some(&HeaderValue::from_static("text/plain; charset=utf-8"))
        );
        let busy = ApiError::busy("later", Duration::from_millis(1500)).render(Dialect::Json);
        assert_eq!(
            busy.headers().get(header::RETRY_AFTER),
            Some(&HeaderValue::from_static("1"))
        );
    }
}
