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

use sightline_detect::anomaly::detect_continued;
use sightline_detect::forecast::{TrainControl, TrainProgress, train};
use sightline_storage::Store;

use super::DetectorError;
use super::events::{self, display, series_key};
use super::failure::RunFailure;
use super::files::{RunInfo, RunMarker};
use super::grid::{GridSeries, Window, fetch, shifted, window};
use super::limits::DetectorLimits;
use super::outcome::{Carried, Outcome, collect};
use super::registry::Detector;
use super::spec::{DetectorSpec, Mode, ModelKind};
use super::status::{Progress, State};

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
