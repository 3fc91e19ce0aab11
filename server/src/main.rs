//! The `sightline` binary: parses the command line and runs the server (see the
//! `sightline_server` library for everything else).

use anyhow::Context as _;
use clap::Parser as _;
use sightline_server::cli::{Cli, Command};

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => {
            let config = sightline_server::Config::resolve(&args).context("configuration")?;
            sightline_server::telemetry::init_logging(&config.log)
                .context("initialising logging")?;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("sightline")
                .build()
                .context("starting the async runtime")?;
            runtime.block_on(sightline_server::serve::run(config))?;
            Ok(())
        }
        Command::Query(args) => {
            let out = sightline_server::query_cli::run(&args).map_err(anyhow::Error::msg)?;
            println!("{out}");
            Ok(())
        }
        Command::Demo(args) => {
            let log = sightline_server::config::LogConfig {
                format: sightline_server::cli::LogFormat::Text,
                level: std::env::var("SIGHTLINE_LOG_LEVEL").unwrap_or_else(|_| "warn".into()),
            };
            sightline_server::telemetry::init_logging(&log).context("initialising logging")?;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("sightline")
                .build()
                .context("starting the async runtime")?;
            runtime.block_on(sightline_server::demo::run(args))?;
            Ok(())
        }
        Command::Detectors(args) => {
            let out = sightline_server::detectors_cli::run(&args).map_err(anyhow::Error::msg)?;
            if !out.is_empty() {
                println!("{out}");
            }
            Ok(())
        }
        Command::Granger(args) => {
            let out = sightline_server::granger_cli::run(&args).map_err(anyhow::Error::msg)?;
            println!("{out}");
            Ok(())
        }
    }
}
