//! The fixed sample data of the golden suite: a deterministic generator, its OpenMetrics text
//! (for `promtool tsdb create-blocks-from openmetrics`) and its load into a real [`Store`].
//!
//! Three hours of data from [`T0`]: counters with resets, gauges with negative values and NaN,
//! classic histograms (`_bucket{le}` incl. `+Inf`, `_sum`, `_count`), several label dimensions,
//! a series that stops midway ([`STOP`]), a series with a gap longer than the lookback
//! ([`GAP_START`]..[`GAP_END`]) and irregular scrape intervals (jitter of a few seconds on
//! every series, and one series scraped every 5 to 61 s).

use std::fmt::Write as _;

use sightline_storage::{MetricBatch, MetricKind, Sample, SeriesDef, Store, TenantId};

/// First sample time, ms (2023-11-14T22:13:20Z: well inside what Prometheus accepts).
pub const T0: i64 = 1_700_000_000_000;
/// One minute, ms.
pub const MIN: i64 = 60_000;
/// End of the data, ms.
pub const END: i64 = T0 + 180 * MIN;
/// `batch_jobs_running{queue="q1"}` has no sample at or after this time.
pub const STOP: i64 = T0 + 90 * MIN;
/// `sporadic_value` has no sample in `[GAP_START, GAP_END)`.
pub const GAP_START: i64 = T0 + 60 * MIN;
/// End of the gap of `sporadic_value`.
pub const GAP_END: i64 = T0 + 80 * MIN;

/// One generated series.
pub struct GenSeries {
    /// Metric name.
    pub name: &'static str,
    /// Labels without the name.
    pub labels: Vec<(String, String)>,
    /// Counter or gauge (only informs the store's series kind).
    pub kind: MetricKind,
    /// `(timestamp ms, value)`, ascending.
    pub samples: Vec<(i64, f64)>,
}

/// SplitMix64: small, deterministic, good enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn f(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform integer in `[lo, hi]`.
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
}

fn lbl(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Scrape times from `start` to `end`: `base` ms apart with `jitter` ms of noise either way.
fn scrapes(rng: &mut Rng, start: i64, end: i64, base: i64, jitter: i64) -> Vec<i64> {
    let mut out = Vec::new();
    let mut t = start + rng.int(0, base - 1);
    while t < end {
        out.push(t);
        t += base + rng.int(-jitter, jitter);
    }
    out
}

fn counter(rng: &mut Rng, times: &[i64], max_inc: f64, reset_every: u64) -> Vec<(i64, f64)> {
    let mut v = rng.int(0, 50) as f64;
    times
        .iter()
        .map(|&t| {
            if reset_every > 0 && rng.next().is_multiple_of(reset_every) {
                v = rng.int(0, 3) as f64;
            } else {
                let inc = (rng.f() * max_inc).floor();
                // A few fractional increments, as counters of seconds have.
                v += if rng.next().is_multiple_of(7) {
                    inc + 0.25
                } else {
                    inc
                };
            }
            (t, v)
        })
        .collect()
}

/// The whole data set, deterministic.
pub fn generate() -> Vec<GenSeries> {
    let mut rng = Rng(0x5167_471e);
    let mut out = Vec::new();
    let instances = [
        ("api", "i-0"),
        ("api", "i-1"),
        ("api", "i-2"),
        ("worker", "w-0"),
        ("worker", "w-1"),
    ];

    // Counters with resets (about one per 200 scrapes, so most series reset once or twice).
    for &(job, inst) in &instances {
        let methods: &[&str] = if job == "api" {
            &["GET", "POST"]
        } else {
            &["GET"]
        };
        for m in methods {
            let times = scrapes(&mut rng, T0, END, 15_000, 2_500);
            out.push(GenSeries {
                name: "http_requests_total",
                labels: lbl(&[("job", job), ("instance", inst), ("method", m)]),
                kind: MetricKind::Counter,
                samples: counter(&mut rng, &times, 20.0, 200),
            });
        }
    }
    for service in ["chat", "search"] {
        for model in ["gpt-4o", "llama-3"] {
            for tt in ["prompt", "completion"] {
                let times = scrapes(&mut rng, T0, END, 30_000, 4_000);
                out.push(GenSeries {
                    name: "llm_tokens_total",
                    labels: lbl(&[("service", service), ("model", model), ("token_type", tt)]),
                    kind: MetricKind::Counter,
                    samples: counter(&mut rng, &times, 5_000.0, 400),
                });
            }
        }
    }

    // Gauges, negative values included.
    for (k, &(job, inst)) in instances.iter().enumerate() {
        let times = scrapes(&mut rng, T0, END, 15_000, 2_000);
        let phase = k as f64;
        let samples = times
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                let x = 10.0 * (i as f64 / 20.0 + phase).sin() + rng.int(-3, 3) as f64;
                (t, (x * 2.0).round() / 2.0)
            })
            .collect();
        out.push(GenSeries {
            name: "queue_depth",
            labels: lbl(&[("job", job), ("instance", inst)]),
            kind: MetricKind::Gauge,
            samples,
        });
        let times = scrapes(&mut rng, T0, END, 15_000, 1_000);
        let mut up = 1.0;
        let samples = times
            .iter()
            .map(|&t| {
                if rng.next().is_multiple_of(40) {
                    up = 1.0 - up;
                }
                (t, up)
            })
            .collect();
        out.push(GenSeries {
            name: "up",
            labels: lbl(&[("job", job), ("instance", inst)]),
            kind: MetricKind::Gauge,
            samples,
        });
        let times = scrapes(&mut rng, T0, END, 60_000, 5_000);
        let limit = (k as f64 + 1.0) * 1024.0 * 1024.0 * 512.0;
        out.push(GenSeries {
            name: "memory_limit_bytes",
            labels: lbl(&[("instance", inst)]),
            kind: MetricKind::Gauge,
            samples: times.iter().map(|&t| (t, limit)).collect(),
        });
        let times = scrapes(&mut rng, T0, END, 60_000, 5_000);
        let region = if k % 2 == 0 { "eu" } else { "us" };
        let version = format!("1.{k}");
        out.push(GenSeries {
            name: "instance_info",
            labels: lbl(&[
                ("instance", inst),
                ("region", region),
                ("version", &version),
            ]),
            kind: MetricKind::Gauge,
            samples: times.iter().map(|&t| (t, 1.0)).collect(),
        });
    }
    for (k, site) in ["north", "south", "east"].iter().enumerate() {
        let times = scrapes(&mut rng, T0, END, 20_000, 3_000);
        let mut v = k as f64 * 2.0 - 2.0;
        let samples = times
            .iter()
            .map(|&t| {
                v += (rng.f() - 0.5) * 0.8;
                v = v.clamp(-9.0, 9.0);
                (t, (v * 1000.0).round() / 1000.0)
            })
            .collect();
        out.push(GenSeries {
            name: "temperature_celsius",
            labels: lbl(&[("site", site)]),
            kind: MetricKind::Gauge,
            samples,
        });
    }

    // Classic histograms; the worker's is reset midway.
    let bounds = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5];
    for &(job, inst) in &[("api", "i-0"), ("api", "i-1"), ("worker", "w-0")] {
        let times = scrapes(&mut rng, T0, END, 15_000, 2_000);
        let mut counts = [0u64; 7];
        let mut sum = 0.0f64;
        let mut rows: Vec<(i64, [u64; 7], f64)> = Vec::new();
        for &t in &times {
            if job == "worker"
                && t >= T0 + 100 * MIN
                && rows.last().is_some_and(|r| r.0 < T0 + 100 * MIN)
            {
                counts = [0; 7];
                sum = 0.0;
            }
            for _ in 0..rng.int(0, 12) {
                let d = (rng.f() * rng.f() * 3.0 * 1000.0).round() / 1000.0;
                sum += d;
                for (i, b) in bounds.iter().enumerate() {
                    if d <= *b {
                        counts[i] += 1;
                    }
                }
                counts[6] += 1;
            }
            rows.push((t, counts, (sum * 1000.0).round() / 1000.0));
        }
        let les = ["0.05", "0.1", "0.25", "0.5", "1", "2.5", "+Inf"];
        for (i, le) in les.iter().enumerate() {
            out.push(GenSeries {
                name: "request_duration_seconds_bucket",
                labels: lbl(&[("job", job), ("instance", inst), ("le", le)]),
                kind: MetricKind::Counter,
                samples: rows.iter().map(|r| (r.0, r.1[i] as f64)).collect(),
            });
        }
        out.push(GenSeries {
            name: "request_duration_seconds_count",
            labels: lbl(&[("job", job), ("instance", inst)]),
            kind: MetricKind::Counter,
            samples: rows.iter().map(|r| (r.0, r.1[6] as f64)).collect(),
        });
        out.push(GenSeries {
            name: "request_duration_seconds_sum",
            labels: lbl(&[("job", job), ("instance", inst)]),
            kind: MetricKind::Counter,
            samples: rows.iter().map(|r| (r.0, r.2)).collect(),
        });
    }

    // A series that stops midway, and its sibling that goes on.
    for q in ["q1", "q2"] {
        let end = if q == "q1" { STOP } else { END };
        let times = scrapes(&mut rng, T0, end, 15_000, 2_000);
        out.push(GenSeries {
            name: "batch_jobs_running",
            labels: lbl(&[("job", "batch"), ("queue", q)]),
            kind: MetricKind::Gauge,
            samples: times.iter().map(|&t| (t, rng.int(0, 9) as f64)).collect(),
        });
    }

    // Irregular intervals (5 to 61 s) and a 20-minute gap.
    let mut samples = Vec::new();
    let mut t = T0 + 3_217;
    let mut v = 100.0;
    while t < END {
        if !(GAP_START..GAP_END).contains(&t) {
            v += rng.int(0, 40) as f64;
            samples.push((t, v));
        }
        t += [5_000, 10_000, 15_000, 30_000, 45_000, 61_000][rng.int(0, 5) as usize]
            + rng.int(0, 999);
    }
    out.push(GenSeries {
        name: "sporadic_value",
        labels: lbl(&[("instance", "s-0")]),
        kind: MetricKind::Counter,
        samples,
    });

    // A gauge with NaN samples now and then.
    let times = scrapes(&mut rng, T0, END, 15_000, 2_000);
    let samples = times
        .iter()
        .map(|&t| {
            let v = if rng.next().is_multiple_of(9) {
                f64::NAN
            } else {
                rng.int(-20, 20) as f64 / 4.0
            };
            (t, v)
        })
        .collect();
    out.push(GenSeries {
        name: "weird_gauge",
        labels: lbl(&[("kind", "nan")]),
        kind: MetricKind::Gauge,
        samples,
    });
    out
}

/// Formats a value for OpenMetrics text.
fn om_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else {
        format!("{v}")
    }
}

/// The data as OpenMetrics text, one family per metric name, series contiguous.
pub fn openmetrics(data: &[GenSeries]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for s in data {
        if !names.contains(&s.name) {
            names.push(s.name);
        }
    }
    let mut out = String::new();
    for name in names {
        for s in data.iter().filter(|s| s.name == name) {
            let labels: Vec<String> = s
                .labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{v}\""))
                .collect();
            for &(t, v) in &s.samples {
                let _ = writeln!(
                    out,
                    "{name}{{{}}} {} {}.{:03}",
                    labels.join(","),
                    om_value(v),
                    t / 1000,
                    t % 1000
                );
            }
        }
    }
    out.push_str("# EOF\n");
    out
}

/// Appends the data to `store` for `tenant`: the first half of every series is flushed to
/// segments, the rest stays in the memtable, so queries read both.
pub fn load(store: &Store, tenant: &TenantId, data: &[GenSeries]) -> sightline_storage::Result<()> {
    let defs: Vec<SeriesDef> = data
        .iter()
        .map(|s| SeriesDef::new(s.name, s.kind, s.labels.clone()))
        .collect();
    let half = T0 + 90 * MIN;
    for (first, pick) in [(true, true), (false, false)] {
        let mut samples = Vec::new();
        for (s, d) in data.iter().zip(&defs) {
            for &(t, v) in &s.samples {
                if (t < half) == pick {
                    samples.push(Sample {
                        series: d.id,
                        timestamp_ms: t,
                        value: v,
                    });
                }
            }
        }
        store.append_metrics(
            tenant,
            &MetricBatch {
                series: if first { defs.clone() } else { Vec::new() },
                samples,
            },
        )?;
        if first {
            store.flush()?;
        }
    }
    Ok(())
}
