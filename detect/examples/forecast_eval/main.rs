//! Evaluation of the forecaster and the anomaly detectors, runnable with one command:
//!
//! ```text
//! cargo run -p sightline-detect --release --example forecast_eval            # everything
//! cargo run -p sightline-detect --release --example forecast_eval -- quick   # fewer series
//! ```
//!
//! 1. Rolling-origin forecasting on generated LLM-service series (hourly, 10 weeks, H = 24,
//!    L = 7H): MASE and sMAPE of N-BEATS-G, N-BEATS-I and seasonal naive (m = 24 and 168).
//! 2. NAB (`$SIGHTLINE_NAB`, default `/work/shared/data/nab`): N-BEATS trained on each file's
//!    probationary 15% only, then one-step forecasts; rolling-origin MASE/sMAPE, and the NAB
//!    standard score of N-BEATS and each baseline detector.
//! 3. Generated series with injected anomalies: precision/recall per window.
//! 4. Cost: training time (L = 7H), scoring latency for 10,000 series, memory per model.
//!
//! The example reads files; the library does not.

mod nab_io;

use std::time::Instant;

use sightline_detect::anomaly::expect;
use sightline_detect::anomaly::{
    AnomalyConfig, Calibration, DetectorKind, Direction, SustainedConfig, detect, score_expectation,
};
use sightline_detect::forecast::baseline::seasonal_naive;
use sightline_detect::forecast::metrics::{mase, smape};
use sightline_detect::forecast::synthetic::llm_service_set;
use sightline_detect::forecast::{
    Architecture, Basis, NBeatsConfig, TrainConfig, TrainedModel, no_progress, train,
};
use sightline_detect::nab::{
    CostProfile, NabFile, onset_scores, score_detector, window_precision_recall,
};

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

/// Part 1: rolling-origin accuracy on the generated set. Returns mean training seconds.
fn generated_forecasting(count: usize) -> Res<f64> {
    const H: usize = 24;
    const ORIGINS: usize = 7;
    let set = llm_service_set(count, 10, 0, 0.0, 2025);
    let train_cfg = TrainConfig {
        max_steps: 800,
        batch_size: 256,
        validation_horizons: 7,
        eval_every: 50,
        patience: 6,
        ..TrainConfig::default()
    };
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

fn nab_season(ts: &[i64]) -> usize {
    let step = ts
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 0)
        .min()
        .unwrap_or(300)
        .max(1);
    (86_400 / step).max(1) as usize
}

/// Part 2: NAB forecasting accuracy and NAB scores.
fn nab(limit: usize) -> Res<()> {
    let root = std::env::var("SIGHTLINE_NAB").unwrap_or_else(|_| "/work/shared/data/nab".into());
    let files = nab_io::load(std::path::Path::new(&root))?;
    let files: Vec<_> = files.into_iter().take(limit).collect();
    const H: usize = 6;
    let model_cfg = {
        let mut c = NBeatsConfig::small(Architecture::Generic, H, 7);
        for s in &mut c.stacks {
            s.width = 64;
        }
        c
    };
    let train_cfg = TrainConfig {
        max_steps: 300,
        batch_size: 128,
        validation_horizons: 4,
        eval_every: 50,
        patience: 3,
        ..TrainConfig::default()
    };
    let detectors = [
        "N-BEATS",
        "seasonal naive",
        "rolling z-score",
        "rolling median/MAD",
    ];
    // raw conformal scores per detector per file
    let mut raw: Vec<Vec<Vec<f64>>> = vec![Vec::new(); detectors.len()];
    let (mut nb_mase, mut sn_mase, mut nb_smape, mut sn_smape) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let t0 = Instant::now();
    for f in &files {
        let n = f.values.len();
        let prob = sightline_detect::nab::probationary_len(n);
        let season = nab_season(&f.timestamps);
        let season = if season * 3 > n { 1 } else { season };
        let cal = Calibration::Rolling {
            window: 1000,
            min_points: 50,
            exclude_breaches: false,
        };
        let model = train(
            &f.values[..prob],
            None,
            &model_cfg,
            &train_cfg,
            &mut no_progress,
        )
        .ok();
        for (d, det) in detectors.iter().enumerate() {
            let exp = match *det {
                "N-BEATS" => match &model {
                    Some(m) => expect::nbeats_one_step(m, &f.values),
                    None => expect::rolling_median_mad(&f.values, 100),
                },
                "seasonal naive" => expect::seasonal_naive(&f.values, season, 100),
                "rolling z-score" => expect::rolling_zscore(&f.values, 100),
                _ => expect::rolling_median_mad(&f.values, 100),
            }?;
            let missing = vec![false; n];
            let s = score_expectation(&f.values, &missing, &exp, Direction::Both, 0.01, cal)?;
            let mut full = vec![0.0; n];
            full[s.start..].copy_from_slice(&s.score);
            raw[d].push(full);
        }
        // forecasting accuracy after the probationary period, 40 origins
        if let Some(m) = &model {
            let l = m.card.model.lookback;
            let first = prob.max(l).max(season);
            if n > first + H + 40 {
                let (mut a, mut b, mut c, mut d2) = (vec![], vec![], vec![], vec![]);
                for k in 0..40 {
                    let o = first + (n - first - H) * k / 40;
                    let actual = &f.values[o..o + H];
                    let fc = m.forecast(&f.values[..o])?;
                    let sn = seasonal_naive(&f.values[..o], season, H)?;
                    if let (Ok(x), Ok(y)) = (
                        mase(actual, &fc, &f.values[..prob], season),
                        mase(actual, &sn, &f.values[..prob], season),
                    ) {
                        a.push(x);
                        b.push(y);
                    }
                    c.push(smape(actual, &fc)?);
                    d2.push(smape(actual, &sn)?);
                }
                if !a.is_empty() {
                    nb_mase.push(mean(&a));
                    sn_mase.push(mean(&b));
                }
                nb_smape.push(mean(&c));
                sn_smape.push(mean(&d2));
            }
        }
    }
    println!(
        "\n## 2. NAB ({} files, {:.0} s for training + scoring)\n",
        files.len(),
        t0.elapsed().as_secs_f64()
    );
    println!(
        "Forecasting, H=6, N-BEATS trained on the probationary 15% only, 40 origins per file:\n"
    );
    println!("| model | mean MASE | median MASE | mean sMAPE % |");
    println!("|---|---|---|---|");
    let med = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        s.get(s.len() / 2).copied().unwrap_or(f64::NAN)
    };
    println!(
        "| N-BEATS-G | {:.3} | {:.3} | {:.2} |",
        mean(&nb_mase),
        med(&nb_mase),
        mean(&nb_smape)
    );
    println!(
        "| seasonal naive (daily) | {:.3} | {:.3} | {:.2} |",
        mean(&sn_mase),
        med(&sn_mase),
        mean(&sn_smape)
    );
    println!(
        "\nNAB standard profile (A_TP=1, A_FP=-0.11, A_FN=-1), threshold optimised per detector:\n"
    );
    println!(
        "| detector | post-processing | NAB standard | low FP | low FN | windows found | FPs |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (d, det) in detectors.iter().enumerate() {
        for (min_run, cooldown) in [(1usize, 0usize), (1, 200), (3, 200)] {
            let nab_files: Vec<NabFile> = files
                .iter()
                .zip(&raw[d])
                .map(|(f, s)| NabFile {
                    name: f.name.clone(),
                    scores: if cooldown == 0 && min_run == 1 {
                        s.clone()
                    } else {
                        onset_scores(s, min_run, cooldown)
                    },
                    windows: f.windows.clone(),
                })
                .collect();
            let std = score_detector(&nab_files, CostProfile::STANDARD)?;
            let lfp = score_detector(&nab_files, CostProfile::LOW_FP)?;
            let lfn = score_detector(&nab_files, CostProfile::LOW_FN)?;
            let post = if cooldown == 0 {
                "raw score".to_string()
            } else {
                format!("onset(run {min_run}, cooldown {cooldown})")
            };
            println!(
                "| {det} | {post} | {:.1} | {:.1} | {:.1} | {}/{} | {} |",
                std.normalized,
                lfp.normalized,
                lfn.normalized,
                std.best.detected_windows,
                std.best.windows,
                std.best.false_positives
            );
        }
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
    let mut stats = vec![(0usize, 0usize, 0usize, 0usize); detectors.len()];
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
        for (d, (_, det)) in detectors.iter().enumerate() {
            let cfg = AnomalyConfig {
                detector: det.clone(),
                direction: Direction::Both,
                alpha: 0.005,
                calibration: Calibration::Rolling {
                    window: 336,
                    min_points: 48,
                    exclude_breaches: false,
                },
                sustained: sustained.clone(),
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
    println!("| detector | precision (alerts in a window) | recall (windows found) |");
    println!("|---|---|---|");
    for (d, (name, _)) in detectors.iter().enumerate() {
        let (c, a, f, w) = stats[d];
        println!(
            "| {name} | {:.2} ({c}/{a}) | {:.2} ({f}/{w}) |",
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
    println!("\n## 4. Cost (this machine)\n");
    println!("| measure | value |");
    println!("|---|---|");
    println!(
        "| training one series, N-BEATS small, L=7H=168, H=24 (mean of part 1, early stopping) | {train_secs:.1} s |"
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
    if only.is_empty() || only == "quick" || only == "forecast" {
        train_secs = generated_forecasting(gen_count)?;
    }
    if only.is_empty() || only == "quick" || only == "nab" {
        nab(nab_limit)?;
    }
    if only.is_empty() || only == "quick" || only == "anomaly" {
        generated_anomalies(gen_count)?;
    }
    if only.is_empty() || only == "quick" || only == "cost" {
        cost(train_secs)?;
    }
    Ok(())
}
