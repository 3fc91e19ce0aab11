//! NAB sweep against a brute-force scorer, robust rolling calibration, anomaly likelihood,
//! spatial novelty and first detections.

use proptest::prelude::*;
use sightline_detect::anomaly::{
    Calibration, Direction, Expectation, LikelihoodConfig, ResidualLikelihoodConfig,
    StreamingLikelihoodConfig, anomaly_likelihood, first_detections, log_likelihood,
    residual_likelihood_scores, score_expectation, spatial_novelty, streaming_likelihood,
};
use sightline_detect::forecast::rng::SplitMix64;
use sightline_detect::nab::{CostProfile, NabFile, point_weights, score_detector};

/// NAB's objective at one threshold, computed directly from the definition: every window
/// with a scorable point earns the best weight of its detections or `−A_FN`; every detection
/// outside windows adds its (negative) weight; probationary points are ignored.
fn brute_force_raw(files: &[NabFile], threshold: f64, profile: CostProfile) -> f64 {
    let mut raw = 0.0;
    for f in files {
        let w = point_weights(f.scores.len(), &f.windows, profile).unwrap_or_default();
        for (k, _) in f.windows.iter().enumerate() {
            let in_k: Vec<usize> = (0..f.scores.len())
                .filter(|i| w[*i].window == Some(k) && !w[*i].probationary)
                .collect();
            if in_k.is_empty() {
                continue;
            }
            let best = in_k
                .iter()
                .filter(|i| f.scores[**i] >= threshold)
                .map(|i| w[*i].weight)
                .fold(f64::NEG_INFINITY, f64::max);
            raw += if best.is_finite() {
                best
            } else {
                -profile.fn_weight
            };
        }
        for (i, s) in f.scores.iter().enumerate() {
            if w[i].window.is_none() && !w[i].probationary && *s >= threshold {
                raw += w[i].weight;
            }
        }
    }
    raw
}

fn file_strategy() -> impl Strategy<Value = NabFile> {
    (30usize..160).prop_flat_map(|n| {
        (
            prop::collection::vec(
                prop_oneof![Just(0.0), Just(0.3), Just(0.6), Just(0.9), 0.0f64..1.0],
                n,
            ),
            prop::collection::vec((0usize..n, 1usize..12), 0..4),
        )
            .prop_map(move |(scores, raw_windows)| {
                let mut windows: Vec<(usize, usize)> = Vec::new();
                let mut sorted = raw_windows;
                sorted.sort_unstable();
                for (s, len) in sorted {
                    let e = (s + len - 1).min(n - 1);
                    if windows.last().is_none_or(|&(_, pe)| s > pe) {
                        windows.push((s, e));
                    }
                }
                NabFile {
                    name: "f".into(),
                    scores,
                    windows,
                }
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The sweep finds the same optimum as evaluating every threshold from the definition.
    #[test]
    fn sweep_matches_brute_force(files in prop::collection::vec(file_strategy(), 1..4), p in 0usize..3) {
        let profile = [CostProfile::STANDARD, CostProfile::LOW_FP, CostProfile::LOW_FN][p];
        let r = score_detector(&files, profile).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut thresholds: Vec<f64> = files.iter().flat_map(|f| f.scores.iter().copied()).collect();
        thresholds.push(f64::INFINITY);
        let best = thresholds
            .iter()
            .map(|t| brute_force_raw(&files, *t, profile))
            .fold(f64::NEG_INFINITY, f64::max);
        prop_assert!((r.best.raw - best).abs() < 1e-9, "sweep {} vs brute force {}", r.best.raw, best);
        prop_assert!((brute_force_raw(&files, r.best.threshold, profile) - r.best.raw).abs() < 1e-9);
        prop_assert!(r.normalized <= 100.0 + 1e-9 && r.normalized >= 0.0 - 1e-9);
    }

    /// Likelihood at `t` depends on raw scores up to `t` only, and stays in `[0, 1]`.
    #[test]
    fn likelihood_is_causal_and_bounded(
        raw in prop::collection::vec(prop_oneof![Just(f64::NAN), 0.0f64..1.0, Just(0.99)], 10..300),
        cut in 0usize..300,
        short in 1usize..12,
    ) {
        let cfg = LikelihoodConfig { short_window: short, long_window: 50, min_history: 5, min_std: 0.01, two_sided: short % 2 == 0 };
        let a = anomaly_likelihood(&raw, &cfg).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut changed = raw.clone();
        let cut = cut.min(raw.len());
        for v in &mut changed[cut..] {
            *v = 1.0 - v.min(1.0);
        }
        let b = anomaly_likelihood(&changed, &cfg).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&a[..cut], &b[..cut]);
        for v in a.iter().chain(&b) {
            prop_assert!((0.0..=1.0).contains(v));
            prop_assert!((0.0..=1.0).contains(&log_likelihood(*v)));
        }
    }

    /// The robust calibration never yields NaN bands or scores outside `[0, 1)`, whatever the
    /// residuals (NaN, huge, zero).
    #[test]
    fn robust_bands_are_ordered_and_finite(
        z in prop::collection::vec(prop_oneof![Just(f64::NAN), -1e9f64..1e9, Just(0.0)], 1..200),
        window in 1usize..60,
        min_points in 0usize..20,
        clip in 1.0f64..5.0,
        alpha in 0.001f64..0.5,
    ) {
        let n = z.len();
        let missing: Vec<bool> = z.iter().map(|v| !v.is_finite()).collect();
        let values: Vec<f64> = z.iter().map(|v| if v.is_finite() { *v } else { 0.0 }).collect();
        let cal = Calibration::RollingRobust { window, min_points, clip };
        let s = score_expectation(&values, &missing, &unit_expectation(n), Direction::Both, alpha, cal)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        for i in 0..n {
            prop_assert!(s.lower[i].is_finite() && s.upper[i].is_finite() && s.lower[i] <= s.upper[i]);
            prop_assert!((0.0..1.0).contains(&s.score[i]));
        }
    }

    /// First detections keep a score or zero it, never raise it, and never keep a value that
    /// does not exceed everything in the preceding cooldown.
    #[test]
    fn first_detections_only_keep_new_highs(
        s in prop::collection::vec(0.0f64..1.0, 1..200),
        cooldown in 1usize..20,
    ) {
        let f = first_detections(&s, cooldown);
        for t in 0..s.len() {
            prop_assert!(f[t] == 0.0 || f[t] == s[t]);
            let prev = s[t.saturating_sub(cooldown)..t].iter().copied().fold(0.0, f64::max);
            prop_assert_eq!(f[t] > 0.0, s[t] > prev);
        }
    }
}

fn gaussian(n: usize, seed: u64) -> Vec<f64> {
    let mut r = SplitMix64::new(seed);
    (0..n).map(|_| r.normal()).collect()
}

fn unit_expectation(n: usize) -> Expectation {
    Expectation {
        start: 0,
        expected: vec![0.0; n],
        scale: vec![1.0; n],
    }
}

fn breached_windows(values: &[f64], windows: &[(usize, usize)], cal: Calibration) -> usize {
    let n = values.len();
    let s = score_expectation(
        values,
        &vec![false; n],
        &unit_expectation(n),
        Direction::Both,
        0.005,
        cal,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    windows
        .iter()
        .filter(|(a, b)| s.breach[*a..=*b].iter().any(|x| *x))
        .count()
}

#[test]
fn robust_calibration_trims_earlier_anomalies_instead_of_absorbing_them() {
    let mut values = gaussian(3000, 21);
    // an 8-sigma burst of 6 points, then three 6-sigma ones, two days (48 points) apart: all
    // inside one calibration window
    let windows: Vec<(usize, usize)> = (0..4).map(|k| (1000 + 48 * k, 1005 + 48 * k)).collect();
    for (k, &(a, b)) in windows.iter().enumerate() {
        for v in &mut values[a..=b] {
            *v += if k == 0 { 8.0 } else { 6.0 };
        }
    }
    let absorbing = Calibration::Rolling {
        window: 336,
        min_points: 48,
        exclude_breaches: false,
    };
    let robust = Calibration::RollingRobust {
        window: 336,
        min_points: 48,
        clip: 2.5,
    };
    assert_eq!(breached_windows(&values, &windows, robust), 4);
    // the absorbing pool's band is the first burst's peak, which masks the later ones
    assert_eq!(breached_windows(&values, &windows, absorbing), 1);
}

#[test]
fn robust_calibration_keeps_coverage_and_follows_a_change_of_scale() {
    let mut values = gaussian(8000, 5);
    for v in &mut values[4000..] {
        *v *= 3.0;
    }
    let n = values.len();
    let s = score_expectation(
        &values,
        &vec![false; n],
        &unit_expectation(n),
        Direction::Both,
        0.05,
        Calibration::robust(500),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let rate = |r: std::ops::Range<usize>| {
        r.clone().filter(|i| s.breach[*i]).count() as f64 / r.len() as f64
    };
    // nominal miscoverage on stationary data, before and well after the change
    assert!(
        (rate(500..4000) - 0.05).abs() < 0.015,
        "{}",
        rate(500..4000)
    );
    assert!(
        (rate(5500..8000) - 0.05).abs() < 0.02,
        "{}",
        rate(5500..8000)
    );
    // the band widened with the scale (about 1.96 -> 5.9)
    assert!(s.upper[7000] > 2.5 * s.upper[3000]);
    assert!(
        score_expectation(
            &values,
            &vec![false; n],
            &unit_expectation(n),
            Direction::Both,
            0.05,
            Calibration::RollingRobust {
                window: 10,
                min_points: 5,
                clip: 0.5
            },
        )
        .is_err()
    );
}

fn quiet_raw(seed: u64) -> Vec<f64> {
    let mut r = SplitMix64::new(seed);
    (0..6000).map(|_| r.next_f64()).collect()
}

#[test]
fn likelihood_flags_a_sustained_rise_not_noise() {
    let mut raw = quiet_raw(9);
    let cfg = LikelihoodConfig::default();
    let quiet = anomaly_likelihood(&raw, &cfg).unwrap_or_else(|e| panic!("{e}"));
    let worst = quiet
        .iter()
        .copied()
        .map(log_likelihood)
        .fold(0.0, f64::max);
    assert!(worst < 0.5, "noise reached {worst}");
    for v in &mut raw[4000..4010] {
        *v = 0.97 + 0.03 * *v;
    }
    let l = anomaly_likelihood(&raw, &cfg).unwrap_or_else(|e| panic!("{e}"));
    let peak = l[4000..4012]
        .iter()
        .copied()
        .map(log_likelihood)
        .fold(0.0, f64::max);
    assert!(peak > 0.5, "sustained rise only reached {peak}");
    assert_eq!(l[..cfg.min_history], vec![0.5; cfg.min_history][..]);
    // a level far below normal (residuals that flatline) counts only when two-sided
    let mut flat = quiet_raw(9);
    for v in &mut flat[4000..4010] {
        *v = 0.0;
    }
    let low = |two_sided| {
        let l = anomaly_likelihood(
            &flat,
            &LikelihoodConfig {
                two_sided,
                ..LikelihoodConfig::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        l[4000..4012]
            .iter()
            .copied()
            .map(log_likelihood)
            .fold(0.0, f64::max)
    };
    assert!(
        low(true) > 0.5 && low(false) < 0.1,
        "{} {}",
        low(true),
        low(false)
    );
    assert!(
        anomaly_likelihood(
            &raw,
            &LikelihoodConfig {
                short_window: 0,
                ..cfg
            }
        )
        .is_err()
    );
}

#[test]
fn spatial_novelty_marks_values_beyond_the_seen_range() {
    let v = [1.0, 2.0, 1.5, 2.04, 2.2, f64::NAN, 0.8, 0.85];
    // range so far [1, 2] -> tolerance 0.05 pads to [0.95, 2.05]
    assert_eq!(
        spatial_novelty(&v, 0.05, 2, None),
        vec![false, false, false, false, true, false, true, false]
    );
    assert_eq!(spatial_novelty(&v, 0.05, 100, None), vec![false; v.len()]);
}

#[test]
fn nbeats_k_step_expectations_come_from_the_right_origin() {
    use sightline_detect::anomaly::expect::{nbeats_k_step, nbeats_one_step};
    use sightline_detect::forecast::synthetic::noisy_sine;
    use sightline_detect::forecast::{Architecture, NBeatsConfig, TrainConfig, no_progress, train};
    let series = noisy_sine(200, 12, 0.1, 3);
    let mut cfg = NBeatsConfig::small(Architecture::Generic, 4, 3);
    for s in &mut cfg.stacks {
        s.width = 16;
    }
    let tc = TrainConfig {
        max_steps: 10,
        batch_size: 32,
        ..TrainConfig::default()
    };
    let m = train(&series, None, &cfg, &tc, &mut no_progress).unwrap_or_else(|e| panic!("{e}"));
    let l = m.card.model.lookback;
    let one = nbeats_one_step(&m, &series).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(nbeats_k_step(&m, &series, 1).ok(), Some(one));
    let k3 = nbeats_k_step(&m, &series, 3).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(k3.start, l + 2);
    for t in [l + 2, 150, 199] {
        let origin = t - 2; // the forecast made before t-2 covers t-2, t-1, t
        let f = m
            .forecast(&series[..origin])
            .unwrap_or_else(|e| panic!("{e}"));
        let got = k3.expected[t - k3.start];
        assert!(
            (got - f[2]).abs() <= 1e-4 * f[2].abs().max(1.0),
            "t = {t}: {got} vs {}",
            f[2]
        );
    }
    assert!(nbeats_k_step(&m, &series, 0).is_err());
    assert!(nbeats_k_step(&m, &series, 5).is_err());
    assert!(nbeats_k_step(&m, &series[..l + 2], 3).is_err());
}

proptest! {
    /// Whatever the values and raw scores (NaN, infinities, huge, flat), the streaming
    /// likelihood stays in [0, 1] and the residual scores in [0, 1], one per point.
    #[test]
    fn streaming_likelihood_is_a_probability(
        values in prop::collection::vec(
            prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(1.0), -1e12f64..1e12],
            0..400,
        ),
        raw_seed in 0u64..1000,
        prob in 0usize..120,
    ) {
        let n = values.len();
        let raw: Vec<f64> = (0..n)
            .map(|i| match (i as u64 * 7919 + raw_seed) % 11 {
                0 => f64::NAN,
                1 => 1.0,
                k => k as f64 / 20.0,
            })
            .collect();
        let l = streaming_likelihood(&values, &raw, StreamingLikelihoodConfig::for_probationary(prob))
            .unwrap_or_default();
        prop_assert_eq!(l.len(), n);
        prop_assert!(l.iter().all(|v| (0.0..=1.0).contains(v)));
        if n > 1 {
            let exp = Expectation {
                start: 1,
                expected: values[..n - 1].to_vec(),
                scale: vec![1.0; n - 1],
            };
            let s = residual_likelihood_scores(
                &values,
                &exp,
                &ResidualLikelihoodConfig::for_probationary(prob),
                None,
            )
            .unwrap_or_default();
            prop_assert_eq!(s.len(), n);
            prop_assert!(s.iter().all(|v| (0.0..=1.0).contains(v)));
        }
    }
}
