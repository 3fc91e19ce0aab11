//! End-to-end tests of Sightline: one test binary with a module per area (as ripgrep's
//! `tests/tests.rs`), run with `cargo test -p sightline-e2e`.
//!
//! - [`crash`]: a child process is SIGKILLed at random points while it appends, flushes and
//!   compacts; every acknowledged batch must survive exactly once and every batch stays atomic.
//! - [`concurrency`]: writers, readers, flushes and compactions in one process; readers never see
//!   a partial batch, never lose rows, and always see what was acknowledged before they started.
//! - [`interop`]: segment files are read by pyarrow and DuckDB, which must see exactly what was
//!   appended.
//! - [`model`]: a property test of random operation sequences against an in-memory model.
//! - [`regression`]: one test per storage bug found, named after the bug.

mod common;
mod concurrency;
mod crash;
mod interop;
mod model;
mod regression;
