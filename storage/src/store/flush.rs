//! Flush: freeze memtables, write one segment per (tenant, signal, partition), commit them in the
//! manifest together with the WAL checkpoint, install them for readers, delete old WAL files.
//!
//! Failure argument: until the manifest rename, nothing visible changed and the WAL still holds
//! every frozen row (replay recreates them; the half-written segment directories are leftovers
//! deleted at open). After the rename, the manifest names the segments and the checkpoint says
//! replay must skip their records, so each row is restored exactly once.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use arrow_array::{RecordBatch, UInt64Array};

use super::{FrozenSet, Inner};
use crate::error::Result;
use crate::manifest::SegmentMeta;
use crate::memtable::MemBatch;
use crate::model::SeriesDef;
use crate::schema;
use crate::segment::{self, Segment};
use crate::types::{SeriesId, Signal, UnixNanos};

/// Splits a memtable's rows by time partition, concatenating its batches.
pub(crate) fn partition_rows(
    signal: Signal,
    batches: &[RecordBatch],
    partition_nanos: i64,
) -> Result<Vec<(UnixNanos, RecordBatch)>> {
    let schema = schema::of(signal);
    let all = arrow_select::concat::concat_batches(&schema, batches)?;
    let times = segment::time_values(signal, &all)?;
    let unit = schema::time_unit_nanos(signal);
    // Appends refuse times outside [1970, 2262), so these products cannot overflow.
    let part = |t: i64| {
        t.saturating_mul(unit)
            .div_euclid(partition_nanos)
            .saturating_mul(partition_nanos)
    };
    let first = times.first().map(|&t| part(t));
    if times.iter().all(|&t| Some(part(t)) == first) {
        return Ok(first.map(|p| vec![(UnixNanos(p), all)]).unwrap_or_default());
    }
    let mut groups: HashMap<i64, Vec<u32>> = HashMap::new();
    for (i, &t) in times.iter().enumerate() {
        groups.entry(part(t)).or_default().push(i as u32);
    }
    let mut out = Vec::with_capacity(groups.len());
    for (p, idx) in groups {
        let idx = arrow_array::UInt32Array::from(idx);
        out.push((UnixNanos(p), crate::columnar::take_batch(&all, &idx)?));
    }
    out.sort_by_key(|(p, _)| *p);
    Ok(out)
}

/// The series definitions a sample batch needs, from the tenant's catalog.
pub(crate) fn series_for(
    batch: &RecordBatch,
    catalog: &HashMap<SeriesId, Arc<SeriesDef>>,
) -> Result<HashMap<SeriesId, Arc<SeriesDef>>> {
    let ids = crate::columnar::decode_column::<UInt64Array>(batch, schema::col::SERIES_ID)?;
    let mut out = HashMap::new();
    for i in 0..ids.len() {
        let id = SeriesId(ids.value(i));
        if let std::collections::hash_map::Entry::Vacant(e) = out.entry(id) {
            let def = catalog
                .get(&id)
                .ok_or(crate::StorageError::UnknownSeries(id.0))?;
            e.insert(def.clone());
        }
    }
    Ok(out)
}

pub(super) fn flush(inner: &Inner) -> Result<()> {
    let _guard = inner.maintenance.lock();
    let result = flush_locked(inner);
    if result.is_err() {
        inner.counters.flush_errors.fetch_add(1, Ordering::Relaxed);
    }
    result
}

fn flush_locked(inner: &Inner) -> Result<()> {
    // 1. Freeze (unless an earlier failed flush left frozen sets to retry).
    {
        let mut state = inner.state.lock();
        if state.active.values().any(|m| !m.is_empty()) {
            let checkpoint = crate::types::Lsn(state.next_lsn.0 - 1);
            inner.wal.rotate(state.next_lsn)?;
            let tables = std::mem::take(&mut state.active)
                .into_iter()
                .filter(|(_, m)| !m.is_empty())
                .map(|(k, m)| {
                    let bytes = m.bytes();
                    (k, m.snapshot(), bytes)
                })
                .collect();
            state
                .frozen
                .push(Arc::new(FrozenSet { tables, checkpoint }));
        }
        if state.frozen.is_empty() {
            return Ok(());
        }
    }
    loop {
        let (set, catalogs) = {
            let state = inner.state.lock();
            let Some(set) = state.frozen.first().cloned() else {
                return Ok(());
            };
            let catalogs: HashMap<_, _> = set
                .tables
                .iter()
                .filter(|((_, s), _, _)| *s == Signal::Samples)
                .filter_map(|((t, _), _, _)| {
                    state
                        .catalogs
                        .get(t)
                        .map(|c| (t.clone(), c.by_id().clone()))
                })
                .collect();
            (set, catalogs)
        };
        flush_set(inner, &set, &catalogs)?;
    }
}

fn flush_set(
    inner: &Inner,
    set: &Arc<FrozenSet>,
    catalogs: &HashMap<crate::TenantId, HashMap<SeriesId, Arc<SeriesDef>>>,
) -> Result<()> {
    let mut manifest = inner.state.lock().manifest.clone();
    let mut written: Vec<(SegmentMeta, Segment)> = Vec::new();
    let empty = HashMap::new();
    for ((tenant, signal), snap, _) in &set.tables {
        let partition_nanos = inner.config.partition_nanos(*signal);
        let batches: Vec<RecordBatch> = snap
            .batches
            .iter()
            .map(|b: &MemBatch| b.batch.clone())
            .collect();
        for (partition_start, rows) in partition_rows(*signal, &batches, partition_nanos)? {
            let series = match signal {
                Signal::Samples => series_for(&rows, catalogs.get(tenant).unwrap_or(&empty))?,
                _ => HashMap::new(),
            };
            let meta = SegmentMeta {
                id: manifest.allocate_segment_id(),
                tenant: tenant.clone(),
                signal: *signal,
                partition_start,
                partition_nanos,
                min_time: UnixNanos(0),
                max_time: UnixNanos(0),
                rows: 0,
                level: 0,
                files: Vec::new(),
            };
            let meta =
                segment::write_segment(&inner.root, meta, &rows, &series, &inner.config.segment)?;
            let seg = Segment::open(&inner.root, meta.clone())?;
            written.push((meta, seg));
        }
    }
    // 2. Commit.
    manifest.generation += 1;
    manifest.wal_checkpoint = manifest.wal_checkpoint.max(set.checkpoint);
    manifest
        .segments
        .extend(written.iter().map(|(m, _)| m.clone()));
    manifest.store(&inner.root)?;
    // 3. Install for readers and drop the frozen memtables, atomically for readers.
    let released: usize = set.tables.iter().map(|(_, _, b)| *b).sum();
    {
        let mut state = inner.state.lock();
        // Commits are serialised by the maintenance lock: each installs the next generation.
        debug_assert_eq!(
            manifest.generation,
            state.manifest.generation + 1,
            "manifest generations increase by one per commit"
        );
        state.manifest = manifest;
        for (meta, seg) in written {
            state
                .segments
                .entry((meta.tenant.clone(), meta.signal))
                .or_default()
                .push(Arc::new(seg));
            inner
                .counters
                .segments_written
                .fetch_add(1, Ordering::Relaxed);
        }
        state.frozen.retain(|f| !Arc::ptr_eq(f, set));
    }
    inner.budget.release(released);
    inner.counters.flushes.fetch_add(1, Ordering::Relaxed);
    // 4. The WAL up to the checkpoint is no longer needed.
    inner.wal.remove_through(set.checkpoint)?;
    Ok(())
}
