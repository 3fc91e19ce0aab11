//! # sightline
//!
//! The `sightline` command: parses the command line and runs one command. Everything between a
//! socket and the store is the `sightline-server` library; this crate holds only the commands.
//!
//! **Owns:** the command line ([`command`]), the one HTTP API client the commands share
//! ([`api_client`]), `serve` (configuration, logging and the runtime around
//! [`sightline_server::serve::run`]), `query` ([`query`], with `query/{args,render}`: PromQL,
//! aggregations, traces, logs and RAG provenance, over HTTP or, with `--data-dir`, through the
//! server's router in this process), `detectors` ([`detectors`]), `granger` ([`granger`]) and
//! `demo` ([`demo`], with `demo/{app,traffic,kpi,incidents,otlp_out,analysis,report}`: a seeded
//! RAG chat service with injected incidents, sent as OTLP to a server started in this process,
//! then analysed over the HTTP API only; docs/demo.md).
//!
//! **May not touch:** the store (only through the server's HTTP API or its router) and the
//! wire formats (the commands speak the documented JSON APIs). anyhow is used here only.

mod api_client;
mod command;
mod demo;
mod detectors;
mod granger;
mod query;

use anyhow::Context as _;
use clap::Parser as _;

use command::{Cli, Command};

/// jemalloc, not the system allocator: under sustained OTLP ingest glibc's per-thread arenas kept
/// the memory of flushed memtables (allocated on request threads, freed on the flush threads),
/// and resident memory grew to 4-6 GiB with a 1 GiB memory budget; jemalloc returns it (peak
/// 0.86 GiB in the same run, with less CPU per span). It also serves the C libraries' `malloc`
/// (the crate's `unprefixed_malloc_on_supported_platforms` feature): Parquet creates zstd
/// contexts for every column chunk it reads, and glibc mapped and zeroed fresh pages for each.
/// See docs/benchmarks.md.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => {
            let config = sightline_server::Config::resolve(&args).context("configuration")?;
            sightline_server::telemetry::init_logging(&config.log)
                .context("initialising logging")?;
            runtime()?.block_on(sightline_server::serve::run(config))?;
            Ok(())
        }
        Command::Query(args) => print(&query::run(&args)?),
        Command::Demo(args) => {
            let log = sightline_server::config::LogConfig {
                format: sightline_server::config::LogFormat::Text,
                level: std::env::var("SIGHTLINE_LOG_LEVEL").unwrap_or_else(|_| "warn".into()),
            };
            sightline_server::telemetry::init_logging(&log).context("initialising logging")?;
            runtime()?.block_on(demo::run(args))?;
            Ok(())
        }
        Command::Detectors(args) => {
            let out = detectors::run(&args)?;
            if out.is_empty() {
                return Ok(());
            }
            print(&out)
        }
        Command::Granger(args) => print(&granger::run(&args)?),
    }
}

/// Prints a command's answer and a newline; a reader that went away (`| head`) is not an error.
fn print(out: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{out}").and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("writing to stdout"),
        _ => Ok(()),
    }
}

/// The multi-threaded runtime of `serve` and `demo`.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("sightline")
        .build()
        .context("starting the async runtime")
}
