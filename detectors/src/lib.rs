//! # sightline-detectors
//!
//! Anomaly detectors of a Sightline server: definitions per tenant created through the HTTP API
//! and persisted under the data directory, a background scheduler that trains and scores them
//! without blocking ingest or queries, results written back as PromQL-queryable series and
//! anomaly events served as JSON and as Grafana annotations. See docs/detectors.md.
//!
//! **Owns:** detector definitions and their validation, the per-tenant registry, the scheduler
//! and its worker threads, training and scoring runs, the writeback of their results, anomaly
//! events, and every file under `<data-dir>/detectors/` (JSON definitions, state and events,
//! N-BEATS models; the store never reads them). **May not touch:** HTTP (the server's
//! `http/detectors` serves the API and maps [`DetectorError`] to status codes), OTLP, or the
//! storage engine's files: it reads metrics only through [`sightline_query`] over a
//! [`sightline_storage::Store`] and writes its results only through `Store::append_metrics`.
//! Its limits ([`DetectorLimits`]) are its own; the server fills them from its configuration.
//!
//! Module map:
//! * [`spec`]: the definition, defaults and validation;
//! * [`status`]: state, progress and times shown by the API and kept in `state.json`;
//! * [`limits`]: quota, model size, training memory and time, shortest periods;
//! * [`registry`]: the on-disk layout and the in-memory table;
//! * [`files`]: atomic owner-only JSON files and the run-in-progress marker;
//! * [`scheduler`]: the worker pool and the tick that decides what runs when, fed by
//!   [`queue`], round-robin across tenants;
//! * [`run`]: one run (training, scoring, applying the outcome); [`service`] its
//!   multi-series variant; both build on [`grid`] (the window and the PromQL history on it)
//!   and [`outcome`] (what a run produced), and neither imports the other's internals
//!   (`run` calls `service::service`); [`failure`] says why a run failed;
//! * [`writeback`]: the `<name>:predicted|lower|upper|anomalous` samples;
//! * [`events`]: anomaly events, severity and explanations.
//!
//! The formulas (N-BEATS, baselines, conformal bands, sustained alerts, `judge_service`) are
//! the detect crate's; this crate only feeds them and keeps their results.

pub mod events;
pub mod failure;
pub mod files;
pub mod grid;
pub mod limits;
pub mod outcome;
pub mod queue;
pub mod registry;
pub mod run;
pub mod scheduler;
pub mod service;
pub mod spec;
pub mod status;
pub mod writeback;

pub use events::AnomalyEvent;
pub use limits::DetectorLimits;
pub use registry::{Detector, Registry};
pub use scheduler::Detectors;
pub use spec::DetectorSpec;
pub use status::{State, Status};

/// What can go wrong with detectors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DetectorError {
    /// The definition is invalid (400).
    #[error("{0}")]
    Invalid(String),
    /// A detector of that name exists (409).
    #[error("detector {0:?} already exists; use PUT /api/v1/detectors/{0} to replace it")]
    Exists(String),
    /// No such detector (404).
    #[error("no detector named {0:?}")]
    NotFound(String),
    /// Reading or writing the detector's files failed.
    #[error("detector files: {0}")]
    Io(String),
    /// Writing results into the store failed.
    #[error("writing detector results: {0}")]
    Store(String),
    /// The run stopped because the detector was replaced, deleted or the server is stopping.
    #[error("run cancelled")]
    Cancelled,
    /// The scheduler is off (`--detector-threads 0`).
    #[error("the detector scheduler is disabled (--detector-threads 0)")]
    Disabled,
}
