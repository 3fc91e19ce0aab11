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
//!
//! ## Modules
//!
//! | module | holds |
//! |---|---|
//! | `types` | newtypes: `TenantId`, `TraceId`, `SpanId`, `UnixNanos`, `SeriesId`, `Lsn`, `SegmentId`, `Signal`, `TimeRange` |
//! | `model` | rows callers append: `SpanRecord`, `LogRecord`, `SeriesDef` + `Sample` (`MetricBatch`), `AttrValue` |
//! | `schema` | the Arrow schemas of spans, logs, samples and the series catalog, defined once; promoted GenAI columns |
//! | `columnar` (+`columnar/decode`, `columnar/take`) | rows <-> Arrow `RecordBatch`; row reordering that takes nested list/map columns through child indices (arrow's `take` copies them row by row) |
//! | `wal` (+`wal/frame`, `wal/entry`, `wal/io`) | segmented write-ahead log, record framing, group commit, replay, truncation of torn tails; every record written at the offset the log tracks, a failed undo poisons; `wal/io::WalIo` is the seam the fault-injection tests (`wal/fault_tests`) replace |
//! | `memtable` | unflushed batches per tenant+signal, the global `MemoryBudget`, in-memory text index for unflushed logs |
//! | `segment` (+`segment/writer`, `segment/scan`, `segment/page_runs`, `segment/page_reader`) | immutable Parquet segments: sort, encode, postings (built column-wise, grouped by value), text index, checksums; open+verify; pruned scans (`page_runs`: the pages a trace lookup or a time range needs, from the page index; `page_reader`: pages read with `pread` and inflated by one zstd decompressor per thread) |
//! | `postings` | per-segment `key=value -> roaring bitmap` inverted index, and the per-key policy moving high-cardinality keys to `attr_bloom` by measured size |
//! | `attr_bloom` | per-segment, per-block (1,024-row) bloom filters of the `key=value` pairs of the keys postings leave to them |
//! | `rollup` | per-segment span rollups: spans pre-aggregated per minute by service, span name, kind, status, GenAI operation, provider and request model (counts, time extent, count/sum/min/max of every numeric GenAI/quality column), and the rule deciding when a segment may answer from them; `rollup/view`: `RollupView`, the one reader of the rollup rows a scan returns (weights, status, durations) |
//! | `text_index` (+`text_index/{tokens,terms,file,query,bounds}`) | full-text search of log bodies: the tokenizer, token -> rows indexes (a `text.idx` file per log segment, in RAM for memtables), queries (tantivy's query grammar, answered from an index, phrases checked against bodies), query length, nesting and clause bounds checked before parsing |
//! | `manifest` | the list of live segments + WAL checkpoint, replaced atomically |
//! | `series` | per-tenant series catalog with a label index for matchers |
//! | `predicate` | `ScanRequest`, `Predicate`, `Matcher` and their exact evaluation on batches |
//! | `store` (+`store/{recovery,flush,commit,maintenance,scan,background,observer}`) | the `Store`: open/recover, append, flush (partitions on `flush_threads` threads), manifest commits (one lock, short), size-tiered compaction (own thread), retention, quarantine, scans (segments pruned first, then the row groups left cut into parts of similar size read on `scan_threads` threads, so one large segment uses every thread; results in segment order), background threads (store, compaction); `store/observer`: the `SampleObserver`s (query caches) told of every sample append and removal that can change an answer |
//! | `scan_memory` | the rows running scans hold, counted against `StoreConfig::scan_memory_bytes`; a scan past it fails instead of growing |
//! | `deadline` | `Deadline`: a cooperative deadline plus cancel flag; `ScanRequest::deadline` is checked per segment, row group, batch and series matched |
//! | `config`, `clock`, `fsutil`, `error` | configuration, injectable clock (`Store::now` is every server component's "now"), durable and owner-only (0600/0700) file helpers, `StorageError` |

pub mod attr_bloom;
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
pub mod scan_memory;
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
pub use store::{
    Extent, OpenReport, SampleObserver, SampleScan, ScanResult, SeriesSamples, Store, StoreStats,
};
pub use types::{
    Lsn, SegmentId, SeriesId, Signal, SpanId, TenantId, TimeRange, TraceId, UnixNanos,
};
pub use wal::FsyncPolicy;
