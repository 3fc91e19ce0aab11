//! A small median ensemble (Oreshkin et al. 2020, §3.4 "Ensembling"): members differ in
//! lookback (multiples of H) and seed; the forecast is the element-wise median.

use serde::{Deserialize, Serialize};

use super::config::{NBeatsConfig, TrainConfig};
use super::model::{Forecaster, TrainedModel};
use super::train::{TrainControl, TrainProgress, train};
use crate::error::{DetectError, Result};

/// Which members to train.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnsembleConfig {
    /// Lookbacks as multiples of the horizon (the paper uses 2..=7).
    pub lookback_multiples: Vec<usize>,
    /// Seeds per lookback.
    pub seeds: Vec<u64>,
}

impl Default for EnsembleConfig {
    /// Three members: lookbacks 3H, 5H, 7H with one seed.
    fn default() -> Self {
        Self {
            lookback_multiples: vec![3, 5, 7],
            seeds: vec![0],
        }
    }
}

/// Trained members.
#[derive(Debug)]
pub struct Ensemble {
    /// The members (each with its own model card).
    pub members: Vec<TrainedModel>,
}

/// Train every (lookback, seed) member; `base`'s lookback is replaced per member. `progress`
/// receives `(member index, progress)`.
pub fn train_ensemble(
    values: &[f64],
    timestamps: Option<&[i64]>,
    base: &NBeatsConfig,
    train_cfg: &TrainConfig,
    ensemble: &EnsembleConfig,
    progress: &mut dyn FnMut(usize, &TrainProgress) -> TrainControl,
) -> Result<Ensemble> {
    if ensemble.lookback_multiples.is_empty() || ensemble.seeds.is_empty() {
        return Err(DetectError::InvalidParameter {
            name: "ensemble",
            reason: "needs at least one lookback and one seed".into(),
        });
    }
    let mut members = Vec::new();
    for &k in &ensemble.lookback_multiples {
        for &seed in &ensemble.seeds {
            let mut cfg = base.clone();
            cfg.lookback = base.horizon.saturating_mul(k);
            let tc = TrainConfig {
                seed: seed.wrapping_mul(1000).wrapping_add(k as u64),
                ..train_cfg.clone()
            };
            let index = members.len();
            let mut cb = |p: &TrainProgress| progress(index, p);
            members.push(train(values, timestamps, &cfg, &tc, &mut cb)?);
        }
    }
    Ok(Ensemble { members })
}

/// Element-wise median of equally long forecasts (mean of the middle two for even counts).
pub fn median_combine(forecasts: &[Vec<f64>]) -> Result<Vec<f64>> {
    let first = forecasts
        .first()
        .ok_or(DetectError::Empty { what: "forecasts" })?;
    let h = first.len();
    let mut out = Vec::with_capacity(h);
    let mut col = Vec::with_capacity(forecasts.len());
    for i in 0..h {
        col.clear();
        for f in forecasts {
            let v = f.get(i).copied().ok_or(DetectError::LengthMismatch {
                left: "forecast",
                left_len: f.len(),
                right: "first forecast",
                right_len: h,
            })?;
            col.push(v);
        }
        col.sort_by(f64::total_cmp);
        let m = col.len();
        out.push(if m % 2 == 1 {
            col[m / 2]
        } else {
            0.5 * (col[m / 2 - 1] + col[m / 2])
        });
    }
    Ok(out)
}

impl Ensemble {
    /// The longest member lookback (the history a forecast needs).
    pub fn lookback(&self) -> usize {
        self.members
            .iter()
            .map(|m| m.card.model.lookback)
            .max()
            .unwrap_or(0)
    }

    /// Median forecast after `history`.
    pub fn forecast(&self, history: &[f64]) -> Result<Vec<f64>> {
        let all = self
            .members
            .iter()
            .map(|m| m.forecast(history))
            .collect::<Result<Vec<_>>>()?;
        median_combine(&all)
    }

    /// Median forecasts after many windows (each at least [`Ensemble::lookback`] long).
    pub fn forecast_many(&self, windows: &[&[f64]]) -> Result<Vec<Vec<f64>>> {
        let per_member = self
            .members
            .iter()
            .map(|m| m.forecast_many(windows))
            .collect::<Result<Vec<_>>>()?;
        (0..windows.len())
            .map(|i| {
                let col: Vec<Vec<f64>> = per_member.iter().map(|m| m[i].clone()).collect();
                median_combine(&col)
            })
            .collect()
    }
}

impl Forecaster for Ensemble {
    fn lookback(&self) -> usize {
        Ensemble::lookback(self)
    }
    fn horizon(&self) -> usize {
        self.members
            .first()
            .map(|m| m.card.model.horizon)
            .unwrap_or(0)
    }
    fn forecast_many(&self, windows: &[&[f64]]) -> Result<Vec<Vec<f64>>> {
        Ensemble::forecast_many(self, windows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_three_and_four() {
        let m =
            median_combine(&[vec![1.0, 5.0], vec![3.0, 1.0], vec![2.0, 3.0]]).unwrap_or_default();
        assert_eq!(m, vec![2.0, 3.0]);
        let m = median_combine(&[vec![1.0], vec![2.0], vec![3.0], vec![10.0]]).unwrap_or_default();
        assert_eq!(m, vec![2.5]);
        assert!(median_combine(&[]).is_err());
        assert!(median_combine(&[vec![1.0], vec![]]).is_err());
    }
}
