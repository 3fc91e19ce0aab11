//! Fixed basis matrices of the interpretable stacks (Oreshkin et al. 2020, §3.3).
//!
//! Each function returns a row-major `θ_dim × n` matrix `B` so that a block output is
//! `ŷ = θ B` for a batch of coefficient rows `θ`.

/// Polynomial trend basis, eq. (2): rows `t^i` for `i = 0..=degree` on the grid
/// `t = (0, 1, …, n−1) / n`.
pub fn trend(degree: usize, n: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity((degree + 1) * n);
    for power in 0..=degree {
        for step in 0..n {
            let t = step as f64 / n as f64;
            out.push(t.powi(power as i32) as f32);
        }
    }
    out
}

/// Frequencies (cycles per horizon) of the seasonality basis: `j / resolution` for
/// `j = 1 ..= resolution · ⌊H/2⌋`, at least one.
pub fn seasonality_frequencies(horizon: usize, resolution: usize) -> Vec<f64> {
    let count = (resolution.max(1) * (horizon / 2)).max(1);
    (1..=count)
        .map(|j| j as f64 / resolution.max(1) as f64)
        .collect()
}

/// Number of coefficients of the seasonality basis: a constant plus a cos/sin pair per
/// frequency.
pub fn seasonality_dim(horizon: usize, resolution: usize) -> usize {
    1 + 2 * seasonality_frequencies(horizon, resolution).len()
}

/// Fourier seasonality basis, eq. (3), evaluated at times `offset + step` for
/// `step = 0..n`, measured in horizons (`t = (offset + step) / H`). The forecast uses
/// `offset = 0`; the backcast uses `offset = −L`, so backcast and forecast share one phase, as
/// in the authors' reference implementation.
pub fn seasonality(horizon: usize, resolution: usize, n: usize, offset: i64) -> Vec<f32> {
    let freqs = seasonality_frequencies(horizon, resolution);
    let dim = 1 + 2 * freqs.len();
    let mut out = Vec::with_capacity(dim * n);
    out.extend(std::iter::repeat_n(1.0f32, n));
    let time = |step: usize| (offset + step as i64) as f64 / horizon.max(1) as f64;
    for f in &freqs {
        for step in 0..n {
            out.push((std::f64::consts::TAU * f * time(step)).cos() as f32);
        }
    }
    for f in &freqs {
        for step in 0..n {
            out.push((std::f64::consts::TAU * f * time(step)).sin() as f32);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_values() {
        let t = trend(2, 4);
        assert_eq!(t.len(), 12);
        assert_eq!(&t[0..4], &[1.0, 1.0, 1.0, 1.0]);
        assert_eq!(&t[4..8], &[0.0, 0.25, 0.5, 0.75]);
        assert_eq!(seasonality_dim(24, 1), 25);
        let s = seasonality(24, 1, 24, 0);
        assert_eq!(s.len(), 25 * 24);
        // cos(0) = 1 for the first frequency at t = 0.
        assert!((s[24] - 1.0).abs() < 1e-6);
    }
}
