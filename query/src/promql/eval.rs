//! The evaluator: walks the parsed expression and computes every node over the whole grid.
//!
//! Semantics follow Prometheus 2.x: a vector selector takes, at each step, the newest sample no
//! older than the lookback delta (5 minutes) unless it is a staleness marker; a range selector
//! takes the samples in `[t - range, t]`; `offset` and `@` shift the reference time.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use promql_parser::parser::ast::{AtModifier, Offset};
use promql_parser::parser::{Expr, MatrixSelector, VectorSelector};

use super::budget::{Budget, Held};
use super::source::{SampleSource, convert_matchers};
use super::value::{Grid, RawSeries, Series, Value, is_stale, merge_same_labelsets};
use super::{aggregate, binary, functions};
use crate::error::{QueryError, Result};

/// Prometheus' default lookback delta.
pub const LOOKBACK_MS: i64 = 5 * 60 * 1000;
/// Most series one selector may return.
pub const MAX_SERIES_PER_SELECTOR: usize = 500_000;
/// Most steps one query may evaluate.
pub const MAX_STEPS: usize = 11_000;
/// Steps of one series evaluated between two deadline checks.
const DEADLINE_STEPS: usize = 256;

/// One step's window over a series of a range selector.
#[derive(Clone, Copy)]
pub(crate) struct Window<'a> {
    /// The samples in the window, `(timestamp ms, value)` in time order, without staleness
    /// markers.
    pub(crate) points: &'a [(i64, f64)],
    /// Each drop in the window (a sample below the one before it, both in the window; a counter
    /// reset), in time order: the sample's index in the series and the value before it.
    pub(crate) drops: &'a [(usize, f64)],
}

/// Evaluation context of one query.
pub struct Evaluator<'a> {
    pub(crate) source: &'a dyn SampleSource,
    pub(crate) grid: Grid,
    pub(crate) lookback_ms: i64,
    /// Start and end of the whole query (for `@ start()` / `@ end()`).
    pub(crate) query_start: i64,
    pub(crate) query_end: i64,
    /// The query's deadline and sample limit.
    pub(crate) budget: &'a Budget,
    /// Samples held now (see [`super::budget`]).
    pub(crate) held: Held,
}

pub(crate) fn duration_ms(d: &Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn offset_ms(o: &Option<Offset>) -> i64 {
    match o {
        Some(Offset::Pos(d)) => duration_ms(d),
        Some(Offset::Neg(d)) => -duration_ms(d),
        None => 0,
    }
}

fn system_time_ms(t: &SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => duration_ms(&d),
        Err(e) => -duration_ms(&e.duration()),
    }
}

impl<'a> Evaluator<'a> {
    /// The reference time of step `i` for a selector with `offset` and `at`.
    fn ref_time(&self, i: usize, offset: i64, at: &Option<AtModifier>) -> i64 {
        let base = match at {
            Some(AtModifier::Start) => self.query_start,
            Some(AtModifier::End) => self.query_end,
            Some(AtModifier::At(t)) => system_time_ms(t),
            None => self.grid.at(i),
        };
        base - offset
    }

    fn fetch(&self, vs: &VectorSelector, range_ms: i64) -> Result<Vec<RawSeries>> {
        let matchers = convert_matchers(vs.name.as_deref(), &vs.matchers)?;
        let offset = offset_ms(&vs.offset);
        let (lo, hi) = (0..self.grid.len().max(1)).fold((i64::MAX, i64::MIN), |(lo, hi), i| {
            let t = self.ref_time(i, offset, &vs.at);
            (lo.min(t), hi.max(t))
        });
        self.budget.check_deadline()?;
        let limit = Budget {
            deadline: self.budget.deadline.clone(),
            max_samples: self.held.left(),
        };
        let mut series = self.source.select(&matchers, lo - range_ms, hi, &limit)?;
        self.held
            .take(series.iter().map(|s| s.timestamps.len()).sum())?;
        // Prometheus' selectors yield series in label order; results and `topk` ties follow it.
        series.sort_by(|a, b| a.labels.cmp(&b.labels));
        if series.len() > MAX_SERIES_PER_SELECTOR {
            return Err(QueryError::Execution(format!(
                "selector {vs} matches {} series, more than the limit of {MAX_SERIES_PER_SELECTOR}",
                series.len()
            )));
        }
        Ok(series)
    }

    /// Evaluates an instant vector selector.
    #[inline(never)]
    pub(crate) fn vector_selector(&self, vs: &VectorSelector) -> Result<Vec<Series>> {
        let raw = self.fetch(vs, self.lookback_ms)?;
        self.take_grid(raw.len())?;
        let offset = offset_ms(&vs.offset);
        let mut out = Vec::with_capacity(raw.len());
        for s in raw {
            self.budget.check_deadline()?;
            let mut values = Vec::with_capacity(self.grid.len());
            for i in 0..self.grid.len() {
                let t = self.ref_time(i, offset, &vs.at);
                values.push(latest(&s, t, self.lookback_ms).map(|(_, v)| v));
            }
            if values.iter().any(Option::is_some) {
                out.push(Series {
                    labels: s.labels,
                    values,
                });
            }
        }
        Ok(out)
    }

    /// Timestamps of the samples an instant vector selector picks (for `timestamp()`).
    pub(crate) fn selector_timestamps(&self, vs: &VectorSelector) -> Result<Vec<Series>> {
        let raw = self.fetch(vs, self.lookback_ms)?;
        self.take_grid(raw.len())?;
        let offset = offset_ms(&vs.offset);
        let mut out = Vec::with_capacity(raw.len());
        for s in raw {
            self.budget.check_deadline()?;
            let values: Vec<Option<f64>> = (0..self.grid.len())
                .map(|i| {
                    latest(&s, self.ref_time(i, offset, &vs.at), self.lookback_ms)
                        .map(|(t, _)| t as f64 / 1000.0)
                })
                .collect();
            if values.iter().any(Option::is_some) {
                out.push(Series {
                    labels: super::value::drop_name(&s.labels),
                    values,
                });
            }
        }
        Ok(out)
    }

    /// Reserves one point per step for each of `series` output series, before they are
    /// allocated.
    fn take_grid(&self, series: usize) -> Result<()> {
        self.held.take(series.saturating_mul(self.grid.len()))
    }

    /// For each step, the samples of each series of a range selector; `f` reduces a window to
    /// a value. Windows hold `(timestamp ms, value)` without staleness markers.
    pub(crate) fn range_apply(
        &self,
        ms: &MatrixSelector,
        keep_name: bool,
        mut f: impl FnMut(Window<'_>, i64, i64, usize) -> Option<f64>,
    ) -> Result<Vec<Series>> {
        let range = duration_ms(&ms.range);
        let raw = self.fetch(&ms.vs, range)?;
        self.take_grid(raw.len())?;
        let offset = offset_ms(&ms.vs.offset);
        let mut out = Vec::with_capacity(raw.len());
        let mut points: Vec<(i64, f64)> = Vec::new();
        let mut drops: Vec<(usize, f64)> = Vec::new();
        for s in raw {
            self.budget.check_deadline()?;
            // The series' samples without staleness markers, once; each step's window is a
            // slice of them. Reference times rise with the step (or stay put under `@`), so
            // the window's ends only move forward; a step that goes back searches again.
            points.clear();
            points.extend(
                s.timestamps
                    .iter()
                    .zip(&s.values)
                    .filter(|(_, v)| !is_stale(**v))
                    .map(|(&t, &v)| (t, v)),
            );
            drops.clear();
            drops.extend(
                points
                    .windows(2)
                    .enumerate()
                    .filter(|(_, p)| p[1].1 < p[0].1)
                    .map(|(j, p)| (j + 1, p[0].1)),
            );
            let mut values = Vec::with_capacity(self.grid.len());
            let (mut lo, mut hi) = (0usize, 0usize);
            let (mut dlo, mut dhi) = (0usize, 0usize);
            let mut prev = i64::MIN;
            for i in 0..self.grid.len() {
                if i % DEADLINE_STEPS == DEADLINE_STEPS - 1 {
                    self.budget.check_deadline()?;
                }
                let t = self.ref_time(i, offset, &ms.vs.at);
                if t < prev {
                    (lo, hi, dlo, dhi) = (0, 0, 0, 0);
                }
                prev = t;
                let from = t.saturating_sub(range);
                lo += points[lo..].partition_point(|p| p.0 < from);
                hi = hi.max(lo);
                hi += points[hi..].partition_point(|p| p.0 <= t);
                // The drops whose sample and the one before it are both in the window.
                dlo += drops[dlo..].partition_point(|d| d.0 <= lo);
                dhi = dhi.max(dlo);
                dhi += drops[dhi..].partition_point(|d| d.0 < hi);
                let window = Window {
                    points: &points[lo..hi],
                    drops: &drops[dlo..dhi],
                };
                debug_assert!(
                    window.drops.iter().all(|d| lo < d.0 && d.0 < hi),
                    "a window's drops lie inside it"
                );
                values.push(if window.points.is_empty() {
                    None
                } else {
                    f(window, t, range, i)
                });
            }
            if values.iter().any(Option::is_some) {
                out.push(Series {
                    labels: if keep_name {
                        s.labels
                    } else {
                        super::value::drop_name(&s.labels)
                    },
                    values,
                });
            }
        }
        Ok(out)
    }

    /// Evaluates any expression: checks the deadline, evaluates the node, and then counts its
    /// result as held instead of its (consumed) inputs. Every node recurses through here, so
    /// the work of the leaves lives in separate functions and this frame stays small.
    pub(crate) fn eval(&self, e: &Expr) -> Result<Value> {
        self.budget.check_deadline()?;
        let mark = self.held.get();
        let v = match e {
            Expr::Paren(p) => self.eval(&p.expr),
            Expr::Unary(u) => self.eval(&u.expr).and_then(negate).and_then(unique),
            Expr::Binary(b) => binary::eval(self, b).and_then(unique),
            Expr::Aggregate(a) => aggregate::eval(self, a),
            Expr::Call(c) => functions::eval(self, c).and_then(unique),
            leaf => self.leaf(leaf),
        }?;
        self.held.settle(mark, &v)?;
        Ok(v)
    }

    /// The nodes without sub-expressions.
    #[inline(never)]
    fn leaf(&self, e: &Expr) -> Result<Value> {
        match e {
            Expr::NumberLiteral(n) => Ok(Value::Scalar(vec![n.val; self.grid.len()])),
            Expr::StringLiteral(s) => Ok(Value::String(s.val.clone())),
            Expr::VectorSelector(vs) => Ok(Value::Vector(self.vector_selector(vs)?)),
            Expr::MatrixSelector(ms) => self.matrix_selector(ms),
            Expr::Subquery(_) => Err(QueryError::Unsupported("subqueries".into())),
            Expr::Extension(_) => Err(QueryError::Unsupported("extension expressions".into())),
            Expr::Paren(_)
            | Expr::Unary(_)
            | Expr::Binary(_)
            | Expr::Aggregate(_)
            | Expr::Call(_) => Err(QueryError::Execution("not a leaf expression".into())),
        }
    }

    /// A bare range selector (an instant query's matrix result).
    #[inline(never)]
    fn matrix_selector(&self, ms: &MatrixSelector) -> Result<Value> {
        if self.grid.len() != 1 {
            return Err(QueryError::Execution(
                "a range vector cannot be the result of a range query; wrap it in a function such as rate()".into(),
            ));
        }
        let range = duration_ms(&ms.range);
        let t = self.ref_time(0, offset_ms(&ms.vs.offset), &ms.vs.at);
        let raw = self.fetch(&ms.vs, range)?;
        Ok(Value::Matrix(
            raw.into_iter()
                .filter_map(|s| {
                    let idx: Vec<usize> = (0..s.timestamps.len())
                        .filter(|&j| {
                            s.timestamps[j] >= t - range
                                && s.timestamps[j] <= t
                                && !is_stale(s.values[j])
                        })
                        .collect();
                    (!idx.is_empty()).then(|| RawSeries {
                        labels: s.labels.clone(),
                        timestamps: idx.iter().map(|&j| s.timestamps[j]).collect(),
                        values: idx.iter().map(|&j| s.values[j]).collect(),
                    })
                })
                .collect(),
        ))
    }

    /// Evaluates to a scalar per step, or fails naming what was found.
    pub(crate) fn eval_scalar(&self, e: &Expr, what: &str) -> Result<Vec<f64>> {
        match self.eval(e)? {
            Value::Scalar(v) => Ok(v),
            _ => Err(QueryError::Execution(format!("{what} must be a scalar"))),
        }
    }

    /// Evaluates to an instant vector, or fails.
    pub(crate) fn eval_vector(&self, e: &Expr, what: &str) -> Result<Vec<Series>> {
        match self.eval(e)? {
            Value::Vector(v) => Ok(v),
            _ => Err(QueryError::Execution(format!(
                "{what} must be an instant vector"
            ))),
        }
    }

    /// Evaluates to a string.
    pub(crate) fn eval_string(&self, e: &Expr, what: &str) -> Result<String> {
        match self.eval(e)? {
            Value::String(s) => Ok(s),
            _ => Err(QueryError::Execution(format!("{what} must be a string"))),
        }
    }
}

/// A vector's series with unique label sets ([`merge_same_labelsets`]). Selectors and
/// aggregations yield unique label sets by construction; functions and operators may not
/// (they drop `__name__`, rewrite labels, or add the other side's series), so their results
/// pass through here, as every step of Prometheus' `rangeEval` does.
fn unique(v: Value) -> Result<Value> {
    match v {
        Value::Vector(v) => merge_same_labelsets(v).map(Value::Vector),
        other => Ok(other),
    }
}

/// Unary minus: negates numbers and drops the metric name.
#[inline(never)]
fn negate(v: Value) -> Result<Value> {
    match v {
        Value::Scalar(v) => Ok(Value::Scalar(v.into_iter().map(|x| -x).collect())),
        Value::Vector(v) => Ok(Value::Vector(
            v.into_iter()
                .map(|s| Series {
                    labels: super::value::drop_name(&s.labels),
                    values: s.values.into_iter().map(|x| x.map(|x| -x)).collect(),
                })
                .collect(),
        )),
        _ => Err(QueryError::Execution(
            "unary minus needs a number or a vector".into(),
        )),
    }
}

/// The newest non-stale sample in `[t - lookback, t]`, as Prometheus' vector selector picks it.
fn latest(s: &RawSeries, t: i64, lookback: i64) -> Option<(i64, f64)> {
    let hi = s.timestamps.partition_point(|&x| x <= t);
    if hi == 0 {
        return None;
    }
    let j = hi - 1;
    let ts = s.timestamps[j];
    if ts < t - lookback || is_stale(s.values[j]) {
        return None;
    }
    Some((ts, s.values[j]))
}

/// The operator's text, e.g. `+`, `sum`.
pub(crate) fn op_name(op: &promql_parser::parser::token::TokenType) -> String {
    op.to_string()
}
