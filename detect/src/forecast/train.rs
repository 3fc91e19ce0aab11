//! Training N-BEATS on one series (Oreshkin et al. 2020, §3.4 and appendix D).
//!
//! * Windows are sampled uniformly from the history (optionally only the last `L_H · H`
//!   points, the paper's history limit), standardised per window (mean and standard deviation of
//!   the lookback), and batched.
//! * The loss is MAE, sMAPE or MASE (paper §2, the M4 metrics); AdamW updates the parameters
//!   after the global gradient norm is clipped.
//! * The last `validation_horizons · H` points are held out: every `eval_every` steps the model
//!   forecasts them (rolling origin, one horizon at a time); the best parameters are kept and
//!   training stops after `patience` evaluations without improvement.
//! * A [`SplitMix64`] seeded by `TrainConfig::seed` drives initialisation and sampling, so the
//!   same inputs give the same model.

use candle_core::{Device, Tensor};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use serde::{Deserialize, Serialize};

use super::config::{Loss, NBeatsConfig, TrainConfig};
use super::input::{check_regular, check_training_series, seasonal_mae, window_scale};
use super::metrics::forecast_metrics;
use super::model::{ModelCard, TrainMetrics, TrainedModel, TrainingWindow, candle_device};
use super::nbeats::{NBeats, backend};
use super::rng::{SplitMix64, fnv1a_f64};
use crate::error::{DetectError, Result};

/// Progress reported to the caller after each evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainProgress {
    /// Steps done.
    pub step: usize,
    /// Step budget.
    pub max_steps: usize,
    /// Mean training loss since the previous report.
    pub train_loss: f64,
    /// Validation loss (MAE on the original scale) now, when there is a validation tail.
    pub validation_mae: Option<f64>,
    /// Best validation loss so far.
    pub best_validation_mae: Option<f64>,
}

/// What the progress callback wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrainControl {
    /// Keep training.
    Continue,
    /// Stop now and keep the best parameters so far.
    Stop,
}

/// A callback that ignores progress.
pub fn no_progress(_: &TrainProgress) -> TrainControl {
    TrainControl::Continue
}

/// A batch of standardised windows.
struct Batch {
    x: Tensor,
    y: Tensor,
    level: Tensor,
    scale: Tensor,
    /// `scale / mase_scale` per window (MASE weighting).
    mase_weight: Tensor,
}

fn make_batch(
    series: &[f64],
    cuts: &[usize],
    cfg: &NBeatsConfig,
    loss: Loss,
    device: &Device,
) -> Result<Batch> {
    let (l, h) = (cfg.lookback, cfg.horizon);
    let n = cuts.len();
    let mut x = Vec::with_capacity(n * l);
    let mut y = Vec::with_capacity(n * h);
    let (mut lv, mut sc, mut mw) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for &c in cuts {
        let back = &series[c - l..c];
        let (level, scale) = window_scale(back);
        x.extend(back.iter().map(|v| ((v - level) / scale) as f32));
        y.extend(
            series[c..c + h]
                .iter()
                .map(|v| ((v - level) / scale) as f32),
        );
        lv.push(level as f32);
        sc.push(scale as f32);
        let weight = match loss {
            Loss::Mase { season } => seasonal_mae(back, season).map_or(1.0, |m| scale / m),
            _ => 1.0,
        };
        mw.push(weight as f32);
    }
    let t = |v: Vec<f32>, cols: usize| {
        Tensor::from_vec(v, (n, cols), device).map_err(backend("n-beats batch"))
    };
    Ok(Batch {
        x: t(x, l)?,
        y: t(y, h)?,
        level: t(lv, 1)?,
        scale: t(sc, 1)?,
        mase_weight: t(mw, 1)?,
    })
}

fn loss_tensor(pred: &Tensor, b: &Batch, loss: Loss) -> candle_core::Result<Tensor> {
    let abs = (pred - &b.y)?.abs()?;
    match loss {
        Loss::Mae => abs.mean_all(),
        Loss::Mase { .. } => abs.broadcast_mul(&b.mase_weight)?.mean_all(),
        Loss::Smape => {
            let num = (abs.broadcast_mul(&b.scale)? * 2.0)?;
            let p = pred
                .broadcast_mul(&b.scale)?
                .broadcast_add(&b.level)?
                .abs()?;
            let a =
                b.y.broadcast_mul(&b.scale)?
                    .broadcast_add(&b.level)?
                    .abs()?;
            let den = ((p + a)? + 1e-8)?;
            (num / den)?.mean_all()
        }
    }
}

/// Scale gradients so their global L2 norm is at most `max_norm`.
fn clip_gradients(
    grads: &mut candle_core::backprop::GradStore,
    vars: &[candle_core::Var],
    max_norm: f64,
) -> Result<()> {
    if max_norm <= 0.0 {
        return Ok(());
    }
    let mut total = 0.0f64;
    for v in vars {
        if let Some(g) = grads.get(v.as_tensor()) {
            let s: f32 = g
                .sqr()
                .and_then(|s| s.sum_all())
                .and_then(|s| s.to_scalar())
                .map_err(backend("gradient norm"))?;
            total += f64::from(s);
        }
    }
    let norm = total.sqrt();
    if !norm.is_finite() {
        return Err(DetectError::Numerical {
            what: "n-beats gradient norm",
        });
    }
    if norm > max_norm {
        let factor = max_norm / norm;
        for v in vars {
            if let Some(g) = grads.get(v.as_tensor()) {
                let scaled = (g * factor).map_err(backend("gradient clipping"))?;
                grads.insert(v.as_tensor(), scaled);
            }
        }
    }
    Ok(())
}

/// Rolling-origin forecasts of the validation tail: origins at `start, start + H, …`.
fn validate(
    net: &NBeats,
    series: &[f64],
    start: usize,
    loss_season: usize,
) -> Result<super::model::ForecastMetrics> {
    let (l, h) = (net.config().lookback, net.config().horizon);
    let mut windows: Vec<&[f64]> = Vec::new();
    let mut origins = Vec::new();
    let mut o = start;
    while o + h <= series.len() {
        windows.push(&series[o - l..o]);
        origins.push(o);
        o += h;
    }
    let preds = net.predict(&windows)?;
    let mut actual = Vec::new();
    let mut predicted = Vec::new();
    for (o, p) in origins.iter().zip(&preds) {
        actual.extend_from_slice(&series[*o..*o + h]);
        predicted.extend_from_slice(p);
    }
    forecast_metrics(&actual, &predicted, &series[..start], loss_season)
}

/// Minimum series length for `model` and `train`: lookback + horizon for one training window,
/// plus the validation tail, plus one more horizon of windows.
pub fn min_training_len(model: &NBeatsConfig, train: &TrainConfig) -> usize {
    model.lookback + model.horizon * (2 + train.validation_horizons)
}

/// Train an N-BEATS model on `values` (optionally with regular `timestamps`, recorded in the
/// model card). `progress` is called after every evaluation and may stop training.
pub fn train(
    values: &[f64],
    timestamps: Option<&[i64]>,
    model: &NBeatsConfig,
    train: &TrainConfig,
    progress: &mut dyn FnMut(&TrainProgress) -> TrainControl,
) -> Result<TrainedModel> {
    model.validate()?;
    train.validate()?;
    check_training_series(values, min_training_len(model, train))?;
    let step_ts = match timestamps {
        Some(ts) => Some(check_regular(ts, values.len())?),
        None => None,
    };
    let device = candle_device(train.device)?;
    let (l, h) = (model.lookback, model.horizon);
    let n = values.len();
    let val_start = n - train.validation_horizons * h;
    // Cut points c: input values[c-L..c], target values[c..c+H], all before the validation tail.
    let last_cut = val_start - h;
    let first_cut = match train.history_limit {
        Some(limit) => l.max(val_start.saturating_sub(limit.saturating_mul(h))),
        None => l,
    }
    .min(last_cut);
    let season = match train.loss {
        Loss::Mase { season } => season,
        _ => h,
    };

    let mut rng = SplitMix64::new(train.seed);
    let net = NBeats::new(model, rng.next_u64(), &device)?;
    let vars = net.vars();
    let params = ParamsAdamW {
        lr: train.learning_rate,
        weight_decay: train.weight_decay,
        ..ParamsAdamW::default()
    };
    let mut opt = AdamW::new(vars.clone(), params).map_err(backend("adamw"))?;

    let mut best: Option<(f64, usize, Vec<Tensor>)> = None;
    let mut since_best = 0usize;
    let mut loss_acc = 0.0f64;
    let mut loss_count = 0usize;
    let mut last_train_loss = 0.0f64;
    let mut steps_run = 0usize;
    let mut stopped_early = false;
    let span = last_cut - first_cut + 1;
    let mut cuts = vec![0usize; train.batch_size];
    for step in 1..=train.max_steps {
        for c in cuts.iter_mut() {
            *c = first_cut + rng.below(span);
        }
        let batch = make_batch(values, &cuts, model, train.loss, &device)?;
        let (pred, _) = net
            .forward(&batch.x, false)
            .map_err(backend("n-beats forward"))?;
        let loss = loss_tensor(&pred, &batch, train.loss).map_err(backend("n-beats loss"))?;
        let loss_value: f32 = loss.to_scalar().map_err(backend("n-beats loss"))?;
        if !loss_value.is_finite() {
            return Err(DetectError::Numerical {
                what: "n-beats training loss",
            });
        }
        let mut grads = loss.backward().map_err(backend("n-beats backward"))?;
        clip_gradients(&mut grads, &vars, train.clip_grad_norm)?;
        opt.step(&grads).map_err(backend("adamw step"))?;
        steps_run = step;
        loss_acc += f64::from(loss_value);
        loss_count += 1;

        if step % train.eval_every == 0 || step == train.max_steps {
            last_train_loss = loss_acc / loss_count.max(1) as f64;
            loss_acc = 0.0;
            loss_count = 0;
            let mut val_mae = None;
            if train.validation_horizons > 0 {
                let m = validate(&net, values, val_start, season)?;
                val_mae = Some(m.mae);
                let improved = best.as_ref().is_none_or(|(b, _, _)| m.mae < *b);
                if improved {
                    best = Some((m.mae, step, net.snapshot()?));
                    since_best = 0;
                } else {
                    since_best += 1;
                }
            }
            let report = TrainProgress {
                step,
                max_steps: train.max_steps,
                train_loss: last_train_loss,
                validation_mae: val_mae,
                best_validation_mae: best.as_ref().map(|(b, _, _)| *b),
            };
            let stop_requested = progress(&report) == TrainControl::Stop;
            let patience_over = train.patience > 0 && since_best >= train.patience;
            if stop_requested || patience_over {
                stopped_early = step < train.max_steps;
                break;
            }
        }
    }
    let best_step = match &best {
        Some((_, s, snap)) => {
            net.restore(snap)?;
            *s
        }
        None => steps_run,
    };
    let validation = if train.validation_horizons > 0 {
        Some(validate(&net, values, val_start, season)?)
    } else {
        None
    };
    let window = TrainingWindow {
        len: n,
        first_timestamp: timestamps.and_then(|t| t.first().copied()),
        last_timestamp: timestamps.and_then(|t| t.last().copied()),
        step: step_ts,
    };
    let card = ModelCard {
        format_version: super::persist::FORMAT_VERSION,
        model: model.clone(),
        train: train.clone(),
        window,
        data_hash: format!("fnv1a64:{:016x}", fnv1a_f64(values)),
        weights_hash: None,
        parameter_count: net.parameter_count(),
        metrics: TrainMetrics {
            steps_run,
            best_step,
            final_train_loss: last_train_loss,
            validation,
            stopped_early,
        },
    };
    Ok(TrainedModel { net, card })
}
