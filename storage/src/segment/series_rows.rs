//! Where each series' rows lie in a sample segment.
//!
//! Sample rows are sorted by series, so each series holds one contiguous run of rows. A scan
//! that knows its series (the catalog answers the label matchers) reads exactly those runs:
//! no postings are intersected and walked row by row, and no row needs its series checked
//! after decoding. The directory is built from the segment's `series_id` column the first time
//! a scan asks for it (a delta-encoded column of a few runs per series, read once) and kept
//! with the open segment: 12 bytes per series.

use std::ops::Range;

use arrow_array::{Array, UInt64Array};
use parquet::arrow::ProjectionMask;
use rustc_hash::FxHashSet;

use super::Segment;
use super::page_reader::{self, SegmentFile};
use crate::deadline::Deadline;
use crate::error::{IoContext, Result, StorageError};
use crate::schema::{self, col};
use crate::series::id_runs;
use crate::types::Signal;

/// The row run of every series in one sample segment, sorted by series id.
#[derive(Debug, Default)]
pub(crate) struct SeriesRows {
    ids: Vec<u64>,
    /// `starts[i]..starts[i + 1]` are the rows of `ids[i]`; one more entry than `ids`.
    starts: Vec<u32>,
}

impl SeriesRows {
    /// Reads the `series_id` column of `seg`'s data file.
    pub(crate) fn build(seg: &Segment, deadline: &Deadline) -> Result<Self> {
        debug_assert_eq!(seg.meta.signal, Signal::Samples);
        let path = seg.data_path();
        let file = std::fs::File::open(&path).at(&path)?;
        let file = std::sync::Arc::new(SegmentFile::new(file).at(&path)?);
        let idx = schema::of(Signal::Samples)
            .index_of(col::SERIES_ID)
            .map_err(StorageError::from)?;
        let groups: Vec<usize> = (0..seg.parquet.metadata().num_row_groups()).collect();
        let reader = page_reader::read_row_groups(
            &file,
            &seg.parquet,
            groups,
            ProjectionMask::roots(seg.parquet.parquet_schema(), [idx]),
            None,
            64 * 1024,
        )?;
        let mut out = SeriesRows::default();
        let mut row = 0u32;
        for batch in reader {
            deadline.check()?;
            let batch = batch.map_err(|e| StorageError::corruption(&path, e.to_string()))?;
            let ids = batch
                .column(0)
                .as_any()
                .downcast_ref::<UInt64Array>()
                .filter(|a| a.null_count() == 0)
                .ok_or_else(|| StorageError::corruption(&path, "series_id column"))?;
            for run in id_runs(ids.values()) {
                let id = ids.values()[run.start];
                let len = u32::try_from(run.len())
                    .map_err(|_| StorageError::corruption(&path, "segment over 2^32 rows"))?;
                // A series continuing across a batch boundary extends its run.
                if out.ids.last() != Some(&id) {
                    if out.ids.last().is_some_and(|&last| last > id) {
                        return Err(StorageError::corruption(&path, "samples not sorted"));
                    }
                    out.ids.push(id);
                    out.starts.push(row);
                }
                row = row
                    .checked_add(len)
                    .ok_or_else(|| StorageError::corruption(&path, "segment over 2^32 rows"))?;
            }
        }
        out.starts.push(row);
        Ok(out)
    }

    /// Bytes held.
    pub(crate) fn heap_size(&self) -> usize {
        self.ids.capacity() * 8 + self.starts.capacity() * 4
    }

    /// Each series present and its number of rows, in id order.
    pub(crate) fn counts(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ids
            .iter()
            .zip(self.starts.windows(2))
            .map(|(&id, w)| (id, u64::from(w[1] - w[0])))
    }

    /// The rows of the series with ids in `lo..=hi`: one run, since rows are sorted by series.
    pub(crate) fn rows_between(&self, lo: u64, hi: u64) -> Range<u64> {
        let a = self.ids.partition_point(|&id| id < lo);
        let b = self.ids.partition_point(|&id| id <= hi).max(a);
        u64::from(self.starts[a])..u64::from(self.starts[b])
    }

    /// The row runs of the series in `wanted`, in row order.
    pub(crate) fn runs(&self, wanted: &FxHashSet<u64>) -> Vec<Range<u64>> {
        let run = |i: usize| u64::from(self.starts[i])..u64::from(self.starts[i + 1]);
        // Whichever side is smaller is walked; the other answers membership.
        if wanted.len() < self.ids.len() / 8 {
            let mut idx: Vec<usize> = wanted
                .iter()
                .filter_map(|id| self.ids.binary_search(id).ok())
                .collect();
            idx.sort_unstable();
            idx.into_iter().map(run).collect()
        } else {
            (0..self.ids.len())
                .filter(|&i| wanted.contains(&self.ids[i]))
                .map(run)
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_either_side() {
        let rows = SeriesRows {
            ids: (0..100).map(|i| i * 2).collect(),
            starts: (0..=100).map(|i| i * 10).collect(),
        };
        let few: FxHashSet<u64> = [4, 5, 198].into_iter().collect();
        assert_eq!(rows.runs(&few), vec![20..30, 990..1000]);
        let many: FxHashSet<u64> = (0..300).filter(|i| i % 4 == 0).collect();
        let got = rows.runs(&many);
        assert_eq!(got.len(), 50);
        assert_eq!(got[1], 20..30);
    }

    #[test]
    fn rows_between_ids_and_counts() {
        let rows = SeriesRows {
            ids: vec![3, 5, 9],
            starts: vec![0, 4, 6, 10],
        };
        assert_eq!(rows.rows_between(0, 2), 0..0);
        assert_eq!(rows.rows_between(3, 5), 0..6);
        assert_eq!(rows.rows_between(4, 9), 4..10);
        assert_eq!(rows.rows_between(6, 8), 6..6);
        assert_eq!(rows.rows_between(10, 20), 10..10);
        assert_eq!(
            rows.counts().collect::<Vec<_>>(),
            vec![(3, 4), (5, 2), (9, 4)]
        );
    }
}
