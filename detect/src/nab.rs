//! The Numenta Anomaly Benchmark scoring rules (Lavin & Ahmad, "Evaluating Real-time Anomaly
//! Detection Algorithms — the Numenta Anomaly Benchmark", ICMLA 2015, §IV; NAB's
//! `sweeper.py`).
//!
//! * Each labelled anomaly has a **window** around it. Inside a window a detection at relative
//!   position `x ∈ [−1, 0)` (`−1` = window start) earns `σ_s(x) · A_TP / σ_s(−1)`, where the
//!   scaled sigmoid is `σ_s(x) = 2/(1 + e^{5x}) − 1` (and `−1` for `x > 3`); only the best
//!   (earliest) detection per window counts.
//! * A detection outside every window is a false positive weighted by `A_FP · σ_s(x)` with `x`
//!   its distance past the end of the preceding window in window widths (`−A_FP` when no window
//!   precedes it), so detections just after a window are penalised less.
//! * Each window without a detection costs `A_FN`.
//! * The first 15% of each file (at most 750 points) is a probationary period and not scored.
//! * A detector outputs a score per point; the threshold is chosen to maximise the total over
//!   all files; the result is normalised `100 · (raw − null)/(perfect − null)` where the null
//!   detector never fires and the perfect one fires at every window start.

use serde::{Deserialize, Serialize};

use crate::error::{DetectError, Result};

/// Application profile weights (NAB `config/profiles.json`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CostProfile {
    /// `A_TP` weight.
    pub tp_weight: f64,
    /// `A_FP` weight (magnitude; false positives subtract).
    pub fp_weight: f64,
    /// `A_FN` weight (magnitude).
    pub fn_weight: f64,
}

impl CostProfile {
    /// Standard profile: `A_TP = 1, A_FP = −0.11, A_FN = −1`.
    pub const STANDARD: Self = Self {
        tp_weight: 1.0,
        fp_weight: 0.11,
        fn_weight: 1.0,
    };
    /// Reward low false-positive rate: `A_FP = −0.22`.
    pub const LOW_FP: Self = Self {
        tp_weight: 1.0,
        fp_weight: 0.22,
        fn_weight: 1.0,
    };
    /// Reward low false-negative rate: `A_FN = −2`.
    pub const LOW_FN: Self = Self {
        tp_weight: 1.0,
        fp_weight: 0.11,
        fn_weight: 2.0,
    };
}

/// NAB's scaled sigmoid `2/(1 + e^{5x}) − 1`, `−1` for `x > 3`.
pub fn scaled_sigmoid(x: f64) -> f64 {
    if x > 3.0 {
        -1.0
    } else {
        2.0 / (1.0 + (5.0 * x).exp()) - 1.0
    }
}

/// Probationary length: `min(⌊0.15·n⌋, 750)`.
pub fn probationary_len(n: usize) -> usize {
    (n * 15 / 100).min(750)
}

/// One labelled file with a detector's scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NabFile {
    /// Name (e.g. the relative CSV path).
    pub name: String,
    /// Detector score per point.
    pub scores: Vec<f64>,
    /// Anomaly windows as inclusive, sorted, non-overlapping index ranges.
    pub windows: Vec<(usize, usize)>,
}

/// The weight a detection at each point would earn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointWeight {
    /// Weighted score if detected.
    pub weight: f64,
    /// Window index, `None` outside windows.
    pub window: Option<usize>,
    /// In the probationary period (ignored).
    pub probationary: bool,
}

/// Weights of every point of a file of length `n` with `windows` (NAB `sweeper.py`).
pub fn point_weights(
    n: usize,
    windows: &[(usize, usize)],
    profile: CostProfile,
) -> Result<Vec<PointWeight>> {
    let mut prev_end = 0usize;
    for (i, &(s, e)) in windows.iter().enumerate() {
        if s > e || e >= n || (i > 0 && s <= prev_end) {
            return Err(DetectError::InvalidParameter {
                name: "windows",
                reason: format!("window {i} ({s}, {e}) is empty, out of range or overlaps"),
            });
        }
        prev_end = e;
    }
    let max_tp = scaled_sigmoid(-1.0);
    let prob = probationary_len(n);
    let mut out = Vec::with_capacity(n);
    let mut w = 0usize;
    let mut prev: Option<(usize, usize)> = None; // (right index, width) of the preceding window
    for i in 0..n {
        while w < windows.len() && windows[w].1 < i {
            let (s, e) = windows[w];
            prev = Some((e, e - s + 1));
            w += 1;
        }
        let in_window = w < windows.len() && windows[w].0 <= i;
        let (weight, window) = if in_window {
            let (s, e) = windows[w];
            let width = (e - s + 1) as f64;
            let pos = -((e - i + 1) as f64) / width;
            (scaled_sigmoid(pos) * profile.tp_weight / max_tp, Some(w))
        } else {
            let unweighted = match prev {
                None => -1.0,
                Some((right, width)) => {
                    scaled_sigmoid((i - right) as f64 / (width.saturating_sub(1).max(1)) as f64)
                }
            };
            (unweighted * profile.fp_weight, None)
        };
        out.push(PointWeight {
            weight,
            window,
            probationary: i < prob,
        });
    }
    Ok(out)
}

/// Counts and score of one threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdResult {
    /// Detection threshold (`score ≥ threshold` fires).
    pub threshold: f64,
    /// Raw (unnormalised) score summed over files.
    pub raw: f64,
    /// Windows with at least one detection.
    pub detected_windows: usize,
    /// Windows in total (counted outside the probationary period).
    pub windows: usize,
    /// False-positive detections.
    pub false_positives: usize,
}

/// The benchmark result of one detector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NabScore {
    /// Best threshold and its counts.
    pub best: ThresholdResult,
    /// Raw score of the null detector.
    pub null: f64,
    /// Raw score of the perfect detector.
    pub perfect: f64,
    /// `100 · (raw − null) / (perfect − null)`.
    pub normalized: f64,
}

struct Event {
    score: f64,
    file: usize,
    weight: f64,
    window: Option<usize>,
}

/// Sweep every distinct score as threshold (plus "never fire") and return the best, normalised.
pub fn score_detector(files: &[NabFile], profile: CostProfile) -> Result<NabScore> {
    let mut events = Vec::new();
    let mut window_offset = Vec::with_capacity(files.len());
    let mut total_windows = 0usize;
    for (f, file) in files.iter().enumerate() {
        let n = file.scores.len();
        let weights = point_weights(n, &file.windows, profile)?;
        window_offset.push(total_windows);
        total_windows += file.windows.len();
        for (s, pw) in file.scores.iter().zip(&weights) {
            if pw.probationary || !s.is_finite() {
                continue;
            }
            events.push(Event {
                score: *s,
                file: f,
                weight: pw.weight,
                window: pw.window,
            });
        }
    }
    // Windows entirely inside the probationary period are not counted (NAB labels avoid it).
    let scored_windows: Vec<bool> = {
        let mut v = vec![false; total_windows];
        for e in &events {
            if let Some(w) = e.window {
                v[window_offset[e.file] + w] = true;
            }
        }
        v
    };
    let windows = scored_windows.iter().filter(|b| **b).count();
    let null = -profile.fn_weight * windows as f64;
    let perfect = profile.tp_weight * windows as f64;
    events.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut best_tp = vec![f64::NEG_INFINITY; total_windows];
    let mut tp_sum = 0.0;
    let mut fp_sum = 0.0;
    let mut detected = 0usize;
    let mut fps = 0usize;
    let mut best = ThresholdResult {
        threshold: f64::INFINITY,
        raw: null,
        detected_windows: 0,
        windows,
        false_positives: 0,
    };
    let mut i = 0;
    while i < events.len() {
        let threshold = events[i].score;
        while i < events.len() && events[i].score == threshold {
            let e = &events[i];
            match e.window {
                Some(w) => {
                    let k = window_offset[e.file] + w;
                    if best_tp[k] == f64::NEG_INFINITY {
                        detected += 1;
                        tp_sum += e.weight;
                        best_tp[k] = e.weight;
                    } else if e.weight > best_tp[k] {
                        tp_sum += e.weight - best_tp[k];
                        best_tp[k] = e.weight;
                    }
                }
                None => {
                    fp_sum += e.weight;
                    fps += 1;
                }
            }
            i += 1;
        }
        let raw = tp_sum + fp_sum - profile.fn_weight * (windows - detected) as f64;
        if raw > best.raw {
            best = ThresholdResult {
                threshold,
                raw,
                detected_windows: detected,
                windows,
                false_positives: fps,
            };
        }
    }
    let span = perfect - null;
    let normalized = if span > 0.0 {
        100.0 * (best.raw - null) / span
    } else {
        0.0
    };
    Ok(NabScore {
        best,
        null,
        perfect,
        normalized,
    })
}

/// Turn raw per-point anomaly scores into sparse NAB detections: the `min_run`-point rolling
/// minimum (a sustained level) reported only where it exceeds every value of the previous
/// `cooldown` points, else 0. At any threshold this fires once per rising episode instead of at
/// every point of it, which is what NAB rewards.
pub fn onset_scores(scores: &[f64], min_run: usize, cooldown: usize) -> Vec<f64> {
    let k = min_run.max(1);
    let sustained: Vec<f64> = (0..scores.len())
        .map(|t| {
            let lo = (t + 1).saturating_sub(k);
            scores[lo..=t]
                .iter()
                .copied()
                .filter(|v| v.is_finite())
                .fold(f64::INFINITY, f64::min)
        })
        .map(|v| if v.is_finite() { v } else { 0.0 })
        .collect();
    (0..sustained.len())
        .map(|t| {
            let lo = t.saturating_sub(cooldown);
            let prev_max = sustained[lo..t].iter().copied().fold(0.0, f64::max);
            if sustained[t] > prev_max {
                sustained[t]
            } else {
                0.0
            }
        })
        .collect()
}

/// Precision and recall per window: a window is found when a detection falls inside it (or in
/// the `slack` points after it); a detection is correct when it falls inside some window (+slack).
pub fn window_precision_recall(
    detections: &[usize],
    windows: &[(usize, usize)],
    slack: usize,
) -> (f64, f64) {
    let hit = |d: usize| windows.iter().position(|(s, e)| d >= *s && d <= e + slack);
    let correct = detections.iter().filter(|d| hit(**d).is_some()).count();
    let mut found = vec![false; windows.len()];
    for d in detections {
        if let Some(w) = hit(*d) {
            found[w] = true;
        }
    }
    let precision = if detections.is_empty() {
        1.0
    } else {
        correct as f64 / detections.len() as f64
    };
    let recall = if windows.is_empty() {
        1.0
    } else {
        found.iter().filter(|f| **f).count() as f64 / windows.len() as f64
    };
    (precision, recall)
}
