//! Scans: snapshot segments and memtables under the state lock, then read without it.

use rustc_hash::FxHashSet;
use std::sync::Arc;

use arrow_array::RecordBatch;

use super::Inner;
use super::sample_merge::{self, SampleSource, SeriesSamples};
use crate::deadline::Deadline;
use crate::error::{Result, StorageError};
use crate::memtable::MemSnapshot;
use crate::predicate::{Predicate, ScanRequest};
use crate::scan_memory::ScanMemory;
use crate::segment::scan::{CompiledScan, RowGroupPlan, SegmentPlan};
use crate::segment::{ScanStats, Segment};
use crate::types::Signal;

/// Rows of a scan and how they were found.
#[derive(Debug, Default)]
pub struct ScanResult {
    /// Matching rows with the requested columns. Batches carry no particular order.
    pub batches: Vec<RecordBatch>,
    /// With [`ScanRequest::rollups`]: rollup rows (schema [`crate::rollup::SCHEMA`]) standing
    /// for the matching spans of the segments that answered from their rollup; those spans are
    /// not in `batches`.
    pub rollups: Vec<RecordBatch>,
    /// Pruning statistics (summed over the parts of a scan cut at rollup buckets, whose
    /// segments are counted once per part).
    pub stats: ScanStats,
    /// Segments that could not be read and were quarantined during this scan.
    pub warnings: Vec<String>,
    /// The bytes of `batches` and `rollups`, held against the store's scan memory budget until
    /// this result is dropped.
    pub memory: ScanMemory,
}

impl ScanResult {
    /// Total rows returned.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

pub(super) fn scan(inner: &Inner, req: &ScanRequest) -> Result<ScanResult> {
    let memory = inner.scan_memory.share();
    let Some(parts) = rollup_parts(req) else {
        let mut out = scan_once(inner, req, &memory)?;
        out.memory = memory;
        return Ok(out);
    };
    let mut out = ScanResult {
        memory,
        ..ScanResult::default()
    };
    for part in &parts {
        let r = scan_once(inner, part, &out.memory)?;
        out.batches.extend(r.batches);
        out.rollups.extend(r.rollups);
        out.stats.add(&r.stats);
        out.warnings.extend(r.warnings);
    }
    Ok(out)
}

/// A span scan that may answer from rollups over a range that starts or ends inside a rollup
/// bucket, cut into the whole buckets inside the range (answered from rollups where segments
/// have them) and the partial buckets at its ends (read as rows): a segment the range cuts
/// through is then aggregated from its rollup but for the spans of the two edge minutes,
/// instead of row by row. With [`ScanRequest::rollup_hours`] the whole hours inside are cut
/// out too, so that hourly rollups answer for them and the partial hours at the ends come from
/// minute rollups. `None` when the range needs no cut (aligned, unbounded, or within one
/// bucket) or the scan takes no rollups. The parts are disjoint and cover the range, so no row
/// is counted twice; each part sees the store as it is when that part runs.
fn rollup_parts(req: &ScanRequest) -> Option<Vec<ScanRequest>> {
    use crate::rollup::{BUCKET_NANOS, HOUR_BUCKET_NANOS};
    if !req.rollups || req.signal != Signal::Spans {
        return None;
    }
    let (s, e) = (req.time.start.0, req.time.end.0);
    // The first bucket edge at or after the start and the last at or before the end.
    let up = |b: i64| {
        if s == i64::MIN || s.rem_euclid(b) == 0 {
            Some(s)
        } else {
            s.div_euclid(b).checked_add(1)?.checked_mul(b)
        }
    };
    let down = |b: i64| {
        if e == i64::MAX {
            e
        } else {
            e.div_euclid(b) * b
        }
    };
    let (m1, m2) = (up(BUCKET_NANOS)?, down(BUCKET_NANOS));
    if m1 >= m2 {
        return None;
    }
    // (start, end, rollups, hourly rollups), in time order.
    let mut cuts: Vec<(i64, i64, bool, bool)> = Vec::with_capacity(5);
    cuts.push((s, m1, false, false));
    match up(HOUR_BUCKET_NANOS) {
        Some(h1) if req.rollup_hours && h1 < down(HOUR_BUCKET_NANOS) => {
            let h2 = down(HOUR_BUCKET_NANOS);
            cuts.push((m1, h1, true, false));
            cuts.push((h1, h2, true, true));
            cuts.push((h2, m2, true, false));
        }
        _ => cuts.push((m1, m2, true, req.rollup_hours)),
    }
    cuts.push((m2, e, false, false));
    cuts.retain(|&(lo, hi, _, _)| lo < hi);
    if cuts.len() == 1 {
        return None;
    }
    debug_assert!(
        cuts.windows(2).all(|w| w[0].1 == w[1].0)
            && cuts.first().map(|c| c.0) == Some(s)
            && cuts.last().map(|c| c.1) == Some(e),
        "scan parts must tile the range"
    );
    Some(
        cuts.into_iter()
            .map(|(lo, hi, rollups, hours)| {
                let mut r = req.clone();
                r.time = crate::types::TimeRange {
                    start: crate::types::UnixNanos(lo),
                    end: crate::types::UnixNanos(hi),
                };
                r.rollups = rollups;
                r.rollup_hours = hours;
                r
            })
            .collect(),
    )
}

/// One scan over one consistent view of the segments and memtables.
fn scan_once(inner: &Inner, req: &ScanRequest, memory: &ScanMemory) -> Result<ScanResult> {
    let (mut result, sources, compiled) = read_sources(inner, req, memory)?;
    if req.signal == Signal::Samples {
        let merged = dedupe_samples(sources, &req.deadline)?;
        result.batches = merged
            .iter()
            .map(|b| compiled.project(b))
            .collect::<Result<_>>()?;
        result.stats.rows_returned = result.num_rows() as u64;
    }
    Ok(result)
}

/// Samples of the series a scan selects, one time-ordered run per series.
#[derive(Debug)]
pub struct SampleScan {
    /// One entry per series with samples in the range, sorted by series id.
    pub series: Vec<SeriesSamples>,
    /// Pruning statistics.
    pub stats: ScanStats,
    /// Segments that could not be read and were quarantined during this scan.
    pub warnings: Vec<String>,
    /// The bytes read, held against the store's scan memory budget until this is dropped.
    pub memory: ScanMemory,
}

impl SampleScan {
    /// Samples returned, over all series.
    pub fn num_samples(&self) -> usize {
        self.series.iter().map(|s| s.timestamps.len()).sum()
    }
}

/// A scan of samples answered per series ([`sample_merge`]): a reader that wants each series'
/// samples in time order gets them without a sort of every row or a copy through batches.
/// `max_samples` refuses, with [`StorageError::TooManySamples`], a scan that read more rows
/// before they are merged.
pub(super) fn scan_samples(
    inner: &Inner,
    req: &ScanRequest,
    max_samples: usize,
) -> Result<SampleScan> {
    if req.signal != Signal::Samples {
        return Err(StorageError::InvalidQuery(
            "a sample scan reads samples".into(),
        ));
    }
    let memory = inner.scan_memory.share();
    let (result, sources, _) = read_sources(inner, req, &memory)?;
    let sources: Vec<SampleSource> = sources.into_iter().map(|s| s.rows).collect();
    let read: usize = sources
        .iter()
        .flat_map(|s| s.batches.iter())
        .map(RecordBatch::num_rows)
        .sum();
    if read > max_samples {
        return Err(StorageError::TooManySamples {
            read,
            limit: max_samples,
        });
    }
    let series = sample_merge::merge(&sources, &req.deadline)?;
    let mut stats = result.stats;
    stats.rows_returned = series.iter().map(|s| s.timestamps.len() as u64).sum();
    Ok(SampleScan {
        series,
        stats,
        warnings: result.warnings,
        memory,
    })
}

/// Reads every segment and memtable of one consistent view. Samples come back as sources
/// (segments and memtables apart, in read order) for the caller to merge; other signals'
/// rows are in the result's batches.
fn read_sources<'r>(
    inner: &Inner,
    req: &'r ScanRequest,
    memory: &'r ScanMemory,
) -> Result<(ScanResult, Vec<Source>, CompiledScan<'r>)> {
    req.deadline.check()?;
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
                let ids: FxHashSet<u64> = match state.catalogs.get(&req.tenant) {
                    Some(c) => c
                        .select_until(&matchers, &req.deadline)?
                        .iter()
                        .map(|d| d.id.0)
                        .collect(),
                    None => FxHashSet::default(),
                };
                Some(Arc::new(ids))
            }
        } else {
            None
        };
        (segments, mems, series_filter)
    };
    let compiled = CompiledScan::new(req, series_filter, memory)?;
    let mut result = ScanResult::default();
    if compiled
        .series_filter
        .as_ref()
        .is_some_and(|s| s.is_empty())
    {
        return Ok((result, Vec::new(), compiled));
    }
    // Samples only: each source's rows with its time bounds and whether they are already sorted
    // and free of duplicates (segments are; memtables are not).
    let mut sources: Vec<Source> = Vec::new();
    for (seg, (res, stats)) in segments.iter().zip(read_segments(
        &segments,
        &compiled,
        inner.config.scan_threads,
    )) {
        result.stats.add(&stats);
        match res {
            Ok(SegmentRows::Rollup(batches)) => result.rollups.extend(batches),
            Ok(SegmentRows::Rows(batches)) if req.signal == Signal::Samples => {
                if !batches.is_empty() {
                    sources.push(Source {
                        min: seg.meta().min_time,
                        max: seg.meta().max_time,
                        order: sources.len(),
                        rows: SampleSource {
                            clean: true,
                            batches,
                        },
                    });
                }
            }
            Ok(SegmentRows::Rows(batches)) => result.batches.extend(batches),
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
    for snap in &mems {
        req.deadline.check()?;
        let mut mem_rows = Vec::new();
        let mut text_rows: Option<roaring::RoaringBitmap> = None;
        for q in &compiled.text {
            let rows = snap.search_text(q, &req.deadline, &inner.budget)?.rows;
            text_rows = Some(match text_rows {
                Some(a) => a & rows,
                None => rows,
            });
        }
        for mb in &snap.batches {
            if !req.time.overlaps_closed(mb.min_time, mb.max_time) {
                continue;
            }
            req.deadline.check()?;
            result.stats.memtable_batches += 1;
            result.stats.memtable_rows += mb.batch.num_rows() as u64;
            let t = text_rows.as_ref().map(|r| (r, mb.first_row));
            if let Some(b) = compiled.filter(&mb.batch, t, true, false)? {
                memory.grow(b.get_array_memory_size())?;
                result.stats.rows_returned += b.num_rows() as u64;
                mem_rows.push((mb.min_time, mb.max_time, b));
            }
        }
        if req.signal == Signal::Samples {
            if let (Some(min), Some(max)) = (
                mem_rows.iter().map(|m| m.0).min(),
                mem_rows.iter().map(|m| m.1).max(),
            ) {
                sources.push(Source {
                    min,
                    max,
                    order: sources.len(),
                    rows: SampleSource {
                        clean: false,
                        batches: mem_rows.into_iter().map(|m| m.2).collect(),
                    },
                });
            }
        } else {
            result.batches.extend(mem_rows.into_iter().map(|m| m.2));
        }
    }
    Ok((result, sources, compiled))
}

/// What one segment answered with.
enum SegmentRows {
    /// Its matching rows.
    Rows(Vec<RecordBatch>),
    /// Rollup rows standing for its matching spans.
    Rollup(Vec<RecordBatch>),
}

/// What reading one segment gave.
type SegmentRead = (Result<SegmentRows>, ScanStats);

/// Reads every segment, on up to `threads` threads, and returns the results in segment order,
/// so the answer does not depend on the thread count. Segments are pruned first (rollups,
/// indexes, row-group statistics), then the row groups left are cut into parts of similar size
/// that the threads read independently: one large segment (the usual case for the last hour
/// after compaction) is read by every thread, not by one.
fn read_segments(
    segments: &[Arc<Segment>],
    compiled: &CompiledScan<'_>,
    threads: usize,
) -> Vec<SegmentRead> {
    // 1. Per segment: a rollup answer, or the row groups to read.
    let mut out: Vec<SegmentRead> = Vec::with_capacity(segments.len());
    let mut plans: Vec<Option<SegmentPlan>> = Vec::with_capacity(segments.len());
    for seg in segments {
        let mut stats = ScanStats::default();
        // An expired deadline fails every segment here at once (scan_rollup and prepare
        // check it first), so no part is read.
        let answer = match seg.scan_rollup(compiled, &mut stats) {
            Ok(Some(rows)) => Ok((SegmentRows::Rollup(rows), None)),
            Ok(None) => seg
                .prepare(compiled, &mut stats)
                .map(|plan| (SegmentRows::Rows(Vec::new()), plan)),
            Err(e) => Err(e),
        };
        let res = match answer {
            Ok((rows, plan)) => {
                plans.push(plan);
                Ok(rows)
            }
            Err(e) => {
                plans.push(None);
                Err(e)
            }
        };
        out.push((res, stats));
    }
    // 2. Parts of about equal rows, a few per thread so that uneven parts even out.
    let total: usize = plans
        .iter()
        .flatten()
        .flat_map(|p| p.groups.iter().map(|g| g.rows))
        .sum();
    let target = (total / (threads.max(1) * 4)).max(MIN_PART_ROWS);
    let mut parts: Vec<(usize, &[RowGroupPlan])> = Vec::new();
    for (si, plan) in plans.iter().enumerate() {
        let Some(plan) = plan else { continue };
        let mut begin = 0;
        let mut rows = 0;
        for (gi, g) in plan.groups.iter().enumerate() {
            rows += g.rows;
            if rows >= target || gi + 1 == plan.groups.len() {
                parts.push((si, &plan.groups[begin..=gi]));
                begin = gi + 1;
                rows = 0;
            }
        }
    }
    // 3. Read the parts.
    let read = |&(si, groups): &(usize, &[RowGroupPlan])| {
        let mut stats = ScanStats::default();
        let exact = plans[si].as_ref().is_some_and(|p| p.matchers_exact);
        let res = segments[si].read(compiled, groups, exact, &mut stats);
        (res, stats)
    };
    let threads = threads.min(parts.len());
    let results: Vec<PartRead> = if threads <= 1 {
        parts.iter().map(read).collect()
    } else {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut done: Vec<(usize, PartRead)> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(part) = parts.get(i) else { break };
                            // Each part checks the deadline before and while it reads, so
                            // every thread stops soon after it expires.
                            mine.push((i, read(part)));
                        }
                        mine
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| match w.join() {
                    Ok(v) => v,
                    Err(p) => std::panic::resume_unwind(p),
                })
                .collect()
        });
        done.sort_by_key(|(i, _)| *i);
        done.into_iter().map(|(_, r)| r).collect()
    };
    // 4. Back to segment order: a segment's parts in order, the first error wins.
    for ((si, _), (res, stats)) in parts.iter().zip(results) {
        let (slot, seg_stats) = &mut out[*si];
        seg_stats.add(&stats);
        match (slot.as_mut(), res) {
            (Ok(SegmentRows::Rows(rows)), Ok(batches)) => rows.extend(batches),
            (Ok(_), Err(e)) => *slot = Err(e),
            _ => {}
        }
    }
    out
}

/// What reading one part of a segment gave.
type PartRead = (Result<Vec<RecordBatch>>, ScanStats);

/// Rows below which a part is not split further (a part's fixed cost is one Parquet reader).
const MIN_PART_ROWS: usize = 64 * 1024;

/// Sample rows of one segment or memtable.
struct Source {
    min: crate::types::UnixNanos,
    max: crate::types::UnixNanos,
    /// Position in read order.
    order: usize,
    rows: SampleSource,
}

/// Samples of one series at one timestamp can sit in several sources (a client retry that
/// landed in another flush, or twice in one append). Sources whose time ranges overlap are
/// merged per series ([`sample_merge`]), the value read last winning; a source that overlaps
/// no other and is already clean passes through untouched, so scans of flushed, compacted data
/// pay no merge. The merged rows are sorted by series and time.
fn dedupe_samples(mut sources: Vec<Source>, deadline: &Deadline) -> Result<Vec<RecordBatch>> {
    // Stable: sources keep their read order (which decides the winner) among equal starts,
    // and a cluster is merged in read order below.
    sources.sort_by_key(|s| s.min);
    let mut out = Vec::new();
    let mut i = 0;
    while i < sources.len() {
        deadline.check()?;
        let mut j = i + 1;
        let mut max = sources[i].max;
        while j < sources.len() && sources[j].min <= max {
            max = max.max(sources[j].max);
            j += 1;
        }
        let cluster = &mut sources[i..j];
        if cluster.len() == 1 && cluster[0].rows.clean {
            out.append(&mut cluster[0].rows.batches);
        } else {
            cluster.sort_by_key(|s| s.order);
            let rows: Vec<SampleSource> = cluster
                .iter_mut()
                .map(|s| SampleSource {
                    clean: s.rows.clean,
                    batches: std::mem::take(&mut s.rows.batches),
                })
                .collect();
            let merged = sample_merge::merge(&rows, deadline)?;
            if !merged.is_empty() {
                out.push(sample_merge::to_batch(&merged)?);
            }
        }
        i = j;
    }
    Ok(out)
}
