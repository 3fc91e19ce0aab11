//! Store configuration: durability, memory, flush, partitioning, compaction and retention.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, SystemClock};
use crate::segment::SegmentWriteOptions;
use crate::types::TenantId;
use crate::wal::FsyncPolicy;
use crate::wal::io::{OsWalIo, WalIo};

/// When small segments are merged.
#[derive(Clone, Debug)]
pub struct CompactionConfig {
    /// Run compaction after flushes (and from the background thread).
    pub enabled: bool,
    /// Merge a partition once it has at least this many small segments.
    pub min_segments: usize,
    /// Segments with at least this many rows are not merged further, and one merge reads at
    /// most this many rows.
    pub target_rows: u64,
    /// One merge reads at most this many bytes of rows decoded in memory (its working memory is
    /// about twice that: the rows and their sorted copy). Metric samples merge a range of
    /// series at a time instead (see `sample_target_rows`).
    pub max_merge_bytes: u64,
    /// `target_rows` for metric samples. A sample merge reads its inputs a range of series
    /// (about a million rows) at a time, so its working memory does not grow with its size, and
    /// a day partition can end in a few large segments: each series' samples of the day in a
    /// few runs, its pages full and a query's reads few.
    pub sample_target_rows: u64,
    /// Rows (of all inputs together) a sample merge reads, orders and writes at a time, at
    /// least one series' rows: its working memory, about 48 bytes a row.
    pub sample_merge_slice_rows: u64,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            min_segments: 4,
            target_rows: 4_000_000,
            max_merge_bytes: 256 << 20,
            sample_target_rows: 100_000_000,
            sample_merge_slice_rows: 1 << 20,
        }
    }
}

/// How long data is kept.
#[derive(Clone, Debug, Default)]
pub struct RetentionConfig {
    /// Time to live of every tenant without an override (`None`: keep forever).
    pub default_ttl: Option<Duration>,
    /// Per-tenant overrides.
    pub per_tenant: BTreeMap<TenantId, Duration>,
}

impl RetentionConfig {
    /// The TTL that applies to `tenant`.
    pub fn ttl(&self, tenant: &TenantId) -> Option<Duration> {
        self.per_tenant.get(tenant).copied().or(self.default_ttl)
    }
}

/// Everything a [`crate::Store`] can be told.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// WAL durability policy.
    pub fsync: FsyncPolicy,
    /// Bytes of unflushed data (all tenants and signals) before appends are refused.
    pub memory_budget_bytes: usize,
    /// Bytes of rows all running scans together may hold (decoded segment rows, memtable rows,
    /// rollup rows, until their results are dropped); a scan that would pass it fails with
    /// [`crate::StorageError::ScanMemory`].
    pub scan_memory_bytes: usize,
    /// A memtable is flushed when all memtables together pass this many bytes.
    pub flush_threshold_bytes: usize,
    /// Memtables are flushed when one of metric samples passes this many bytes, before the
    /// total does: a query reads a memtable by filtering every row of it (remote write
    /// interleaves all series, a sample or a few per series per request), while a sample
    /// flush is a counting sort by series, so recent samples are read faster from segments.
    pub sample_flush_threshold_bytes: usize,
    /// A memtable is flushed when it is older than this.
    pub flush_interval: Duration,
    /// Length of a time partition of spans and logs.
    pub partition_duration: Duration,
    /// Length of a time partition of metric samples. Longer than for spans: a series' samples
    /// stay contiguous over more points, which is what makes their delta encoding small.
    pub sample_partition_duration: Duration,
    /// WAL files are rotated past this size.
    pub wal_file_bytes: u64,
    /// Compaction policy.
    pub compaction: CompactionConfig,
    /// Retention policy.
    pub retention: RetentionConfig,
    /// Most metric series one tenant may have.
    pub max_series_per_tenant: usize,
    /// Parquet layout.
    pub segment: SegmentWriteOptions,
    /// Start a background thread that flushes, compacts and applies retention.
    pub background: bool,
    /// Back-off suggested to clients when the memory budget is exhausted.
    pub retry_after: Duration,
    /// Source of time for retention.
    pub clock: Arc<dyn Clock>,
    /// Threads one scan may use to read segments in parallel (1: read on the caller's thread).
    pub scan_threads: usize,
    /// Threads a flush writes its partitions' segments on (1: one after the other).
    pub flush_threads: usize,
    /// The WAL's file operations (writes at offsets, truncation, fsync). [`OsWalIo`] everywhere
    /// but in fault-injection tests, which pass an implementation that fails on cue.
    #[doc(hidden)]
    pub wal_io: Arc<dyn WalIo>,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            fsync: FsyncPolicy::Always,
            memory_budget_bytes: 1 << 30,
            scan_memory_bytes: 2 << 30,
            flush_threshold_bytes: 256 << 20,
            sample_flush_threshold_bytes: 64 << 20,
            flush_interval: Duration::from_secs(300),
            partition_duration: Duration::from_secs(3600),
            sample_partition_duration: Duration::from_secs(86_400),
            wal_file_bytes: 128 << 20,
            compaction: CompactionConfig::default(),
            retention: RetentionConfig::default(),
            max_series_per_tenant: 1_000_000,
            segment: SegmentWriteOptions::default(),
            background: true,
            retry_after: Duration::from_secs(1),
            clock: Arc::new(SystemClock),
            scan_threads: std::thread::available_parallelism()
                .map(|n| n.get().min(4))
                .unwrap_or(1),
            flush_threads: std::thread::available_parallelism()
                .map(|n| n.get().min(4))
                .unwrap_or(1),
            wal_io: Arc::new(OsWalIo),
        }
    }
}

impl StoreConfig {
    /// Whether one memtable of `signal` holding `bytes` is flushed on its own account, before
    /// all memtables together reach [`StoreConfig::flush_threshold_bytes`].
    pub fn memtable_full(&self, signal: crate::types::Signal, bytes: usize) -> bool {
        signal == crate::types::Signal::Samples && bytes >= self.sample_flush_threshold_bytes
    }

    /// Partition length of `signal` in nanoseconds (at least one second).
    pub fn partition_nanos(&self, signal: crate::types::Signal) -> i64 {
        let d = match signal {
            crate::types::Signal::Samples => self.sample_partition_duration,
            _ => self.partition_duration,
        };
        i64::try_from(d.as_nanos())
            .unwrap_or(i64::MAX)
            .max(1_000_000_000)
    }
}
