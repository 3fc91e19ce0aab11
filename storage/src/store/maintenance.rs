//! Compaction (merging small segments of a partition) and retention (dropping partitions past a
//! tenant's TTL). Both commit by a manifest swap ([`super::commit`]); replaced segments are
//! deleted when their last reader lets go, or at the next open if the process dies first.
//!
//! Compaction is size-tiered: segments merge with segments of their own level (a flush writes
//! level 0, a merge writes one level above its highest input), a level merges once it has
//! `min_segments` segments, and one merge reads at most [`crate::CompactionConfig::target_rows`]
//! rows and [`crate::CompactionConfig::max_merge_bytes`] of them decoded (metric samples: up to
//! [`crate::CompactionConfig::sample_target_rows`], read and written a range of series at a
//! time, see [`merge_samples`]). Every row is therefore rewritten about
//! log(rows per partition / rows per flush) / log(`min_segments`) times, whatever the order data
//! arrives in, and a merge's working memory is bounded. Compaction holds no lock a flush needs
//! while it reads and writes: only its commit is serialised with the others, and it is
//! abandoned if retention or quarantine removed one of its inputs meanwhile.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use arrow_array::RecordBatch;

use super::Inner;
use super::commit::{allocate_segment_id, commit};
use crate::config::CompactionConfig;
use crate::deadline::Deadline;
use crate::error::Result;
use crate::manifest::SegmentMeta;
use crate::schema;
use crate::segment::{self, SampleSegmentWriter, Segment};
use crate::types::{SegmentId, Signal, TenantId, UnixNanos};

/// Segments merge only with segments of the same partition start *and* length (the length can
/// change between opens when the configuration does).
type PartitionKey = (TenantId, Signal, UnixNanos, i64);

/// What [`pick_merge`] needs of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Candidate {
    id: SegmentId,
    rows: u64,
    level: u32,
    /// Decoded size in memory.
    bytes: u64,
}

/// The segments of one partition to merge next (by id), or `None`. `segs` are the partition's
/// segments below the target size. The lowest level with at least `min_segments` segments merges
/// its smallest ones, as many as fit in `target_rows` and `max_merge_bytes` of input (at least
/// two). A level therefore
/// holds fewer than `min_segments` segments once compaction has caught up, and a partition about
/// `min_segments` times the number of levels.
fn pick_merge(segs: &[Candidate], cfg: &CompactionConfig) -> Option<Vec<SegmentId>> {
    let min = cfg.min_segments.max(2);
    let mut segs = segs.to_vec();
    segs.sort_by_key(|c| (c.level, c.rows, c.id));
    for level in segs.chunk_by(|a, b| a.level == b.level) {
        if level.len() < min {
            continue;
        }
        let (mut rows, mut bytes) = (0u64, 0u64);
        let picked: Vec<SegmentId> = level
            .iter()
            .take_while(|c| {
                rows = rows.saturating_add(c.rows);
                bytes = bytes.saturating_add(c.bytes);
                rows <= cfg.target_rows && bytes <= cfg.max_merge_bytes
            })
            .map(|c| c.id)
            .collect();
        if picked.len() >= 2 {
            return Some(picked);
        }
    }
    None
}

/// One compaction pass: at most one merge per partition. Returns the number of merges committed.
pub(super) fn compact(inner: &Inner) -> Result<usize> {
    if !inner.config.compaction.enabled {
        return Ok(0);
    }
    // One pass at a time, so two passes never pick the same segments.
    let _pass = inner.compacting.lock();
    let cfg = &inner.config.compaction;
    let groups: BTreeMap<PartitionKey, Vec<Arc<Segment>>> = {
        let state = inner.state.lock();
        let mut g: BTreeMap<PartitionKey, Vec<Arc<Segment>>> = BTreeMap::new();
        for segs in state.segments.values() {
            for s in segs {
                let m = s.meta();
                if m.rows < limits(m.signal, cfg).target_rows {
                    g.entry((
                        m.tenant.clone(),
                        m.signal,
                        m.partition_start,
                        m.partition_nanos,
                    ))
                    .or_default()
                    .push(s.clone());
                }
            }
        }
        g
    };
    let mut merges = 0;
    for ((tenant, signal, partition_start, _), segs) in groups {
        if inner.shutdown.load(Ordering::Acquire) {
            break;
        }
        let candidates: Vec<Candidate> = segs
            .iter()
            .map(|s| Candidate {
                id: s.meta().id,
                rows: s.meta().rows,
                level: s.meta().level,
                bytes: s.decoded_bytes(),
            })
            .collect();
        let Some(picked) = pick_merge(&candidates, &limits(signal, cfg)) else {
            continue;
        };
        let mut segs: Vec<Arc<Segment>> = segs
            .into_iter()
            .filter(|s| picked.contains(&s.meta().id))
            .collect();
        segs.sort_by_key(|s| s.meta().id);
        if merge(inner, &tenant, signal, partition_start, &segs)? {
            merges += 1;
        }
    }
    Ok(merges)
}

/// The merge limits of `signal`'s segments: metric samples merge a range of series at a time,
/// so their merges are bounded by rows per slice, not by `max_merge_bytes`.
fn limits(signal: Signal, cfg: &CompactionConfig) -> CompactionConfig {
    match signal {
        Signal::Samples => CompactionConfig {
            target_rows: cfg.sample_target_rows,
            max_merge_bytes: u64::MAX,
            ..cfg.clone()
        },
        Signal::Spans | Signal::Logs => cfg.clone(),
    }
}

/// Merges `segs` into one segment; `false` when retention or quarantine removed an input first.
fn merge(
    inner: &Inner,
    tenant: &TenantId,
    signal: Signal,
    partition_start: UnixNanos,
    segs: &[Arc<Segment>],
) -> Result<bool> {
    let mut series = HashMap::new();
    for s in segs {
        for d in s.series() {
            series.insert(d.id, d.clone());
        }
    }
    let meta = SegmentMeta::to_write(
        allocate_segment_id(inner),
        tenant.clone(),
        signal,
        (partition_start, segs[0].meta().partition_nanos),
        segs.iter().map(|s| s.meta().level).max().unwrap_or(0) + 1,
    );
    let meta = match signal {
        Signal::Samples => match merge_samples(inner, meta, segs, &series)? {
            Some(meta) => meta,
            // The store is closing.
            None => return Ok(false),
        },
        Signal::Spans | Signal::Logs => {
            let mut batches: Vec<RecordBatch> = Vec::new();
            for s in segs {
                batches.extend(s.read_all()?);
            }
            let all = arrow_select::concat::concat_batches(&schema::of(signal), &batches)?;
            drop(batches);
            segment::write_segment(&inner.root, meta, all, &series, &inner.config.segment)?
        }
    };
    let new_seg = Arc::new(Segment::open(&inner.root, meta.clone())?);
    new_seg.warm();
    let replaced: HashSet<SegmentId> = segs.iter().map(|s| s.meta().id).collect();
    let committed = commit(
        inner,
        |manifest| {
            let live = manifest
                .segments
                .iter()
                .filter(|m| replaced.contains(&m.id))
                .count();
            if live != replaced.len() {
                return None;
            }
            manifest.segments.retain(|m| !replaced.contains(&m.id));
            manifest.segments.push(meta);
            Some(())
        },
        |state, ()| {
            let list = state.segments.entry((tenant.clone(), signal)).or_default();
            list.retain(|s| !replaced.contains(&s.meta().id));
            list.push(new_seg.clone());
        },
    )?;
    if committed.is_none() {
        // Not in the manifest: its files go with its last handle.
        new_seg.mark_obsolete();
        return Ok(false);
    }
    for s in segs {
        s.mark_obsolete();
    }
    inner.counters.compactions.fetch_add(1, Ordering::Relaxed);
    inner
        .counters
        .segments_written
        .fetch_add(1, Ordering::Relaxed);
    Ok(true)
}

/// Writes the samples of `segs` (in id order: of samples sharing a series and a time, the
/// newer segment's stays) as segment `meta`, a range of series at a time: every input holds
/// its series in id order, so a range of ids is one run of rows in each, read by itself.
/// `None` when the store began closing meanwhile (the partial segment is removed).
fn merge_samples(
    inner: &Inner,
    meta: SegmentMeta,
    segs: &[Arc<Segment>],
    series: &HashMap<crate::types::SeriesId, Arc<crate::model::SeriesDef>>,
) -> Result<Option<SegmentMeta>> {
    let none = Deadline::none();
    let dirs = segs
        .iter()
        .map(|s| s.series_rows(&none))
        .collect::<Result<Vec<_>>>()?;
    // Rows of each series over all inputs, in id order.
    let mut counts: Vec<(u64, u64)> = dirs.iter().flat_map(|d| d.counts()).collect();
    counts.sort_unstable_by_key(|&(id, _)| id);
    counts.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            kept.1 += later.1;
        }
        same
    });
    let slice = inner.config.compaction.sample_merge_slice_rows;
    let mut out = SampleSegmentWriter::create(&inner.root, meta, &inner.config.segment)?;
    let mut i = 0;
    while i < counts.len() {
        if inner.shutdown.load(Ordering::Acquire) {
            out.abandon()?;
            return Ok(None);
        }
        // At least one series, then as many as fit in a slice.
        let (mut j, mut rows) = (i + 1, counts[i].1);
        while j < counts.len() && rows + counts[j].1 <= slice {
            rows += counts[j].1;
            j += 1;
        }
        let (lo, hi) = (counts[i].0, counts[j - 1].0);
        let mut batches = Vec::new();
        for (s, d) in segs.iter().zip(&dirs) {
            batches.extend(s.read_rows(d.rows_between(lo, hi))?);
        }
        out.write(&super::flush::samples_in_segment_order(&batches)?)?;
        i = j;
    }
    out.finish(series).map(Some)
}

/// Drops every segment whose partition ended more than its tenant's TTL ago.
pub(super) fn apply_retention(inner: &Inner) -> Result<usize> {
    let now = inner.config.clock.now();
    let expired = |m: &SegmentMeta| -> bool {
        inner.config.retention.ttl(&m.tenant).is_some_and(|ttl| {
            let ttl = i64::try_from(ttl.as_nanos()).unwrap_or(i64::MAX);
            m.partition_end().0 <= now.0.saturating_sub(ttl)
        })
    };
    let mut obsolete = Vec::new();
    let dropped = commit(
        inner,
        |manifest| {
            let dropped: HashSet<SegmentId> = manifest
                .segments
                .iter()
                .filter(|m| expired(m))
                .map(|m| m.id)
                .collect();
            manifest.segments.retain(|m| !dropped.contains(&m.id));
            (!dropped.is_empty()).then_some(dropped)
        },
        |state, dropped| {
            for list in state.segments.values_mut() {
                list.retain(|s| {
                    if dropped.contains(&s.meta().id) {
                        obsolete.push(s.clone());
                        false
                    } else {
                        true
                    }
                });
            }
        },
    )?;
    let mut removed_from: Vec<&TenantId> = obsolete
        .iter()
        .filter(|s| s.meta().signal == Signal::Samples)
        .map(|s| &s.meta().tenant)
        .collect();
    removed_from.sort();
    removed_from.dedup();
    for tenant in removed_from {
        inner.observers.removed(tenant);
    }
    for s in &obsolete {
        s.mark_obsolete();
    }
    let dropped = dropped.unwrap_or_default();
    inner
        .counters
        .retention_dropped_segments
        .fetch_add(dropped.len() as u64, Ordering::Relaxed);
    Ok(dropped.len())
}

/// Moves a segment that failed while being read into quarantine and out of the manifest.
pub(super) fn quarantine(inner: &Inner, id: SegmentId, reason: &str) -> Result<()> {
    let meta = commit(
        inner,
        |manifest| {
            let meta = manifest.segments.iter().find(|m| m.id == id).cloned();
            manifest.segments.retain(|m| m.id != id);
            meta
        },
        |state, _| {
            for list in state.segments.values_mut() {
                list.retain(|s| s.meta().id != id);
            }
        },
    )?;
    let Some(meta) = meta else {
        return Ok(());
    };
    if meta.signal == Signal::Samples {
        inner.observers.removed(&meta.tenant);
    }
    tracing::error!(segment = %id, %reason, "quarantined segment that failed to read");
    super::recovery::quarantine_segment(&inner.root, &meta)?;
    inner
        .counters
        .quarantined_segments
        .fetch_add(1, Ordering::Relaxed);
    Ok(())
}

#[cfg(test)]
mod tests;
