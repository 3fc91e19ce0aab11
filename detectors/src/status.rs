//! A detector's status as the API shows it and `state.json` keeps it: lifecycle state,
//! training progress, last training and scoring times, per-series write positions.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sightline_detect::anomaly::ValueRange;

/// Lifecycle state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Created, not trained yet.
    #[default]
    Pending,
    /// Training (progress is set).
    Training,
    /// Trained (or a baseline) and scoring.
    Ready,
    /// The last run failed; `error` says why.
    Failed,
}

/// Training progress of the current run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// Series finished.
    pub series_done: usize,
    /// Series to train.
    pub series_total: usize,
    /// Optimiser steps done on the current series.
    pub epoch: usize,
    /// Step budget per series.
    pub epochs: usize,
    /// Mean training loss of the last interval.
    pub train_loss: Option<f64>,
    /// Validation MAE now.
    pub val_loss: Option<f64>,
}

/// The `status` object of a detector.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// Lifecycle state.
    pub state: State,
    /// Training progress, while training.
    pub progress: Option<Progress>,
    /// End of the last training run (ms), if any.
    pub last_trained_ms: Option<i64>,
    /// Time of the last scored point (ms), if any.
    pub last_scored_ms: Option<i64>,
    /// Series modelled.
    pub series: usize,
    /// Why the last run failed, or which series were skipped.
    pub error: Option<String>,
    /// Which baseline replaced the configured model, and why.
    pub fallback: Option<String>,
    /// Wall-clock time of the last run's end (ms), for the scheduler.
    #[serde(default)]
    pub last_run_ms: Option<i64>,
    /// Why the scheduler leaves this detector alone (the process died during its last run):
    /// set at start from the run marker, cleared by an explicit run; a replaced definition
    /// starts without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended: Option<String>,
    /// Last written point per series key (ms): points are written once, never rewritten.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub written: BTreeMap<String, i64>,
    /// Range of the values per series key since the last full run (which replaces it): the
    /// `:likelihood` of an incremental run judges spatial novelty against it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ranges: BTreeMap<String, ValueRange>,
}

impl Status {
    /// What the API shows (without internal bookkeeping).
    pub fn public(&self) -> serde_json::Value {
        serde_json::json!({
            "state": self.state,
            "progress": self.progress,
            "last_trained_ms": self.last_trained_ms,
            "last_scored_ms": self.last_scored_ms,
            "series": self.series,
            "error": self.error,
            "fallback": self.fallback,
        })
    }
}
