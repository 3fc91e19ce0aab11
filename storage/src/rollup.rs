//! Span rollups: per segment, the spans pre-aggregated by minute and by the keys RED and LLM
//! dashboards group by, written next to the rows as plain Parquet (`rollup.parquet`), and, for
//! segments whose minute rollup cannot keep every key, by hour (`rollup_hourly.parquet`).
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
//! values (typically the span name) is left out and the spans regrouped, up to
//! [`MAX_DROPPED_KEYS`] keys; the keys left out are written as `""` and named in the rollup's
//! schema metadata ([`DROPPED_KEYS_META`]), and a scan that filters, groups or projects on one
//! of them cannot use that rollup. A segment whose spans still form too many groups gets no
//! minute rollup.
//!
//! Where the minute rollup leaves a key out (or is missing), the segment also gets an hourly
//! rollup with every key ([`HOURLY_FILE`]), written when it passes the same size rule (a few
//! dozen span names form far fewer groups per hour than spans). It keeps no durations. A scan
//! may use it ([`crate::ScanRequest::rollup_hours`]) when its caller folds rows into whole
//! hours (or no time buckets at all) and needs no durations; the store then cuts an unaligned
//! range at hour edges, so the hours inside come from hourly rollups and the partial hours at
//! the ends from minute rollups or rows.

use std::sync::{Arc, LazyLock};

use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

mod build;
mod view;

pub use build::build;
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
/// Width of an hourly rollup's bucket.
pub const HOUR_BUCKET_NANOS: i64 = 60 * BUCKET_NANOS;
/// File name of a segment's hourly rollup.
pub const HOURLY_FILE: &str = "rollup_hourly.parquet";

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

/// The schema of hourly rollup files: [`SCHEMA`] without [`DURATIONS_OFFSET`] (hourly rollups
/// keep no durations).
pub static HOURLY_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    let fields: Vec<arrow_schema::FieldRef> = SCHEMA
        .fields()
        .iter()
        .filter(|f| f.name() != DURATIONS_OFFSET)
        .cloned()
        .collect();
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

/// A segment's rollups (at least one of the two).
#[derive(Debug)]
pub struct Rollup {
    /// The minute rollup ([`ROLLUP_FILE`], [`DURATIONS_FILE`]); `None` when even without
    /// [`MAX_DROPPED_KEYS`] keys its spans form too many groups.
    pub minute: Option<MinuteRollup>,
    /// The hourly rollup with every key ([`HOURLY_FILE`], schema [`HOURLY_SCHEMA`]): written
    /// only where the minute rollup leaves a key out or is missing.
    pub hourly: Option<RecordBatch>,
}

/// A minute rollup: its rows and the durations they point into.
#[derive(Debug)]
pub struct MinuteRollup {
    /// Rollup rows ([`SCHEMA`]).
    pub rows: RecordBatch,
    /// Durations ([`DURATIONS_SCHEMA`]).
    pub durations: RecordBatch,
}

/// The key columns `rows` (a rollup's rows) leaves out ([`DROPPED_KEYS_META`]).
pub fn dropped_keys(rows: &RecordBatch) -> Vec<&str> {
    rows.schema_ref()
        .metadata()
        .get(DROPPED_KEYS_META)
        .map(|v| v.split(',').filter(|k| !k.is_empty()).collect())
        .unwrap_or_default()
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
    use arrow_array::{Float64Array, StringArray, TimestampNanosecondArray, UInt8Array};
    use rustc_hash::FxHashMap;

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
        assert!(roll.hourly.is_none(), "every key kept: no hourly rollup");
        let roll = roll.minute.unwrap();
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
            .minute
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
        let roll = build(&columnar::spans_to_batch(&spans).unwrap())
            .unwrap()
            .unwrap();
        assert!(
            roll.hourly.is_none(),
            "2,000 names in one hour: an hourly rollup would not pay either"
        );
        let r = roll.minute.unwrap().rows;
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

    #[test]
    fn an_hourly_rollup_keeps_the_key_the_minute_rollup_leaves_out() {
        // 6,000 spans over one hour with 30 names: 30 groups of ~3 spans per minute (too many),
        // a few dozen groups of ~100 spans per hour.
        let spans: Vec<SpanRecord> = (0..6_000u64)
            .map(|i| {
                let svc = ["api", "rag"][(i % 2) as usize];
                let mut s = span(i, (i / 100) as i64, svc, Some("m1"), i % 7 == 0);
                s.name = format!("step {}", i % 30);
                s
            })
            .collect();
        let roll = build(&columnar::spans_to_batch(&spans).unwrap())
            .unwrap()
            .unwrap();
        let minute = roll.minute.unwrap().rows;
        assert_eq!(dropped_keys(&minute), vec![col::SPAN_NAME]);
        let h = roll.hourly.unwrap();
        assert_eq!(h.schema().fields(), HOURLY_SCHEMA.fields());
        assert!(dropped_keys(&h).is_empty());
        let rows: &UInt64Array = column(&h, ROWS).unwrap();
        let names: &StringArray = column(&h, col::SPAN_NAME).unwrap();
        let status: &UInt8Array = column(&h, col::STATUS_CODE).unwrap();
        let starts: &TimestampNanosecondArray = column(&h, col::START_TIME).unwrap();
        assert_eq!(rows.values().iter().sum::<u64>(), 6_000);
        // Per (name, status): the spans' count, each row in the hour that holds its spans.
        let mut want: FxHashMap<(String, u8), u64> = FxHashMap::default();
        for s in &spans {
            *want
                .entry((s.name.clone(), s.status_code as u8))
                .or_insert(0) += 1;
        }
        let mut got: FxHashMap<(String, u8), u64> = FxHashMap::default();
        for i in 0..h.num_rows() {
            *got.entry((names.value(i).to_owned(), status.value(i)))
                .or_insert(0) += rows.value(i);
            assert_eq!(starts.value(i).rem_euclid(HOUR_BUCKET_NANOS), 0);
        }
        assert_eq!(got, want);
        let lo: &Int64Array = column(&h, TIME_MIN).unwrap();
        let hi: &Int64Array = column(&h, TIME_MAX).unwrap();
        assert!((0..h.num_rows()).all(
            |i| lo.value(i) <= hi.value(i) && hi.value(i) < starts.value(i) + HOUR_BUCKET_NANOS
        ));
    }
}
