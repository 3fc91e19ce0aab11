//! The N-BEATS CUDA path checked against the CPU path, for a machine with an NVIDIA GPU.
//!
//! ```text
//! CUDA_COMPUTE_CAP=90 cargo build --release -p sightline-detect --features cuda --example cuda_check
//! target/release/examples/cuda_check [--json FILE]
//! ```
//!
//! The build machine needs no GPU: nvcc and headers can come from the `nvidia-cuda-nvcc`,
//! `nvidia-nvvm`, `nvidia-cuda-runtime`, `nvidia-cuda-cccl` wheels, and the link step only needs
//! `libcuda.so` (a stub exporting the driver API names with soname `libcuda.so.1` will do),
//! `libcublas.so`, `libcurand.so` and `libcudart.so` on `LIBRARY_PATH`. On the GPU machine the
//! real driver's `libcuda.so.1` must be found first (not a toolkit's `compat` copy, which fails
//! with `CUDA_ERROR_SYSTEM_DRIVER_MISMATCH`).
//!
//! Checks (exit code 1 when one fails):
//! 1. the same weights give the same forecasts on both devices (a CPU-trained model loaded onto
//!    the GPU, and a GPU-trained model loaded onto the CPU; max difference relative to the
//!    window scale below 1e-4);
//! 2. training on the GPU reaches the accuracy of training on the CPU (held-out MASE of every
//!    architecture within 25% + 0.05 of the CPU model's; float order differs, so the weights do);
//!
//! and reports, without checking (times belong to the machine), training time on each device,
//! steps per second of the paper's N-BEATS-G (30 × 4 × 512, batch 1024) and the scoring latency
//! of 10,000 windows on each device.
//!
//! Everything printed is measured on the machine it runs on; nothing is compared to a stored
//! number.

use std::time::Instant;

use sightline_detect::forecast::{
    Architecture, ComputeDevice, NBeatsConfig, TrainConfig, TrainedModel, candle_device,
    metrics::mase, no_progress, synthetic::llm_service_set, train,
};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const HORIZON: usize = 24;
const SEASON: usize = 24;
const GPU: ComputeDevice = ComputeDevice::Cuda { ordinal: 0 };

fn max_rel_diff(a: &[Vec<f64>], b: &[Vec<f64>], windows: &[&[f64]]) -> f64 {
    let mut worst = 0.0f64;
    for ((x, y), w) in a.iter().zip(b).zip(windows) {
        let lo = w.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let scale = (hi - lo).max(1e-9);
        for (p, q) in x.iter().zip(y) {
            worst = worst.max((p - q).abs() / scale);
        }
    }
    worst
}

fn arch_name(a: Architecture) -> &'static str {
    match a {
        Architecture::Generic => "generic",
        Architecture::Interpretable => "interpretable",
        Architecture::Hybrid => "hybrid",
    }
}

fn timed_train(
    values: &[f64],
    model: &NBeatsConfig,
    cfg: &TrainConfig,
) -> Res<(TrainedModel, f64)> {
    let t = Instant::now();
    let m = train(values, None, model, cfg, &mut no_progress)?;
    Ok((m, t.elapsed().as_secs_f64()))
}

fn main() -> Res<()> {
    let json_path = std::env::args().skip_while(|a| a != "--json").nth(1);
    let gpu = candle_device(GPU)?;
    println!("device: {gpu:?}");
    let mut failures = Vec::new();
    let mut report = serde_json::Map::new();

    // Six weeks of hourly LLM-service series; train on all but the last day.
    let set = llm_service_set(4, 6, 0, 0.0, 11);
    for arch in [
        Architecture::Generic,
        Architecture::Interpretable,
        Architecture::Hybrid,
    ] {
        let model_cfg = NBeatsConfig::small(arch, HORIZON, 7);
        let mut cpu_mase = Vec::new();
        let mut gpu_mase = Vec::new();
        let (mut cpu_s, mut gpu_s) = (0.0, 0.0);
        let mut worst_cross = 0.0f64;
        for series in &set {
            let values = &series.values;
            let (hist, actual) = values.split_at(values.len() - HORIZON);
            let cpu_cfg = TrainConfig {
                seed: 5,
                ..TrainConfig::default()
            };
            let gpu_cfg = TrainConfig {
                device: GPU,
                ..cpu_cfg.clone()
            };
            let (cpu_model, s) = timed_train(hist, &model_cfg, &cpu_cfg)?;
            cpu_s += s;
            let (gpu_model, s) = timed_train(hist, &model_cfg, &gpu_cfg)?;
            gpu_s += s;
            cpu_mase.push(mase(actual, &cpu_model.forecast(hist)?, hist, SEASON)?);
            gpu_mase.push(mase(actual, &gpu_model.forecast(hist)?, hist, SEASON)?);

            // Same weights on both devices: CPU model onto the GPU and GPU model onto the CPU.
            let windows: Vec<&[f64]> = (model_cfg.lookback..=hist.len())
                .step_by(7)
                .map(|end| &hist[..end])
                .collect();
            for (model, other) in [(&cpu_model, &gpu), (&gpu_model, &candle_core::Device::Cpu)] {
                let saved = model.to_bytes()?;
                let moved = TrainedModel::from_bytes(&saved.weights, &saved.card_json, other)?;
                let here = model.forecast_many(&windows)?;
                let there = moved.forecast_many(&windows)?;
                worst_cross = worst_cross.max(max_rel_diff(&here, &there, &windows));
            }
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let (cm, gm) = (mean(&cpu_mase), mean(&gpu_mase));
        println!(
            "{:<13} train cpu {cpu_s:6.2} s  gpu {gpu_s:6.2} s  | held-out MASE cpu {cm:.3} gpu {gm:.3} | same weights max diff {worst_cross:.2e}",
            arch_name(arch)
        );
        if worst_cross > 1e-4 || !worst_cross.is_finite() {
            failures.push(format!(
                "{}: forecasts of the same weights differ by {worst_cross:.2e} of the window range",
                arch_name(arch)
            ));
        }
        if !(gm.is_finite() && gm <= cm * 1.25 + 0.05) {
            failures.push(format!(
                "{}: GPU-trained MASE {gm:.3} vs CPU-trained {cm:.3}",
                arch_name(arch)
            ));
        }
        report.insert(
            arch_name(arch).to_string(),
            serde_json::json!({
                "train_s_cpu": cpu_s, "train_s_gpu": gpu_s,
                "mase_cpu": cm, "mase_gpu": gm, "same_weights_max_rel_diff": worst_cross,
            }),
        );
    }

    // Cost at the paper's size: steps per second of N-BEATS-G (30 stacks × 4 × 512), batch 1024.
    let long = &set[0].values;
    let paper = NBeatsConfig::paper(Architecture::Generic, HORIZON, 7);
    for (name, device, steps) in [("cpu", ComputeDevice::Cpu, 10), ("gpu", GPU, 100)] {
        let cfg = TrainConfig {
            max_steps: steps,
            batch_size: 1024,
            validation_horizons: 0,
            patience: 0,
            eval_every: steps,
            device,
            ..TrainConfig::default()
        };
        let (m, s) = timed_train(long, &paper, &cfg)?;
        let rate = m.card.metrics.steps_run as f64 / s;
        println!(
            "paper N-BEATS-G ({} parameters), batch 1024, {name}: {rate:.2} steps/s ({} steps in {s:.1} s)",
            m.card.parameter_count, m.card.metrics.steps_run
        );
        report.insert(format!("paper_steps_per_s_{name}"), serde_json::json!(rate));
    }

    // Scoring latency: 10,000 windows through a small model on each device.
    let model_cfg = NBeatsConfig::small(Architecture::Generic, HORIZON, 7);
    let hist = &set[1].values;
    let (cpu_model, _) = timed_train(
        hist,
        &model_cfg,
        &TrainConfig {
            max_steps: 50,
            ..TrainConfig::default()
        },
    )?;
    let saved = cpu_model.to_bytes()?;
    let gpu_model = TrainedModel::from_bytes(&saved.weights, &saved.card_json, &gpu)?;
    let windows: Vec<&[f64]> = (0..10_000)
        .map(|i| {
            let end = model_cfg.lookback + i % (hist.len() - model_cfg.lookback);
            &hist[..end]
        })
        .collect();
    for (name, model) in [("cpu", &cpu_model), ("gpu", &gpu_model)] {
        model.forecast_many(&windows[..100])?; // warm-up (kernel loading)
        let t = Instant::now();
        let out = model.forecast_many(&windows)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        println!(
            "score 10,000 windows on {name}: {ms:.1} ms ({} forecasts)",
            out.len()
        );
        report.insert(format!("score_10k_ms_{name}"), serde_json::json!(ms));
    }

    report.insert("failures".to_string(), serde_json::json!(failures));
    if let Some(path) = json_path {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
    }
    if failures.is_empty() {
        println!("cuda_check: all checks passed");
        Ok(())
    } else {
        for f in &failures {
            eprintln!("FAILED: {f}");
        }
        std::process::exit(1)
    }
}
