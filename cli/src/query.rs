//! `sightline query`: PromQL, aggregation, trace and log queries from the command line.
//!
//! Two ways to reach the data, one code path: against a running server (`--url`, with
//! `--token` or `--tenant`), requests go over HTTP; with `--data-dir`, the store is opened in
//! this process (it refuses while a server holds the directory) and the very same requests are
//! answered by the server's router in memory, without a socket. Either way the answer is the
//! native API's JSON, printed as a table, or as JSON with `--json`.
//!
//! Opening a data directory runs the same recovery the server runs at start (WAL replay,
//! quarantine of damaged segments); nothing is flushed or compacted and no data is changed.

use std::path::PathBuf;
use std::sync::Arc;

use axum::http::Method;
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use sightline_query::QueryError;
use sightline_query::time::{self, RelativeTime};
use sightline_server::auth::Auth;
use sightline_server::ingest::Ingest;
use sightline_server::limits::Limits;
use sightline_server::telemetry::Telemetry;

use crate::api_client::{ApiClient, Credentials, with_query};

mod args;
pub(crate) mod render;

pub use args::{AggregateArgs, LogSearchArgs, ProvenanceArgs, TraceSearchArgs};

/// Flags of `sightline query`.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// URL of a running server [default: http://127.0.0.1:4318].
    #[arg(
        long,
        env = "SIGHTLINE_URL",
        global = true,
        conflicts_with = "data_dir"
    )]
    pub url: Option<String>,
    /// Bearer token (servers started with --auth-tokens-file).
    #[arg(long, env = "SIGHTLINE_TOKEN", global = true)]
    pub token: Option<String>,
    /// Tenant, sent as X-Scope-OrgID (servers without auth, and --data-dir) [default: default].
    #[arg(long, env = "SIGHTLINE_TENANT", global = true)]
    pub tenant: Option<String>,
    /// Read a data directory directly instead of asking a server (the server must be stopped).
    #[arg(long, value_name = "DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// Print the API's JSON instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
    /// What to ask.
    #[command(subcommand)]
    pub what: QueryCommand,
}

/// Query kinds.
#[derive(Debug, Subcommand)]
pub enum QueryCommand {
    /// A PromQL expression: instant at --time (default now), or a range with --start/--end/--step.
    ///
    /// Example: sightline query promql 'sum by (gen_ai_request_model) (rate(gen_ai_client_token_usage_sum[5m]))' --start -1h --step 1m
    Promql {
        /// The expression.
        expr: String,
        /// Evaluation time of an instant query (RFC 3339, Unix seconds, or -DURATION from now).
        #[arg(long)]
        time: Option<String>,
        /// Start of a range query (RFC 3339, Unix seconds, or -DURATION from now).
        #[arg(long, allow_hyphen_values = true)]
        start: Option<String>,
        /// End of a range query [default: now].
        #[arg(long, allow_hyphen_values = true)]
        end: Option<String>,
        /// Step of a range query (a duration such as 30s or 1m) [default: 1m].
        #[arg(long)]
        step: Option<String>,
    },
    /// Aggregate spans or logs: group by keys and time buckets, count, sum, avg, min, max,
    /// quantiles, error ratio, rate; or list the top rows by a field.
    ///
    /// Example: sightline query aggregate --since 1h --group-by gen_ai.request.model --bucket 5m --agg count --agg p99:duration --agg error_ratio
    Aggregate(AggregateArgs),
    /// One trace by id: its spans as a tree with durations, the critical path marked with `*`.
    Trace {
        /// Trace id (hex).
        id: String,
    },
    /// Search traces (or spans with --spans) by service, name, status, duration, GenAI fields,
    /// attributes or TraceQL.
    ///
    /// Example: sightline query traces --since 1h --model gpt-4o --min-duration 2s --status error
    Traces(TraceSearchArgs),
    /// Search logs: full text (words, "phrases", OR, -excluded, prefix*) with filters, newest first.
    ///
    /// Example: sightline query logs timeout --service llm-router --min-severity warn --since 30m
    Logs(LogSearchArgs),
    /// RAG provenance: the scored answers (newest first) that used a document, or that have
    /// sentences no retrieved document supports; with --by, those answers counted per model,
    /// route, prompt template, service or provider.
    ///
    /// Examples: sightline query provenance --document kb-1234 --since 24h;
    /// sightline query provenance --unsupported --by prompt_template --since 24h
    Provenance(ProvenanceArgs),
    /// Usage per retrieved document (answers it was context of, answers and sentences it
    /// supports) and per-retrieval measures.
    ///
    /// Example: sightline query documents --since 24h --model gpt-4o
    Documents(ProvenanceArgs),
}

/// The client of `--url`, or of the server's router over the store of `--data-dir` opened in
/// this process.
fn open_client(args: &QueryArgs) -> anyhow::Result<ApiClient> {
    let credentials = Credentials {
        token: args.token.clone(),
        tenant: args.tenant.clone(),
    };
    let Some(dir) = &args.data_dir else {
        return Ok(ApiClient::http(args.url.as_deref(), credentials)?);
    };
    if !dir.exists() {
        anyhow::bail!("{} does not exist", dir.display());
    }
    let config = sightline_storage::StoreConfig {
        background: false,
        ..sightline_storage::StoreConfig::default()
    };
    let store = sightline_storage::Store::open(dir, config).map_err(|e| match e {
        sightline_storage::StorageError::Locked(_) => anyhow::anyhow!(
            "{} is in use by a running server; ask it with --url instead",
            dir.display()
        ),
        e => e.into(),
    })?;
    let ingest = Ingest::new(
        Arc::new(store),
        Limits::default(),
        Auth::Off,
        Arc::new(Telemetry::new()),
    );
    let router = sightline_server::http::router(Arc::new(ingest).into());
    Ok(ApiClient::in_process(router, credentials))
}

/// A time argument ([`RelativeTime`]: `now`, `-DURATION` before now, RFC 3339 or Unix
/// seconds) as Unix seconds text: nine decimals for an absolute time, three for a relative one.
fn time_arg(s: &str) -> anyhow::Result<String> {
    match RelativeTime::parse(s).map_err(QueryError::from)? {
        RelativeTime::At(t) => Ok(format!("{:.9}", t.0 as f64 / 1e9)),
        RelativeTime::Ago(d) => Ok(format!("{:.3}", now_secs() - d.0 as f64 / 1e9)),
        RelativeTime::Now => Ok(format!("{:.3}", now_secs())),
    }
}

/// Now as float Unix seconds.
fn now_secs() -> f64 {
    time::unix_secs_f64(time::now())
}

/// Parses `KEY=V`, `KEY!=V`, `KEY=~RE`, `KEY!~RE`.
fn matcher_arg(s: &str) -> anyhow::Result<Value> {
    for op in ["!=", "=~", "!~", "="] {
        if let Some(i) = s.find(op) {
            // `=` must not be the first char of `=~`.
            if op == "=" && s[i..].starts_with("=~") {
                continue;
            }
            let (k, v) = (&s[..i], &s[i + op.len()..]);
            if k.is_empty() {
                break;
            }
            return Ok(json!({"key": k, "op": op, "value": v.trim_matches('"')}));
        }
    }
    Err(anyhow::anyhow!(
        "cannot parse matcher {s:?}; use KEY=VALUE, KEY!=VALUE, KEY=~REGEX or KEY!~REGEX"
    ))
}

/// Parses `FIELD>VALUE` and friends; `duration` values take units.
fn filter_arg(s: &str) -> anyhow::Result<Value> {
    for op in [">=", "<=", "!=", ">", "<", "="] {
        if let Some(i) = s.find(op) {
            let (field, v) = (s[..i].trim(), s[i + op.len()..].trim());
            let value = match v.parse::<f64>() {
                Ok(x) if field != "duration" => x,
                _ => time::parse_duration(v)? as f64,
            };
            return Ok(json!({"field": field, "op": op, "value": value}));
        }
    }
    Err(anyhow::anyhow!(
        "cannot parse filter {s:?}; use FIELD>VALUE (>=, <, <=, =, !=)"
    ))
}

/// Parses `count`, `rate`, `error_ratio`, `sum:F`, `p99:F`, `quantile:0.9:F`.
fn agg_arg(s: &str) -> anyhow::Result<Value> {
    let parts: Vec<&str> = s.split(':').collect();
    Ok(match parts.as_slice() {
        [f @ ("count" | "rate" | "error_ratio")] => json!({"func": f}),
        [f @ ("sum" | "avg" | "min" | "max"), field] => json!({"func": f, "field": field}),
        ["quantile", q, field] => {
            let q: f64 = q
                .parse()
                .map_err(|_| anyhow::anyhow!("bad quantile in {s:?}"))?;
            json!({"func": {"quantile": q}, "field": field})
        }
        [p, field] if p.starts_with('p') => {
            let n: f64 = p[1..]
                .parse()
                .map_err(|_| anyhow::anyhow!("bad percentile in {s:?}"))?;
            json!({"func": {"quantile": n / 100.0}, "field": field})
        }
        _ => {
            return Err(anyhow::anyhow!(
                "cannot parse aggregate {s:?}; use count, rate, error_ratio, sum:F, avg:F, min:F, max:F, p99:F or quantile:Q:F"
            ));
        }
    })
}

/// `(start, end)` parameters from --since / --start / --end, as Unix seconds.
fn range_args(
    since: &Option<String>,
    start: &Option<String>,
    end: &Option<String>,
) -> anyhow::Result<Vec<(&'static str, String)>> {
    let mut out = Vec::new();
    match (since, start) {
        (Some(d), _) => out.push(("start", time_arg(&format!("-{d}"))?)),
        (None, Some(s)) => out.push(("start", time_arg(s)?)),
        (None, None) => {}
    }
    if let Some(e) = end {
        out.push(("end", time_arg(e)?));
    }
    Ok(out)
}

fn trace_search_params(a: &TraceSearchArgs) -> anyhow::Result<Vec<(&'static str, String)>> {
    let mut p = range_args(&a.since, &a.start, &a.end)?;
    for (k, v) in [
        ("service", &a.service),
        ("name", &a.name),
        ("status", &a.status),
        ("model", &a.model),
        ("provider", &a.provider),
        ("operation", &a.operation),
        ("min_duration", &a.min_duration),
        ("max_duration", &a.max_duration),
        ("q", &a.traceql),
        ("sort", &a.sort),
        ("cursor", &a.cursor),
    ] {
        if let Some(v) = v {
            p.push((k, v.clone()));
        }
    }
    for m in &a.attrs {
        matcher_arg(m)?;
        p.push(("attr", m.clone()));
    }
    if a.spans {
        p.push(("group", "spans".into()));
    }
    if let Some(l) = a.limit {
        p.push(("limit", l.to_string()));
    }
    Ok(p)
}

fn log_search_params(a: &LogSearchArgs) -> anyhow::Result<Vec<(&'static str, String)>> {
    let mut p = range_args(&a.since, &a.start, &a.end)?;
    for (k, v) in [
        ("query", &a.text),
        ("service", &a.service),
        ("severity", &a.severity),
        ("min_severity", &a.min_severity),
        ("trace_id", &a.trace_id),
        ("cursor", &a.cursor),
    ] {
        if let Some(v) = v {
            p.push((k, v.clone()));
        }
    }
    for m in &a.filters {
        matcher_arg(m)?;
        p.push(("filter", m.clone()));
    }
    if a.forward {
        p.push(("direction", "forward".into()));
    }
    if let Some(l) = a.limit {
        p.push(("limit", l.to_string()));
    }
    Ok(p)
}

fn provenance_params(a: &ProvenanceArgs) -> anyhow::Result<Vec<(&'static str, String)>> {
    let mut p = range_args(&a.since, &a.start, &a.end)?;
    for (k, v) in [
        ("document", &a.document),
        ("route", &a.route),
        ("prompt_template", &a.prompt_template),
        ("by", &a.by),
        ("service", &a.service),
        ("model", &a.model),
        ("provider", &a.provider),
    ] {
        if let Some(v) = v {
            p.push((k, v.clone()));
        }
    }
    if a.unsupported {
        p.push(("unsupported", "true".into()));
    }
    if let Some(l) = a.limit {
        p.push(("limit", l.to_string()));
    }
    Ok(p)
}

fn aggregate_body(a: &AggregateArgs) -> anyhow::Result<Value> {
    let start = match (&a.since, &a.start) {
        (Some(d), _) => Some(time_arg(&format!("-{d}"))?),
        (None, Some(s)) => Some(time_arg(s)?),
        (None, None) => None,
    };
    let end = a.end.as_deref().map(time_arg).transpose()?;
    let order_by = a.order_by.as_ref().map(|o| match o.parse::<usize>() {
        Ok(i) => json!({"by": {"aggregate": i}, "descending": a.desc}),
        Err(_) => json!({"by": {"field": o}, "descending": a.desc}),
    });
    Ok(json!({
        "signal": a.signal,
        "start": start,
        "end": end,
        "matchers": a.matchers.iter().map(|m| matcher_arg(m)).collect::<Result<Vec<_>, _>>()?,
        "text": a.text,
        "filters": a.filters.iter().map(|f| filter_arg(f)).collect::<Result<Vec<_>, _>>()?,
        "group_by": a.group_by,
        "bucket": a.bucket,
        "aggregates": a.aggregates.iter().map(|g| agg_arg(g)).collect::<Result<Vec<_>, _>>()?,
        "columns": a.columns,
        "order_by": order_by,
        "limit": a.limit,
    }))
}

/// Runs `sightline query` and returns what to print.
pub fn run(args: &QueryArgs) -> anyhow::Result<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(run_async(args))
}

async fn run_async(args: &QueryArgs) -> anyhow::Result<String> {
    let client = open_client(args)?;
    match &args.what {
        QueryCommand::Promql {
            expr,
            time,
            start,
            end,
            step,
        } => {
            let (path, mut pairs) = match start {
                Some(s) => (
                    "/api/v1/query_range",
                    vec![
                        ("start", time_arg(s)?),
                        (
                            "end",
                            end.as_deref()
                                .map(time_arg)
                                .transpose()?
                                .unwrap_or_else(|| format!("{:.3}", now_secs())),
                        ),
                        ("step", step.clone().unwrap_or_else(|| "1m".into())),
                    ],
                ),
                None => (
                    "/api/v1/query",
                    vec![(
                        "time",
                        time.as_deref()
                            .map(time_arg)
                            .transpose()?
                            .unwrap_or_else(|| format!("{:.3}", now_secs())),
                    )],
                ),
            };
            pairs.push(("query", expr.clone()));
            let v = client.get(&with_query(path, &pairs)).await?;
            Ok(if args.json {
                v.to_string()
            } else {
                render::promql(&v)
            })
        }
        QueryCommand::Trace { id } => {
            if id.is_empty() || !id.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(anyhow::anyhow!("{id:?} is not a hex trace id"));
            }
            let v = client.get(&format!("/api/v1/traces/{id}")).await?;
            Ok(if args.json {
                v.to_string()
            } else {
                render::trace(&v["data"])
            })
        }
        QueryCommand::Traces(a) => {
            let path = with_query("/api/v1/traces/search", &trace_search_params(a)?);
            let v = client.get(&path).await?;
            Ok(if args.json {
                v.to_string()
            } else {
                render::trace_search(&v["data"])
            })
        }
        QueryCommand::Logs(a) => {
            let path = with_query("/api/v1/logs/search", &log_search_params(a)?);
            let v = client.get(&path).await?;
            Ok(if args.json {
                v.to_string()
            } else {
                render::logs(&v["data"])
            })
        }
        QueryCommand::Provenance(a) => {
            let route = match a.by {
                Some(_) => "/api/v1/quality/provenance/groups",
                None => "/api/v1/quality/provenance",
            };
            let path = with_query(route, &provenance_params(a)?);
            let v = client.get(&path).await?;
            Ok(if args.json {
                v.to_string()
            } else if a.by.is_some() {
                render::provenance_groups(&v)
            } else {
                render::provenance(&v)
            })
        }
        QueryCommand::Documents(a) => {
            let path = with_query("/api/v1/quality/documents", &provenance_params(a)?);
            let v = client.get(&path).await?;
            Ok(if args.json {
                v.to_string()
            } else {
                render::documents(&v)
            })
        }
        QueryCommand::Aggregate(a) => {
            let body = aggregate_body(a)?;
            let v = client
                .json(Method::POST, "/api/v1/aggregate", Some(&body))
                .await?;
            Ok(if args.json {
                v.to_string()
            } else {
                render::table(&v["data"])
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_parsers() {
        assert_eq!(
            matcher_arg("gen_ai.request.model=~gpt-.*").ok(),
            Some(json!({"key": "gen_ai.request.model", "op": "=~", "value": "gpt-.*"}))
        );
        assert_eq!(
            matcher_arg("user.id!=u1").ok(),
            Some(json!({"key": "user.id", "op": "!=", "value": "u1"}))
        );
        assert!(matcher_arg("=x").is_err());
        assert_eq!(
            filter_arg("duration>2s").ok(),
            Some(json!({"field": "duration", "op": ">", "value": 2e9}))
        );
        assert_eq!(
            filter_arg("gen_ai.usage.input_tokens>=100").ok(),
            Some(json!({"field": "gen_ai.usage.input_tokens", "op": ">=", "value": 100.0}))
        );
        assert_eq!(
            agg_arg("p99:duration").ok(),
            Some(json!({"func": {"quantile": 0.99}, "field": "duration"}))
        );
        assert!(agg_arg("median").is_err());
        assert!(time_arg("-1h").is_ok());
        assert!(time_arg("-x").is_err());
        assert_eq!(time_arg("1.5").ok(), Some("1.500000000".into()));
        assert_eq!(
            time_arg("-x").map_err(|e| e.to_string()),
            Err("bad request: cannot parse \"x\" as a duration".into())
        );
        let now: f64 = time_arg("now").unwrap_or_default().parse().unwrap_or(0.0);
        let hour_ago: f64 = time_arg("-1h").unwrap_or_default().parse().unwrap_or(0.0);
        assert!((now - hour_ago - 3600.0).abs() < 5.0, "{now} {hour_ago}");
    }
}
