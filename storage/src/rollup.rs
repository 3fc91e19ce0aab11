//! Span rollups: per segment, the spans pre-aggregated by minute and by the keys RED and LLM
//! dashboards group by, written next to the rows as plain Parquet (`rollup.parquet`).
//!
//! One rollup row holds, for one minute bucket (by span start) and one combination of
//! `service.name`, span name, span kind, status, `gen_ai.operation.name`,
//! `gen_ai.provider.name` and `gen_ai.request.model`: the number of spans, the smallest and
//! largest start time among them, and for every numeric column in [`MEASURES`] the count of
//! non-null values, their sum, minimum and maximum, and every span's duration, sorted (so that
//! latency quantiles from rollups are exact). Key columns carry the span schema's names
//! and exact values (nulls stay null), so predicates evaluate on rollup rows exactly as on the
//! spans they summarise.
//!
//! The durations live in a second file, `rollup_durations.parquet`: one `Int64` column of all
//! the segment's span durations, grouped by rollup row in rollup order and ascending within each
//! row (delta-encoded, so they cost about what the durations of `data.parquet` cost); rollup
//! row `i` holds the `rollup_rows[i]` values from `duration_nano__offset[i]` on.
//!
//! A scan that asks for rollups ([`crate::ScanRequest::rollups`]) reads a segment's rollup
//! instead of its rows when every predicate addresses a key column and every rollup row lies
//! wholly inside or wholly outside the time range (judged by its own smallest and largest start
//! time, so ranges need not be minute-aligned); otherwise the segment's rows are read as usual.
//! Counts, sums, minima, maxima, error ratios, rates and duration quantiles computed from rollup
//! rows equal the same aggregates over the rows (sums up to floating-point association);
//! quantiles of other fields need the rows. The duration lists are read only by scans that ask
//! for them ([`crate::ScanRequest::rollup_durations`]); the rest of a rollup is kept in memory
//! once read, up to [`CACHE_BYTES`] for the whole process.
//!
//! A rollup stays a small part of its segment: when the spans form more than one group per
//! [`MIN_SPANS_PER_ROW`] spans, the string key other than the service with the most distinct
//! values (typically the span name) is left out and the spans regrouped, up to [`MAX_DROPPED_KEYS`] keys; the keys
//! left out are written as `""` and named in the rollup's schema metadata
//! ([`DROPPED_KEYS_META`]), and a scan that filters, groups or projects on one of them reads the
//! segment's rows instead. A segment whose spans still form too many groups gets no rollup.

use std::sync::{Arc, LazyLock};

use arrow_array::builder::{Float64Builder, StringBuilder};
use arrow_array::{
    Array, ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, TimestampNanosecondArray,
    UInt8Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use rustc_hash::FxHashMap;

mod view;

pub use view::RollupView;

use crate::columnar::decode_column as column;
use crate::error::{Result, StorageError};
use crate::schema::col;

/// File name of a segment's rollup.
pub const ROLLUP_FILE: &str = "rollup.parquet";

/// Most bytes of rollup rows the process keeps in memory; segments whose rollup does not fit
/// read it from disk on each use (a few hundred microseconds).
pub const CACHE_BYTES: usize = 256 << 20;

static CACHED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Bytes of rollup rows kept in memory now, process-wide.
pub fn cached_bytes() -> usize {
    CACHED.load(std::sync::atomic::Ordering::Acquire)
}

/// Reserves `bytes` of the rollup cache; false when they do not fit.
pub(crate) fn reserve_cache(bytes: usize) -> bool {
    use std::sync::atomic::Ordering;
    CACHED
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
            c.checked_add(bytes).filter(|&n| n <= CACHE_BYTES)
        })
        .is_ok()
}

/// Gives back `bytes` of the rollup cache.
pub(crate) fn release_cache(bytes: usize) {
    use std::sync::atomic::Ordering;
    if bytes > 0 {
        let _ = CACHED.fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
            Some(c.saturating_sub(bytes))
        });
    }
}

/// Width of a rollup bucket: one minute.
pub const BUCKET_NANOS: i64 = 60_000_000_000;

/// Rollups of at most this many rows are always written, whatever their spans per row.
const ALWAYS_BELOW_GROUPS: usize = 1024;
/// Fewest spans per rollup row (on average) for a rollup to be written.
pub const MIN_SPANS_PER_ROW: usize = 8;
/// Most string keys left out of a rollup to reach [`MIN_SPANS_PER_ROW`].
pub const MAX_DROPPED_KEYS: usize = 2;
/// Schema metadata key of a rollup: the key columns it leaves out, comma-separated.
pub const DROPPED_KEYS_META: &str = "sightline.rollup.dropped_keys";

/// Rollup column: spans in the row.
pub const ROWS: &str = "rollup_rows";
/// Rollup column: smallest span start in the row (ns).
pub const TIME_MIN: &str = "rollup_time_min";
/// Rollup column: largest span start in the row (ns).
pub const TIME_MAX: &str = "rollup_time_max";
/// File name of a segment's rollup durations.
pub const DURATIONS_FILE: &str = "rollup_durations.parquet";
/// Rollup column: where the row's durations start in [`DURATIONS_FILE`].
pub const DURATIONS_OFFSET: &str = "duration_nano__offset";
/// Column of scan output (not of the rollup file): the durations (ns) of the row's spans,
/// ascending, as a list.
pub const DURATIONS: &str = "duration_nano__values";

/// Span string columns a rollup groups by.
pub const STRING_KEYS: [&str; 5] = [
    col::SERVICE_NAME,
    col::SPAN_NAME,
    col::GEN_AI_OPERATION,
    col::GEN_AI_PROVIDER,
    col::GEN_AI_REQUEST_MODEL,
];

/// Span code columns a rollup groups by.
pub const CODE_KEYS: [&str; 2] = [col::SPAN_KIND, col::STATUS_CODE];

/// Numeric span columns a rollup summarises.
pub const MEASURES: [&str; 11] = [
    col::DURATION,
    col::GEN_AI_INPUT_TOKENS,
    col::GEN_AI_OUTPUT_TOKENS,
    col::GEN_AI_TOTAL_TOKENS,
    col::GEN_AI_CACHE_READ_TOKENS,
    col::GEN_AI_COST,
    col::GEN_AI_TEMPERATURE,
    col::ENTROPY_MEAN,
    col::ENTROPY_MAX,
    col::LOW_CONFIDENCE_TOKENS,
    col::HALLUCINATION_INDEX,
];

/// What a rollup keeps of a measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// Non-null values (`UInt64`).
    Count,
    /// Their sum (`Float64`).
    Sum,
    /// Their minimum (`Float64`, null when there are none).
    Min,
    /// Their maximum (`Float64`, null when there are none).
    Max,
}

impl Part {
    const ALL: [Part; 4] = [Part::Count, Part::Sum, Part::Min, Part::Max];

    fn suffix(self) -> &'static str {
        match self {
            Part::Count => "count",
            Part::Sum => "sum",
            Part::Min => "min",
            Part::Max => "max",
        }
    }
}

/// The rollup column holding `part` of measure `column` (`duration__sum`).
pub fn measure_column(column: &str, part: Part) -> String {
    format!("{column}__{}", part.suffix())
}

/// Whether `column` (a span column) is a rollup key.
pub fn is_key(column: &str) -> bool {
    STRING_KEYS.contains(&column) || CODE_KEYS.contains(&column)
}

/// Whether `column` (a span column) is summarised by rollups.
pub fn is_measure(column: &str) -> bool {
    MEASURES.contains(&column)
}

/// The schema of rollup files.
pub static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    let mut fields = vec![Field::new(
        col::START_TIME,
        DataType::Timestamp(TimeUnit::Nanosecond, None),
        false,
    )];
    let span = crate::schema::of(crate::types::Signal::Spans);
    for k in STRING_KEYS.iter().chain(CODE_KEYS.iter()) {
        if let Ok(f) = span.field_with_name(k) {
            fields.push(f.clone());
        }
    }
    fields.push(Field::new(ROWS, DataType::UInt64, false));
    fields.push(Field::new(DURATIONS_OFFSET, DataType::UInt64, false));
    fields.push(Field::new(TIME_MIN, DataType::Int64, false));
    fields.push(Field::new(TIME_MAX, DataType::Int64, false));
    for m in MEASURES {
        for p in Part::ALL {
            let (t, nullable) = match p {
                Part::Count => (DataType::UInt64, false),
                Part::Sum => (DataType::Float64, false),
                Part::Min | Part::Max => (DataType::Float64, true),
            };
            fields.push(Field::new(measure_column(m, p), t, nullable));
        }
    }
    Arc::new(Schema::new(fields))
});

/// The field of the durations list column scans add to rollup rows.
pub fn durations_field() -> Field {
    Field::new(
        DURATIONS,
        DataType::List(Arc::new(Field::new("item", DataType::Int64, false))),
        false,
    )
}

/// The schema of [`DURATIONS_FILE`].
pub static DURATIONS_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![Field::new(
        col::DURATION,
        DataType::Int64,
        false,
    )]))
});

/// A segment's rollup: its rows and the durations they point into.
#[derive(Debug)]
pub struct Rollup {
    /// Rollup rows ([`SCHEMA`]).
    pub rows: RecordBatch,
    /// Durations ([`DURATIONS_SCHEMA`]).
    pub durations: RecordBatch,
}

/// Running sums of one measure, per group.
#[derive(Default)]
struct MeasureAcc {
    count: Vec<u64>,
    sum: Vec<f64>,
    min: Vec<f64>,
    max: Vec<f64>,
}

/// A numeric span column read as `f64` per row.
enum Num<'a> {
    I64(&'a Int64Array),
    F64(&'a Float64Array),
}

impl Num<'_> {
    #[inline]
    fn get(&self, i: usize) -> Option<f64> {
        match self {
            Num::I64(a) => a.is_valid(i).then(|| a.value(i) as f64),
            Num::F64(a) => a.is_valid(i).then(|| a.value(i)),
        }
    }
}

/// The key columns `rows` (a rollup's rows) leaves out ([`DROPPED_KEYS_META`]).
pub fn dropped_keys(rows: &RecordBatch) -> Vec<&str> {
    rows.schema_ref()
        .metadata()
        .get(DROPPED_KEYS_META)
        .map(|v| v.split(',').filter(|k| !k.is_empty()).collect())
        .unwrap_or_default()
}

/// The spans grouped by minute and key: per group its key, spans, start extent and durations;
/// per span its group.
#[derive(Default)]
struct Grouping {
    keys: Vec<(i64, [u32; 5], [u8; 2])>,
    rows: Vec<u64>,
    t_min: Vec<i64>,
    t_max: Vec<i64>,
    gids: Vec<u32>,
    durations: Vec<Vec<i64>>,
}

/// Groups the spans by minute, the string keys not `dropped` (interned ids) and the codes.
fn group(
    n: usize,
    starts: &TimestampNanosecondArray,
    dur: &Int64Array,
    interned: &[(Vec<u32>, Vec<Option<&str>>)],
    codes: &[&UInt8Array],
    dropped: &[bool; 5],
) -> Grouping {
    let mut out = Grouping {
        gids: Vec::with_capacity(n),
        ..Grouping::default()
    };
    let mut index: FxHashMap<(i64, [u32; 5], [u8; 2]), u32> = FxHashMap::default();
    for i in 0..n {
        let t = starts.value(i);
        let mut s = [0u32; 5];
        for (k, (ids, _)) in interned.iter().enumerate() {
            s[k] = if dropped[k] { u32::MAX } else { ids[i] };
        }
        let key = (
            t.div_euclid(BUCKET_NANOS),
            s,
            [codes[0].value(i), codes[1].value(i)],
        );
        let g = *index.entry(key).or_insert_with(|| {
            out.keys.push(key);
            out.rows.push(0);
            out.t_min.push(i64::MAX);
            out.t_max.push(i64::MIN);
            out.durations.push(Vec::new());
            (out.keys.len() - 1) as u32
        });
        let gu = g as usize;
        out.durations[gu].push(dur.value(i));
        out.rows[gu] += 1;
        out.t_min[gu] = out.t_min[gu].min(t);
        out.t_max[gu] = out.t_max[gu].max(t);
        out.gids.push(g);
    }
    out
}

/// Builds the rollup of a batch of spans (any order); `None` when the spans form too many
/// groups for a rollup to pay even without [`MAX_DROPPED_KEYS`] keys (see the module doc).
pub fn build(spans: &RecordBatch) -> Result<Option<Rollup>> {
    let n = spans.num_rows();
    let starts: &TimestampNanosecondArray = column(spans, col::START_TIME)?;
    let strings: Vec<&StringArray> = STRING_KEYS
        .iter()
        .map(|k| column(spans, k))
        .collect::<Result<_>>()?;
    let codes: Vec<&UInt8Array> = CODE_KEYS
        .iter()
        .map(|k| column(spans, k))
        .collect::<Result<_>>()?;
    let nums: Vec<Num<'_>> = MEASURES
        .iter()
        .map(|m| {
            let a = spans
                .column_by_name(m)
                .ok_or_else(|| StorageError::InvalidInput(format!("span batch lacks {m}")))?;
            if let Some(a) = a.as_any().downcast_ref::<Int64Array>() {
                Ok(Num::I64(a))
            } else if let Some(a) = a.as_any().downcast_ref::<Float64Array>() {
                Ok(Num::F64(a))
            } else {
                Err(StorageError::InvalidInput(format!("{m} is not numeric")))
            }
        })
        .collect::<Result<_>>()?;

    // Each string key column interned to small ids (u32::MAX: null), per row.
    let mut interned: Vec<(Vec<u32>, Vec<Option<&str>>)> = Vec::with_capacity(strings.len());
    for a in &strings {
        let mut ids: FxHashMap<&str, u32> = FxHashMap::default();
        let mut values: Vec<Option<&str>> = Vec::new();
        let mut row_ids = Vec::with_capacity(n);
        let mut last: Option<(&str, u32)> = None;
        for i in 0..n {
            if a.is_null(i) {
                row_ids.push(u32::MAX);
                continue;
            }
            let s = a.value(i);
            let id = match last {
                Some((l, id)) if l == s => id,
                _ => *ids.entry(s).or_insert_with(|| {
                    values.push(Some(s));
                    (values.len() - 1) as u32
                }),
            };
            last = Some((s, id));
            row_ids.push(id);
        }
        interned.push((row_ids, values));
    }

    let dur: &Int64Array = column(spans, col::DURATION)?;
    let mut dropped = [false; 5];
    let mut g = loop {
        let grouping = group(n, starts, dur, &interned, &codes, &dropped);
        let g = grouping.keys.len();
        if g <= ALWAYS_BELOW_GROUPS || g * MIN_SPANS_PER_ROW <= n {
            break grouping;
        }
        if dropped.iter().filter(|d| **d).count() == MAX_DROPPED_KEYS {
            return Ok(None);
        }
        // Leave out the kept key with the most distinct values; never the service, which
        // nearly every dashboard groups by.
        let Some(k) = (0..STRING_KEYS.len())
            .filter(|&k| !dropped[k] && STRING_KEYS[k] != col::SERVICE_NAME)
            .max_by_key(|&k| interned[k].1.len())
        else {
            return Ok(None);
        };
        dropped[k] = true;
    };
    let Grouping {
        keys,
        rows,
        t_min,
        t_max,
        gids,
        durations,
    } = std::mem::take(&mut g);
    let g = keys.len();
    let mut measures: Vec<MeasureAcc> = Vec::with_capacity(nums.len());
    for num in &nums {
        let mut acc = MeasureAcc {
            count: vec![0; g],
            sum: vec![0.0; g],
            min: vec![f64::INFINITY; g],
            max: vec![f64::NEG_INFINITY; g],
        };
        for (i, &gid) in gids.iter().enumerate() {
            if let Some(v) = num.get(i) {
                let gu = gid as usize;
                acc.count[gu] += 1;
                acc.sum[gu] += v;
                acc.min[gu] = acc.min[gu].min(v);
                acc.max[gu] = acc.max[gu].max(v);
            }
        }
        measures.push(acc);
    }

    let mut columns: Vec<ArrayRef> = Vec::with_capacity(SCHEMA.fields().len());
    columns.push(Arc::new(TimestampNanosecondArray::from_iter_values(
        keys.iter().map(|k| k.0.saturating_mul(BUCKET_NANOS)),
    )));
    for (k, (_, values)) in interned.iter().enumerate() {
        let mut b = StringBuilder::new();
        for key in &keys {
            if dropped[k] {
                // Never read (scans needing the key read the rows); "" fits every key column.
                b.append_value("");
                continue;
            }
            match values.get(key.1[k] as usize).copied().flatten() {
                Some(v) => b.append_value(v),
                None => b.append_null(),
            }
        }
        columns.push(Arc::new(b.finish()));
    }
    for c in 0..CODE_KEYS.len() {
        columns.push(Arc::new(UInt8Array::from_iter_values(
            keys.iter().map(|k| k.2[c]),
        )));
    }
    columns.push(Arc::new(UInt64Array::from(rows)));
    let mut flat: Vec<i64> = Vec::with_capacity(n);
    let mut offsets: Vec<u64> = Vec::with_capacity(g);
    for mut d in durations {
        d.sort_unstable();
        offsets.push(flat.len() as u64);
        flat.extend_from_slice(&d);
    }
    columns.push(Arc::new(UInt64Array::from(offsets)));
    columns.push(Arc::new(Int64Array::from(t_min)));
    columns.push(Arc::new(Int64Array::from(t_max)));
    for acc in measures {
        let present = |i: usize| acc.count[i] > 0;
        let opt = |v: &[f64]| {
            let mut b = Float64Builder::with_capacity(g);
            for (i, &x) in v.iter().enumerate() {
                b.append_option(present(i).then_some(x));
            }
            Arc::new(b.finish()) as ArrayRef
        };
        let (min, max) = (opt(&acc.min), opt(&acc.max));
        columns.push(Arc::new(UInt64Array::from(acc.count)));
        columns.push(Arc::new(Float64Array::from(acc.sum)));
        columns.push(min);
        columns.push(max);
    }
    let left_out: Vec<&str> = (0..STRING_KEYS.len())
        .filter(|&k| dropped[k])
        .map(|k| STRING_KEYS[k])
        .collect();
    let schema = if left_out.is_empty() {
        SCHEMA.clone()
    } else {
        let meta = [(DROPPED_KEYS_META.to_owned(), left_out.join(","))];
        Arc::new(
            SCHEMA.as_ref().clone().with_metadata(
                meta.into_iter()
                    .collect::<std::collections::HashMap<_, _>>(),
            ),
        )
    };
    Ok(Some(Rollup {
        rows: RecordBatch::try_new(schema, columns)?,
        durations: RecordBatch::try_new(
            DURATIONS_SCHEMA.clone(),
            vec![Arc::new(Int64Array::from(flat))],
        )?,
    }))
}

/// The durations of rollup rows `kept` (indexes into `rows`, ascending) as a list column,
/// given the rows' offsets and the durations read for exactly those rows, in order.
pub(crate) fn durations_list(
    rows: &RecordBatch,
    kept: &[usize],
    values: ArrayRef,
) -> Result<ArrayRef> {
    let counts: &UInt64Array = column(rows, ROWS)?;
    let mut offsets: Vec<i32> = Vec::with_capacity(kept.len() + 1);
    offsets.push(0);
    let mut end: i64 = 0;
    for &k in kept {
        end += counts.value(k) as i64;
        offsets.push(i32::try_from(end).map_err(|_| {
            StorageError::InvalidInput("more than 2^31 durations in one scan of one segment".into())
        })?);
    }
    if end as usize != values.len() {
        return Err(StorageError::InvalidInput(format!(
            "{} durations read for rollup rows holding {end}",
            values.len()
        )));
    }
    let item = Arc::new(Field::new("item", DataType::Int64, false));
    Ok(Arc::new(arrow_array::ListArray::try_new(
        item,
        arrow_buffer::OffsetBuffer::new(offsets.into()),
        values,
        None,
    )?))
}

/// The ranges of [`DURATIONS_FILE`] rows that hold the durations of rollup rows `kept`.
pub(crate) fn duration_ranges(
    rows: &RecordBatch,
    kept: &[usize],
) -> Result<Vec<std::ops::Range<usize>>> {
    let counts: &UInt64Array = column(rows, ROWS)?;
    let offsets: &UInt64Array = column(rows, DURATIONS_OFFSET)?;
    let mut out: Vec<std::ops::Range<usize>> = Vec::with_capacity(kept.len());
    for &k in kept {
        let lo = offsets.value(k) as usize;
        let hi = lo + counts.value(k) as usize;
        match out.last_mut() {
            Some(last) if last.end == lo => last.end = hi,
            _ if hi > lo => out.push(lo..hi),
            _ => {}
        }
    }
    Ok(out)
}

/// Where a rollup row lies relative to a time range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    Inside,
    Outside,
    Straddles,
}

/// Places every row of a rollup against `range` (by the row's smallest and largest start).
pub(crate) fn place(batch: &RecordBatch, range: crate::types::TimeRange) -> Result<Vec<Placement>> {
    let lo: &Int64Array = column(batch, TIME_MIN)?;
    let hi: &Int64Array = column(batch, TIME_MAX)?;
    Ok(lo
        .values()
        .iter()
        .zip(hi.values().iter())
        .map(|(&lo, &hi)| {
            let (lo, hi) = (crate::types::UnixNanos(lo), crate::types::UnixNanos(hi));
            if range.contains(lo) && range.contains(hi) {
                Placement::Inside
            } else if !range.overlaps_closed(lo, hi) {
                Placement::Outside
            } else {
                Placement::Straddles
            }
        })
        .collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::columnar;
    use crate::model::{GenAiFields, SpanRecord, StatusCode};
    use crate::types::{SpanId, TraceId, UnixNanos};

    fn span(i: u64, minute: i64, service: &str, model: Option<&str>, error: bool) -> SpanRecord {
        let mut t = [0u8; 16];
        t[..8].copy_from_slice(&(i + 1).to_be_bytes());
        let start = UnixNanos(1_700_000_000_000_000_000 + minute * BUCKET_NANOS + i as i64);
        let mut s = SpanRecord::new(
            TraceId(t),
            SpanId((i + 1).to_be_bytes()),
            service,
            "chat",
            start,
            UnixNanos(start.0 + 1000 * (i as i64 + 1)),
        );
        if error {
            s.status_code = StatusCode::Error;
        }
        if let Some(m) = model {
            s.gen_ai = GenAiFields {
                request_model: Some(m.into()),
                input_tokens: Some(10 + i as i64),
                ..GenAiFields::default()
            };
        }
        s
    }

    #[test]
    fn rollup_rows_sum_to_the_spans() {
        let spans = vec![
            span(0, 0, "api", Some("m1"), false),
            span(1, 0, "api", Some("m1"), true),
            span(2, 0, "api", None, false),
            span(3, 1, "api", Some("m1"), false),
            span(4, 1, "rag", Some("m2"), false),
        ];
        let batch = columnar::spans_to_batch(&spans).unwrap();
        let roll = build(&batch).unwrap().unwrap();
        let r = roll.rows;
        assert_eq!(r.schema(), *SCHEMA);
        // (0, api, m1, ok), (0, api, m1, error), (0, api, -, ok), (1, api, m1), (1, rag, m2)
        assert_eq!(r.num_rows(), 5);
        let rows: &UInt64Array = column(&r, ROWS).unwrap();
        assert_eq!(rows.values().iter().sum::<u64>(), 5);
        let sum: &Float64Array =
            column(&r, &measure_column(col::GEN_AI_INPUT_TOKENS, Part::Sum)).unwrap();
        assert_eq!(sum.values().iter().sum::<f64>(), 10.0 + 11.0 + 13.0 + 14.0);
        let n: &UInt64Array =
            column(&r, &measure_column(col::GEN_AI_INPUT_TOKENS, Part::Count)).unwrap();
        assert_eq!(n.values().iter().sum::<u64>(), 4);
        // Every row's durations, through the same path scans take.
        let all_rows: Vec<usize> = (0..r.num_rows()).collect();
        let flat: &Int64Array = roll.durations.column(0).as_any().downcast_ref().unwrap();
        let ranges = duration_ranges(&r, &all_rows).unwrap();
        assert_eq!(ranges, vec![0..5], "rows in order cover the file once");
        let lists = durations_list(&r, &all_rows, roll.durations.column(0).clone()).unwrap();
        let lists: &arrow_array::ListArray = lists.as_any().downcast_ref().unwrap();
        for i in 0..lists.len() {
            let v = lists.value(i);
            let v: &Int64Array = v.as_any().downcast_ref().unwrap();
            assert!(v.values().windows(2).all(|w| w[0] <= w[1]), "ascending");
            assert_eq!(v.len() as u64, rows.value(i));
        }
        let mut all: Vec<i64> = flat.values().to_vec();
        all.sort_unstable();
        assert_eq!(all, vec![1000, 2000, 3000, 4000, 5000]);
        // A subset: the second and fourth rows.
        let some = [1usize, 3];
        let ranges = duration_ranges(&r, &some).unwrap();
        let picked: Vec<i64> = ranges
            .iter()
            .flat_map(|x| flat.values()[x.clone()].to_vec())
            .collect();
        let lists = durations_list(&r, &some, Arc::new(Int64Array::from(picked))).unwrap();
        assert_eq!(lists.len(), 2);
        let model: &StringArray = column(&r, col::GEN_AI_REQUEST_MODEL).unwrap();
        assert_eq!(model.null_count(), 1);
        let dmax: &Float64Array = column(&r, &measure_column(col::DURATION, Part::Max)).unwrap();
        assert_eq!(
            dmax.iter().flatten().fold(f64::MIN, f64::max),
            5000.0,
            "the longest span lasts 5 us"
        );
    }

    #[test]
    fn placement_uses_each_rows_own_extent() {
        // One group holds spans at t0 and t0 + 1 ns, another one span at t0 + 2 min + 2 ns.
        let spans = vec![
            span(0, 0, "a", None, false),
            span(1, 0, "a", None, false),
            span(2, 2, "a", None, false),
        ];
        let r = build(&columnar::spans_to_batch(&spans).unwrap())
            .unwrap()
            .unwrap()
            .rows;
        assert_eq!(r.num_rows(), 2);
        let t0 = 1_700_000_000_000_000_000;
        let range = |a: i64, b: i64| {
            crate::types::TimeRange::new(UnixNanos(t0 + a), UnixNanos(t0 + b)).unwrap()
        };
        let lo: &Int64Array = column(&r, TIME_MIN).unwrap();
        let first = (0..2).find(|&i| lo.value(i) == t0).unwrap();
        let at = |p: Vec<Placement>| (p[first], p[1 - first]);
        use Placement::*;
        assert_eq!(
            at(place(&r, range(0, BUCKET_NANOS)).unwrap()),
            (Inside, Outside)
        );
        // A range that starts between minute 0's two spans cuts that row.
        assert_eq!(
            at(place(&r, range(1, 3 * BUCKET_NANOS)).unwrap()),
            (Straddles, Inside)
        );
        // A range ending just after minute 2's span holds it whole although it ends mid-bucket.
        assert_eq!(
            at(place(&r, range(0, 2 * BUCKET_NANOS + 3)).unwrap()),
            (Inside, Inside)
        );
        assert_eq!(
            at(place(&r, range(0, 2 * BUCKET_NANOS + 2)).unwrap()),
            (Inside, Outside)
        );
    }

    #[test]
    fn a_key_with_too_many_values_is_left_out() {
        // 4,000 spans in one minute with 2,000 span names over 2 services: with the names a
        // rollup row would hold 2 spans; without them, 2,000 each.
        let spans: Vec<SpanRecord> = (0..4_000u64)
            .map(|i| {
                let mut s = span(i, 0, ["api", "rag"][(i % 2) as usize], Some("m1"), false);
                s.name = format!("GET /item/{}", i / 2);
                s
            })
            .collect();
        let r = build(&columnar::spans_to_batch(&spans).unwrap())
            .unwrap()
            .unwrap()
            .rows;
        assert_eq!(dropped_keys(&r), vec![col::SPAN_NAME]);
        assert_eq!(r.num_rows(), 2);
        let names: &StringArray = column(&r, col::SPAN_NAME).unwrap();
        assert!(
            names.iter().all(|n| n == Some("")),
            "a left-out key is empty"
        );
        let rows: &UInt64Array = column(&r, ROWS).unwrap();
        assert_eq!(rows.values().iter().sum::<u64>(), 4_000);
        // Unique names and services and models: nothing left to group, no rollup.
        let spans: Vec<SpanRecord> = (0..4_000u64)
            .map(|i| {
                let mut s = span(i, 0, &format!("svc-{i}"), Some(&format!("m{i}")), false);
                s.name = format!("op-{i}");
                s
            })
            .collect();
        assert!(
            build(&columnar::spans_to_batch(&spans).unwrap())
                .unwrap()
                .is_none()
        );
    }
}
