//! The evaluation grid of a run: its window over the history ([`window`]), the detector's
//! PromQL evaluated on it ([`fetch`]) as one [`GridSeries`] per returned series, and series
//! moved onto another series' grid ([`shifted`]). Shared by single and service mode.

use std::collections::BTreeMap;

use sightline_query::promql::{Budget, QueryResult, StoreSource, range_query};
use sightline_storage::{Store, TenantId};

use super::events::display;
use super::failure::RunFailure;
use super::spec::DetectorSpec;

/// A series on the evaluation grid.
#[derive(Clone, Debug)]
pub struct GridSeries {
    /// Labels without `__name__`.
    pub labels: BTreeMap<String, String>,
    /// Timestamp of `values[0]` (ms).
    pub start_ms: i64,
    /// One value per step (NaN: no value), leading and trailing gaps trimmed.
    pub values: Vec<f64>,
}

/// The evaluation window of a run.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// First step (ms).
    pub start_ms: i64,
    /// Last step (ms).
    pub end_ms: i64,
    /// Step (ms).
    pub step_ms: i64,
}

/// Longest evaluation of one detector query, like an HTTP query's default deadline.
pub const FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Evaluate `query` over `w` (within [`FETCH_TIMEOUT`] and the default sample budget); one
/// entry per returned series (trimmed, possibly empty).
pub fn fetch(
    store: &Store,
    tenant: &TenantId,
    query: &str,
    w: Window,
) -> Result<Vec<GridSeries>, RunFailure> {
    let src = StoreSource::new(store, tenant.clone());
    let result = range_query(
        &src,
        query,
        w.start_ms,
        w.end_ms,
        w.step_ms,
        &Budget::until(sightline_storage::Deadline::after(FETCH_TIMEOUT)),
    )
    .map_err(|source| RunFailure::Query {
        query: query.to_owned(),
        source,
    })?;
    let series = match result {
        QueryResult::Matrix(m) | QueryResult::Vector(m) => m,
        _ => return Err(RunFailure::NotSeries(query.to_owned())),
    };
    let n = ((w.end_ms - w.start_ms) / w.step_ms + 1) as usize;
    let mut out: Vec<GridSeries> = Vec::with_capacity(series.len());
    for s in series {
        let labels: BTreeMap<String, String> = s
            .labels
            .into_iter()
            .filter(|(k, _)| k != "__name__")
            .collect();
        if out.iter().any(|o| o.labels == labels) {
            return Err(RunFailure::DuplicateLabels {
                query: query.to_owned(),
                labels: display("", &labels),
            });
        }
        let mut values = vec![f64::NAN; n];
        for (t, v) in s.points {
            let i = (t - w.start_ms) / w.step_ms;
            if (0..n as i64).contains(&i) {
                values[i as usize] = v;
            }
        }
        let first = values.iter().position(|v| v.is_finite());
        let last = values.iter().rposition(|v| v.is_finite());
        let (start_ms, values) = match (first, last) {
            (Some(f), Some(l)) => (w.start_ms + f as i64 * w.step_ms, values[f..=l].to_vec()),
            _ => (w.start_ms, Vec::new()),
        };
        out.push(GridSeries {
            labels,
            start_ms,
            values,
        });
    }
    Ok(out)
}

/// The evaluation window: the whole history when training or nothing was written yet,
/// otherwise just enough context for warm-up, calibration and the points since the last run.
pub fn window(spec: &DetectorSpec, now_ms: i64, full: bool, oldest_written: Option<i64>) -> Window {
    let step = spec.step_ms();
    let end = now_ms.div_euclid(step) * step;
    let history = spec.history_ms() / step * step;
    let span = match (full, oldest_written) {
        (false, Some(w)) => {
            let context =
                (spec.warmup_points() + spec.calibration_window() + 4 * spec.sustain.window) as i64
                    * step;
            (context + (end - w).max(0)).min(history)
        }
        _ => history,
    };
    Window {
        start_ms: end - span,
        end_ms: end,
        step_ms: step,
    }
}

/// `len` values of `values` read `shift` points later (NaN outside it): a series on another
/// series' grid.
pub fn shifted(values: &[f64], shift: i64, len: usize) -> Vec<f64> {
    (0..len as i64)
        .map(|i| {
            let k = i + shift;
            if k >= 0 && (k as usize) < values.len() {
                values[k as usize]
            } else {
                f64::NAN
            }
        })
        .collect()
}
