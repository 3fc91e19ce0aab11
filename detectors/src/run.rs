//! One run of a detector: evaluate its PromQL over the history at its step, train N-BEATS per
//! series when asked (or fall back to a baseline), score every series with the detect crate,
//! write the bands back as samples and merge sustained alerts into anomaly events.
//!
//! Bad input policy: steps without a value are gaps (the detect crate carries the last value
//! forward and leaves them unscored); leading and trailing gaps are trimmed; a series too short
//! for the model is skipped with its reason in `status.error` (the detector fails only when no
//! series could be scored); N-BEATS that cannot be trained (too short, constant) falls back to
//! the rolling median/MAD baseline, noted in `status.fallback`. PromQL's step evaluation already
//! resamples irregular scrapes onto the grid.
//!
//! A run is bracketed by the run marker ([`super::files::RunMarker`]) and trains for at most
//! the training budget: a series whose training reaches it keeps its best parameters so far,
//! the series after it keep their previous model or fall back, and `status.error` says so.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use sightline_detect::anomaly::{AnomalyReport, Direction, ValueRange, detect_continued};
use sightline_detect::forecast::{TrainControl, TrainProgress, train};
use sightline_query::promql::{Budget, QueryResult, StoreSource, range_query};
use sightline_storage::{Store, TenantId};

use super::DetectorError;
use super::events::{
    self, Observed, deviation_words, display, duration_words, series_key, severity,
};
use super::failure::RunFailure;
use super::files::{RunInfo, RunMarker};
use super::limits::DetectorLimits;
use super::registry::Detector;
use super::spec::{DetectorSpec, Mode, ModelKind};
use super::status::{Progress, State};
use super::writeback::{Point, Writer};

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

/// What a run produced, before it is applied to the detector.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Samples to write.
    pub writer: Writer,
    /// Alerts seen.
    pub observed: Vec<Observed>,
    /// Series key -> first scored point this run looked at (ms).
    pub scored_from: BTreeMap<String, i64>,
    /// Series key -> last point written (ms).
    pub written: BTreeMap<String, i64>,
    /// Series key -> range of the values seen (this run's window and what it was given).
    pub ranges: BTreeMap<String, ValueRange>,
    /// Series scored.
    pub series: usize,
    /// Last scored point (ms).
    pub last_scored_ms: Option<i64>,
    /// Skipped series and why.
    pub skipped: Vec<String>,
    /// Fallbacks used.
    pub fallbacks: Vec<String>,
    /// What the training budget cut short, when it did.
    pub budget: Option<String>,
}

/// What a run takes over from the runs before it, per series key.
#[derive(Debug)]
pub struct Carried {
    /// Last point written (ms): points are written once.
    pub written: BTreeMap<String, i64>,
    /// Values the series took before this run's window, since the last full run (empty for a
    /// full run): the likelihood's spatial novelty is judged against them, so a window shorter
    /// than the series' seasonality does not take each daily peak for a record.
    pub seen: BTreeMap<String, ValueRange>,
}

/// Run `det` now. `train` retrains N-BEATS models (baselines need no training); training
/// stops at `limits`' budget.
pub fn run(
    store: &Store,
    det: &Detector,
    train_now: bool,
    now_ms: i64,
    limits: &DetectorLimits,
    stop: &dyn Fn() -> bool,
) -> Result<(), DetectorError> {
    let _guard = det.run_lock.lock();
    let generation = det.generation.load(Ordering::SeqCst);
    let cancelled = || {
        stop()
            || det.deleted.load(Ordering::SeqCst)
            || det.generation.load(Ordering::SeqCst) != generation
    };
    if cancelled() {
        return Err(DetectorError::Cancelled);
    }
    // Removed when the run ends, however it ends (declared after the lock guard, so dropped
    // before it); left behind only if the process dies meanwhile.
    let _marker = RunMarker::begin(
        &det.dir,
        &RunInfo {
            started_ms: store.now().as_millis(),
            training: train_now,
        },
    )?;
    let spec = det.spec.read().clone();
    let (mut carried, first_run) = {
        let st = det.status.lock();
        let carried = Carried {
            written: st.written.clone(),
            seen: st.ranges.clone(),
        };
        (carried, st.last_trained_ms.is_none())
    };
    let full = train_now || first_run || carried.written.is_empty();
    if full {
        // a full run sees the whole history and starts every range afresh
        carried.seen.clear();
    }
    let w = window(&spec, now_ms, full, carried.written.values().min().copied());
    let result = match spec.mode {
        Mode::Single => single(
            store,
            det,
            &spec,
            w,
            full,
            &carried,
            limits.training_budget(),
            &cancelled,
        ),
        Mode::Service => super::service::service(store, det, &spec, w, &carried),
    };
    if cancelled() {
        return Err(DetectorError::Cancelled);
    }
    let finished = store.now().as_millis();
    let outcome = match result {
        Ok(o) => o,
        Err(msg) => {
            let mut st = det.status.lock();
            st.state = State::Failed;
            st.progress = None;
            st.error = Some(msg.to_string());
            st.last_run_ms = Some(finished);
            if full {
                st.last_trained_ms = Some(finished);
            }
            drop(st);
            det.save_status()?;
            return Ok(());
        }
    };
    let o = outcome;
    o.writer.flush(store, &det.tenant)?;
    {
        let mut ev = det.events.lock();
        let gap = spec.sustain.recovery as i64 * w.step_ms + w.step_ms;
        events::merge(&mut ev, &spec.name, o.observed, &o.scored_from, gap);
    }
    det.save_events()?;
    {
        let mut st = det.status.lock();
        st.progress = None;
        st.last_run_ms = Some(finished);
        if full {
            st.last_trained_ms = Some(finished);
            // a full run saw the whole history: its ranges replace the carried ones
            st.ranges = o.ranges;
        } else {
            st.ranges.extend(o.ranges);
        }
        st.written.extend(o.written);
        if o.series == 0 {
            st.state = State::Failed;
            st.error = Some(if o.skipped.is_empty() {
                "no series could be scored".into()
            } else {
                o.skipped.join("; ")
            });
        } else {
            st.state = State::Ready;
            st.series = o.series;
            let skipped = (!o.skipped.is_empty()).then(|| {
                format!(
                    "{} series skipped: {}",
                    o.skipped.len(),
                    o.skipped.join("; ")
                )
            });
            st.error = match (o.budget, skipped) {
                (Some(b), Some(s)) => Some(format!("{b}; {s}")),
                (b, s) => b.or(s),
            };
        }
        if o.last_scored_ms.is_some() {
            st.last_scored_ms = o.last_scored_ms.max(st.last_scored_ms);
        }
        st.fallback = match o.fallbacks.as_slice() {
            [] => None,
            [one] => Some(one.clone()),
            [first, rest @ ..] => Some(format!("{first} (and {} more series)", rest.len())),
        };
    }
    det.save_status()?;
    Ok(())
}

fn set_progress(det: &Detector, f: impl FnOnce(&mut Progress)) {
    let mut st = det.status.lock();
    let p = st.progress.get_or_insert_with(Progress::default);
    f(p);
}

/// What [`train_models`] did.
#[derive(Debug, Default)]
struct Trained {
    /// Series key -> why its model could not be trained.
    failed: BTreeMap<String, String>,
    /// What the training budget cut short, when it did.
    budget: Option<String>,
}

/// Train one N-BEATS model per series within `budget` of wall time.
fn train_models(
    det: &Detector,
    spec: &DetectorSpec,
    series: &[GridSeries],
    step_ms: i64,
    budget: Duration,
    cancelled: &dyn Fn() -> bool,
) -> Result<Trained, RunFailure> {
    let started = Instant::now();
    let spent = || started.elapsed() >= budget;
    let budget_words = format!(
        "training stopped at the budget of {} s (limits.max_detector_training_secs)",
        budget.as_secs()
    );
    let model_cfg = spec.nbeats_config();
    let train_cfg = spec.train_config();
    {
        let mut st = det.status.lock();
        st.state = State::Training;
        st.progress = Some(Progress {
            series_done: 0,
            series_total: series.len(),
            epoch: 0,
            epochs: train_cfg.max_steps,
            train_loss: None,
            val_loss: None,
        });
    }
    let _ = det.save_status();
    let mut out = Trained::default();
    let failed = &mut out.failed;
    for (i, s) in series.iter().enumerate() {
        if cancelled() {
            return Err(RunFailure::Cancelled);
        }
        let key = series_key(&s.labels);
        if spent() {
            let untrained = series.len() - i;
            out.budget = Some(format!(
                "{budget_words}: {untrained} of {} series not retrained (they keep their previous model, or use rolling median/MAD)",
                series.len()
            ));
            for s in &series[i..] {
                let key = series_key(&s.labels);
                if !det.models.lock().contains_key(&key) && !det.model_dir(&key).exists() {
                    failed.insert(key, budget_words.clone());
                }
            }
            break;
        }
        let filled = match sightline_detect::forecast::input::fill_gaps(&s.values) {
            Ok((f, _)) => f,
            Err(e) => {
                failed.insert(key, e.to_string());
                continue;
            }
        };
        let ts: Vec<i64> = (0..filled.len() as i64)
            .map(|k| s.start_ms + k * step_ms)
            .collect();
        set_progress(det, |p| {
            p.series_done = i;
            p.epoch = 0;
        });
        let mut stopped_at: Option<usize> = None;
        let mut callback = |p: &TrainProgress| {
            set_progress(det, |q| {
                q.epoch = p.step;
                q.epochs = p.max_steps;
                q.train_loss = p.train_loss.is_finite().then_some(p.train_loss);
                q.val_loss = p.validation_mae.filter(|v| v.is_finite());
            });
            if cancelled() {
                TrainControl::Stop
            } else if spent() && p.step < p.max_steps {
                stopped_at = Some(p.step);
                TrainControl::Stop
            } else {
                TrainControl::Continue
            }
        };
        let trained = train(&filled, Some(&ts), &model_cfg, &train_cfg, &mut callback);
        if let Some(step) = stopped_at {
            out.budget = Some(format!(
                "{budget_words}: series {} of {} at step {step} of {} (it keeps its best parameters so far)",
                i + 1,
                series.len(),
                train_cfg.max_steps
            ));
        }
        match trained {
            Ok(model) => {
                if cancelled() {
                    return Err(RunFailure::Cancelled);
                }
                if let Err(e) = crate::files::save_model(&det.model_dir(&key), &model) {
                    tracing::warn!(detector = %spec.name, error = %e, "cannot save model");
                }
                det.models.lock().insert(key, Arc::new(model));
            }
            Err(e) => {
                det.models.lock().remove(&key);
                failed.insert(key, e.to_string());
            }
        }
        set_progress(det, |p| p.series_done = i + 1);
    }
    Ok(out)
}

/// The model of a series: in memory, else loaded from its directory.
fn model_for(det: &Detector, key: &str) -> Option<Arc<sightline_detect::forecast::TrainedModel>> {
    if let Some(m) = det.models.lock().get(key) {
        return Some(m.clone());
    }
    let dir = det.model_dir(key);
    if !dir.exists() {
        return None;
    }
    match crate::files::load_model(&dir) {
        Ok(m) => {
            let m = Arc::new(m);
            det.models.lock().insert(key.to_owned(), m.clone());
            Some(m)
        }
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot load model");
            None
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn single(
    store: &Store,
    det: &Detector,
    spec: &DetectorSpec,
    w: Window,
    full: bool,
    carried: &Carried,
    budget: Duration,
    cancelled: &dyn Fn() -> bool,
) -> Result<Outcome, RunFailure> {
    let series = fetch(store, &det.tenant, &spec.query, w)?;
    if series.is_empty() {
        return Err(RunFailure::NoSeries {
            query: spec.query.clone(),
            history: spec.history.clone(),
        });
    }
    if series.len() > spec.max_series {
        return Err(RunFailure::TooManySeries {
            got: series.len(),
            max: spec.max_series,
        });
    }
    let volume = match &spec.volume_query {
        Some(q) => Some(fetch(store, &det.tenant, q, w)?),
        None => None,
    };
    let mut trained = Trained::default();
    if spec.model.kind == ModelKind::Nbeats && full {
        trained = train_models(det, spec, &series, w.step_ms, budget, cancelled)?;
    }
    let train_failures = trained.failed;
    let cfg = spec.anomaly_config(spec.direction);
    let mut out = Outcome {
        budget: trained.budget,
        ..Outcome::default()
    };
    for s in &series {
        let key = series_key(&s.labels);
        let name = display(&spec.query, &s.labels);
        if s.values.iter().filter(|v| v.is_finite()).count() < 2 {
            out.skipped.push(format!("{name}: no data in the window"));
            continue;
        }
        let vol = volume_for(volume.as_deref(), s, spec.min_volume.is_some(), w.step_ms);
        let model = if spec.model.kind == ModelKind::Nbeats {
            model_for(det, &key)
        } else {
            None
        };
        let seen = carried.seen.get(&key).copied();
        let report = match detect_continued(&s.values, vol.as_deref(), &cfg, model.as_deref(), seen)
        {
            Ok(r) => r,
            Err(e) => {
                out.skipped.push(format!("{name}: {e}"));
                continue;
            }
        };
        if let Some(f) = &report.fallback {
            let why = train_failures.get(&key).map_or(f.clone(), |e| {
                format!("n-beats not trained ({e}); used rolling median/MAD")
            });
            out.fallbacks.push(format!("{name}: {why}"));
        }
        let label = display(&spec.name, &s.labels);
        collect(
            &mut out,
            spec,
            s,
            &report,
            &key,
            carried.written.get(&key).copied(),
            w.step_ms,
            &label,
        );
    }
    Ok(out)
}

/// The volume series matching `s` (same labels, or the only one) aligned to `s`'s points, or
/// `s` itself when only `min_volume` is set.
/// `len` values of `values` read `shift` points later (NaN outside it): a series on another
/// series' grid.
pub(super) fn shifted(values: &[f64], shift: i64, len: usize) -> Vec<f64> {
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

fn volume_for(
    volume: Option<&[GridSeries]>,
    s: &GridSeries,
    own: bool,
    step_ms: i64,
) -> Option<Vec<f64>> {
    match volume {
        Some(all) => {
            let v = all
                .iter()
                .find(|v| v.labels == s.labels)
                .or(if all.len() == 1 { all.first() } else { None })?;
            let shift = (s.start_ms - v.start_ms) / step_ms.max(1);
            Some(shifted(&v.values, shift, s.values.len()))
        }
        None if own => Some(s.values.clone()),
        None => None,
    }
}

/// Turn one report into points to write and observed alerts.
#[allow(clippy::too_many_arguments)]
pub fn collect(
    out: &mut Outcome,
    spec: &DetectorSpec,
    s: &GridSeries,
    report: &AnomalyReport,
    key: &str,
    written_until: Option<i64>,
    step_ms: i64,
    label: &str,
) {
    let sc = &report.scored;
    let n = s.values.len();
    let t_of = |i: usize| s.start_ms + i as i64 * step_ms;
    let mut anomalous = vec![false; n];
    for a in &report.alerts {
        for flag in anomalous
            .iter_mut()
            .take(a.end.min(n - 1) + 1)
            .skip(a.start)
        {
            *flag = true;
        }
    }
    let mut points = Vec::new();
    for (j, exp) in sc.expected.iter().enumerate() {
        let i = sc.start + j;
        let t = t_of(i);
        if written_until.is_some_and(|wu| t <= wu) {
            continue;
        }
        points.push(Point {
            t,
            predicted: *exp,
            lower: sc.lower[j],
            upper: sc.upper[j],
            anomalous: anomalous[i],
            likelihood: report.likelihood.get(i).copied().unwrap_or(0.0),
        });
    }
    if let Some(p) = points.last() {
        out.written.insert(key.to_owned(), p.t);
    }
    if let Some(r) = report.range {
        out.ranges.insert(key.to_owned(), r);
    }
    out.writer.add(&spec.name, &s.labels, &points);
    if sc.start < n {
        out.scored_from.insert(key.to_owned(), t_of(sc.start));
        out.last_scored_ms = out.last_scored_ms.max(Some(t_of(n - 1)));
    }
    out.series += 1;
    for a in &report.alerts {
        let stats = alert_stats(&s.values, report, a.start, a.end);
        let dir = match spec.direction {
            Direction::Above => "above",
            Direction::Below => "below",
            Direction::Both if stats.actual >= stats.expected => "above",
            Direction::Both => "below",
        };
        let dur = t_of(a.end) - t_of(a.start) + step_ms;
        let explanation = format!(
            "{label} {} for {} (mean {:.4} vs expected {:.4}; band {:.4}..{:.4})",
            deviation_words(stats.actual, stats.expected),
            duration_words(dur),
            stats.actual,
            stats.expected,
            stats.lower,
            stats.upper,
        );
        out.observed.push(Observed {
            key: key.to_owned(),
            labels: s.labels.clone(),
            start_ms: t_of(a.start),
            last_ms: t_of(a.end),
            closed: a.closed,
            severity: severity(a.peak_score, stats.excess),
            direction: dir.into(),
            peak_score: a.peak_score,
            explanation,
            moved: Vec::new(),
            kind: None,
        });
    }
}

/// Means over the breaching points of an alert.
#[derive(Clone, Copy, Debug, Default)]
pub struct AlertStats {
    /// Mean value.
    pub actual: f64,
    /// Mean expectation.
    pub expected: f64,
    /// Mean lower edge.
    pub lower: f64,
    /// Mean upper edge.
    pub upper: f64,
    /// Mean |residual| / half band width.
    pub excess: f64,
}

/// [`AlertStats`] of input indices `start..=end` (breaching points, or all when none).
pub fn alert_stats(values: &[f64], report: &AnomalyReport, start: usize, end: usize) -> AlertStats {
    let sc = &report.scored;
    let idx: Vec<usize> = (start.max(sc.start)..=end)
        .filter(|i| i - sc.start < sc.expected.len() && values[*i].is_finite())
        .collect();
    let breaching: Vec<usize> = idx
        .iter()
        .copied()
        .filter(|i| sc.breach[i - sc.start])
        .collect();
    let use_idx = if breaching.is_empty() { idx } else { breaching };
    if use_idx.is_empty() {
        return AlertStats::default();
    }
    let k = use_idx.len() as f64;
    let mut st = AlertStats::default();
    for &i in &use_idx {
        let j = i - sc.start;
        st.actual += values[i] / k;
        st.expected += sc.expected[j] / k;
        st.lower += sc.lower[j] / k;
        st.upper += sc.upper[j] / k;
        let half = ((sc.upper[j] - sc.lower[j]) / 2.0).max(1e-12);
        st.excess += ((values[i] - sc.expected[j]).abs() / half) / k;
    }
    st
}
