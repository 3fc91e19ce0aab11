//! Reading a segment: prune with the meta, postings, text index, bloom filters and row-group
//! statistics, read only the surviving rows and columns, then filter exactly.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Array, BooleanArray, FixedSizeBinaryArray, RecordBatch, UInt64Array};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder};
use arrow_schema::{DataType, Schema};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, RowSelection};
use parquet::file::statistics::Statistics;
use roaring::RoaringBitmap;
use rustc_hash::FxHashSet;
use serde::Serialize;

use super::Segment;
use super::page_reader::{self, SegmentFile};
use crate::error::{IoContext, Result, StorageError};
use crate::postings::Lookup;
use crate::predicate::{self, MatchOp, Predicate, ScanRequest};
use crate::scan_memory::ScanMemory;
use crate::schema::{self, col};
use crate::text_index::TextQuery;
use crate::types::{Signal, TimeRange, TraceId};

/// How much each pruning stage kept; returned with every scan so that tests (and `explain`) can
/// prove which data was touched.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ScanStats {
    /// Segments of the tenant and signal considered.
    pub segments_total: usize,
    /// Segments skipped by their time range.
    pub segments_pruned_by_time: usize,
    /// Segments skipped because postings or the text index matched no row.
    pub segments_pruned_by_index: usize,
    /// Segments whose rows were read.
    pub segments_read: usize,
    /// Segments answered from their rollup instead of their rows.
    pub segments_from_rollup: usize,
    /// Rollup rows returned (each summarises the spans of one minute and key combination).
    pub rollup_rows: u64,
    /// Spans those rollup rows summarise.
    pub rollup_spans: u64,
    /// Row groups in segments that were not pruned.
    pub row_groups_total: usize,
    /// Row groups read.
    pub row_groups_read: usize,
    /// Rows decoded from Parquet.
    pub rows_decoded: u64,
    /// Unflushed batches examined.
    pub memtable_batches: usize,
    /// Unflushed rows examined.
    pub memtable_rows: u64,
    /// Rows returned.
    pub rows_returned: u64,
}

impl ScanStats {
    /// Adds another scan's counts.
    pub fn add(&mut self, o: &ScanStats) {
        self.segments_total += o.segments_total;
        self.segments_pruned_by_time += o.segments_pruned_by_time;
        self.segments_pruned_by_index += o.segments_pruned_by_index;
        self.segments_read += o.segments_read;
        self.segments_from_rollup += o.segments_from_rollup;
        self.rollup_rows += o.rollup_rows;
        self.rollup_spans += o.rollup_spans;
        self.row_groups_total += o.row_groups_total;
        self.row_groups_read += o.row_groups_read;
        self.rows_decoded += o.rows_decoded;
        self.memtable_batches += o.memtable_batches;
        self.memtable_rows += o.memtable_rows;
        self.rows_returned += o.rows_returned;
    }
}

/// One row group a segment scan reads.
#[derive(Clone, Debug)]
pub(crate) struct RowGroupPlan {
    /// Row group index in the Parquet file.
    index: usize,
    /// Rows in the row group.
    pub(crate) rows: usize,
    /// Candidate rows (relative to the row group) from the indexes; all rows when `None`.
    runs: Option<Vec<Range<usize>>>,
}

/// What is left of a segment after pruning: its row groups to read, in file order.
#[derive(Clone, Debug)]
pub(crate) struct SegmentPlan {
    pub(crate) groups: Vec<RowGroupPlan>,
    /// The candidate rows of `groups` satisfy every attribute matcher (the indexes answered
    /// them exactly), so reading need not evaluate them again.
    pub(crate) matchers_exact: bool,
}

/// A request prepared for execution.
pub(crate) struct CompiledScan<'a> {
    pub req: &'a ScanRequest,
    /// Samples: ids of the series whose labels satisfy every matcher (`None`: no matcher).
    pub series_filter: Option<Arc<FxHashSet<u64>>>,
    /// Columns read from storage (output plus what predicates need), in schema order.
    pub read_columns: Vec<usize>,
    /// Output columns, by name, in the requested order.
    pub output: Vec<String>,
    /// Names of the read string columns that segments return dictionary-encoded
    /// ([`ScanRequest::dictionary`] less predicate columns).
    pub dictionary: Vec<String>,
    /// Whether segments may answer from their rollups: asked for, spans, and every predicate
    /// an attribute matcher on a rollup key column (so never with a [`Predicate::AnyOf`],
    /// which [`Segment::scan_rollup`] does not evaluate).
    pub rollup_ok: bool,
    /// The scan's share of the scan memory budget: every batch it returns is counted here.
    pub memory: &'a ScanMemory,
    /// The full-text predicates, parsed.
    pub text: Vec<TextQuery>,
    /// Some full-text predicate holds a phrase: rows the indexes answer are checked against
    /// their bodies ([`TextQuery::needs_bodies`]), so the body column is read.
    verify_text: bool,
}

impl<'a> CompiledScan<'a> {
    pub(crate) fn new(
        req: &'a ScanRequest,
        series_filter: Option<Arc<FxHashSet<u64>>>,
        memory: &'a ScanMemory,
    ) -> Result<Self> {
        req.validate()?;
        let schema = schema::of(req.signal);
        let output: Vec<String> = match &req.projection {
            Some(p) => p.clone(),
            None => schema.fields().iter().map(|f| f.name().clone()).collect(),
        };
        let mut needed: HashSet<&str> = output.iter().map(String::as_str).collect();
        // An unbounded range needs no time values (samples always do, to deduplicate).
        if req.time != TimeRange::ALL || req.signal == Signal::Samples {
            needed.insert(schema::time_column(req.signal));
        }
        if req.signal == Signal::Samples {
            // Samples are deduplicated across sources before projection.
            needed.extend([col::SERIES_ID, col::TIMESTAMP, col::VALUE]);
        }
        let mut predicate_columns: HashSet<&str> = HashSet::new();
        for p in &req.predicates {
            for c in predicate::predicate_columns(req.signal, p) {
                needed.insert(c);
                predicate_columns.insert(c);
            }
        }
        let text = req
            .predicates
            .iter()
            .filter_map(|p| match p {
                Predicate::FullText(q) => Some(TextQuery::parse(q)),
                Predicate::BodyContains(t) => Some(TextQuery::literal(t)),
                _ => None,
            })
            .collect::<Result<Vec<_>>>()?;
        let verify_text = text.iter().any(TextQuery::needs_bodies);
        if verify_text {
            needed.insert(col::BODY);
            predicate_columns.insert(col::BODY);
        }
        let dictionary = req
            .dictionary
            .iter()
            .filter(|c| {
                needed.contains(c.as_str())
                    && !predicate_columns.contains(c.as_str())
                    && schema
                        .field_with_name(c)
                        .is_ok_and(|f| f.data_type() == &arrow_schema::DataType::Utf8)
            })
            .cloned()
            .collect();
        let read_columns = schema
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, f)| needed.contains(f.name().as_str()))
            .map(|(i, _)| i)
            .collect();
        let rollup_ok = req.rollups
            && req.signal == Signal::Spans
            && req.predicates.iter().all(|p| match p {
                Predicate::Attr(m) => schema::promoted_column(Signal::Spans, &m.key)
                    .is_some_and(crate::rollup::is_key),
                _ => false,
            });
        Ok(Self {
            req,
            series_filter,
            read_columns,
            output,
            dictionary,
            rollup_ok,
            memory,
            text,
            verify_text,
        })
    }

    fn matchers(&self) -> impl Iterator<Item = &predicate::Matcher> {
        self.req.predicates.iter().filter_map(|p| match p {
            Predicate::Attr(m) => Some(m),
            _ => None,
        })
    }

    fn any_ofs(&self) -> impl Iterator<Item = &[predicate::Matcher]> {
        self.req.predicates.iter().filter_map(|p| match p {
            Predicate::AnyOf(ms) => Some(ms.as_slice()),
            _ => None,
        })
    }

    fn trace_ids(&self) -> Vec<TraceId> {
        self.req
            .predicates
            .iter()
            .filter_map(|p| match p {
                Predicate::TraceId(t) => Some(*t),
                _ => None,
            })
            .collect()
    }

    /// Exact filter + projection of a batch holding `read_columns` (less the time column when
    /// `times_inside`: the caller knows every row lies in the time range). `text_rows` are the rows
    /// (numbered from `first_row`) that matched full-text predicates, for unflushed data;
    /// attribute matchers and alternatives ([`Predicate::AnyOf`]) are evaluated when
    /// `matchers` is set (else the caller knows every row satisfies them: segments clear it
    /// only when the postings answered every matcher exactly, never with an alternative).
    pub(crate) fn filter(
        &self,
        batch: &RecordBatch,
        text_rows: Option<(&RoaringBitmap, u32)>,
        matchers: bool,
        times_inside: bool,
    ) -> Result<Option<RecordBatch>> {
        let n = batch.num_rows();
        let signal = self.req.signal;
        let range = self.req.time;
        if signal == Signal::Samples {
            return self.filter_samples(batch, matchers, times_inside);
        }
        let mut masks = Vec::new();
        if range != TimeRange::ALL && !times_inside {
            let times = super::time_values(signal, batch)?;
            let unit = schema::time_unit_nanos(signal);
            masks.push(
                times
                    .iter()
                    .map(|&t| Some(range.contains(crate::types::UnixNanos(t.saturating_mul(unit)))))
                    .collect::<BooleanArray>(),
            );
        }
        for m in self.matchers().filter(|_| matchers) {
            masks.push(predicate::eval_matcher(batch, signal, m)?);
        }
        for alternatives in self.any_ofs().filter(|_| matchers) {
            masks.push(predicate::eval_any_of(batch, signal, alternatives)?);
        }
        for t in self.trace_ids() {
            masks.push(trace_mask(batch, &t)?);
        }
        if let Some((rows, first)) = text_rows {
            masks.push(
                (0..n as u32)
                    .map(|i| Some(rows.contains(first + i)))
                    .collect(),
            );
        }
        let mut mask = predicate::and_all(masks, n)?;
        if self.verify_text && mask.as_ref().is_none_or(|m| m.true_count() > 0) {
            mask = Some(self.verify_bodies(batch, mask.as_ref())?);
        }
        if mask.as_ref().is_some_and(|m| m.true_count() == 0) {
            return Ok(None);
        }
        // Projected before filtering, so that only the output columns are copied (a memtable
        // batch holds every column).
        let out = self.project(batch)?;
        Ok(Some(match mask {
            Some(mask) if mask.true_count() < n => {
                arrow_select::filter::filter_record_batch(&out, &mask)?
            }
            _ => out,
        }))
    }

    /// The rows of `batch` kept by `mask` (all when `None`) whose bodies match every full-text
    /// query: the check of rows an index answered for a phrase.
    fn verify_bodies(
        &self,
        batch: &RecordBatch,
        mask: Option<&BooleanArray>,
    ) -> Result<BooleanArray> {
        let bodies = crate::columnar::decode_column::<arrow_array::StringArray>(batch, col::BODY)?;
        let phrases: Vec<&TextQuery> = self.text.iter().filter(|q| q.needs_bodies()).collect();
        let keep = BooleanBuffer::collect_bool(batch.num_rows(), |i| {
            mask.is_none_or(|m| m.is_valid(i) && m.value(i))
                && bodies.is_valid(i)
                && phrases.iter().all(|q| q.matches(bodies.value(i)))
        });
        Ok(BooleanArray::new(keep, None))
    }

    /// [`CompiledScan::filter`] for samples: the series filter (when `matchers`) per run of
    /// one series, the time range (unless `times_inside`) per row; every column is kept, for
    /// deduplication.
    fn filter_samples(
        &self,
        batch: &RecordBatch,
        matchers: bool,
        times_inside: bool,
    ) -> Result<Option<RecordBatch>> {
        let n = batch.num_rows();
        let mut mask: Option<BooleanBuffer> = None;
        if let Some(set) = self.series_filter.as_ref().filter(|_| matchers) {
            let ids = crate::columnar::decode_column::<UInt64Array>(batch, col::SERIES_ID)?;
            if ids.null_count() > 0 {
                return Err(StorageError::InvalidInput("null series_id".into()));
            }
            let ids = ids.values();
            let mut keep = BooleanBufferBuilder::new(n);
            for run in crate::series::id_runs(ids) {
                keep.append_n(run.len(), set.contains(&ids[run.start]));
            }
            mask = Some(keep.finish());
        }
        let range = self.req.time;
        if range != TimeRange::ALL && !times_inside {
            let times = super::time_values(Signal::Samples, batch)?;
            let unit = schema::time_unit_nanos(Signal::Samples);
            let inside = BooleanBuffer::collect_bool(n, |i| {
                range.contains(crate::types::UnixNanos(times[i].saturating_mul(unit)))
            });
            mask = Some(match mask {
                Some(m) => &m & &inside,
                None => inside,
            });
        }
        let kept = mask.as_ref().map_or(n, BooleanBuffer::count_set_bits);
        Ok(match mask {
            _ if kept == 0 => None,
            Some(m) if kept < n => Some(arrow_select::filter::filter_record_batch(
                batch,
                &BooleanArray::new(m, None),
            )?),
            _ => Some(batch.clone()),
        })
    }

    /// Selects the output columns, in the requested order.
    pub(crate) fn project(&self, filtered: &RecordBatch) -> Result<RecordBatch> {
        let schema = filtered.schema();
        let mut fields = Vec::with_capacity(self.output.len());
        let mut columns = Vec::with_capacity(self.output.len());
        for name in &self.output {
            let idx = schema
                .index_of(name)
                .map_err(|_| StorageError::InvalidQuery(format!("column {name} not read")))?;
            fields.push(schema.field(idx).clone());
            columns.push(filtered.column(idx).clone());
        }
        // An empty projection (a count) still carries its row count.
        let options =
            arrow_array::RecordBatchOptions::new().with_row_count(Some(filtered.num_rows()));
        Ok(RecordBatch::try_new_with_options(
            Arc::new(Schema::new(fields)),
            columns,
            &options,
        )?)
    }
}

fn trace_mask(batch: &RecordBatch, t: &TraceId) -> Result<BooleanArray> {
    let ids = crate::columnar::decode_column::<FixedSizeBinaryArray>(batch, col::TRACE_ID)?;
    Ok(trace_eq(ids, t))
}

/// Rows per decoded batch.
const BATCH_ROWS: usize = 8192;

/// Rows of `batch` (its first column the trace ids) whose id is every one of `traces`.
fn trace_mask_all(batch: &RecordBatch, traces: &[TraceId]) -> Result<BooleanArray> {
    let ids = batch
        .column(0)
        .as_any()
        .downcast_ref::<FixedSizeBinaryArray>()
        .ok_or_else(|| StorageError::InvalidInput("trace_id is not fixed-size binary".into()))?;
    let Some((first, rest)) = traces.split_first() else {
        return Ok(BooleanArray::from(vec![true; ids.len()]));
    };
    let mut mask = trace_eq(ids, first);
    for t in rest {
        mask = predicate::and_masks(&mask, &trace_eq(ids, t))?;
    }
    Ok(mask)
}

fn trace_eq(ids: &FixedSizeBinaryArray, t: &TraceId) -> BooleanArray {
    (0..ids.len())
        .map(|i| Some(!ids.is_null(i) && ids.value(i) == t.as_bytes()))
        .collect()
}

/// Whether a row group's trace_id statistics allow `t`.
fn trace_in_stats(stats: Option<&Statistics>, t: &TraceId) -> bool {
    match stats {
        Some(Statistics::FixedLenByteArray(s)) => match (s.min_opt(), s.max_opt()) {
            (Some(lo), Some(hi)) => {
                lo.data() <= &t.as_bytes()[..] && &t.as_bytes()[..] <= hi.data()
            }
            _ => true,
        },
        _ => true,
    }
}

fn stat_range(stats: Option<&Statistics>) -> Option<(i64, i64)> {
    match stats? {
        Statistics::Int64(s) => Some((*s.min_opt()?, *s.max_opt()?)),
        _ => None,
    }
}

fn intersect(acc: &mut Option<RoaringBitmap>, rows: RoaringBitmap) {
    *acc = Some(match acc.take() {
        Some(a) => a & rows,
        None => rows,
    });
}

impl Segment {
    /// The rows this segment's postings give for a matcher that rejects `""`.
    fn postings_of(&self, m: &predicate::Matcher) -> Lookup {
        match m.op {
            MatchOp::Eq => self.postings.equals(&m.key, &m.value),
            MatchOp::Regex => match m.regex() {
                Some(re) => self.postings.matching(&m.key, re),
                None => Lookup::Unknown,
            },
            // A negative matcher that rejects "" (such as `!= ""`) accepts only rows that have
            // the key: the union of the accepted values' postings.
            MatchOp::NotEq | MatchOp::NotRegex => self.postings.accepted(&m.key, |v| m.matches(v)),
        }
    }

    /// The rollup rows of this segment that summarise exactly the spans satisfying `c`, or
    /// `None` when the rows must be read instead: rollups not allowed for `c`, no rollup, or a
    /// rollup row that straddles the time range.
    pub(crate) fn scan_rollup(
        &self,
        c: &CompiledScan<'_>,
        stats: &mut ScanStats,
    ) -> Result<Option<Vec<RecordBatch>>> {
        if !c.rollup_ok {
            return Ok(None);
        }
        let req = c.req;
        req.deadline.check()?;
        if !req
            .time
            .overlaps_closed(self.meta.min_time, self.meta.max_time)
        {
            stats.segments_total += 1;
            stats.segments_pruned_by_time += 1;
            return Ok(Some(Vec::new()));
        }
        // A key a rollup leaves out cannot be filtered, grouped or returned from it.
        let keeps_keys = |rollup: &RecordBatch| {
            let dropped = crate::rollup::dropped_keys(rollup);
            dropped.is_empty()
                || !(c.output.iter().any(|o| dropped.contains(&o.as_str()))
                    || c.matchers().any(|m| {
                        schema::promoted_column(Signal::Spans, &m.key)
                            .is_none_or(|column| dropped.contains(&column))
                    }))
        };
        let minute = self.rollup()?.filter(|r| keeps_keys(r));
        // The hourly rollup keeps every key but no durations; of two that answer, the smaller.
        let hourly = if req.rollup_hours && !req.rollup_durations {
            self.hourly_rollup()?.filter(|r| keeps_keys(r))
        } else {
            None
        };
        let mut candidates: Vec<RecordBatch> = minute.into_iter().chain(hourly).collect();
        candidates.sort_by_key(RecordBatch::num_rows);
        // The first candidate none of whose rows straddles the time range, with the mask of its
        // rows inside it.
        let mut chosen = None;
        for rollup in candidates {
            if req.time == TimeRange::ALL {
                chosen = Some((rollup, None));
                break;
            }
            let placed = crate::rollup::place(&rollup, req.time)?;
            if placed.contains(&crate::rollup::Placement::Straddles) {
                continue;
            }
            let keep: BooleanArray = placed
                .iter()
                .map(|p| Some(*p == crate::rollup::Placement::Inside))
                .collect();
            chosen = Some((rollup, Some(keep)));
            break;
        }
        let Some((rollup, inside)) = chosen else {
            return Ok(None);
        };
        let rollup = &rollup;
        let mut masks: Vec<BooleanArray> = inside.into_iter().collect();
        for m in c.matchers() {
            masks.push(predicate::eval_matcher(rollup, Signal::Spans, m)?);
        }
        stats.segments_total += 1;
        stats.segments_from_rollup += 1;
        let mask = predicate::and_all(masks, rollup.num_rows())?;
        let mut rows = match &mask {
            Some(mask) if mask.true_count() == 0 => return Ok(Some(Vec::new())),
            Some(mask) => arrow_select::filter::filter_record_batch(rollup, mask)?,
            None => rollup.clone(),
        };
        if req.rollup_durations {
            let kept: Vec<usize> = match &mask {
                Some(mask) => (0..mask.len()).filter(|&i| mask.value(i)).collect(),
                None => (0..rollup.num_rows()).collect(),
            };
            let lists = self.rollup_durations(rollup, &kept)?;
            let mut fields: Vec<arrow_schema::FieldRef> =
                rows.schema().fields().iter().cloned().collect();
            let mut columns = rows.columns().to_vec();
            fields.push(Arc::new(crate::rollup::durations_field()));
            columns.push(lists);
            rows = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?;
        }
        c.memory.grow(rows.get_array_memory_size())?;
        stats.rollup_rows += rows.num_rows() as u64;
        if let Some(n) = rows
            .column_by_name(crate::rollup::ROWS)
            .and_then(|a| a.as_any().downcast_ref::<arrow_array::UInt64Array>())
        {
            stats.rollup_spans += n.values().iter().sum::<u64>();
        }
        Ok(Some(vec![rows]))
    }

    /// Prunes this segment for `c` (time range, postings and text index, row-group statistics
    /// and bloom filters) and returns the row groups left to read with their candidate rows, or
    /// `None` when nothing is left. Counts the segment-level statistics.
    pub(crate) fn prepare(
        &self,
        c: &CompiledScan<'_>,
        stats: &mut ScanStats,
    ) -> Result<Option<SegmentPlan>> {
        stats.segments_total += 1;
        let req = c.req;
        req.deadline.check()?;
        if !req
            .time
            .overlaps_closed(self.meta.min_time, self.meta.max_time)
        {
            stats.segments_pruned_by_time += 1;
            return Ok(None);
        }
        // 1. Samples of known series: their row runs, which answer every label matcher.
        let series_runs = match (&c.series_filter, req.signal) {
            (Some(set), Signal::Samples) => Some(self.series_rows(&req.deadline)?.runs(set)),
            _ => None,
        };
        if series_runs.as_ref().is_some_and(Vec::is_empty) {
            stats.segments_pruned_by_index += 1;
            return Ok(None);
        }
        // Postings and the text index narrow the candidate rows.
        let mut candidates: Option<RoaringBitmap> = None;
        // Whether the candidates are exactly the rows every attribute matcher accepts: each
        // matcher on a promoted column (an attribute key can sit in both the span's and the
        // resource's attributes, where evaluation prefers the span's) answered by its postings.
        let mut matchers_exact = true;
        for p in &req.predicates {
            match p {
                Predicate::Attr(_) if series_runs.is_some() => {}
                Predicate::Attr(m) if m.matches_missing() => matchers_exact = false,
                Predicate::Attr(m) => match self.postings_of(m) {
                    Lookup::Rows(rows) => {
                        matchers_exact &= schema::promoted_column(req.signal, &m.key).is_some();
                        intersect(&mut candidates, rows);
                    }
                    Lookup::Unknown => matchers_exact = false,
                },
                // The union of the alternatives' postings holds every row that can pass, when
                // each alternative has postings and rejects rows lacking its key (else the
                // candidates stay as they are); rows are then always evaluated exactly.
                Predicate::AnyOf(ms) => {
                    matchers_exact = false;
                    let mut union = Some(RoaringBitmap::new());
                    for m in ms {
                        let Some(u) = union.as_mut() else { break };
                        match self.postings_of(m) {
                            Lookup::Rows(rows) if !m.matches_missing() => *u |= rows,
                            _ => union = None,
                        }
                    }
                    if let Some(rows) = union {
                        intersect(&mut candidates, rows);
                    }
                }
                _ => {}
            }
        }
        for q in &c.text {
            if candidates.as_ref().is_some_and(RoaringBitmap::is_empty) {
                break;
            }
            intersect(
                &mut candidates,
                self.text_candidates(q, &req.deadline)?.rows,
            );
        }
        if candidates.as_ref().is_some_and(RoaringBitmap::is_empty) {
            stats.segments_pruned_by_index += 1;
            return Ok(None);
        }
        // 2. Row groups: time statistics, bloom filter, candidate rows.
        let md = self.parquet.metadata();
        debug_assert_eq!(
            req.signal, self.meta.signal,
            "a scan reads segments of its signal"
        );
        let unit = schema::time_unit_nanos(req.signal);
        let time_leaf = self.time_leaf;
        let traces = c.trace_ids();
        let trace_leaf = self.trace_leaf;
        // Equality matchers on keys this segment indexes by block blooms.
        let bloom_pairs: Vec<(&str, &str)> = match &self.attr_blooms {
            Some(_) => req
                .predicates
                .iter()
                .filter_map(|p| match p {
                    Predicate::Attr(m)
                        if m.op == MatchOp::Eq
                            && !m.matches_missing()
                            && self.postings.in_blooms(&m.key) =>
                    {
                        Some((m.key.as_str(), m.value.as_str()))
                    }
                    _ => None,
                })
                .collect(),
            None => Vec::new(),
        };
        let mut groups = Vec::new();
        let mut start = 0u64;
        stats.row_groups_total += md.num_row_groups();
        for (i, rg) in md.row_groups().iter().enumerate() {
            req.deadline.check()?;
            let rows = rg.num_rows().max(0) as u64;
            let rg_range = start..start + rows;
            start += rows;
            // Whether the row group has rows outside the range (then its pages are pruned by
            // their own time ranges below).
            let mut partly_in_range = false;
            if let Some((lo, hi)) = time_leaf.and_then(|l| stat_range(rg.column(l).statistics())) {
                let (lo, hi) = (lo.saturating_mul(unit), hi.saturating_mul(unit));
                let (lo, hi) = (crate::types::UnixNanos(lo), crate::types::UnixNanos(hi));
                if !req.time.overlaps_closed(lo, hi) {
                    continue;
                }
                partly_in_range = !(req.time.contains(lo) && req.time.contains(hi));
            }
            if let Some(leaf) = trace_leaf
                && traces
                    .iter()
                    .any(|t| !trace_in_stats(rg.column(leaf).statistics(), t))
            {
                continue;
            }
            if let Some(Some(bloom)) = self.blooms.get(i)
                && traces.iter().any(|t| !bloom.check(&t.as_bytes()[..]))
            {
                continue;
            }
            // The blocks of this row group whose blooms may hold every pair, as row runs.
            let bloom_runs = match &self.attr_blooms {
                Some(ab) if !bloom_pairs.is_empty() => {
                    let runs = bloom_runs(ab, &bloom_pairs, rg_range.clone());
                    if runs.is_empty() {
                        continue;
                    }
                    Some(runs)
                }
                _ => None,
            };
            let runs = match &candidates {
                // A trace lookup: the pages whose trace_id range holds one of the ids (rows
                // are sorted by trace, so usually one page), from the page index.
                None if !traces.is_empty() => {
                    trace_leaf.and_then(|leaf| self.trace_pages(i, leaf, rows as usize, &traces))
                }
                Some(cand) => {
                    let lo = rg_range.start as u32;
                    let hi = rg_range.end as u32;
                    let mut runs: Vec<Range<usize>> = Vec::new();
                    for r in cand.range(lo..hi) {
                        let r = (r - lo) as usize;
                        match runs.last_mut() {
                            Some(last) if last.end == r => last.end = r + 1,
                            _ => runs.push(r..r + 1),
                        }
                    }
                    if runs.is_empty() {
                        continue;
                    }
                    Some(runs)
                }
                None => None,
            };
            let runs = match (runs, bloom_runs) {
                (Some(a), Some(b)) => Some(intersect_runs(&a, &b)),
                (a, b) => a.or(b),
            };
            let runs = match (runs, series_runs.as_deref()) {
                (a, Some(series)) => {
                    let b = runs_within(series, rg_range.clone());
                    Some(match a {
                        Some(a) => intersect_runs(&a, &b),
                        None => b,
                    })
                }
                (a, None) => a,
            };
            // Logs are sorted by time, so a range that cuts a row group (the newest lines of a
            // search, an unaligned end) keeps only the pages whose times it overlaps. A sample
            // page holds one series' samples, so a range that cuts the row group keeps only
            // the pages of each series' run that hold its times.
            let time_runs = match time_leaf {
                Some(leaf)
                    if partly_in_range && matches!(req.signal, Signal::Logs | Signal::Samples) =>
                {
                    self.time_pages(i, leaf, rows as usize, &req.time, unit)
                }
                _ => None,
            };
            let runs = match (runs, time_runs) {
                (Some(a), Some(b)) => Some(intersect_runs(&a, &b)),
                (a, b) => a.or(b),
            };
            if runs.as_ref().is_some_and(Vec::is_empty) {
                continue;
            }
            groups.push(RowGroupPlan {
                index: i,
                rows: rows as usize,
                runs,
            });
        }
        if groups.is_empty() {
            return Ok(None);
        }
        stats.segments_read += 1;
        stats.row_groups_read += groups.len();
        // Samples: exact when the series runs answered the matchers (the catalog evaluated
        // them), and no alternative needs evaluating row by row.
        let matchers_exact = if req.signal == Signal::Samples {
            series_runs.is_some() && c.any_ofs().next().is_none()
        } else {
            matchers_exact
        };
        Ok(Some(SegmentPlan {
            groups,
            matchers_exact,
        }))
    }

    /// This segment's reader metadata with the string columns `names` read as
    /// `Dictionary(Int32, Utf8)`.
    fn dictionary_metadata(&self, names: &[String]) -> Result<ArrowReaderMetadata> {
        let file_schema = self.parquet.schema();
        let fields: Vec<arrow_schema::FieldRef> = file_schema
            .fields()
            .iter()
            .map(|f| {
                if names.iter().any(|n| n == f.name()) && f.data_type() == &DataType::Utf8 {
                    Arc::new(f.as_ref().clone().with_data_type(DataType::Dictionary(
                        Box::new(DataType::Int32),
                        Box::new(DataType::Utf8),
                    )))
                } else {
                    f.clone()
                }
            })
            .collect();
        let schema = Arc::new(Schema::new_with_metadata(
            fields,
            file_schema.metadata().clone(),
        ));
        Ok(ArrowReaderMetadata::try_new(
            self.parquet.metadata().clone(),
            ArrowReaderOptions::new().with_schema(schema),
        )?)
    }

    /// Reads the rows of `groups` (part of what [`Segment::prepare`] kept, in order) that
    /// satisfy `c`; `matchers_exact` as in [`SegmentPlan`].
    pub(crate) fn read(
        &self,
        c: &CompiledScan<'_>,
        groups: &[RowGroupPlan],
        matchers_exact: bool,
        stats: &mut ScanStats,
    ) -> Result<Vec<RecordBatch>> {
        if groups.is_empty() {
            return Ok(Vec::new());
        }
        let req = c.req;
        req.deadline.check()?;
        let traces = c.trace_ids();
        let path = self.data_path();
        let file = std::fs::File::open(&path).at(&path)?;
        let file = Arc::new(SegmentFile::new(file).at(&path)?);
        let pschema = self.parquet.parquet_schema();
        let metadata = if c.dictionary.is_empty() {
            self.parquet.clone()
        } else {
            self.dictionary_metadata(&c.dictionary)?
        };
        // A segment wholly inside the time range needs no time check, nor its times unless
        // they are output (samples always read theirs, to deduplicate).
        let times_inside = req.signal != Signal::Samples
            && req.time.contains(self.meta.min_time)
            && req.time.contains(self.meta.max_time);
        let time_col = schema::time_column(req.signal);
        let time_index = schema::of(req.signal).index_of(time_col).ok();
        let skip_time = times_inside && !c.output.iter().any(|o| o == time_col);
        let row_groups: Vec<usize> = groups.iter().map(|g| g.index).collect();
        let mut selection = None;
        if groups.iter().any(|g| g.runs.is_some()) {
            let mut ranges = Vec::new();
            let mut base = 0usize;
            for g in groups {
                match &g.runs {
                    Some(runs) => {
                        ranges.extend(runs.iter().map(|r| r.start + base..r.end + base));
                    }
                    None => ranges.push(base..base + g.rows),
                }
                base += g.rows;
            }
            selection = Some(RowSelection::from_consecutive_ranges(
                ranges.into_iter(),
                base,
            ));
        }
        // A trace lookup reads the ids of the selected rows first and then the other columns
        // of the matching rows only.
        if !traces.is_empty()
            && let Ok(idx) = schema::of(req.signal).index_of(col::TRACE_ID)
        {
            let ids = page_reader::read_row_groups(
                &file,
                &metadata,
                row_groups.clone(),
                ProjectionMask::roots(pschema, [idx]),
                selection.clone(),
                BATCH_ROWS,
            )?;
            let mut masks = Vec::new();
            for batch in ids {
                req.deadline.check()?;
                let batch = batch.map_err(|e| StorageError::corruption(&path, e.to_string()))?;
                masks.push(trace_mask_all(&batch, &traces)?);
            }
            if masks.iter().all(|m| m.true_count() == 0) {
                return Ok(Vec::new());
            }
            let matching = RowSelection::from_filters(&masks);
            selection = Some(match selection {
                Some(s) => s.and_then(&matching),
                None => matching,
            });
        }
        let reader = page_reader::read_row_groups(
            &file,
            &metadata,
            row_groups,
            ProjectionMask::roots(
                pschema,
                c.read_columns
                    .iter()
                    .copied()
                    .filter(|&i| !(skip_time && Some(i) == time_index)),
            ),
            selection,
            BATCH_ROWS,
        )?;
        let mut out = Vec::new();
        for batch in reader {
            req.deadline.check()?;
            let batch = batch.map_err(|e| StorageError::corruption(&path, e.to_string()))?;
            stats.rows_decoded += batch.num_rows() as u64;
            if let Some(b) = c.filter(&batch, None, !matchers_exact, times_inside)? {
                c.memory.grow(b.get_array_memory_size())?;
                stats.rows_returned += b.num_rows() as u64;
                out.push(b);
            }
        }
        Ok(out)
    }
}

/// The rows of `rows` (segment rows, one row group) in blocks whose blooms may hold every pair,
/// as runs relative to the row group's first row. Blocks are the blooms' own
/// ([`AttrBlooms::group_rows`]: a data page's rows, or a row group in older segments).
fn bloom_runs(
    blooms: &crate::attr_bloom::AttrBlooms,
    pairs: &[(&str, &str)],
    rows: Range<u64>,
) -> Vec<Range<usize>> {
    let block = u64::from(blooms.group_rows().max(1));
    let mut runs: Vec<Range<usize>> = Vec::new();
    let mut b = rows.start / block;
    while b * block < rows.end {
        let lo = (b * block).max(rows.start);
        let hi = ((b + 1) * block).min(rows.end);
        let i = usize::try_from(b).unwrap_or(usize::MAX);
        if pairs.iter().all(|(k, v)| blooms.may_contain(i, k, v)) {
            let (lo, hi) = ((lo - rows.start) as usize, (hi - rows.start) as usize);
            match runs.last_mut() {
                Some(last) if last.end == lo => last.end = hi,
                _ => runs.push(lo..hi),
            }
        }
        b += 1;
    }
    runs
}

/// The parts of `runs` (sorted, disjoint segment rows) inside `rows`, relative to its start.
fn runs_within(runs: &[Range<u64>], rows: Range<u64>) -> Vec<Range<usize>> {
    let first = runs.partition_point(|r| r.end <= rows.start);
    runs[first..]
        .iter()
        .take_while(|r| r.start < rows.end)
        .map(|r| {
            let lo = r.start.max(rows.start) - rows.start;
            let hi = r.end.min(rows.end) - rows.start;
            lo as usize..hi as usize
        })
        .collect()
}

/// The rows in both sorted, disjoint run lists.
fn intersect_runs(a: &[Range<usize>], b: &[Range<usize>]) -> Vec<Range<usize>> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        let lo = a[i].start.max(b[j].start);
        let hi = a[i].end.min(b[j].end);
        if lo < hi {
            out.push(lo..hi);
        }
        if a[i].end < b[j].end {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}
