//! Samples of several sources merged into one time-ordered run per series.
//!
//! A scan of samples reads segments (each sorted by series and time, one value per timestamp)
//! and memtables (rows in arrival order, one request after another). One series' samples can
//! sit in several of them, and one (series, timestamp) twice: a client retry that landed in
//! another flush, or twice in one request. The merge groups every source's rows by series as
//! runs (a segment gives one run per series, a memtable one per series per request), then per
//! series concatenates its runs when they follow each other in time, the usual case, and only
//! otherwise sorts that series' samples. Of equal timestamps the value read last wins
//! (memtables after segments, newer segments after older, later rows after earlier). The work
//! is linear in the rows plus a sort of the runs of each series, not a sort of every row.

use std::sync::Arc;

use arrow_array::{Array, Float64Array, RecordBatch, TimestampMillisecondArray, UInt64Array};
use rustc_hash::FxHashMap;

use crate::deadline::Deadline;
use crate::error::{Result, StorageError};
use crate::schema::col;
use crate::series::{DEADLINE_STRIDE, id_runs};
use crate::types::SeriesId;

/// The samples of one series, sorted by time with one value per timestamp.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesSamples {
    /// The series.
    pub series: SeriesId,
    /// Sample times, milliseconds since the Unix epoch, strictly increasing.
    pub timestamps: Vec<i64>,
    /// The value at each timestamp.
    pub values: Vec<f64>,
}

/// The sample rows of one source, in the order the scan read them.
pub(crate) struct SampleSource {
    /// Whether the rows are sorted by (series, time) without a (series, time) twice
    /// (segments); memtable rows are not.
    pub clean: bool,
    /// The rows (columns `series_id`, `timestamp`, `value` at least).
    pub batches: Vec<RecordBatch>,
}

/// Merged series as one batch of the sample schema, sorted by series and time.
pub(crate) fn to_batch(series: &[SeriesSamples]) -> Result<RecordBatch> {
    let rows: usize = series.iter().map(|s| s.timestamps.len()).sum();
    let mut ids = Vec::with_capacity(rows);
    let mut ts = Vec::with_capacity(rows);
    let mut vals = Vec::with_capacity(rows);
    for s in series {
        ids.extend(std::iter::repeat_n(s.series.0, s.timestamps.len()));
        ts.extend_from_slice(&s.timestamps);
        vals.extend_from_slice(&s.values);
    }
    Ok(RecordBatch::try_new(
        crate::schema::of(crate::types::Signal::Samples),
        vec![
            Arc::new(UInt64Array::from(ids)),
            Arc::new(TimestampMillisecondArray::from(ts)),
            Arc::new(Float64Array::from(vals)),
        ],
    )?)
}

/// One batch's three sample columns.
pub(super) struct Columns<'a> {
    pub ids: &'a [u64],
    pub ts: &'a [i64],
    pub vals: &'a [f64],
}

/// The sample columns of `b`, refusing a missing column or a null.
pub(super) fn columns(b: &RecordBatch) -> Result<Columns<'_>> {
    let missing = |c: &str| {
        StorageError::Arrow(arrow_schema::ArrowError::SchemaError(format!(
            "sample batch without {c}"
        )))
    };
    let ids = b
        .column_by_name(col::SERIES_ID)
        .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
        .ok_or_else(|| missing(col::SERIES_ID))?;
    let ts = b
        .column_by_name(col::TIMESTAMP)
        .and_then(|c| c.as_any().downcast_ref::<TimestampMillisecondArray>())
        .ok_or_else(|| missing(col::TIMESTAMP))?;
    let vals = b
        .column_by_name(col::VALUE)
        .and_then(|c| c.as_any().downcast_ref::<Float64Array>())
        .ok_or_else(|| missing(col::VALUE))?;
    if ids.null_count() + ts.null_count() + vals.null_count() > 0 {
        return Err(StorageError::Arrow(
            arrow_schema::ArrowError::InvalidArgumentError("null in a sample column".into()),
        ));
    }
    Ok(Columns {
        ids: ids.values(),
        ts: ts.values(),
        vals: vals.values(),
    })
}

/// Rows `start..end` of batch `batch` (numbered across all sources), all of one series.
#[derive(Clone, Copy, Debug)]
struct Run {
    batch: u32,
    start: u32,
    end: u32,
    /// Whether the run's times strictly increase.
    sorted: bool,
}

/// Merges `sources` (in read order) into one entry per series, sorted by series id.
pub(crate) fn merge(sources: &[SampleSource], deadline: &Deadline) -> Result<Vec<SeriesSamples>> {
    let cols: Vec<(bool, Columns<'_>)> = sources
        .iter()
        .flat_map(|s| s.batches.iter().map(move |b| (s.clean, b)))
        .map(|(clean, b)| columns(b).map(|c| (clean, c)))
        .collect::<Result<_>>()?;
    let mut by_series: FxHashMap<u64, Vec<Run>> = FxHashMap::default();
    for (bi, (clean, c)) in cols.iter().enumerate() {
        deadline.check()?;
        for (n, run) in id_runs(c.ids).enumerate() {
            if n % DEADLINE_STRIDE == DEADLINE_STRIDE - 1 {
                deadline.check()?;
            }
            let sorted = *clean || c.ts[run.clone()].windows(2).all(|w| w[0] < w[1]);
            debug_assert!(
                !clean || c.ts[run.clone()].windows(2).all(|w| w[0] < w[1]),
                "a clean source is sorted by time per series"
            );
            by_series.entry(c.ids[run.start]).or_default().push(Run {
                batch: bi as u32,
                start: run.start as u32,
                end: run.end as u32,
                sorted,
            });
        }
    }
    let mut ids: Vec<u64> = by_series.keys().copied().collect();
    ids.sort_unstable();
    let mut out = Vec::with_capacity(ids.len());
    for (n, id) in ids.into_iter().enumerate() {
        if n % DEADLINE_STRIDE == 0 {
            deadline.check()?;
        }
        let Some(runs) = by_series.remove(&id) else {
            continue;
        };
        out.push(merge_series(SeriesId(id), runs, &cols));
    }
    Ok(out)
}

/// One series' runs (in read order) as one time-ordered run.
fn merge_series(
    series: SeriesId,
    mut runs: Vec<Run>,
    cols: &[(bool, Columns<'_>)],
) -> SeriesSamples {
    let first = |r: &Run| cols[r.batch as usize].1.ts[r.start as usize];
    let last = |r: &Run| cols[r.batch as usize].1.ts[r.end as usize - 1];
    let len: usize = runs.iter().map(|r| (r.end - r.start) as usize).sum();
    let mut timestamps = Vec::with_capacity(len);
    let mut values = Vec::with_capacity(len);
    // Stable: runs starting at the same time keep their read order.
    runs.sort_by_key(first);
    let disjoint =
        runs.iter().all(|r| r.sorted) && runs.windows(2).all(|w| last(&w[0]) < first(&w[1]));
    if disjoint {
        for r in &runs {
            let c = &cols[r.batch as usize].1;
            let (s, e) = (r.start as usize, r.end as usize);
            if e - s == 1 {
                // A memtable run of one request's sample: a push, not a copy call.
                timestamps.push(c.ts[s]);
                values.push(c.vals[s]);
            } else {
                timestamps.extend_from_slice(&c.ts[s..e]);
                values.extend_from_slice(&c.vals[s..e]);
            }
        }
    } else {
        merge_overlapping(&runs, cols, &mut timestamps, &mut values);
    }
    debug_assert!(
        timestamps.windows(2).all(|w| w[0] < w[1]),
        "merged samples strictly increase in time"
    );
    SeriesSamples {
        series,
        timestamps,
        values,
    }
}

/// Runs of one series that overlap in time (compaction merged segments that were not adjacent,
/// a retry landed among newer samples, a request held samples out of order), sorted by first
/// time: each run is laid into the output in turn, appended where it starts after the output
/// ends and otherwise merged with the output's tail from its first time on, so the work is
/// the rows plus the overlaps, not a sort of every row. Each output sample remembers its read
/// position, which decides between equal times (the later read wins).
fn merge_overlapping(
    runs: &[Run],
    cols: &[(bool, Columns<'_>)],
    timestamps: &mut Vec<i64>,
    values: &mut Vec<f64>,
) {
    let mut order: Vec<u64> = Vec::with_capacity(timestamps.capacity());
    let mut run_rows: Vec<(i64, f64, u64)> = Vec::new();
    let mut tail: Vec<(i64, f64, u64)> = Vec::new();
    for r in runs {
        let c = &cols[r.batch as usize].1;
        // Read position of each row: batch, then row.
        let pos = |i: u32| (u64::from(r.batch) << 32) | u64::from(i);
        run_rows.clear();
        run_rows.extend((r.start..r.end).map(|i| (c.ts[i as usize], c.vals[i as usize], pos(i))));
        if !r.sorted {
            // Stable by time: of equal times the later row stays last, and is kept.
            run_rows.sort_by_key(|x| x.0);
            let mut w = 0;
            for k in 0..run_rows.len() {
                if run_rows.get(k + 1).is_some_and(|n| n.0 == run_rows[k].0) {
                    continue;
                }
                run_rows[w] = run_rows[k];
                w += 1;
            }
            run_rows.truncate(w);
        }
        let Some(&(first, _, _)) = run_rows.first() else {
            continue;
        };
        if timestamps.last().is_none_or(|&t| t < first) {
            timestamps.extend(run_rows.iter().map(|x| x.0));
            values.extend(run_rows.iter().map(|x| x.1));
            order.extend(run_rows.iter().map(|x| x.2));
            continue;
        }
        let p = timestamps.partition_point(|&t| t < first);
        tail.clear();
        tail.extend(
            timestamps[p..]
                .iter()
                .zip(&values[p..])
                .zip(&order[p..])
                .map(|((&t, &v), &o)| (t, v, o)),
        );
        timestamps.truncate(p);
        values.truncate(p);
        order.truncate(p);
        let (mut a, mut b) = (0, 0);
        while a < tail.len() || b < run_rows.len() {
            let next = match (tail.get(a), run_rows.get(b)) {
                (Some(x), Some(y)) if x.0 == y.0 => {
                    a += 1;
                    b += 1;
                    if x.2 > y.2 { *x } else { *y }
                }
                (Some(x), Some(y)) if x.0 < y.0 => {
                    a += 1;
                    *x
                }
                (_, Some(y)) => {
                    b += 1;
                    *y
                }
                (Some(x), None) => {
                    a += 1;
                    *x
                }
                (None, None) => break,
            };
            timestamps.push(next.0);
            values.push(next.1);
            order.push(next.2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn batch(rows: &[(u64, i64, f64)]) -> RecordBatch {
        let schema = crate::schema::of(crate::types::Signal::Samples);
        let ids = UInt64Array::from_iter_values(rows.iter().map(|r| r.0));
        let ts = TimestampMillisecondArray::from_iter_values(rows.iter().map(|r| r.1));
        let vals = Float64Array::from_iter_values(rows.iter().map(|r| r.2));
        let fields: Vec<arrow_schema::FieldRef> = [col::SERIES_ID, col::TIMESTAMP, col::VALUE]
            .iter()
            .map(|c| Arc::new(schema.field_with_name(c).expect("field").clone()))
            .collect();
        RecordBatch::try_new(
            Arc::new(arrow_schema::Schema::new(fields)),
            vec![Arc::new(ids), Arc::new(ts), Arc::new(vals)],
        )
        .expect("batch")
    }

    /// A source's batches of (series, time, value) rows.
    type Rows = Vec<Vec<(u64, i64, f64)>>;

    /// The reference: every row in read order, the last of each (series, time) kept.
    fn reference(sources: &[Rows]) -> Vec<SeriesSamples> {
        let mut m: std::collections::BTreeMap<u64, std::collections::BTreeMap<i64, f64>> =
            Default::default();
        for s in sources {
            for b in s {
                for &(id, t, v) in b {
                    m.entry(id).or_default().insert(t, v);
                }
            }
        }
        m.into_iter()
            .map(|(id, pts)| SeriesSamples {
                series: SeriesId(id),
                timestamps: pts.keys().copied().collect(),
                values: pts.values().copied().collect(),
            })
            .collect()
    }

    fn run(sources: &[Rows], clean: &[bool]) -> Vec<SeriesSamples> {
        let srcs: Vec<SampleSource> = sources
            .iter()
            .zip(clean)
            .map(|(s, &clean)| SampleSource {
                clean,
                batches: s.iter().map(|b| batch(b)).collect(),
            })
            .collect();
        merge(&srcs, &Deadline::none()).expect("merge")
    }

    #[test]
    fn disjoint_segments_concatenate_and_retries_resolve_to_the_last_read() {
        let seg1 = vec![vec![(1, 10, 1.0), (1, 20, 2.0), (2, 10, 5.0)]];
        let seg2 = vec![vec![(1, 30, 3.0), (2, 20, 6.0)]];
        // A retry of (1, 20) with another value, and samples out of order in one request.
        let mem = vec![
            vec![(2, 40, 8.0), (1, 20, 9.0), (2, 30, 7.0)],
            vec![(2, 30, 7.5)],
        ];
        let got = run(
            &[seg1.clone(), seg2.clone(), mem.clone()],
            &[true, true, false],
        );
        assert_eq!(got, reference(&[seg1, seg2, mem]));
        assert_eq!(got[0].timestamps, vec![10, 20, 30]);
        assert_eq!(got[0].values, vec![1.0, 9.0, 3.0]);
        assert_eq!(got[1].values, vec![5.0, 6.0, 7.5, 8.0]);
    }

    #[test]
    fn expired_deadline_stops_the_merge() {
        let srcs = vec![SampleSource {
            clean: true,
            batches: vec![batch(&[(1, 1, 1.0)])],
        }];
        let d = Deadline::after(std::time::Duration::ZERO);
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(matches!(
            merge(&srcs, &d),
            Err(StorageError::DeadlineExceeded)
        ));
    }

    /// Segment-like sources: sorted by (series, time), one value per (series, time).
    fn clean_source() -> impl Strategy<Value = Rows> {
        prop::collection::btree_map((0u64..5, 0i64..40), -5.0f64..5.0, 0..40).prop_map(|m| {
            let rows: Vec<(u64, i64, f64)> = m.into_iter().map(|((s, t), v)| (s, t, v)).collect();
            let mid = rows.len() / 2;
            vec![rows[..mid].to_vec(), rows[mid..].to_vec()]
        })
    }

    /// Memtable-like sources: any rows in any order.
    fn dirty_source() -> impl Strategy<Value = Rows> {
        prop::collection::vec(
            prop::collection::vec((0u64..5, 0i64..40, -5.0f64..5.0), 0..12),
            0..4,
        )
    }

    proptest! {
        #[test]
        fn merge_equals_the_last_write_per_series_and_time(
            segs in prop::collection::vec(clean_source(), 0..4),
            mems in prop::collection::vec(dirty_source(), 0..3),
        ) {
            let mut sources = segs.clone();
            sources.extend(mems.iter().cloned());
            let clean: Vec<bool> = (0..sources.len()).map(|i| i < segs.len()).collect();
            prop_assert_eq!(run(&sources, &clean), reference(&sources));
        }
    }
}
