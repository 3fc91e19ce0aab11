//! Granger on 1,000 (cause, effect) pairs of 2,000 points, lags 1..=8 (all four statistics per
//! lag, plus AIC/BIC per lag). Compare with statsmodels using
//! `SIGHTLINE_PYTHON=... cargo run -p sightline-detect --release --example granger_vs_statsmodels`.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sightline_detect::eval::granger_workload;
use sightline_detect::granger::granger_tests;
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let pairs = granger_workload(1, 1000, 2000);
    let mut g = c.benchmark_group("granger");
    g.sample_size(10);
    g.throughput(Throughput::Elements(pairs.len() as u64));
    g.bench_function("1000_pairs_2000_points_maxlag_8", |b| {
        b.iter(|| {
            let mut acc = 0.0;
            for (cause, effect) in &pairs {
                if let Ok(r) = granger_tests(black_box(cause), black_box(effect), 8) {
                    acc += r.lags[7].ssr_ftest.p;
                }
            }
            acc
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
