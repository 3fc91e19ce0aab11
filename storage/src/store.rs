//! The store: one data directory, all tenants and signals.
//!
//! Write path: [`Store::append_spans`] / [`Store::append_logs`] / [`Store::append_metrics`]
//! encode the rows to Arrow, reserve memory, then under the state lock assign an LSN, write the
//! WAL record and insert into the memtable; the caller is acknowledged once the record is durable
//! (group commit). Flushes freeze all memtables, write segments, commit them in the manifest and
//! checkpoint the WAL.
//!
//! Read path: [`Store::scan`] snapshots segments and memtables under the same lock, so every
//! acknowledged row is visible exactly once, whether it is still in memory, being flushed, or on
//! disk.

mod background;
mod commit;
mod flush;
mod maintenance;
mod observer;
mod recovery;
mod sample_merge;
mod scan;

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use arrow_array::RecordBatch;
use parking_lot::Mutex;
use serde::Serialize;

pub use observer::SampleObserver;
pub use recovery::OpenReport;
pub use sample_merge::SeriesSamples;
pub use scan::{SampleScan, ScanResult};

use crate::columnar;
use crate::config::StoreConfig;
use crate::error::{Result, StorageError};
use crate::manifest::Manifest;
use crate::memtable::{MemSnapshot, MemoryBudget, Memtable};
use crate::model::{LogRecord, MetricBatch, SeriesDef, SpanRecord};
use crate::segment::Segment;
use crate::series::SeriesCatalog;
use crate::types::{Lsn, SeriesId, Signal, TenantId, UnixNanos};
use crate::wal::{self, FsyncPolicy, Wal};

type TableKey = (TenantId, Signal);

/// What one tenant holds of one signal ([`Store::extent`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extent {
    /// The signal.
    pub signal: Signal,
    /// Rows, flushed or not.
    pub rows: u64,
    /// Of those, rows not yet in a segment.
    pub unflushed_rows: u64,
    /// Live segments.
    pub segments: usize,
    /// Earliest row time; `None` when there are no rows.
    pub min_time: Option<UnixNanos>,
    /// Latest row time.
    pub max_time: Option<UnixNanos>,
}

/// Memtables frozen for one flush; readable until their segments are installed.
#[derive(Debug)]
struct FrozenSet {
    tables: Vec<(TableKey, MemSnapshot, usize)>,
    /// Every WAL record at or below this LSN is in these (or earlier) memtables.
    checkpoint: Lsn,
}

struct State {
    next_lsn: Lsn,
    active: HashMap<TableKey, Memtable>,
    frozen: Vec<Arc<FrozenSet>>,
    segments: HashMap<TableKey, Vec<Arc<Segment>>>,
    manifest: Manifest,
    catalogs: HashMap<TenantId, SeriesCatalog>,
    closed: bool,
}

/// Counters for monitoring, all monotonic.
#[derive(Debug, Default)]
struct Counters {
    appends: AtomicU64,
    rows_appended: AtomicU64,
    rejected_over_budget: AtomicU64,
    flushes: AtomicU64,
    flush_errors: AtomicU64,
    segments_written: AtomicU64,
    compactions: AtomicU64,
    retention_dropped_segments: AtomicU64,
    quarantined_segments: AtomicU64,
}

/// A point-in-time view of the store's counters and sizes.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StoreStats {
    /// Successful appends.
    pub appends: u64,
    /// Rows appended.
    pub rows_appended: u64,
    /// Appends refused for memory.
    pub rejected_over_budget: u64,
    /// Completed flushes.
    pub flushes: u64,
    /// Failed flush attempts.
    pub flush_errors: u64,
    /// Segments written by flushes and compactions.
    pub segments_written: u64,
    /// Compactions (merges) performed.
    pub compactions: u64,
    /// Segments dropped by retention.
    pub retention_dropped_segments: u64,
    /// Segments quarantined since open (including at open).
    pub quarantined_segments: u64,
    /// Bytes of unflushed data.
    pub memtable_bytes: usize,
    /// Memory budget.
    pub memory_budget_bytes: usize,
    /// Live segments.
    pub segments: usize,
    /// Bytes of live segments on disk.
    pub segment_bytes: u64,
    /// Bytes the open segments' indexes hold in memory (postings, attribute and trace-id
    /// blooms).
    pub segment_index_bytes: usize,
    /// Bytes of rollup rows cached in memory (process-wide, at most
    /// [`crate::rollup::CACHE_BYTES`]).
    pub rollup_cache_bytes: usize,
    /// Bytes of searched log segments' token dictionaries kept in memory (process-wide, at
    /// most [`crate::text_index::dict_cache::CACHE_BYTES`]).
    pub token_dictionary_cache_bytes: usize,
    /// Bytes of rows held by running scans and results not yet dropped.
    pub scan_memory_bytes: usize,
    /// Their budget ([`crate::StoreConfig::scan_memory_bytes`]).
    pub scan_memory_budget_bytes: usize,
    /// Rows in live segments.
    pub segment_rows: u64,
    /// WAL statistics.
    pub wal: wal::WalStats,
}

pub(crate) struct Inner {
    root: PathBuf,
    config: StoreConfig,
    wal: Wal,
    state: Mutex<State>,
    /// Serialises manifest commits (flush, compaction, retention, quarantine): see `commit`.
    commit: Mutex<()>,
    /// One flush at a time (flushes take frozen memtables in order).
    flushing: Mutex<()>,
    /// One compaction pass at a time (passes would pick the same segments).
    compacting: Mutex<()>,
    budget: MemoryBudget,
    /// Rows held by running scans and their results.
    scan_memory: Arc<crate::scan_memory::ScanMemoryPool>,
    counters: Counters,
    /// Wakes the store thread: flush on size, fsync, retention.
    wake: background::Wakeup,
    /// Wakes the compaction thread after a flush.
    compact_wake: background::Wakeup,
    /// Told of sample changes that can change answers.
    observers: observer::Observers,
    shutdown: AtomicBool,
    _lock_file: File,
}

/// An open data directory. Cheap to share: clone the `Arc`.
pub struct Store {
    inner: Arc<Inner>,
    background: Mutex<Vec<std::thread::JoinHandle<()>>>,
    report: OpenReport,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("root", &self.inner.root)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (or creates) the data directory at `root`: takes its lock, loads the manifest,
    /// verifies and opens segments (quarantining damaged ones), deletes leftovers of interrupted
    /// operations, and replays the WAL. See [`Store::open_report`] for what was found.
    pub fn open(root: impl AsRef<Path>, config: StoreConfig) -> Result<Self> {
        let inner = recovery::open(root.as_ref(), config)?;
        let (inner, report) = inner;
        let inner = Arc::new(inner);
        let store = Self {
            background: Mutex::new(Vec::new()),
            report,
            inner: inner.clone(),
        };
        if inner.config.background {
            *store.background.lock() = background::spawn(inner)?;
        }
        Ok(store)
    }

    /// What opening found: replayed records, truncated WAL bytes, quarantined segments.
    pub fn open_report(&self) -> &OpenReport {
        &self.report
    }

    /// The data directory.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// The configuration in force.
    pub fn config(&self) -> &StoreConfig {
        &self.inner.config
    }

    /// Now, from the store's clock ([`StoreConfig::clock`]): the one clock of every reader of
    /// "now" above the store, so a test that injects a clock moves all of them.
    pub fn now(&self) -> UnixNanos {
        self.inner.config.clock.now()
    }

    /// Appends spans; returns once durable under the configured fsync policy.
    pub fn append_spans(&self, tenant: &TenantId, spans: &[SpanRecord]) -> Result<()> {
        if spans.is_empty() {
            return Ok(());
        }
        let batch = columnar::spans_to_batch(spans)?;
        self.inner.append(tenant, Signal::Spans, batch, Vec::new())
    }

    /// Refuses with [`StorageError::OverBudget`] (and its retry hint) when an append of about
    /// `bytes` of rows would not fit in the memory budget now; reserves nothing. Ingest asks
    /// before decoding a request, so that while flushes catch up a refusal costs next to
    /// nothing and leaves the CPU to them; the append itself checks again exactly.
    pub fn check_memory(&self, bytes: usize) -> Result<()> {
        let checked = self
            .inner
            .budget
            .check(bytes, self.inner.config.retry_after);
        if checked.is_err() {
            self.inner
                .counters
                .rejected_over_budget
                .fetch_add(1, Ordering::Relaxed);
            self.inner.notify();
        }
        checked
    }

    /// Appends log records; returns once durable.
    pub fn append_logs(&self, tenant: &TenantId, logs: &[LogRecord]) -> Result<()> {
        if logs.is_empty() {
            return Ok(());
        }
        let batch = columnar::logs_to_batch(logs)?;
        self.inner.append(tenant, Signal::Logs, batch, Vec::new())
    }

    /// Appends metric samples with the series they use; returns once durable. Every sample's
    /// series must be in `batch.series` or already known, and each definition's id must match
    /// its name and labels; otherwise nothing is written.
    pub fn append_metrics(&self, tenant: &TenantId, batch: &MetricBatch) -> Result<()> {
        if batch.samples.is_empty() {
            return Ok(());
        }
        let mut defs: rustc_hash::FxHashMap<SeriesId, &SeriesDef> = Default::default();
        for d in &batch.series {
            if SeriesDef::compute_id(&d.metric_name, &d.labels) != d.id {
                return Err(StorageError::InvalidInput(format!(
                    "series {:#x} ({}) does not match its name and labels",
                    d.id.0, d.metric_name
                )));
            }
            if d.labels.windows(2).any(|w| w[0].0 >= w[1].0) {
                return Err(StorageError::InvalidInput(format!(
                    "labels of series {} are not sorted and unique",
                    d.metric_name
                )));
            }
            defs.insert(d.id, d);
        }
        // Every definition in the batch is registered (even if no sample uses it yet), and each
        // referenced id without one must already be known.
        let mut used: Vec<SeriesDef> = defs.values().map(|d| (*d).clone()).collect();
        let mut seen: rustc_hash::FxHashSet<SeriesId> = defs.keys().copied().collect();
        for s in &batch.samples {
            if seen.insert(s.series) {
                // A placeholder: the append fails with UnknownSeries unless the store knows it.
                used.push(SeriesDef {
                    id: s.series,
                    metric_name: String::new(),
                    kind: Default::default(),
                    unit: String::new(),
                    help: String::new(),
                    labels: Vec::new(),
                });
            }
        }
        let rows = columnar::samples_to_batch(&batch.samples)?;
        let result = self.inner.append(tenant, Signal::Samples, rows, used);
        // Told even when the append failed: a failure after the memtable insert (the WAL sync)
        // leaves the rows visible.
        self.inner.observers.written(tenant, || {
            batch.samples.iter().map(|s| s.timestamp_ms).min()
        });
        result
    }

    /// Registers an observer of sample changes ([`SampleObserver`]): told of every append
    /// and removal from now on.
    pub fn observe_samples(&self, observer: Arc<dyn SampleObserver>) {
        self.inner.observers.add(observer);
    }

    /// Reads rows; see [`crate::ScanRequest`].
    pub fn scan(&self, req: &crate::ScanRequest) -> Result<ScanResult> {
        scan::scan(&self.inner, req)
    }

    /// Reads samples one series at a time: every series `req` selects with its samples in the
    /// range, each sorted by time with one value per timestamp. Fails with
    /// [`StorageError::TooManySamples`] once more than `max_samples` rows were read.
    pub fn scan_samples(
        &self,
        req: &crate::ScanRequest,
        max_samples: usize,
    ) -> Result<scan::SampleScan> {
        scan::scan_samples(&self.inner, req, max_samples)
    }

    /// Every span of a trace, decoded (any order).
    pub fn trace(&self, tenant: &TenantId, trace_id: crate::TraceId) -> Result<Vec<SpanRecord>> {
        let req = crate::ScanRequest::new(tenant.clone(), Signal::Spans, crate::TimeRange::ALL)
            .with(crate::Predicate::TraceId(trace_id));
        let res = self.scan(&req)?;
        let mut out = Vec::new();
        for b in &res.batches {
            out.extend(columnar::spans_from_batch(b)?);
        }
        Ok(out)
    }

    /// Which of `ids` `tenant` has defined (one answer per id, in order). Series are never
    /// forgotten, so a `true` stays true: an append may reference those ids without their
    /// definitions.
    pub fn known_series(&self, tenant: &TenantId, ids: &[SeriesId]) -> Vec<bool> {
        let state = self.inner.state.lock();
        match state.catalogs.get(tenant) {
            Some(c) => ids.iter().map(|&id| c.contains(id)).collect(),
            None => vec![false; ids.len()],
        }
    }

    /// Series of `tenant` whose labels satisfy every matcher.
    pub fn series(&self, tenant: &TenantId, matchers: &[crate::Matcher]) -> Vec<Arc<SeriesDef>> {
        let state = self.inner.state.lock();
        let refs: Vec<&crate::Matcher> = matchers.iter().collect();
        state
            .catalogs
            .get(tenant)
            .map(|c| c.select(&refs))
            .unwrap_or_default()
    }

    /// Of `candidates` (series ids in the caller's order; repeats allowed), the ones `tenant`
    /// does not know yet and that would not fit under `max_series_per_tenant` if the unknown
    /// ones were admitted first come, first served. Callers that want per-series admission
    /// drop these series' samples and append the rest; the answer is a snapshot, so a
    /// concurrent writer can still make that append fail with
    /// [`StorageError::CardinalityLimit`], after which asking again converges.
    pub fn series_over_limit(&self, tenant: &TenantId, candidates: &[SeriesId]) -> Vec<SeriesId> {
        let state = self.inner.state.lock();
        let known = state.catalogs.get(tenant);
        let mut room = self
            .inner
            .config
            .max_series_per_tenant
            .saturating_sub(known.map_or(0, SeriesCatalog::len));
        let mut seen: HashSet<SeriesId> = HashSet::new();
        let mut over = Vec::new();
        for &id in candidates {
            if known.is_some_and(|c| c.contains(id)) || !seen.insert(id) {
                continue;
            }
            if room > 0 {
                room -= 1;
            } else {
                over.push(id);
            }
        }
        over
    }

    /// Label names known for `tenant`, sorted.
    pub fn label_names(&self, tenant: &TenantId) -> Vec<String> {
        let state = self.inner.state.lock();
        state
            .catalogs
            .get(tenant)
            .map(|c| c.label_names())
            .unwrap_or_default()
    }

    /// Values of label `name` for `tenant`, sorted.
    pub fn label_values(&self, tenant: &TenantId, name: &str) -> Vec<String> {
        let state = self.inner.state.lock();
        state
            .catalogs
            .get(tenant)
            .map(|c| c.label_values(name))
            .unwrap_or_default()
    }

    /// What `tenant` holds of each signal: rows (in segments, and not yet flushed), the
    /// segments, and the time range of the rows (by span start, log time, sample time). Read
    /// from segment metadata and the memtables' batch bounds: no file is opened.
    pub fn extent(&self, tenant: &TenantId) -> Vec<Extent> {
        let state = self.inner.state.lock();
        [Signal::Spans, Signal::Logs, Signal::Samples]
            .into_iter()
            .map(|signal| {
                let key = (tenant.clone(), signal);
                let mut e = Extent {
                    signal,
                    rows: 0,
                    segments: 0,
                    unflushed_rows: 0,
                    min_time: None,
                    max_time: None,
                };
                let mut widen = |min: UnixNanos, max: UnixNanos| {
                    e.min_time = Some(e.min_time.map_or(min, |m| m.min(min)));
                    e.max_time = Some(e.max_time.map_or(max, |m| m.max(max)));
                };
                for seg in state.segments.get(&key).into_iter().flatten() {
                    let m = seg.meta();
                    widen(m.min_time, m.max_time);
                    e.rows += m.rows;
                    e.segments += 1;
                }
                // Frozen memtables are readable until their segments are installed, under the
                // same lock: a row is counted in one place only.
                let frozen = state.frozen.iter().flat_map(|f| {
                    f.tables
                        .iter()
                        .filter(|(k, _, _)| *k == key)
                        .flat_map(|(_, snap, _)| snap.batches.iter())
                });
                let active = state
                    .active
                    .get(&key)
                    .into_iter()
                    .flat_map(|m| m.batches().iter());
                for b in frozen.chain(active) {
                    widen(b.min_time, b.max_time);
                    e.unflushed_rows += b.batch.num_rows() as u64;
                }
                e.rows += e.unflushed_rows;
                e
            })
            .collect()
    }

    /// Tenants with any data.
    pub fn tenants(&self) -> Vec<TenantId> {
        let state = self.inner.state.lock();
        let mut t: Vec<TenantId> = state
            .active
            .keys()
            .chain(state.segments.keys())
            .map(|(t, _)| t.clone())
            .collect();
        t.sort();
        t.dedup();
        t
    }

    /// Flushes every memtable to segments now.
    pub fn flush(&self) -> Result<()> {
        flush::flush(&self.inner)
    }

    /// Merges small segments now; returns how many merges ran.
    pub fn compact(&self) -> Result<usize> {
        maintenance::compact(&self.inner)
    }

    /// Applies retention now; returns how many segments were dropped.
    pub fn apply_retention(&self) -> Result<usize> {
        maintenance::apply_retention(&self.inner)
    }

    /// Live segments' metadata.
    pub fn segments(&self) -> Vec<crate::SegmentMeta> {
        self.inner.state.lock().manifest.segments.clone()
    }

    /// Paths of the Parquet files of live segments of a tenant and signal (for external engines).
    pub fn parquet_files(&self, tenant: &TenantId, signal: Signal) -> Vec<PathBuf> {
        let state = self.inner.state.lock();
        state
            .segments
            .get(&(tenant.clone(), signal))
            .map(|v| v.iter().map(|s| s.data_path()).collect())
            .unwrap_or_default()
    }

    /// Counters and sizes.
    pub fn stats(&self) -> StoreStats {
        let c = &self.inner.counters;
        let state = self.inner.state.lock();
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StoreStats {
            appends: l(&c.appends),
            rows_appended: l(&c.rows_appended),
            rejected_over_budget: l(&c.rejected_over_budget),
            flushes: l(&c.flushes),
            flush_errors: l(&c.flush_errors),
            segments_written: l(&c.segments_written),
            compactions: l(&c.compactions),
            retention_dropped_segments: l(&c.retention_dropped_segments),
            quarantined_segments: l(&c.quarantined_segments),
            memtable_bytes: self.inner.budget.used(),
            memory_budget_bytes: self.inner.budget.limit(),
            segments: state.manifest.segments.len(),
            segment_bytes: state.manifest.segments.iter().map(|s| s.bytes()).sum(),
            segment_index_bytes: state
                .segments
                .values()
                .flatten()
                .map(|s| s.index_bytes())
                .sum(),
            rollup_cache_bytes: crate::rollup::cached_bytes(),
            token_dictionary_cache_bytes: crate::text_index::dict_cache::cached_bytes(),
            scan_memory_bytes: self.inner.scan_memory.held(),
            scan_memory_budget_bytes: self.inner.scan_memory.budget(),
            segment_rows: state.manifest.segments.iter().map(|s| s.rows).sum(),
            wal: self.inner.wal.stats(),
        }
    }

    /// Flushes, fsyncs and stops the background threads. Appends fail afterwards.
    pub fn close(&self) -> Result<()> {
        self.stop_background();
        let result = flush::flush(&self.inner);
        let sync = self.inner.wal.sync_now();
        self.inner.state.lock().closed = true;
        result.and(sync)
    }
}

impl Store {
    /// Tells the background threads to stop and waits for them (a merge under way finishes).
    fn stop_background(&self) {
        self.inner.shutdown.store(true, Ordering::Release);
        self.inner.notify();
        self.inner.compact_wake.notify();
        for h in std::mem::take(&mut *self.background.lock()) {
            let _ = h.join();
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.stop_background();
    }
}

impl Inner {
    fn notify(&self) {
        self.wake.notify();
    }

    /// Every live segment, of every tenant and signal.
    fn live_segments(&self) -> Vec<Arc<Segment>> {
        let state = self.state.lock();
        state.segments.values().flatten().cloned().collect()
    }

    /// Appends one batch: WAL, memtable, durability.
    fn append(
        &self,
        tenant: &TenantId,
        signal: Signal,
        batch: RecordBatch,
        series: Vec<SeriesDef>,
    ) -> Result<()> {
        let rows = batch.num_rows();
        let (min_time, max_time) = crate::segment::time_bounds(signal, &batch)?;
        // Times before 1970 or past 2262 (where nanoseconds leave i64) are refused: partition
        // arithmetic and every reader assume the range.
        if min_time.0 < 0 || max_time.0 == i64::MAX {
            return Err(StorageError::InvalidInput(format!(
                "{signal} timestamps must lie between 1970 and 2262, got {}..{} ns",
                min_time.0, max_time.0
            )));
        }
        // A definition costs about this much until flushed; a placeholder (an id the catalog
        // should already hold) nothing.
        let defined = series.iter().filter(|d| !d.metric_name.is_empty()).count();
        let bytes = columnar::batch_bytes(&batch) + defined * 128;
        if let Err(e) = self.budget.reserve(bytes, self.config.retry_after) {
            self.counters
                .rejected_over_budget
                .fetch_add(1, Ordering::Relaxed);
            self.notify();
            return Err(e);
        }
        let rows_ipc = match wal::entry::ipc_bytes(&batch) {
            Ok(b) => b,
            Err(e) => {
                self.budget.release(bytes);
                return Err(e);
            }
        };
        let (lsn, table_bytes) = {
            let mut state = self.state.lock();
            match self.append_locked(
                &mut state,
                tenant,
                signal,
                batch,
                series,
                &rows_ipc,
                (min_time, max_time),
                bytes,
            ) {
                Ok(done) => done,
                Err(e) => {
                    drop(state);
                    self.budget.release(bytes);
                    return Err(e);
                }
            }
        };
        if self.config.fsync == FsyncPolicy::Always {
            self.wal.wait_durable(lsn)?;
        }
        self.counters.appends.fetch_add(1, Ordering::Relaxed);
        self.counters
            .rows_appended
            .fetch_add(rows as u64, Ordering::Relaxed);
        if self.budget.used() >= self.config.flush_threshold_bytes
            || self.config.memtable_full(signal, table_bytes)
        {
            self.notify();
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn append_locked(
        &self,
        state: &mut State,
        tenant: &TenantId,
        signal: Signal,
        batch: RecordBatch,
        series: Vec<SeriesDef>,
        rows_ipc: &[u8],
        (min_time, max_time): (UnixNanos, UnixNanos),
        bytes: usize,
    ) -> Result<(Lsn, usize)> {
        if state.closed {
            return Err(StorageError::Closed);
        }
        // Series: the ones not yet known must be defined here; they go into the same record.
        let mut new_series: Vec<Arc<SeriesDef>> = Vec::new();
        if signal == Signal::Samples {
            let known = state.catalogs.get(tenant);
            for d in series {
                if known.is_some_and(|c| c.contains(d.id)) {
                    continue;
                }
                if d.metric_name.is_empty() {
                    return Err(StorageError::UnknownSeries(d.id.0));
                }
                new_series.push(Arc::new(d));
            }
            let have = known.map_or(0, SeriesCatalog::len);
            if have + new_series.len() > self.config.max_series_per_tenant {
                return Err(StorageError::CardinalityLimit {
                    tenant: tenant.to_string(),
                    limit: self.config.max_series_per_tenant,
                });
            }
        }
        let series_ipc = if new_series.is_empty() {
            Vec::new()
        } else {
            let refs: Vec<&SeriesDef> = new_series.iter().map(|d| d.as_ref()).collect();
            wal::entry::ipc_bytes(&columnar::series_to_batch(&refs)?)?
        };
        let mut payload = Vec::with_capacity(rows_ipc.len() + series_ipc.len() + 64);
        wal::entry::encode_header(tenant, signal, &series_ipc, &mut payload);
        payload.extend_from_slice(rows_ipc);
        let lsn = state.next_lsn;
        self.wal.append(lsn, &payload)?;
        state.next_lsn = Lsn(lsn.0 + 1);
        if !new_series.is_empty() {
            let cat = state.catalogs.entry(tenant.clone()).or_default();
            for d in new_series {
                cat.insert(d);
            }
        }
        let table = state
            .active
            .entry((tenant.clone(), signal))
            .or_insert_with(|| Memtable::new(signal));
        table.insert(batch, min_time, max_time, bytes, lsn)?;
        Ok((lsn, table.bytes()))
    }
}
