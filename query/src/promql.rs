//! PromQL: parsed with the `promql-parser` crate, evaluated by this engine over a
//! [`SampleSource`].
//!
//! Instant queries evaluate at one time; range queries on a grid of steps. Semantics follow
//! Prometheus 2.x (lookback delta of 5 minutes, staleness markers end a series, range selectors
//! include both ends, `rate` extrapolation as in promql/functions.go). Constructs not
//! implemented (subqueries, native histograms, `holt_winters`, ...) are refused with an error
//! that names them.
//!
//! Every evaluation runs under a [`Budget`]: a deadline checked cooperatively (per node, per
//! series, per step of range functions, per selector fetch and inside storage scans) and a
//! limit on the samples held at once, past which it fails with
//! [`QueryError::TooManySamples`].

mod aggregate;
mod binary;
pub mod budget;
pub mod cache;
pub mod eval;
mod functions;
pub mod source;
pub mod value;

pub use budget::{Budget, DEFAULT_MAX_SAMPLES};
pub use cache::{CacheConfig, CacheStats, ResultCache};
pub use source::{MemorySource, SampleSource, StoreSource};
pub use value::{QueryResult, ResultSeries};

use budget::Held;
use eval::{Evaluator, LOOKBACK_MS, MAX_STEPS};
use value::{Grid, Value};

use crate::error::{QueryError, Result};

/// Parses a query, mapping the parser's message into [`QueryError::Parse`]. The text must
/// pass [`crate::bounds::check`] first, so the tree it yields is shallow enough for every
/// recursive walk (evaluation, `prettify`, drop) on a small stack.
pub fn parse(query: &str) -> Result<promql_parser::parser::Expr> {
    crate::bounds::check(query, crate::bounds::Language::PromQl)?;
    promql_parser::parser::parse(query).map_err(QueryError::Parse)
}

/// Evaluates `query` at `time_ms` within `budget` ([`QueryError::Timeout`] once its deadline
/// passes, [`QueryError::TooManySamples`] past its sample limit).
pub fn instant_query(
    source: &dyn SampleSource,
    query: &str,
    time_ms: i64,
    budget: &Budget,
) -> Result<QueryResult> {
    let expr = parse(query)?;
    let grid = Grid {
        start: time_ms,
        end: time_ms,
        step: 1,
    };
    let ev = Evaluator {
        source,
        grid,
        lookback_ms: LOOKBACK_MS,
        query_start: time_ms,
        query_end: time_ms,
        budget,
        held: Held::new(budget.max_samples),
    };
    Ok(match ev.eval(&expr)? {
        Value::Scalar(v) => {
            QueryResult::Scalar(vec![(time_ms, v.first().copied().unwrap_or(f64::NAN))])
        }
        Value::String(s) => QueryResult::String(time_ms, s),
        Value::Vector(v) => QueryResult::Vector(
            v.into_iter()
                .filter_map(|s| {
                    s.values.first().copied().flatten().map(|x| ResultSeries {
                        labels: s.labels.as_ref().clone(),
                        points: vec![(time_ms, x)],
                    })
                })
                .collect(),
        ),
        Value::Matrix(m) => QueryResult::Matrix(
            m.into_iter()
                .map(|s| ResultSeries {
                    labels: s.labels.as_ref().clone(),
                    points: s.timestamps.into_iter().zip(s.values).collect(),
                })
                .collect(),
        ),
    })
}

/// Evaluates `query` at every step from `start_ms` to `end_ms` within `budget`
/// ([`QueryError::Timeout`] once its deadline passes, [`QueryError::TooManySamples`] past its
/// sample limit).
pub fn range_query(
    source: &dyn SampleSource,
    query: &str,
    start_ms: i64,
    end_ms: i64,
    step_ms: i64,
    budget: &Budget,
) -> Result<QueryResult> {
    let grid = range_grid(start_ms, end_ms, step_ms)?;
    let expr = parse(query)?;
    let series = eval_range(source, &expr, grid, grid, budget)?;
    Ok(QueryResult::Matrix(series))
}

/// The steps of a range query, refused as Prometheus refuses them (a step that is not
/// positive, an end before the start, more than [`MAX_STEPS`] steps).
pub(crate) fn range_grid(start_ms: i64, end_ms: i64, step_ms: i64) -> Result<Grid> {
    if step_ms <= 0 {
        return Err(QueryError::BadRequest(
            "zero or negative query resolution step widths are not accepted. Try a positive integer".into(),
        ));
    }
    if end_ms < start_ms {
        return Err(QueryError::BadRequest(
            "end timestamp must not be before start time".into(),
        ));
    }
    let grid = Grid {
        start: start_ms,
        end: end_ms,
        step: step_ms,
    };
    if grid.len() > MAX_STEPS {
        return Err(QueryError::BadRequest(format!(
            "exceeded maximum resolution of {MAX_STEPS} points per timeseries. Try decreasing the query resolution (?step=XX)"
        )));
    }
    Ok(grid)
}

/// Evaluates `expr` at the steps of `grid`, part of the request `query` (whose start and end
/// `@ start()` and `@ end()` name): the series with at least one point, in no set order.
pub(crate) fn eval_range(
    source: &dyn SampleSource,
    expr: &promql_parser::parser::Expr,
    grid: Grid,
    query: Grid,
    budget: &Budget,
) -> Result<Vec<ResultSeries>> {
    let ev = Evaluator {
        source,
        grid,
        lookback_ms: LOOKBACK_MS,
        query_start: query.start,
        query_end: query.end,
        budget,
        held: Held::new(budget.max_samples),
    };
    Ok(match ev.eval(expr)? {
        Value::Scalar(v) => vec![ResultSeries {
            labels: Vec::new(),
            points: v
                .into_iter()
                .enumerate()
                .map(|(i, x)| (grid.at(i), x))
                .collect(),
        }],
        Value::Vector(v) => v
            .into_iter()
            .map(|s| ResultSeries {
                labels: s.labels.as_ref().clone(),
                points: s
                    .values
                    .iter()
                    .enumerate()
                    .filter_map(|(i, x)| x.map(|x| (grid.at(i), x)))
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect(),
        Value::String(_) | Value::Matrix(_) => {
            return Err(QueryError::Execution(
                "invalid expression type for range query, must be Scalar or instant Vector".into(),
            ));
        }
    })
}
