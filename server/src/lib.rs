//! # sightline-server
//!
//! The `sightline` binary's library half: everything between a socket and the store.
//!
//! **Owns:** the command line and configuration ([`cli`], [`config`]), tenants and bearer-token
//! auth ([`auth`]), request and item limits ([`limits`]), decoding OTLP (protobuf, JSON, gzip)
//! and mapping it onto storage rows ([`otlp`]), the ingest pipeline shared by both transports
//! ([`ingest`]), the HTTP listener ([`http`]: OTLP/HTTP, `/metrics`, `/health`, `/ready`; query
//! APIs are added there as further route modules), OTLP/gRPC ([`grpc`]), the server's own
//! metrics ([`telemetry`]) and orderly shutdown ([`shutdown`], [`serve`]).
//!
//! **May not touch:** files under the data directory (only through [`sightline_storage::Store`]),
//! and the formulas of [`sightline_detect`] (it calls them, it does not reimplement them).
//!
//! The decode-and-map entry points ([`otlp::decode_traces`], [`otlp::traces::map_traces`], ...)
//! are public so that fuzz targets and tests can call them without a network.

pub mod assembly;
pub mod auth;
pub mod cli;
pub mod config;
pub mod demo;
pub mod detectors_cli;
pub mod error;
pub mod granger_cli;
pub mod grpc;
pub mod http;
pub mod ingest;
pub mod limits;
pub mod loadgen;
pub mod otlp;
pub mod quality;
pub mod query_cli;
pub mod serve;
pub mod shutdown;
pub mod telemetry;

pub use config::Config;
pub use error::{ConfigError, IngestError, ServeError};
pub use limits::Limits;
