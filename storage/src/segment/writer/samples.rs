//! Sample segments written a piece at a time.
//!
//! Rows arrive in segment order (series, then time), each piece holding whole series with ids
//! above every series written before it: a flush hands over its sorted memtable as one piece; a
//! compaction merge hands over its inputs a range of series at a time, so a merge holds one
//! range's rows however large the segments are. Every data page holds one series: each series'
//! run is cut into pages of at most [`SegmentWriteOptions::sample_page_rows`] rows of about equal
//! length, so a query decodes only the pages of the series it selects and, through the page
//! index of the time column, only those holding its time range. The postings and the series
//! file are built from the runs written, with no second pass over the rows.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{RecordBatch, UInt64Array};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use super::{SegmentWriteOptions, is_sorted_for_segment, seal, write_parquet, writer_properties};
use crate::columnar;
use crate::error::{IoContext, Result, StorageError};
use crate::fsutil;
use crate::manifest::SegmentMeta;
use crate::model::{METRIC_NAME_LABEL, SeriesDef};
use crate::postings::PostingsBuilder;
use crate::schema::col;
use crate::segment::{DATA_FILE, POSTINGS_FILE, SERIES_FILE};
use crate::series::id_runs;
use crate::types::{SeriesId, Signal, UnixNanos};

/// A sample segment being written; [`SampleSegmentWriter::finish`] completes it.
pub(crate) struct SampleSegmentWriter {
    dir: PathBuf,
    meta: SegmentMeta,
    data: ArrowWriter<File>,
    page_rows: usize,
    zstd_level: i32,
    /// Each series written and the end of its rows (the next one starts there).
    runs: Vec<(u64, u32)>,
    rows: u64,
    decoded_bytes: u64,
    time: Option<(UnixNanos, UnixNanos)>,
}

impl SampleSegmentWriter {
    /// Starts segment `meta.id` under `root` (a directory left by a crash before the manifest
    /// named it is replaced). Nothing is visible until the caller commits the finished meta.
    pub(crate) fn create(
        root: &Path,
        meta: SegmentMeta,
        opts: &SegmentWriteOptions,
    ) -> Result<Self> {
        debug_assert_eq!(meta.signal, Signal::Samples);
        let dir = root.join(meta.relative_dir());
        if dir.exists() {
            std::fs::remove_dir_all(&dir).at(&dir)?;
        }
        fsutil::create_private_dir_all(&dir)?;
        let file = fsutil::create_private_file(&dir.join(DATA_FILE))?;
        let props = writer_properties(Signal::Samples, 0, opts)?;
        let data = ArrowWriter::try_new(file, crate::schema::of(Signal::Samples), Some(props))?;
        Ok(Self {
            dir,
            meta,
            data,
            page_rows: opts.sample_page_rows.max(1),
            zstd_level: opts.zstd_level,
            runs: Vec::new(),
            rows: 0,
            decoded_bytes: 0,
            time: None,
        })
    }

    /// Appends `sorted`: rows in segment order whose series all sort after those written so
    /// far.
    pub(crate) fn write(&mut self, sorted: &RecordBatch) -> Result<()> {
        if sorted.num_rows() == 0 {
            return Ok(());
        }
        debug_assert!(
            is_sorted_for_segment(Signal::Samples, sorted)?,
            "samples enter a segment in segment order"
        );
        let ids = sorted
            .column_by_name(col::SERIES_ID)
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
            .ok_or_else(|| StorageError::InvalidInput("samples lack a series_id column".into()))?;
        if let Some(&(last, _)) = self.runs.last()
            && ids.value(0) <= last
        {
            return Err(StorageError::InvalidInput(format!(
                "series {} written after series {last}",
                ids.value(0)
            )));
        }
        for run in id_runs(ids.values()) {
            // One write per page: the writer properties cut a page after every write.
            let pages = run.len().div_ceil(self.page_rows);
            let (base, extra) = (run.len() / pages, run.len() % pages);
            let mut at = run.start;
            for p in 0..pages {
                let len = base + usize::from(p < extra);
                self.data.write(&sorted.slice(at, len))?;
                at += len;
            }
            debug_assert_eq!(at, run.end, "the pages of a run cover it");
            let end = self.rows + run.end as u64;
            let end = u32::try_from(end)
                .map_err(|_| StorageError::InvalidInput("segment over 2^32 rows".into()))?;
            self.runs.push((ids.value(run.start), end));
        }
        self.rows += sorted.num_rows() as u64;
        self.decoded_bytes += columnar::batch_bytes(sorted) as u64;
        let (lo, hi) = crate::segment::time_bounds(Signal::Samples, sorted)?;
        self.time = Some(match self.time {
            Some((a, b)) => (a.min(lo), b.max(hi)),
            None => (lo, hi),
        });
        Ok(())
    }

    /// Gives the segment up: its directory is removed (nothing names it yet).
    pub(crate) fn abandon(self) -> Result<()> {
        drop(self.data);
        std::fs::remove_dir_all(&self.dir).at(&self.dir)
    }

    /// Closes the data file, writes the postings and series file of the series written (each
    /// must be in `catalog`), and seals the segment; returns its completed meta.
    pub(crate) fn finish(self, catalog: &HashMap<SeriesId, Arc<SeriesDef>>) -> Result<SegmentMeta> {
        let Self {
            dir,
            mut meta,
            data,
            zstd_level,
            runs,
            rows,
            decoded_bytes,
            time,
            ..
        } = self;
        let Some((lo, hi)) = time else {
            return Err(StorageError::InvalidInput(
                "a sample segment needs rows".into(),
            ));
        };
        data.close()?;
        let mut postings = PostingsBuilder::new();
        let mut present: Vec<&SeriesDef> = Vec::with_capacity(runs.len());
        let mut start = 0u32;
        for (id, end) in runs {
            let def = catalog
                .get(&SeriesId(id))
                .ok_or(StorageError::UnknownSeries(id))?;
            postings.add_range(METRIC_NAME_LABEL, &def.metric_name, start..end);
            for (k, v) in &def.labels {
                postings.add_range(k, v, start..end);
            }
            present.push(def);
            start = end;
        }
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(zstd_level)?))
            .build();
        write_parquet(
            &dir.join(SERIES_FILE),
            &columnar::series_to_batch(&present)?,
            props,
        )?;
        fsutil::write_private_file(&dir.join(POSTINGS_FILE), &postings.finish().encode())?;
        meta.min_time = lo;
        meta.max_time = hi;
        meta.rows = rows;
        meta.decoded_bytes = decoded_bytes;
        seal(&dir, meta)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
    use parquet::file::page_index::column_index::ColumnIndexMetaData;

    use super::super::tests::samples;
    use super::*;
    use crate::types::{SegmentId, TenantId};

    fn catalog(ids: &[u64]) -> HashMap<SeriesId, Arc<SeriesDef>> {
        ids.iter()
            .map(|&id| {
                let def = SeriesDef {
                    id: SeriesId(id),
                    metric_name: "m".into(),
                    kind: crate::model::MetricKind::Gauge,
                    unit: String::new(),
                    help: String::new(),
                    labels: vec![("k".into(), id.to_string())],
                };
                (SeriesId(id), Arc::new(def))
            })
            .collect()
    }

    fn meta() -> SegmentMeta {
        SegmentMeta::to_write(
            SegmentId(1),
            TenantId::default_tenant(),
            Signal::Samples,
            (UnixNanos(0), 86_400_000_000_000),
            0,
        )
    }

    #[test]
    fn every_page_holds_one_series_of_its_time_run() {
        // Runs of 1, 4 and 9 rows at most 4 a page, written in two pieces: pages of
        // 1 | 4 | 3, 3, 3 rows.
        let root = tempfile::tempdir().unwrap();
        let opts = SegmentWriteOptions {
            sample_page_rows: 4,
            ..SegmentWriteOptions::default()
        };
        let mut w = SampleSegmentWriter::create(root.path(), meta(), &opts).unwrap();
        let mut first = vec![(7, 0)];
        first.extend((0..4).map(|t| (9, t)));
        w.write(&samples(&first)).unwrap();
        let second: Vec<(u64, i64)> = (0..9).map(|t| (12, 100 + t)).collect();
        // A piece must hold series above those written.
        assert!(w.write(&samples(&[(9, 50)])).is_err());
        w.write(&samples(&second)).unwrap();
        let meta = w.finish(&catalog(&[7, 9, 12])).unwrap();
        assert_eq!(meta.rows, 14);
        assert_eq!(
            (meta.min_time, meta.max_time),
            (UnixNanos(0), UnixNanos(108_000_000))
        );

        let file = File::open(root.path().join(meta.relative_dir()).join(DATA_FILE)).unwrap();
        let md = ArrowReaderMetadata::load(
            &file,
            ArrowReaderOptions::new()
                .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Required),
        )
        .unwrap();
        let md = md.metadata();
        let schema = md.file_metadata().schema_descr();
        let leaf = |name: &str| {
            (0..schema.num_columns())
                .find(|&i| schema.column(i).name() == name)
                .unwrap()
        };
        let (sid, ts) = (leaf(col::SERIES_ID), leaf(col::TIMESTAMP));
        let pi = md.page_index().unwrap();
        let starts: Vec<i64> = pi
            .offset_index(0, ts)
            .unwrap()
            .page_locations()
            .iter()
            .map(|l| l.first_row_index)
            .collect();
        assert_eq!(starts, vec![0, 1, 5, 8, 11]);
        let ColumnIndexMetaData::INT64(ids) = pi.column_index(0, sid).unwrap() else {
            panic!("series_id page statistics");
        };
        let ColumnIndexMetaData::INT64(times) = pi.column_index(0, ts).unwrap() else {
            panic!("timestamp page statistics");
        };
        for p in 0..starts.len() {
            assert_eq!(
                ids.min_value(p),
                ids.max_value(p),
                "page {p} holds one series"
            );
        }
        let bounds: Vec<(i64, i64)> = (0..starts.len())
            .map(|p| (*times.min_value(p).unwrap(), *times.max_value(p).unwrap()))
            .collect();
        assert_eq!(
            bounds,
            vec![(0, 0), (0, 3), (100, 102), (103, 105), (106, 108)]
        );
    }

    #[test]
    fn an_abandoned_segment_leaves_nothing() {
        let root = tempfile::tempdir().unwrap();
        let meta = meta();
        let dir = root.path().join(meta.relative_dir());
        let mut w = SampleSegmentWriter::create(root.path(), meta, &SegmentWriteOptions::default())
            .unwrap();
        w.write(&samples(&[(3, 1), (4, 1)])).unwrap();
        assert!(dir.join(DATA_FILE).exists());
        w.abandon().unwrap();
        assert!(!dir.exists());
    }

    #[test]
    fn a_series_missing_from_the_catalog_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let mut w =
            SampleSegmentWriter::create(root.path(), meta(), &SegmentWriteOptions::default())
                .unwrap();
        w.write(&samples(&[(3, 1), (4, 1)])).unwrap();
        assert!(matches!(
            w.finish(&catalog(&[3])),
            Err(StorageError::UnknownSeries(4))
        ));
    }
}
