//! NAB exploration around the reported evaluation (`nab_eval`): the pipeline grid
//! (`nab-explore`), every forecast origin (`nab-horizons`), the per-category breakdown, and the
//! check of the likelihood stages on a published detector's raw scores (`nab-raw`).

use std::path::{Path, PathBuf};

use sightline_detect::anomaly::expect::{self, Expectation};
use sightline_detect::anomaly::{
    LikelihoodConfig, StreamingLikelihoodConfig, anomaly_likelihood, first_detections,
    force_spatial_novelty, log_likelihood, streaming_likelihood,
};
use sightline_detect::forecast::{
    EnsembleConfig, Forecaster, TrainControl, no_progress, train, train_ensemble,
};
use sightline_detect::nab::{NabFile, probationary_len};

use crate::Res;
use crate::nab_eval::{
    Post, batch_likelihood, corpus, load_cache, nab_model, post_process, profile_cells, profiles,
    report_posts, save_cache, score,
};
use crate::nab_io::{self, NabSeries};

/// Exploration: N-BEATS `k`-step expectations for every `k = 1..=H` (`[k-1][file]`), from the
/// same probationary models as [`crate::nab_eval::expectations`]; cached under `$SIGHTLINE_NAB_CACHE/horizons`.
pub fn horizon_expectations(files: &[NabSeries], h: usize) -> Res<Vec<Vec<Expectation>>> {
    let seed: u64 = std::env::var("SIGHTLINE_NAB_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // lookback multiples of a median ensemble, e.g. "3,5,7"; empty: one model with L = 7H
    let multiples: Vec<usize> = std::env::var("SIGHTLINE_NAB_ENSEMBLE")
        .unwrap_or_default()
        .split(',')
        .filter_map(|v| v.trim().parse().ok())
        .collect();
    let tag = format!(
        "horizons-{h}{}{}",
        if seed == 0 {
            String::new()
        } else {
            format!("-seed{seed}")
        },
        if multiples.is_empty() {
            String::new()
        } else {
            format!(
                "-ens{}",
                multiples
                    .iter()
                    .map(|m| m.to_string())
                    .collect::<Vec<_>>()
                    .join("_")
            )
        }
    );
    let cache: Option<PathBuf> = std::env::var("SIGHTLINE_NAB_CACHE")
        .ok()
        .map(|d| PathBuf::from(d).join(tag));
    if let Some(dir) = &cache
        && let Ok(all) = load_cache(dir, files.len(), &horizon_names(h))
    {
        return Ok(all);
    }
    let (model_cfg, mut train_cfg) = nab_model(h);
    train_cfg.seed = seed;
    let mut all: Vec<Vec<Expectation>> = vec![Vec::new(); h];
    for f in files {
        let prob = probationary_len(f.values.len());
        let history = &f.values[..prob];
        let model: Option<Box<dyn Forecaster>> = if multiples.is_empty() {
            train(history, None, &model_cfg, &train_cfg, &mut no_progress)
                .ok()
                .map(|m| Box::new(m) as Box<dyn Forecaster>)
        } else {
            let ens = EnsembleConfig {
                lookback_multiples: multiples.clone(),
                seeds: vec![seed],
            };
            train_ensemble(history, None, &model_cfg, &train_cfg, &ens, &mut |_, _| {
                TrainControl::Continue
            })
            .ok()
            .map(|m| Box::new(m) as Box<dyn Forecaster>)
        };
        for (k, per) in all.iter_mut().enumerate() {
            per.push(match &model {
                Some(m) => expect::nbeats_k_step(m.as_ref(), &f.values, k + 1),
                None => expect::rolling_median_mad(&f.values, 100),
            }?);
        }
    }
    if let Some(dir) = &cache {
        save_cache(dir, &horizon_names(h), &all)?;
    }
    Ok(all)
}

fn horizon_names(h: usize) -> Vec<String> {
    (1..=h).map(|k| format!("{k}-step")).collect()
}

/// A grid of pipelines for exploration (`forecast_eval nab-explore`): the saturation of the
/// recommended pipeline, and calibration, level and reference windows, novelty quiet period
/// and cooldown around [`batch_likelihood`].
pub fn explore_posts() -> Vec<Post> {
    let mut v = report_posts();
    v.extend(
        [2.0, 3.0, 5.0, 6.0]
            .into_iter()
            .map(|saturation| Post::Streaming { saturation }),
    );
    let Post::Likelihood { lik, .. } = batch_likelihood() else {
        return v;
    };
    for (robust, residual_scale) in [(true, None), (false, None), (false, Some(20))] {
        for short in [3usize, 5, 10] {
            for long in [300usize, 1000, 8640] {
                for (novelty_quiet, cooldown) in [(0usize, 0usize), (50, 30)] {
                    v.push(Post::Likelihood {
                        cal: 1000,
                        robust,
                        residual_scale,
                        extra_short: None,
                        surprise: true,
                        lik: LikelihoodConfig {
                            short_window: short,
                            long_window: long,
                            ..lik
                        },
                        spatial: Some(0.0),
                        novelty_quiet,
                        cooldown,
                    });
                }
            }
        }
    }
    v
}

/// Per NAB category (data sub-directory): windows found and false positives of `post` for
/// detector `d` at its optimal standard-profile threshold.
pub fn breakdown(files: &[NabSeries], exps: &[Expectation], post: Post) -> Res<()> {
    let [std, _, _] = score(files, exps, post)?;
    let th = std.best.threshold;
    let mut cats: std::collections::BTreeMap<String, (usize, usize, usize)> = Default::default();
    for (f, e) in files.iter().zip(exps) {
        let s = post_process(&f.values, e, post)?;
        let prob = probationary_len(s.len());
        let cat = f.name.split('/').next().unwrap_or("").to_string();
        let entry = cats.entry(cat).or_default();
        entry.2 += f.windows.len();
        for &(a, b) in &f.windows {
            if (a.max(prob)..=b).any(|i| s[i] >= th) {
                entry.0 += 1;
            }
        }
        entry.1 += (prob..s.len())
            .filter(|i| s[*i] >= th && !f.windows.iter().any(|(a, b)| i >= a && i <= b))
            .count();
    }
    println!("\n{} at threshold {th:.4}:\n", post.label());
    println!("| category | windows found | false positives |");
    println!("|---|---|---|");
    for (c, (found, fp, total)) in cats {
        println!("| {c} | {found}/{total} | {fp} |");
    }
    Ok(())
}

/// Check of the likelihood stages: a published NAB detector's raw scores (`raw_score`, e.g.
/// NAB's HTM detector `numenta`) through this crate's [`streaming_likelihood`] and novelty,
/// next to the final scores the detector published, and through the batch likelihood.
pub fn published_raw(results: &Path, detector: &str) -> Res<()> {
    let files = corpus(usize::MAX)?;
    let mut raws = Vec::new();
    let mut finals = Vec::new();
    for f in &files {
        raws.push(nab_io::load_published_column(
            results,
            detector,
            f,
            "raw_score",
        )?);
        finals.push(nab_io::load_published(results, detector, f)?);
    }
    let run = |label: &str, per: &dyn Fn(usize) -> Res<Vec<f64>>| -> Res<()> {
        let mut nab_files = Vec::new();
        for (i, f) in files.iter().enumerate() {
            nab_files.push(NabFile {
                name: f.name.clone(),
                scores: per(i)?,
                windows: f.windows.clone(),
            });
        }
        println!("| {label} | {} |", profile_cells(&profiles(&nab_files)?));
        Ok(())
    };
    println!("\n{detector}'s raw scores through this crate's stages:\n");
    println!("| scores | standard / low FP / low FN | windows | FPs |");
    println!("|---|---|---|---|");
    run("published final scores", &|i| Ok(finals[i].clone()))?;
    run("raw scores", &|i| Ok(raws[i].clone()))?;
    run("streaming likelihood (HTM settings)", &|i| {
        streaming_final(&files[i].values, &raws[i], None)
    })?;
    run("streaming likelihood + novelty 5%", &|i| {
        streaming_final(&files[i].values, &raws[i], Some(0.05))
    })?;
    let Post::Likelihood { lik, cooldown, .. } = batch_likelihood() else {
        return Ok(());
    };
    run(
        "batch likelihood (short 5, long 1000, cooldown 30) + novelty 5%",
        &|i| {
            let f = &files[i];
            let l = anomaly_likelihood(&raws[i], &lik)?;
            let mut s = first_detections(
                &l.into_iter().map(log_likelihood).collect::<Vec<_>>(),
                cooldown,
            );
            force_spatial_novelty(&mut s, &f.values, 0.05, None);
            Ok(s)
        },
    )?;
    Ok(())
}

/// NAB final scores from raw scores: streaming likelihood (HTM settings), log-scaled, and
/// spatial novelty with tolerance `tol` forced to 1.
fn streaming_final(values: &[f64], raw: &[f64], tol: Option<f64>) -> Res<Vec<f64>> {
    let prob = probationary_len(values.len());
    let l = streaming_likelihood(
        values,
        raw,
        StreamingLikelihoodConfig::for_probationary(prob),
    )?;
    let mut s: Vec<f64> = l.into_iter().map(log_likelihood).collect();
    if let Some(tol) = tol {
        force_spatial_novelty(&mut s, values, tol, None);
    }
    Ok(s)
}

/// Exploration over forecast origins (`nab-horizons`): the recommended pipeline over the
/// `k`-step expectations for each `k` and saturation.
pub fn horizon_table(files: &[NabSeries], hz: &[Vec<Expectation>]) -> Res<()> {
    println!("| forecast origin | saturation | standard / low FP / low FN | windows | FPs |");
    println!("|---|---|---|---|---|");
    for saturation in [3.0, 4.0, 5.0] {
        for (k, exps) in hz.iter().enumerate() {
            let scores = score(files, exps, Post::Streaming { saturation })?;
            println!(
                "| k = {} | {saturation} | {} |",
                k + 1,
                profile_cells(&scores)
            );
        }
    }
    Ok(())
}
