//! # sightline-detect
//!
//! The analytics of Sightline as pure calculators: token uncertainty from logprobs, a
//! hallucination index grounded in the retrieved context, context-expansion and KV-cache decay
//! of conversations, and Granger causality (with ADF stationarity checks) between metric series,
//! validated number-for-number against statsmodels. It also forecasts metric series with
//! N-BEATS on candle and turns forecast residuals into calibrated anomaly scores, sustained
//! alerts and NAB-scored evaluations.
//!
//! **What this crate owns:** the formulas, their request/result types (serde, so the HTTP
//! and CLI layers can expose them as they are), and the generated labelled set used to
//! evaluate the hallucination index.
//!
//! **What it may not touch (architecture invariant):** it depends on no other Sightline crate
//! and does no I/O — no files, network, clocks or threads. Every entry point takes slices or
//! parsed values and returns a `Result<_, DetectError>`; no input makes it panic.
//!
//! Module map:
//! * [`logprobs`], [`entropy`]: OpenAI-shaped logprobs and per-response uncertainty features;
//! * [`hallucination`]: grounding evidence and the hallucination index;
//! * [`eval`]: deterministic generator of labelled RAG examples and the evaluation harness;
//! * [`context`], [`cache_decay`]: conversation context growth and KV-cache hit decay;
//! * [`granger`], [`adf`], [`causal_graph`], [`timeseries`]: causality between series;
//! * [`ols`], [`stats`]: least squares and shared statistics;
//! * [`forecast`]: N-BEATS (generic/interpretable/hybrid), training, ensembles, save/load;
//! * [`anomaly`]: conformal bands, baselines, sustained alerts, multi-series degradation;
//! * [`nab`]: the Numenta Anomaly Benchmark scoring rules.

// `!(x > 0.0)` is used on purpose throughout: unlike `x <= 0.0` it also rejects NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod adf;
pub mod anomaly;
pub mod cache_decay;
pub mod causal_graph;
pub mod context;
pub mod entropy;
pub mod error;
pub mod eval;
pub mod forecast;
pub mod granger;
pub mod hallucination;
pub mod logprobs;
pub mod nab;
pub mod ols;
pub mod stats;
pub mod timeseries;

pub use error::{DetectError, Result};
