//! Token entropy throughput: 1,000,000 tokens with top-20 logprobs in the columnar form the
//! store hands over (sampled logprob per token, flattened alternatives with offsets), and the
//! parse-then-compute path on an OpenAI-shaped JSON body of 10,000 tokens.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sightline_detect::entropy::{
    UncertaintyOptions, response_uncertainty, uncertainty_from_columns,
};
use sightline_detect::eval::generator::SplitMix64;
use sightline_detect::logprobs::{ChoiceLogprobs, TokenLogprob, TopLogprob, parse_logprobs};
use std::hint::black_box;

const K: usize = 20;

fn columns(tokens: usize) -> (Vec<f64>, Vec<usize>, Vec<f64>) {
    let mut rng = SplitMix64::new(9);
    let mut sampled = Vec::with_capacity(tokens);
    let mut offsets = Vec::with_capacity(tokens + 1);
    let mut top = Vec::with_capacity(tokens * K);
    offsets.push(0);
    for _ in 0..tokens {
        let p1 = 0.3 + 0.69 * rng.unit();
        let rest = (1.0 - p1) * 0.9;
        let ratio = 0.6 + 0.3 * rng.unit();
        let norm: f64 = (0..K - 1).map(|i| ratio.powi(i as i32)).sum();
        sampled.push(p1.ln());
        top.push(p1.ln());
        top.extend((0..K - 1).map(|i| (rest * ratio.powi(i as i32) / norm).ln()));
        offsets.push(top.len());
    }
    (sampled, offsets, top)
}

fn bench(c: &mut Criterion) {
    let (sampled, offsets, top) = columns(1_000_000);
    let opts = UncertaintyOptions::default();
    let mut g = c.benchmark_group("entropy");
    g.sample_size(10);
    g.throughput(Throughput::Elements(sampled.len() as u64));
    g.bench_function("columns_1M_tokens_top20", |b| {
        b.iter(|| {
            uncertainty_from_columns(
                black_box(&sampled),
                black_box(&offsets),
                black_box(&top),
                &opts,
            )
            .map(|r| r.entropy_mean)
        })
    });

    let n = 10_000;
    let content: Vec<TokenLogprob> = (0..n)
        .map(|i| TokenLogprob {
            token: format!("tok{i}"),
            logprob: sampled[i],
            bytes: None,
            top_logprobs: (0..K)
                .map(|j| TopLogprob {
                    token: if j == 0 {
                        format!("tok{i}")
                    } else {
                        format!("alt{j}")
                    },
                    logprob: top[i * K + j],
                    bytes: None,
                })
                .collect(),
        })
        .collect();
    let json = serde_json::to_string(&ChoiceLogprobs {
        content,
        refusal: Vec::new(),
    })
    .unwrap_or_default();
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("parse_json_and_compute_10k_tokens_top20", |b| {
        b.iter(|| {
            parse_logprobs(black_box(&json))
                .and_then(|lp| response_uncertainty(&lp, &opts))
                .map(|r| r.entropy_mean)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
