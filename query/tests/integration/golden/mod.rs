//! Helpers of the PromQL golden suite (`tests/promql_golden.rs`).

pub mod compare;
pub mod data;
pub mod prom;
pub mod queries;
