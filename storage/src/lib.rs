//! # sightline-storage
//!
//! The embedded time-series store behind Sightline: spans, logs and metric samples of many
//! tenants in one data directory.
//!
//! **Owns:** the on-disk format (WAL, Parquet segments, postings, text indexes, manifest), the
//! Arrow schemas of the three signals, durability and crash recovery, memtables and the memory
//! budget, flush, compaction and retention, and the scan API that prunes by time, postings,
//! bloom filters and text search and returns Arrow batches merged with unflushed rows.
//!
//! **Does not:** speak any network protocol, parse OTLP or PromQL, aggregate, or compute LLM
//! quality signals. Those live in `server`, `query` and `detect`, which depend on this crate and
//! never touch its files directly.
//!
//! Entry point: [`Store::open`], then [`Store::append_spans`] / [`Store::append_logs`] /
//! [`Store::append_metrics`] and [`Store::scan`].

pub mod clock;
pub mod columnar;
pub mod config;
pub mod deadline;
pub mod error;
pub mod fsutil;
pub mod manifest;
pub mod memtable;
pub mod model;
pub mod postings;
pub mod predicate;
pub mod rollup;
pub mod schema;
pub mod segment;
pub mod series;
pub mod store;
pub mod text_index;
pub mod types;
pub mod wal;

pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{CompactionConfig, RetentionConfig, StoreConfig};
pub use deadline::Deadline;
pub use error::{Result, StorageError};
pub use manifest::SegmentMeta;
pub use model::{
    AttrValue, Attributes, GenAiFields, LogRecord, MetricBatch, MetricKind, QualityFields, Sample,
    SeriesDef, SpanEvent, SpanKind, SpanLink, SpanRecord, StatusCode,
};
pub use predicate::{MAX_ANY_OF, MatchOp, Matcher, Predicate, ScanRequest};
pub use segment::{ScanStats, SegmentWriteOptions};
pub use store::{OpenReport, ScanResult, Store, StoreStats};
pub use types::{
    Lsn, SegmentId, SeriesId, Signal, SpanId, TenantId, TimeRange, TraceId, UnixNanos,
};
pub use wal::FsyncPolicy;
