//! Anomaly detection from forecast residuals with calibrated bands.
//!
//! Pipeline: a detector ([`DetectorKind`]: N-BEATS one-step forecasts or a baseline) gives an
//! expected value and local scale per point ([`expect`]); standardised residuals are calibrated
//! by split conformal prediction ([`conformal`]) into a band and an anomaly score
//! (1 − conformal p-value); band breaches in the configured [`Direction`] become alerts only
//! when sustained ([`sustained`]), with a minimum-volume guard. [`multi`] judges a service's
//! latency percentiles, rate, error ratio and throughput together and names hidden degradations.
//! [`likelihood`] turns per-point scores into sparse first detections (anomaly likelihood,
//! spatial novelty, cooldown), which is what NAB and on-call engineers reward;
//! [`mod@streaming_likelihood`] is HTM's streaming likelihood as NAB runs it, and
//! [`residual_likelihood_scores`] puts a detector's residuals through it (the pipeline that
//! scores 66.9 on NAB with N-BEATS 2-step expectations, [`expect::nbeats_k_step`]).
//!
//! Bad input never panics and never yields NaN: gaps are carried forward and left unscored,
//! too-short series are a typed error, constant series get a floored scale, and N-BEATS falls
//! back to the median/MAD baseline when no usable model is given (see [`detect`]).

pub mod conformal;
pub mod expect;
pub mod likelihood;
pub mod multi;
pub mod score;
pub mod streaming_likelihood;
pub mod sustained;

pub use conformal::{Calibrator, Direction, conformal_quantile, conformal_score};
pub use expect::Expectation;
pub use likelihood::{
    LikelihoodConfig, ValueRange, anomaly_likelihood, first_detections, force_spatial_novelty,
    log_likelihood, spatial_novelty,
};
pub use multi::{Finding, FindingKind, ServiceReport, ServiceSeries, SignalRole, judge_service};
pub use score::{
    AnomalyConfig, AnomalyReport, Calibration, DetectorKind, ScoredSeries, detect,
    detect_continued, score_expectation,
};
pub use streaming_likelihood::{
    ResidualLikelihoodConfig, StreamingLikelihood, StreamingLikelihoodConfig,
    residual_likelihood_scores, streaming_likelihood,
};
pub use sustained::{Alert, SustainedConfig, sustained_alerts};
