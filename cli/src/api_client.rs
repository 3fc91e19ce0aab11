//! The one client of Sightline's HTTP API that every command uses: `query` and `detectors`
//! against a running server (or, for `query --data-dir`, the server's router in this process),
//! and `demo` against the server it started.
//!
//! It sends the credentials of the command line (a bearer token, or a tenant as
//! `X-Scope-OrgID`), turns non-2xx answers into [`ApiError::Status`] with the server's own
//! message, bounds every request by a timeout ([`DEFAULT_TIMEOUT`]), and retries OTLP exports the server
//! refused for back-pressure (429/503) with a growing pause.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt as _;
use serde_json::Value;

/// Where the commands look for a server when `--url` is not given.
pub const DEFAULT_URL: &str = "http://127.0.0.1:4318";

/// How long one request may take before the command gives up, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Attempts of one OTLP export the server keeps refusing with 429/503.
const EXPORT_ATTEMPTS: u32 = 50;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// `--url` is not plain HTTP.
    #[error("--url must be an http:// URL (put TLS in a proxy in front): {0}")]
    NotHttp(String),
    /// No connection, or the connection broke.
    #[error("cannot reach {base}: {reason}")]
    Unreachable {
        /// The server's base URL.
        base: String,
        /// What the transport said.
        reason: String,
    },
    /// No answer within the timeout.
    #[error("no answer from {base} within {} s", .timeout.as_secs())]
    TimedOut {
        /// The server's base URL.
        base: String,
        /// The timeout that passed.
        timeout: Duration,
    },
    /// The server answered with an error status.
    #[error("HTTP {status}: {message}")]
    Status {
        /// The status code.
        status: u16,
        /// The answer's `error` field, else the whole answer.
        message: String,
    },
    /// An OTLP export stayed refused for back-pressure through every retry.
    #[error("POST {path}: still refused after {EXPORT_ATTEMPTS} attempts")]
    StillRefused {
        /// The OTLP path.
        path: String,
    },
    /// The request could not be built (a path or header the HTTP types reject).
    #[error("invalid request: {0}")]
    Invalid(String),
}

/// Who the requests are for: a bearer token (servers with auth) or a tenant (servers without).
#[derive(Clone, Debug, Default)]
pub struct Credentials {
    /// Sent as `Authorization: Bearer`.
    pub token: Option<String>,
    /// Sent as `X-Scope-OrgID`.
    pub tenant: Option<String>,
}

type HttpClient =
    hyper_util::client::legacy::Client<hyper_util::client::legacy::connect::HttpConnector, Body>;

/// Where requests go.
#[derive(Clone)]
enum Transport {
    /// A server over HTTP/1.1.
    Http {
        base: String,
        client: Box<HttpClient>,
    },
    /// The server's router in this process (`query --data-dir`).
    InProcess(axum::Router),
}

/// An answer: the status and the body as JSON (a JSON string holding the text when the body is
/// not JSON, `null` when it is empty).
#[derive(Debug)]
pub struct Answer {
    /// The HTTP status.
    pub status: StatusCode,
    /// The decoded body.
    pub body: Value,
}

impl Answer {
    /// The body of a 2xx answer, or the error the server gave.
    pub fn into_success(self) -> Result<Value, ApiError> {
        if self.status.is_success() {
            return Ok(self.body);
        }
        let message = self
            .body
            .get("error")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| match &self.body {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            });
        Err(ApiError::Status {
            status: self.status.as_u16(),
            message,
        })
    }
}

/// A client of one server (see the module docs).
#[derive(Clone)]
pub struct ApiClient {
    transport: Transport,
    credentials: Credentials,
    timeout: Duration,
}

impl ApiClient {
    /// A client of the server at `url` ([`DEFAULT_URL`] when `None`; a trailing `/` is
    /// ignored). Only `http://` URLs: TLS belongs in a proxy in front of the server.
    pub fn http(url: Option<&str>, credentials: Credentials) -> Result<Self, ApiError> {
        let base = url.unwrap_or(DEFAULT_URL).trim_end_matches('/').to_owned();
        if !base.starts_with("http://") {
            return Err(ApiError::NotHttp(base));
        }
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http();
        Ok(Self {
            transport: Transport::Http {
                base,
                client: Box::new(client),
            },
            credentials,
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// A client that hands every request to `router` in this process, without a socket.
    pub fn in_process(router: axum::Router, credentials: Credentials) -> Self {
        Self {
            transport: Transport::InProcess(router),
            credentials,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The same client with another per-request timeout.
    #[cfg(test)]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The server's base URL (`in-process` for a router in this process).
    pub fn base(&self) -> &str {
        match &self.transport {
            Transport::Http { base, .. } => base,
            Transport::InProcess(_) => "in-process",
        }
    }

    /// Sends one request (`path` with its query string) and reads the whole answer.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> Result<(StatusCode, Vec<u8>), ApiError> {
        let base = self.base().to_owned();
        match tokio::time::timeout(
            self.timeout,
            self.send_now(method, path, content_type, body),
        )
        .await
        {
            Ok(answer) => answer,
            Err(_) => Err(ApiError::TimedOut {
                base,
                timeout: self.timeout,
            }),
        }
    }

    async fn send_now(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> Result<(StatusCode, Vec<u8>), ApiError> {
        let mut req = Request::builder().method(method);
        if let Some(t) = &self.credentials.token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if let Some(t) = &self.credentials.tenant {
            req = req.header("x-scope-orgid", t);
        }
        if !body.is_empty() {
            req = req.header("content-type", content_type);
        }
        let unreachable = |reason: String| ApiError::Unreachable {
            base: self.base().to_owned(),
            reason,
        };
        let resp = match &self.transport {
            Transport::Http { base, client } => {
                let req = req
                    .uri(format!("{base}{path}"))
                    .body(Body::from(body))
                    .map_err(|e| ApiError::Invalid(e.to_string()))?;
                client
                    .request(req)
                    .await
                    .map_err(|e| unreachable(e.to_string()))?
                    .map(Body::new)
            }
            Transport::InProcess(router) => {
                use tower::ServiceExt as _;
                let req = req
                    .uri(path)
                    .body(Body::from(body))
                    .map_err(|e| ApiError::Invalid(e.to_string()))?;
                match router.clone().oneshot(req).await {
                    Ok(resp) => resp,
                    Err(never) => match never {},
                }
            }
        };
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| unreachable(e.to_string()))?
            .to_bytes();
        Ok((status, bytes.to_vec()))
    }

    /// A JSON request (`body` as `application/json`); returns the status and decoded body,
    /// whatever the status.
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Answer, ApiError> {
        let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        let (status, resp) = self.send(method, path, "application/json", bytes).await?;
        let body = if resp.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&resp)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&resp).into_owned()))
        };
        Ok(Answer { status, body })
    }

    /// A JSON request whose answer must be 2xx: returns its body, or the server's error.
    pub async fn json(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, ApiError> {
        self.request(method, path, body).await?.into_success()
    }

    /// `GET path` whose answer must be 2xx.
    pub async fn get(&self, path: &str) -> Result<Value, ApiError> {
        self.json(Method::GET, path, None).await
    }

    /// Posts an OTLP message to `/v1/<signal>` as protobuf, retrying while the server refuses
    /// it for back-pressure (429/503).
    pub async fn export(&self, signal: &str, msg: &impl prost::Message) -> Result<(), ApiError> {
        let body = msg.encode_to_vec();
        let path = format!("/v1/{signal}");
        for attempt in 1..=EXPORT_ATTEMPTS {
            let (status, resp) = self
                .send(Method::POST, &path, "application/x-protobuf", body.clone())
                .await?;
            match status {
                StatusCode::OK => return Ok(()),
                StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => {
                    tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await
                }
                _ => {
                    return Err(ApiError::Status {
                        status: status.as_u16(),
                        message: String::from_utf8_lossy(&resp).into_owned(),
                    });
                }
            }
        }
        Err(ApiError::StillRefused { path })
    }
}

/// `path?k=v&...` with keys and values form-encoded; `path` alone without pairs.
pub fn with_query<K: AsRef<str>, V: AsRef<str>>(path: &str, pairs: &[(K, V)]) -> String {
    if pairs.is_empty() {
        return path.to_owned();
    }
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        query.append_pair(k.as_ref(), v.as_ref());
    }
    format!("{path}?{}", query.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::{get, post};
    use serde_json::json;

    fn router() -> axum::Router {
        axum::Router::new()
            .route(
                "/ok",
                get(|headers: axum::http::HeaderMap| async move {
                    let tenant = headers
                        .get("x-scope-orgid")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned();
                    axum::Json(json!({"tenant": tenant}))
                }),
            )
            .route(
                "/bad",
                get(|| async {
                    (
                        StatusCode::BAD_REQUEST,
                        axum::Json(json!({"status": "error", "error": "no such field"})),
                    )
                }),
            )
            .route(
                "/text",
                get(|| async { (StatusCode::NOT_FOUND, "nothing here") }),
            )
            .route("/echo", post(|body: String| async move { body }))
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map(|rt| rt.block_on(f))
            .unwrap_or_else(|e| panic!("runtime: {e}"))
    }

    #[test]
    fn answers_and_errors_in_process() {
        let creds = Credentials {
            token: None,
            tenant: Some("team-a".into()),
        };
        let client = ApiClient::in_process(router(), creds);
        assert_eq!(client.base(), "in-process");
        block_on(async {
            let ok = client.get("/ok").await.map_err(|e| e.to_string());
            assert_eq!(ok, Ok(json!({"tenant": "team-a"})));
            let bad = client.get("/bad").await.map_err(|e| e.to_string());
            assert_eq!(bad, Err("HTTP 400: no such field".to_owned()));
            let text = client.get("/text").await.map_err(|e| e.to_string());
            assert_eq!(text, Err("HTTP 404: nothing here".to_owned()));
            let echoed = client
                .json(Method::POST, "/echo", Some(&json!({"a": [1, 2]})))
                .await
                .map_err(|e| e.to_string());
            assert_eq!(echoed, Ok(json!({"a": [1, 2]})));
        });
    }

    #[test]
    fn urls_and_unreachable_servers() {
        let err = ApiClient::http(Some("https://example.org/"), Credentials::default())
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("--url must be an http:// URL (put TLS in a proxy in front): https://example.org")
        );
        // A port nobody listens on: bind one, then drop the listener.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or(9);
        let url = format!("http://127.0.0.1:{port}/");
        let client = match ApiClient::http(Some(&url), Credentials::default()) {
            Ok(c) => c.with_timeout(Duration::from_secs(5)),
            Err(e) => panic!("{e}"),
        };
        assert_eq!(client.base(), format!("http://127.0.0.1:{port}"));
        let err = block_on(client.get("/api/v1/detectors")).err();
        assert!(
            matches!(&err, Some(ApiError::Unreachable { base, .. }) if base == client.base()),
            "{err:?}"
        );
    }

    #[test]
    fn query_strings_are_encoded() {
        assert_eq!(with_query::<&str, &str>("/p", &[]), "/p");
        assert_eq!(
            with_query("/p", &[("q", "sum(rate(x[5m])) by (a b)"), ("n", "1")]),
            "/p?q=sum%28rate%28x%5B5m%5D%29%29+by+%28a+b%29&n=1"
        );
    }
}
