//! Why a run failed. A failure is not an error of the scheduler: the run records its text as
//! the detector's `status.error` (state `failed`) and the detector runs again at its next
//! period, so what a user can fix (the query, `max_series`) is said in the message.

use sightline_detect::DetectError;
use sightline_query::QueryError;

/// A failed run (see the module docs).
#[derive(Debug, thiserror::Error)]
pub enum RunFailure {
    /// The PromQL query did not evaluate.
    #[error("query {query:?}: {source}")]
    Query {
        /// The query.
        query: String,
        /// What the query layer said.
        source: QueryError,
    },
    /// The query evaluates to a scalar or a string.
    #[error("query {0:?} does not evaluate to series")]
    NotSeries(String),
    /// Two series differ only by `__name__`: their bands would be written to one series.
    #[error(
        "query {query:?} returns two series with the labels {labels} once __name__ is dropped; aggregate or relabel them"
    )]
    DuplicateLabels {
        /// The query.
        query: String,
        /// The labels both share.
        labels: String,
    },
    /// Nothing to learn from.
    #[error("query {query:?} returned no series over the last {history}")]
    NoSeries {
        /// The query.
        query: String,
        /// The definition's `history`.
        history: String,
    },
    /// More series than the definition allows.
    #[error(
        "query returned {got} series, over max_series {max}; narrow the selector or raise max_series"
    )]
    TooManySeries {
        /// Series returned.
        got: usize,
        /// The definition's `max_series`.
        max: usize,
    },
    /// A service-mode role's query is not one series.
    #[error(
        "roles.{role}.query must yield exactly one series, got {got}; aggregate it (e.g. sum(...))"
    )]
    RoleNotOneSeries {
        /// The role.
        role: String,
        /// Series returned.
        got: usize,
    },
    /// A service-mode role's query has no samples in the window.
    #[error("roles.{role}.query has no data over the last {history}")]
    RoleNoData {
        /// The role.
        role: String,
        /// The definition's `history`.
        history: String,
    },
    /// The service-mode roles' series do not overlap in time.
    #[error("the role queries have no stretch of time in common")]
    NoCommonRange,
    /// A service-mode detector's `volume_query` is not one series.
    #[error("volume_query must yield exactly one series in service mode")]
    ServiceVolume,
    /// Scoring a service-mode role failed.
    #[error("{role}: {source}")]
    RoleScoring {
        /// The role.
        role: String,
        /// What the formula said.
        source: DetectError,
    },
    /// Judging the service's roles together failed.
    #[error("{0}")]
    Service(#[source] DetectError),
    /// The run was stopped (the detector was replaced or deleted, or the server is stopping).
    #[error("cancelled")]
    Cancelled,
}
