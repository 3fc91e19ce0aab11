//! The vectorized half of a plan: numeric filters as row masks, group keys interned column by
//! column into small integer ids, a composite id per row looked up once in a hash table, and one
//! accumulator per (group, aggregate). A plan without aggregates keeps the top rows by one field.

use std::cmp::Ordering;

use arrow_array::{Array, Float64Array, Int64Array, RecordBatch, UInt8Array, UInt64Array};
use rustc_hash::FxHashMap;
use serde::Serialize;
use sightline_storage::model::StatusCode;
use sightline_storage::rollup::{self, Part, RollupView};
use sightline_storage::schema::col;

use super::fields::{KeyCol, NumCol, numeric_field, times};
use super::{AggFunc, Explain, GroupBy, MAX_GROUPS, OrderBy, OrderKey, Plan, Table};
use crate::error::{QueryError, Result};
use crate::quantile::quantile;
use crate::traces::filter::column;

/// One output value.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// A group key or text column.
    Str(String),
    /// A time bucket start (nanoseconds) or an integer.
    Int(i64),
    /// An aggregate value.
    Num(f64),
    /// No value (an aggregate over no values, a row without the field).
    Null,
}

impl Cell {
    /// The numeric value, if any.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Cell::Num(v) => Some(*v),
            Cell::Int(v) => Some(*v as f64),
            _ => None,
        }
    }
}

impl Serialize for Cell {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Cell::Str(v) => s.serialize_str(v),
            Cell::Int(v) => s.serialize_i64(*v),
            Cell::Num(v) if v.is_finite() => s.serialize_f64(*v),
            Cell::Num(_) | Cell::Null => s.serialize_none(),
        }
    }
}

/// Running state of one aggregate for every group, column-wise (index = group id), so the
/// inner loops run over one batch per aggregate with no per-row dispatch.
#[derive(Clone, Debug)]
enum AccCol {
    Count(Vec<u64>),
    Sum { sum: Vec<f64>, n: Vec<u64> },
    Min(Vec<f64>),
    Max(Vec<f64>),
    Values(Vec<Vec<f64>>),
    Errors { errors: Vec<u64>, total: Vec<u64> },
}

impl AccCol {
    fn new(f: AggFunc) -> Self {
        match f {
            AggFunc::Count | AggFunc::Rate => AccCol::Count(Vec::new()),
            AggFunc::Sum | AggFunc::Avg => AccCol::Sum {
                sum: Vec::new(),
                n: Vec::new(),
            },
            AggFunc::Min => AccCol::Min(Vec::new()),
            AggFunc::Max => AccCol::Max(Vec::new()),
            AggFunc::Quantile(_) => AccCol::Values(Vec::new()),
            AggFunc::ErrorRatio => AccCol::Errors {
                errors: Vec::new(),
                total: Vec::new(),
            },
        }
    }

    /// Adds a group.
    fn push_group(&mut self) {
        match self {
            AccCol::Count(c) => c.push(0),
            AccCol::Sum { sum, n } => {
                sum.push(0.0);
                n.push(0);
            }
            // NaN marks "no value yet"; f64::min/max return the other operand for NaN.
            AccCol::Min(v) | AccCol::Max(v) => v.push(f64::NAN),
            AccCol::Values(v) => v.push(Vec::new()),
            AccCol::Errors { errors, total } => {
                errors.push(0);
                total.push(0);
            }
        }
    }

    /// Folds one batch: `gids[i]` is row i's group (`SKIP`: filtered out), `nums` the
    /// aggregate's field, `errs` whether the row's status is an error.
    fn update(&mut self, gids: &[u32], nums: Option<&NumCol<'_>>, errs: Option<&UInt8Array>) {
        let rows = gids.iter().enumerate().filter(|(_, g)| **g != SKIP);
        match self {
            AccCol::Count(c) => {
                for (_, &g) in rows {
                    c[g as usize] += 1;
                }
            }
            AccCol::Errors { errors, total } => {
                let code = StatusCode::Error as u8;
                for (i, &g) in rows {
                    total[g as usize] += 1;
                    if errs.is_some_and(|s| s.value(i) == code) {
                        errors[g as usize] += 1;
                    }
                }
            }
            _ => {
                let Some(nums) = nums else { return };
                for (i, &g) in rows {
                    let Some(v) = nums.get(i) else { continue };
                    let g = g as usize;
                    match self {
                        AccCol::Sum { sum, n } => {
                            sum[g] += v;
                            n[g] += 1;
                        }
                        AccCol::Min(m) => m[g] = m[g].min(v),
                        AccCol::Max(m) => m[g] = m[g].max(v),
                        AccCol::Values(vs) => vs[g].push(v),
                        AccCol::Count(_) | AccCol::Errors { .. } => {}
                    }
                }
            }
        }
    }

    /// Folds rollup rows: `gids[i]` is rollup row i's group, `r` its columns for this
    /// aggregate.
    fn update_rollup(&mut self, gids: &[u32], r: &RollupCols<'_>) {
        let weights = r.view.weights();
        match self {
            AccCol::Count(c) => {
                for (&g, &w) in gids.iter().zip(weights.iter()) {
                    c[g as usize] += w;
                }
            }
            AccCol::Errors { errors, total } => {
                for (i, (&g, &w)) in gids.iter().zip(weights.iter()).enumerate() {
                    total[g as usize] += w;
                    if r.view.is_error(i) {
                        errors[g as usize] += w;
                    }
                }
            }
            _ => {
                let Some(m) = &r.measure else { return };
                for (i, &g) in gids.iter().enumerate() {
                    let n = m.count.value(i);
                    if n == 0 {
                        continue;
                    }
                    let g = g as usize;
                    match self {
                        AccCol::Sum { sum, n: count } => {
                            sum[g] += m.sum.value(i);
                            count[g] += n;
                        }
                        AccCol::Min(v) => v[g] = v[g].min(m.min.value(i)),
                        AccCol::Max(v) => v[g] = v[g].max(m.max.value(i)),
                        AccCol::Values(vs) => {
                            vs[g].extend(r.view.durations(i).iter().map(|&v| v as f64));
                        }
                        AccCol::Count(_) | AccCol::Errors { .. } => {}
                    }
                }
            }
        }
    }

    fn finish(&mut self, f: AggFunc, g: usize, seconds: f64) -> Cell {
        match (f, self) {
            (AggFunc::Count, AccCol::Count(n)) => Cell::Int(n[g] as i64),
            (AggFunc::Rate, AccCol::Count(n)) => Cell::Num(n[g] as f64 / seconds),
            (AggFunc::Sum, AccCol::Sum { sum, n }) if n[g] > 0 => Cell::Num(sum[g]),
            (AggFunc::Avg, AccCol::Sum { sum, n }) if n[g] > 0 => Cell::Num(sum[g] / n[g] as f64),
            (AggFunc::Min, AccCol::Min(m)) | (AggFunc::Max, AccCol::Max(m)) if !m[g].is_nan() => {
                Cell::Num(m[g])
            }
            (AggFunc::Quantile(q), AccCol::Values(v)) if !v[g].is_empty() => {
                Cell::Num(quantile(&mut v[g], q))
            }
            (AggFunc::ErrorRatio, AccCol::Errors { errors, total }) if total[g] > 0 => {
                Cell::Num(errors[g] as f64 / total[g] as f64)
            }
            _ => Cell::Null,
        }
    }
}

/// Group id of a row that did not pass the filters.
const SKIP: u32 = u32::MAX;

/// The parts of one measure in a rollup batch.
struct MeasureCols<'a> {
    count: &'a UInt64Array,
    sum: &'a Float64Array,
    min: &'a Float64Array,
    max: &'a Float64Array,
}

/// What one aggregate reads of a rollup batch: the weights, status and durations (for
/// quantiles of the duration, the only field whose values rollups keep) through storage's
/// view, and the parts of its measure.
struct RollupCols<'a> {
    view: RollupView<'a>,
    measure: Option<MeasureCols<'a>>,
}

impl<'a> RollupCols<'a> {
    fn new(batch: &'a RecordBatch, measure: Option<&str>, quantile: bool) -> Result<Self> {
        let view = RollupView::new(batch)?;
        if quantile && !view.has_durations() {
            return Err(QueryError::Execution(
                "rollup rows without their durations cannot answer a quantile".into(),
            ));
        }
        let measure = match measure {
            Some(m) => Some(MeasureCols {
                count: column(batch, &rollup::measure_column(m, Part::Count))?,
                sum: column(batch, &rollup::measure_column(m, Part::Sum))?,
                min: column(batch, &rollup::measure_column(m, Part::Min))?,
                max: column(batch, &rollup::measure_column(m, Part::Max))?,
            }),
            None => None,
        };
        Ok(Self { view, measure })
    }
}

/// Interns the values of one group-by column into dense ids.
enum Interner {
    Text {
        ids: FxHashMap<Box<str>, u32>,
        values: Vec<String>,
        /// The id of the last value looked up (rows often repeat their neighbour's key).
        last: Option<u32>,
    },
    Time {
        step: i64,
        ids: FxHashMap<i64, u32>,
        values: Vec<i64>,
    },
}

impl Interner {
    fn new(g: &GroupBy) -> Self {
        match g {
            GroupBy::Key(_) => Interner::Text {
                ids: FxHashMap::default(),
                values: Vec::new(),
                last: None,
            },
            GroupBy::Time(step) => Interner::Time {
                step: *step,
                ids: FxHashMap::default(),
                values: Vec::new(),
            },
        }
    }

    fn text(&mut self, s: &str) -> u32 {
        let Interner::Text { ids, values, last } = self else {
            return 0;
        };
        if let Some(id) = *last
            && values.get(id as usize).is_some_and(|v| v == s)
        {
            return id;
        }
        // Few distinct values (services, models, operations): a scan beats hashing.
        if values.len() <= 8
            && let Some(id) = values.iter().position(|v| v.len() == s.len() && v == s)
        {
            *last = Some(id as u32);
            return id as u32;
        }
        let id = match ids.get(s) {
            Some(&id) => id,
            None => {
                let id = values.len() as u32;
                values.push(s.to_owned());
                ids.insert(s.into(), id);
                id
            }
        };
        *last = Some(id);
        id
    }

    fn time(&mut self, t: i64) -> u32 {
        let Interner::Time { step, ids, values } = self else {
            return 0;
        };
        let b = t.div_euclid(*step) * *step;
        if let Some(&last) = values.last()
            && last == b
        {
            return (values.len() - 1) as u32;
        }
        *ids.entry(b).or_insert_with(|| {
            values.push(b);
            (values.len() - 1) as u32
        })
    }

    fn cell(&self, id: u32) -> Cell {
        match self {
            Interner::Text { values, .. } => values
                .get(id as usize)
                .map_or(Cell::Null, |v| Cell::Str(v.clone())),
            Interner::Time { values, .. } => values
                .get(id as usize)
                .map_or(Cell::Null, |v| Cell::Int(*v)),
        }
    }
}

/// Runs the in-memory half of `plan` over the scanned batches and the rollup rows that stand
/// for the spans of segments answered from their rollups.
pub(super) fn run(plan: &Plan, batches: &[RecordBatch], rollups: &[RecordBatch]) -> Result<Table> {
    let mut explain = Explain::default();
    if plan.aggregates.is_empty() {
        return top_rows(plan, batches, explain);
    }
    if plan.group_by.len() > 4 {
        return Err(QueryError::BadRequest("at most 4 group-by keys".into()));
    }
    let mut interners: Vec<Interner> = plan.group_by.iter().map(Interner::new).collect();
    let mut groups: FxHashMap<u128, u32> = FxHashMap::default();
    // With one group key: the group of each interned id (SKIP: none yet).
    let mut dense: Vec<u32> = Vec::new();
    let mut group_keys: Vec<u128> = Vec::new();
    let mut accs: Vec<AccCol> = plan
        .aggregates
        .iter()
        .map(|a| AccCol::new(a.func))
        .collect();
    let mut gids: Vec<u32> = Vec::new();
    let agg_fields: Vec<Option<&'static str>> = plan
        .aggregates
        .iter()
        .map(|a| match (a.func, &a.field) {
            (AggFunc::Count | AggFunc::Rate | AggFunc::ErrorRatio, _) | (_, None) => Ok(None),
            (_, Some(f)) => numeric_field(plan.signal, f).map(|f| Some(f.column)),
        })
        .collect::<Result<_>>()?;
    let mut ids: Vec<Vec<u32>> = vec![Vec::new(); plan.group_by.len()];
    let mut t_min = i64::MAX;
    let mut t_max = i64::MIN;
    let sources = batches
        .iter()
        .map(|b| (b, false))
        .chain(rollups.iter().map(|b| (b, true)));
    for (batch, is_rollup) in sources {
        plan.deadline.check()?;
        let n = batch.num_rows();
        let keep = if is_rollup {
            explain.rollup_rows += n as u64;
            None
        } else {
            explain.rows_scanned += n as u64;
            filter_mask(plan, batch)?
        };
        // A rollup row's extent, for rates over the rows' own time span.
        let extent: Option<(&Int64Array, &Int64Array)> = if is_rollup {
            Some((
                column(batch, rollup::TIME_MIN)?,
                column(batch, rollup::TIME_MAX)?,
            ))
        } else {
            None
        };
        let ts = if plan.needs_time() {
            Some(times(batch, plan.signal)?)
        } else {
            None
        };
        for (gi, g) in plan.group_by.iter().enumerate() {
            let out = &mut ids[gi];
            out.clear();
            match g {
                GroupBy::Key(k) => {
                    let kc = KeyCol::new(batch, plan.signal, k)?;
                    let it = &mut interners[gi];
                    if let KeyCol::Dict(d, values) = &kc {
                        // Each dictionary value once, then every row by its key.
                        let id_of: Vec<u32> = (0..values.len())
                            .map(|v| {
                                it.text(if values.is_null(v) {
                                    ""
                                } else {
                                    values.value(v)
                                })
                            })
                            .collect();
                        let empty = it.text("");
                        let keys = d.keys();
                        out.extend((0..n).map(|i| {
                            if keep.as_ref().is_some_and(|m| !m[i]) || keys.is_null(i) {
                                empty
                            } else {
                                usize::try_from(keys.value(i))
                                    .ok()
                                    .and_then(|k| id_of.get(k).copied())
                                    .unwrap_or(empty)
                            }
                        }));
                    } else {
                        out.extend((0..n).map(|i| {
                            if keep.as_ref().is_some_and(|m| !m[i]) {
                                0
                            } else {
                                it.text(&kc.get(i))
                            }
                        }));
                    }
                }
                GroupBy::Time(_) => {
                    let it = &mut interners[gi];
                    if let Some(ts) = ts {
                        out.extend(ts.values().iter().map(|&t| it.time(t)));
                    }
                }
            }
        }
        let nums: Vec<Option<NumCol<'_>>> = if is_rollup {
            Vec::new()
        } else {
            agg_fields
                .iter()
                .map(|c| c.map(|c| NumCol::new(batch, c)).transpose())
                .collect::<Result<_>>()?
        };
        let status: Option<&UInt8Array> = if plan
            .aggregates
            .iter()
            .any(|a| a.func == AggFunc::ErrorRatio)
        {
            batch
                .column_by_name(col::STATUS_CODE)
                .and_then(|a| a.as_any().downcast_ref())
        } else {
            None
        };
        // Pass 1: the group of every row.
        gids.clear();
        for i in 0..n {
            if keep.as_ref().is_some_and(|m| !m[i]) {
                gids.push(SKIP);
                continue;
            }
            if let Some((lo, hi)) = extent {
                t_min = t_min.min(lo.value(i));
                t_max = t_max.max(hi.value(i));
            } else if let Some(ts) = ts {
                let t = ts.value(i);
                t_min = t_min.min(t);
                t_max = t_max.max(t);
            }
            let mut key: u128 = 0;
            for col_ids in &ids {
                key = (key << 32) | u128::from(col_ids[i]);
            }
            // One group key: its dense id indexes the groups directly.
            let slot = if ids.len() == 1 {
                let k = ids[0][i] as usize;
                if k >= dense.len() {
                    dense.resize(k + 1, SKIP);
                }
                Some(k)
            } else {
                None
            };
            if let Some(k) = slot
                && dense[k] != SKIP
            {
                gids.push(dense[k]);
                continue;
            }
            let g = match groups.get(&key) {
                Some(&g) => g,
                None => {
                    if group_keys.len() >= MAX_GROUPS {
                        return Err(QueryError::Execution(format!(
                            "the plan forms more than {MAX_GROUPS} groups; group by fewer keys or coarser time buckets"
                        )));
                    }
                    let g = group_keys.len() as u32;
                    groups.insert(key, g);
                    group_keys.push(key);
                    for acc in &mut accs {
                        acc.push_group();
                    }
                    g
                }
            };
            if let Some(k) = slot {
                dense[k] = g;
            }
            gids.push(g);
        }
        if is_rollup {
            for ((acc, field), a) in accs.iter_mut().zip(&agg_fields).zip(&plan.aggregates) {
                let quantile = matches!(a.func, AggFunc::Quantile(_));
                acc.update_rollup(&gids, &RollupCols::new(batch, *field, quantile)?);
            }
            continue;
        }
        explain.rows_filtered += gids.iter().filter(|g| **g != SKIP).count() as u64;
        // Pass 2: each aggregate over the whole batch.
        for (acc, num) in accs.iter_mut().zip(&nums) {
            acc.update(&gids, num.as_ref(), status);
        }
    }
    // Like SQL, an aggregate without group-by keys answers one row even over no rows.
    if plan.group_by.is_empty() && group_keys.is_empty() {
        group_keys.push(0);
        for acc in &mut accs {
            acc.push_group();
        }
    }
    let seconds = rate_seconds(plan, t_min, t_max);
    let mut rows: Vec<(Vec<Cell>, Vec<Cell>)> = group_keys
        .iter()
        .enumerate()
        .map(|(g, key)| {
            let k = plan.group_by.len();
            let keys = (0..k)
                .map(|gi| {
                    let id = (key >> (32 * (k - 1 - gi) as u32)) as u32;
                    interners[gi].cell(id)
                })
                .collect();
            let vals = plan
                .aggregates
                .iter()
                .zip(accs.iter_mut())
                .map(|(a, acc)| acc.finish(a.func, g, seconds))
                .collect();
            (keys, vals)
        })
        .collect();
    explain.groups = rows.len();
    match &plan.order_by {
        Some(OrderBy {
            by: OrderKey::Aggregate(i),
            descending,
        }) => rows.sort_by(|a, b| {
            let o = cmp_cells(&a.1[*i], &b.1[*i]);
            if *descending { o.reverse() } else { o }.then_with(|| cmp_rows(&a.0, &b.0))
        }),
        _ => rows.sort_by(|a, b| cmp_rows(&a.0, &b.0)),
    }
    if let Some(l) = plan.limit {
        rows.truncate(l);
    }
    let mut columns: Vec<String> = plan
        .group_by
        .iter()
        .map(|g| match g {
            GroupBy::Key(k) => k.clone(),
            GroupBy::Time(_) => "time".to_owned(),
        })
        .collect();
    columns.extend(plan.aggregates.iter().map(|a| a.header()));
    explain.rows_returned = rows.len();
    Ok(Table {
        columns,
        rows: rows
            .into_iter()
            .map(|(mut k, v)| {
                k.extend(v);
                k
            })
            .collect(),
        explain,
    })
}

/// Seconds that `rate` divides by: the time bucket, else the plan's range when finite, else the
/// span of the rows' times.
fn rate_seconds(plan: &Plan, t_min: i64, t_max: i64) -> f64 {
    for g in &plan.group_by {
        if let GroupBy::Time(step) = g {
            return *step as f64 / 1e9;
        }
    }
    let (s, e) = (plan.time.start.0, plan.time.end.0);
    if s != i64::MIN && e != i64::MAX && e > s {
        return (e - s) as f64 / 1e9;
    }
    if t_max > t_min {
        (t_max - t_min) as f64 / 1e9
    } else {
        1.0
    }
}

fn cmp_cells(a: &Cell, b: &Cell) -> Ordering {
    match (a, b) {
        (Cell::Str(x), Cell::Str(y)) => x.cmp(y),
        (Cell::Null, Cell::Null) => Ordering::Equal,
        (Cell::Null, _) => Ordering::Less,
        (_, Cell::Null) => Ordering::Greater,
        _ => a
            .as_f64()
            .unwrap_or(f64::NAN)
            .total_cmp(&b.as_f64().unwrap_or(f64::NAN)),
    }
}

fn cmp_rows(a: &[Cell], b: &[Cell]) -> Ordering {
    a.iter()
        .zip(b)
        .map(|(x, y)| cmp_cells(x, y))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// Rows passing every numeric filter (`None`: no filters, all rows pass).
fn filter_mask(plan: &Plan, batch: &RecordBatch) -> Result<Option<Vec<bool>>> {
    if plan.filters.is_empty() {
        return Ok(None);
    }
    let n = batch.num_rows();
    let mut keep = vec![true; n];
    for f in &plan.filters {
        let c = NumCol::new(batch, numeric_field(plan.signal, &f.field)?.column)?;
        for (i, k) in keep.iter_mut().enumerate() {
            if *k {
                *k = c.get(i).is_some_and(|v| f.op.holds(v, f.value));
            }
        }
    }
    Ok(Some(keep))
}

/// A plan without aggregates: the `limit` rows with the highest (or lowest) value of the order
/// field, with the plan's columns.
fn top_rows(plan: &Plan, batches: &[RecordBatch], mut explain: Explain) -> Result<Table> {
    let limit = plan.limit.unwrap_or(0);
    let (field, descending) = match &plan.order_by {
        Some(OrderBy {
            by: OrderKey::Field(f),
            descending,
        }) => (Some(numeric_field(plan.signal, f)?.column), *descending),
        _ => (None, true),
    };
    // (order value, batch, row) of every row that passes.
    let mut cand: Vec<(f64, u32, u32)> = Vec::new();
    for (bi, batch) in batches.iter().enumerate() {
        plan.deadline.check()?;
        explain.rows_scanned += batch.num_rows() as u64;
        let keep = filter_mask(plan, batch)?;
        let ts = times(batch, plan.signal)?;
        let order = field.map(|c| NumCol::new(batch, c)).transpose()?;
        for i in 0..batch.num_rows() {
            if keep.as_ref().is_some_and(|m| !m[i]) {
                continue;
            }
            explain.rows_filtered += 1;
            let v = match &order {
                Some(c) => c.get(i).unwrap_or(f64::NEG_INFINITY),
                None => ts.value(i) as f64,
            };
            cand.push((if descending { -v } else { v }, bi as u32, i as u32));
        }
    }
    let by = |a: &(f64, u32, u32), b: &(f64, u32, u32)| {
        a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2))
    };
    if cand.len() > limit && limit > 0 {
        cand.select_nth_unstable_by(limit - 1, by);
        cand.truncate(limit);
    } else if limit == 0 {
        cand.clear();
    }
    cand.sort_by(by);
    let mut columns: Vec<String> = vec!["time".to_owned()];
    columns.extend(plan.columns.iter().cloned());
    let mut rows = Vec::with_capacity(cand.len());
    for (_, bi, i) in cand {
        let batch = &batches[bi as usize];
        let i = i as usize;
        let mut row = vec![Cell::Int(times(batch, plan.signal)?.value(i))];
        for c in &plan.columns {
            row.push(match numeric_field(plan.signal, c) {
                Ok(f) => NumCol::new(batch, f.column)?
                    .get(i)
                    .map_or(Cell::Null, Cell::Num),
                Err(_) => Cell::Str(KeyCol::new(batch, plan.signal, c)?.get(i).into_owned()),
            });
        }
        rows.push(row);
    }
    explain.rows_returned = rows.len();
    Ok(Table {
        columns,
        rows,
        explain,
    })
}
