//! The N-BEATS network (Oreshkin et al., "N-BEATS: Neural basis expansion analysis for
//! interpretable time series forecasting", ICLR 2020, arXiv:1905.10437) on candle.
//!
//! * A **block** (§3.1, Fig. 1) runs its input through `layers` fully connected ReLU layers,
//!   projects the last hidden state linearly to backcast and forecast coefficients `θ^b`, `θ^f`
//!   and expands them with a basis `g^b`, `g^f` (§3.3): learned (`V θ + b`) in generic stacks,
//!   polynomial (eq. 2) or Fourier (eq. 3) in interpretable ones.
//! * **Doubly residual stacking** (§3.2, eq. 1): block `ℓ` receives
//!   `x_ℓ = x_{ℓ−1} − x̂_{ℓ−1}` (what earlier blocks could not explain), and the model forecast
//!   is the sum of all block forecasts `ŷ = Σ_ℓ ŷ_ℓ`. Stack forecasts are kept apart as
//!   [`Components`] so the trend and seasonality of N-BEATS-I can be shown.
//!
//! Parameters are `f32` candle [`Var`]s initialised from a seeded [`SplitMix64`] (PyTorch's
//! default `U(−1/√fan_in, 1/√fan_in)`), so a seed fixes the model exactly.

use candle_core::{DType, Device, Tensor, Var};

use super::basis;
use super::config::{Basis, NBeatsConfig};
use super::rng::SplitMix64;
use crate::error::{DetectError, Result};

/// Map a candle error to [`DetectError::Backend`].
pub(crate) fn backend(what: &'static str) -> impl Fn(candle_core::Error) -> DetectError {
    move |e| DetectError::Backend {
        what,
        message: e.to_string(),
    }
}

/// A dense layer `y = x W (+ b)` with `W: in × out`.
#[derive(Debug)]
struct Dense {
    weight: Var,
    bias: Option<Var>,
}

impl Dense {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let y = x.matmul(self.weight.as_tensor())?;
        match &self.bias {
            Some(b) => y.broadcast_add(b.as_tensor()),
            None => Ok(y),
        }
    }
}

/// How a block turns θ into values.
#[derive(Debug)]
enum Head {
    /// Learned bases (dense layers with bias).
    Learned { back: Dense, fore: Dense },
    /// Fixed bases `θ_dim × L` and `θ_dim × H`.
    Fixed { back: Tensor, fore: Tensor },
}

/// One N-BEATS block.
#[derive(Debug)]
struct Block {
    hidden: Vec<Dense>,
    theta_back: Dense,
    theta_fore: Dense,
    head: Head,
}

impl Block {
    /// Returns (backcast, forecast) for input `x: B × L`.
    fn forward(&self, x: &Tensor) -> candle_core::Result<(Tensor, Tensor)> {
        let mut h = x.clone();
        for layer in &self.hidden {
            h = layer.forward(&h)?.relu()?;
        }
        let theta_b = self.theta_back.forward(&h)?;
        let theta_f = self.theta_fore.forward(&h)?;
        match &self.head {
            Head::Learned { back, fore } => Ok((back.forward(&theta_b)?, fore.forward(&theta_f)?)),
            Head::Fixed { back, fore } => Ok((theta_b.matmul(back)?, theta_f.matmul(fore)?)),
        }
    }
}

/// A stack: distinct blocks, or one block applied `repeats` times when weights are shared.
#[derive(Debug)]
struct Stack {
    blocks: Vec<Block>,
    repeats: usize,
}

/// Per-stack forecasts of one window (on the model's standardised scale, before the sum).
#[derive(Debug, Clone, PartialEq)]
pub struct Components {
    /// `stacks[s][h]`: stack `s`'s contribution to horizon step `h`.
    pub stacks: Vec<Vec<f64>>,
}

/// An N-BEATS network with its parameters.
#[derive(Debug)]
pub struct NBeats {
    config: NBeatsConfig,
    device: Device,
    stacks: Vec<Stack>,
    /// Named parameters in a fixed order (the safetensors names).
    vars: Vec<(String, Var)>,
}

/// Builds parameters, either freshly initialised or taken from loaded tensors.
enum Source<'a> {
    Init(&'a mut SplitMix64),
    Loaded(&'a std::collections::HashMap<String, Tensor>),
}

struct Builder<'a> {
    source: Source<'a>,
    device: &'a Device,
    vars: Vec<(String, Var)>,
}

impl Builder<'_> {
    fn param(&mut self, name: String, shape: &[usize], fan_in: usize) -> Result<Var> {
        let numel: usize = shape.iter().product();
        let tensor = match &mut self.source {
            Source::Init(rng) => {
                let bound = 1.0 / (fan_in.max(1) as f64).sqrt();
                let data: Vec<f32> = (0..numel)
                    .map(|_| rng.uniform(-bound, bound) as f32)
                    .collect();
                Tensor::from_vec(data, shape, self.device).map_err(backend("n-beats init"))?
            }
            Source::Loaded(map) => {
                let t = map.get(&name).ok_or_else(|| DetectError::InvalidModel {
                    reason: format!("missing tensor {name}"),
                })?;
                if t.dims() != shape {
                    return Err(DetectError::InvalidModel {
                        reason: format!(
                            "tensor {name} has shape {:?}, expected {shape:?}",
                            t.dims()
                        ),
                    });
                }
                t.to_dtype(DType::F32)
                    .and_then(|t| t.to_device(self.device))
                    .map_err(backend("n-beats load"))?
            }
        };
        let var = Var::from_tensor(&tensor).map_err(backend("n-beats init"))?;
        self.vars.push((name, var.clone()));
        Ok(var)
    }

    fn dense(&mut self, prefix: &str, fan_in: usize, fan_out: usize, bias: bool) -> Result<Dense> {
        let weight = self.param(format!("{prefix}.weight"), &[fan_in, fan_out], fan_in)?;
        let bias = if bias {
            Some(self.param(format!("{prefix}.bias"), &[fan_out], fan_in)?)
        } else {
            None
        };
        Ok(Dense { weight, bias })
    }

    fn constant(&self, data: Vec<f32>, rows: usize, cols: usize) -> Result<Tensor> {
        Tensor::from_vec(data, (rows, cols), self.device).map_err(backend("n-beats basis"))
    }
}

impl NBeats {
    /// A freshly initialised model; `seed` fixes every weight.
    pub fn new(config: &NBeatsConfig, seed: u64, device: &Device) -> Result<Self> {
        let mut rng = SplitMix64::new(seed);
        Self::build(config, Source::Init(&mut rng), device)
    }

    /// A model whose parameters are taken from `tensors` (names as in [`NBeats::named_tensors`]).
    pub fn from_tensors(
        config: &NBeatsConfig,
        tensors: &std::collections::HashMap<String, Tensor>,
        device: &Device,
    ) -> Result<Self> {
        let model = Self::build(config, Source::Loaded(tensors), device)?;
        if tensors.len() != model.vars.len() {
            return Err(DetectError::InvalidModel {
                reason: format!(
                    "weights hold {} tensors, the config needs {}",
                    tensors.len(),
                    model.vars.len()
                ),
            });
        }
        Ok(model)
    }

    fn build(config: &NBeatsConfig, source: Source<'_>, device: &Device) -> Result<Self> {
        config.validate()?;
        let (l, h) = (config.lookback, config.horizon);
        let mut b = Builder {
            source,
            device,
            vars: Vec::new(),
        };
        let mut stacks = Vec::with_capacity(config.stacks.len());
        for (s, sc) in config.stacks.iter().enumerate() {
            let distinct = if sc.share_weights { 1 } else { sc.blocks };
            let mut blocks = Vec::with_capacity(distinct);
            for k in 0..distinct {
                let p = format!("stack{s}.block{k}");
                let mut hidden = Vec::with_capacity(sc.layers);
                for i in 0..sc.layers {
                    let fan_in = if i == 0 { l } else { sc.width };
                    hidden.push(b.dense(&format!("{p}.fc{i}"), fan_in, sc.width, true)?);
                }
                let (theta_dim, head) = match sc.basis {
                    Basis::Generic { theta_dim } => {
                        let back = b.dense(&format!("{p}.basis_back"), theta_dim, l, true)?;
                        let fore = b.dense(&format!("{p}.basis_fore"), theta_dim, h, true)?;
                        (theta_dim, Head::Learned { back, fore })
                    }
                    Basis::Trend { degree } => {
                        let back = b.constant(basis::trend(degree, l), degree + 1, l)?;
                        let fore = b.constant(basis::trend(degree, h), degree + 1, h)?;
                        (degree + 1, Head::Fixed { back, fore })
                    }
                    Basis::Seasonality { resolution } => {
                        let dim = basis::seasonality_dim(h, resolution);
                        let offset = -(l as i64);
                        let back =
                            b.constant(basis::seasonality(h, resolution, l, offset), dim, l)?;
                        let fore = b.constant(basis::seasonality(h, resolution, h, 0), dim, h)?;
                        (dim, Head::Fixed { back, fore })
                    }
                };
                let theta_back = b.dense(&format!("{p}.theta_back"), sc.width, theta_dim, false)?;
                let theta_fore = b.dense(&format!("{p}.theta_fore"), sc.width, theta_dim, false)?;
                blocks.push(Block {
                    hidden,
                    theta_back,
                    theta_fore,
                    head,
                });
            }
            stacks.push(Stack {
                blocks,
                repeats: sc.blocks,
            });
        }
        Ok(Self {
            config: config.clone(),
            device: device.clone(),
            stacks,
            vars: b.vars,
        })
    }

    /// The model's configuration.
    pub fn config(&self) -> &NBeatsConfig {
        &self.config
    }

    /// The device holding the parameters.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The trainable parameters, in a fixed order.
    pub fn vars(&self) -> Vec<Var> {
        self.vars.iter().map(|(_, v)| v.clone()).collect()
    }

    /// Parameters by name (the safetensors layout).
    pub fn named_tensors(&self) -> Vec<(String, Tensor)> {
        self.vars
            .iter()
            .map(|(n, v)| (n.clone(), v.as_tensor().clone()))
            .collect()
    }

    /// Number of scalar parameters.
    pub fn parameter_count(&self) -> usize {
        self.vars.iter().map(|(_, v)| v.elem_count()).sum()
    }

    /// Forward pass on standardised input `x: B × L`; returns the forecast `B × H` and, when
    /// `keep_components`, each stack's forecast.
    pub(crate) fn forward(
        &self,
        x: &Tensor,
        keep_components: bool,
    ) -> candle_core::Result<(Tensor, Vec<Tensor>)> {
        let mut residual = x.clone();
        let mut forecast: Option<Tensor> = None;
        let mut components = Vec::new();
        for stack in &self.stacks {
            let mut stack_forecast: Option<Tensor> = None;
            for rep in 0..stack.repeats {
                let block = &stack.blocks[rep.min(stack.blocks.len() - 1)];
                let (back, fore) = block.forward(&residual)?;
                // eq. (1): the next block sees what this one could not explain.
                residual = (residual - back)?;
                stack_forecast = Some(match stack_forecast {
                    Some(acc) => (acc + fore)?,
                    None => fore,
                });
            }
            if let Some(sf) = stack_forecast {
                forecast = Some(match forecast {
                    Some(acc) => (acc + &sf)?,
                    None => sf.clone(),
                });
                if keep_components {
                    components.push(sf);
                }
            }
        }
        let forecast = match forecast {
            Some(f) => f,
            None => Tensor::zeros((x.dim(0)?, self.config.horizon), DType::F32, &self.device)?,
        };
        Ok((forecast, components))
    }

    /// Copy of the current parameter values (for early stopping's best snapshot).
    pub(crate) fn snapshot(&self) -> Result<Vec<Tensor>> {
        self.vars
            .iter()
            .map(|(_, v)| v.as_tensor().copy().map_err(backend("n-beats snapshot")))
            .collect()
    }

    /// Restore values taken by [`NBeats::snapshot`].
    pub(crate) fn restore(&self, snapshot: &[Tensor]) -> Result<()> {
        for ((_, var), t) in self.vars.iter().zip(snapshot) {
            var.set(t).map_err(backend("n-beats restore"))?;
        }
        Ok(())
    }
}
