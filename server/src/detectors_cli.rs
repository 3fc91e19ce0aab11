//! `sightline detectors`: manage the anomaly detectors of a running server over its HTTP API
//! (`--url`, with `--token` or `--tenant`): `list`, `show NAME`, `create --file spec.json`
//! (`--replace` to PUT over an existing one), `delete NAME`, `run NAME [--wait]` (a progress
//! bar of the training until the detector is ready or failed), and `anomalies`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use axum::body::Body;
use clap::{Args, Subcommand};
use http_body_util::BodyExt as _;
use serde_json::Value;

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

struct Client {
    base: String,
    token: Option<String>,
    tenant: Option<String>,
    http: hyper_util::client::legacy::Client<
        hyper_util::client::legacy::connect::HttpConnector,
        Body,
    >,
}

impl Client {
    async fn call(&self, method: &str, path: &str, body: Option<String>) -> Result<Value, String> {
        let mut req = axum::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        if let Some(t) = &self.token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if let Some(t) = &self.tenant {
            req = req.header("x-scope-orgid", t);
        }
        let body = match body {
            Some(b) => {
                req = req.header("content-type", "application/json");
                Body::from(b)
            }
            None => Body::empty(),
        };
        let req = req.body(body).map_err(|e| e.to_string())?;
        let resp = self
            .http
            .request(req)
            .await
            .map_err(|e| format!("cannot reach {}: {e}", self.base))?;
        let status = resp.status().as_u16();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let v: Value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        if !(200..300).contains(&status) {
            let msg = v
                .get("error")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| v.to_string());
            return Err(format!("HTTP {status}: {msg}"));
        }
        Ok(v)
    }
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
        |ms| crate::query_cli::render::time_ns(ms.saturating_mul(1_000_000)),
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
pub fn run(args: &DetectorsArgs) -> Result<String, String> {
    let base = args
        .url
        .clone()
        .unwrap_or_else(|| "http://127.0.0.1:4318".to_owned())
        .trim_end_matches('/')
        .to_owned();
    if !base.starts_with("http://") {
        return Err(format!(
            "--url must be an http:// URL (put TLS in a proxy in front): {base}"
        ));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let c = Client {
            base,
            token: args.token.clone(),
            tenant: args.tenant.clone(),
            http: hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http(),
        };
        dispatch(&c, args).await
    })
}

async fn dispatch(c: &Client, args: &DetectorsArgs) -> Result<String, String> {
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
    match &args.what {
        DetectorsCommand::List => {
            let v = c.call("GET", "/api/v1/detectors", None).await?;
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
            let v = c
                .call("GET", &format!("/api/v1/detectors/{name}"), None)
                .await?;
            Ok(pretty(&v))
        }
        DetectorsCommand::Create { file, replace } => {
            let text = if file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin()).map_err(|e| e.to_string())?
            } else {
                std::fs::read_to_string(file)
                    .map_err(|e| format!("cannot read {}: {e}", file.display()))?
            };
            let spec: Value =
                serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
            let v = if *replace {
                let name = spec["name"].as_str().ok_or("the file has no \"name\"")?;
                c.call(
                    "PUT",
                    &format!("/api/v1/detectors/{name}"),
                    Some(text.clone()),
                )
                .await?
            } else {
                c.call("POST", "/api/v1/detectors", Some(text.clone()))
                    .await?
            };
            Ok(if args.json { pretty(&v) } else { row(&v) })
        }
        DetectorsCommand::Delete { name } => {
            c.call("DELETE", &format!("/api/v1/detectors/{name}"), None)
                .await?;
            Ok(format!("deleted {name}"))
        }
        DetectorsCommand::Run {
            name,
            wait,
            timeout_secs,
        } => {
            let before = c
                .call("GET", &format!("/api/v1/detectors/{name}"), None)
                .await?;
            let last_trained = before["status"]["last_trained_ms"].as_i64();
            c.call("POST", &format!("/api/v1/detectors/{name}/run"), None)
                .await?;
            if !*wait {
                return Ok(format!("{name}: run requested"));
            }
            wait_for(c, name, last_trained, Duration::from_secs(*timeout_secs)).await
        }
        DetectorsCommand::Anomalies { detector, limit } => {
            let mut path = format!("/api/v1/anomalies?limit={limit}");
            if let Some(d) = detector {
                path.push_str(&format!("&detector={d}"));
            }
            let v = c.call("GET", &path, None).await?;
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
    c: &Client,
    name: &str,
    since: Option<i64>,
    timeout: Duration,
) -> Result<String, String> {
    let bar = indicatif::ProgressBar::new(1);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {prefix} [{bar:30}] {pos}/{len} {msg}")
            .map_err(|e| e.to_string())?
            .progress_chars("=> "),
    );
    bar.set_prefix(name.to_owned());
    let started = Instant::now();
    loop {
        let v = c
            .call("GET", &format!("/api/v1/detectors/{name}"), None)
            .await?;
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
                Err(format!(
                    "{name} failed: {}",
                    st["error"].as_str().unwrap_or("unknown error")
                ))
            } else {
                Ok(row(&v))
            };
        }
        if started.elapsed() > timeout {
            bar.abandon();
            return Err(format!("{name}: still {state} after {timeout:?}"));
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
