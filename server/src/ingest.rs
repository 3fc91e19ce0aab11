//! The ingest pipeline shared by OTLP/HTTP and OTLP/gRPC: admission (in-flight limit), then
//! on the blocking thread pool: decompression and the pre-scan (item count and decoded-size
//! limits, checked before anything is decoded), a reservation in the in-flight decoded-bytes
//! [`budget`], decode, mapping, and the durable store append (it waits for the WAL fsync).
//! Returns what the protocol responses need: accepted and rejected counts and the
//! partial-success message.
//!
//! `sightline_ingest_rejected_items_total` counts, for a request refused whole, its items
//! when the pre-scan counted them all (over the decoded-bytes budget, the store's memory
//! budget, every item rejected, a store failure), and 1 for a request refused before its
//! items were known (auth, media type, body size, malformed or truncated body, or a limit the
//! pre-scan stopped at).

pub mod budget;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;

use sightline_storage::{SeriesId, Store, TenantId};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::auth::Auth;
use crate::error::IngestError;
use crate::limits::Limits;
use crate::otlp::metrics::MetricRows;
use crate::otlp::{
    self, Encoding, ExportRequest, ItemError, MapContext, Mapped, RejectReason, SignalKind,
};
use crate::telemetry::{Telemetry, Transport};
use budget::DecodedBudget;

/// An export request body as received, not decoded yet.
#[derive(Clone, Debug)]
pub struct Body {
    /// The body (gRPC: the message, already decompressed by the transport within the
    /// message size limit).
    pub bytes: Bytes,
    /// Whether `bytes` is gzip-compressed (OTLP/HTTP `Content-Encoding: gzip`).
    pub gzip: bool,
    /// Protobuf or JSON.
    pub encoding: Encoding,
}

/// What happened to an accepted request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Items stored.
    pub accepted: u64,
    /// Items rejected (partial success).
    pub rejected: u64,
    /// Why, for the partial-success `error_message` (empty when nothing was rejected).
    pub message: String,
}

/// Shared state of the ingest path.
pub struct Ingest {
    store: Arc<Store>,
    limits: Limits,
    auth: Auth,
    telemetry: Arc<Telemetry>,
    inflight: Arc<Semaphore>,
    budget: Arc<DecodedBudget>,
    shutting_down: AtomicBool,
    detectors: std::sync::OnceLock<Arc<sightline_detectors::Detectors>>,
    assembler: std::sync::OnceLock<Arc<crate::assembly::Assembler>>,
}

impl std::fmt::Debug for Ingest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ingest")
            .field("limits", &self.limits)
            .field("auth", &self.auth.enabled())
            .finish_non_exhaustive()
    }
}

/// How long clients are asked to wait when the in-flight request limit is reached.
const BUSY_RETRY: Duration = Duration::from_secs(1);

impl Ingest {
    /// A pipeline writing to `store`.
    pub fn new(store: Arc<Store>, limits: Limits, auth: Auth, telemetry: Arc<Telemetry>) -> Self {
        let permits = limits.max_inflight_requests;
        let budget = DecodedBudget::new(limits.max_inflight_decoded_bytes as u64);
        Self {
            store,
            limits,
            auth,
            telemetry,
            inflight: Arc::new(Semaphore::new(permits)),
            budget,
            shutting_down: AtomicBool::new(false),
            detectors: std::sync::OnceLock::new(),
            assembler: std::sync::OnceLock::new(),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The in-flight decoded-bytes budget (`max_inflight_decoded_bytes`).
    pub fn budget(&self) -> &Arc<DecodedBudget> {
        &self.budget
    }

    /// The store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Now, from the store's clock (the one the server reads: a test can inject its own).
    pub fn now(&self) -> sightline_storage::UnixNanos {
        self.store().now()
    }

    /// The server's counters.
    pub fn telemetry(&self) -> &Arc<Telemetry> {
        &self.telemetry
    }

    /// Attaches the detectors (once; `sightline serve` does at start).
    pub fn set_detectors(&self, d: Arc<sightline_detectors::Detectors>) {
        let _ = self.detectors.set(d);
    }

    /// Attaches the trace-level quality assembler (once; `sightline serve` does at start).
    pub fn set_assembler(&self, a: Arc<crate::assembly::Assembler>) {
        let _ = self.assembler.set(a);
    }

    /// The assembler, when this process runs one.
    pub fn assembler(&self) -> Option<&Arc<crate::assembly::Assembler>> {
        self.assembler.get()
    }

    /// The detectors, when this process runs them (not in `sightline query --data-dir`).
    pub fn detectors(&self) -> Option<&Arc<sightline_detectors::Detectors>> {
        self.detectors.get()
    }

    /// Marks the server as shutting down (`/ready` answers 503 from then on).
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
    }

    /// Whether shutdown has begun.
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Acquire)
    }

    /// Whether requests need a bearer token (a tokens file is configured).
    pub fn auth_enabled(&self) -> bool {
        self.auth.enabled()
    }

    /// The tenant of a request (see [`crate::auth`]).
    pub fn tenant(
        &self,
        authorization: Option<&[u8]>,
        org_id: Option<&[u8]>,
    ) -> Result<TenantId, IngestError> {
        self.auth.tenant(authorization, org_id)
    }

    /// Takes an in-flight slot, or refuses with [`IngestError::Busy`].
    pub fn admit(&self) -> Result<OwnedSemaphorePermit, IngestError> {
        self.inflight
            .clone()
            .try_acquire_owned()
            .map_err(|_| IngestError::Busy {
                retry_after: BUSY_RETRY,
            })
    }

    /// Records a request refused before reaching [`Ingest::export`] (auth, size, media type).
    pub fn refused(&self, signal: SignalKind, transport: Transport, e: &IngestError) {
        self.telemetry.rejected(signal, e.reason(), 1);
        self.telemetry
            .request(signal, transport, e.reason(), Duration::ZERO);
    }

    /// Decompresses, pre-scans, decodes, maps and stores `body`, all on the blocking pool.
    /// The caller holds an in-flight slot ([`Ingest::admit`]) until this returns.
    pub async fn export(
        self: &Arc<Self>,
        signal: SignalKind,
        transport: Transport,
        tenant: TenantId,
        body: Body,
    ) -> Result<Outcome, IngestError> {
        let started = Instant::now();
        let this = Arc::clone(self);
        let (result, items) = tokio::task::spawn_blocking(move || {
            let mut items = None;
            let result = this.decode_and_process(signal, &tenant, body, &mut items);
            (result, items)
        })
        .await
        .unwrap_or_else(|e| {
            let e = IngestError::Internal(format!("ingest task failed: {e}"));
            (Err(e), None)
        });
        let elapsed = started.elapsed();
        match &result {
            Ok(o) => {
                let outcome = if o.rejected > 0 { "partial" } else { "ok" };
                self.telemetry.accepted(signal, transport, o.accepted);
                self.telemetry.request(signal, transport, outcome, elapsed);
            }
            Err(e) => {
                if !matches!(e, IngestError::AllRejected { .. }) {
                    self.telemetry
                        .rejected(signal, e.reason(), items.unwrap_or(1));
                }
                self.telemetry
                    .request(signal, transport, e.reason(), elapsed);
                tracing::debug!(signal = signal.as_str(), transport = transport.as_str(), error = %e, "export refused");
            }
        }
        result
    }

    /// Everything [`Ingest::export`] runs on the blocking pool; `items` is set once the
    /// pre-scan has counted them. The decompressed body and the decoded estimate are held in
    /// the budget until the request is stored or refused.
    fn decode_and_process(
        &self,
        signal: SignalKind,
        tenant: &TenantId,
        body: Body,
        items: &mut Option<u64>,
    ) -> Result<Outcome, IngestError> {
        let mut reserved = self.budget.reservation();
        let inflated = if body.gzip {
            Some(otlp::gunzip_with(
                &body.bytes,
                self.limits.max_decompressed_bytes,
                |n| reserved.grow(n),
            )?)
        } else {
            None
        };
        let inflated_bytes = reserved.bytes();
        let raw: &[u8] = inflated.as_deref().unwrap_or(&body.bytes);
        let scan = otlp::scan_body(signal, body.encoding, raw, &self.limits)?;
        *items = Some(scan.items);
        // While the store's memtables are at their budget, refuse before decoding: the
        // encoded size stands in for the rows' (the append checks exactly).
        self.store.check_memory(raw.len())?;
        reserved.grow(scan.decoded_bytes)?;
        let req = otlp::decode(signal, raw, body.encoding)?;
        drop(inflated);
        drop(body);
        reserved.release(inflated_bytes);
        let outcome = self.process(tenant, req);
        drop(reserved);
        outcome
    }

    fn check_items(&self, n: usize) -> Result<(), IngestError> {
        if n > self.limits.max_items_per_request {
            return Err(IngestError::TooLarge(format!(
                "{n} items in one request, over the limit of {}",
                self.limits.max_items_per_request
            )));
        }
        Ok(())
    }

    fn finish<T>(&self, signal: SignalKind, mapped: &Mapped<T>) -> Result<(), IngestError> {
        for (reason, n) in &mapped.reasons {
            self.telemetry.rejected(signal, reason.as_str(), *n);
        }
        if mapped.accepted == 0 && mapped.rejected > 0 {
            return Err(IngestError::AllRejected {
                rejected: mapped.rejected,
                message: mapped.error_message(),
            });
        }
        Ok(())
    }

    /// Stores mapped metrics with per-series admission: when the tenant is at its series limit,
    /// the data points of series it cannot admit are rejected (partial success, reason
    /// `series_limit`) and the rest is stored. The admission answer is a snapshot, so a
    /// concurrent request can still push the append over the limit; asking again converges.
    fn append_metrics(
        &self,
        tenant: &TenantId,
        mapped: &mut Mapped<MetricRows>,
    ) -> Result<(), IngestError> {
        const ATTEMPTS: usize = 4;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let ids: Vec<SeriesId> = mapped.rows.batch.samples.iter().map(|s| s.series).collect();
            let over = self.store.series_over_limit(tenant, &ids);
            let (result, dropped) = if over.is_empty() {
                (self.store.append_metrics(tenant, &mapped.rows.batch), 0)
            } else {
                let (kept, dropped) = mapped.rows.without_series(&over);
                if dropped >= mapped.accepted {
                    (Ok(()), dropped)
                } else {
                    (self.store.append_metrics(tenant, &kept), dropped)
                }
            };
            match result {
                Err(sightline_storage::StorageError::CardinalityLimit { .. })
                    if attempt < ATTEMPTS => {}
                Err(e) => return Err(e.into()),
                Ok(()) => {
                    if dropped > 0 {
                        mapped.accepted -= dropped.min(mapped.accepted);
                        let message = format!(
                            "{dropped} data points of {} new series refused: the tenant is at its limit of {} series",
                            over.len(),
                            self.store.config().max_series_per_tenant
                        );
                        mapped.reject_many(
                            ItemError::new(RejectReason::SeriesLimit, message),
                            dropped,
                        );
                    }
                    return self.finish(SignalKind::Metrics, mapped);
                }
            }
        }
    }

    /// Maps and stores a decoded request (blocking: waits for the WAL fsync).
    pub fn process(&self, tenant: &TenantId, req: ExportRequest) -> Result<Outcome, IngestError> {
        let ctx = MapContext::at(&self.limits, self.now());
        let signal = req.signal();
        let (accepted, rejected, truncated, message) = match req {
            ExportRequest::Traces(r) => {
                self.check_items(otlp::traces::count_spans(&r))?;
                let (mapped, q) = otlp::traces::map_traces(&r, &ctx);
                drop(r);
                self.telemetry
                    .quality(q.logprobs, q.logprobs_errors, q.hallucination);
                self.telemetry.truncated(signal, q.truncated);
                self.finish(signal, &mapped)?;
                self.store.append_spans(tenant, &mapped.rows)?;
                if let Some(a) = self.assembler.get() {
                    a.observe(tenant, &mapped.rows);
                }
                (
                    mapped.accepted,
                    mapped.rejected,
                    mapped.truncated,
                    mapped.error_message(),
                )
            }
            ExportRequest::Metrics(r) => {
                self.check_items(otlp::metrics::count_points(&r))?;
                let mut mapped = otlp::metrics::map_metrics(&r, &ctx);
                drop(r);
                self.append_metrics(tenant, &mut mapped)?;
                (mapped.accepted, mapped.rejected, 0, mapped.error_message())
            }
            ExportRequest::Logs(r) => {
                self.check_items(otlp::logs::count_logs(&r))?;
                let mapped = otlp::logs::map_logs(&r, &ctx);
                drop(r);
                self.telemetry.truncated(signal, mapped.truncated);
                self.finish(signal, &mapped)?;
                self.store.append_logs(tenant, &mapped.rows)?;
                if let Some(a) = self.assembler.get() {
                    a.observe_logs(tenant, &mapped.rows);
                }
                (
                    mapped.accepted,
                    mapped.rejected,
                    mapped.truncated,
                    mapped.error_message(),
                )
            }
        };
        Ok(Outcome {
            accepted,
            rejected,
            message: if rejected > 0 || truncated > 0 {
                message
            } else {
                String::new()
            },
        })
    }
}
