//! Baseline forecasters: seasonal naive (repeat the last season) and its ensemble partner.

use crate::error::{DetectError, Result};

/// Seasonal naive forecast: `ŷ_{T+h} = y_{T+h−m·⌈h/m⌉}` (Hyndman & Athanasopoulos, FPP3 §5.2).
/// Needs `history.len() ≥ season`.
pub fn seasonal_naive(history: &[f64], season: usize, horizon: usize) -> Result<Vec<f64>> {
    if season == 0 {
        return Err(DetectError::InvalidParameter {
            name: "season",
            reason: "must be >= 1".into(),
        });
    }
    if history.len() < season {
        return Err(DetectError::TooFewObservations {
            what: "seasonal naive forecast",
            needed: season,
            got: history.len(),
        });
    }
    let last = &history[history.len() - season..];
    Ok((0..horizon).map(|h| last[h % season]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_last_season() {
        let f = seasonal_naive(&[1.0, 2.0, 3.0, 4.0], 2, 5).unwrap_or_default();
        assert_eq!(f, vec![3.0, 4.0, 3.0, 4.0, 3.0]);
        assert!(seasonal_naive(&[1.0], 2, 1).is_err());
        assert!(seasonal_naive(&[1.0], 0, 1).is_err());
    }
}
