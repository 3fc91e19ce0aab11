//! Configuration of an N-BEATS model and of its training, with small CPU defaults and the
//! paper's full settings as presets.
//!
//! All types are plain serde data so a server or CLI can store them next to a model and expose
//! them as they are.

use serde::{Deserialize, Serialize};

use crate::error::{DetectError, Result};

/// How a block maps its expansion coefficients θ to backcast and forecast (paper §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Basis {
    /// Learned basis: `ŷ = V θ + b` with `dim(θ) = theta_dim` (§3.3, "generic architecture").
    Generic {
        /// Number of expansion coefficients.
        theta_dim: usize,
    },
    /// Polynomial trend, eq. (2): `ŷ = T θ`, `T = [1, t, …, t^degree]`, `t = (0..H)/H`.
    Trend {
        /// Polynomial degree `p` (the paper recommends a small value, 2 or 3).
        degree: usize,
    },
    /// Fourier seasonality, eq. (3): `ŷ = S θ` with a constant and cos/sin pairs at
    /// frequencies `j / resolution` cycles per horizon, `j = 1 ..= resolution·⌊H/2⌋`.
    /// `resolution = 1` is exactly the paper's set; larger values add sub-horizon frequencies
    /// (e.g. 7 for a weekly cycle with a daily horizon), as the authors' reference code does
    /// through its `harmonics` setting.
    Seasonality {
        /// Frequency resolution (≥ 1).
        resolution: usize,
    },
}

/// One stack: `blocks` blocks of `layers` fully connected ReLU layers of `width` units.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackConfig {
    /// The basis of the stack's blocks.
    pub basis: Basis,
    /// Number of blocks (≥ 1).
    pub blocks: usize,
    /// Fully connected layers per block (the paper uses 4).
    pub layers: usize,
    /// Units per layer.
    pub width: usize,
    /// Whether all blocks of the stack share their parameters (the paper does so in the
    /// interpretable configuration).
    pub share_weights: bool,
}

/// Which family of stacks (paper §3.3), used by the presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Architecture {
    /// Generic stacks with learned bases (N-BEATS-G).
    Generic,
    /// A trend stack followed by a seasonality stack (N-BEATS-I).
    Interpretable,
    /// Trend and seasonality stacks followed by a generic stack for what they leave over.
    Hybrid,
}

/// The shape of an N-BEATS model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NBeatsConfig {
    /// Forecast horizon `H` in samples.
    pub horizon: usize,
    /// Lookback `L` in samples (the paper uses 2H to 7H).
    pub lookback: usize,
    /// The stacks, input side first.
    pub stacks: Vec<StackConfig>,
}

/// Upper limit on any single dimension, so a corrupt config cannot ask for absurd memory.
pub const MAX_DIM: usize = 1 << 16;

impl NBeatsConfig {
    /// Small CPU default for `architecture`, with lookback `lookback_multiple · H`.
    ///
    /// Generic: 3 stacks × 1 block × 4 layers × 128 units (θ of 32); interpretable: trend
    /// (2 shared blocks, 64 units, degree 2) + seasonality (2 shared blocks, 128 units).
    pub fn small(architecture: Architecture, horizon: usize, lookback_multiple: usize) -> Self {
        let generic = StackConfig {
            basis: Basis::Generic { theta_dim: 32 },
            blocks: 1,
            layers: 4,
            width: 128,
            share_weights: false,
        };
        let trend = StackConfig {
            basis: Basis::Trend { degree: 2 },
            blocks: 2,
            layers: 4,
            width: 64,
            share_weights: true,
        };
        let seasonality = StackConfig {
            basis: Basis::Seasonality { resolution: 1 },
            blocks: 2,
            layers: 4,
            width: 128,
            share_weights: true,
        };
        let stacks = match architecture {
            Architecture::Generic => vec![generic.clone(), generic.clone(), generic],
            Architecture::Interpretable => vec![trend, seasonality],
            Architecture::Hybrid => vec![trend, seasonality, generic],
        };
        Self {
            horizon,
            lookback: horizon.saturating_mul(lookback_multiple),
            stacks,
        }
    }

    /// The paper's configuration (Table 18): N-BEATS-G is 30 stacks of 1 block, 4 layers of
    /// 512 units, no sharing; N-BEATS-I is a trend stack (3 blocks, 256 units, degree 3) and a
    /// seasonality stack (3 blocks, 2048 units), each sharing weights. Hybrid appends 30
    /// generic stacks to the interpretable pair.
    pub fn paper(architecture: Architecture, horizon: usize, lookback_multiple: usize) -> Self {
        let generic = StackConfig {
            basis: Basis::Generic {
                theta_dim: (horizon * (lookback_multiple + 1)).clamp(1, 512),
            },
            blocks: 1,
            layers: 4,
            width: 512,
            share_weights: false,
        };
        let trend = StackConfig {
            basis: Basis::Trend { degree: 3 },
            blocks: 3,
            layers: 4,
            width: 256,
            share_weights: true,
        };
        let seasonality = StackConfig {
            basis: Basis::Seasonality { resolution: 1 },
            blocks: 3,
            layers: 4,
            width: 2048,
            share_weights: true,
        };
        let mut stacks = Vec::new();
        if architecture != Architecture::Generic {
            stacks.push(trend);
            stacks.push(seasonality);
        }
        if architecture != Architecture::Interpretable {
            stacks.extend(std::iter::repeat_n(generic, 30));
        }
        Self {
            horizon,
            lookback: horizon.saturating_mul(lookback_multiple),
            stacks,
        }
    }

    /// Check every dimension; the model constructor and the loader call this.
    pub fn validate(&self) -> Result<()> {
        let bad =
            |name: &'static str, reason: String| DetectError::InvalidParameter { name, reason };
        if self.horizon == 0 || self.horizon > MAX_DIM {
            return Err(bad(
                "horizon",
                format!("must be in 1..={MAX_DIM}, got {}", self.horizon),
            ));
        }
        if self.lookback < 2 || self.lookback > MAX_DIM {
            return Err(bad(
                "lookback",
                format!("must be in 2..={MAX_DIM}, got {}", self.lookback),
            ));
        }
        if self.stacks.is_empty() || self.stacks.len() > 256 {
            return Err(bad(
                "stacks",
                format!("need 1..=256 stacks, got {}", self.stacks.len()),
            ));
        }
        for stack in &self.stacks {
            if stack.blocks == 0 || stack.blocks > 256 {
                return Err(bad("blocks", format!("need 1..=256, got {}", stack.blocks)));
            }
            if stack.layers == 0 || stack.layers > 64 {
                return Err(bad("layers", format!("need 1..=64, got {}", stack.layers)));
            }
            if stack.width == 0 || stack.width > MAX_DIM {
                return Err(bad(
                    "width",
                    format!("need 1..={MAX_DIM}, got {}", stack.width),
                ));
            }
            match stack.basis {
                Basis::Generic { theta_dim } if theta_dim == 0 || theta_dim > MAX_DIM => {
                    return Err(bad(
                        "theta_dim",
                        format!("need 1..={MAX_DIM}, got {theta_dim}"),
                    ));
                }
                Basis::Trend { degree } if degree > 8 => {
                    return Err(bad("degree", format!("need 0..=8, got {degree}")));
                }
                Basis::Seasonality { resolution } if resolution == 0 || resolution > 64 => {
                    return Err(bad("resolution", format!("need 1..=64, got {resolution}")));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Training objective (paper §2, eq. for sMAPE and MASE; MAE as the plain alternative).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Loss {
    /// Mean absolute error on per-window standardised values.
    Mae,
    /// Symmetric MAPE, `2|y − ŷ| / (|y| + |ŷ|)`, on the original scale.
    Smape,
    /// Mean absolute scaled error: MAE divided by the in-window seasonal-naive MAE.
    Mase {
        /// Seasonal period `m` of the scaling naive forecast.
        season: usize,
    },
}

/// Where tensors live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ComputeDevice {
    /// The CPU (always available).
    #[default]
    Cpu,
    /// A CUDA GPU by ordinal; needs the crate's `cuda` feature.
    Cuda {
        /// Device ordinal.
        ordinal: usize,
    },
}

/// How to train one model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    /// Maximum optimiser steps.
    pub max_steps: usize,
    /// Windows per batch.
    pub batch_size: usize,
    /// AdamW learning rate.
    pub learning_rate: f64,
    /// AdamW decoupled weight decay.
    pub weight_decay: f64,
    /// Objective.
    pub loss: Loss,
    /// Clip the global gradient L2 norm to this value (0 disables clipping).
    pub clip_grad_norm: f64,
    /// Horizons at the end of the training series held out for early stopping (0: none).
    pub validation_horizons: usize,
    /// Evaluate on the validation tail every this many steps.
    pub eval_every: usize,
    /// Stop after this many evaluations without improvement (0: never stop early).
    pub patience: usize,
    /// Sample training windows only from the last `history_limit · H` points (the paper's
    /// `L_H`); `None` uses the whole history.
    pub history_limit: Option<usize>,
    /// Seed of weight initialisation and window sampling.
    pub seed: u64,
    /// Where to train.
    pub device: ComputeDevice,
}

impl Default for TrainConfig {
    /// Small CPU default: 600 steps of 256 windows, lr 1e-3, MAE, clip 1.0, early stopping
    /// on 2 held-out horizons.
    fn default() -> Self {
        Self {
            max_steps: 600,
            batch_size: 256,
            learning_rate: 1e-3,
            weight_decay: 1e-4,
            loss: Loss::Mae,
            clip_grad_norm: 1.0,
            validation_horizons: 2,
            eval_every: 50,
            patience: 4,
            history_limit: None,
            seed: 0,
            device: ComputeDevice::Cpu,
        }
    }
}

impl TrainConfig {
    /// The paper's optimiser settings (§4, appendix D): batch 1024, lr 1e-3, more steps.
    pub fn paper() -> Self {
        Self {
            max_steps: 5_000,
            batch_size: 1024,
            learning_rate: 1e-3,
            weight_decay: 0.0,
            patience: 10,
            eval_every: 100,
            ..Self::default()
        }
    }

    /// Check ranges.
    pub fn validate(&self) -> Result<()> {
        let bad =
            |name: &'static str, reason: String| DetectError::InvalidParameter { name, reason };
        if self.max_steps == 0 || self.max_steps > 10_000_000 {
            return Err(bad(
                "max_steps",
                format!("need 1..=1e7, got {}", self.max_steps),
            ));
        }
        if self.batch_size == 0 || self.batch_size > 1 << 20 {
            return Err(bad(
                "batch_size",
                format!("need 1..=2^20, got {}", self.batch_size),
            ));
        }
        if !(self.learning_rate > 0.0) || !self.learning_rate.is_finite() {
            return Err(bad(
                "learning_rate",
                format!("must be > 0, got {}", self.learning_rate),
            ));
        }
        if !(self.weight_decay >= 0.0) || !self.weight_decay.is_finite() {
            return Err(bad(
                "weight_decay",
                format!("must be >= 0, got {}", self.weight_decay),
            ));
        }
        if !(self.clip_grad_norm >= 0.0) || !self.clip_grad_norm.is_finite() {
            return Err(bad(
                "clip_grad_norm",
                format!("must be >= 0, got {}", self.clip_grad_norm),
            ));
        }
        if self.eval_every == 0 {
            return Err(bad("eval_every", "must be >= 1".into()));
        }
        if let Loss::Mase { season: 0 } = self.loss {
            return Err(bad("season", "must be >= 1".into()));
        }
        Ok(())
    }
}
