//! What the demo asks Sightline after the history is in, all through the HTTP APIs:
//!
//! 1. **Recording quality**: `GET /api/v1/quality` per metric (per model; context expansion
//!    per route) at a 60 s step, written back through OTLP as the gauges
//!    `sightline.quality.<metric>` (PromQL `sightline_quality_<metric>{model|route=..}`), so
//!    detectors and Granger tests, which read PromQL, can use them (a recording rule).
//! 2. **Detectors**: one per incident signal through `POST /api/v1/detectors`, waiting on
//!    `GET /api/v1/detectors` until each is `ready` or `failed`, then
//!    `GET /api/v1/anomalies` over the history.
//! 3. **Granger**: `POST /api/v1/detect/granger` (PromQL form) from the mean hallucination
//!    index to each KPI.

use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use opentelemetry_proto::tonic::metrics::v1::{
    Gauge, Metric, NumberDataPoint, metric::Data, number_data_point,
};
use serde_json::{Value, json};

use super::incidents::{CONVERSION_LAG_MIN, CSAT_LAG_MIN, ExpectedEdge, Truth};
use super::otlp_out::{metrics_request, s};
use super::report::{Anomaly, DemoDetector, EdgeFinding, Findings, score};
use super::{DemoArgs, DemoError};
use crate::api_client::{Answer, ApiClient};

/// Quality metrics recorded as gauges, with the grouping used.
pub const RECORDED: [(&str, &str); 5] = [
    ("hallucination_index", "model"),
    ("hallucination_index", "operation"),
    ("token_entropy_mean", "model"),
    ("cache_hit_ratio", "model"),
    ("context_expansion", "route"),
];
/// Granger: cause series (PromQL): the mean index over all chat calls of each minute (one
/// series with a value every minute; an average of per-model series would carry stale values
/// of models without calls in a minute, blurring the lag).
pub const QUALITY_CAUSE: &str = "sightline_quality_hallucination_index{operation=\"chat\"}";
/// Granger: largest lag tested (steps of 60 s).
pub const MAX_LAG: usize = 15;
const STEP_S: i64 = 60;
/// Longest detector history: 10,800 steps of 60 s (the detectors take at most 11,000 points).
const MAX_HISTORY_S: i64 = 10_800 * 60;
const CHUNK_MS: i64 = 6 * 3_600_000;

/// The causal edges built into the KPI model.
pub fn expected_edges() -> Vec<ExpectedEdge> {
    vec![
        ExpectedEdge {
            cause: QUALITY_CAUSE.into(),
            effect: "shop_conversion_rate".into(),
            lag_steps: CONVERSION_LAG_MIN as usize,
            step_s: STEP_S,
        },
        ExpectedEdge {
            cause: QUALITY_CAUSE.into(),
            effect: "shop_csat_score".into(),
            lag_steps: CSAT_LAG_MIN as usize,
            step_s: STEP_S,
        },
    ]
}

fn api_err(what: &str, status: StatusCode, body: &Value) -> DemoError {
    DemoError::Api(format!("{what}: HTTP {}: {body}", status.as_u16()))
}

/// Records the quality series of `[start_ms, end_ms)` as gauges.
pub async fn record_quality(
    client: &ApiClient,
    start_ms: i64,
    end_ms: i64,
) -> Result<(), DemoError> {
    for (metric, by) in RECORDED {
        let mut from = start_ms;
        while from < end_ms {
            let to = (from + CHUNK_MS).min(end_ms);
            let path = format!(
                "/api/v1/quality?metric={metric}&by={by}&start={}&end={}&step={STEP_S}s",
                from as f64 / 1000.0,
                to as f64 / 1000.0
            );
            let Answer { status, body } = client.request(Method::GET, &path, None).await?;
            if status != 200 {
                return Err(api_err(&path, status, &body));
            }
            let mut points = Vec::new();
            for series in body["series"].as_array().into_iter().flatten() {
                let group = series["group"].as_str().unwrap_or("");
                if group.is_empty() {
                    continue;
                }
                for p in series["points"].as_array().into_iter().flatten() {
                    if let (Some(t), Some(v)) = (p[0].as_i64(), p[1].as_f64()) {
                        points.push(NumberDataPoint {
                            attributes: vec![s(by, group)],
                            // a bucket's value is known at its end
                            time_unix_nano: u64::try_from(t + STEP_S * 1000).unwrap_or(0)
                                * 1_000_000,
                            value: Some(number_data_point::Value::AsDouble(v)),
                            ..Default::default()
                        });
                    }
                }
            }
            for chunk in points.chunks(20_000) {
                let m = Metric {
                    name: format!("sightline.quality.{metric}"),
                    description: format!("{metric} per {by} per minute, from /api/v1/quality"),
                    data: Some(Data::Gauge(Gauge {
                        data_points: chunk.to_vec(),
                    })),
                    ..Default::default()
                };
                client
                    .export("metrics", &metrics_request("sightline-demo", vec![m]))
                    .await?;
            }
            from = to;
        }
    }
    Ok(())
}

/// The detectors the demo creates, one per incident signal.
pub fn demo_detectors(truth: &Truth) -> Vec<DemoDetector> {
    let mut out = Vec::new();
    for inc in &truth.incidents {
        for (k, q) in inc.signals.iter().enumerate() {
            let direction = if q.contains("cache_hit_ratio") {
                "below"
            } else {
                "above"
            };
            out.push(DemoDetector {
                name: format!("demo_{}_{k}", inc.id.replace('-', "_")),
                incident: inc.id,
                query: q.clone(),
                direction,
            });
        }
    }
    out
}

/// The model of a demo detector: `--detector-model`, or with `auto` the rolling z-score for
/// the noisy per-minute series (hallucination index of one model, a latency quantile, where
/// the median/MAD scale of a short history can collapse) and the rolling median/MAD elsewhere.
pub fn model_kind<'a>(flag: &'a str, query: &str) -> &'a str {
    match flag {
        "auto" if query.contains("hallucination_index") || query.contains("histogram_quantile") => {
            "zscore"
        }
        "auto" => "median_mad",
        other => other,
    }
}

async fn detectors(
    client: &ApiClient,
    args: &DemoArgs,
    truth: &Truth,
    f: &mut Findings,
) -> Result<Vec<DemoDetector>, DemoError> {
    let list = demo_detectors(truth);
    // Detectors read the `history` before *now*: cover the whole generated history (which
    // ends at now unless --end moved it), within the 11,000-point limit at 60 s steps.
    let now_ms = sightline_query::time::now().as_millis();
    let history_s = ((now_ms - truth.start_ms) / 1000 + 600).clamp(3600, MAX_HISTORY_S);
    for d in &list {
        let spec = json!({
            "name": d.name,
            "query": d.query,
            "step": "60s",
            "history": format!("{history_s}s"),
            "horizon": 10,
            "lookback": 60,
            "model": {"kind": model_kind(&args.detector_model, &d.query)},
            "direction": d.direction,
            // 95 % bands: with a few hundred points of history the 99 % conformal quantile is
            // (nearly) the largest residual seen, which the first minute of an incident raises,
            // so a sustained breach could never form.
            "alpha": 0.05,
            "sustain": {"window": 5, "min_points": 4, "recovery": 3},
            "retrain_every": "24h",
            "max_series": 10,
        });
        let path = format!("/api/v1/detectors/{}", d.name);
        let Answer { status, body } = client.request(Method::PUT, &path, Some(&spec)).await?;
        if status == 404 || status == 405 {
            let Answer { status, body } = client
                .request(Method::POST, "/api/v1/detectors", Some(&spec))
                .await?;
            if status == 404 || status == 405 {
                return Ok(Vec::new());
            }
            if !status.is_success() {
                return Err(api_err("POST /api/v1/detectors", status, &body));
            }
        } else if !status.is_success() {
            return Err(api_err(&path, status, &body));
        }
    }
    f.detectors_available = true;
    let deadline = Instant::now() + Duration::from_secs(args.detector_timeout_secs);
    let bar = indicatif::ProgressBar::new(list.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} training detectors {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    loop {
        let Answer { status, body } = client
            .request(Method::GET, "/api/v1/detectors", None)
            .await?;
        if status != 200 {
            return Err(api_err("GET /api/v1/detectors", status, &body));
        }
        let states: Vec<(String, String)> = body["detectors"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| {
                let name = d["name"].as_str()?.to_owned();
                list.iter().any(|x| x.name == name).then(|| {
                    let st = d["status"]["state"].as_str().unwrap_or("?").to_owned();
                    let scored = d["status"]["last_scored_ms"].as_i64().is_some();
                    (
                        name,
                        if st == "ready" && !scored {
                            "training".into()
                        } else {
                            st
                        },
                    )
                })
            })
            .collect();
        let done = states
            .iter()
            .filter(|(_, s)| s == "ready" || s == "failed")
            .count();
        bar.set_position(done as u64);
        if done == list.len() || Instant::now() > deadline {
            f.detector_states = states;
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    bar.finish();
    Ok(list)
}

async fn anomalies(
    client: &ApiClient,
    truth: &Truth,
    list: &[DemoDetector],
) -> Result<Vec<Anomaly>, DemoError> {
    let mut out = Vec::new();
    for d in list {
        let path = format!(
            "/api/v1/anomalies?detector={}&start={}&end={}&limit=1000",
            d.name,
            truth.start_ms,
            truth.end_ms + 3_600_000
        );
        let Answer { status, body } = client.request(Method::GET, &path, None).await?;
        if status != 200 {
            return Err(api_err(&path, status, &body));
        }
        out.extend(
            body["anomalies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Anomaly::from_json),
        );
    }
    Ok(out)
}

/// A Granger test through the API.
pub async fn granger_edge(
    client: &ApiClient,
    truth: &Truth,
    edge: &ExpectedEdge,
) -> Result<EdgeFinding, DemoError> {
    // skip the first hour (KPI lags warming up) and the last minutes (conversations in flight)
    let req = json!({
        "cause_query": edge.cause,
        "effect_query": edge.effect,
        "start": truth.start_ms / 1000 + 3600,
        "end": truth.end_ms / 1000 - 600,
        "step": edge.step_s,
        "max_lag": MAX_LAG,
    });
    let Answer { status, body } = client
        .request(Method::POST, "/api/v1/detect/granger", Some(&req))
        .await?;
    let mut e = EdgeFinding {
        cause: edge.cause.clone(),
        effect: edge.effect.clone(),
        lag_bic: None,
        lag_aic: None,
        p_value: None,
        expected_lag: Some(edge.lag_steps),
        error: None,
    };
    if status != 200 {
        e.error = Some(
            body["error"]
                .as_str()
                .unwrap_or("granger failed")
                .to_owned(),
        );
        return Ok(e);
    }
    e.lag_bic = body["selected_lag"]["bic"].as_u64().map(|l| l as usize);
    e.lag_aic = body["selected_lag"]["aic"].as_u64().map(|l| l as usize);
    e.p_value = e.lag_bic.and_then(|l| {
        body["lags"]
            .as_array()?
            .iter()
            .find(|x| x["lag"].as_u64() == Some(l as u64))?["ssr_ftest"]["p"]
            .as_f64()
    });
    Ok(e)
}

/// Detectors, anomalies and Granger edges, scored against the truth.
pub async fn analyse(
    client: &ApiClient,
    args: &DemoArgs,
    truth: &Truth,
) -> Result<Findings, DemoError> {
    let mut f = Findings::default();
    let list = detectors(client, args, truth, &mut f).await?;
    let found = anomalies(client, truth, &list).await?;
    score(truth, &list, &found, &mut f);
    for edge in &truth.edges {
        f.edges.push(granger_edge(client, truth, edge).await?);
    }
    Ok(f)
}
