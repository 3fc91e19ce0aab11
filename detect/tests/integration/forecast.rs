//! N-BEATS training, forecasting, persistence and bad input, on tiny models (fast in CI).

use sightline_detect::DetectError;
use sightline_detect::forecast::baseline::seasonal_naive;
use sightline_detect::forecast::metrics::mae;
use sightline_detect::forecast::synthetic::noisy_sine;
use sightline_detect::forecast::{
    Architecture, Basis, EnsembleConfig, Loss, NBeatsConfig, StackConfig, TrainConfig,
    TrainControl, TrainedModel, candle_device, no_progress, train, train_ensemble,
};

const H: usize = 8;
const PERIOD: usize = 16;

fn tiny(arch: Architecture) -> NBeatsConfig {
    let mut cfg = NBeatsConfig::small(arch, H, 4);
    for s in &mut cfg.stacks {
        s.width = 32;
        s.layers = 2;
        s.blocks = s.blocks.min(2);
    }
    cfg
}

fn tiny_train(seed: u64) -> TrainConfig {
    TrainConfig {
        max_steps: 250,
        batch_size: 64,
        learning_rate: 3e-3,
        eval_every: 50,
        patience: 0,
        seed,
        ..TrainConfig::default()
    }
}

/// Rolling-origin MAE of the model and of seasonal naive on the last `origins` horizons.
fn compare(model: &TrainedModel, series: &[f64], origins: usize) -> (f64, f64) {
    let (mut m, mut s) = (0.0, 0.0);
    for k in 0..origins {
        let o = series.len() - (origins - k) * H;
        let actual = &series[o..o + H];
        let f = model.forecast(&series[..o]).unwrap_or_default();
        let b = seasonal_naive(&series[..o], PERIOD, H).unwrap_or_default();
        m += mae(actual, &f).unwrap_or(f64::INFINITY);
        s += mae(actual, &b).unwrap_or(f64::INFINITY);
    }
    (m / origins as f64, s / origins as f64)
}

#[test]
fn generic_beats_seasonal_naive_on_noisy_sine() {
    let series = noisy_sine(400, PERIOD, 0.3, 1);
    let model = train(
        &series[..360],
        None,
        &tiny(Architecture::Generic),
        &tiny_train(1),
        &mut no_progress,
    )
    .unwrap_or_else(|e| panic!("train: {e}"));
    let (nb, sn) = compare(&model, &series, 5);
    assert!(nb < sn, "n-beats MAE {nb} vs seasonal naive {sn}");
    assert!(model.card.metrics.validation.is_some());
}

#[test]
fn interpretable_and_hybrid_train_and_forecast() {
    let series = noisy_sine(400, PERIOD, 0.3, 2);
    for arch in [Architecture::Interpretable, Architecture::Hybrid] {
        let model = train(
            &series[..360],
            None,
            &tiny(arch),
            &tiny_train(3),
            &mut no_progress,
        )
        .unwrap_or_else(|e| panic!("train {arch:?}: {e}"));
        let (nb, _) = compare(&model, &series, 5);
        // Beats the trivial "last value" forecast by a wide margin.
        let mut naive = 0.0;
        for k in 0..5 {
            let o = series.len() - (5 - k) * H;
            naive += mae(&series[o..o + H], &[series[o - 1]; H]).unwrap_or(0.0);
        }
        assert!(
            nb < 0.8 * naive / 5.0,
            "{arch:?}: {nb} vs last value {}",
            naive / 5.0
        );
        let comps = model.components(&series).unwrap_or_default();
        assert_eq!(comps.len(), model.card.model.stacks.len());
        assert!(
            comps
                .iter()
                .all(|c| c.len() == H && c.iter().all(|v| v.is_finite()))
        );
    }
}

#[test]
fn training_is_deterministic_and_save_load_round_trips() {
    let series = noisy_sine(240, PERIOD, 0.2, 3);
    let cfg = tiny(Architecture::Generic);
    let tc = TrainConfig {
        max_steps: 30,
        ..tiny_train(9)
    };
    let a = train(&series, None, &cfg, &tc, &mut no_progress).unwrap_or_else(|e| panic!("{e}"));
    let b = train(&series, None, &cfg, &tc, &mut no_progress).unwrap_or_else(|e| panic!("{e}"));
    let fa = a.forecast(&series).unwrap_or_default();
    assert_eq!(fa, b.forecast(&series).unwrap_or_default());

    let saved = a.to_bytes().unwrap_or_else(|e| panic!("{e}"));
    let device = candle_device(tc.device).unwrap_or_else(|e| panic!("{e}"));
    let loaded = TrainedModel::from_bytes(&saved.weights, &saved.card_json, &device)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.forecast(&series).unwrap_or_default(), fa);
    assert!(loaded.card.data_hash.starts_with("fnv1a64:"));
    assert!(loaded.card.weights_hash.is_some());

    // Tampered weights are refused, not loaded.
    let mut bad = saved.weights.clone();
    if let Some(last) = bad.last_mut() {
        *last ^= 1;
    }
    assert!(matches!(
        TrainedModel::from_bytes(&bad, &saved.card_json, &device),
        Err(DetectError::InvalidModel { .. })
    ));
    assert!(TrainedModel::from_bytes(&saved.weights, "{", &device).is_err());
    assert!(
        TrainedModel::from_bytes(
            b"junk",
            &saved.card_json.replace("\"weights_hash\"", "\"x\""),
            &device
        )
        .is_err()
    );
}

#[test]
fn progress_callback_can_stop_and_losses_work() {
    let series = noisy_sine(240, PERIOD, 0.2, 4);
    let mut calls = 0;
    let mut cb = |p: &sightline_detect::forecast::TrainProgress| {
        calls += 1;
        assert!(p.train_loss.is_finite());
        TrainControl::Stop
    };
    let tc = TrainConfig {
        max_steps: 200,
        eval_every: 10,
        ..tiny_train(1)
    };
    let m = train(&series, None, &tiny(Architecture::Generic), &tc, &mut cb)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(calls, 1);
    assert_eq!(m.card.metrics.steps_run, 10);
    assert!(m.card.metrics.stopped_early);
    for loss in [Loss::Smape, Loss::Mase { season: PERIOD }] {
        let tc = TrainConfig {
            max_steps: 20,
            loss,
            ..tiny_train(1)
        };
        let m = train(
            &series,
            None,
            &tiny(Architecture::Generic),
            &tc,
            &mut no_progress,
        );
        assert!(m.is_ok(), "{loss:?}: {m:?}");
    }
}

#[test]
fn median_ensemble_of_lookbacks() {
    let series = noisy_sine(300, PERIOD, 0.2, 5);
    let tc = TrainConfig {
        max_steps: 40,
        ..tiny_train(1)
    };
    let ens = EnsembleConfig {
        lookback_multiples: vec![2, 3, 4],
        seeds: vec![1],
    };
    let e = train_ensemble(
        &series,
        None,
        &tiny(Architecture::Generic),
        &tc,
        &ens,
        &mut |_, _| TrainControl::Continue,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(e.members.len(), 3);
    assert_eq!(e.lookback(), 4 * H);
    let f = e.forecast(&series).unwrap_or_default();
    assert_eq!(f.len(), H);
    assert!(f.iter().all(|v| v.is_finite()));
    // the ensemble drives the k-step detector like a single model: the first expectation
    // needs the longest lookback plus k − 1 points
    let exp = sightline_detect::anomaly::expect::nbeats_k_step(&e, &series, 2)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(exp.start, 4 * H + 1);
    assert_eq!(exp.expected.len(), series.len() - exp.start);
    assert!(exp.scale.iter().all(|s| *s > 0.0));
    // step 2 of the forecast from the window ending one point before t
    let t = series.len() - 1;
    let direct = e.forecast(&series[..t - 1]).unwrap_or_default();
    assert!((exp.expected[t - exp.start] - direct[1]).abs() < 1e-9);
}

#[test]
fn bad_input_is_a_typed_error() {
    let cfg = tiny(Architecture::Generic);
    let tc = tiny_train(0);
    let short = noisy_sine(20, PERIOD, 0.1, 1);
    assert!(matches!(
        train(&short, None, &cfg, &tc, &mut no_progress),
        Err(DetectError::TooFewObservations { .. })
    ));
    let mut nan = noisy_sine(300, PERIOD, 0.1, 1);
    nan[100] = f64::NAN;
    assert!(matches!(
        train(&nan, None, &cfg, &tc, &mut no_progress),
        Err(DetectError::NonFinite { .. })
    ));
    let flat = vec![3.0; 300];
    assert!(matches!(
        train(&flat, None, &cfg, &tc, &mut no_progress),
        Err(DetectError::ConstantSeries { .. })
    ));
    let series = noisy_sine(300, PERIOD, 0.1, 1);
    let mut ts: Vec<i64> = (0..300).map(|i| i * 60).collect();
    ts[150] += 7;
    assert!(matches!(
        train(&series, Some(&ts), &cfg, &tc, &mut no_progress),
        Err(DetectError::InvalidTimestamps { .. })
    ));
    let mut bad_cfg = cfg.clone();
    bad_cfg.horizon = 0;
    assert!(matches!(
        train(&series, None, &bad_cfg, &tc, &mut no_progress),
        Err(DetectError::InvalidParameter { .. })
    ));
    let bad_stack = NBeatsConfig {
        stacks: vec![StackConfig {
            basis: Basis::Generic { theta_dim: 0 },
            blocks: 1,
            layers: 1,
            width: 4,
            share_weights: false,
        }],
        ..cfg.clone()
    };
    assert!(train(&series, None, &bad_stack, &tc, &mut no_progress).is_err());
    let bad_lr = TrainConfig {
        learning_rate: f64::NAN,
        ..tc.clone()
    };
    assert!(train(&series, None, &cfg, &bad_lr, &mut no_progress).is_err());
    // CUDA without the feature (or a GPU) is an error, not a panic.
    #[cfg(not(feature = "cuda"))]
    assert!(candle_device(sightline_detect::forecast::ComputeDevice::Cuda { ordinal: 0 }).is_err());
    // Forecasting: too-short history and all-NaN history are errors; gaps are carried forward.
    let m = train(
        &series,
        None,
        &cfg,
        &TrainConfig { max_steps: 5, ..tc },
        &mut no_progress,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(m.forecast(&series[..5]).is_err());
    assert!(m.forecast(&[f64::NAN; 64]).is_err());
    let mut gappy = series.clone();
    gappy[290] = f64::NAN;
    assert!(
        m.forecast(&gappy)
            .is_ok_and(|f| f.iter().all(|v| v.is_finite()))
    );
}

#[test]
fn paper_presets_are_valid() {
    for arch in [
        Architecture::Generic,
        Architecture::Interpretable,
        Architecture::Hybrid,
    ] {
        let cfg = NBeatsConfig::paper(arch, 24, 7);
        assert!(cfg.validate().is_ok());
        assert_eq!(cfg.lookback, 168);
    }
    assert!(TrainConfig::paper().validate().is_ok());
}

#[test]
fn detector_judges_points_against_the_forecast_made_k_steps_before() {
    use sightline_detect::anomaly::{AnomalyConfig, DetectorKind, detect, expect};
    let series = noisy_sine(240, PERIOD, 0.1, 3);
    let model = train(
        &series[..160],
        None,
        &tiny(Architecture::Generic),
        &TrainConfig {
            max_steps: 60,
            ..tiny_train(2)
        },
        &mut no_progress,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let cfg = AnomalyConfig {
        detector: DetectorKind::NBeats,
        forecast_origin: 2,
        ..AnomalyConfig::default()
    };
    let r = detect(&series, None, &cfg, Some(&model)).unwrap_or_else(|e| panic!("{e}"));
    assert!(r.fallback.is_none());
    let k2 = expect::nbeats_k_step(&model, &series, 2).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.scored.start, k2.start);
    assert_eq!(r.scored.expected, k2.expected);
    // one-step by default: a different origin, a different expectation
    let one = detect(
        &series,
        None,
        &AnomalyConfig {
            forecast_origin: 1,
            ..cfg.clone()
        },
        Some(&model),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(one.scored.start, k2.start - 1);
    assert_ne!(one.scored.expected[1..], r.scored.expected[..]);
    // an origin of 0 or beyond the horizon is refused, not silently replaced
    for bad in [0, H + 1] {
        let c = AnomalyConfig {
            forecast_origin: bad,
            ..cfg.clone()
        };
        assert!(matches!(
            detect(&series, None, &c, Some(&model)),
            Err(DetectError::InvalidParameter { .. })
        ));
    }
}
