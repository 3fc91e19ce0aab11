//! Side-by-side: our Granger tests vs statsmodels `grangercausalitytests` on the same pairs in
//! the same run; prints both times, the speed ratio and the largest disagreement.
//!
//! `SIGHTLINE_PYTHON=.venv/bin/python cargo run -p sightline-detect --release --example granger_vs_statsmodels [-- PAIRS POINTS MAX_LAG]`
//! (defaults 1000 2000 8). Both sides run single-threaded: the Python child gets
//! `OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=MKL_NUM_THREADS=1` unless those are already set
//! (on 2 shared cores, BLAS threads oversubscribe and make statsmodels ~10x slower, which
//! would flatter us).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use sightline_detect::eval::granger_workload;
use sightline_detect::granger::{GrangerTests, granger_tests};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let pairs = args.first().copied().unwrap_or(1000);
    let points = args.get(1).copied().unwrap_or(2000);
    let max_lag = args.get(2).copied().unwrap_or(8);
    let Some(python) = std::env::var_os("SIGHTLINE_PYTHON") else {
        eprintln!(
            "set SIGHTLINE_PYTHON to a Python with detect/tests/python/requirements.txt installed"
        );
        std::process::exit(2);
    };
    let work = granger_workload(1, pairs, points);

    // ours: best of 3 runs, single thread
    let mut ours: Vec<GrangerTests> = Vec::new();
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        ours = work
            .iter()
            .map(|(c, e)| granger_tests(c, e, max_lag).expect("granger"))
            .collect();
        best = best.min(t.elapsed().as_secs_f64());
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("pairs.f64");
    let output = dir.path().join("results.f64");
    let mut bytes = Vec::with_capacity(pairs * 2 * points * 8);
    for (c, e) in &work {
        for v in c.iter().chain(e) {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
    }
    std::fs::write(&input, bytes).expect("write workload");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/granger_timing.py");
    let mut cmd = Command::new(&python);
    for var in ["OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"] {
        if std::env::var_os(var).is_none() {
            cmd.env(var, "1");
        }
    }
    let out = cmd
        .arg(&script)
        .arg(&input)
        .args([pairs.to_string(), points.to_string(), max_lag.to_string()])
        .arg(&output)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("python json");
    let theirs_s = report["seconds"].as_f64().expect("seconds");
    let raw = std::fs::read(&output).expect("read results");
    let theirs: Vec<f64> = raw
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect();

    let (mut max_rel_stat, mut max_rel_p, mut max_abs_p) = (0.0f64, 0.0f64, 0.0f64);
    let mut worst = (0usize, 0usize, 0usize, 0.0f64, 0.0f64);
    for (i, r) in ours.iter().enumerate() {
        for l in &r.lags {
            let base = (i * max_lag + l.lag - 1) * 8;
            let mine = [
                l.ssr_ftest.f,
                l.ssr_ftest.p,
                l.ssr_chi2test.chi2,
                l.ssr_chi2test.p,
                l.lrtest.chi2,
                l.lrtest.p,
                l.params_ftest.f,
                l.params_ftest.p,
            ];
            for (k, (a, b)) in mine.iter().zip(&theirs[base..base + 8]).enumerate() {
                let rel = if *b == 0.0 {
                    (a - b).abs()
                } else {
                    ((a - b) / b).abs()
                };
                if k % 2 == 0 {
                    if rel > max_rel_stat {
                        worst = (i, l.lag, k, *a, *b);
                    }
                    max_rel_stat = max_rel_stat.max(rel);
                } else {
                    max_rel_p = max_rel_p.max(rel);
                    max_abs_p = max_abs_p.max((a - b).abs());
                }
            }
        }
    }
    println!("workload: {pairs} pairs x {points} points, lags 1..={max_lag}");
    println!(
        "sightline-detect: {best:.3} s (best of 3, 1 thread) = {:.0} pairs/s",
        pairs as f64 / best
    );
    println!(
        "statsmodels:      {theirs_s:.3} s = {:.0} pairs/s",
        pairs as f64 / theirs_s
    );
    println!("speed ratio:      {:.1}x", theirs_s / best);
    println!(
        "max rel diff: statistics {max_rel_stat:.2e}, p-values {max_rel_p:.2e} (max abs {max_abs_p:.2e})"
    );
    let names = [
        "ssr_ftest F",
        "",
        "ssr_chi2test",
        "",
        "lrtest",
        "",
        "params_ftest F",
    ];
    println!(
        "largest statistic difference: pair {} lag {} {}: ours {:e}, statsmodels {:e}",
        worst.0, worst.1, names[worst.2], worst.3, worst.4
    );
}
