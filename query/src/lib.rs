//! # sightline-query
//!
//! Answers questions over the store: PromQL for metrics (parsed with `promql-parser`, evaluated
//! here), and later trace and log search and the query plans behind the HTTP APIs.
//!
//! **Owns:** query semantics (PromQL evaluation, lookback, staleness, vector matching) and
//! result shapes. **Does not:** touch storage files (it reads through
//! `sightline_storage::Store::scan` and `series`), speak HTTP (the server maps results to wire
//! formats), or compute LLM-quality statistics (`sightline-detect`).

pub mod bounds;
pub mod error;
pub mod logs;
pub mod plan;
pub mod promql;
pub mod time;
pub mod traces;

pub use error::{QueryError, Result};
