//! Compaction (merging small segments of a partition) and retention (dropping partitions past a
//! tenant's TTL). Both commit by a manifest swap; replaced segments are deleted when their last
//! reader lets go, or at the next open if the process dies first.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use arrow_array::RecordBatch;

use super::Inner;
use crate::error::Result;
use crate::manifest::SegmentMeta;
use crate::schema;
use crate::segment::{self, Segment};
use crate::types::{SegmentId, Signal, TenantId, UnixNanos};

/// Segments merge only with segments of the same partition start *and* length (the length can
/// change between opens when the configuration does).
type PartitionKey = (TenantId, Signal, UnixNanos, i64);

/// Merges every partition that has enough small segments. Returns the number of merges.
pub(super) fn compact(inner: &Inner) -> Result<usize> {
    if !inner.config.compaction.enabled {
        return Ok(0);
    }
    let _guard = inner.maintenance.lock();
    let cfg = &inner.config.compaction;
    let groups: BTreeMap<PartitionKey, Vec<Arc<Segment>>> = {
        let state = inner.state.lock();
        let mut g: BTreeMap<PartitionKey, Vec<Arc<Segment>>> = BTreeMap::new();
        for segs in state.segments.values() {
            for s in segs {
                let m = s.meta();
                if m.rows < cfg.target_rows {
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
    for ((tenant, signal, partition_start, _), mut segs) in groups {
        if segs.len() < cfg.min_segments.max(2) {
            continue;
        }
        segs.sort_by_key(|s| s.meta().id);
        merge(inner, &tenant, signal, partition_start, &segs)?;
        merges += 1;
    }
    Ok(merges)
}

fn merge(
    inner: &Inner,
    tenant: &TenantId,
    signal: Signal,
    partition_start: UnixNanos,
    segs: &[Arc<Segment>],
) -> Result<()> {
    let mut batches: Vec<RecordBatch> = Vec::new();
    let mut series = HashMap::new();
    for s in segs {
        batches.extend(s.read_all()?);
        for d in s.series() {
            series.insert(d.id, d.clone());
        }
    }
    let all = arrow_select::concat::concat_batches(&schema::of(signal), &batches)?;
    let mut manifest = inner.state.lock().manifest.clone();
    let meta = SegmentMeta {
        id: manifest.allocate_segment_id(),
        tenant: tenant.clone(),
        signal,
        partition_start,
        partition_nanos: segs[0].meta().partition_nanos,
        min_time: UnixNanos(0),
        max_time: UnixNanos(0),
        rows: 0,
        level: segs.iter().map(|s| s.meta().level).max().unwrap_or(0) + 1,
        files: Vec::new(),
    };
    let meta = segment::write_segment(&inner.root, meta, &all, &series, &inner.config.segment)?;
    let new_seg = Arc::new(Segment::open(&inner.root, meta.clone())?);
    let replaced: HashSet<SegmentId> = segs.iter().map(|s| s.meta().id).collect();
    manifest.generation += 1;
    manifest.segments.retain(|m| !replaced.contains(&m.id));
    manifest.segments.push(meta);
    manifest.store(&inner.root)?;
    {
        let mut state = inner.state.lock();
        // Commits are serialised by the maintenance lock: each installs the next generation.
        debug_assert_eq!(
            manifest.generation,
            state.manifest.generation + 1,
            "manifest generations increase by one per commit"
        );
        state.manifest = manifest;
        let list = state.segments.entry((tenant.clone(), signal)).or_default();
        list.retain(|s| !replaced.contains(&s.meta().id));
        list.push(new_seg);
    }
    for s in segs {
        s.mark_obsolete();
    }
    inner.counters.compactions.fetch_add(1, Ordering::Relaxed);
    inner
        .counters
        .segments_written
        .fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Drops every segment whose partition ended more than its tenant's TTL ago.
pub(super) fn apply_retention(inner: &Inner) -> Result<usize> {
    let _guard = inner.maintenance.lock();
    let now = inner.config.clock.now();
    let expired = |m: &SegmentMeta| -> bool {
        inner.config.retention.ttl(&m.tenant).is_some_and(|ttl| {
            let ttl = i64::try_from(ttl.as_nanos()).unwrap_or(i64::MAX);
            m.partition_end().0 <= now.0.saturating_sub(ttl)
        })
    };
    let mut manifest = inner.state.lock().manifest.clone();
    let dropped: HashSet<SegmentId> = manifest
        .segments
        .iter()
        .filter(|m| expired(m))
        .map(|m| m.id)
        .collect();
    if dropped.is_empty() {
        return Ok(0);
    }
    manifest.generation += 1;
    manifest.segments.retain(|m| !dropped.contains(&m.id));
    manifest.store(&inner.root)?;
    let mut obsolete = Vec::new();
    {
        let mut state = inner.state.lock();
        // Commits are serialised by the maintenance lock: each installs the next generation.
        debug_assert_eq!(
            manifest.generation,
            state.manifest.generation + 1,
            "manifest generations increase by one per commit"
        );
        state.manifest = manifest;
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
    }
    for s in obsolete {
        s.mark_obsolete();
    }
    inner
        .counters
        .retention_dropped_segments
        .fetch_add(dropped.len() as u64, Ordering::Relaxed);
    Ok(dropped.len())
}

/// Moves a segment that failed while being read into quarantine and out of the manifest.
pub(super) fn quarantine(inner: &Inner, id: SegmentId, reason: &str) -> Result<()> {
    let _guard = inner.maintenance.lock();
    let mut manifest = inner.state.lock().manifest.clone();
    let Some(meta) = manifest.segments.iter().find(|m| m.id == id).cloned() else {
        return Ok(());
    };
    tracing::error!(segment = %id, %reason, "quarantining segment that failed to read");
    manifest.generation += 1;
    manifest.segments.retain(|m| m.id != id);
    manifest.store(&inner.root)?;
    {
        let mut state = inner.state.lock();
        // Commits are serialised by the maintenance lock: each installs the next generation.
        debug_assert_eq!(
            manifest.generation,
            state.manifest.generation + 1,
            "manifest generations increase by one per commit"
        );
        state.manifest = manifest;
        for list in state.segments.values_mut() {
            list.retain(|s| s.meta().id != id);
        }
    }
    super::recovery::quarantine_segment(&inner.root, &meta)?;
    inner
        .counters
        .quarantined_segments
        .fetch_add(1, Ordering::Relaxed);
    Ok(())
}
