//! Metrics of a finished minute: the GenAI client metrics (`gen_ai.client.token.usage`,
//! `gen_ai.client.operation.duration`, cumulative explicit-bucket histograms with the
//! semantic-convention bucket boundaries) and the business KPIs of the shop, which depend on
//! answer quality with a lag:
//!
//! * `shop.conversion.rate` (gauge): `0.12 - 0.25 * bad(t - 8 min) - 0.05 * errors(t - 3 min)`;
//! * `shop.csat.score` (gauge, 1..5): `4.5 - 2.0 * bad(t - 12 min)`;
//! * `shop.tickets.escalated` (monotonic counter): Poisson with mean
//!   `sessions * (0.01 + 0.3 * bad(t - 5 min))`;
//!
//! each plus a little Gaussian noise, where `bad` is the share of answered calls in that minute
//! that were made up and `errors` the share that failed.

use std::collections::BTreeMap;

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, Gauge, Histogram, HistogramDataPoint, Metric, NumberDataPoint, Sum,
    metric::Data, number_data_point,
};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal, Poisson};

use super::app::MODELS;
use super::incidents::{CONVERSION_LAG_MIN, CSAT_LAG_MIN};
use super::otlp_out::s;
use super::traffic::Minute;

/// `gen_ai.client.operation.duration` bucket boundaries (seconds), semconv.
pub const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/// `gen_ai.client.token.usage` bucket boundaries (tokens), semconv.
pub const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];
/// Minutes before bad answers raise escalations.
pub const TICKETS_LAG_MIN: i64 = 5;

#[derive(Clone, Debug)]
struct Hist {
    attrs: Vec<(&'static str, String)>,
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Hist {
    fn observe(&mut self, bounds: &[f64], v: f64) {
        let i = bounds.iter().position(|b| v <= *b).unwrap_or(bounds.len());
        self.counts[i] += 1;
        self.sum += v;
        self.count += 1;
    }
}

/// Cumulative metric state across minutes.
pub struct Kpis {
    start_ns: u64,
    durations: BTreeMap<String, Hist>,
    tokens: BTreeMap<String, Hist>,
    tickets: u64,
    rng: StdRng,
    /// Per finished minute: (share of made-up answers, share of failed calls).
    shares: BTreeMap<i64, (f64, f64)>,
}

fn attrs(v: &[(&'static str, String)]) -> Vec<KeyValue> {
    v.iter().map(|(k, x)| s(k, x.clone())).collect()
}

fn gauge(name: &str, unit: &str, desc: &str, t_ns: u64, v: f64) -> Metric {
    Metric {
        name: name.into(),
        description: desc.into(),
        unit: unit.into(),
        data: Some(Data::Gauge(Gauge {
            data_points: vec![NumberDataPoint {
                time_unix_nano: t_ns,
                value: Some(number_data_point::Value::AsDouble(v)),
                ..Default::default()
            }],
        })),
        ..Default::default()
    }
}

impl Kpis {
    /// State for a history starting at `start_ms`.
    pub fn new(seed: u64, start_ms: i64) -> Self {
        Self {
            start_ns: u64::try_from(start_ms).unwrap_or(0) * 1_000_000,
            durations: BTreeMap::new(),
            tokens: BTreeMap::new(),
            tickets: 0,
            rng: StdRng::seed_from_u64(seed ^ 0x4b50_4953),
            shares: BTreeMap::new(),
        }
    }

    fn lagged(&self, m: i64, lag: i64) -> (f64, f64) {
        self.shares.get(&(m - lag)).copied().unwrap_or((0.06, 0.01))
    }

    /// The metrics of minute `m` (ending at `t_end_ms`).
    pub fn finish_minute(&mut self, m: i64, t_end_ms: i64, minute: &Minute) -> Vec<Metric> {
        let t_ns = u64::try_from(t_end_ms).unwrap_or(0) * 1_000_000;
        for c in &minute.calls {
            let model = MODELS[c.model];
            let mut base = vec![
                ("gen_ai.operation.name", "chat".to_owned()),
                ("gen_ai.provider.name", model.provider.to_owned()),
                ("gen_ai.request.model", model.name.to_owned()),
            ];
            if c.error.is_none() {
                base.push(("gen_ai.response.model", c.response_model.to_owned()));
            }
            let mut d = base.clone();
            if let Some(e) = c.error {
                d.push(("error.type", e.to_owned()));
            }
            let key = format!("{d:?}");
            self.durations
                .entry(key)
                .or_insert_with(|| Hist {
                    attrs: d,
                    counts: vec![0; DURATION_BUCKETS.len() + 1],
                    sum: 0.0,
                    count: 0,
                })
                .observe(&DURATION_BUCKETS, c.duration_s);
            if c.error.is_none() {
                for (ty, v) in [("input", c.input_tokens), ("output", c.output_tokens)] {
                    let mut a = base.clone();
                    a.push(("gen_ai.token.type", ty.to_owned()));
                    self.tokens
                        .entry(format!("{a:?}"))
                        .or_insert_with(|| Hist {
                            attrs: a,
                            counts: vec![0; TOKEN_BUCKETS.len() + 1],
                            sum: 0.0,
                            count: 0,
                        })
                        .observe(&TOKEN_BUCKETS, v as f64);
                }
            }
        }
        let answered = minute.calls.iter().filter(|c| c.error.is_none()).count();
        let bad = minute.calls.iter().filter(|c| c.hallucinated).count();
        let failed = minute.calls.len() - answered;
        let share = (
            if answered > 0 {
                bad as f64 / answered as f64
            } else {
                0.06
            },
            if minute.calls.is_empty() {
                0.01
            } else {
                failed as f64 / minute.calls.len() as f64
            },
        );
        self.shares.insert(m, share);
        let noise =
            |rng: &mut StdRng, sd: f64| Normal::new(0.0, sd).map(|n| n.sample(rng)).unwrap_or(0.0);
        let (bad_c, _) = self.lagged(m, CONVERSION_LAG_MIN);
        let (_, err_c) = self.lagged(m, 3);
        let conversion =
            (0.12 - 0.25 * bad_c - 0.05 * err_c + noise(&mut self.rng, 0.002)).max(0.0);
        let (bad_s, _) = self.lagged(m, CSAT_LAG_MIN);
        let csat = (4.5 - 2.0 * bad_s + noise(&mut self.rng, 0.02)).clamp(1.0, 5.0);
        let (bad_t, _) = self.lagged(m, TICKETS_LAG_MIN);
        let mean = (minute.sessions as f64 * (0.01 + 0.3 * bad_t)).max(1e-3);
        self.tickets += Poisson::new(mean)
            .map(|p| p.sample(&mut self.rng) as u64)
            .unwrap_or(0);
        if let Some(old) = m.checked_sub(60) {
            self.shares.retain(|k, _| *k >= old);
        }
        let hist =
            |name: &str, unit: &str, desc: &str, bounds: &[f64], hs: &BTreeMap<String, Hist>| {
                Metric {
                    name: name.into(),
                    description: desc.into(),
                    unit: unit.into(),
                    data: Some(Data::Histogram(Histogram {
                        aggregation_temporality: AggregationTemporality::Cumulative as i32,
                        data_points: hs
                            .values()
                            .map(|h| HistogramDataPoint {
                                attributes: attrs(&h.attrs),
                                start_time_unix_nano: self.start_ns,
                                time_unix_nano: t_ns,
                                count: h.count,
                                sum: Some(h.sum),
                                bucket_counts: h.counts.clone(),
                                explicit_bounds: bounds.to_vec(),
                                ..Default::default()
                            })
                            .collect(),
                    })),
                    ..Default::default()
                }
            };
        let mut out = Vec::new();
        if !self.durations.is_empty() {
            out.push(hist(
                "gen_ai.client.operation.duration",
                "s",
                "GenAI operation duration.",
                &DURATION_BUCKETS,
                &self.durations,
            ));
        }
        if !self.tokens.is_empty() {
            out.push(hist(
                "gen_ai.client.token.usage",
                "{token}",
                "Number of input and output tokens used.",
                &TOKEN_BUCKETS,
                &self.tokens,
            ));
        }
        out.push(gauge(
            "shop.conversion.rate",
            "",
            "Share of chat sessions that end in a purchase.",
            t_ns,
            conversion,
        ));
        out.push(gauge(
            "shop.csat.score",
            "",
            "Customer satisfaction (1-5) of chat sessions.",
            t_ns,
            csat,
        ));
        out.push(Metric {
            name: "shop.tickets.escalated".into(),
            description: "Chat sessions escalated to a human agent.".into(),
            unit: "".into(),
            data: Some(Data::Sum(Sum {
                aggregation_temporality: AggregationTemporality::Cumulative as i32,
                is_monotonic: true,
                data_points: vec![NumberDataPoint {
                    start_time_unix_nano: self.start_ns,
                    time_unix_nano: t_ns,
                    value: Some(number_data_point::Value::AsInt(self.tickets as i64)),
                    ..Default::default()
                }],
            })),
            ..Default::default()
        });
        out
    }
}
