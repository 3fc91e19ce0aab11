//! The server's end-to-end tests, one test binary: each module drives a real `sightline` (the
//! library in-process or the built binary) through one surface: OTLP ingest, the query, Prometheus,
//! Tempo and Loki APIs, detectors, the quality views, real Python clients, restarts and bad input.
//! One binary instead of one per module keeps the test build a fraction of the size (each binary
//! links arrow, parquet and candle) and links once.

#![allow(clippy::unwrap_used, missing_docs)]

mod browser;
mod common;
mod prom_common;

mod aggregate_api;
mod bad_input;
mod decode_robustness;
mod demo;
mod detect_api;
mod detectors_api;
mod disk_full;
mod hardening;
mod ingest_bombs;
mod llm_clients;
mod llm_context;
mod loki_api;
mod long_content;
mod openapi;
mod prometheus_api;
mod python_clients;
mod python_restart;
mod quality_api;
mod readme;
mod remote_write;
mod tempo_api;
mod web_ui;
