//! What one detector may ask of the server: how many a tenant may define, how large a model
//! and its training may be, how often it may retrain and score, and how long one run may train.
//! The values come from the server's `Limits` (`limits.max_detectors_per_tenant`, ...), which
//! the server converts into [`DetectorLimits`]; a definition over any of them is refused at
//! creation (400) with a message naming the limit, and one stored before a limit was lowered is
//! kept but not run (see [`super::registry`]).
//!
//! The model size is computed from the definition the way the detect crate builds the network
//! (`detect::forecast::nbeats`); the training memory is an estimate of what candle holds while
//! one model trains: the parameters five times over (weights, gradients, AdamW's two moments,
//! the best parameters kept for early stopping) plus the activations of the largest forward
//! pass, twice over for a training batch (their gradients), once for an inference chunk.

use std::time::Duration;

use sightline_detect::forecast::model::INFERENCE_CHUNK;
use sightline_detect::forecast::{Basis, NBeatsConfig, basis};

use super::DetectorError;
use super::spec::{DetectorSpec, Mode, ModelKind};

/// Bytes per `f32`.
const F32: u64 = 4;
/// Copies of every parameter during training: weights, gradients, AdamW's first and second
/// moments, and the best parameters kept for early stopping.
const PARAMETER_COPIES: u64 = 5;

/// The limits the detectors enforce.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DetectorLimits {
    /// Most detectors per tenant.
    pub max_per_tenant: usize,
    /// Most N-BEATS parameters in one model.
    pub max_parameters: usize,
    /// Most estimated training memory of one model, in bytes.
    pub max_training_bytes: u64,
    /// Shortest `retrain_every`, in seconds.
    pub min_retrain_secs: u64,
    /// Shortest `step`, in seconds.
    pub min_step_secs: u64,
    /// Longest training of one run, in seconds.
    pub max_training_secs: u64,
}

/// The server's defaults (`server/src/limits.rs` and docs/limits.md keep the same values).
impl Default for DetectorLimits {
    fn default() -> Self {
        Self {
            max_per_tenant: 100,
            max_parameters: 8_000_000,
            max_training_bytes: 1 << 30,
            min_retrain_secs: 600,
            min_step_secs: 10,
            max_training_secs: 600,
        }
    }
}

impl DetectorLimits {
    /// The training budget of one run.
    pub fn training_budget(&self) -> Duration {
        Duration::from_secs(self.max_training_secs)
    }

    /// Check `spec` against the limits (not the quota, which depends on the tenant's other
    /// detectors); the message is the 400 answer.
    pub fn check(&self, spec: &DetectorSpec) -> Result<(), DetectorError> {
        let step_ms = spec.step_ms();
        let min_step_ms = self.min_step_secs.saturating_mul(1000);
        if (step_ms as u64) < min_step_ms {
            return Err(DetectorError::Invalid(format!(
                "step must be at least {}s (limits.min_detector_step_secs), got {:?}",
                self.min_step_secs, spec.step
            )));
        }
        let min_retrain_ms = self.min_retrain_secs.saturating_mul(1000);
        if (spec.retrain_ms() as u64) < min_retrain_ms {
            return Err(DetectorError::Invalid(format!(
                "retrain_every must be at least {}s (limits.min_detector_retrain_secs), got {:?}",
                self.min_retrain_secs, spec.retrain_every
            )));
        }
        if spec.mode == Mode::Single && spec.model.kind == ModelKind::Nbeats {
            let cfg = spec.nbeats_config();
            let params = parameter_count(&cfg);
            if params > self.max_parameters as u64 {
                return Err(DetectorError::Invalid(format!(
                    "model: N-BEATS of {params} parameters is over the limit of {} (limits.max_detector_parameters); lower model.width, model.stacks, model.layers or lookback",
                    self.max_parameters
                )));
            }
            let batch = spec.train_config().batch_size;
            let bytes = training_bytes(&cfg, batch);
            if bytes > self.max_training_bytes {
                return Err(DetectorError::Invalid(format!(
                    "model: training needs about {} MiB, over the limit of {} MiB (limits.max_detector_training_bytes); lower model.batch_size, model.width or model.layers",
                    bytes.div_ceil(1 << 20),
                    self.max_training_bytes >> 20
                )));
            }
        }
        Ok(())
    }
}

/// Expansion coefficients of one block of `basis` (horizon `h`).
fn theta_dim(basis: Basis, h: usize) -> u64 {
    match basis {
        Basis::Generic { theta_dim } => theta_dim as u64,
        Basis::Trend { degree } => degree as u64 + 1,
        Basis::Seasonality { resolution } => basis::seasonality_dim(h, resolution) as u64,
    }
}

/// Scalar parameters of the N-BEATS network `cfg` describes (what
/// `detect::forecast::NBeats::parameter_count` reports once it is built): per distinct block,
/// `layers` dense layers with bias, the two bias-free θ projections and, for a generic basis,
/// the learned backcast and forecast bases with bias. Saturates instead of overflowing.
pub fn parameter_count(cfg: &NBeatsConfig) -> u64 {
    let (l, h) = (cfg.lookback as u64, cfg.horizon as u64);
    let mut total = 0u64;
    for sc in &cfg.stacks {
        let w = sc.width as u64;
        let theta = theta_dim(sc.basis, cfg.horizon);
        let layers = sc.layers as u64;
        let hidden = if layers == 0 {
            0
        } else {
            (l * w + w).saturating_add((layers - 1).saturating_mul(w * w + w))
        };
        let projections = 2 * w * theta;
        let bases = match sc.basis {
            Basis::Generic { .. } => theta * l + l + theta * h + h,
            Basis::Trend { .. } | Basis::Seasonality { .. } => 0,
        };
        let distinct = if sc.share_weights {
            1
        } else {
            sc.blocks as u64
        };
        let block = hidden.saturating_add(projections).saturating_add(bases);
        total = total.saturating_add(distinct.saturating_mul(block));
    }
    total
}

/// `f32` values one window keeps alive through a forward pass of `cfg`: per applied block, each
/// layer's product, biased sum and ReLU, both θ, and backcast, forecast and the running
/// residual and forecast sums.
fn activations_per_window(cfg: &NBeatsConfig) -> u64 {
    let (l, h) = (cfg.lookback as u64, cfg.horizon as u64);
    cfg.stacks
        .iter()
        .map(|sc| {
            let per_block = 3 * sc.layers as u64 * sc.width as u64
                + 2 * theta_dim(sc.basis, cfg.horizon)
                + 3 * (l + h);
            (sc.blocks as u64).saturating_mul(per_block)
        })
        .fold(0u64, u64::saturating_add)
}

/// Estimated peak memory, in bytes, of training `cfg` with batches of `batch` windows.
pub fn training_bytes(cfg: &NBeatsConfig, batch: usize) -> u64 {
    let params = parameter_count(cfg).saturating_mul(PARAMETER_COPIES * F32);
    let windows = (2 * batch as u64).max(INFERENCE_CHUNK as u64);
    let activations = activations_per_window(cfg)
        .saturating_mul(windows)
        .saturating_mul(F32);
    params.saturating_add(activations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_detect::forecast::{
        Architecture, ComputeDevice, NBeats, StackConfig, candle_device,
    };

    fn spec(json: &str) -> DetectorSpec {
        let s: DetectorSpec = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}"));
        s.validate().unwrap_or_else(|e| panic!("{e}"));
        s
    }

    fn built(cfg: &NBeatsConfig) -> u64 {
        let dev = candle_device(ComputeDevice::Cpu).unwrap_or_else(|e| panic!("{e}"));
        NBeats::new(cfg, 0, &dev)
            .unwrap_or_else(|e| panic!("{e}"))
            .parameter_count() as u64
    }

    #[test]
    fn parameter_count_matches_the_built_network() {
        let default = spec(r#"{"name": "a", "query": "up", "model": {"kind": "nbeats"}}"#);
        let cfg = default.nbeats_config();
        assert_eq!(parameter_count(&cfg), 50_816);
        assert_eq!(parameter_count(&cfg), built(&cfg));
        // the detect crate's small generic model (3 stacks of 4 layers of 128 units)
        let small = NBeatsConfig::small(Architecture::Generic, 24, 7);
        assert_eq!(parameter_count(&small), 257_088);
        assert_eq!(parameter_count(&small), built(&small));
        for arch in [Architecture::Interpretable, Architecture::Hybrid] {
            let c = NBeatsConfig::small(arch, 12, 4);
            assert_eq!(parameter_count(&c), built(&c), "{arch:?}");
        }
        let unshared = NBeatsConfig {
            horizon: 6,
            lookback: 20,
            stacks: vec![StackConfig {
                basis: Basis::Generic { theta_dim: 5 },
                blocks: 3,
                layers: 1,
                width: 7,
                share_weights: false,
            }],
        };
        assert_eq!(parameter_count(&unshared), built(&unshared));
    }

    #[test]
    fn oversized_models_are_refused_naming_the_limit() {
        let limits = DetectorLimits::default();
        let default = spec(r#"{"name": "a", "query": "up", "model": {"kind": "nbeats"}}"#);
        assert!(limits.check(&default).is_ok());
        assert!(training_bytes(&default.nbeats_config(), 64) < 64 << 20);
        // every field within its own bound, ~16 G parameters together
        let huge = spec(
            r#"{"name": "a", "query": "up", "model": {"kind": "nbeats", "width": 4096, "stacks": 64, "layers": 16}}"#,
        );
        assert!(parameter_count(&huge.nbeats_config()) > 15_000_000_000);
        let e = limits
            .check(&huge)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("limits.max_detector_parameters"), "{e}");
        // few parameters, large batches of wide activations
        let wide = spec(
            r#"{"name": "a", "query": "up", "model": {"kind": "nbeats", "width": 1024, "layers": 4, "batch_size": 8192}}"#,
        );
        assert!(parameter_count(&wide.nbeats_config()) < 8_000_000);
        let e = limits
            .check(&wide)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("limits.max_detector_training_bytes"), "{e}");
        // a service detector scores with baselines: no model to size
        let service = spec(
            r#"{"name": "a", "mode": "service", "model": {"kind": "nbeats", "width": 4096, "stacks": 64, "layers": 16}, "roles": {"latency_p50": {"query": "up"}}}"#,
        );
        assert!(limits.check(&service).is_ok());
    }

    #[test]
    fn minimum_step_and_retrain_period() {
        let limits = DetectorLimits::default();
        let e = limits
            .check(&spec(
                r#"{"name": "a", "query": "up", "retrain_every": "1ms"}"#,
            ))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("limits.min_detector_retrain_secs"), "{e}");
        let e = limits
            .check(&spec(
                r#"{"name": "a", "query": "up", "step": "1s", "history": "1h"}"#,
            ))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("limits.min_detector_step_secs"), "{e}");
        let ok = spec(
            r#"{"name": "a", "query": "up", "step": "10s", "history": "1d", "retrain_every": "10m"}"#,
        );
        assert_eq!(limits.check(&ok), Ok(()));
        let lenient = DetectorLimits {
            min_step_secs: 1,
            min_retrain_secs: 0,
            ..DetectorLimits::default()
        };
        let fast = spec(
            r#"{"name": "a", "query": "up", "step": "1s", "history": "1h", "retrain_every": "1ms"}"#,
        );
        assert_eq!(lenient.check(&fast), Ok(()));
    }
}
