//! `sightline demo`: the whole product on realistic LLM traffic in one command.
//!
//! Starts the real server in-process ([`sightline_server::serve::start`]), generates days of history of a
//! RAG chat service with four injected incidents ([`app`], [`traffic`], [`kpi`],
//! [`incidents`]), sends it through OTLP/HTTP protobuf to its own listener ([`otlp_out`]),
//! records the LLM quality series as metrics, creates detectors through the detectors API,
//! runs Granger tests quality -> KPIs through `POST /api/v1/detect/granger` ([`analysis`]),
//! prints what it found next to the injected truth ([`report`]) and keeps serving until
//! Ctrl-C / SIGTERM (`--live`: generating new traffic in real time meanwhile).
//!
//! Seeded and deterministic: the same `--seed`, `--days`, `--rate` and `--end` give the same
//! data, byte for byte. See docs/demo.md.

pub mod analysis;
pub mod app;
pub mod incidents;
pub mod kpi;
pub mod otlp_out;
pub mod report;
pub mod traffic;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::api_client::{ApiClient, Credentials};
use incidents::{Timeline, Truth};
use kpi::Kpis;
use sightline_server::config::{Config, FsyncMode, ServeArgs};
use traffic::{Batch, MAX_CONVERSATION_MIN, Traffic};

/// Flags of `sightline demo`.
#[derive(Debug, Clone, clap::Args)]
pub struct DemoArgs {
    /// Days of history to generate.
    #[arg(long, default_value_t = 1.0)]
    pub days: f64,
    /// Replay speed of the history: simulated minutes per real minute (0: as fast as possible).
    #[arg(long, default_value_t = 0.0)]
    pub speed: f64,
    /// Seed of the generator.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Keep generating traffic in real time after the history.
    #[arg(long)]
    pub live: bool,
    /// Data directory [default: a fresh directory under the system temp dir].
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// HTTP listener (OTLP/HTTP, query APIs) [default: 127.0.0.1:4318].
    #[arg(long, value_name = "ADDR")]
    pub http_addr: Option<SocketAddr>,
    /// OTLP/gRPC listener [default: 127.0.0.1:4317].
    #[arg(long, value_name = "ADDR")]
    pub grpc_addr: Option<SocketAddr>,
    /// Conversations started per minute (before the daily wave).
    #[arg(long, default_value_t = 12.0)]
    pub rate: f64,
    /// End of the history, Unix seconds [default: now, rounded down to the minute]; fix it
    /// for byte-identical reruns.
    #[arg(long, value_name = "SECS")]
    pub end: Option<i64>,
    /// Model of the demo's detectors: auto (rolling z-score for the noisy per-minute series,
    /// rolling median/MAD for the others), nbeats, seasonal_naive, zscore or median_mad.
    #[arg(long, default_value = "auto")]
    pub detector_model: String,
    /// Longest wait for the detectors to finish training, seconds.
    #[arg(long, default_value_t = 900)]
    pub detector_timeout_secs: u64,
}

/// What can stop the demo.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemoError {
    /// Bad flags.
    #[error("{0}")]
    Args(String),
    /// The server failed to start or stop.
    #[error(transparent)]
    Serve(#[from] sightline_server::ServeError),
    /// Configuration.
    #[error(transparent)]
    Config(#[from] sightline_server::ConfigError),
    /// A request to the demo's own server failed.
    #[error("request failed: {0}")]
    Http(#[from] crate::api_client::ApiError),
    /// The server answered something unexpected.
    #[error("{0}")]
    Api(String),
    /// Writing the truth or findings files.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

const MIN_MS: i64 = 60_000;
/// Spans per export request.
const SPANS_PER_REQUEST: usize = 4_000;

fn config(args: &DemoArgs) -> Result<Config, DemoError> {
    let data_dir = match &args.data_dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!(
            "sightline-demo-{}-{}",
            std::process::id(),
            sightline_query::time::now().as_millis()
        )),
    };
    let serve = ServeArgs {
        data_dir: Some(data_dir),
        http_addr: args.http_addr,
        grpc_addr: args.grpc_addr,
        fsync: Some(FsyncMode::Interval),
        ..Default::default()
    };
    Ok(Config::resolve(&serve)?)
}

/// The generator of one run: traffic, metrics and where they stand.
struct Generator {
    traffic: Traffic,
    kpis: Kpis,
    start_ms: i64,
    finished: i64,
}

impl Generator {
    /// Metrics of every minute before `upto` (exclusive) not yet finished.
    fn finish_until(&mut self, upto: i64) -> Vec<opentelemetry_proto::tonic::metrics::v1::Metric> {
        let mut out = Vec::new();
        while self.finished < upto {
            let m = self.finished;
            let minute = self.traffic.minutes.remove(&m).unwrap_or_default();
            out.extend(
                self.kpis
                    .finish_minute(m, self.start_ms + (m + 1) * MIN_MS, &minute),
            );
            self.finished += 1;
        }
        out
    }
}

async fn export(
    client: &ApiClient,
    batch: Batch,
    metrics: Vec<opentelemetry_proto::tonic::metrics::v1::Metric>,
) -> Result<(), DemoError> {
    for chunk in batch.spans.chunks(SPANS_PER_REQUEST) {
        client
            .export("traces", &otlp_out::traces_request(chunk.to_vec()))
            .await?;
    }
    for chunk in batch.logs.chunks(SPANS_PER_REQUEST) {
        client
            .export("logs", &otlp_out::logs_request(chunk.to_vec()))
            .await?;
    }
    for chunk in metrics.chunks(200) {
        client
            .export(
                "metrics",
                &otlp_out::metrics_request("shop-assistant", chunk.to_vec()),
            )
            .await?;
    }
    Ok(())
}

fn write_json(path: &std::path::Path, v: &impl serde::Serialize) -> Result<(), DemoError> {
    let text = serde_json::to_string_pretty(v).map_err(|e| DemoError::Api(e.to_string()))?;
    std::fs::write(path, text).map_err(|e| DemoError::Io(path.display().to_string(), e))
}

/// Runs the demo until SIGTERM/SIGINT.
pub async fn run(args: DemoArgs) -> Result<(), DemoError> {
    if !(args.days > 0.0 && args.days <= 30.0) {
        return Err(DemoError::Args("--days must be in (0, 30]".into()));
    }
    let rate_ok = args.rate > 0.0 && args.rate <= 1000.0;
    let speed_ok = args.speed.is_finite() && args.speed >= 0.0;
    if !(rate_ok && speed_ok) {
        return Err(DemoError::Args(
            "--rate must be in (0, 1000] and --speed >= 0".into(),
        ));
    }
    let config = config(&args)?;
    let data_dir = config.data_dir.clone();
    let server = sightline_server::serve::start(config).await?;
    let client = ApiClient::http(
        Some(&format!("http://{}", server.http_addr)),
        Credentials::default(),
    )?;
    let minutes = ((args.days * 1440.0).round() as i64).max(60);
    let end_ms = match args.end {
        Some(s) => s * 1000 / MIN_MS * MIN_MS,
        None => sightline_query::time::now().as_millis() / MIN_MS * MIN_MS,
    };
    let start_ms = end_ms - minutes * MIN_MS;
    let timeline = Timeline::new(start_ms, end_ms);
    let truth = Truth {
        seed: args.seed,
        start_ms,
        end_ms,
        incidents: timeline.incidents.clone(),
        edges: analysis::expected_edges(),
    };
    write_json(&data_dir.join("demo-truth.json"), &truth)?;
    eprintln!(
        "sightline demo: {} days of history ({} minutes, seed {}) into {}",
        args.days,
        minutes,
        args.seed,
        data_dir.display()
    );
    let mut generator = Generator {
        traffic: Traffic::new(args.seed, start_ms, timeline, args.rate),
        kpis: Kpis::new(args.seed, start_ms),
        start_ms,
        finished: 0,
    };
    // Backfill.
    let bar = indicatif::ProgressBar::new(minutes as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} sending history [{bar:40}] {pos}/{len} min  {msg}  ({eta} left)",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let (mut spans_sent, mut pending) = (0usize, Batch::default());
    let t0 = std::time::Instant::now();
    for m in 0..minutes {
        let b = generator.traffic.minute(m);
        pending.spans.extend(b.spans);
        pending.logs.extend(b.logs);
        let metrics = generator.finish_until(m - MAX_CONVERSATION_MIN);
        // (with --live, the last minutes' conversations reach past now: keep them for the end)
        let may_flush = !args.live || m < minutes - MAX_CONVERSATION_MIN;
        let due =
            pending.spans.len() >= SPANS_PER_REQUEST || !metrics.is_empty() && args.speed > 0.0;
        if may_flush && due {
            spans_sent += pending.spans.len();
            export(&client, std::mem::take(&mut pending), metrics).await?;
        } else if !metrics.is_empty() {
            export(&client, Batch::default(), metrics).await?;
        }
        bar.inc(1);
        bar.set_message(format!("{spans_sent} spans"));
        if args.speed > 0.0 {
            let due = Duration::from_secs_f64((m + 1) as f64 * 60.0 / args.speed);
            if let Some(wait) = due.checked_sub(t0.elapsed()) {
                tokio::time::sleep(wait).await;
            }
        }
    }
    // With --live, turns of conversations still in flight wait for their time; without it
    // the history's last conversations are sent whole (up to a few minutes ahead).
    let mut held = Batch::default();
    let metrics = if args.live {
        let now_ns =
            u64::try_from(sightline_query::time::now().as_millis()).unwrap_or(0) * 1_000_000;
        (pending.spans, held.spans) = std::mem::take(&mut pending.spans)
            .into_iter()
            .partition(|(_, sp)| sp.start_time_unix_nano <= now_ns);
        (pending.logs, held.logs) = std::mem::take(&mut pending.logs)
            .into_iter()
            .partition(|(_, l)| l.time_unix_nano <= now_ns);
        generator.finish_until(minutes - MAX_CONVERSATION_MIN)
    } else {
        generator.finish_until(minutes + MAX_CONVERSATION_MIN)
    };
    spans_sent += pending.spans.len();
    export(&client, pending, metrics).await?;
    bar.finish_with_message(format!("{spans_sent} spans"));
    eprintln!(
        "sent {spans_sent} spans in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    // Analysis.
    analysis::record_quality(&client, start_ms, end_ms).await?;
    let findings = analysis::analyse(&client, &args, &truth).await?;
    write_json(&data_dir.join("demo-findings.json"), &findings)?;
    println!("{}", report::render(&truth, &findings));
    let base = client.base().to_owned();
    println!(
        "Open:\n  {base}/ (the web UI: traces, waterfalls, tokens by entropy)\n  \
         {base}/api/v1/quality?metric=hallucination_index&by=model&start={}&end={}&step=60s\n  \
         {base}/api/v1/anomalies?start={}&end={}\n  {base}/api/v1/detectors\n  \
         Grafana: add a Prometheus datasource at {base} and Tempo/Loki datasources at {base}\n\
         Data: {}\nServing until Ctrl-C.",
        start_ms / 1000,
        end_ms / 1000,
        start_ms,
        end_ms,
        data_dir.display()
    );
    let stop = sightline_server::shutdown::signal();
    if args.live {
        let live = live(client.clone(), generator, minutes, held);
        tokio::select! {
            () = stop => {}
            r = live => r?,
        }
        server.run_until(async {}).await?;
    } else {
        server.run_until(stop).await?;
    }
    Ok(())
}

/// Keeps generating one simulated minute per real minute after the history. A conversation's
/// later turns are generated with it but held back until their time has come, so nothing is
/// sent ahead of the clock.
async fn live(
    client: ApiClient,
    mut g: Generator,
    mut m: i64,
    mut held: Batch,
) -> Result<(), DemoError> {
    loop {
        let now = sightline_query::time::now().as_millis();
        let mut metrics = Vec::new();
        // Minute m starts at start + m min; its conversations are generated then.
        while g.start_ms + m * MIN_MS <= now {
            let b = g.traffic.minute(m);
            held.spans.extend(b.spans);
            held.logs.extend(b.logs);
            metrics.extend(g.finish_until(m - MAX_CONVERSATION_MIN));
            m += 1;
        }
        let now_ns = u64::try_from(now).unwrap_or(0) * 1_000_000;
        let (spans, later): (Vec<_>, Vec<_>) = std::mem::take(&mut held.spans)
            .into_iter()
            .partition(|(_, sp)| sp.start_time_unix_nano <= now_ns);
        held.spans = later;
        let (logs, later): (Vec<_>, Vec<_>) = std::mem::take(&mut held.logs)
            .into_iter()
            .partition(|(_, l)| l.time_unix_nano <= now_ns);
        held.logs = later;
        if !spans.is_empty() || !logs.is_empty() || !metrics.is_empty() {
            export(&client, Batch { spans, logs }, metrics).await?;
            analysis::record_quality(&client, now - 10 * MIN_MS, now).await?;
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;

    /// Everything one seed generates over `minutes`, encoded as it goes on the wire.
    fn wire(seed: u64, minutes: i64) -> Vec<u8> {
        let start_ms = 1_780_272_000_000;
        let timeline = Timeline::new(start_ms, start_ms + minutes * MIN_MS);
        let mut g = Generator {
            traffic: Traffic::new(seed, start_ms, timeline, 12.0),
            kpis: Kpis::new(seed, start_ms),
            start_ms,
            finished: 0,
        };
        let mut out = Vec::new();
        for m in 0..minutes {
            let b = g.traffic.minute(m);
            out.extend(otlp_out::traces_request(b.spans).encode_to_vec());
            out.extend(otlp_out::logs_request(b.logs).encode_to_vec());
            let metrics = g.finish_until(m - MAX_CONVERSATION_MIN);
            out.extend(otlp_out::metrics_request("x", metrics).encode_to_vec());
        }
        out
    }

    #[test]
    fn same_seed_same_bytes() {
        let a = wire(7, 30);
        assert!(a.len() > 100_000, "{} bytes", a.len());
        assert_eq!(a, wire(7, 30));
        assert_ne!(a, wire(8, 30));
    }
}
