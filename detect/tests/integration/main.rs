//! The detect crate's integration tests, one test binary: anomaly scoring and the N-BEATS
//! forecaster on tiny models, the NAB scoring rules and likelihood, the hallucination index on
//! its labelled sets, and Granger/ADF parity with statsmodels. One binary instead of one per
//! module keeps the test build small and links once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anomaly;
mod forecast;
mod hallucination_eval;
mod nab_likelihood;
mod statsmodels_parity;
