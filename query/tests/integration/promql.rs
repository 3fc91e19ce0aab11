//! PromQL semantics on hand-checked data (a memory source), and the store-backed source.

use std::sync::Arc;

use sightline_query::promql::value::{RawSeries, STALE_NAN_BITS};
use sightline_query::promql::{
    Budget, MemorySource, QueryResult, ResultSeries, StoreSource, instant_query, range_query,
};
use sightline_storage::{MetricBatch, MetricKind, Sample, SeriesDef, Store, StoreConfig, TenantId};

fn labels(pairs: &[(&str, &str)]) -> Arc<Vec<(String, String)>> {
    let mut v: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    v.sort();
    Arc::new(v)
}

/// http_requests_total{job="api", instance="a"}: 0, 10, 20, ... every 15 s (rate 2/3 per s);
/// {instance="b"}: 0, 30, 60 ... with a reset to 0 at t=150 s; a gauge; histogram buckets.
fn source() -> MemorySource {
    let ts: Vec<i64> = (0..=40).map(|i| i * 15_000).collect();
    let a = RawSeries {
        labels: labels(&[
            ("__name__", "http_requests_total"),
            ("job", "api"),
            ("instance", "a"),
        ]),
        timestamps: ts.clone(),
        values: ts.iter().map(|t| (*t / 15_000 * 10) as f64).collect(),
    };
    let b_vals: Vec<f64> = ts
        .iter()
        .map(|t| {
            let i = t / 15_000;
            if i < 10 {
                (i * 30) as f64
            } else {
                ((i - 10) * 30) as f64
            }
        })
        .collect();
    let b = RawSeries {
        labels: labels(&[
            ("__name__", "http_requests_total"),
            ("job", "api"),
            ("instance", "b"),
        ]),
        timestamps: ts.clone(),
        values: b_vals,
    };
    let gauge = RawSeries {
        labels: labels(&[
            ("__name__", "queue_depth"),
            ("job", "api"),
            ("instance", "a"),
        ]),
        timestamps: vec![0, 60_000, 120_000],
        values: vec![5.0, 7.0, f64::from_bits(STALE_NAN_BITS)],
    };
    let mut series = vec![a, b, gauge];
    for (le, count) in [("0.1", 10.0), ("0.5", 60.0), ("1", 90.0), ("+Inf", 100.0)] {
        series.push(RawSeries {
            labels: labels(&[("__name__", "latency_bucket"), ("le", le), ("job", "api")]),
            timestamps: vec![0],
            values: vec![count],
        });
    }
    MemorySource { series }
}

fn vector(r: QueryResult) -> Vec<(Vec<(String, String)>, f64)> {
    match r {
        QueryResult::Vector(v) => {
            let mut out: Vec<_> = v.into_iter().map(|s| (s.labels, s.points[0].1)).collect();
            out.sort_by(|a, b| a.0.cmp(&b.0));
            out
        }
        other => panic!("expected a vector, got {other:?}"),
    }
}

fn l(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    labels(pairs).as_ref().clone()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn scalar_arithmetic_and_health_check() {
    let src = source();
    assert_eq!(
        instant_query(&src, "1+1", 4000, &Budget::default()).expect("q"),
        QueryResult::Scalar(vec![(4000, 2.0)])
    );
    assert_eq!(
        instant_query(&src, "2 ^ 3 * 2", 0, &Budget::default()).expect("q"),
        QueryResult::Scalar(vec![(0, 16.0)])
    );
    assert!(
        instant_query(&src, "1 > 2", 0, &Budget::default()).is_err(),
        "scalar comparison needs bool"
    );
    assert_eq!(
        instant_query(&src, "1 > bool 2", 0, &Budget::default()).expect("q"),
        QueryResult::Scalar(vec![(0, 0.0)])
    );
}

#[test]
fn rate_matches_prometheus_extrapolation_and_handles_resets() {
    let src = source();
    let v = vector(
        instant_query(
            &src,
            "rate(http_requests_total[1m])",
            300_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    // a: 10 per 15 s; window [240 s, 300 s] holds 5 samples spanning 60 s exactly: 40/60.
    assert_eq!(v[0].0, l(&[("instance", "a"), ("job", "api")]));
    assert!(close(v[0].1, 40.0 / 60.0), "{}", v[0].1);
    // b: 30 per 15 s after its reset.
    assert!(close(v[1].1, 2.0), "{}", v[1].1);
    let v = vector(
        instant_query(
            &src,
            "increase(http_requests_total{instance=\"b\"}[2m])",
            180_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    // Window [60 s, 180 s]: 120,150,180,210,240,270,0,30,60 -> raw delta -60, plus 270 at the
    // reset = 210 over 120 s sampled (no extrapolation: samples sit at both ends).
    assert!(close(v[0].1, 210.0), "{}", v[0].1);
    let v = vector(
        instant_query(
            &src,
            "resets(http_requests_total[5m])",
            300_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert_eq!((v[0].1, v[1].1), (0.0, 1.0));
    let v = vector(
        instant_query(
            &src,
            "irate(http_requests_total{instance=\"a\"}[1m])",
            300_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert!(close(v[0].1, 10.0 / 15.0));
}

#[test]
fn lookback_and_staleness() {
    let src = source();
    let at = |t| vector(instant_query(&src, "queue_depth", t, &Budget::default()).expect("q"));
    assert_eq!(at(30_000)[0].1, 5.0);
    assert_eq!(at(90_000)[0].1, 7.0);
    // The staleness marker at 120 s ends the series at once, despite the 5 m lookback.
    assert!(at(130_000).is_empty());
    let v = vector(
        instant_query(&src, "queue_depth offset 1m", 90_000, &Budget::default()).expect("q"),
    );
    assert_eq!(v[0].1, 5.0);
    // Past the lookback delta nothing is returned.
    let src2 = MemorySource {
        series: vec![src.series[2].clone()],
    };
    let mut s = src2.series[0].clone();
    s.values[2] = 9.0;
    let src3 = MemorySource { series: vec![s] };
    assert_eq!(
        vector(instant_query(&src3, "queue_depth", 420_000, &Budget::default()).expect("q"))[0].1,
        9.0
    );
    assert!(
        vector(instant_query(&src3, "queue_depth", 420_001, &Budget::default()).expect("q"))
            .is_empty()
    );
}

#[test]
fn aggregations_by_and_without() {
    let src = source();
    let v = vector(
        instant_query(
            &src,
            "sum by (job) (http_requests_total)",
            60_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert_eq!(v, vec![(l(&[("job", "api")]), 40.0 + 120.0)]);
    let v = vector(
        instant_query(
            &src,
            "max without (instance) (http_requests_total)",
            60_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert_eq!(v, vec![(l(&[("job", "api")]), 120.0)]);
    let v = vector(
        instant_query(
            &src,
            "count(http_requests_total)",
            60_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert_eq!(v, vec![(vec![], 2.0)]);
    let v = vector(
        instant_query(
            &src,
            "topk(1, http_requests_total)",
            60_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].1, 120.0);
    let v = vector(
        instant_query(
            &src,
            "quantile(0.5, http_requests_total)",
            60_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert_eq!(v[0].1, 80.0);
    let v = vector(
        instant_query(
            &src,
            "stddev(http_requests_total)",
            60_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert_eq!(v[0].1, 40.0);
    let v = vector(
        instant_query(
            &src,
            "count_values(\"v\", queue_depth)",
            60_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert_eq!(v, vec![(l(&[("v", "7")]), 1.0)]);
}

#[test]
fn binary_matching() {
    let src = source();
    // One-to-one with ignoring: the result drops the metric name and the ignored label.
    let v = vector(
        instant_query(
            &src,
            "http_requests_total / ignoring(instance) group_left queue_depth",
            60_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert_eq!(v.len(), 2);
    assert!(
        v.iter()
            .all(|(ls, _)| !ls.iter().any(|(k, _)| k == "__name__"))
    );
    let v = vector(
        instant_query(
            &src,
            "http_requests_total > 100",
            60_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert_eq!(
        v,
        vec![(
            l(&[
                ("__name__", "http_requests_total"),
                ("instance", "b"),
                ("job", "api")
            ]),
            120.0
        )]
    );
    let v = vector(
        instant_query(
            &src,
            "http_requests_total > bool 100",
            60_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert_eq!(v.iter().map(|x| x.1).collect::<Vec<_>>(), vec![0.0, 1.0]);
    let v = vector(
        instant_query(
            &src,
            "http_requests_total and on(instance) queue_depth",
            60_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert_eq!(v.len(), 1);
    let v = vector(
        instant_query(
            &src,
            "http_requests_total unless on(instance) queue_depth",
            60_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert_eq!(
        v[0].0
            .iter()
            .find(|(k, _)| k == "instance")
            .map(|x| x.1.as_str()),
        Some("b")
    );
    assert!(
        instant_query(
            &src,
            "http_requests_total + on(job) http_requests_total",
            60_000,
            &Budget::default()
        )
        .is_err()
    );
}

#[test]
fn functions() {
    let src = source();
    let v = vector(
        instant_query(
            &src,
            "histogram_quantile(0.5, latency_bucket)",
            0,
            &Budget::default(),
        )
        .expect("q"),
    );
    // rank 50 falls in (0.1, 0.5] holding 50 observations from 10: 0.1 + 0.4 * 40/50.
    assert!(close(v[0].1, 0.42), "{}", v[0].1);
    let v = vector(
        instant_query(
            &src,
            "label_replace(queue_depth, \"host\", \"h-$1\", \"instance\", \"(.*)\")",
            0,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert!(v[0].0.contains(&("host".into(), "h-a".into())));
    let v = vector(
        instant_query(
            &src,
            "label_join(queue_depth, \"x\", \"-\", \"job\", \"instance\")",
            0,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert!(v[0].0.contains(&("x".into(), "api-a".into())));
    let v = vector(
        instant_query(
            &src,
            "absent(nonexistent{job=\"x\"})",
            0,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert_eq!(v, vec![(l(&[("job", "x")]), 1.0)]);
    assert!(
        vector(instant_query(&src, "absent(queue_depth)", 0, &Budget::default()).expect("q"))
            .is_empty()
    );
    assert_eq!(
        instant_query(&src, "scalar(queue_depth)", 60_000, &Budget::default()).expect("q"),
        QueryResult::Scalar(vec![(60_000, 7.0)])
    );
    let v = vector(
        instant_query(&src, "timestamp(queue_depth)", 90_000, &Budget::default()).expect("q"),
    );
    assert_eq!(v[0].1, 60.0);
    let v = vector(
        instant_query(&src, "clamp(queue_depth, 0, 6)", 90_000, &Budget::default()).expect("q"),
    );
    assert_eq!(v[0].1, 6.0);
    let v = vector(
        instant_query(
            &src,
            "avg_over_time(queue_depth[2m])",
            60_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert_eq!(v[0].1, 6.0);
    let v = vector(instant_query(&src, "vector(time())", 42_000, &Budget::default()).expect("q"));
    assert_eq!(v[0].1, 42.0);
    let err = instant_query(
        &src,
        "rate(http_requests_total[5m:1m])",
        0,
        &Budget::default(),
    )
    .expect_err("subquery");
    assert!(err.to_string().contains("subquer"), "{err}");
    assert!(instant_query(&src, "sum(", 0, &Budget::default()).is_err());
}

#[test]
fn range_query_grid() {
    let src = source();
    let r = range_query(&src, "queue_depth", 0, 180_000, 60_000, &Budget::default()).expect("q");
    let QueryResult::Matrix(m) = r else {
        panic!("matrix expected")
    };
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].points, vec![(0, 5.0), (60_000, 7.0)]);
    let r = range_query(&src, "1", 0, 120_000, 60_000, &Budget::default()).expect("q");
    assert_eq!(
        r,
        QueryResult::Matrix(vec![ResultSeries {
            labels: vec![],
            points: vec![(0, 1.0), (60_000, 1.0), (120_000, 1.0)]
        }])
    );
    assert!(range_query(&src, "queue_depth", 0, 1, 0, &Budget::default()).is_err());
    assert!(range_query(&src, "queue_depth", 0, 100_000_000, 1, &Budget::default()).is_err());
}

#[test]
fn store_backed_source() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(
        dir.path(),
        StoreConfig {
            background: false,
            ..StoreConfig::default()
        },
    )
    .expect("open");
    let t = TenantId::new("acme").expect("tenant");
    let series: Vec<SeriesDef> = ["a", "b"]
        .iter()
        .map(|m| {
            SeriesDef::new(
                "tokens_total",
                MetricKind::Counter,
                vec![("model".into(), (*m).into())],
            )
        })
        .collect();
    let t0 = 1_795_960_800_000i64;
    let mut samples = Vec::new();
    for (i, s) in series.iter().enumerate() {
        for k in 0..60 {
            samples.push(Sample {
                series: s.id,
                timestamp_ms: t0 + k * 10_000,
                value: (k * (i as i64 + 1) * 100) as f64,
            });
        }
    }
    store
        .append_metrics(
            &t,
            &MetricBatch {
                series: series.clone(),
                samples: samples[..60].to_vec(),
            },
        )
        .expect("append");
    store.flush().expect("flush");
    store
        .append_metrics(
            &t,
            &MetricBatch {
                series: vec![],
                samples: samples[60..].to_vec(),
            },
        )
        .expect("append");
    let src = StoreSource::new(&store, t.clone());
    let v = vector(
        instant_query(
            &src,
            "sum by (model) (rate(tokens_total[1m]))",
            t0 + 300_000,
            &Budget::default(),
        )
        .expect("q"),
    );
    assert_eq!(v.len(), 2);
    assert!(close(v[0].1, 10.0) && close(v[1].1, 20.0), "{v:?}");
    let other = StoreSource::new(&store, TenantId::new("other").expect("tenant"));
    assert!(
        vector(instant_query(&other, "tokens_total", t0 + 300_000, &Budget::default()).expect("q"))
            .is_empty()
    );
}
