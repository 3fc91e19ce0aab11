//! Aggregation plans over spans and logs: tenant + signal + time range + predicates +
//! projection + aggregation, the questions an LLM team asks of its telemetry ("p99 latency by
//! model per minute", "error ratio by service", "tokens by model per hour", "the ten slowest
//! calls of this user").
//!
//! A plan runs in two halves:
//!
//! 1. [`Store::scan`] with the plan's time range and storage [`Predicate`]s and a projection of
//!    just the columns the plan reads. Storage prunes by partition, segment time, postings,
//!    bloom filter, text index and row-group statistics, then evaluates the predicates exactly.
//! 2. Here, vectorized over each Arrow batch: numeric [`FieldFilter`]s (duration ranges, token
//!    counts) as boolean masks, then group keys interned per column and accumulated per group
//!    ([`accumulate`]), or, for a plan without aggregates, a bounded top-k by one field.
//!
//! Plans that only count, sum, average, take extremes or duration quantiles by rollup keys and
//! whole-minute buckets
//! let storage answer from per-segment span rollups ([`sightline_storage::rollup`]) where that
//! is exact; those rollup rows are folded here with their weights, next to the rows of the
//! segments (and unflushed data) that had to be read row by row.
//!
//! The [`Explain`] of every result carries the storage [`ScanStats`] and what this half kept,
//! so tests can assert that pruning happened and an `explain` request can show it.

mod accumulate;
mod fields;
mod request;

use std::time::Instant;

use serde::{Deserialize, Serialize};
use sightline_storage::{
    Deadline, Predicate, ScanRequest, ScanStats, Signal, Store, TenantId, TimeRange,
};

pub use accumulate::Cell;
pub use fields::{KNOWN_FIELDS, time_column};
pub use request::{MAX_LIMIT, MatcherSpec, PlanRequest, match_op};

use crate::error::{QueryError, Result};

/// Most groups one plan may produce before it is refused (bounded memory).
pub const MAX_GROUPS: usize = 1_000_000;

/// A group-by key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    /// A promoted column or attribute, by its OpenTelemetry key (`service.name`,
    /// `gen_ai.request.model`, `user.id`, ...). Rows without it group under `""`.
    Key(String),
    /// The row's time truncated to buckets of this many nanoseconds (aligned to the epoch).
    Time(i64),
}

/// An aggregate function.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AggFunc {
    /// Rows in the group.
    Count,
    /// Sum of the field (rows without a value are skipped).
    Sum,
    /// Mean of the field.
    Avg,
    /// Minimum of the field.
    Min,
    /// Maximum of the field.
    Max,
    /// Exact quantile `q` in \[0, 1\] of the field (Prometheus' linear interpolation between
    /// closest ranks).
    Quantile(f64),
    /// Fraction of spans whose status is `ERROR` (spans only).
    ErrorRatio,
    /// Rows per second: count divided by the time bucket (or the plan's whole range).
    Rate,
}

/// One output aggregate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    /// The function.
    pub func: AggFunc,
    /// The numeric field it reads (see [`KNOWN_FIELDS`]); not needed by `count`,
    /// `error_ratio` and `rate`.
    #[serde(default)]
    pub field: Option<String>,
}

/// A numeric comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CmpOp {
    /// `<`
    #[serde(rename = "<")]
    Lt,
    /// `<=`
    #[serde(rename = "<=")]
    Le,
    /// `>`
    #[serde(rename = ">")]
    Gt,
    /// `>=`
    #[serde(rename = ">=")]
    Ge,
    /// `=`
    #[serde(rename = "=")]
    Eq,
    /// `!=`
    #[serde(rename = "!=")]
    Ne,
}

impl CmpOp {
    /// Applies the comparison.
    pub fn holds(self, a: f64, b: f64) -> bool {
        match self {
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
        }
    }
}

/// `field op value` on a numeric field; rows without the field never match.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FieldFilter {
    /// Numeric field (see [`KNOWN_FIELDS`]).
    pub field: String,
    /// Comparison.
    pub op: CmpOp,
    /// Right-hand side.
    pub value: f64,
}

/// Ordering of the output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OrderBy {
    /// For aggregate plans: the index of the aggregate to order groups by. For row plans: the
    /// numeric field to order rows by.
    pub by: OrderKey,
    /// Descending when true.
    #[serde(default)]
    pub descending: bool,
}

/// What an [`OrderBy`] orders by.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderKey {
    /// An aggregate of the plan, by index.
    Aggregate(usize),
    /// A numeric field of the rows.
    Field(String),
}

/// A query plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Tenant read.
    pub tenant: TenantId,
    /// Spans or logs.
    pub signal: Signal,
    /// Time range on the signal's time column.
    pub time: TimeRange,
    /// Storage predicates (pushed down, used for pruning).
    pub predicates: Vec<Predicate>,
    /// Numeric filters, evaluated after the scan.
    pub filters: Vec<FieldFilter>,
    /// Group-by keys (aggregate plans).
    pub group_by: Vec<GroupBy>,
    /// Aggregates; empty for a row plan (then `order_by` must name a field and `limit` is
    /// required).
    pub aggregates: Vec<Aggregate>,
    /// Output columns of a row plan (keys or numeric fields); ignored by aggregate plans.
    pub columns: Vec<String>,
    /// Ordering of groups (aggregate plans; default: by group key) or rows.
    pub order_by: Option<OrderBy>,
    /// Most output rows.
    pub limit: Option<usize>,
    /// When execution must stop ([`QueryError::Timeout`]): checked by the storage scan per
    /// row group and batch, and here per batch folded.
    pub deadline: Deadline,
}

/// How a plan ran: the storage stage and this crate's stage.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Explain {
    /// Storage pruning counts (segments, row groups, rows per stage).
    pub scan: ScanStats,
    /// Rows the storage scan returned.
    pub rows_scanned: u64,
    /// Rollup rows folded in place of the spans of segments answered from their rollups
    /// (`scan.rollup_spans` spans).
    pub rollup_rows: u64,
    /// Rows left after the numeric filters.
    pub rows_filtered: u64,
    /// Groups formed (aggregate plans).
    pub groups: usize,
    /// Rows returned.
    pub rows_returned: usize,
    /// Storage columns read.
    pub columns_read: Vec<String>,
    /// Microseconds in the storage scan.
    pub scan_micros: u64,
    /// Microseconds in filtering and aggregation.
    pub aggregate_micros: u64,
}

/// A plan's answer: a table.
#[derive(Clone, Debug, Serialize)]
pub struct Table {
    /// Column names: group keys then aggregates (`count`, `quantile(0.99, duration)`, ...), or
    /// the row plan's columns.
    pub columns: Vec<String>,
    /// Rows, each as long as `columns`.
    pub rows: Vec<Vec<Cell>>,
    /// How the plan ran.
    pub explain: Explain,
}

impl Plan {
    /// An empty plan: every row of `signal` in `time`.
    pub fn new(tenant: TenantId, signal: Signal, time: TimeRange) -> Self {
        Self {
            tenant,
            signal,
            time,
            predicates: Vec::new(),
            filters: Vec::new(),
            group_by: Vec::new(),
            aggregates: Vec::new(),
            columns: Vec::new(),
            order_by: None,
            limit: None,
            deadline: Deadline::none(),
        }
    }

    fn validate(&self) -> Result<()> {
        if self.signal == Signal::Samples {
            return Err(QueryError::BadRequest(
                "aggregation plans read spans or logs; use PromQL for metric samples".into(),
            ));
        }
        for g in &self.group_by {
            if let GroupBy::Time(step) = g
                && *step <= 0
            {
                return Err(QueryError::BadRequest(
                    "a time bucket must be positive".into(),
                ));
            }
        }
        for a in &self.aggregates {
            match a.func {
                AggFunc::Count | AggFunc::Rate => {}
                AggFunc::ErrorRatio if self.signal == Signal::Spans => {}
                AggFunc::ErrorRatio => {
                    return Err(QueryError::BadRequest(
                        "error_ratio applies to spans".into(),
                    ));
                }
                AggFunc::Quantile(q) if !(0.0..=1.0).contains(&q) => {
                    return Err(QueryError::BadRequest(format!(
                        "quantile {q} is outside [0, 1]"
                    )));
                }
                _ => {
                    let f = a.field.as_deref().ok_or_else(|| {
                        QueryError::BadRequest(format!("{} needs a field", a.func.name()))
                    })?;
                    fields::numeric_field(self.signal, f)?;
                }
            }
        }
        for f in &self.filters {
            fields::numeric_field(self.signal, &f.field)?;
        }
        if self.aggregates.is_empty() {
            if self.limit.is_none() {
                return Err(QueryError::BadRequest(
                    "a plan without aggregates needs a limit".into(),
                ));
            }
            if let Some(OrderBy {
                by: OrderKey::Aggregate(_),
                ..
            }) = self.order_by
            {
                return Err(QueryError::BadRequest(
                    "a plan without aggregates orders by a field".into(),
                ));
            }
        } else if let Some(OrderBy {
            by: OrderKey::Aggregate(i),
            ..
        }) = self.order_by
            && i >= self.aggregates.len()
        {
            return Err(QueryError::BadRequest(format!(
                "order_by names aggregate {i} of {}",
                self.aggregates.len()
            )));
        }
        Ok(())
    }

    /// Whether span rollups answer this plan exactly (storage still decides per segment):
    /// no numeric filters, group keys that are rollup keys or time buckets of whole minutes,
    /// and aggregates that rollups keep (counts, rates, error ratios, sums, means, minima and
    /// maxima of summarised fields, and quantiles of the duration).
    fn rollup_exact(&self) -> bool {
        use sightline_storage::rollup;
        let key_ok = |k: &str| {
            sightline_storage::schema::promoted_column(Signal::Spans, k).is_some_and(rollup::is_key)
        };
        self.signal == Signal::Spans
            && self.filters.is_empty()
            && !self.aggregates.is_empty()
            && self.group_by.iter().all(|g| match g {
                GroupBy::Key(k) => key_ok(k),
                GroupBy::Time(step) => step % rollup::BUCKET_NANOS == 0,
            })
            && self.aggregates.iter().all(|a| {
                let column = a
                    .field
                    .as_deref()
                    .and_then(|f| fields::numeric_field(self.signal, f).ok())
                    .map(|f| f.column);
                match a.func {
                    AggFunc::Count | AggFunc::Rate | AggFunc::ErrorRatio => true,
                    AggFunc::Sum | AggFunc::Avg | AggFunc::Min | AggFunc::Max => {
                        column.is_some_and(rollup::is_measure)
                    }
                    // Rollups keep every span's duration, sorted.
                    AggFunc::Quantile(_) => {
                        column == Some(sightline_storage::schema::col::DURATION)
                    }
                }
            })
    }

    /// Whether rows' times are read: for time buckets, `rate` over observed times and row
    /// listings (which show the time).
    fn needs_time(&self) -> bool {
        self.aggregates.is_empty()
            || self.group_by.iter().any(|g| matches!(g, GroupBy::Time(_)))
            || self.aggregates.iter().any(|a| a.func == AggFunc::Rate)
    }

    /// Storage columns this plan reads.
    fn projection(&self) -> Result<Vec<String>> {
        let mut cols: Vec<String> = Vec::new();
        if self.needs_time() {
            cols.push(time_column(self.signal).to_owned());
        }
        let mut add = |c: &str| {
            if !cols.iter().any(|x| x == c) {
                cols.push(c.to_owned());
            }
        };
        for g in &self.group_by {
            if let GroupBy::Key(k) = g {
                for c in fields::key_columns(self.signal, k) {
                    add(c);
                }
            }
        }
        for a in &self.aggregates {
            if a.func == AggFunc::ErrorRatio {
                add(sightline_storage::schema::col::STATUS_CODE);
            }
            if let Some(f) = &a.field {
                add(fields::numeric_field(self.signal, f)?.column);
            }
        }
        for f in &self.filters {
            add(fields::numeric_field(self.signal, &f.field)?.column);
        }
        if let Some(OrderBy {
            by: OrderKey::Field(f),
            ..
        }) = &self.order_by
        {
            add(fields::numeric_field(self.signal, f)?.column);
        }
        for c in &self.columns {
            match fields::numeric_field(self.signal, c) {
                Ok(f) => add(f.column),
                Err(_) => {
                    for k in fields::key_columns(self.signal, c) {
                        add(k);
                    }
                }
            }
        }
        Ok(cols)
    }
}

impl AggFunc {
    /// Lower-case name used in column headers.
    pub fn name(&self) -> String {
        match self {
            AggFunc::Count => "count".into(),
            AggFunc::Sum => "sum".into(),
            AggFunc::Avg => "avg".into(),
            AggFunc::Min => "min".into(),
            AggFunc::Max => "max".into(),
            AggFunc::Quantile(q) => format!("quantile({q})"),
            AggFunc::ErrorRatio => "error_ratio".into(),
            AggFunc::Rate => "rate".into(),
        }
    }
}

impl Aggregate {
    /// Column header: `count`, `sum(gen_ai.usage.input_tokens)`, `quantile(0.99)(duration)`.
    pub fn header(&self) -> String {
        match &self.field {
            Some(f)
                if !matches!(
                    self.func,
                    AggFunc::Count | AggFunc::ErrorRatio | AggFunc::Rate
                ) =>
            {
                format!("{}({f})", self.func.name())
            }
            _ => self.func.name(),
        }
    }
}

/// Runs a plan against a store.
pub fn execute(store: &Store, plan: &Plan) -> Result<Table> {
    plan.validate()?;
    plan.deadline.check()?;
    let projection = plan.projection()?;
    let req = ScanRequest {
        tenant: plan.tenant.clone(),
        signal: plan.signal,
        time: plan.time,
        predicates: plan.predicates.clone(),
        projection: Some(projection.clone()),
        rollups: plan.rollup_exact(),
        deadline: plan.deadline.clone(),
        rollup_durations: plan
            .aggregates
            .iter()
            .any(|a| matches!(a.func, AggFunc::Quantile(_))),
        // Hourly rollups fold whole into time buckets of whole hours (epoch-aligned, as
        // `GroupBy::Time` buckets are).
        rollup_hours: plan.group_by.iter().all(|g| match g {
            GroupBy::Time(step) => step % sightline_storage::rollup::HOUR_BUCKET_NANOS == 0,
            GroupBy::Key(_) => true,
        }),
        // Group keys are interned once per dictionary value instead of once per row.
        dictionary: plan
            .group_by
            .iter()
            .filter_map(|g| match g {
                GroupBy::Key(k) => sightline_storage::schema::promoted_column(plan.signal, k),
                GroupBy::Time(_) => None,
            })
            .map(str::to_owned)
            .collect(),
    };
    let t0 = Instant::now();
    let scanned = store.scan(&req)?;
    let scan_micros = t0.elapsed().as_micros() as u64;
    let t1 = Instant::now();
    let mut table = accumulate::run(plan, &scanned.batches, &scanned.rollups)?;
    table.explain.scan = scanned.stats;
    table.explain.columns_read = projection;
    table.explain.scan_micros = scan_micros;
    table.explain.aggregate_micros = t1.elapsed().as_micros() as u64;
    Ok(table)
}
