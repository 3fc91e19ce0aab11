//! Results written back into the tenant's store as ordinary metric samples, so PromQL,
//! Grafana and recording-rule style queries see them: `<name>:predicted`, `<name>:lower`,
//! `<name>:upper`, `<name>:anomalous` (1 inside a sustained anomaly, else 0) and
//! `<name>:likelihood` (the HTM-style likelihood score in `[0, 1]`; 0.5 or more is unusual),
//! each with the source series' labels (without `__name__`).

use std::collections::BTreeMap;

use sightline_storage::{MetricBatch, MetricKind, Sample, SeriesDef, Store, TenantId};

use super::DetectorError;

/// The suffixes of the written series.
pub const SUFFIXES: [&str; 5] = ["predicted", "lower", "upper", "anomalous", "likelihood"];

/// One scored point to write.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// Timestamp (ms).
    pub t: i64,
    /// Expected value.
    pub predicted: f64,
    /// Lower band edge.
    pub lower: f64,
    /// Upper band edge.
    pub upper: f64,
    /// Inside a sustained anomaly.
    pub anomalous: bool,
    /// Likelihood score in `[0, 1]`.
    pub likelihood: f64,
}

/// Buffer of samples for one detector run.
#[derive(Debug, Default)]
pub struct Writer {
    batch: MetricBatch,
}

impl Writer {
    /// Add the points of one series. Non-finite values are skipped (the detect crate never
    /// yields them; this keeps the store free of them regardless).
    pub fn add(&mut self, detector: &str, labels: &BTreeMap<String, String>, points: &[Point]) {
        if points.is_empty() {
            return;
        }
        let labels: Vec<(String, String)> =
            labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let defs: Vec<SeriesDef> = SUFFIXES
            .iter()
            .map(|s| {
                let mut d =
                    SeriesDef::new(format!("{detector}:{s}"), MetricKind::Gauge, labels.clone());
                d.help = format!("sightline detector {detector}: {s}");
                d
            })
            .collect();
        for p in points {
            let values = [
                p.predicted,
                p.lower,
                p.upper,
                if p.anomalous { 1.0 } else { 0.0 },
                p.likelihood,
            ];
            for (d, v) in defs.iter().zip(values) {
                if v.is_finite() {
                    self.batch.samples.push(Sample {
                        series: d.id,
                        timestamp_ms: p.t,
                        value: v,
                    });
                }
            }
        }
        self.batch.series.extend(defs);
    }

    /// Move `other`'s samples into this buffer.
    pub fn append(&mut self, other: Writer) {
        self.batch.series.extend(other.batch.series);
        self.batch.samples.extend(other.batch.samples);
    }

    /// Samples buffered.
    pub fn len(&self) -> usize {
        self.batch.samples.len()
    }

    /// Whether nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.batch.samples.is_empty()
    }

    /// Append everything durably (blocking: waits for the WAL), in chunks.
    pub fn flush(self, store: &Store, tenant: &TenantId) -> Result<usize, DetectorError> {
        let n = self.batch.samples.len();
        if n == 0 {
            return Ok(0);
        }
        store
            .append_metrics(tenant, &self.batch)
            .map_err(|e| DetectorError::Store(e.to_string()))?;
        Ok(n)
    }
}
