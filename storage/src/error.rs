//! The storage crate's error type.

use std::path::PathBuf;
use std::time::Duration;

/// Result alias for storage operations.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// Everything that can go wrong inside the store.
///
/// Input errors ([`StorageError::InvalidInput`], [`StorageError::InvalidQuery`],
/// [`StorageError::UnknownSeries`], [`StorageError::CardinalityLimit`]) never change stored data.
/// [`StorageError::OverBudget`] asks the caller to retry later. [`StorageError::Corruption`] means
/// bytes on disk did not match what was written; the store quarantines what it can and keeps
/// serving the rest.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// An operating-system I/O call failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Data from outside (a record, a request) is malformed or out of range. Nothing was written.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A query predicate cannot be evaluated (bad regex, bad full-text syntax, wrong signal).
    #[error("invalid query: {0}")]
    InvalidQuery(String),
    /// A metric sample names a series that is neither in the batch nor known to the store.
    #[error("sample refers to unknown series {0:#018x}")]
    UnknownSeries(u64),
    /// The tenant already has the maximum number of metric series.
    #[error("tenant {tenant} is at its limit of {limit} series")]
    CardinalityLimit {
        /// The tenant.
        tenant: String,
        /// The configured limit.
        limit: usize,
    },
    /// Unflushed data exceeds the memory budget; retry after the suggested delay.
    #[error("memory budget of {budget_bytes} bytes exhausted, retry after {retry_after:?}")]
    OverBudget {
        /// The configured budget.
        budget_bytes: usize,
        /// A hint for the client's back-off.
        retry_after: Duration,
    },
    /// Bytes on disk are not what was written (checksum mismatch, bad framing, undecodable file).
    #[error("data corruption in {path}: {detail}")]
    Corruption {
        /// The damaged file.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
    /// The data directory is in use by another process.
    #[error("data directory {0} is locked by another process")]
    Locked(PathBuf),
    /// A write to the WAL could not be made durable; the store refuses further writes because the
    /// kernel may have dropped dirty pages (see the PostgreSQL "fsyncgate" discussion).
    #[error("store is read-only after a failed fsync: {0}")]
    Poisoned(String),
    /// The store has been closed.
    #[error("store is closed")]
    Closed,
    /// The caller's [`crate::Deadline`] passed (or its request was cancelled) before the work
    /// finished; nothing was changed.
    #[error("deadline exceeded")]
    DeadlineExceeded,
    /// A scan would hold more rows in memory than the scan memory budget allows
    /// ([`crate::StoreConfig::scan_memory_bytes`]); it stopped reading.
    #[error(
        "scan memory budget of {budget_bytes} bytes exhausted: this query needs more than \
         {scan_bytes} bytes of rows while other queries hold {others_bytes}; narrow the time \
         range or add matchers"
    )]
    ScanMemory {
        /// The budget.
        budget_bytes: usize,
        /// Bytes this scan held with the batch it could not add.
        scan_bytes: usize,
        /// Bytes held by other scans at the time.
        others_bytes: usize,
    },
    /// A sample scan read more samples than its caller allows
    /// ([`crate::Store::scan_samples`]); it stopped before merging them.
    #[error("query would load {read} samples, more than the limit of {limit}")]
    TooManySamples {
        /// Samples read.
        read: usize,
        /// The caller's limit.
        limit: usize,
    },
    /// The Parquet library reported an error.
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// The Arrow library reported an error.
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
}

impl StorageError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    /// A corruption error for `path`.
    pub fn corruption(path: impl Into<PathBuf>, detail: impl Into<String>) -> Self {
        Self::Corruption {
            path: path.into(),
            detail: detail.into(),
        }
    }

    /// Whether the file system is out of space (or quota): the write was refused and undone,
    /// and the same write may succeed once space is freed.
    pub fn is_disk_full(&self) -> bool {
        match self {
            Self::Io { source, .. } => {
                source.kind() == std::io::ErrorKind::StorageFull
                    || source.kind() == std::io::ErrorKind::QuotaExceeded
            }
            _ => false,
        }
    }

    /// Whether the caller's input (not the store) is at fault.
    pub fn is_client_error(&self) -> bool {
        matches!(
            self,
            Self::InvalidInput(_)
                | Self::InvalidQuery(_)
                | Self::UnknownSeries(_)
                | Self::CardinalityLimit { .. }
        )
    }
}

/// Adds a path to `std::io::Result`s.
pub(crate) trait IoContext<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T> {
        self.map_err(|e| StorageError::io(path, e))
    }
}
