//! A detector's definition as the API takes it (`POST /api/v1/detectors`): the JSON shape,
//! the defaults of every optional field, and validation with messages fit for a 400 answer.
//!
//! The spec is stored as given (after defaults) in `spec.json`; everything derived from it
//! (step in milliseconds, the detect crate's [`AnomalyConfig`], N-BEATS shapes) is computed by
//! the methods here, so the file stays the single source of truth.

use std::collections::BTreeMap;

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use sightline_detect::anomaly::{
    AnomalyConfig, Calibration, DetectorKind, Direction, SignalRole, SustainedConfig,
};
use sightline_detect::forecast::{Basis, NBeatsConfig, StackConfig, TrainConfig};

use crate::DetectorError;

/// Longest detector name.
pub const MAX_NAME_LEN: usize = 64;
/// Most points one evaluation may hold (the PromQL engine's limit per range query).
pub const MAX_POINTS: i64 = 11_000;
/// Most series one detector may model.
pub const MAX_SERIES_LIMIT: usize = 10_000;

/// Which expectation model a detector uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    /// N-BEATS, trained per series in the background.
    Nbeats,
    /// `ŷ_t = y_{t-season}`.
    SeasonalNaive,
    /// Rolling mean and standard deviation.
    Zscore,
    /// Rolling median and MAD.
    MedianMad,
}

impl ModelKind {
    /// The name used in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Nbeats => "nbeats",
            Self::SeasonalNaive => "seasonal_naive",
            Self::Zscore => "zscore",
            Self::MedianMad => "median_mad",
        }
    }
}

/// `model.calibration`: how residuals are turned into a band.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CalibrationKind {
    /// Rolling conformal quantiles of the last `calibration_window` residuals.
    Rolling,
    /// The same, with each residual entering the pool clipped at 2.5x the pool's 90% quantile,
    /// so one burst cannot widen the band that should catch the next (higher recall on the
    /// injected-anomaly evaluation, 0.59 vs 0.22 for N-BEATS, at some precision: 0.87 vs 1.00).
    Robust,
}

/// `model`: the kind plus optional knobs (defaults in brackets).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// The model.
    pub kind: ModelKind,
    /// Seasonal period in points (seasonal_naive) [1440 points of the step].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub season: Option<usize>,
    /// Points in the scale estimate (baselines) [60].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<usize>,
    /// Residuals in the rolling conformal calibration [500].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration_window: Option<usize>,
    /// Keep breaching points out of the rolling calibration, so a long anomaly does not widen
    /// its own band (tighter bands on clean data) [false].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_breaches: Option<bool>,
    /// Band calibration [rolling].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<CalibrationKind>,
    /// N-BEATS: training steps [300].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epochs: Option<usize>,
    /// N-BEATS: units per layer [64].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<usize>,
    /// N-BEATS: generic stacks [2].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacks: Option<usize>,
    /// N-BEATS: layers per block [2].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<usize>,
    /// N-BEATS: windows per batch [64].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<usize>,
    /// N-BEATS: AdamW learning rate [1e-3].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learning_rate: Option<f64>,
    /// N-BEATS: evaluations without improvement before stopping early (0: never) [4].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patience: Option<usize>,
    /// N-BEATS: compare each point with the forecast made this many steps before it
    /// (1..=horizon; 2 keeps an excursion's first point out of the next forecast's lookback) [1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forecast_origin: Option<usize>,
    /// N-BEATS: seed of initialisation and sampling [0].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// `sustain`: when breaches become an anomaly event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SustainSpec {
    /// Look-back window in points [5].
    #[serde(default = "d_window")]
    pub window: usize,
    /// Breaching points within the window that open an event [4].
    #[serde(default = "d_min_points")]
    pub min_points: usize,
    /// Quiet points that close it [3].
    #[serde(default = "d_recovery")]
    pub recovery: usize,
}

impl Default for SustainSpec {
    fn default() -> Self {
        Self {
            window: d_window(),
            min_points: d_min_points(),
            recovery: d_recovery(),
        }
    }
}

/// Single-series detectors model each series of `query`; service detectors judge several role
/// queries of one service together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// One model per series of `query`.
    #[default]
    Single,
    /// `roles`: latency percentiles, rate, error ratio, throughput judged together.
    Service,
}

/// One series of a service detector.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleSpec {
    /// PromQL yielding exactly one series.
    pub query: String,
    /// A static alert threshold in the role's bad direction (e.g. the p99 SLO).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
}

/// A detector definition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetectorSpec {
    /// `[a-zA-Z_][a-zA-Z0-9_]*`, at most 64 characters; prefixes the written series.
    pub name: String,
    /// PromQL; one model per returned series (single mode).
    #[serde(default)]
    pub query: String,
    /// Evaluation step [60s].
    #[serde(default = "d_step")]
    pub step: String,
    /// History evaluated and trained on [7d].
    #[serde(default = "d_history")]
    pub history: String,
    /// N-BEATS forecast horizon in points [24].
    #[serde(default = "d_horizon")]
    pub horizon: usize,
    /// N-BEATS lookback in points [168].
    #[serde(default = "d_lookback")]
    pub lookback: usize,
    /// Model and knobs.
    #[serde(default = "d_model")]
    pub model: ModelSpec,
    /// Which deviations count [both].
    #[serde(default)]
    pub direction: Direction,
    /// Miscoverage of the band [0.01].
    #[serde(default = "d_alpha")]
    pub alpha: f64,
    /// Sustained-alert rule.
    #[serde(default)]
    pub sustain: SustainSpec,
    /// Minimum volume for a breach to count (volume: `volume_query`, else the series itself).
    #[serde(default)]
    pub min_volume: Option<f64>,
    /// PromQL giving the volume (e.g. requests per step); one series, or one per source series
    /// with the same labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_query: Option<String>,
    /// Retrain period [24h].
    #[serde(default = "d_retrain")]
    pub retrain_every: String,
    /// Most series the query may return [100].
    #[serde(default = "d_max_series")]
    pub max_series: usize,
    /// `single` [default] or `service`.
    #[serde(default)]
    pub mode: Mode,
    /// Service mode: role (`latency_p50`, `latency_p90`, `latency_p99`, `request_rate`,
    /// `error_ratio`, `token_throughput`) -> query and optional threshold.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub roles: BTreeMap<String, RoleSpec>,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Ignored on input, so that a detector read with GET can be PUT back as it is.
    #[serde(default, skip_serializing)]
    pub status: Option<IgnoredAny>,
}

fn d_window() -> usize {
    5
}
fn d_min_points() -> usize {
    4
}
fn d_recovery() -> usize {
    3
}
fn d_step() -> String {
    "60s".into()
}
fn d_history() -> String {
    "7d".into()
}
fn d_horizon() -> usize {
    24
}
fn d_lookback() -> usize {
    168
}
fn d_alpha() -> f64 {
    0.01
}
fn d_retrain() -> String {
    "24h".into()
}
fn d_max_series() -> usize {
    100
}
fn d_model() -> ModelSpec {
    ModelSpec {
        kind: ModelKind::MedianMad,
        season: None,
        window: None,
        calibration_window: None,
        exclude_breaches: None,
        calibration: None,
        epochs: None,
        width: None,
        stacks: None,
        layers: None,
        batch_size: None,
        learning_rate: None,
        patience: None,
        forecast_origin: None,
        seed: None,
    }
}

/// Whether `name` is a valid detector name.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= MAX_NAME_LEN
}

fn duration_ms(what: &str, s: &str) -> Result<i64, DetectorError> {
    let ns = sightline_query::time::parse_duration(s).map_err(|_| {
        invalid(format!(
            "{what}: cannot parse {s:?} as a duration (e.g. 60s, 5m, 7d)"
        ))
    })?;
    let ms = ns / 1_000_000;
    if ms <= 0 {
        return Err(invalid(format!("{what} must be positive, got {s:?}")));
    }
    Ok(ms)
}

/// [`DetectorError::Invalid`] with `message` (the 400 answer).
fn invalid(message: impl Into<String>) -> DetectorError {
    DetectorError::Invalid(message.into())
}

/// The role names service mode accepts.
pub const ROLES: [&str; 6] = [
    "latency_p50",
    "latency_p90",
    "latency_p99",
    "request_rate",
    "error_ratio",
    "token_throughput",
];

/// A role name as the detect crate's [`SignalRole`].
pub fn signal_role(name: &str) -> Option<SignalRole> {
    serde_json::from_value(serde_json::Value::String(name.to_owned()))
        .ok()
        .filter(|_| ROLES.contains(&name))
}

impl DetectorSpec {
    /// Evaluation step in ms.
    pub fn step_ms(&self) -> i64 {
        duration_ms("step", &self.step).unwrap_or(60_000)
    }

    /// History in ms.
    pub fn history_ms(&self) -> i64 {
        duration_ms("history", &self.history).unwrap_or(7 * 86_400_000)
    }

    /// Retrain period in ms.
    pub fn retrain_ms(&self) -> i64 {
        duration_ms("retrain_every", &self.retrain_every).unwrap_or(86_400_000)
    }

    /// Seasonal period in points.
    pub fn season(&self) -> usize {
        self.model
            .season
            .unwrap_or_else(|| (86_400_000 / self.step_ms().max(1)).max(1) as usize)
    }

    /// Window of the baselines' scale estimate.
    pub fn window(&self) -> usize {
        self.model.window.unwrap_or(60)
    }

    /// Rolling calibration window.
    pub fn calibration_window(&self) -> usize {
        self.model.calibration_window.unwrap_or(500)
    }

    /// N-BEATS forecast origin (steps before the point).
    pub fn forecast_origin(&self) -> usize {
        self.model.forecast_origin.unwrap_or(1)
    }

    /// Points before the first scored point (model warm-up plus calibration minimum).
    pub fn warmup_points(&self) -> usize {
        let model = match self.model.kind {
            ModelKind::SeasonalNaive => self.season() + self.window(),
            ModelKind::Zscore | ModelKind::MedianMad => self.window(),
            ModelKind::Nbeats => self.lookback.max(60) + self.forecast_origin().saturating_sub(1),
        };
        model + 30
    }

    /// Check everything; the message is the 400 answer.
    pub fn validate(&self) -> Result<(), DetectorError> {
        if !valid_name(&self.name) {
            return Err(invalid(format!(
                "name {:?} is invalid: use [a-zA-Z_][a-zA-Z0-9_]*, at most {MAX_NAME_LEN} characters",
                self.name
            )));
        }
        let step = duration_ms("step", &self.step)?;
        let history = duration_ms("history", &self.history)?;
        duration_ms("retrain_every", &self.retrain_every)?;
        if step < 1000 {
            return Err(invalid(format!(
                "step must be at least 1s, got {:?}",
                self.step
            )));
        }
        if history < step * 10 {
            return Err(invalid("history must cover at least 10 steps"));
        }
        if history / step > MAX_POINTS {
            return Err(invalid(format!(
                "history / step is {} points, over the limit of {MAX_POINTS}; raise step or shorten history",
                history / step
            )));
        }
        match self.mode {
            Mode::Single => {
                if !self.roles.is_empty() {
                    return Err(invalid("roles are only used with \"mode\": \"service\""));
                }
                check_query("query", &self.query)?;
            }
            Mode::Service => {
                if self.roles.is_empty() {
                    return Err(invalid(
                        "service mode needs roles, e.g. {\"latency_p50\": {\"query\": \"...\"}}",
                    ));
                }
                for (role, r) in &self.roles {
                    if signal_role(role).is_none() {
                        return Err(invalid(format!(
                            "unknown role {role:?}; use one of {}",
                            ROLES.join(", ")
                        )));
                    }
                    check_query(&format!("roles.{role}.query"), &r.query)?;
                    if let Some(t) = r.threshold
                        && !t.is_finite()
                    {
                        return Err(invalid(format!("roles.{role}.threshold must be finite")));
                    }
                }
                if !self.query.is_empty() {
                    check_query("query", &self.query)?;
                }
            }
        }
        if let Some(q) = &self.volume_query {
            check_query("volume_query", q)?;
        }
        if !(self.alpha > 0.0 && self.alpha < 0.5) {
            return Err(invalid(format!(
                "alpha must be in (0, 0.5), got {}",
                self.alpha
            )));
        }
        if self.horizon == 0 || self.horizon > 10_000 {
            return Err(invalid(format!(
                "horizon must be in 1..=10000, got {}",
                self.horizon
            )));
        }
        if self.lookback < 2 || self.lookback > 10_000 {
            return Err(invalid(format!(
                "lookback must be in 2..=10000, got {}",
                self.lookback
            )));
        }
        if self.max_series == 0 || self.max_series > MAX_SERIES_LIMIT {
            return Err(invalid(format!(
                "max_series must be in 1..={MAX_SERIES_LIMIT}, got {}",
                self.max_series
            )));
        }
        let s = &self.sustain;
        if s.window == 0 || s.recovery == 0 || s.min_points == 0 || s.min_points > s.window {
            return Err(invalid(format!(
                "sustain needs window >= 1, recovery >= 1 and 1 <= min_points <= window (got window {}, min_points {}, recovery {})",
                s.window, s.min_points, s.recovery
            )));
        }
        if let Some(v) = self.min_volume
            && !v.is_finite()
        {
            return Err(invalid("min_volume must be a finite number or null"));
        }
        let m = &self.model;
        let positive = |what: &str, v: Option<usize>, max: usize| match v {
            Some(x) if x == 0 || x > max => Err(invalid(format!(
                "model.{what} must be in 1..={max}, got {x}"
            ))),
            _ => Ok(()),
        };
        positive("season", m.season, MAX_POINTS as usize)?;
        positive("calibration_window", m.calibration_window, 100_000)?;
        positive("epochs", m.epochs, 100_000)?;
        positive("width", m.width, 4096)?;
        positive("stacks", m.stacks, 64)?;
        positive("layers", m.layers, 16)?;
        positive("batch_size", m.batch_size, 8192)?;
        positive("forecast_origin", m.forecast_origin, self.horizon)?;
        if let Some(w) = m.window
            && !(3..=100_000).contains(&w)
        {
            return Err(invalid(format!(
                "model.window must be in 3..=100000, got {w}"
            )));
        }
        if let Some(lr) = m.learning_rate
            && !(lr > 0.0 && lr < 1.0)
        {
            return Err(invalid(format!(
                "model.learning_rate must be in (0, 1), got {lr}"
            )));
        }
        if m.kind == ModelKind::Nbeats {
            self.nbeats_config()
                .validate()
                .map_err(|e| invalid(format!("model: {e}")))?;
        }
        Ok(())
    }

    /// The detect crate's configuration (direction overridden by service roles).
    pub fn anomaly_config(&self, direction: Direction) -> AnomalyConfig {
        let detector = match self.model.kind {
            ModelKind::Nbeats => DetectorKind::NBeats,
            ModelKind::SeasonalNaive => DetectorKind::SeasonalNaive {
                season: self.season(),
                window: self.window(),
            },
            ModelKind::Zscore => DetectorKind::RollingZScore {
                window: self.window(),
            },
            ModelKind::MedianMad => DetectorKind::RollingMedianMad {
                window: self.window(),
            },
        };
        AnomalyConfig {
            detector,
            direction,
            alpha: self.alpha,
            calibration: match self.model.calibration.unwrap_or(CalibrationKind::Rolling) {
                CalibrationKind::Rolling => Calibration::Rolling {
                    window: self.calibration_window(),
                    min_points: 30,
                    exclude_breaches: self.model.exclude_breaches.unwrap_or(false),
                },
                CalibrationKind::Robust => Calibration::robust(self.calibration_window()),
            },
            sustained: SustainedConfig {
                window: self.sustain.window,
                min_breaches: self.sustain.min_points,
                recovery: self.sustain.recovery,
                min_volume: self.min_volume,
            },
            forecast_origin: self.forecast_origin(),
        }
    }

    /// The N-BEATS shape: `stacks` generic stacks of one block.
    pub fn nbeats_config(&self) -> NBeatsConfig {
        let m = &self.model;
        let stack = StackConfig {
            basis: Basis::Generic {
                theta_dim: (self.horizon + self.lookback).clamp(2, 32),
            },
            blocks: 1,
            layers: m.layers.unwrap_or(2),
            width: m.width.unwrap_or(64),
            share_weights: false,
        };
        NBeatsConfig {
            horizon: self.horizon,
            lookback: self.lookback,
            stacks: vec![stack; m.stacks.unwrap_or(2)],
        }
    }

    /// N-BEATS training settings.
    pub fn train_config(&self) -> TrainConfig {
        let m = &self.model;
        let steps = m.epochs.unwrap_or(300);
        TrainConfig {
            max_steps: steps,
            batch_size: m.batch_size.unwrap_or(64),
            learning_rate: m.learning_rate.unwrap_or(1e-3),
            eval_every: (steps / 10).clamp(1, 50),
            seed: m.seed.unwrap_or(0),
            patience: m.patience.unwrap_or(4),
            ..TrainConfig::default()
        }
    }
}

fn check_query(what: &str, q: &str) -> Result<(), DetectorError> {
    if q.trim().is_empty() {
        return Err(invalid(format!("{what} is required (a PromQL expression)")));
    }
    sightline_query::promql::parse(q)
        .map_err(|e| invalid(format!("{what}: invalid PromQL: {e}")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> Result<DetectorSpec, String> {
        let s: DetectorSpec = serde_json::from_str(json).map_err(|e| e.to_string())?;
        s.validate().map(|()| s).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_validation() {
        let s = spec(r#"{"name": "a_1", "query": "up"}"#).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((s.step_ms(), s.history_ms()), (60_000, 7 * 86_400_000));
        assert_eq!(s.season(), 1440);
        assert_eq!(s.sustain, SustainSpec::default());
        for bad in [
            r#"{"name": "1a", "query": "up"}"#,
            r#"{"name": "a", "query": "up{"}"#,
            r#"{"name": "a", "query": "up", "step": "-5s"}"#,
            r#"{"name": "a", "query": "up", "model": {"kind": "prophet"}}"#,
            r#"{"name": "a", "query": "up", "alpha": 0.7}"#,
            r#"{"name": "a", "query": "up", "sustain": {"window": 2, "min_points": 3}}"#,
            r#"{"name": "a", "query": "up", "history": "30d", "step": "10s"}"#,
            r#"{"name": "a", "mode": "service", "roles": {"latency_p42": {"query": "x"}}}"#,
            r#"{"name": "a", "query": "up", "bogus": 1}"#,
            r#"{"name": "a", "query": "up", "model": {"kind": "nbeats", "forecast_origin": 0}}"#,
            r#"{"name": "a", "query": "up", "horizon": 4, "model": {"kind": "nbeats", "forecast_origin": 5}}"#,
        ] {
            assert!(spec(bad).is_err(), "{bad} accepted");
        }
        let nb = spec(
            r#"{"name": "a", "query": "up", "model": {"kind": "nbeats", "forecast_origin": 2}}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(nb.anomaly_config(Direction::Both).forecast_origin, 2);
        assert_eq!(nb.warmup_points(), nb.lookback.max(60) + 1 + 30);
        assert_eq!(s.anomaly_config(Direction::Both).forecast_origin, 1);
        assert!(valid_name(&"a".repeat(64)) && !valid_name(&"a".repeat(65)));
        assert_eq!(signal_role("latency_p50"), Some(SignalRole::LatencyP50));
        assert_eq!(signal_role("other"), None);
    }
}
