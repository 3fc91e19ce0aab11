//! Building a segment's rollups from its spans: grouping by bucket and key, the choice of keys
//! left out, and the rollup files' columns (see the parent module for what they mean).

use std::sync::Arc;

use arrow_array::builder::{Float64Builder, StringBuilder};
use arrow_array::{
    Array, ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, TimestampNanosecondArray,
    UInt8Array, UInt64Array,
};
use arrow_schema::SchemaRef;
use rustc_hash::FxHashMap;

use super::{
    ALWAYS_BELOW_GROUPS, BUCKET_NANOS, CODE_KEYS, DROPPED_KEYS_META, DURATIONS_SCHEMA,
    HOUR_BUCKET_NANOS, HOURLY_SCHEMA, MAX_DROPPED_KEYS, MEASURES, MIN_SPANS_PER_ROW, MinuteRollup,
    Rollup, SCHEMA, STRING_KEYS,
};
use crate::columnar::decode_column as column;
use crate::error::{Result, StorageError};
use crate::schema::col;

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

/// The span columns a rollup reads, each string key interned to small ids per row.
struct Columns<'a> {
    n: usize,
    starts: &'a TimestampNanosecondArray,
    durations: &'a Int64Array,
    /// Per string key: each row's id (`u32::MAX`: null) and the values by id.
    interned: Vec<(Vec<u32>, Vec<Option<&'a str>>)>,
    codes: Vec<&'a UInt8Array>,
    nums: Vec<Num<'a>>,
}

impl<'a> Columns<'a> {
    fn read(spans: &'a RecordBatch) -> Result<Self> {
        let n = spans.num_rows();
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
        let interned = strings.iter().map(|a| intern(a)).collect();
        Ok(Self {
            n,
            starts: column(spans, col::START_TIME)?,
            durations: column(spans, col::DURATION)?,
            interned,
            codes,
            nums,
        })
    }

    /// Distinct values of string key `k`.
    fn distinct(&self, k: usize) -> usize {
        self.interned[k].1.len()
    }
}

/// Each row's id of its value in `a` (`u32::MAX` for null), and the values by id.
fn intern(a: &StringArray) -> (Vec<u32>, Vec<Option<&str>>) {
    let mut ids: FxHashMap<&str, u32> = FxHashMap::default();
    let mut values: Vec<Option<&str>> = Vec::new();
    let mut row_ids = Vec::with_capacity(a.len());
    let mut last: Option<(&str, u32)> = None;
    for i in 0..a.len() {
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
    (row_ids, values)
}

/// The spans grouped by bucket and key: per group its key, spans, start extent and (when kept)
/// durations; per span its group.
#[derive(Default)]
struct Grouping {
    keys: Vec<(i64, [u32; 5], [u8; 2])>,
    rows: Vec<u64>,
    t_min: Vec<i64>,
    t_max: Vec<i64>,
    gids: Vec<u32>,
    durations: Vec<Vec<i64>>,
}

impl Grouping {
    /// Whether this many groups make a rollup small enough to pay (see the module doc).
    fn pays(&self, spans: usize) -> bool {
        let g = self.keys.len();
        g <= ALWAYS_BELOW_GROUPS || g * MIN_SPANS_PER_ROW <= spans
    }
}

/// Groups the spans by `bucket` (ns), the string keys not `dropped` and the codes, keeping each
/// group's durations when `durations` is set.
fn group(c: &Columns<'_>, bucket: i64, dropped: &[bool; 5], durations: bool) -> Grouping {
    let mut out = Grouping {
        gids: Vec::with_capacity(c.n),
        ..Grouping::default()
    };
    let mut index: FxHashMap<(i64, [u32; 5], [u8; 2]), u32> = FxHashMap::default();
    for i in 0..c.n {
        let t = c.starts.value(i);
        let mut s = [0u32; 5];
        for (k, (ids, _)) in c.interned.iter().enumerate() {
            s[k] = if dropped[k] { u32::MAX } else { ids[i] };
        }
        let key = (
            t.div_euclid(bucket),
            s,
            [c.codes[0].value(i), c.codes[1].value(i)],
        );
        let g = *index.entry(key).or_insert_with(|| {
            out.keys.push(key);
            out.rows.push(0);
            out.t_min.push(i64::MAX);
            out.t_max.push(i64::MIN);
            if durations {
                out.durations.push(Vec::new());
            }
            (out.keys.len() - 1) as u32
        });
        let gu = g as usize;
        if durations {
            out.durations[gu].push(c.durations.value(i));
        }
        out.rows[gu] += 1;
        out.t_min[gu] = out.t_min[gu].min(t);
        out.t_max[gu] = out.t_max[gu].max(t);
        out.gids.push(g);
    }
    out
}

/// Builds the rollups of a batch of spans (any order): the minute rollup, with up to
/// [`MAX_DROPPED_KEYS`] keys left out where the spans form too many groups, and the hourly
/// rollup with every key where the minute rollup leaves keys out (or has none) and hourly
/// groups pay. `None` when neither pays.
pub fn build(spans: &RecordBatch) -> Result<Option<Rollup>> {
    let c = Columns::read(spans)?;
    let mut dropped = [false; 5];
    let minute = loop {
        let grouping = group(&c, BUCKET_NANOS, &dropped, true);
        if grouping.pays(c.n) {
            break Some(grouping);
        }
        if dropped.iter().filter(|d| **d).count() == MAX_DROPPED_KEYS {
            break None;
        }
        // Leave out the kept key with the most distinct values; never the service, which
        // nearly every dashboard groups by.
        let Some(k) = (0..STRING_KEYS.len())
            .filter(|&k| !dropped[k] && STRING_KEYS[k] != col::SERVICE_NAME)
            .max_by_key(|&k| c.distinct(k))
        else {
            break None;
        };
        dropped[k] = true;
    };
    let complete = minute.is_some() && !dropped.contains(&true);
    let hourly = if complete {
        None
    } else {
        let g = group(&c, HOUR_BUCKET_NANOS, &[false; 5], false);
        match g.pays(c.n) {
            true => Some(rows(&c, g, HOUR_BUCKET_NANOS, &[false; 5], false)?.0),
            false => None,
        }
    };
    let Some(minute) = minute else {
        return Ok(hourly.map(|h| Rollup {
            minute: None,
            hourly: Some(h),
        }));
    };
    let (rows, durations) = rows(&c, minute, BUCKET_NANOS, &dropped, true)?;
    let durations = durations.ok_or_else(|| {
        StorageError::InvalidInput("minute rollup built without durations".into())
    })?;
    Ok(Some(Rollup {
        minute: Some(MinuteRollup { rows, durations }),
        hourly,
    }))
}

/// The rollup rows of `g` (buckets of `bucket` ns), and its durations file when `g` kept them.
fn rows(
    c: &Columns<'_>,
    g: Grouping,
    bucket: i64,
    dropped: &[bool; 5],
    with_durations: bool,
) -> Result<(RecordBatch, Option<RecordBatch>)> {
    let Grouping {
        keys,
        rows,
        t_min,
        t_max,
        gids,
        durations,
    } = g;
    let g = keys.len();
    let mut measures: Vec<MeasureAcc> = Vec::with_capacity(c.nums.len());
    for num in &c.nums {
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
        keys.iter().map(|k| k.0.saturating_mul(bucket)),
    )));
    for (k, (_, values)) in c.interned.iter().enumerate() {
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
    for ci in 0..CODE_KEYS.len() {
        columns.push(Arc::new(UInt8Array::from_iter_values(
            keys.iter().map(|k| k.2[ci]),
        )));
    }
    columns.push(Arc::new(UInt64Array::from(rows)));
    let mut flat: Vec<i64> = Vec::new();
    if with_durations {
        flat.reserve(c.n);
        let mut offsets: Vec<u64> = Vec::with_capacity(g);
        for mut d in durations {
            d.sort_unstable();
            offsets.push(flat.len() as u64);
            flat.extend_from_slice(&d);
        }
        columns.push(Arc::new(UInt64Array::from(offsets)));
    }
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
    let base: &SchemaRef = if with_durations {
        &SCHEMA
    } else {
        &HOURLY_SCHEMA
    };
    let schema = if left_out.is_empty() {
        base.clone()
    } else {
        let meta = [(DROPPED_KEYS_META.to_owned(), left_out.join(","))];
        Arc::new(
            base.as_ref().clone().with_metadata(
                meta.into_iter()
                    .collect::<std::collections::HashMap<_, _>>(),
            ),
        )
    };
    let rows = RecordBatch::try_new(schema, columns)?;
    let durations = if with_durations {
        Some(RecordBatch::try_new(
            DURATIONS_SCHEMA.clone(),
            vec![Arc::new(Int64Array::from(flat))],
        )?)
    } else {
        None
    };
    Ok((rows, durations))
}
