//! A trained N-BEATS model with its model card: what it was trained on, how, and how well.

use candle_core::{Device, Tensor};
use serde::{Deserialize, Serialize};

use super::config::{ComputeDevice, NBeatsConfig, TrainConfig};
use super::input::{fill_gaps, window_scale};
use super::nbeats::{NBeats, backend};
use crate::error::{DetectError, Result};

/// Windows per forward pass at inference, bounding memory (`chunk × (L + width)` floats).
pub const INFERENCE_CHUNK: usize = 4096;

/// The slice of history a model was trained on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrainingWindow {
    /// Number of samples used (training part plus validation tail).
    pub len: usize,
    /// Timestamp of the first sample, when timestamps were given.
    pub first_timestamp: Option<i64>,
    /// Timestamp of the last sample, when timestamps were given.
    pub last_timestamp: Option<i64>,
    /// Sampling step in the timestamps' unit, when timestamps were given.
    pub step: Option<i64>,
}

/// Accuracy of a forecast on held-out windows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ForecastMetrics {
    /// Mean absolute error on the original scale.
    pub mae: f64,
    /// Symmetric MAPE in percent (0..200).
    pub smape: f64,
    /// Mean absolute scaled error (scale: in-window seasonal naive), when defined.
    pub mase: Option<f64>,
}

/// What training did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainMetrics {
    /// Optimiser steps run.
    pub steps_run: usize,
    /// Step whose parameters were kept (best validation loss, or the last step).
    pub best_step: usize,
    /// Mean training loss over the last evaluation interval.
    pub final_train_loss: f64,
    /// Metrics on the validation tail with the kept parameters, when there was one.
    pub validation: Option<ForecastMetrics>,
    /// Whether early stopping (or the progress callback) ended training before `max_steps`.
    pub stopped_early: bool,
}

/// Everything needed to trace a model to its data, stored as JSON next to the weights.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCard {
    /// Format of the card + weights pair (currently 1).
    pub format_version: u32,
    /// Network shape.
    pub model: NBeatsConfig,
    /// Training settings (including the seed).
    pub train: TrainConfig,
    /// The history used.
    pub window: TrainingWindow,
    /// `fnv1a64:<hex>` of the training values' bit patterns.
    pub data_hash: String,
    /// `fnv1a64:<hex>` of the safetensors bytes, filled when saved.
    pub weights_hash: Option<String>,
    /// Scalar parameter count.
    pub parameter_count: usize,
    /// Training outcome.
    pub metrics: TrainMetrics,
}

/// A trained model: the network plus its card.
#[derive(Debug)]
pub struct TrainedModel {
    pub(crate) net: NBeats,
    /// Provenance and metrics.
    pub card: ModelCard,
}

/// Resolve a [`ComputeDevice`] to a candle device; CUDA without the `cuda` feature is a typed
/// error.
pub fn candle_device(device: ComputeDevice) -> Result<Device> {
    match device {
        ComputeDevice::Cpu => Ok(Device::Cpu),
        ComputeDevice::Cuda { ordinal } => {
            Device::new_cuda(ordinal).map_err(backend("cuda device (build with --features cuda)"))
        }
    }
}

/// Standardise windows (last `lookback` values of each) into one `B × L` tensor plus each
/// window's `(level, scale)`.
pub(crate) fn standardise(
    windows: &[&[f64]],
    lookback: usize,
    device: &Device,
) -> Result<(Tensor, Vec<(f64, f64)>)> {
    let mut data = Vec::with_capacity(windows.len() * lookback);
    let mut scales = Vec::with_capacity(windows.len());
    for w in windows {
        if w.len() < lookback {
            return Err(DetectError::TooFewObservations {
                what: "n-beats input window",
                needed: lookback,
                got: w.len(),
            });
        }
        let w = &w[w.len() - lookback..];
        let (level, scale) = window_scale(w);
        data.extend(w.iter().map(|v| ((v - level) / scale) as f32));
        scales.push((level, scale));
    }
    let t = Tensor::from_vec(data, (windows.len(), lookback), device)
        .map_err(backend("n-beats input"))?;
    Ok((t, scales))
}

impl NBeats {
    /// Forecast `H` steps after each window (each at least `L` long; its last `L` values are
    /// used), on the original scale. Windows must be finite.
    pub fn predict(&self, windows: &[&[f64]]) -> Result<Vec<Vec<f64>>> {
        let (l, h) = (self.config().lookback, self.config().horizon);
        let mut out = Vec::with_capacity(windows.len());
        for chunk in windows.chunks(INFERENCE_CHUNK) {
            for (i, w) in chunk.iter().enumerate() {
                if w.iter().any(|v| !v.is_finite()) {
                    // `index` is the window's position in `windows`.
                    return Err(DetectError::NonFinite {
                        field: "forecast window",
                        index: out.len() + i,
                    });
                }
            }
            let (x, scales) = standardise(chunk, l, self.device())?;
            let (y, _) = self
                .forward(&x, false)
                .map_err(backend("n-beats forward"))?;
            let rows: Vec<Vec<f32>> = y.to_vec2().map_err(backend("n-beats output"))?;
            for (row, (level, scale)) in rows.into_iter().zip(scales) {
                let mut f: Vec<f64> = row.iter().map(|v| f64::from(*v) * scale + level).collect();
                if f.iter().any(|v| !v.is_finite()) {
                    // A diverged model must not leak NaN: fall back to the window level.
                    f = vec![level; h];
                }
                out.push(f);
            }
        }
        Ok(out)
    }
}

/// Anything that forecasts `H` values from windows of `L` values: a [`TrainedModel`] or a
/// median [`Ensemble`](super::Ensemble). Detectors take this, so either can drive them.
pub trait Forecaster {
    /// Values a forecast needs (`L`; for an ensemble, the longest member's).
    fn lookback(&self) -> usize;
    /// Values forecast (`H`).
    fn horizon(&self) -> usize;
    /// Forecasts after many windows at once (each finite and at least `lookback()` long).
    fn forecast_many(&self, windows: &[&[f64]]) -> Result<Vec<Vec<f64>>>;
}

impl Forecaster for TrainedModel {
    fn lookback(&self) -> usize {
        self.card.model.lookback
    }
    fn horizon(&self) -> usize {
        self.card.model.horizon
    }
    fn forecast_many(&self, windows: &[&[f64]]) -> Result<Vec<Vec<f64>>> {
        TrainedModel::forecast_many(self, windows)
    }
}

impl TrainedModel {
    /// The network.
    pub fn network(&self) -> &NBeats {
        &self.net
    }

    /// Forecast the `H` values after `history` (gaps carried forward; needs `≥ L` values).
    pub fn forecast(&self, history: &[f64]) -> Result<Vec<f64>> {
        let (filled, _) = fill_gaps(history)?;
        let mut out = self.net.predict(&[&filled])?;
        out.pop().ok_or(DetectError::Empty {
            what: "forecast output",
        })
    }

    /// Forecast after many windows at once (batched; each window finite and `≥ L` long).
    pub fn forecast_many(&self, windows: &[&[f64]]) -> Result<Vec<Vec<f64>>> {
        self.net.predict(windows)
    }

    /// Per-stack forecasts for `history` on the original scale (the first stack also carries
    /// the window level), e.g. trend and seasonality of N-BEATS-I.
    pub fn components(&self, history: &[f64]) -> Result<Vec<Vec<f64>>> {
        let (filled, _) = fill_gaps(history)?;
        let (x, scales) = standardise(&[&filled], self.net.config().lookback, self.net.device())?;
        let (_, comps) = self
            .net
            .forward(&x, true)
            .map_err(backend("n-beats forward"))?;
        let (level, scale) = scales.first().copied().unwrap_or((0.0, 1.0));
        let mut out = Vec::with_capacity(comps.len());
        for (s, c) in comps.iter().enumerate() {
            let rows: Vec<Vec<f32>> = c.to_vec2().map_err(backend("n-beats output"))?;
            let row = rows.into_iter().next().unwrap_or_default();
            let add = if s == 0 { level } else { 0.0 };
            out.push(row.iter().map(|v| f64::from(*v) * scale + add).collect());
        }
        Ok(out)
    }
}
