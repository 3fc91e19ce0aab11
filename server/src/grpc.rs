//! OTLP/gRPC: the collector's `TraceService`, `MetricsService` and `LogsService` (the
//! methods of `opentelemetry-proto`'s protos, served by [`service::ExportServer`]), with the
//! same auth, limits, mapping and responses as OTLP/HTTP.
//!
//! A request is authenticated and admitted from its metadata before any of its message is
//! read; the message (gzip accepted) may be at most `max_body_bytes` decompressed, and is
//! pre-scanned against the item and decoded-size limits before it is decoded. Errors:
//! `INVALID_ARGUMENT` (malformed, all items rejected, invalid tenant), `UNAUTHENTICATED`,
//! `RESOURCE_EXHAUSTED` (too large: not retryable; too many requests in flight or the
//! decoded-bytes budget spent: with `RetryInfo`), `UNAVAILABLE` with `RetryInfo` (memory
//! budget, shutting down).
//!
//! The listener's transport settings are [`GrpcTransport`]'s; its accept loop (connection
//! cap, first-bytes timeout) is [`incoming`].

pub mod incoming;
pub mod rpc;
pub mod service;

use std::sync::Arc;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsPartialSuccess, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceResponse,
};

use crate::ingest::{Ingest, Outcome};
use crate::otlp::SignalKind;
use service::{Export, ExportServer};

fn rejected(o: &Outcome) -> i64 {
    i64::try_from(o.rejected).unwrap_or(i64::MAX)
}

/// `TraceService/Export`.
#[derive(Debug)]
pub struct Traces;

impl Export for Traces {
    const SERVICE: &'static str = "opentelemetry.proto.collector.trace.v1.TraceService";
    const PATH: &'static str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
    const SIGNAL: SignalKind = SignalKind::Traces;
    type Response = ExportTraceServiceResponse;

    fn response(o: Outcome) -> Self::Response {
        ExportTraceServiceResponse {
            partial_success: (o.rejected > 0 || !o.message.is_empty()).then(|| {
                ExportTracePartialSuccess {
                    rejected_spans: rejected(&o),
                    error_message: o.message,
                }
            }),
        }
    }
}

/// `MetricsService/Export`.
#[derive(Debug)]
pub struct Metrics;

impl Export for Metrics {
    const SERVICE: &'static str = "opentelemetry.proto.collector.metrics.v1.MetricsService";
    const PATH: &'static str = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";
    const SIGNAL: SignalKind = SignalKind::Metrics;
    type Response = ExportMetricsServiceResponse;

    fn response(o: Outcome) -> Self::Response {
        ExportMetricsServiceResponse {
            partial_success: (o.rejected > 0 || !o.message.is_empty()).then(|| {
                ExportMetricsPartialSuccess {
                    rejected_data_points: rejected(&o),
                    error_message: o.message,
                }
            }),
        }
    }
}

/// `LogsService/Export`.
#[derive(Debug)]
pub struct Logs;

impl Export for Logs {
    const SERVICE: &'static str = "opentelemetry.proto.collector.logs.v1.LogsService";
    const PATH: &'static str = "/opentelemetry.proto.collector.logs.v1.LogsService/Export";
    const SIGNAL: SignalKind = SignalKind::Logs;
    type Response = ExportLogsServiceResponse;

    fn response(o: Outcome) -> Self::Response {
        ExportLogsServiceResponse {
            partial_success: (o.rejected > 0 || !o.message.is_empty()).then(|| {
                ExportLogsPartialSuccess {
                    rejected_log_records: rejected(&o),
                    error_message: o.message,
                }
            }),
        }
    }
}

/// The three OTLP services over one [`Ingest`].
#[derive(Clone, Debug)]
pub struct OtlpGrpc {
    ingest: Arc<Ingest>,
}

impl OtlpGrpc {
    /// Services writing through `ingest`.
    pub fn new(ingest: Arc<Ingest>) -> Self {
        Self { ingest }
    }

    /// The services, with gzip accepted and the message size limit (`max_body_bytes`,
    /// decompressed) configured.
    pub fn services(
        self,
    ) -> (
        ExportServer<Traces>,
        ExportServer<Metrics>,
        ExportServer<Logs>,
    ) {
        let max = self.ingest.limits().max_body_bytes;
        (
            ExportServer::new(Arc::clone(&self.ingest), max),
            ExportServer::new(Arc::clone(&self.ingest), max),
            ExportServer::new(self.ingest, max),
        )
    }
}

/// Transport settings of the gRPC listener.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrpcTransport {
    /// HTTP/2 PING interval on idle connections.
    pub keepalive_interval: Duration,
    /// How long a PING may go unanswered before the connection is closed.
    pub keepalive_timeout: Duration,
    /// Longest a request may take, reading its message included (a client's shorter
    /// `grpc-timeout` wins).
    pub request_timeout: Duration,
    /// Most concurrent HTTP/2 streams one connection may open.
    pub max_concurrent_streams: u32,
    /// Most requests of one connection processed at once (the others wait).
    pub concurrency_per_connection: usize,
    /// Largest request header list (metadata), in bytes.
    pub max_header_list_bytes: u32,
    /// Idle time before TCP keepalive probes start (set on the listener's incoming stream).
    pub tcp_keepalive: Duration,
}

impl Default for GrpcTransport {
    fn default() -> Self {
        Self {
            keepalive_interval: Duration::from_secs(30),
            keepalive_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            max_concurrent_streams: 128,
            concurrency_per_connection: 64,
            max_header_list_bytes: 16 << 10,
            tcp_keepalive: Duration::from_secs(60),
        }
    }
}

impl GrpcTransport {
    /// A tonic server builder with these settings.
    pub fn builder(&self) -> tonic::transport::Server {
        tonic::transport::Server::builder()
            .http2_keepalive_interval(Some(self.keepalive_interval))
            .http2_keepalive_timeout(Some(self.keepalive_timeout))
            .timeout(self.request_timeout)
            .max_concurrent_streams(Some(self.max_concurrent_streams))
            .concurrency_limit_per_connection(self.concurrency_per_connection)
            .http2_max_header_list_size(Some(self.max_header_list_bytes))
    }
}
