//! The query crate's error type.

/// Result alias for queries.
pub type Result<T, E = QueryError> = std::result::Result<T, E>;

/// What can go wrong answering a query. Maps onto Prometheus' `errorType`s: `Parse` and
/// `Unsupported` are `bad_data` (400), `Execution` and `TooManySamples` are `execution` (422),
/// `Timeout` is `timeout` (503).
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
    /// The query ran past its deadline or was cancelled (storage's
    /// [`sightline_storage::StorageError::DeadlineExceeded`] converts to this).
    #[error("query timed out")]
    Timeout,
    /// Evaluation would hold more samples at once than the query's budget allows
    /// (`crate::promql::Budget::max_samples`); the message is Prometheus'.
    #[error("query processing would load too many samples into memory in query execution")]
    TooManySamples,
    /// Storage failed.
    #[error(transparent)]
    Storage(sightline_storage::StorageError),
}

impl From<sightline_storage::StorageError> for QueryError {
    /// Storage errors, except that a passed deadline is a [`QueryError::Timeout`] and a sample
    /// limit a [`QueryError::TooManySamples`] wherever they surface.
    fn from(e: sightline_storage::StorageError) -> Self {
        match e {
            sightline_storage::StorageError::DeadlineExceeded => QueryError::Timeout,
            sightline_storage::StorageError::TooManySamples { .. } => QueryError::TooManySamples,
            e => QueryError::Storage(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passed_deadline_is_a_timeout() {
        let e: QueryError = sightline_storage::StorageError::DeadlineExceeded.into();
        assert!(matches!(e, QueryError::Timeout));
        let e: QueryError = sightline_storage::StorageError::Closed.into();
        assert!(matches!(e, QueryError::Storage(_)));
        assert_eq!(
            QueryError::TooManySamples.to_string(),
            "query processing would load too many samples into memory in query execution"
        );
    }
}
