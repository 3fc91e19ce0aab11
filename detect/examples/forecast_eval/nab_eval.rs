//! Part 2 of the evaluation: NAB. Per file, each detector's expectations (N-BEATS 1- and
//! 2-step, trained on the probationary 15% only, and the baselines) are turned into per-point NAB
//! scores by one of several post-processing pipelines; every detector goes through the same
//! pipelines, and the threshold is optimised per detector and profile over the whole corpus.
//!
//! `SIGHTLINE_NAB_CACHE=<dir>` keeps the expectations (the expensive part) between runs.
//! Exploration beyond the reported tables lives in `nab_explore`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use sightline_detect::anomaly::expect::{self, Expectation};
use sightline_detect::anomaly::{
    Calibration, Direction, LikelihoodConfig, ResidualLikelihoodConfig, anomaly_likelihood,
    first_detections, log_likelihood, residual_likelihood_scores, score_expectation,
    spatial_novelty,
};
use sightline_detect::forecast::baseline::seasonal_naive;
use sightline_detect::forecast::metrics::{mase, smape};
use sightline_detect::forecast::{
    Architecture, NBeatsConfig, TrainConfig, TrainedModel, no_progress, train,
};
use sightline_detect::nab::{
    CostProfile, NabFile, NabScore, onset_scores, probationary_len, score_detector,
};

use crate::nab_io::{self, NabSeries};
use crate::{Res, mean};

/// Detectors compared on NAB, in table order.
pub const DETECTORS: [&str; 6] = [
    "N-BEATS",
    "N-BEATS 2-step",
    "N-BEATS 2-step online",
    "seasonal naive",
    "rolling z-score",
    "rolling median/MAD",
];

/// Expectations as cached on disk.
#[derive(Serialize, Deserialize)]
struct Cached {
    start: usize,
    expected: Vec<f64>,
    scale: Vec<f64>,
}

/// How per-point scores are made from a detector's expectations.
#[derive(Debug, Clone, Copy)]
pub enum Post {
    /// Conformal score (rolling calibration over `cal` residuals), every point.
    Raw { cal: usize },
    /// Conformal score, then [`onset_scores`].
    Onset {
        cal: usize,
        run: usize,
        cooldown: usize,
    },
    /// Spatial novelty alone (1 where the value leaves the range seen so far, else 0): the
    /// floor that any forecaster has to improve on.
    Novelty,
    /// [`residual_likelihood_scores`]: standardised residuals saturating at `saturation`
    /// scales, streaming anomaly likelihood with HTM's settings, spatial novelty (5%).
    Streaming { saturation: f64 },
    /// Anomaly likelihood of the conformal score, log-scaled, first detections with
    /// `cooldown`, and spatial novelty (after `novelty_quiet` quiet points) forced to 1.
    Likelihood {
        cal: usize,
        /// Robust (trimming) rolling calibration instead of the absorbing one.
        robust: bool,
        /// Standardise residuals by the mean absolute residual of the previous this-many points
        /// (the forecaster's own recent error) instead of the detector's scale.
        residual_scale: Option<usize>,
        /// A second short window; the score is the larger of the two log-likelihoods.
        extra_short: Option<usize>,
        /// Feed the likelihood `−ln p` (surprise) instead of the conformal score `1 − p`.
        surprise: bool,
        lik: LikelihoodConfig,
        spatial: Option<f64>,
        /// Novelty fires only after this many points without novelty (0: always).
        novelty_quiet: usize,
        /// Cooldown of [`first_detections`] on the likelihood stream.
        cooldown: usize,
    },
}

impl Post {
    pub fn label(&self) -> String {
        match self {
            Post::Streaming { saturation } => {
                format!("streaming likelihood of min(1, abs z / {saturation}) + novelty 0.05")
            }
            Post::Raw { cal } => format!("conformal score (cal {cal})"),
            Post::Novelty => "spatial novelty only (tolerance 0)".into(),
            Post::Onset { cal, run, cooldown } => {
                format!("conformal (cal {cal}), onset run {run}, cooldown {cooldown}")
            }
            Post::Likelihood {
                cal,
                robust,
                residual_scale,
                extra_short,
                surprise,
                lik,
                spatial,
                novelty_quiet,
                cooldown,
            } => format!(
                "likelihood({}{}{}, cal {cal}{}, short {}{}, long {}, std≥{}){}, cooldown {cooldown}",
                if *surprise { "-ln p" } else { "1-p" },
                residual_scale
                    .map(|w| format!(", residual scale {w}"))
                    .unwrap_or_default(),
                if lik.two_sided { ", two-sided" } else { "" },
                if *robust { " robust" } else { "" },
                lik.short_window,
                extra_short.map(|s| format!("+{s}")).unwrap_or_default(),
                lik.long_window,
                lik.min_std,
                spatial
                    .map(|t| format!(" + novelty {t} (quiet {novelty_quiet})"))
                    .unwrap_or_default()
            ),
        }
    }
}

fn conformal(values: &[f64], exp: &Expectation, cal: usize, robust: bool) -> Res<Vec<f64>> {
    let n = values.len();
    let calibration = if robust {
        Calibration::RollingRobust {
            window: cal,
            min_points: 50,
            clip: 2.5,
        }
    } else {
        Calibration::Rolling {
            window: cal,
            min_points: 50,
            exclude_breaches: false,
        }
    };
    let missing = vec![false; n];
    let s = score_expectation(values, &missing, exp, Direction::Both, 0.01, calibration)?;
    let mut full = vec![f64::NAN; n];
    full[s.start..].copy_from_slice(&s.score);
    Ok(full)
}

/// `exp` with each scale replaced by the mean absolute residual of the previous `w` points
/// (floored at 1e-3 of the detector's own scale; the detector's scale until `w` residuals exist).
fn residual_scaled(values: &[f64], exp: &Expectation, w: usize) -> Expectation {
    let abs_res: Vec<f64> = exp
        .expected
        .iter()
        .enumerate()
        .map(|(i, e)| (values[exp.start + i] - e).abs())
        .collect();
    let mut scale = Vec::with_capacity(abs_res.len());
    let mut sum = 0.0;
    for i in 0..abs_res.len() {
        if i >= w {
            let m = sum / w as f64;
            scale.push(m.max(1e-3 * exp.scale[i]).max(1e-12));
        } else {
            scale.push(exp.scale[i]);
        }
        sum += abs_res[i];
        if i >= w {
            sum -= abs_res[i - w];
        }
    }
    Expectation {
        start: exp.start,
        expected: exp.expected.clone(),
        scale,
    }
}

/// Per-point NAB scores of one file.
pub fn post_process(values: &[f64], exp: &Expectation, post: Post) -> Res<Vec<f64>> {
    let n = values.len();
    let prob = probationary_len(n);
    Ok(match post {
        Post::Streaming { saturation } => residual_likelihood_scores(
            values,
            exp,
            &ResidualLikelihoodConfig {
                saturation,
                ..ResidualLikelihoodConfig::for_probationary(prob)
            },
            None,
        )?,
        Post::Raw { cal } => conformal(values, exp, cal, false)?
            .into_iter()
            .map(|v| if v.is_finite() { v } else { 0.0 })
            .collect(),
        Post::Novelty => spatial_novelty(values, 0.0, prob / 2, None)
            .into_iter()
            .map(|b| if b { 1.0 } else { 0.0 })
            .collect(),
        Post::Onset { cal, run, cooldown } => {
            let c: Vec<f64> = conformal(values, exp, cal, false)?
                .into_iter()
                .map(|v| if v.is_finite() { v } else { 0.0 })
                .collect();
            onset_scores(&c, run, cooldown)
        }
        Post::Likelihood {
            cal,
            robust,
            residual_scale,
            extra_short,
            surprise,
            lik,
            spatial,
            novelty_quiet,
            cooldown,
        } => {
            let rescaled;
            let exp = match residual_scale {
                Some(w) => {
                    rescaled = residual_scaled(values, exp, w);
                    &rescaled
                }
                None => exp,
            };
            let mut c = conformal(values, exp, cal, robust)?;
            if surprise {
                for v in &mut c {
                    *v = -(1.0 - *v).max(1e-12).ln();
                }
            }
            let l = anomaly_likelihood(&c, &lik)?;
            let mut s: Vec<f64> = l.into_iter().map(log_likelihood).collect();
            if let Some(short) = extra_short {
                let cfg = LikelihoodConfig {
                    short_window: short,
                    ..lik
                };
                for (v, e) in s.iter_mut().zip(anomaly_likelihood(&c, &cfg)?) {
                    *v = v.max(log_likelihood(e));
                }
            }
            let mut s = first_detections(&s, cooldown);
            if let Some(tol) = spatial {
                let novel: Vec<f64> = spatial_novelty(values, tol, prob / 2, None)
                    .into_iter()
                    .map(|b| if b { 1.0 } else { 0.0 })
                    .collect();
                let novel = if novelty_quiet > 0 {
                    first_detections(&novel, novelty_quiet)
                } else {
                    novel
                };
                for (v, n) in s.iter_mut().zip(novel) {
                    *v = v.max(n);
                }
            }
            s
        }
    })
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

/// Forecast horizon of the NAB models.
const H: usize = 12;

/// Forecast origin of the headline detector: `ŷ_t` is forecast from the values before `t − 1`,
/// so the first point of an excursion is not yet in the lookback of the second's forecast.
const K: usize = 2;

/// Index of the headline detector ("N-BEATS 2-step") in [`DETECTORS`].
pub const HEADLINE: usize = 1;

/// N-BEATS-G (L = 7H, width 64) and its training settings for NAB files.
pub fn nab_model(h: usize) -> (NBeatsConfig, TrainConfig) {
    let mut model_cfg = NBeatsConfig::small(Architecture::Generic, h, 7);
    for s in &mut model_cfg.stacks {
        s.width = 64;
    }
    let train_cfg = TrainConfig {
        max_steps: 300,
        batch_size: 128,
        validation_horizons: 4,
        eval_every: 50,
        patience: 3,
        ..TrainConfig::default()
    };
    (model_cfg, train_cfg)
}

fn detector_names() -> Vec<String> {
    DETECTORS.iter().map(|d| format!("h{H}-{d}")).collect()
}

/// Expectations of every detector for every file (`[detector][file]`), computed or cached;
/// prints the forecasting-accuracy table on the way when computed.
pub fn expectations(files: &[NabSeries]) -> Res<Vec<Vec<Expectation>>> {
    let cache: Option<PathBuf> = std::env::var("SIGHTLINE_NAB_CACHE").ok().map(PathBuf::from);
    if let Some(dir) = &cache
        && let Ok(all) = load_cache(dir, files.len(), &detector_names())
    {
        println!("(expectations read from {})", dir.display());
        return Ok(all);
    }
    let (model_cfg, train_cfg) = nab_model(H);
    let mut all: Vec<Vec<Expectation>> = vec![Vec::new(); DETECTORS.len()];
    let (mut nb_mase, mut sn_mase, mut nb_smape, mut sn_smape) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let t0 = Instant::now();
    for f in files {
        let n = f.values.len();
        let prob = probationary_len(n);
        let season = nab_season(&f.timestamps);
        let season = if season * 3 > n { 1 } else { season };
        let model = train(
            &f.values[..prob],
            None,
            &model_cfg,
            &train_cfg,
            &mut no_progress,
        )
        .ok();
        for (d, det) in DETECTORS.iter().enumerate() {
            let exp = match *det {
                "N-BEATS" => match &model {
                    Some(m) => expect::nbeats_one_step(m, &f.values),
                    None => expect::rolling_median_mad(&f.values, 100),
                },
                "N-BEATS 2-step online" => match &model {
                    Some(m) => online_k_step(m, &f.values, prob, K, &model_cfg, &train_cfg),
                    None => expect::rolling_median_mad(&f.values, 100),
                },
                "N-BEATS 2-step" => match &model {
                    Some(m) => expect::nbeats_k_step(m, &f.values, K),
                    None => expect::rolling_median_mad(&f.values, 100),
                },
                "seasonal naive" => expect::seasonal_naive(&f.values, season, 100),
                "rolling z-score" => expect::rolling_zscore(&f.values, 100),
                _ => expect::rolling_median_mad(&f.values, 100),
            }?;
            all[d].push(exp);
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
        "\n## 2. NAB ({} files, {:.0} s for training + expectations)\n",
        files.len(),
        t0.elapsed().as_secs_f64()
    );
    println!(
        "Forecasting, H={H}, N-BEATS trained on the probationary 15% only, 40 origins per file:\n"
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
    if let Some(dir) = &cache {
        save_cache(dir, &detector_names(), &all)?;
    }
    Ok(all)
}

/// `k`-step expectations from models retrained causally as the file is read, as the server's
/// scheduler retrains: the probationary model until `2·prob`, then a model trained on
/// `values[..2·prob]` until `4·prob`, then one on `values[..4·prob]` to the end. Each model only
/// forecasts points after the data it was trained on.
fn online_k_step(
    first: &TrainedModel,
    values: &[f64],
    prob: usize,
    k: usize,
    model_cfg: &NBeatsConfig,
    train_cfg: &TrainConfig,
) -> sightline_detect::Result<Expectation> {
    let mut exp = expect::nbeats_k_step(first, values, k)?;
    let mut cut = 2 * prob;
    while cut + 1 < values.len() {
        let Ok(model) = train(&values[..cut], None, model_cfg, train_cfg, &mut no_progress) else {
            break;
        };
        let later = expect::nbeats_k_step(&model, values, k)?;
        // Both expectations index `t = start..n`; replace from `cut` on.
        let from = cut.max(exp.start).max(later.start);
        for t in from..values.len() {
            exp.expected[t - exp.start] = later.expected[t - later.start];
            exp.scale[t - exp.start] = later.scale[t - later.start];
        }
        cut *= 2;
    }
    Ok(exp)
}

/// Cache file of the expectations called `name` (the NAB horizon is in the name or the
/// directory, so a cache of other settings is never read).
fn cache_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!(
        "expectations-{}.json",
        name.replace(['/', ' '], "_")
    ))
}

pub fn save_cache(dir: &Path, names: &[String], all: &[Vec<Expectation>]) -> Res<()> {
    std::fs::create_dir_all(dir)?;
    for (name, per) in names.iter().zip(all) {
        let v: Vec<Cached> = per
            .iter()
            .map(|e| Cached {
                start: e.start,
                expected: e.expected.clone(),
                scale: e.scale.clone(),
            })
            .collect();
        std::fs::write(cache_path(dir, name), serde_json::to_vec(&v)?)?;
    }
    Ok(())
}

pub fn load_cache(dir: &Path, files: usize, names: &[String]) -> Res<Vec<Vec<Expectation>>> {
    let mut all = Vec::new();
    for name in names {
        let v: Vec<Cached> = serde_json::from_slice(&std::fs::read(cache_path(dir, name))?)?;
        if v.len() != files {
            return Err("cache is for another file set".into());
        }
        all.push(
            v.into_iter()
                .map(|c| Expectation {
                    start: c.start,
                    expected: c.expected,
                    scale: c.scale,
                })
                .collect(),
        );
    }
    Ok(all)
}

/// NAB scores (standard, low FP, low FN) of one detector under one pipeline.
pub fn score(files: &[NabSeries], exps: &[Expectation], post: Post) -> Res<[NabScore; 3]> {
    let mut nab_files = Vec::with_capacity(files.len());
    for (f, e) in files.iter().zip(exps) {
        nab_files.push(NabFile {
            name: f.name.clone(),
            scores: post_process(&f.values, e, post)?,
            windows: f.windows.clone(),
        });
    }
    profiles(&nab_files)
}

/// NAB scores (standard, low FP, low FN) of scored files.
pub fn profiles(nab_files: &[NabFile]) -> Res<[NabScore; 3]> {
    Ok([
        score_detector(nab_files, CostProfile::STANDARD)?,
        score_detector(nab_files, CostProfile::LOW_FP)?,
        score_detector(nab_files, CostProfile::LOW_FN)?,
    ])
}

/// Table cells `standard / low FP / low FN | windows found | FPs` of [`profiles`]' scores.
pub fn profile_cells([std, lfp, lfn]: &[NabScore; 3]) -> String {
    format!(
        "{:.1} / {:.1} / {:.1} | {}/{} | {}",
        std.normalized,
        lfp.normalized,
        lfn.normalized,
        std.best.detected_windows,
        std.best.windows,
        std.best.false_positives
    )
}

/// Load the corpus (`$SIGHTLINE_NAB`, default `/work/shared/data/nab`), first `limit` files.
pub fn corpus(limit: usize) -> Res<Vec<NabSeries>> {
    let root = std::env::var("SIGHTLINE_NAB").unwrap_or_else(|_| "/work/shared/data/nab".into());
    let files = nab_io::load(Path::new(&root))?;
    Ok(files.into_iter().take(limit).collect())
}

/// Print the NAB table for `posts`.
pub fn table(files: &[NabSeries], all: &[Vec<Expectation>], posts: &[Post]) -> Res<()> {
    let mut best: Vec<(f64, String)> = vec![(f64::NEG_INFINITY, String::new()); DETECTORS.len()];
    println!(
        "\nNAB scores, threshold optimised per detector and profile over the corpus ({} windows):\n",
        files.iter().map(|f| f.windows.len()).sum::<usize>()
    );
    println!(
        "| detector | post-processing | NAB standard | low FP | low FN | windows found | FPs | threshold |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for post in posts {
        for (d, det) in DETECTORS.iter().enumerate() {
            let [std, lfp, lfn] = score(files, &all[d], *post)?;
            println!(
                "| {det} | {} | {:.1} | {:.1} | {:.1} | {}/{} | {} | {:.4} |",
                post.label(),
                std.normalized,
                lfp.normalized,
                lfn.normalized,
                std.best.detected_windows,
                std.best.windows,
                std.best.false_positives,
                std.best.threshold
            );
            if std.normalized > best[d].0 {
                best[d] = (std.normalized, post.label());
            }
        }
    }
    if posts.len() > 1 {
        println!(
            "\nBest standard score per detector over these {} pipelines:\n",
            posts.len()
        );
        for (d, (score, label)) in best.iter().enumerate() {
            println!("- {}: {score:.1} ({label})", DETECTORS[d]);
        }
    }
    Ok(())
}

/// The pipelines reported in the README: the earlier ones, novelty alone, the batch likelihood
/// of sessions 3-5, and the recommended one.
pub fn report_posts() -> Vec<Post> {
    vec![
        Post::Raw { cal: 1000 },
        Post::Onset {
            cal: 1000,
            run: 1,
            cooldown: 200,
        },
        Post::Novelty,
        batch_likelihood(),
        recommended(),
    ]
}

/// HTM's streaming likelihood over standardised residuals saturating at 4 scales, and spatial
/// novelty at 5% ([`residual_likelihood_scores`] with its defaults).
pub fn recommended() -> Post {
    Post::Streaming { saturation: 4.0 }
}

/// The batch likelihood pipeline recommended before: surprise `−ln p` of robustly calibrated
/// residuals, likelihood over 5 points with cooldown 30, novelty with tolerance 0 after 50
/// quiet points.
pub fn batch_likelihood() -> Post {
    Post::Likelihood {
        cal: 1000,
        robust: true,
        residual_scale: None,
        extra_short: None,
        surprise: true,
        lik: LikelihoodConfig {
            short_window: 5,
            ..LikelihoodConfig::default()
        },
        spatial: Some(0.0),
        novelty_quiet: 50,
        cooldown: 30,
    }
}
