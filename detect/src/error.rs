//! The crate's single error type.
//!
//! Every fallible function in `sightline-detect` returns [`DetectError`]. Each variant names one
//! way the *input* can be unusable; none of them means "bug in this crate" (those would be
//! panics, and the crate is written so that no input can cause one).

/// Why a detector could not produce a result for the given input.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DetectError {
    /// The JSON text could not be parsed into the expected shape (syntax error, wrong type,
    /// missing field). `line`/`column` are 1-based positions reported by `serde_json`.
    #[error("invalid JSON for {what} at line {line}, column {column}: {message}")]
    InvalidJson {
        /// What was being parsed, e.g. `"logprobs"`.
        what: &'static str,
        /// 1-based line of the error (0 when unknown).
        line: usize,
        /// 1-based column of the error (0 when unknown).
        column: usize,
        /// The parser's message.
        message: String,
    },

    /// A number that must be finite is NaN or infinite.
    #[error("non-finite value in {field} at index {index}")]
    NonFinite {
        /// Which input field held the value.
        field: &'static str,
        /// Position of the offending value.
        index: usize,
    },

    /// A log-probability is outside the valid range `(-inf, 0]` (beyond a small rounding
    /// tolerance), or is NaN.
    #[error("invalid logprob at token {token_index}: {reason}")]
    InvalidLogprob {
        /// Index of the token in the response.
        token_index: usize,
        /// Human-readable reason, including the offending value.
        reason: String,
    },

    /// A probability distribution is invalid, e.g. the top-k probabilities sum to clearly more
    /// than one.
    #[error("invalid distribution at token {token_index}: {reason}")]
    InvalidDistribution {
        /// Index of the token in the response.
        token_index: usize,
        /// Human-readable reason.
        reason: String,
    },

    /// An input that needs at least one element is empty.
    #[error("empty input: {what}")]
    Empty {
        /// What was empty.
        what: &'static str,
    },

    /// Too few observations for the requested computation.
    #[error("too few observations for {what}: need at least {needed}, got {got}")]
    TooFewObservations {
        /// The computation that was refused.
        what: &'static str,
        /// Minimum number of observations required.
        needed: usize,
        /// Number of observations supplied.
        got: usize,
    },

    /// Two inputs that must have equal lengths do not.
    #[error("length mismatch: {left} has {left_len} values, {right} has {right_len}")]
    LengthMismatch {
        /// Name of the first input.
        left: &'static str,
        /// Its length.
        left_len: usize,
        /// Name of the second input.
        right: &'static str,
        /// Its length.
        right_len: usize,
    },

    /// A series is constant, so tests on it are undefined.
    #[error("series {series} is constant")]
    ConstantSeries {
        /// Which series (name or role such as `"cause"`).
        series: String,
    },

    /// The regressors are (numerically) collinear: some column is a linear combination of the
    /// others to within the rank tolerance, so coefficients are not identified.
    #[error("regressors are collinear ({context})")]
    Collinear {
        /// Which regression, e.g. `"granger lag 3"`.
        context: String,
    },

    /// The model fits the data perfectly (zero residual), so test statistics are undefined.
    #[error("perfect fit, test statistic undefined ({context})")]
    PerfectFit {
        /// Which regression.
        context: String,
    },

    /// A parameter is outside its allowed range.
    #[error("invalid parameter {name}: {reason}")]
    InvalidParameter {
        /// Parameter name.
        name: &'static str,
        /// Why it is invalid.
        reason: String,
    },

    /// Timestamps are not strictly increasing, do not overlap, or cannot be aligned.
    #[error("invalid timestamps for {series}: {reason}")]
    InvalidTimestamps {
        /// Which series.
        series: String,
        /// Why.
        reason: String,
    },

    /// The data do not identify the model (e.g. all idle times equal in a decay fit).
    #[error("degenerate data for {what}: {reason}")]
    DegenerateData {
        /// The computation that was refused.
        what: &'static str,
        /// Why the data cannot identify it.
        reason: String,
    },

    /// An iterative fit did not converge within its iteration limit.
    #[error("{what} did not converge after {iterations} iterations")]
    NoConvergence {
        /// The fit.
        what: &'static str,
        /// Iterations spent.
        iterations: usize,
    },

    /// The tensor backend (candle) failed: an allocation, a shape mismatch inside the model,
    /// or a device that is not available (e.g. CUDA requested in a build without `cuda`).
    #[error("tensor backend error in {what}: {message}")]
    Backend {
        /// The operation, e.g. `"n-beats forward"`.
        what: &'static str,
        /// The backend's message.
        message: String,
    },

    /// Persisted model bytes (weights or model card) are unreadable or do not match each other.
    #[error("invalid saved model: {reason}")]
    InvalidModel {
        /// What is wrong with them.
        reason: String,
    },

    /// A numerical routine produced a non-finite result (e.g. a special function failed);
    /// reported instead of returning NaN.
    #[error("numerical failure in {what}")]
    Numerical {
        /// Which computation.
        what: &'static str,
    },
}

/// Shorthand for results of this crate.
pub type Result<T, E = DetectError> = std::result::Result<T, E>;

impl DetectError {
    /// Map a `serde_json` error into [`DetectError::InvalidJson`].
    pub(crate) fn json(what: &'static str, err: &serde_json::Error) -> Self {
        DetectError::InvalidJson {
            what,
            line: err.line(),
            column: err.column(),
            message: err.to_string(),
        }
    }
}

/// Return `NonFinite` for the first NaN/inf in `values`.
pub(crate) fn check_finite(field: &'static str, values: &[f64]) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(DetectError::NonFinite { field, index }),
        None => Ok(()),
    }
}
