//! The query crate's error type.

/// Result alias for queries.
pub type Result<T, E = QueryError> = std::result::Result<T, E>;

/// What can go wrong answering a query. Maps onto Prometheus' `errorType`s: `Parse` and
/// `Unsupported` are `bad_data` (400), `Execution` is `execution` (422), `Timeout` is `timeout`
/// (503).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The query text does not parse.
    #[error("parse error: {0}")]
    Parse(String),
    /// The query uses a construct this engine does not implement; the message names it.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The query parsed but cannot be evaluated (type errors, many-to-many matches, limits).
    #[error("{0}")]
    Execution(String),
    /// Parameters of the request are out of range (time range, step).
    #[error("bad request: {0}")]
    BadRequest(String),
    /// The query ran past its deadline.
    #[error("query timed out")]
    Timeout,
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] sightline_storage::StorageError),
}
