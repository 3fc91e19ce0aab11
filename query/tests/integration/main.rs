//! The query crate's integration tests, one test binary: each module runs a query surface
//! (aggregation plans, PromQL, the PromQL golden suite against a real Prometheus, trace search,
//! log search, LogQL) against a real store. One binary instead of one per module keeps the test build
//! small (each binary links arrow and parquet) and links once.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod golden;

mod bounds;
mod deadlines;
mod log_search;
mod logql;
mod plan;
mod promql;
mod promql_budget;
mod promql_cache;
mod promql_golden;
mod traces;
