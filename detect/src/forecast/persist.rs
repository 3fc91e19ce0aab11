//! Saving and loading trained models: weights as safetensors bytes (candle's serialisation),
//! the [`ModelCard`] as JSON. Byte functions do no I/O; [`save_dir`]/[`load_dir`] are the thin
//! path helpers (the only file access in this crate), writing `model.safetensors` and
//! `model.json` into a directory.
//!
//! Loading checks that the card's format version is known, that the weights hash matches the
//! bytes, and that every tensor the config needs is present with the right shape.

use std::collections::HashMap;
use std::path::Path;

use candle_core::Device;

use super::model::{ModelCard, TrainedModel};
use super::nbeats::NBeats;
use super::rng::fnv1a_bytes;
use crate::error::{DetectError, Result};

/// Format version written into every model card.
pub const FORMAT_VERSION: u32 = 1;
/// File name of the weights inside a model directory.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// File name of the model card inside a model directory.
pub const CARD_FILE: &str = "model.json";

/// A saved model as bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedModel {
    /// safetensors bytes of the parameters.
    pub weights: Vec<u8>,
    /// Pretty JSON of the model card (with `weights_hash` filled in).
    pub card_json: String,
}

fn invalid(reason: impl Into<String>) -> DetectError {
    DetectError::InvalidModel {
        reason: reason.into(),
    }
}

impl TrainedModel {
    /// Serialise weights and card.
    pub fn to_bytes(&self) -> Result<SavedModel> {
        let tensors = self.net.named_tensors();
        let mut meta = HashMap::new();
        meta.insert(
            "format".to_string(),
            format!("sightline-nbeats-v{FORMAT_VERSION}"),
        );
        let weights =
            safetensors::serialize(tensors.iter().map(|(n, t)| (n.as_str(), t)), Some(meta))
                .map_err(|e| invalid(format!("safetensors serialisation: {e}")))?;
        let mut card = self.card.clone();
        card.weights_hash = Some(format!("fnv1a64:{:016x}", fnv1a_bytes(&weights)));
        let card_json = serde_json::to_string_pretty(&card).map_err(|e| invalid(e.to_string()))?;
        Ok(SavedModel { weights, card_json })
    }

    /// Rebuild a model from [`TrainedModel::to_bytes`] output onto `device`.
    pub fn from_bytes(weights: &[u8], card_json: &str, device: &Device) -> Result<Self> {
        let card: ModelCard =
            serde_json::from_str(card_json).map_err(|e| DetectError::json("model card", &e))?;
        if card.format_version != FORMAT_VERSION {
            return Err(invalid(format!(
                "unknown format version {} (this build reads {FORMAT_VERSION})",
                card.format_version
            )));
        }
        if let Some(expected) = &card.weights_hash {
            let actual = format!("fnv1a64:{:016x}", fnv1a_bytes(weights));
            if &actual != expected {
                return Err(invalid(format!(
                    "weights hash {actual} does not match card {expected}"
                )));
            }
        }
        let tensors = candle_core::safetensors::load_buffer(weights, device)
            .map_err(|e| invalid(format!("safetensors: {e}")))?;
        let net = NBeats::from_tensors(&card.model, &tensors, device)?;
        Ok(Self { net, card })
    }
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> DetectError + '_ {
    move |e| DetectError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// Write `model.safetensors` and `model.json` into `dir` (created if missing).
pub fn save_dir(model: &TrainedModel, dir: &Path) -> Result<()> {
    let saved = model.to_bytes()?;
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let w = dir.join(WEIGHTS_FILE);
    std::fs::write(&w, &saved.weights).map_err(io_err(&w))?;
    let c = dir.join(CARD_FILE);
    std::fs::write(&c, saved.card_json.as_bytes()).map_err(io_err(&c))?;
    Ok(())
}

/// Load a model saved by [`save_dir`] onto `device`.
pub fn load_dir(dir: &Path, device: &Device) -> Result<TrainedModel> {
    let w = dir.join(WEIGHTS_FILE);
    let weights = std::fs::read(&w).map_err(io_err(&w))?;
    let c = dir.join(CARD_FILE);
    let card = std::fs::read_to_string(&c).map_err(io_err(&c))?;
    TrainedModel::from_bytes(&weights, &card, device)
}
