//! `otlp-load`: a load generator for a running `sightline serve`.
//!
//! Posts OTLP/HTTP protobuf batches (LLM-like spans with GenAI attributes, metric data points,
//! or log lines) over N keep-alive connections, each waiting for the durable acknowledgement
//! before sending the next, and reports throughput, server CPU microseconds per item (from
//! `/proc/<pid>/stat`), p50/p99 acknowledgement latency and the server's peak RSS (`VmHWM`),
//! with a progress line (rate, refusals, slowest ack, server RSS) every `--progress-every`
//! seconds. `--spread-hours` sends spans spread over a time window with chosen cardinalities
//! (services, span names, models, users, spans per trace) instead of every span at now.
//!
//! ```text
//! otlp-load --addr 127.0.0.1:4318 --pid $(pidof sightline) --signal all --seconds 10
//! otlp-load --pid $(pidof sightline) --signal traces --rate 100000 --seconds 600 --spread-hours 24
//! ```

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use sightline_server::loadgen::{
    SpanShape, logs_body, metrics_body, traces_body, traces_body_shaped,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// Load generator for OTLP/HTTP ingest.
#[derive(Debug, Parser)]
#[command(name = "otlp-load")]
struct Args {
    /// Server HTTP address.
    #[arg(long, default_value = "127.0.0.1:4318")]
    addr: SocketAddr,
    /// Server process id (for CPU time and peak RSS); omitted: not reported.
    #[arg(long)]
    pid: Option<u32>,
    /// traces, metrics, logs or all.
    #[arg(long, default_value = "all")]
    signal: String,
    /// Concurrent connections.
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// Items per request.
    #[arg(long, default_value_t = 512)]
    batch: usize,
    /// Seconds per signal.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Offered load in items (spans, samples, lines) per second across all connections; each
    /// connection sends on a fixed schedule and latency counts from the scheduled send time,
    /// so a server that falls behind shows it (no coordinated omission). 0: as fast as the
    /// server acknowledges (closed loop).
    #[arg(long, default_value_t = 0)]
    rate: u64,
    /// X-Scope-OrgID to send.
    #[arg(long, default_value = "load")]
    tenant: String,
    /// Distinct pre-encoded request bodies, sent round-robin (more bodies: more distinct ids
    /// and values, more client memory).
    #[arg(long, default_value_t = 64)]
    bodies: u64,
    /// Spans only: spread trace start times over this many hours before now (0: every span
    /// starts now, with the fixed cardinalities of the default body). A spread switches to the
    /// shaped spans below.
    #[arg(long, default_value_t = 0.0)]
    spread_hours: f64,
    /// Shaped spans: distinct services (one per request).
    #[arg(long, default_value_t = 10)]
    services: u64,
    /// Shaped spans: distinct span names.
    #[arg(long, default_value_t = 50)]
    names: u64,
    /// Shaped spans: distinct models (at most 12).
    #[arg(long, default_value_t = 6)]
    models: u64,
    /// Shaped spans: distinct `user.id`s, one per trace.
    #[arg(long, default_value_t = 100_000)]
    users: u64,
    /// Shaped spans: spans per trace.
    #[arg(long, default_value_t = 5)]
    spans_per_trace: u64,
    /// Print the achieved rate, refusals and server RSS every this many seconds (0: only the
    /// summary).
    #[arg(long, default_value_t = 10)]
    progress_every: u64,
}

impl Args {
    fn shape(&self) -> Option<SpanShape> {
        (self.spread_hours > 0.0).then_some(SpanShape {
            spread_nanos: (self.spread_hours * 3600e9) as u64,
            services: self.services,
            names: self.names,
            models: self.models,
            users: self.users,
            spans_per_trace: self.spans_per_trace,
        })
    }
}

/// One request on a keep-alive connection; returns the status code.
async fn post(
    conn: &mut TcpStream,
    addr: SocketAddr,
    path: &str,
    tenant: &str,
    body: &[u8],
    buf: &mut Vec<u8>,
) -> anyhow::Result<u16> {
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-protobuf\r\nX-Scope-OrgID: {tenant}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).await?;
    conn.write_all(body).await?;
    buf.clear();
    let mut chunk = [0u8; 4096];
    loop {
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            bail!("connection closed");
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let headers = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let status: u16 = headers
                .split_whitespace()
                .nth(1)
                .and_then(|x| x.parse().ok())
                .context("status")?;
            let len: usize = headers
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = conn.read(&mut chunk).await?;
                if n == 0 {
                    bail!("connection closed");
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            return Ok(status);
        }
    }
}

fn proc_cpu_micros(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks * 10_000) // USER_HZ = 100 on Linux
}

/// A `/proc/<pid>/status` field in KiB (`VmHWM:` peak RSS, `VmRSS:` current).
fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn proc_hwm_kib(pid: u32) -> Option<u64> {
    proc_status_kib(pid, "VmHWM:")
}

fn proc_rss_kib(pid: u32) -> Option<u64> {
    proc_status_kib(pid, "VmRSS:")
}

async fn run_signal(args: &Args, signal: &str) -> anyhow::Result<()> {
    type MakeBody = fn(u64, usize) -> Vec<u8>;
    let (path, make): (&str, MakeBody) = match signal {
        "traces" => ("/v1/traces", traces_body),
        "metrics" => ("/v1/metrics", metrics_body),
        "logs" => ("/v1/logs", logs_body),
        other => bail!("unknown signal {other}"),
    };
    let shape = args.shape().filter(|_| signal == "traces");
    let made = Instant::now();
    let bodies: Vec<Vec<u8>> = (0..args.bodies.max(1))
        .map(|i| match &shape {
            Some(sh) => traces_body_shaped(i, args.batch, sh),
            None => make(i, args.batch),
        })
        .collect();
    eprintln!(
        "{signal}: {} bodies of {} items ({:.1} MiB) made in {:.1} s",
        bodies.len(),
        args.batch,
        bodies.iter().map(Vec::len).sum::<usize>() as f64 / (1 << 20) as f64,
        made.elapsed().as_secs_f64()
    );
    let bodies = std::sync::Arc::new(bodies);
    let cpu0 = args.pid.and_then(proc_cpu_micros);
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.seconds);
    // Open loop: each connection sends every `interval`, staggered across connections.
    let interval = (args.rate > 0).then(|| {
        Duration::from_secs_f64(args.batch as f64 * args.connections as f64 / args.rate as f64)
    });
    let live = std::sync::Arc::new(Live::default());
    let reporter = (args.progress_every > 0).then(|| {
        let (live, every, pid, batch) = (live.clone(), args.progress_every, args.pid, args.batch);
        tokio::spawn(async move {
            let mut last = (0u64, 0u64);
            let mut tick = tokio::time::interval(Duration::from_secs(every));
            tick.tick().await;
            loop {
                tick.tick().await;
                let acked = live.acked.load(Ordering::Relaxed);
                let refused = live.refused.load(Ordering::Relaxed);
                let max = live.max_micros.swap(0, Ordering::Relaxed);
                eprintln!(
                    "  {:>5.0} s: {:.0} items/s, {} refused, slowest ack {:.0} ms{}",
                    started.elapsed().as_secs_f64(),
                    (acked - last.0) as f64 * batch as f64 / every as f64,
                    refused - last.1,
                    max as f64 / 1000.0,
                    pid.and_then(proc_rss_kib)
                        .map(|k| format!(", server RSS {:.0} MiB", k as f64 / 1024.0))
                        .unwrap_or_default()
                );
                last = (acked, refused);
            }
        })
    });
    let mut tasks = Vec::new();
    for c in 0..args.connections {
        let bodies = bodies.clone();
        let live = live.clone();
        let (addr, tenant) = (args.addr, args.tenant.clone());
        let conns = args.connections.max(1) as u32;
        tasks.push(tokio::spawn(async move {
            let mut conn = TcpStream::connect(addr).await?;
            conn.set_nodelay(true)?;
            let mut lat = Vec::new();
            let mut errors = 0u64;
            let mut buf = Vec::with_capacity(8192);
            let mut i = c;
            let mut next = started + interval.map_or(Duration::ZERO, |iv| iv * c as u32 / conns);
            loop {
                let t = match interval {
                    Some(iv) => {
                        let due = next;
                        next += iv;
                        if due > Instant::now() {
                            tokio::time::sleep_until(due.into()).await;
                        }
                        due
                    }
                    None => Instant::now(),
                };
                if t >= deadline {
                    break;
                }
                let status = post(
                    &mut conn,
                    addr,
                    path,
                    &tenant,
                    &bodies[i % bodies.len()],
                    &mut buf,
                )
                .await?;
                if status == 200 {
                    let micros = t.elapsed().as_micros() as u64;
                    lat.push(micros);
                    live.acked.fetch_add(1, Ordering::Relaxed);
                    live.max_micros.fetch_max(micros, Ordering::Relaxed);
                } else {
                    errors += 1;
                    live.refused.fetch_add(1, Ordering::Relaxed);
                }
                i += STRIDE;
            }
            anyhow::Ok((lat, errors))
        }));
    }
    let mut lat = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await??;
        lat.extend(l);
        errors += e;
    }
    if let Some(r) = reporter {
        r.abort();
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu1 = args.pid.and_then(proc_cpu_micros);
    lat.sort_unstable();
    let items = lat.len() as f64 * args.batch as f64;
    let pct = |q: f64| {
        lat.get(((lat.len() as f64 - 1.0) * q) as usize)
            .copied()
            .unwrap_or(0) as f64
            / 1000.0
    };
    let unit = match signal {
        "traces" => "spans",
        "metrics" => "samples",
        _ => "lines",
    };
    println!(
        "{signal}: {:.0} {unit}/s{} ({} requests of {}, {errors} errors, {:.1} s), ack latency p50 {:.2} ms p99 {:.2} ms{}{}",
        items / elapsed,
        if args.rate > 0 {
            format!(" (offered {})", args.rate)
        } else {
            String::new()
        },
        lat.len(),
        args.batch,
        elapsed,
        pct(0.5),
        pct(0.99),
        match (cpu0, cpu1) {
            (Some(a), Some(b)) if items > 0.0 => format!(
                ", server CPU {:.2} us/{}",
                (b - a) as f64 / items,
                unit.trim_end_matches('s')
            ),
            _ => String::new(),
        },
        args.pid
            .and_then(proc_hwm_kib)
            .map(|k| format!(", server peak RSS {:.1} MiB", k as f64 / 1024.0))
            .unwrap_or_default(),
    );
    Ok(())
}

/// Counters the connections update as they go, for the progress lines.
#[derive(Default)]
struct Live {
    acked: AtomicU64,
    refused: AtomicU64,
    max_micros: AtomicU64,
}

/// Step between the pre-built bodies one connection sends (co-prime with their count).
const STRIDE: usize = 7;

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let signals: Vec<&str> = match args.signal.as_str() {
        "all" => vec!["traces", "metrics", "logs"],
        one => vec![one],
    };
    rt.block_on(async {
        for s in signals {
            run_signal(&args, s).await?;
        }
        anyhow::Ok(())
    })
}
