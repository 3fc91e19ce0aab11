//! The command line: one subcommand per command module. The flags of `serve` belong to the
//! server's configuration ([`sightline_server::config::ServeArgs`]); the others live with their
//! command.

use clap::{Parser, Subcommand};

/// Sightline: a self-hosted observability store for LLM applications.
#[derive(Debug, Parser)]
#[command(name = "sightline", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub enum Command {
    /// Run the server: OTLP/HTTP (and the HTTP APIs) on one port, OTLP/gRPC on another.
    ///
    /// Listens on loopback only unless told otherwise. Stops on SIGTERM or SIGINT: stops
    /// accepting, finishes in-flight requests, flushes and fsyncs the store, exits 0.
    Serve(sightline_server::config::ServeArgs),
    /// Granger causality between two columns of a CSV file (does a quality metric help predict
    /// a KPI?): the four statsmodels statistics per lag, AIC/BIC lag choice, ADF verdicts.
    Granger(crate::granger::GrangerArgs),
    /// Ask questions: PromQL, aggregations over spans and logs, traces and logs; against a
    /// running server (--url) or a stopped server's data directory (--data-dir).
    Query(crate::query::QueryArgs),
    /// Start a server with days of generated LLM traffic (a RAG chat service with injected
    /// incidents), run the detectors and Granger tests, print what was found next to the
    /// injected truth, and keep serving.
    Demo(crate::demo::DemoArgs),
    /// Manage anomaly detectors of a running server: list, show, create, delete, run (with
    /// --wait, a progress bar until training finishes).
    Detectors(crate::detectors::DetectorsArgs),
}
