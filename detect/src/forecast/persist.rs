//! Saving and loading trained models: weights as safetensors bytes (candle's serialisation),
//! the [`ModelCard`] as JSON, as bytes only. Where the bytes are kept is the caller's business
//! (the server's detectors write them atomically as `model.safetensors` and `model.json`).
//!
//! Loading checks that the card's format version is known, that the weights hash matches the
//! bytes, and that every tensor the config needs is present with the right shape.

use std::collections::HashMap;

use candle_core::Device;

use super::model::{ModelCard, TrainedModel};
use super::nbeats::NBeats;
use super::rng::fnv1a_bytes;
use crate::error::{DetectError, Result};

/// Format version written into every model card.
pub const FORMAT_VERSION: u32 = 1;

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
