//! Forecasting: N-BEATS (Oreshkin et al., ICLR 2020, arXiv:1905.10437) on candle, its
//! training, a median ensemble, save/load with a traceable model card, baselines, accuracy
//! metrics and a deterministic generator of LLM-service series.
//!
//! Typical use:
//!
//! ```no_run
//! use sightline_detect::forecast::{Architecture, NBeatsConfig, TrainConfig, no_progress, train};
//! # fn main() -> sightline_detect::Result<()> {
//! let history: Vec<f64> = (0..600).map(|i| (i as f64 / 24.0 * std::f64::consts::TAU).sin()).collect();
//! let model_cfg = NBeatsConfig::small(Architecture::Generic, 24, 7);
//! let model = train(&history, None, &model_cfg, &TrainConfig::default(), &mut no_progress)?;
//! let next_day = model.forecast(&history)?;
//! let saved = model.to_bytes()?; // safetensors + JSON model card
//! # let _ = (next_day, saved); Ok(()) }
//! ```
//!
//! Module map: [`config`] (shapes and presets), [`nbeats`] (the network), [`basis`]
//! (eq. 2 and 3), [`train`](mod@train) (training loop), [`model`] (trained model + card),
//! [`persist`] (bytes and directories), [`ensemble`], [`baseline`], [`metrics`], [`input`]
//! (bad-input policy), [`synthetic`], [`rng`].

pub mod baseline;
pub mod basis;
pub mod config;
pub mod ensemble;
pub mod input;
pub mod metrics;
pub mod model;
pub mod nbeats;
pub mod persist;
pub mod rng;
pub mod synthetic;
pub mod train;

pub use config::{
    Architecture, Basis, ComputeDevice, Loss, NBeatsConfig, StackConfig, TrainConfig,
};
pub use ensemble::{Ensemble, EnsembleConfig, median_combine, train_ensemble};
pub use model::{
    ForecastMetrics, Forecaster, ModelCard, TrainMetrics, TrainedModel, TrainingWindow,
    candle_device,
};
pub use nbeats::NBeats;
pub use persist::SavedModel;
pub use train::{TrainControl, TrainProgress, min_training_len, no_progress, train};
