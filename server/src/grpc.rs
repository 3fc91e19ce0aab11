//! OTLP/gRPC: the collector's `TraceService`, `MetricsService` and `LogsService` (tonic, from
//! `opentelemetry-proto`'s `gen-tonic`), with the same auth, limits, mapping and responses as
//! OTLP/HTTP. Errors: `INVALID_ARGUMENT` (malformed, all items rejected), `UNAUTHENTICATED`,
//! `RESOURCE_EXHAUSTED` (too large: not retryable; busy: with `RetryInfo`), `UNAVAILABLE` with
//! `RetryInfo` (memory budget, shutting down). gzip request compression is accepted.

pub mod rpc;

use std::sync::Arc;

use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceRequest, ExportLogsServiceResponse,
    logs_service_server::{LogsService, LogsServiceServer},
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsPartialSuccess, ExportMetricsServiceRequest, ExportMetricsServiceResponse,
    metrics_service_server::{MetricsService, MetricsServiceServer},
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
    trace_service_server::{TraceService, TraceServiceServer},
};
use tonic::codec::CompressionEncoding;
use tonic::{Request, Response, Status};

use crate::error::IngestError;
use crate::ingest::{ExportRequest, Ingest, Outcome};
use crate::otlp::SignalKind;
use crate::telemetry::Transport;

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

    async fn export<T>(
        &self,
        signal: SignalKind,
        req: Request<T>,
        wrap: fn(T) -> ExportRequest,
    ) -> Result<Outcome, Status>
    where
        T: Send + 'static,
    {
        let md = req.metadata();
        let auth = md.get("authorization").map(|v| v.as_bytes().to_vec());
        let org = md.get("x-scope-orgid").map(|v| v.as_bytes().to_vec());
        let ingest = &self.ingest;
        let refuse = |e: IngestError| {
            ingest.refused(signal, Transport::Grpc, &e);
            rpc::tonic_status(&e)
        };
        let tenant = ingest
            .tenant(auth.as_deref(), org.as_deref())
            .map_err(refuse)?;
        let _permit = ingest.admit().map_err(refuse)?;
        let body = req.into_inner();
        ingest
            .export(signal, Transport::Grpc, tenant, move || Ok(wrap(body)))
            .await
            .map_err(|e| rpc::tonic_status(&e))
    }

    /// The tonic services, with gzip and the message size limit configured.
    pub fn services(
        self,
    ) -> (
        TraceServiceServer<Self>,
        MetricsServiceServer<Self>,
        LogsServiceServer<Self>,
    ) {
        let max = self.ingest.limits().max_decompressed_bytes;
        (
            TraceServiceServer::new(self.clone())
                .accept_compressed(CompressionEncoding::Gzip)
                .send_compressed(CompressionEncoding::Gzip)
                .max_decoding_message_size(max),
            MetricsServiceServer::new(self.clone())
                .accept_compressed(CompressionEncoding::Gzip)
                .send_compressed(CompressionEncoding::Gzip)
                .max_decoding_message_size(max),
            LogsServiceServer::new(self)
                .accept_compressed(CompressionEncoding::Gzip)
                .send_compressed(CompressionEncoding::Gzip)
                .max_decoding_message_size(max),
        )
    }
}

#[tonic::async_trait]
impl TraceService for OtlpGrpc {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        let o = OtlpGrpc::export(self, SignalKind::Traces, request, ExportRequest::Traces).await?;
        Ok(Response::new(ExportTraceServiceResponse {
            partial_success: (o.rejected > 0).then(|| ExportTracePartialSuccess {
                rejected_spans: i64::try_from(o.rejected).unwrap_or(i64::MAX),
                error_message: o.message,
            }),
        }))
    }
}

#[tonic::async_trait]
impl MetricsService for OtlpGrpc {
    async fn export(
        &self,
        request: Request<ExportMetricsServiceRequest>,
    ) -> Result<Response<ExportMetricsServiceResponse>, Status> {
        let o =
            OtlpGrpc::export(self, SignalKind::Metrics, request, ExportRequest::Metrics).await?;
        Ok(Response::new(ExportMetricsServiceResponse {
            partial_success: (o.rejected > 0).then(|| ExportMetricsPartialSuccess {
                rejected_data_points: i64::try_from(o.rejected).unwrap_or(i64::MAX),
                error_message: o.message,
            }),
        }))
    }
}

#[tonic::async_trait]
impl LogsService for OtlpGrpc {
    async fn export(
        &self,
        request: Request<ExportLogsServiceRequest>,
    ) -> Result<Response<ExportLogsServiceResponse>, Status> {
        let o = OtlpGrpc::export(self, SignalKind::Logs, request, ExportRequest::Logs).await?;
        Ok(Response::new(ExportLogsServiceResponse {
            partial_success: (o.rejected > 0).then(|| ExportLogsPartialSuccess {
                rejected_log_records: i64::try_from(o.rejected).unwrap_or(i64::MAX),
                error_message: o.message,
            }),
        }))
    }
}
