//! Evaluation of the forecaster and the anomaly detectors, runnable with one command:
//!
//! ```text
//! cargo run -p sightline-detect --release --example forecast_eval            # everything
//! cargo run -p sightline-detect --release --example forecast_eval -- quick   # fewer series
//! cargo run ... -- forecast | nab | anomaly | cost                            # one part
//! cargo run ... -- nab-explore                       # NAB: a grid of post-processing pipelines
//! cargo run ... -- nab-horizons                      # NAB: every forecast origin k = 1..H
//! cargo run ... -- nab-published <NAB>/results       # scorer check on NAB's published scores
//! cargo run ... -- nab-raw <NAB>/results [numenta]   # likelihood check on HTM's raw scores
//! ```
//!
//! 1. Rolling-origin forecasting on generated LLM-service series (hourly, 10 weeks, H = 24,
//!    L = 7H): MASE and sMAPE of N-BEATS-G, N-BEATS-I and seasonal naive (m = 24 and 168).
//! 2. NAB (`$SIGHTLINE_NAB`, default `/work/shared/data/nab`): N-BEATS-G (H = 12, L = 7H)
//!    trained on each file's probationary 15% only, then 1- and 2-step forecasts (and a 2-step
//!    detector retrained as the file is read); rolling-origin MASE/sMAPE, and the NAB scores of
//!    N-BEATS and each baseline detector under the same post-processing pipelines (`nab_eval`;
//!    `SIGHTLINE_NAB_CACHE=<dir>` keeps the expectations between runs; `SIGHTLINE_NAB_H`,
//!    `SIGHTLINE_NAB_SEED` and `SIGHTLINE_NAB_ENSEMBLE=3,5,7` vary the model of `nab-horizons`).
//! 3. Generated series with injected anomalies: precision/recall per window, with the absorbing
//!    and the robust (trimming) rolling calibration.
//! 4. Cost: training time (L = 7H), scoring latency for 10,000 series, memory per model.
//!
//! The example reads files; the library does not.

mod nab_eval;
mod nab_explore;
mod nab_io;

use std::time::Instant;

use sightline_detect::anomaly::{
    AnomalyConfig, Calibration, DetectorKind, Direction, SustainedConfig, detect,
};
use sightline_detect::forecast::baseline::seasonal_naive;
use sightline_detect::forecast::metrics::{mase, smape};
use sightline_detect::forecast::synthetic::llm_service_set;
use sightline_detect::forecast::{
    Architecture, Basis, NBeatsConfig, TrainConfig, TrainedModel, no_progress, train,
};
use sightline_detect::nab::{CostProfile, NabFile, score_detector, window_precision_recall};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn interpretable_weekly(h: usize) -> NBeatsConfig {
    let mut cfg = NBeatsConfig::small(Architecture::Interpretable, h, 7);
    for s in &mut cfg.stacks {
        if let Basis::Seasonality { resolution } = &mut s.basis {
            *resolution = 7; // weekly cycle = 1/7 cycle per daily horizon
        }
    }
    cfg
}

/// Training settings of part 1 (and of the cost part's training time).
fn part1_training() -> TrainConfig {
    TrainConfig {
        max_steps: 800,
        batch_size: 256,
        validation_horizons: 7,
        eval_every: 50,
        patience: 6,
        ..TrainConfig::default()
    }
}

/// Part 1: rolling-origin accuracy on the generated set. Returns mean training seconds.
fn generated_forecasting(count: usize) -> Res<f64> {
    const H: usize = 24;
    const ORIGINS: usize = 7;
    let set = llm_service_set(count, 10, 0, 0.0, 2025);
    let train_cfg = part1_training();
    let models: Vec<(&str, NBeatsConfig)> = vec![
        (
            "N-BEATS-G",
            NBeatsConfig::small(Architecture::Generic, H, 7),
        ),
        ("N-BEATS-I", interpretable_weekly(H)),
    ];
    let mut rows: Vec<(String, Vec<f64>, Vec<f64>)> = Vec::new();
    for (name, _) in &models {
        rows.push((name.to_string(), Vec::new(), Vec::new()));
    }
    rows.push(("N-BEATS median(G,I)".into(), Vec::new(), Vec::new()));
    rows.push(("seasonal naive m=24".into(), Vec::new(), Vec::new()));
    rows.push(("seasonal naive m=168".into(), Vec::new(), Vec::new()));
    let mut train_secs = Vec::new();
    println!(
        "\n## 1. Generated LLM-service series: rolling origin, H=24, L=7H, {ORIGINS} daily origins\n"
    );
    println!(
        "| series | N-BEATS-G MASE | N-BEATS-I MASE | seasonal naive 24 MASE | seasonal naive 168 MASE |"
    );
    println!("|---|---|---|---|---|");
    for s in &set {
        let n = s.values.len();
        let cut = n - ORIGINS * H;
        let history = &s.values[..cut];
        let mut trained: Vec<TrainedModel> = Vec::new();
        for (_, cfg) in &models {
            let t0 = Instant::now();
            trained.push(train(
                history,
                Some(&s.timestamps[..cut]),
                cfg,
                &train_cfg,
                &mut no_progress,
            )?);
            train_secs.push(t0.elapsed().as_secs_f64());
        }
        let mut per = vec![(Vec::new(), Vec::new()); rows.len()];
        for k in 0..ORIGINS {
            let o = cut + k * H;
            let actual = &s.values[o..o + H];
            let past = &s.values[..o];
            let mut fc: Vec<Vec<f64>> = trained
                .iter()
                .map(|m| m.forecast(past))
                .collect::<Result<_, _>>()?;
            let med: Vec<f64> = (0..H).map(|i| 0.5 * (fc[0][i] + fc[1][i])).collect();
            fc.push(med);
            fc.push(seasonal_naive(past, 24, H)?);
            fc.push(seasonal_naive(past, 168, H)?);
            for (j, f) in fc.iter().enumerate() {
                per[j].0.push(mase(actual, f, history, 24)?);
                per[j].1.push(smape(actual, f)?);
            }
        }
        for (j, (m, sm)) in per.iter().enumerate() {
            rows[j].1.push(mean(m));
            rows[j].2.push(mean(sm));
        }
        println!(
            "| {} | {:.3} | {:.3} | {:.3} | {:.3} |",
            s.name,
            mean(&per[0].0),
            mean(&per[1].0),
            mean(&per[3].0),
            mean(&per[4].0)
        );
    }
    if let Ok(python) = std::env::var("SIGHTLINE_PYTHON") {
        let t0 = Instant::now();
        match autoets(&python, &set, H, ORIGINS) {
            Ok((m, sm)) => {
                println!(
                    "\n(AutoETS via statsforecast: {:.0} s for all fits)",
                    t0.elapsed().as_secs_f64()
                );
                rows.push(("statsforecast AutoETS m=24".into(), m, sm));
            }
            Err(e) => println!("\n(AutoETS skipped: {e})"),
        }
    }
    println!("\n| model | mean MASE (m=24 scale) | mean sMAPE % | MASE / seasonal naive 24 |");
    println!("|---|---|---|---|");
    let base = mean(&rows[3].1);
    for (name, m, s) in &rows {
        println!(
            "| {name} | {:.3} | {:.2} | {:.3} |",
            mean(m),
            mean(s),
            mean(m) / base
        );
    }
    Ok(mean(&train_secs))
}

/// AutoETS (statsforecast) forecasts at the same origins; returns per-series mean MASE, sMAPE.
fn autoets(
    python: &str,
    set: &[sightline_detect::forecast::synthetic::GeneratedSeries],
    h: usize,
    origins: usize,
) -> Res<(Vec<f64>, Vec<f64>)> {
    let series: Vec<serde_json::Value> = set
        .iter()
        .map(|s| {
            let cut = s.values.len() - origins * h;
            let o: Vec<usize> = (0..origins).map(|k| cut + k * h).collect();
            serde_json::json!({"name": s.name, "values": s.values, "origins": o})
        })
        .collect();
    let req = serde_json::json!({"season": 24, "horizon": h, "series": series});
    let path = std::env::temp_dir().join("sightline_autoets_request.json");
    std::fs::write(&path, serde_json::to_vec(&req)?)?;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/autoets_forecast.py"
    );
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(&path)
        .output()?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned().into());
    }
    let resp: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let (mut ms, mut ss) = (Vec::new(), Vec::new());
    for (s, per) in set
        .iter()
        .zip(resp["forecasts"].as_array().ok_or("bad response")?)
    {
        let cut = s.values.len() - origins * h;
        let (mut m, mut sm) = (Vec::new(), Vec::new());
        for (k, f) in per.as_array().ok_or("bad response")?.iter().enumerate() {
            let f: Vec<f64> = serde_json::from_value(f.clone())?;
            let o = cut + k * h;
            m.push(mase(&s.values[o..o + h], &f, &s.values[..cut], 24)?);
            sm.push(smape(&s.values[o..o + h], &f)?);
        }
        ms.push(mean(&m));
        ss.push(mean(&sm));
    }
    Ok((ms, ss))
}

/// Part 2: NAB forecasting accuracy and NAB scores of every detector under each pipeline.
fn nab(limit: usize, explore: bool) -> Res<()> {
    let t0 = Instant::now();
    let files = nab_eval::corpus(limit)?;
    let all = nab_eval::expectations(&files)?;
    let posts = if explore {
        nab_explore::explore_posts()
    } else {
        nab_eval::report_posts()
    };
    nab_eval::table(&files, &all, &posts)?;
    if explore {
        nab_explore::breakdown(&files, &all[nab_eval::HEADLINE], nab_eval::recommended())?;
    }
    println!("\n(NAB part: {:.0} s in total)", t0.elapsed().as_secs_f64());
    Ok(())
}

/// Scorer check: score the anomaly scores that published NAB detectors wrote (NAB's `results/`
/// directory) with this crate's scorer, next to the scores NAB itself published for them
/// (`results/final_results.json`), so a scorer bug shows as a mismatch.
fn nab_published(results: &std::path::Path) -> Res<()> {
    let root = std::env::var("SIGHTLINE_NAB").unwrap_or_else(|_| "/work/shared/data/nab".into());
    let files = nab_io::load(std::path::Path::new(&root))?;
    let published: serde_json::Value = std::fs::read(results.join("final_results.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    let mut detectors: Vec<String> = std::fs::read_dir(results)?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    detectors.sort();
    println!(
        "\n## NAB scorer check against published results ({})\n",
        results.display()
    );
    println!("| detector | standard (ours / NAB) | low FP (ours / NAB) | low FN (ours / NAB) |");
    println!("|---|---|---|---|");
    let profiles = [
        ("standard", CostProfile::STANDARD),
        ("reward_low_FP_rate", CostProfile::LOW_FP),
        ("reward_low_FN_rate", CostProfile::LOW_FN),
    ];
    for det in detectors {
        let mut nab_files = Vec::with_capacity(files.len());
        for f in &files {
            nab_files.push(NabFile {
                name: f.name.clone(),
                scores: nab_io::load_published(results, &det, f)?,
                windows: f.windows.clone(),
            });
        }
        let mut cells = Vec::new();
        for (key, profile) in profiles {
            let ours = score_detector(&nab_files, profile)?.normalized;
            let theirs = published[&det][key].as_f64().unwrap_or(f64::NAN);
            cells.push(format!("{ours:.2} / {theirs:.2}"));
        }
        println!("| {det} | {} |", cells.join(" | "));
    }
    Ok(())
}

/// Part 3: injected anomalies on generated series.
fn generated_anomalies(count: usize) -> Res<()> {
    const H: usize = 24;
    let set = llm_service_set(count, 10, 4, 6.0, 77);
    let model_cfg = NBeatsConfig::small(Architecture::Generic, H, 7);
    let train_cfg = TrainConfig {
        max_steps: 600,
        validation_horizons: 3,
        ..TrainConfig::default()
    };
    let sustained = SustainedConfig {
        window: 3,
        min_breaches: 2,
        recovery: 2,
        min_volume: None,
    };
    let detectors = [
        ("N-BEATS", DetectorKind::NBeats),
        (
            "seasonal naive m=168",
            DetectorKind::SeasonalNaive {
                season: 168,
                window: 48,
            },
        ),
        (
            "rolling z-score",
            DetectorKind::RollingZScore { window: 48 },
        ),
        (
            "rolling median/MAD",
            DetectorKind::RollingMedianMad { window: 48 },
        ),
    ];
    let calibrations = [
        (
            "rolling, absorbs",
            Calibration::Rolling {
                window: 336,
                min_points: 48,
                exclude_breaches: false,
            },
        ),
        (
            "robust rolling, trims (clip 2.5)",
            Calibration::RollingRobust {
                window: 336,
                min_points: 48,
                clip: 2.5,
            },
        ),
    ];
    let mut stats = vec![(0usize, 0usize, 0usize, 0usize); detectors.len() * calibrations.len()];
    for s in &set {
        // Train on the first 4 weeks (anomalies are injected after 40% of the series).
        let train_len = 4 * 7 * 24;
        let model = train(
            &s.values[..train_len],
            None,
            &model_cfg,
            &train_cfg,
            &mut no_progress,
        )?;
        for (k, d) in (0..calibrations.len() * detectors.len()).map(|i| (i / detectors.len(), i)) {
            let cfg = AnomalyConfig {
                detector: detectors[d % detectors.len()].1.clone(),
                direction: Direction::Both,
                alpha: 0.005,
                calibration: calibrations[k].1,
                sustained: sustained.clone(),
                forecast_origin: 1,
            };
            let r = detect(&s.values, None, &cfg, Some(&model))?;
            let starts: Vec<usize> = r
                .alerts
                .iter()
                .map(|a| a.start)
                .filter(|i| *i >= train_len)
                .collect();
            let (p, rc) = window_precision_recall(&starts, &s.anomaly_windows, 3);
            let correct = (p * starts.len() as f64).round() as usize;
            let found = (rc * s.anomaly_windows.len() as f64).round() as usize;
            stats[d].0 += correct;
            stats[d].1 += starts.len();
            stats[d].2 += found;
            stats[d].3 += s.anomaly_windows.len();
        }
    }
    println!(
        "\n## 3. Generated series with injected anomalies ({count} series x 4 windows, 6 sigma, 2-of-3 sustained, alpha 0.005)\n"
    );
    println!(
        "| detector | calibration | precision (alerts in a window) | recall (windows found) |"
    );
    println!("|---|---|---|---|");
    for (d, (c, a, f, w)) in stats.iter().copied().enumerate() {
        let name = detectors[d % detectors.len()].0;
        let cal = calibrations[d / detectors.len()].0;
        println!(
            "| {name} | {cal} | {:.2} ({c}/{a}) | {:.2} ({f}/{w}) |",
            c as f64 / a.max(1) as f64,
            f as f64 / w.max(1) as f64
        );
    }
    Ok(())
}

/// Part 4: cost.
fn cost(train_secs: f64) -> Res<()> {
    const H: usize = 24;
    let set = llm_service_set(1, 10, 0, 0.0, 5);
    let s = &set[0].values;
    let cfg = NBeatsConfig::small(Architecture::Generic, H, 7);
    let model = train(
        &s[..1200],
        None,
        &cfg,
        &TrainConfig {
            max_steps: 50,
            ..TrainConfig::default()
        },
        &mut no_progress,
    )?;
    let windows: Vec<&[f64]> = (0..10_000).map(|i| &s[i % 400..i % 400 + 168]).collect();
    let t0 = Instant::now();
    let fc = model.forecast_many(&windows)?;
    let forecast_ms = t0.elapsed().as_secs_f64() * 1e3;
    // conformal scoring of the next point of each series against a 500-point calibration set
    let t1 = Instant::now();
    let cal: Vec<f64> = (0..500).map(|i| ((i as f64) * 0.37).sin()).collect();
    let calib = sightline_detect::anomaly::Calibrator::fit(&cal, Direction::Both, 0.01)?;
    let mut acc = 0.0;
    for (w, f) in windows.iter().zip(&fc) {
        acc += calib.score((w[w.len() - 1] - f[0]) / 10.0);
    }
    let score_ms = t1.elapsed().as_secs_f64() * 1e3;
    let saved = model.to_bytes()?;
    // run alone, time one training of part 1's first series with part 1's settings
    let (train_secs, train_note) = if train_secs.is_finite() {
        (train_secs, "mean of part 1")
    } else {
        let gen_set = llm_service_set(1, 10, 0, 0.0, 2025);
        let g = &gen_set[0];
        let cut = g.values.len() - 7 * H;
        let t0 = Instant::now();
        train(
            &g.values[..cut],
            Some(&g.timestamps[..cut]),
            &cfg,
            &part1_training(),
            &mut no_progress,
        )?;
        (t0.elapsed().as_secs_f64(), "one series of part 1")
    };
    println!("\n## 4. Cost (this machine)\n");
    println!("| measure | value |");
    println!("|---|---|");
    println!(
        "| training one series, N-BEATS small, L=7H=168, H=24 ({train_note}, early stopping) | {train_secs:.1} s |"
    );
    println!("| one-step forecast for 10,000 series (batched, L=168) | {forecast_ms:.0} ms |");
    println!("| conformal scoring of 10,000 points | {score_ms:.1} ms (checksum {acc:.1}) |");
    println!(
        "| parameters per model (small generic) | {} ({} KiB f32) |",
        model.network().parameter_count(),
        model.network().parameter_count() * 4 / 1024
    );
    println!(
        "| saved model: safetensors + card | {} KiB + {} B |",
        saved.weights.len() / 1024,
        saved.card_json.len()
    );
    Ok(())
}

fn main() -> Res<()> {
    let quick = std::env::args().any(|a| a == "quick");
    let only = std::env::args().nth(1).unwrap_or_default();
    let (gen_count, nab_limit) = if quick { (4, 12) } else { (8, usize::MAX) };
    let mut train_secs = f64::NAN;
    if only == "nab-horizons" {
        let files = nab_eval::corpus(nab_limit)?;
        let t0 = Instant::now();
        let h = std::env::var("SIGHTLINE_NAB_H")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(6);
        let hz = nab_explore::horizon_expectations(&files, h)?;
        println!("horizon expectations: {:.0} s", t0.elapsed().as_secs_f64());
        return nab_explore::horizon_table(&files, &hz);
    }
    if only == "nab-raw" {
        let dir = std::env::args()
            .nth(2)
            .ok_or("usage: forecast_eval nab-raw <results> <detector>")?;
        let det = std::env::args().nth(3).unwrap_or_else(|| "numenta".into());
        return nab_explore::published_raw(std::path::Path::new(&dir), &det);
    }
    if only == "nab-published" {
        let dir = std::env::args()
            .nth(2)
            .ok_or("usage: forecast_eval nab-published <NAB results directory>")?;
        return nab_published(std::path::Path::new(&dir));
    }
    if only.is_empty() || only == "quick" || only == "forecast" {
        let t0 = Instant::now();
        train_secs = generated_forecasting(gen_count)?;
        println!("\n(part 1: {:.0} s)", t0.elapsed().as_secs_f64());
    }
    if only.is_empty() || only == "quick" || only == "nab" || only == "nab-explore" {
        nab(nab_limit, only == "nab-explore")?;
    }
    if only.is_empty() || only == "quick" || only == "anomaly" {
        let t0 = Instant::now();
        generated_anomalies(gen_count)?;
        println!("\n(part 3: {:.0} s)", t0.elapsed().as_secs_f64());
    }
    if only.is_empty() || only == "quick" || only == "cost" {
        cost(train_secs)?;
    }
    Ok(())
}
