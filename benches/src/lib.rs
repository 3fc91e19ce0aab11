//! # sightline-bench
//!
//! Benchmarks of Sightline: deterministic workload generators ([`workload`]) shared by the
//! criterion benches (`benches/`) and the `sightline-bench` runner, which measures ingest
//! throughput, bytes per sample next to Parquet and ClickHouse (chDB) in the same run, trace
//! lookups and scans, and prints the numbers with the commands that reproduce them.
//!
//! Owns no product code; depends on the product crates, never the other way round.

pub mod disk;
pub mod index_bench;
pub mod query_bench;
pub mod rss;
pub mod workload;
