//! `sightline detectors`: manage the anomaly detectors of a running server over its HTTP API
//! (`--url`, with `--token` or `--tenant`): `list`, `show NAME`, `create --file spec.json`
//! (`--replace` to PUT over an existing one), `delete NAME`, `run NAME [--wait]` (a progress
//! bar of the training until the detector is ready or failed), and `anomalies`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use axum::http::Method;
use clap::{Args, Subcommand};
use serde_json::Value;

use crate::api_client::{ApiClient, Credentials, with_query};

/// Flags of `sightline detectors`.
#[derive(Debug, Args)]
pub struct DetectorsArgs {
    /// URL of a running server [default: http://127.0.0.1:4318].
    #[arg(long, env = "SIGHTLINE_URL", global = true)]
    pub url: Option<String>,
    /// Bearer token (servers started with --auth-tokens-file).
    #[arg(long, env = "SIGHTLINE_TOKEN", global = true)]
    pub token: Option<String>,
    /// Tenant, sent as X-Scope-OrgID (servers without auth) [default: default].
    #[arg(long, env = "SIGHTLINE_TENANT", global = true)]
    pub tenant: Option<String>,
    /// Print the API's JSON instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
    /// What to do.
    #[command(subcommand)]
    pub what: DetectorsCommand,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum DetectorsCommand {
    /// List the tenant's detectors with their state.
    List,
    /// One detector: definition and status.
    Show {
        /// Detector name.
        name: String,
    },
    /// Create a detector from a JSON file (see docs/detectors.md for the fields).
    ///
    /// Example: sightline detectors create --file chat_latency.json
    Create {
        /// The definition, as JSON (`-` reads stdin).
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
        /// Replace a detector of the same name (PUT) instead of failing with 409.
        #[arg(long)]
        replace: bool,
    },
    /// Delete a detector and its events (its written series stay).
    Delete {
        /// Detector name.
        name: String,
    },
    /// Train and score now; with --wait, show training progress until ready or failed.
    Run {
        /// Detector name.
        name: String,
        /// Wait for the run to finish, with a progress bar.
        #[arg(long)]
        wait: bool,
        /// Give up waiting after this many seconds.
        #[arg(long, default_value_t = 600)]
        timeout_secs: u64,
    },
    /// Anomaly events, newest first.
    Anomalies {
        /// Only this detector's.
        #[arg(long)]
        detector: Option<String>,
        /// Most events.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
}

fn s(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A time in Unix milliseconds as RFC 3339 (`-` when absent, e.g. an anomaly still open).
fn time_ms(v: &Value) -> String {
    v.as_i64().map_or_else(
        || "-".into(),
        |ms| crate::query::render::time_ns(ms.saturating_mul(1_000_000)),
    )
}

/// One anomaly: id, level, detector, its start and end as RFC 3339 times, explanation.
fn anomaly_line(a: &Value) -> String {
    format!(
        "{} {:<6} {:<24} start={} end={} {}",
        s(&a["id"]),
        s(&a["level"]),
        s(&a["detector"]),
        time_ms(&a["start_ms"]),
        time_ms(&a["end_ms"]),
        s(&a["explanation"]),
    )
}

fn row(d: &Value) -> String {
    let st = &d["status"];
    let progress = match st["progress"].as_object() {
        Some(p) => format!(
            " series {}/{} step {}/{}",
            s(&p["series_done"]),
            s(&p["series_total"]),
            s(&p["epoch"]),
            s(&p["epochs"])
        ),
        None => String::new(),
    };
    let mut line = format!(
        "{:<32} {:<15} {:<9} series={:<4} {}{progress}",
        s(&d["name"]),
        s(&d["model"]["kind"]),
        s(&st["state"]),
        s(&st["series"]),
        s(&d["query"]),
    );
    if let Some(e) = st["error"].as_str() {
        line.push_str(&format!("\n    error: {e}"));
    }
    if let Some(f) = st["fallback"].as_str() {
        line.push_str(&format!("\n    fallback: {f}"));
    }
    line
}

/// Runs the subcommand; returns what to print.
pub fn run(args: &DetectorsArgs) -> anyhow::Result<String> {
    let client = ApiClient::http(
        args.url.as_deref(),
        Credentials {
            token: args.token.clone(),
            tenant: args.tenant.clone(),
        },
    )?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(dispatch(&client, args))
}

async fn dispatch(c: &ApiClient, args: &DetectorsArgs) -> anyhow::Result<String> {
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
    match &args.what {
        DetectorsCommand::List => {
            let v = c.get("/api/v1/detectors").await?;
            if args.json {
                return Ok(pretty(&v));
            }
            let items = v["detectors"].as_array().cloned().unwrap_or_default();
            if items.is_empty() {
                return Ok("no detectors".into());
            }
            Ok(items.iter().map(row).collect::<Vec<_>>().join("\n"))
        }
        DetectorsCommand::Show { name } => {
            let v = c.get(&format!("/api/v1/detectors/{name}")).await?;
            Ok(pretty(&v))
        }
        DetectorsCommand::Create { file, replace } => {
            let text = if file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())?
            } else {
                std::fs::read_to_string(file)
                    .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?
            };
            let spec: Value = serde_json::from_str(&text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            let v = if *replace {
                let name = spec["name"]
                    .as_str()
                    .ok_or_else(|| anyhow::anyhow!("the file has no \"name\""))?;
                c.json(
                    Method::PUT,
                    &format!("/api/v1/detectors/{name}"),
                    Some(&spec),
                )
                .await?
            } else {
                c.json(Method::POST, "/api/v1/detectors", Some(&spec))
                    .await?
            };
            Ok(if args.json { pretty(&v) } else { row(&v) })
        }
        DetectorsCommand::Delete { name } => {
            c.json(Method::DELETE, &format!("/api/v1/detectors/{name}"), None)
                .await?;
            Ok(format!("deleted {name}"))
        }
        DetectorsCommand::Run {
            name,
            wait,
            timeout_secs,
        } => {
            let before = c.get(&format!("/api/v1/detectors/{name}")).await?;
            let last_trained = before["status"]["last_trained_ms"].as_i64();
            c.json(Method::POST, &format!("/api/v1/detectors/{name}/run"), None)
                .await?;
            if !*wait {
                return Ok(format!("{name}: run requested"));
            }
            wait_for(c, name, last_trained, Duration::from_secs(*timeout_secs)).await
        }
        DetectorsCommand::Anomalies { detector, limit } => {
            let mut query = vec![("limit", limit.to_string())];
            if let Some(d) = detector {
                query.push(("detector", d.clone()));
            }
            let v = c.get(&with_query("/api/v1/anomalies", &query)).await?;
            if args.json {
                return Ok(pretty(&v));
            }
            let items = v["anomalies"].as_array().cloned().unwrap_or_default();
            if items.is_empty() {
                return Ok("no anomalies".into());
            }
            Ok(items
                .iter()
                .map(anomaly_line)
                .collect::<Vec<_>>()
                .join("\n"))
        }
    }
}

/// Poll until a training run newer than `since` finished, drawing its progress.
async fn wait_for(
    c: &ApiClient,
    name: &str,
    since: Option<i64>,
    timeout: Duration,
) -> anyhow::Result<String> {
    let bar = indicatif::ProgressBar::new(1);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {prefix} [{bar:30}] {pos}/{len} {msg}")?
            .progress_chars("=> "),
    );
    bar.set_prefix(name.to_owned());
    let started = Instant::now();
    loop {
        let v = c.get(&format!("/api/v1/detectors/{name}")).await?;
        let st = &v["status"];
        let state = st["state"].as_str().unwrap_or("");
        if let Some(p) = st["progress"].as_object() {
            let epochs = p["epochs"].as_u64().unwrap_or(1).max(1);
            let total = p["series_total"].as_u64().unwrap_or(1).max(1);
            bar.set_length(epochs * total);
            bar.set_position(
                p["series_done"].as_u64().unwrap_or(0) * epochs + p["epoch"].as_u64().unwrap_or(0),
            );
            bar.set_message(format!(
                "series {}/{} loss {} val {}",
                s(&p["series_done"]),
                s(&p["series_total"]),
                p["train_loss"]
                    .as_f64()
                    .map_or("-".into(), |x| format!("{x:.4}")),
                p["val_loss"]
                    .as_f64()
                    .map_or("-".into(), |x| format!("{x:.4}")),
            ));
        } else {
            bar.set_message(state.to_owned());
        }
        bar.tick();
        let trained = st["last_trained_ms"].as_i64();
        let done = trained.is_some() && trained != since && state != "training";
        if done || (state == "failed" && trained != since) {
            bar.finish_and_clear();
            return if state == "failed" {
                Err(anyhow::anyhow!(
                    "{name} failed: {}",
                    st["error"].as_str().unwrap_or("unknown error")
                ))
            } else {
                Ok(row(&v))
            };
        }
        if started.elapsed() > timeout {
            bar.abandon();
            anyhow::bail!("{name}: still {state} after {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anomaly_times_are_rfc3339() {
        let a = serde_json::json!({"id": "a1", "level": "high", "detector": "latency",
            "start_ms": 1_764_470_000_123_i64, "end_ms": null, "explanation": "p99 up"});
        let line = anomaly_line(&a);
        assert!(
            line.contains("start=2025-11-30T02:33:20.123Z end=- p99 up"),
            "{line}"
        );
    }
}
