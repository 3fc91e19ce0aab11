//! Scans: snapshot segments and memtables under the state lock, then read without it.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::RecordBatch;

use super::Inner;
use crate::error::{Result, StorageError};
use crate::memtable::MemSnapshot;
use crate::predicate::{Predicate, ScanRequest};
use crate::segment::scan::CompiledScan;
use crate::segment::{ScanStats, Segment};
use crate::types::Signal;

/// Rows of a scan and how they were found.
#[derive(Debug, Default)]
pub struct ScanResult {
    /// Matching rows with the requested columns. Batches carry no particular order.
    pub batches: Vec<RecordBatch>,
    /// Pruning statistics.
    pub stats: ScanStats,
    /// Segments that could not be read and were quarantined during this scan.
    pub warnings: Vec<String>,
}

impl ScanResult {
    /// Total rows returned.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

pub(super) fn scan(inner: &Inner, req: &ScanRequest) -> Result<ScanResult> {
    let key = (req.tenant.clone(), req.signal);
    let (segments, mems, series_filter): (Vec<Arc<Segment>>, Vec<MemSnapshot>, _) = {
        let state = inner.state.lock();
        let segments = state.segments.get(&key).cloned().unwrap_or_default();
        let mut mems: Vec<MemSnapshot> = state
            .frozen
            .iter()
            .flat_map(|f| f.tables.iter())
            .filter(|(k, _, _)| *k == key)
            .map(|(_, s, _)| s.clone())
            .collect();
        if let Some(m) = state.active.get(&key) {
            mems.push(m.snapshot());
        }
        let series_filter = if req.signal == Signal::Samples {
            let matchers: Vec<&crate::Matcher> = req
                .predicates
                .iter()
                .filter_map(|p| match p {
                    Predicate::Attr(m) => Some(m),
                    _ => None,
                })
                .collect();
            if matchers.is_empty() {
                None
            } else {
                let ids: HashSet<u64> = state
                    .catalogs
                    .get(&req.tenant)
                    .map(|c| c.select(&matchers).iter().map(|d| d.id.0).collect())
                    .unwrap_or_default();
                Some(Arc::new(ids))
            }
        } else {
            None
        };
        (segments, mems, series_filter)
    };
    let compiled = CompiledScan::new(req, series_filter)?;
    let mut result = ScanResult::default();
    if compiled
        .series_filter
        .as_ref()
        .is_some_and(|s| s.is_empty())
    {
        return Ok(result);
    }
    for seg in &segments {
        match seg.scan(&compiled, &mut result.stats) {
            Ok(batches) => result.batches.extend(batches),
            Err(StorageError::Corruption { path, detail }) => {
                let msg = format!(
                    "segment {} unreadable ({}: {detail}); quarantined",
                    seg.meta().id,
                    path.display()
                );
                super::maintenance::quarantine(inner, seg.meta().id, &msg)?;
                result.warnings.push(msg);
            }
            Err(e) => return Err(e),
        }
    }
    let full_text: Vec<&str> = req
        .predicates
        .iter()
        .filter_map(|p| match p {
            Predicate::FullText(q) => Some(q.as_str()),
            _ => None,
        })
        .collect();
    for snap in &mems {
        let text_rows = if full_text.is_empty() {
            None
        } else {
            let mut acc: Option<roaring::RoaringBitmap> = None;
            for q in &full_text {
                let rows = snap.search_text(q)?;
                acc = Some(match acc {
                    Some(a) => a & rows,
                    None => rows,
                });
            }
            acc
        };
        for mb in &snap.batches {
            if !req.time.overlaps_closed(mb.min_time, mb.max_time) {
                continue;
            }
            result.stats.memtable_batches += 1;
            result.stats.memtable_rows += mb.batch.num_rows() as u64;
            let t = text_rows.as_ref().map(|r| (r, mb.first_row));
            if let Some(b) = compiled.filter(&mb.batch, t)? {
                result.stats.rows_returned += b.num_rows() as u64;
                result.batches.push(b);
            }
        }
    }
    if req.signal == Signal::Samples {
        dedupe_samples(&mut result)?;
        result.batches = result
            .batches
            .iter()
            .map(|b| compiled.project(b))
            .collect::<Result<_>>()?;
        result.stats.rows_returned = result.num_rows() as u64;
    }
    Ok(result)
}

/// Samples of one series at one timestamp can sit in several sources (a client retry that
/// landed in another flush). Merge them to one, sorted by series and time, keeping the value
/// read last (memtables after segments, newer segments after older).
fn dedupe_samples(result: &mut ScanResult) -> Result<()> {
    let Some(first) = result.batches.first() else {
        return Ok(());
    };
    let schema = first.schema();
    let all = arrow_select::concat::concat_batches(&schema, &result.batches)?;
    let merged = crate::segment::sort_samples(&all)?;
    result.stats.rows_returned = merged.num_rows() as u64;
    result.batches = vec![merged];
    Ok(())
}
