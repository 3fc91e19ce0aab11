//! The server library's error types: [`ConfigError`] (and [`TokensError`]) for start-up,
//! [`IngestError`] for a rejected export request (each maps to one HTTP status and one gRPC
//! code).

use std::path::PathBuf;
use std::time::Duration;

/// What is wrong with a tokens file (lines count from 1).
#[derive(Debug, thiserror::Error)]
pub enum TokensError {
    /// A line that is not two words.
    #[error("line {line}: expected `TOKEN TENANT`")]
    Malformed {
        /// The line.
        line: usize,
    },
    /// A tenant name the store refuses.
    #[error("line {line}: {source}")]
    Tenant {
        /// The line.
        line: usize,
        /// Why the name is refused.
        source: sightline_storage::StorageError,
    },
    /// A token given twice.
    #[error("line {line}: token listed twice")]
    Duplicate {
        /// The line.
        line: usize,
    },
    /// No token at all.
    #[error("no tokens defined (auth would refuse everything)")]
    Empty,
}

/// Why the configuration could not be assembled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A configuration or tokens file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The configuration file is not valid TOML for the configuration.
    #[error("{path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What TOML said, with a line number where known.
        source: toml::de::Error,
    },
    /// The tokens file is malformed.
    #[error("{path}: {source}")]
    Tokens {
        /// The file.
        path: PathBuf,
        /// What is wrong, with its line.
        source: TokensError,
    },
    /// A value is out of range or inconsistent.
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// Why an export request (or all of its items) was refused. Nothing of the request was stored
/// when one of these is returned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// The body is not valid protobuf / JSON / gzip, or violates the OTLP data model.
    #[error("{0}")]
    Malformed(String),
    /// Content type or content encoding not supported.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The body, its decompressed form or its item count is over a limit.
    #[error("{0}")]
    TooLarge(String),
    /// Auth is on and the request carries no valid bearer token.
    #[error("{0}")]
    Unauthenticated(String),
    /// The tenant named by `X-Scope-OrgID` is not a valid tenant id.
    #[error("{0}")]
    InvalidTenant(String),
    /// Every item of the request was rejected (per-item reasons in the message).
    #[error("all {rejected} items rejected: {message}")]
    AllRejected {
        /// How many items.
        rejected: u64,
        /// The first reasons.
        message: String,
    },
    /// The store's memory budget is exhausted; retry later.
    #[error("server over its memory budget, retry after {retry_after:?}")]
    OverBudget {
        /// Suggested back-off.
        retry_after: Duration,
    },
    /// Too many export requests in flight; retry later.
    #[error("too many concurrent export requests, retry after {retry_after:?}")]
    Busy {
        /// Suggested back-off.
        retry_after: Duration,
    },
    /// The server is shutting down or the store is closed.
    #[error("{0}")]
    Unavailable(String),
    /// The store failed (I/O, poisoned after a failed fsync).
    #[error("internal error: {0}")]
    Internal(String),
}

impl IngestError {
    /// The HTTP status code the OTLP/HTTP spec prescribes for this error.
    pub fn http_status(&self) -> u16 {
        match self {
            Self::Malformed(_) | Self::InvalidTenant(_) | Self::AllRejected { .. } => 400,
            Self::Unauthenticated(_) => 401,
            Self::TooLarge(_) => 413,
            Self::UnsupportedMediaType(_) => 415,
            Self::Busy { .. } => 429,
            Self::OverBudget { .. } | Self::Unavailable(_) => 503,
            Self::Internal(_) => 500,
        }
    }

    /// The retry delay to advertise (`Retry-After`, gRPC `RetryInfo`), for retryable errors.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::OverBudget { retry_after } | Self::Busy { retry_after } => Some(*retry_after),
            Self::Unavailable(_) => Some(Duration::from_secs(1)),
            _ => None,
        }
    }

    /// The reason label used in the server's own metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Malformed(_) => "malformed",
            Self::UnsupportedMediaType(_) => "unsupported_media_type",
            Self::TooLarge(_) => "too_large",
            Self::Unauthenticated(_) => "unauthenticated",
            Self::InvalidTenant(_) => "invalid_tenant",
            Self::AllRejected { .. } => "all_items_rejected",
            Self::OverBudget { .. } => "over_budget",
            Self::Busy { .. } => "busy",
            Self::Unavailable(_) => "unavailable",
            Self::Internal(_) => "internal",
        }
    }
}

impl From<sightline_storage::StorageError> for IngestError {
    fn from(e: sightline_storage::StorageError) -> Self {
        use sightline_storage::StorageError as S;
        match e {
            S::OverBudget { retry_after, .. } => Self::OverBudget { retry_after },
            S::Closed => Self::Unavailable("store is closed (server shutting down)".into()),
            // Retryable: the write was undone and succeeds once space is freed.
            e if e.is_disk_full() => Self::Unavailable(format!("disk full, retry later: {e}")),
            e if e.is_client_error() => Self::Malformed(e.to_string()),
            e => Self::Internal(e.to_string()),
        }
    }
}

/// Why the server could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Bad configuration or tokens file.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The store could not be opened or closed cleanly.
    #[error("storage: {0}")]
    Storage(#[from] sightline_storage::StorageError),
    /// A listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A server task failed.
    #[error("{0}")]
    Server(String),
}

#[cfg(test)]
mod tests {
    use super::IngestError;
    use sightline_storage::StorageError;

    #[test]
    fn a_full_disk_is_retryable_and_other_io_errors_are_not() {
        let full = StorageError::io("wal", std::io::Error::from_raw_os_error(28));
        assert!(full.is_disk_full());
        let e = IngestError::from(full);
        assert_eq!(e.http_status(), 503);
        assert!(e.retry_after().is_some());
        assert!(e.to_string().contains("disk full"), "{e}");
        let eio = IngestError::from(StorageError::io(
            "wal",
            std::io::Error::from_raw_os_error(5),
        ));
        assert_eq!(eio.http_status(), 500);
        assert!(eio.retry_after().is_none());
    }
}
