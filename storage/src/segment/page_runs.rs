//! Row runs of a row group that its page index admits: the pages whose `trace_id` range holds
//! a looked-up trace (spans are sorted by trace) and the pages whose time range overlaps a
//! scan's (logs are sorted by time). A reader given these runs as its row selection skips the
//! other pages of every column.

use std::ops::Range;

use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::page_index::offset_index::PageLocation;

use super::Segment;
use crate::types::{TimeRange, TraceId, UnixNanos};

impl Segment {
    /// Rows of row group `rg` on pages whose `trace_id` min/max (page index, column `leaf`)
    /// admit one of `traces`; `None` when the page index cannot tell.
    pub(super) fn trace_pages(
        &self,
        rg: usize,
        leaf: usize,
        rows: usize,
        traces: &[TraceId],
    ) -> Option<Vec<Range<usize>>> {
        let pi = self.parquet.metadata().page_index()?;
        let ColumnIndexMetaData::FIXED_LEN_BYTE_ARRAY(ci) = pi.column_index(rg, leaf)? else {
            return None;
        };
        admitted_runs(
            pi.offset_index(rg, leaf)?.page_locations(),
            rows,
            |p| match (ci.min_value(p), ci.max_value(p)) {
                (Some(min), Some(max)) => traces
                    .iter()
                    .any(|t| min <= &t.as_bytes()[..] && &t.as_bytes()[..] <= max),
                _ => !ci.is_null_page(p),
            },
        )
    }

    /// Rows of row group `rg` on pages whose time range (page index of the time column
    /// `leaf`, in units of `unit` nanoseconds) overlaps `range`; `None` when the page index
    /// cannot tell.
    pub(super) fn time_pages(
        &self,
        rg: usize,
        leaf: usize,
        rows: usize,
        range: &TimeRange,
        unit: i64,
    ) -> Option<Vec<Range<usize>>> {
        let pi = self.parquet.metadata().page_index()?;
        let ColumnIndexMetaData::INT64(ci) = pi.column_index(rg, leaf)? else {
            return None;
        };
        admitted_runs(pi.offset_index(rg, leaf)?.page_locations(), rows, |p| {
            match (ci.min_value(p), ci.max_value(p)) {
                (Some(&min), Some(&max)) => range.overlaps_closed(
                    UnixNanos(min.saturating_mul(unit)),
                    UnixNanos(max.saturating_mul(unit)),
                ),
                // A page without statistics may hold anything; a null page holds no time.
                _ => !ci.is_null_page(p),
            }
        })
    }
}

/// The rows of the pages at `locs` (a row group of `rows` rows) that `admits`, as merged runs;
/// `None` when a page's first row is out of range.
fn admitted_runs(
    locs: &[PageLocation],
    rows: usize,
    admits: impl Fn(usize) -> bool,
) -> Option<Vec<Range<usize>>> {
    let mut runs: Vec<Range<usize>> = Vec::new();
    for (p, loc) in locs.iter().enumerate() {
        let lo = usize::try_from(loc.first_row_index).ok()?;
        let hi = match locs.get(p + 1) {
            Some(next) => usize::try_from(next.first_row_index).ok()?,
            None => rows,
        };
        if lo < hi && admits(p) {
            match runs.last_mut() {
                Some(last) if last.end == lo => last.end = hi,
                _ => runs.push(lo..hi),
            }
        }
    }
    Some(runs)
}
