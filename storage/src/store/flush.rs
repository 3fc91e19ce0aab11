//! Flush: freeze memtables, write one segment per (tenant, signal, partition), commit them in the
//! manifest together with the WAL checkpoint, install them for readers, delete old WAL files.
//!
//! Failure argument: until the manifest rename, nothing visible changed and the WAL still holds
//! every frozen row (replay recreates them; the half-written segment directories are leftovers
//! deleted at open). After the rename, the manifest names the segments and the checkpoint says
//! replay must skip their records, so each row is restored exactly once.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::Mutex;

use arrow_array::{RecordBatch, UInt64Array};

use super::commit::{allocate_segment_id, commit};
use super::{FrozenSet, Inner};
use crate::error::Result;
use crate::manifest::SegmentMeta;
use crate::memtable::MemBatch;
use crate::model::SeriesDef;
use crate::schema;
use crate::segment::{self, Segment};
use crate::types::{SeriesId, Signal, UnixNanos};

/// Where one time partition's rows are in a frozen memtable: whole batches or rows of batches.
#[derive(Debug)]
enum Piece {
    Whole(usize),
    Rows(usize, Vec<u32>),
}

/// Groups a memtable's rows by time partition without copying them: per partition start, the
/// batches (or rows of batches) it holds, in memtable order.
fn partition_pieces(
    signal: Signal,
    batches: &[RecordBatch],
    partition_nanos: i64,
) -> Result<BTreeMap<i64, Vec<Piece>>> {
    let unit = schema::time_unit_nanos(signal);
    // Appends refuse times outside [1970, 2262), so these products cannot overflow.
    let part = |t: i64| {
        t.saturating_mul(unit)
            .div_euclid(partition_nanos)
            .saturating_mul(partition_nanos)
    };
    let mut out: BTreeMap<i64, Vec<Piece>> = BTreeMap::new();
    for (b, batch) in batches.iter().enumerate() {
        let times = segment::time_values(signal, batch)?;
        let Some(first) = times.first().map(|&t| part(t)) else {
            continue;
        };
        if times.iter().all(|&t| part(t) == first) {
            out.entry(first).or_default().push(Piece::Whole(b));
            continue;
        }
        let mut rows: BTreeMap<i64, Vec<u32>> = BTreeMap::new();
        for (i, &t) in times.iter().enumerate() {
            rows.entry(part(t)).or_default().push(i as u32);
        }
        for (p, idx) in rows {
            out.entry(p).or_default().push(Piece::Rows(b, idx));
        }
    }
    Ok(out)
}

/// The rows of one partition as one batch in segment order: one copy (the memtable stays as
/// it is). Only the sort keys are gathered to find the order; the rows are then copied once,
/// straight into it, so a flush holds the frozen memtable and one copy of a partition's rows.
fn gather_sorted(signal: Signal, batches: &[RecordBatch], pieces: &[Piece]) -> Result<RecordBatch> {
    if signal == Signal::Samples {
        return gather_samples(batches, pieces);
    }
    let rows: usize = pieces
        .iter()
        .map(|p| match p {
            Piece::Whole(b) => batches[*b].num_rows(),
            Piece::Rows(_, idx) => idx.len(),
        })
        .sum();
    // (batch, row) of every row of the partition, in memtable order.
    let mut at: Vec<(usize, usize)> = Vec::with_capacity(rows);
    for p in pieces {
        match p {
            Piece::Whole(b) => at.extend((0..batches[*b].num_rows()).map(|r| (*b, r))),
            Piece::Rows(b, idx) => at.extend(idx.iter().map(|&r| (*b, r as usize))),
        }
    }
    let names = segment::sort_key_columns(signal);
    let mut fields = Vec::with_capacity(names.len());
    let mut keys = Vec::with_capacity(names.len());
    let full = schema::of(signal);
    for name in names {
        let field = full.field_with_name(name)?;
        let columns = batches
            .iter()
            .map(|b| {
                b.column_by_name(name).map(|c| c.as_ref()).ok_or_else(|| {
                    crate::StorageError::InvalidInput(format!("memtable batch lacks {name}"))
                })
            })
            .collect::<Result<Vec<&dyn arrow_array::Array>>>()?;
        keys.push(arrow_select::interleave::interleave(&columns, &at)?);
        fields.push(field.clone());
    }
    let keys = RecordBatch::try_new(Arc::new(arrow_schema::Schema::new(fields)), keys)?;
    let order = segment::segment_order(signal, &keys)?;
    drop(keys);
    let sorted: Vec<(usize, usize)> = order.values().iter().map(|&i| at[i as usize]).collect();
    drop(at);
    let refs: Vec<&RecordBatch> = batches.iter().collect();
    Ok(arrow_select::interleave::interleave_record_batch(
        &refs, &sorted,
    )?)
}

/// The samples of `batches` in segment order, by the counting sort of [`gather_samples`]; of
/// rows sharing a series and a time the last (in `batches` order) stays.
pub(super) fn samples_in_segment_order(batches: &[RecordBatch]) -> Result<RecordBatch> {
    let pieces: Vec<Piece> = (0..batches.len()).map(Piece::Whole).collect();
    gather_samples(batches, &pieces)
}

/// [`gather_sorted`] for samples, by a counting sort on the series (a memtable holds many
/// rows per series): each row is copied once, in memtable order, straight into the output
/// columns at its series' place; then each series' run is put in time order (it already is
/// when its samples arrived in order, the usual case) and of rows sharing a time the last
/// written stays, as [`segment::segment_order`] keeps. Holds the output columns and a few
/// bytes per series, not sort keys and a permutation per row.
fn gather_samples(batches: &[RecordBatch], pieces: &[Piece]) -> Result<RecordBatch> {
    use arrow_array::{Float64Array, TimestampMillisecondArray};
    let cols = batches
        .iter()
        .map(super::sample_merge::columns)
        .collect::<Result<Vec<_>>>()?;
    // Every row of the pieces, in memtable order.
    let each_row = |f: &mut dyn FnMut(u64, i64, f64)| {
        for p in pieces {
            let (b, rows) = match p {
                Piece::Whole(b) => (*b, None),
                Piece::Rows(b, idx) => (*b, Some(idx)),
            };
            let (series, ts, values) = (cols[b].ids, cols[b].ts, cols[b].vals);
            match rows {
                None => (0..series.len()).for_each(|r| f(series[r], ts[r], values[r])),
                Some(idx) => idx.iter().for_each(|&r| {
                    let r = r as usize;
                    f(series[r], ts[r], values[r])
                }),
            }
        }
    };
    // Rows per series, then each series' first place in id order.
    let mut slot: rustc_hash::FxHashMap<u64, usize> = Default::default();
    let mut counts: Vec<usize> = Vec::new();
    each_row(&mut |s, _, _| {
        let next = counts.len();
        let i = *slot.entry(s).or_insert(next);
        if i == next {
            counts.push(0);
        }
        counts[i] += 1;
    });
    let mut ids: Vec<(u64, usize)> = slot.iter().map(|(&s, &i)| (s, i)).collect();
    ids.sort_unstable();
    let mut start = vec![0usize; counts.len()];
    let mut runs = Vec::with_capacity(ids.len());
    let mut at = 0;
    for &(s, i) in &ids {
        start[i] = at;
        runs.push((s, at..at + counts[i]));
        at += counts[i];
    }
    let rows = at;
    let (mut out_series, mut out_ts, mut out_values) =
        (vec![0u64; rows], vec![0i64; rows], vec![0f64; rows]);
    let mut fill = start;
    each_row(&mut |s, t, v| {
        let i = slot[&s];
        let at = fill[i];
        fill[i] += 1;
        (out_series[at], out_ts[at], out_values[at]) = (s, t, v);
    });
    // Each run into time order, one row per time, compacted towards the front.
    let mut write = 0;
    let mut scratch: Vec<(i64, f64)> = Vec::new();
    for (s, run) in runs {
        let ordered = out_ts[run.clone()].windows(2).all(|w| w[0] < w[1]);
        let len = if ordered {
            out_ts.copy_within(run.clone(), write);
            out_values.copy_within(run.clone(), write);
            run.len()
        } else {
            scratch.clear();
            scratch.extend(run.clone().map(|r| (out_ts[r], out_values[r])));
            // Stable: of equal times the later written stays later, then alone.
            scratch.sort_by_key(|&(t, _)| t);
            let mut n = 0;
            for k in 0..scratch.len() {
                if scratch
                    .get(k + 1)
                    .is_some_and(|next| next.0 == scratch[k].0)
                {
                    continue;
                }
                (out_ts[write + n], out_values[write + n]) = scratch[k];
                n += 1;
            }
            n
        };
        out_series[write..write + len].fill(s);
        write += len;
    }
    out_series.truncate(write);
    out_ts.truncate(write);
    out_values.truncate(write);
    Ok(RecordBatch::try_new(
        schema::of(Signal::Samples),
        vec![
            Arc::new(UInt64Array::from(out_series)),
            Arc::new(TimestampMillisecondArray::from(out_ts)),
            Arc::new(Float64Array::from(out_values)),
        ],
    )?)
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
    let _flushing = inner.flushing.lock();
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

/// One segment to write: a table's rows of one partition.
struct Job<'a> {
    tenant: &'a crate::TenantId,
    signal: Signal,
    batches: &'a [RecordBatch],
    partition_start: i64,
    partition_nanos: i64,
    pieces: Vec<Piece>,
}

fn write_job(
    inner: &Inner,
    job: &Job<'_>,
    catalogs: &HashMap<crate::TenantId, HashMap<SeriesId, Arc<SeriesDef>>>,
) -> Result<(SegmentMeta, Segment)> {
    let rows = gather_sorted(job.signal, job.batches, &job.pieces)?;
    let series = match job.signal {
        Signal::Samples => match catalogs.get(job.tenant) {
            Some(catalog) => series_for(&rows, catalog)?,
            None => series_for(&rows, &HashMap::new())?,
        },
        _ => HashMap::new(),
    };
    let meta = SegmentMeta::to_write(
        allocate_segment_id(inner),
        job.tenant.clone(),
        job.signal,
        (UnixNanos(job.partition_start), job.partition_nanos),
        0,
    );
    let meta = segment::write_segment(&inner.root, meta, rows, &series, &inner.config.segment)?;
    let seg = Segment::open(&inner.root, meta.clone())?;
    seg.warm();
    Ok((meta, seg))
}

/// Writes the segments of one frozen set, `flush_threads` partitions at a time, largest first.
fn write_segments(
    inner: &Inner,
    set: &FrozenSet,
    catalogs: &HashMap<crate::TenantId, HashMap<SeriesId, Arc<SeriesDef>>>,
) -> Result<Vec<(SegmentMeta, Segment)>> {
    let batches: Vec<Vec<RecordBatch>> = set
        .tables
        .iter()
        .map(|(_, snap, _)| {
            snap.batches
                .iter()
                .map(|b: &MemBatch| b.batch.clone())
                .collect()
        })
        .collect();
    let mut jobs = Vec::new();
    for (((tenant, signal), _, _), batches) in set.tables.iter().zip(&batches) {
        let partition_nanos = inner.config.partition_nanos(*signal);
        for (partition_start, pieces) in partition_pieces(*signal, batches, partition_nanos)? {
            jobs.push(Job {
                tenant,
                signal: *signal,
                batches,
                partition_start,
                partition_nanos,
                pieces,
            });
        }
    }
    let rows = |j: &Job<'_>| -> usize {
        j.pieces
            .iter()
            .map(|p| match p {
                Piece::Whole(b) => j.batches[*b].num_rows(),
                Piece::Rows(_, idx) => idx.len(),
            })
            .sum()
    };
    // Largest first, so the last partitions to finish are small ones.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(rows(&jobs[i])));
    let next = AtomicUsize::new(0);
    let threads = inner.config.flush_threads.clamp(1, jobs.len().max(1));
    let mut results: Vec<Option<Result<(SegmentMeta, Segment)>>> = Vec::new();
    results.resize_with(jobs.len(), || None);
    let results = Mutex::new(results);
    let failed = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while !failed.load(Ordering::Relaxed) {
                    let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    let r = write_job(inner, &jobs[i], catalogs);
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    results.lock()[i] = Some(r);
                }
            });
        }
    });
    let mut written = Vec::with_capacity(jobs.len());
    let mut error = None;
    for r in results.into_inner() {
        match r {
            Some(Ok(w)) => written.push(w),
            Some(Err(e)) => error = error.or(Some(e)),
            None => {}
        }
    }
    if let Some(e) = error {
        // Not committed: the written segments' files go with their handles.
        for (_, seg) in &written {
            seg.mark_obsolete();
        }
        return Err(e);
    }
    Ok(written)
}

fn flush_set(
    inner: &Inner,
    set: &Arc<FrozenSet>,
    catalogs: &HashMap<crate::TenantId, HashMap<SeriesId, Arc<SeriesDef>>>,
) -> Result<()> {
    let written = write_segments(inner, set, catalogs)?;
    // 2. Commit, and 3. install for readers and drop the frozen memtables, atomically for
    // readers.
    let metas: Vec<SegmentMeta> = written.iter().map(|(m, _)| m.clone()).collect();
    commit(
        inner,
        |manifest| {
            manifest.wal_checkpoint = manifest.wal_checkpoint.max(set.checkpoint);
            manifest.segments.extend(metas);
            Some(())
        },
        |state, ()| {
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
        },
    )?;
    let released: usize = set
        .tables
        .iter()
        .map(|(_, snap, b)| b + snap.retire_text_index())
        .sum();
    inner.budget.release(released);
    inner.counters.flushes.fetch_add(1, Ordering::Relaxed);
    // 4. The WAL up to the checkpoint is no longer needed.
    inner.wal.remove_through(set.checkpoint)?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::columnar;
    use crate::model::Sample;
    use arrow_array::Float64Array;

    fn samples(rows: &[(u64, i64, f64)]) -> RecordBatch {
        let s: Vec<Sample> = rows
            .iter()
            .map(|&(series, timestamp_ms, value)| Sample {
                series: SeriesId(series),
                timestamp_ms,
                value,
            })
            .collect();
        columnar::samples_to_batch(&s).unwrap()
    }

    /// The single-copy gather gives what sorting a concatenated copy gave: the same rows in
    /// segment order, and for samples the value written last of a repeated (series, time),
    /// across batches and partial batches.
    #[test]
    fn gather_sorted_is_the_sort_of_the_concatenation() {
        let batches = vec![
            samples(&[(2, 5, 1.0), (1, 9, 2.0), (3, 1, 3.0)]),
            samples(&[(1, 9, 4.0), (2, 5, 5.0), (1, 3, 6.0)]),
            samples(&[(2, 5, 7.0), (1, 1, 8.0)]),
        ];
        let pieces = vec![
            Piece::Whole(0),
            Piece::Rows(1, vec![0, 2]),
            Piece::Rows(2, vec![0]),
        ];
        let got = gather_sorted(Signal::Samples, &batches, &pieces).unwrap();
        let concat = arrow_select::concat::concat_batches(
            &schema::of(Signal::Samples),
            &[
                batches[0].clone(),
                columnar::take_batch(&batches[1], &arrow_array::UInt32Array::from(vec![0, 2]))
                    .unwrap(),
                columnar::take_batch(&batches[2], &arrow_array::UInt32Array::from(vec![0]))
                    .unwrap(),
            ],
        )
        .unwrap();
        let want = segment::sort_samples(&concat).unwrap();
        assert_eq!(got, want);
        let series = columnar::decode_column::<UInt64Array>(&got, schema::col::SERIES_ID).unwrap();
        let values = columnar::decode_column::<Float64Array>(&got, schema::col::VALUE).unwrap();
        let rows: Vec<(u64, f64)> = (0..got.num_rows())
            .map(|i| (series.value(i), values.value(i)))
            .collect();
        // (1,3) 6.0, (1,9) last written 4.0, (2,5) last written 7.0, (3,1) 3.0.
        assert_eq!(rows, vec![(1, 6.0), (1, 4.0), (2, 7.0), (3, 3.0)]);
    }

    proptest::proptest! {
        /// The counting sort of samples against the general sort of their concatenation, on
        /// few series and times (so repeats and disorder are common) and pieces of batches.
        #[test]
        fn sample_gather_is_the_sort_of_the_concatenation(
            batches in proptest::collection::vec(
                proptest::collection::vec((0u64..5, 0i64..12, -1e3f64..1e3), 1..30),
                1..5,
            ),
            picks in proptest::collection::vec(proptest::option::of(0u8..4), 5),
        ) {
            let batches: Vec<RecordBatch> = batches.iter().map(|b| samples(b)).collect();
            let mut pieces = Vec::new();
            let mut parts = Vec::new();
            for (b, batch) in batches.iter().enumerate() {
                match picks[b] {
                    None => {
                        pieces.push(Piece::Whole(b));
                        parts.push(batch.clone());
                    }
                    Some(m) => {
                        let idx: Vec<u32> = (0..batch.num_rows() as u32)
                            .filter(|r| r % 4 != u32::from(m))
                            .collect();
                        let take = arrow_array::UInt32Array::from(idx.clone());
                        parts.push(columnar::take_batch(batch, &take).unwrap());
                        pieces.push(Piece::Rows(b, idx));
                    }
                }
            }
            let got = gather_samples(&batches, &pieces).unwrap();
            let concat =
                arrow_select::concat::concat_batches(&schema::of(Signal::Samples), &parts).unwrap();
            proptest::prop_assert_eq!(got, segment::sort_samples(&concat).unwrap());
        }
    }
}
