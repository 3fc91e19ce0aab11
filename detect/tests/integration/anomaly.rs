//! Anomaly scoring, conformal coverage, multi-series findings and NAB scoring rules.

use proptest::prelude::*;
use sightline_detect::anomaly::{
    AnomalyConfig, Calibration, DetectorKind, Direction, FindingKind, ServiceSeries, SignalRole,
    SustainedConfig, ValueRange, detect, detect_continued, judge_service,
};
use sightline_detect::forecast::rng::SplitMix64;
use sightline_detect::nab::{
    CostProfile, NabFile, onset_scores, point_weights, probationary_len, scaled_sigmoid,
    score_detector, window_precision_recall,
};

fn gaussian(n: usize, seed: u64) -> Vec<f64> {
    let mut r = SplitMix64::new(seed);
    (0..n).map(|_| 50.0 + r.normal()).collect()
}

#[test]
fn conformal_band_coverage_is_close_to_nominal() {
    for (alpha, detector) in [
        (0.1, DetectorKind::RollingMedianMad { window: 50 }),
        (0.05, DetectorKind::RollingZScore { window: 50 }),
        (
            0.1,
            DetectorKind::SeasonalNaive {
                season: 1,
                window: 50,
            },
        ),
    ] {
        let values = gaussian(6000, 11);
        let cfg = AnomalyConfig {
            detector: detector.clone(),
            alpha,
            calibration: Calibration::Split { points: 2000 },
            ..AnomalyConfig::default()
        };
        let r = detect(&values, None, &cfg, None).unwrap_or_else(|e| panic!("{e}"));
        let s = &r.scored;
        let test: Vec<usize> = (2000..s.score.len()).collect();
        let outside = test
            .iter()
            .filter(|i| {
                let v = values[s.start + **i];
                v < s.lower[**i] || v > s.upper[**i]
            })
            .count();
        let rate = outside as f64 / test.len() as f64;
        assert!(
            (rate - alpha).abs() < 0.025,
            "{detector:?}: miscoverage {rate} vs {alpha}"
        );
    }
}

#[test]
fn level_shift_raises_one_sustained_alert_in_the_right_direction() {
    let mut values = gaussian(1500, 3);
    for v in &mut values[1000..1040] {
        *v += 8.0;
    }
    values[500] += 9.0; // a lone spike: no sustained alert
    let cfg = AnomalyConfig {
        direction: Direction::Above,
        ..AnomalyConfig::default()
    };
    let r = detect(&values, None, &cfg, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.alerts.len(), 1, "{:?}", r.alerts);
    assert!((1000..1006).contains(&r.alerts[0].start));
    let below = AnomalyConfig {
        direction: Direction::Below,
        ..AnomalyConfig::default()
    };
    let r = detect(&values, None, &below, None).unwrap_or_else(|e| panic!("{e}"));
    // No "below" alert while the level is up (the return to normal may look like a drop).
    assert!(r.alerts.iter().all(|a| a.start < 1000 || a.start >= 1036));
    // The likelihood score fires at the shift (a value beyond the range seen, or a red tail)
    // and not in the quiet stretch after the learning period.
    assert_eq!(r.likelihood.len(), values.len());
    let after_learning: Vec<usize> = (225..values.len())
        .filter(|i| r.likelihood[*i] >= 0.5)
        .collect();
    assert!(
        after_learning.iter().any(|i| (1000..1010).contains(i)),
        "no likelihood >= 0.5 at the shift: {after_learning:?}"
    );
    // elsewhere only the odd new record of the noise (spatial novelty): under 1% of points
    let quiet = after_learning
        .iter()
        .filter(|i| !(1000..1045).contains(*i) && **i != 500)
        .count();
    assert!(
        quiet * 100 < values.len() - 225,
        "likelihood >= 0.5 away from the anomalies: {after_learning:?}"
    );
}

/// The server scores a long series in short windows (warm-up and calibration context plus the
/// points since its last run). Carrying the value range from window to window keeps the
/// likelihood's false alarms on a seasonal series at the level of one pass over the whole
/// series; without it each window, shorter than a day, takes the daily peak for a record.
#[test]
fn windows_that_carry_the_range_alarm_like_one_pass() {
    let mut r = SplitMix64::new(11);
    let day = 1440.0;
    let values: Vec<f64> = (0..12_000)
        .map(|i| 100.0 + 10.0 * (std::f64::consts::TAU * i as f64 / day).sin() + 3.0 * r.normal())
        .collect();
    let cfg = AnomalyConfig::default();
    let (start, context, step) = (4_000, 740, 60);
    let alarms = |lk: &[f64]| lk[start..].iter().filter(|v| **v >= 0.5).count();
    let one_pass = detect(&values, None, &cfg, None).unwrap_or_else(|e| panic!("{e}"));
    let windowed = |carry: bool| {
        let mut lk = vec![0.0; values.len()];
        // the first (full) run saw everything before `start`
        let mut seen = ValueRange::of(&values[..start]);
        let mut t = start;
        while t < values.len() {
            let end = (t + step).min(values.len());
            let from = end.saturating_sub(context + step);
            let prior = if carry { seen } else { None };
            let rep = detect_continued(&values[from..end], None, &cfg, None, prior)
                .unwrap_or_else(|e| panic!("{e}"));
            lk[t..end].copy_from_slice(&rep.likelihood[t - from..]);
            seen = rep.range;
            t = end;
        }
        alarms(&lk)
    };
    let (full, carried, fresh) = (
        alarms(&one_pass.likelihood),
        windowed(true),
        windowed(false),
    );
    eprintln!(
        "likelihood >= 0.5 over {} points: one pass {full}, windows carrying the range {carried}, fresh windows {fresh}",
        values.len() - start
    );
    assert!(
        carried <= full + 4,
        "windows carrying the range: {carried} alarms, one pass: {full}"
    );
    assert!(
        fresh >= 3 * carried.max(1),
        "without the range the windows should raise many more: {fresh} vs {carried}"
    );
    assert_eq!(one_pass.range, ValueRange::of(&values));
}

#[test]
fn bad_input_never_panics_or_yields_nan() {
    let cfg = AnomalyConfig::default();
    // too short
    assert!(detect(&[1.0, 2.0], None, &cfg, None).is_err());
    // all NaN
    assert!(detect(&[f64::NAN; 100], None, &cfg, None).is_err());
    // constant: finite band, no alerts
    let r = detect(&[5.0; 300], None, &cfg, None).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        r.scored
            .lower
            .iter()
            .chain(&r.scored.upper)
            .all(|v| v.is_finite())
    );
    assert!(r.alerts.is_empty());
    // gaps: carried forward, marked missing, never scored
    let mut v = gaussian(400, 5);
    for i in (100..400).step_by(7) {
        v[i] = f64::NAN;
    }
    let r = detect(&v, None, &cfg, None).unwrap_or_else(|e| panic!("{e}"));
    for (i, m) in r.scored.missing.iter().enumerate() {
        if *m {
            assert_eq!(r.scored.score[i], 0.0);
            assert_eq!(r.likelihood[r.scored.start + i], 0.0);
        }
    }
    assert!(r.likelihood.iter().all(|v| (0.0..=1.0).contains(v)));
    // n-beats without a model: documented fallback
    let nb = AnomalyConfig {
        detector: DetectorKind::NBeats,
        ..AnomalyConfig::default()
    };
    let r = detect(&gaussian(400, 6), None, &nb, None).unwrap_or_else(|e| panic!("{e}"));
    assert!(r.fallback.is_some());
    assert!(matches!(r.detector, DetectorKind::RollingMedianMad { .. }));
    // bad parameters
    let bad = AnomalyConfig {
        alpha: 1.5,
        ..AnomalyConfig::default()
    };
    assert!(detect(&gaussian(400, 6), None, &bad, None).is_err());
}

#[test]
fn hidden_degradation_names_the_series_that_moved() {
    let n = 1200;
    let mut r = SplitMix64::new(42);
    let mut p50 = Vec::new();
    let mut p90 = Vec::new();
    let mut p99 = Vec::new();
    let mut rate = Vec::new();
    let mut err = Vec::new();
    let mut tok = Vec::new();
    for t in 0..n {
        let drift = if t >= 800 { 1.35 } else { 1.0 };
        p50.push(400.0 * drift + 8.0 * r.normal());
        p90.push(900.0 + 25.0 * r.normal());
        p99.push(1500.0 + 60.0 * r.normal());
        rate.push(100.0 + 5.0 * r.normal());
        err.push(0.01 + 0.001 * r.normal());
        tok.push(3000.0 + 50.0 * r.normal());
    }
    let s = |name: &str, role, values: Vec<f64>, th| ServiceSeries {
        name: name.into(),
        role,
        values,
        static_threshold: th,
    };
    let series = vec![
        s("latency_p50", SignalRole::LatencyP50, p50, None),
        s("latency_p90", SignalRole::LatencyP90, p90, None),
        s("latency_p99", SignalRole::LatencyP99, p99, Some(2000.0)),
        s("request_rate", SignalRole::RequestRate, rate, None),
        s("error_ratio", SignalRole::ErrorRatio, err, Some(0.05)),
        s("token_throughput", SignalRole::TokenThroughput, tok, None),
    ];
    let cfg = AnomalyConfig {
        alpha: 0.001,
        ..AnomalyConfig::default()
    };
    let report = judge_service(&series, None, &cfg).unwrap_or_else(|e| panic!("{e}"));
    let hit = report
        .findings
        .iter()
        .find(|f| f.start >= 795 && f.start <= 810)
        .unwrap_or_else(|| panic!("no finding at the drift: {:?}", report.findings));
    assert_eq!(hit.kind, FindingKind::HiddenDegradation);
    assert!(hit.moved.contains(&"latency_p50".to_string()));
    assert!(!hit.moved.contains(&"latency_p99".to_string()));
    assert!(hit.under_threshold.contains(&"latency_p99".to_string()));
    assert!(hit.summary.contains("latency_p50"));
    assert!(judge_service(&[], None, &cfg).is_err());
}

#[test]
fn nab_weights_match_hand_computed_values() {
    assert_eq!(scaled_sigmoid(0.0), 0.0);
    assert!((scaled_sigmoid(-1.0) - 0.986_614_298_151_430_5).abs() < 1e-12);
    assert_eq!(scaled_sigmoid(3.5), -1.0);
    assert_eq!(probationary_len(100), 15);
    assert_eq!(probationary_len(10_000), 750);
    let w = point_weights(100, &[(40, 49)], CostProfile::STANDARD).unwrap_or_default();
    assert!((w[40].weight - 1.0).abs() < 1e-12);
    assert!((w[49].weight - 0.248_241_549_775_429_9).abs() < 1e-12);
    assert!((w[45].weight - 0.859_792_566_909_783_7).abs() < 1e-12);
    assert!((w[60].weight + 0.109_513_101_303_697_75).abs() < 1e-12);
    assert!((w[20].weight + 0.11).abs() < 1e-12);
    assert!(w[10].probationary && !w[20].probationary);
    assert!(point_weights(100, &[(40, 49), (45, 60)], CostProfile::STANDARD).is_err());
    assert!(point_weights(10, &[(5, 12)], CostProfile::STANDARD).is_err());
}

#[test]
fn nab_sweep_picks_the_best_threshold_and_normalises() {
    let mut scores = vec![0.0; 100];
    scores[45] = 1.0;
    scores[20] = 0.5;
    let file = NabFile {
        name: "f".into(),
        scores,
        windows: vec![(40, 49)],
    };
    let r = score_detector(std::slice::from_ref(&file), CostProfile::STANDARD)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.null, -1.0);
    assert_eq!(r.perfect, 1.0);
    assert_eq!(r.best.threshold, 1.0);
    assert!((r.best.raw - 0.859_792_566_909_783_7).abs() < 1e-12);
    assert!((r.normalized - 100.0 * 1.859_792_566_909_783_7 / 2.0).abs() < 1e-9);
    // perfect and null detectors score 100 and 0
    let mut perfect = vec![0.0; 100];
    perfect[40] = 1.0;
    let p = NabFile {
        scores: perfect,
        ..file.clone()
    };
    assert!(
        (score_detector(&[p], CostProfile::STANDARD)
            .map(|r| r.normalized)
            .unwrap_or(0.0)
            - 100.0)
            .abs()
            < 1e-9
    );
    let z = NabFile {
        scores: vec![0.0; 100],
        ..file.clone()
    };
    assert_eq!(
        score_detector(&[z], CostProfile::STANDARD)
            .map(|r| r.normalized)
            .ok(),
        Some(0.0)
    );
    // earliest detection counts, once per window; false positives add up
    let mut many = vec![0.0; 100];
    for i in [42, 44, 46, 70, 80] {
        many[i] = 1.0;
    }
    let m = NabFile {
        scores: many,
        ..file
    };
    let r = score_detector(&[m], CostProfile::STANDARD).unwrap_or_else(|e| panic!("{e}"));
    let w = point_weights(100, &[(40, 49)], CostProfile::STANDARD).unwrap_or_default();
    let expected = w[42].weight + w[70].weight + w[80].weight;
    assert!((r.best.raw - expected).abs() < 1e-12);
    assert_eq!(r.best.false_positives, 2);
}

#[test]
fn onsets_and_window_precision_recall() {
    let s = [0.0, 0.9, 0.95, 0.97, 0.2, 0.1, 0.99];
    let o = onset_scores(&s, 1, 3);
    assert_eq!(o, vec![0.0, 0.9, 0.95, 0.97, 0.0, 0.0, 0.99]);
    let o = onset_scores(&s, 2, 10);
    assert_eq!(o, vec![0.0, 0.0, 0.9, 0.95, 0.0, 0.0, 0.0]);
    let (p, r) = window_precision_recall(&[5, 50, 51, 90], &[(4, 6), (49, 52), (70, 72)], 0);
    assert!((p - 0.75).abs() < 1e-12 && (r - 2.0 / 3.0).abs() < 1e-12);
}

#[test]
fn sustained_config_defaults_are_valid() {
    assert!(SustainedConfig::default().validate().is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn bands_are_ordered_and_finite(
        values in prop::collection::vec(prop_oneof![Just(f64::NAN), -1e6f64..1e6, Just(0.0)], 40..200),
        window in 3usize..30,
        alpha in 0.001f64..0.5,
        rolling in any::<bool>(),
        dir in 0u8..3,
    ) {
        let cfg = AnomalyConfig {
            detector: DetectorKind::RollingMedianMad { window },
            direction: [Direction::Above, Direction::Below, Direction::Both][dir as usize],
            alpha,
            calibration: if rolling { Calibration::Rolling { window: 50, min_points: 5, exclude_breaches: false } } else { Calibration::Split { points: 10 } },
            ..AnomalyConfig::default()
        };
        if let Ok(r) = detect(&values, None, &cfg, None) {
            let s = &r.scored;
            for i in 0..s.score.len() {
                prop_assert!(s.lower[i].is_finite() && s.upper[i].is_finite());
                prop_assert!(s.lower[i] <= s.upper[i]);
                prop_assert!((0.0..1.0).contains(&s.score[i]));
            }
            prop_assert_eq!(r.likelihood.len(), values.len());
            prop_assert!(r.likelihood.iter().all(|v| (0.0..=1.0).contains(v)));
        }
    }
}
