//! Immutable segments: one directory per flush or merge, holding plain Parquet plus indexes.
//!
//! ```text
//! data/<tenant>/<signal>/<partition>/<segment-id>/
//!     data.parquet    rows, sorted (spans: trace id, start; logs: time; samples: series, time)
//!     series.parquet  samples only: the series present (id, name, kind, unit, help, labels)
//!     postings.bin    key=value -> roaring row bitmaps
//!     attr_blooms.bin per block of 1,024 rows, a bloom of the key=value pairs of high-cardinality keys
//!     rollup.parquet  spans only: per-minute aggregates by service, model, status... (rollup.rs)
//!     rollup_durations.parquet   spans only: the durations those aggregates summarise, sorted
//!     rollup_hourly.parquet      spans only: per-hour aggregates by every key, where the
//!                                minute rollup leaves one out
//!     text.idx        logs only: token -> rows index of bodies (text_index/file.rs)
//!     meta.json       SegmentMeta (time range, rows, file checksums)
//! ```
//!
//! Opening a segment verifies every file against the checksums in the manifest; a mismatch is
//! reported as corruption and the store quarantines the segment.

mod page_reader;
mod page_runs;
mod rollup_file;
pub(crate) mod scan;
mod series_rows;
mod writer;

use rollup_file::RollupFile;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use arrow_array::{
    Array, ArrayRef, RecordBatch, TimestampMillisecondArray, TimestampNanosecondArray,
};
use arrow_buffer::ScalarBuffer;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::arrow_reader::RowSelection;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::bloom_filter::Sbbf;
use parquet::file::metadata::PageIndexPolicy;

pub use scan::ScanStats;
pub use writer::SegmentWriteOptions;
#[cfg(test)]
pub(crate) use writer::sort_samples;
pub(crate) use writer::{SampleSegmentWriter, segment_order, sort_key_columns, write_segment};

use crate::attr_bloom::{ATTR_BLOOMS_FILE, AttrBlooms};
use crate::error::{IoContext, Result, StorageError};
use crate::fsutil;
use crate::manifest::{self, SegmentMeta};
use crate::model::SeriesDef;
use crate::postings::Postings;
use crate::schema::{self, col};
use crate::text_index::{self, Candidates, TEXT_INDEX_FILE, TextQuery, TokenIndexFile};
use crate::types::{Signal, UnixNanos};

/// Parquet rows file.
pub const DATA_FILE: &str = "data.parquet";
/// Series catalog file of sample segments.
pub const SERIES_FILE: &str = "series.parquet";
/// Postings file.
pub const POSTINGS_FILE: &str = "postings.bin";
/// Segment metadata file.
pub const META_FILE: &str = "meta.json";

/// The time-column values of a batch, in the column's own unit.
pub(crate) fn time_values(signal: Signal, batch: &RecordBatch) -> Result<ScalarBuffer<i64>> {
    let name = schema::time_column(signal);
    let c = batch
        .column_by_name(name)
        .ok_or_else(|| StorageError::InvalidInput(format!("batch lacks {name}")))?;
    if let Some(a) = c.as_any().downcast_ref::<TimestampNanosecondArray>() {
        return Ok(a.values().clone());
    }
    if let Some(a) = c.as_any().downcast_ref::<TimestampMillisecondArray>() {
        return Ok(a.values().clone());
    }
    Err(StorageError::InvalidInput(format!(
        "{name} has type {}",
        c.data_type()
    )))
}

/// Smallest and largest time-column value of a batch, in nanoseconds.
pub(crate) fn time_bounds(signal: Signal, batch: &RecordBatch) -> Result<(UnixNanos, UnixNanos)> {
    let ts = time_values(signal, batch)?;
    let unit = schema::time_unit_nanos(signal);
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for &t in ts.iter() {
        lo = lo.min(t);
        hi = hi.max(t);
    }
    Ok((
        UnixNanos(lo.saturating_mul(unit)),
        UnixNanos(hi.saturating_mul(unit)),
    ))
}

/// An open segment with its indexes in memory.
pub struct Segment {
    meta: SegmentMeta,
    dir: PathBuf,
    root: PathBuf,
    parquet: ArrowReaderMetadata,
    /// Leaf (Parquet column) indexes of the time column and of `trace_id` (spans and logs).
    time_leaf: Option<usize>,
    trace_leaf: Option<usize>,
    postings: Postings,
    /// Logs: the token index of the bodies (`None` in log segments written before it).
    text: Option<TokenIndexFile>,
    /// Bloom filter of `trace_id` per row group (spans and logs).
    blooms: Vec<Option<Sbbf>>,
    /// Blooms of the `key=value` pairs of the keys the postings left to them, per row group.
    attr_blooms: Option<AttrBlooms>,
    /// Series present (samples).
    series: Vec<Arc<SeriesDef>>,
    /// The minute and hourly rollups (spans), and the durations file's metadata once opened.
    rollup: RollupFile,
    hourly: RollupFile,
    durations: OnceLock<ArrowReaderMetadata>,
    /// Samples: each series' row run, once a scan has asked for it.
    series_rows: OnceLock<Arc<series_rows::SeriesRows>>,
    /// Set once the manifest no longer names the segment; the directory is deleted when the last
    /// reader lets go.
    obsolete: AtomicBool,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

impl Segment {
    /// Opens and verifies the segment described by `meta` under data directory `root`.
    pub fn open(root: &Path, meta: SegmentMeta) -> Result<Self> {
        let dir = root.join(meta.relative_dir());
        for f in &meta.files {
            let path = dir.join(&f.name);
            let (crc, len) = match fsutil::file_crc(&path) {
                Ok(v) => v,
                Err(StorageError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    return Err(StorageError::corruption(path, "file missing"));
                }
                Err(e) => return Err(e),
            };
            if crc != f.crc32c || len != f.len {
                return Err(StorageError::corruption(
                    path,
                    format!(
                        "checksum mismatch: expected {} bytes crc {:08x}, found {len} bytes crc {crc:08x}",
                        f.len, f.crc32c
                    ),
                ));
            }
        }
        let data_path = dir.join(DATA_FILE);
        let file = std::fs::File::open(&data_path).at(&data_path)?;
        let parquet = ArrowReaderMetadata::load(
            &file,
            ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional),
        )
        .map_err(|e| StorageError::corruption(&data_path, e.to_string()))?;
        let expected = schema::of(meta.signal);
        if parquet.schema().fields() != expected.fields() {
            return Err(StorageError::corruption(
                &data_path,
                "schema differs from this build's schema",
            ));
        }
        let rows: i64 = parquet
            .metadata()
            .row_groups()
            .iter()
            .map(|r| r.num_rows())
            .sum();
        if rows as u64 != meta.rows {
            return Err(StorageError::corruption(
                &data_path,
                format!("{rows} rows, manifest says {}", meta.rows),
            ));
        }
        let postings_path = dir.join(POSTINGS_FILE);
        let postings = Postings::decode(
            &std::fs::read(&postings_path).at(&postings_path)?,
            &postings_path,
        )?;
        let text = if meta.signal == Signal::Logs
            && meta.files.iter().any(|f| f.name == TEXT_INDEX_FILE)
        {
            let path = dir.join(TEXT_INDEX_FILE);
            let idx = TokenIndexFile::open(&path)?;
            if u64::from(idx.rows()) != meta.rows {
                return Err(StorageError::corruption(
                    path,
                    format!(
                        "indexes {} rows, the segment holds {}",
                        idx.rows(),
                        meta.rows
                    ),
                ));
            }
            Some(idx)
        } else {
            None
        };
        let leaf = |name: &str| {
            parquet
                .parquet_schema()
                .columns()
                .iter()
                .position(|c| c.path().string() == name)
        };
        let time_leaf = leaf(schema::time_column(meta.signal));
        let trace_leaf = leaf(col::TRACE_ID);
        let mut blooms = Vec::new();
        if meta.signal != Signal::Samples {
            let col_idx = trace_leaf
                .ok_or_else(|| StorageError::corruption(&data_path, "no trace_id column"))?;
            let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(
                file.try_clone().at(&data_path)?,
                parquet.clone(),
            );
            for rg in 0..parquet.metadata().num_row_groups() {
                blooms.push(
                    builder
                        .get_row_group_column_bloom_filter(rg, col_idx)
                        .map_err(|e| StorageError::corruption(&data_path, e.to_string()))?,
                );
            }
        }
        let series = if meta.signal == Signal::Samples {
            let path = dir.join(SERIES_FILE);
            let file = std::fs::File::open(&path).at(&path)?;
            let reader = ParquetRecordBatchReaderBuilder::try_new(file)
                .and_then(|b| b.build())
                .map_err(|e| StorageError::corruption(&path, e.to_string()))?;
            let mut out = Vec::new();
            for batch in reader {
                let batch = batch.map_err(|e| StorageError::corruption(&path, e.to_string()))?;
                out.extend(
                    crate::columnar::series_from_batch(&batch)
                        .map_err(|e| StorageError::corruption(&path, e.to_string()))?
                        .into_iter()
                        .map(Arc::new),
                );
            }
            out
        } else {
            Vec::new()
        };
        let has = |name: &str| meta.files.iter().any(|f| f.name == name);
        let rollup = RollupFile::new(
            crate::rollup::ROLLUP_FILE,
            crate::rollup::SCHEMA.clone(),
            has(crate::rollup::ROLLUP_FILE),
        );
        let hourly = RollupFile::new(
            crate::rollup::HOURLY_FILE,
            crate::rollup::HOURLY_SCHEMA.clone(),
            has(crate::rollup::HOURLY_FILE),
        );
        let attr_blooms = if meta.files.iter().any(|f| f.name == ATTR_BLOOMS_FILE) {
            let path = dir.join(ATTR_BLOOMS_FILE);
            let b = AttrBlooms::decode(&std::fs::read(&path).at(&path)?, &path)?;
            // Bloom i covers rows [i * group_rows, (i + 1) * group_rows) of the segment (a
            // data page's rows; a row group's in older segments): no more blooms than that.
            let rows: u64 = parquet
                .metadata()
                .row_groups()
                .iter()
                .map(|g| g.num_rows().max(0) as u64)
                .sum();
            let per = u64::from(b.group_rows());
            let fits = per > 0 && (b.len() as u64) <= rows.div_ceil(per);
            if !fits {
                return Err(StorageError::corruption(
                    &path,
                    "attribute blooms do not match the row groups",
                ));
            }
            Some(b)
        } else {
            None
        };
        Ok(Self {
            meta,
            dir,
            root: root.to_owned(),
            parquet,
            time_leaf,
            trace_leaf,
            postings,
            text,
            blooms,
            attr_blooms,
            series,
            rollup,
            hourly,
            durations: OnceLock::new(),
            series_rows: OnceLock::new(),
            obsolete: AtomicBool::new(false),
        })
    }

    /// The segment's minute rollup rows (spans; see [`crate::rollup`]); `None` when the segment
    /// has none or one of another schema. Read on first use and kept in memory while all kept
    /// rollups of the process stay under [`crate::rollup::CACHE_BYTES`], else read each time.
    pub fn rollup(&self) -> Result<Option<RecordBatch>> {
        self.rollup.rows(&self.dir)
    }

    /// The segment's hourly rollup rows ([`crate::rollup::HOURLY_FILE`]), cached as
    /// [`Segment::rollup`]'s.
    pub fn hourly_rollup(&self) -> Result<Option<RecordBatch>> {
        self.hourly.rows(&self.dir)
    }

    /// Reads the rollup rows into the cache now (when they fit), so the first query that uses
    /// them does not pay for it: called when a flush or merge installs the segment and for every
    /// segment after open. A failure is left for the query to meet and report.
    pub(crate) fn warm(&self) {
        for r in [self.rollup(), self.hourly_rollup()] {
            if let Err(e) = r {
                tracing::debug!(error = %e, dir = %self.dir.display(), "rollup not cached");
            }
        }
    }

    /// Whether the rollup rows are in the cache.
    #[cfg(test)]
    pub(crate) fn has_rollup_cached(&self) -> bool {
        self.rollup.is_cached()
    }

    /// The sorted durations of rollup rows `kept` (ascending indexes into [`Segment::rollup`])
    /// as a list column, one list per kept row.
    pub(crate) fn rollup_durations(&self, rows: &RecordBatch, kept: &[usize]) -> Result<ArrayRef> {
        let path = self.dir.join(crate::rollup::DURATIONS_FILE);
        let corrupt = |e: String| StorageError::corruption(&path, e);
        let file = std::fs::File::open(&path).at(&path)?;
        let meta = match self.durations.get() {
            Some(m) => m.clone(),
            None => {
                let m = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
                    .map_err(|e| corrupt(e.to_string()))?;
                if m.schema().fields() != crate::rollup::DURATIONS_SCHEMA.fields() {
                    return Err(corrupt("rollup durations of another schema".into()));
                }
                self.durations.get_or_init(|| m).clone()
            }
        };
        let total = meta.metadata().file_metadata().num_rows().max(0) as usize;
        let ranges = crate::rollup::duration_ranges(rows, kept)?;
        if ranges.last().is_some_and(|r| r.end > total) {
            return Err(corrupt(format!(
                "rollup points past the {total} durations stored"
            )));
        }
        let batches = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta)
            .with_row_selection(RowSelection::from_consecutive_ranges(
                ranges.into_iter(),
                total,
            ))
            .with_batch_size(64 * 1024)
            .build()
            .map_err(|e| corrupt(e.to_string()))?
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| corrupt(e.to_string()))?;
        let arrays: Vec<&dyn Array> = batches.iter().map(|b| b.column(0).as_ref()).collect();
        let values = match arrays.as_slice() {
            [] => arrow_array::new_empty_array(&arrow_schema::DataType::Int64),
            [one] => arrow_array::make_array(one.to_data()),
            many => arrow_select::concat::concat(many).map_err(|e| corrupt(e.to_string()))?,
        };
        crate::rollup::durations_list(rows, kept, values).map_err(|e| corrupt(e.to_string()))
    }

    /// The segment's metadata.
    pub fn meta(&self) -> &SegmentMeta {
        &self.meta
    }

    /// The segment's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The Parquet file's path (readable by any Parquet engine).
    pub fn data_path(&self) -> PathBuf {
        self.dir.join(DATA_FILE)
    }

    /// Series stored in this segment (samples only).
    pub fn series(&self) -> &[Arc<SeriesDef>] {
        &self.series
    }

    /// Samples: the row run of each series, built on first use ([`series_rows`]).
    pub(crate) fn series_rows(
        &self,
        deadline: &crate::Deadline,
    ) -> Result<Arc<series_rows::SeriesRows>> {
        if let Some(r) = self.series_rows.get() {
            return Ok(Arc::clone(r));
        }
        let built = Arc::new(series_rows::SeriesRows::build(self, deadline)?);
        // Two scans may build it at once; both answers are the same.
        Ok(Arc::clone(self.series_rows.get_or_init(|| built)))
    }

    /// Bytes this segment's indexes hold in memory: postings, attribute blooms, trace-id
    /// blooms, the series directory of samples (a searched log segment's token dictionary is in
    /// the process-wide [`text_index::dict_cache`] instead).
    pub fn index_bytes(&self) -> usize {
        self.postings.heap_size()
            + self.series_rows.get().map_or(0, |r| r.heap_size())
            + self.attr_blooms.as_ref().map_or(0, AttrBlooms::encoded_len)
            + self
                .blooms
                .iter()
                .flatten()
                .map(|b| b.num_blocks() * 32)
                .sum::<usize>()
    }

    /// The postings.
    pub fn postings(&self) -> &Postings {
        &self.postings
    }

    /// Number of row groups.
    pub fn row_groups(&self) -> usize {
        self.parquet.metadata().num_row_groups()
    }

    /// Marks the segment for deletion once no reader holds it.
    pub(crate) fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::Release);
    }

    /// Bytes its rows take decoded in memory: recorded at write, or for older segments the
    /// Parquet data's uncompressed size doubled (dictionary-encoded strings expand when read).
    pub(crate) fn decoded_bytes(&self) -> u64 {
        if self.meta.decoded_bytes > 0 {
            return self.meta.decoded_bytes;
        }
        let uncompressed: i64 = self
            .parquet
            .metadata()
            .row_groups()
            .iter()
            .map(|rg| rg.total_byte_size())
            .sum();
        u64::try_from(uncompressed).unwrap_or(0).saturating_mul(2)
    }

    /// Reads the rows `rows` of the segment (for compaction), skipping the pages outside them.
    pub(crate) fn read_rows(&self, rows: std::ops::Range<u64>) -> Result<Vec<RecordBatch>> {
        let path = self.data_path();
        let total = usize::try_from(self.meta.rows).unwrap_or(usize::MAX);
        let (lo, hi) = (
            usize::try_from(rows.start).unwrap_or(usize::MAX).min(total),
            usize::try_from(rows.end).unwrap_or(usize::MAX).min(total),
        );
        if lo >= hi {
            return Ok(Vec::new());
        }
        let file = std::fs::File::open(&path).at(&path)?;
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.parquet.clone())
            .with_batch_size(64 * 1024)
            .with_row_selection(RowSelection::from_consecutive_ranges(
                std::iter::once(lo..hi),
                total,
            ))
            .build()?;
        reader
            .map(|b| b.map_err(|e| StorageError::corruption(&path, e.to_string())))
            .collect()
    }

    /// Reads every row of the segment (for compaction).
    pub(crate) fn read_all(&self) -> Result<Vec<RecordBatch>> {
        self.read_rows(0..self.meta.rows)
    }

    /// The rows of a log segment that may match `query`, from its token index; a log segment
    /// written before token indexes has its bodies read and checked instead (exact, and as
    /// slow as reading them).
    pub(crate) fn text_candidates(
        &self,
        query: &TextQuery,
        deadline: &crate::Deadline,
    ) -> Result<Candidates> {
        if self.meta.signal != Signal::Logs {
            return Err(StorageError::InvalidQuery(
                "full-text search applies to logs only".into(),
            ));
        }
        if let Some(idx) = &self.text {
            return query.candidates(&idx.lookup()?, idx.rows());
        }
        let path = self.data_path();
        let file = std::fs::File::open(&path).at(&path)?;
        let mask = parquet::arrow::ProjectionMask::columns(
            self.parquet.metadata().file_metadata().schema_descr(),
            [col::BODY],
        );
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.parquet.clone())
            .with_batch_size(64 * 1024)
            .with_projection(mask)
            .build()?;
        let mut rows = roaring::RoaringBitmap::new();
        let mut first = 0u32;
        for batch in reader {
            deadline.check()?;
            let batch = batch.map_err(|e| StorageError::corruption(&path, e.to_string()))?;
            let bodies =
                crate::columnar::decode_column::<arrow_array::StringArray>(&batch, col::BODY)?;
            let found = text_index::matching_rows(query, bodies.iter());
            rows.extend(found.iter().map(|r| first + r));
            first += batch.num_rows() as u32;
        }
        Ok(Candidates { rows, exact: true })
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::Acquire)
            && let Err(e) = manifest::remove_segment_dir(&self.root, &self.meta)
        {
            tracing::warn!(error = %e, dir = %self.dir.display(), "could not delete obsolete segment");
        }
    }
}
