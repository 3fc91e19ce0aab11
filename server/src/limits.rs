//! Limits on everything a client can make the server hold or compute. Each has a default, a
//! key in the `[limits]` table of the config file and a `--max-*` flag.
//!
//! | limit | default | over it |
//! |---|---|---|
//! | `max_body_bytes` (wire, maybe compressed) | 16 MiB | 413 / gRPC `RESOURCE_EXHAUSTED` |
//! | `max_decompressed_bytes` | 64 MiB | 413 (stream-decompressed, stops at the cap) |
//! | `max_items_per_request` (spans, logs or data points) | 100,000 | 413 |
//! | `max_decoded_bytes` (estimated memory of one decoded request, counted before decoding) | 256 MiB | 413 / `RESOURCE_EXHAUSTED` |
//! | `max_inflight_decoded_bytes` (decompressed and decoded requests held at once, all transports) | 1 GiB | 429 / `RESOURCE_EXHAUSTED` + retry |
//! | `max_attributes_per_item` (resource, scope, span, event, link, log, point) | 1,024 | item rejected |
//! | `max_attribute_value_bytes` (each string / bytes value, nested ones too) | 256 KiB | item rejected |
//! | `max_attribute_depth` (nesting of arrays / maps) | 16 | item rejected |
//! | `max_content_bytes_per_span` (LLM content of one span and its events, or of one GenAI log record with its body: prompts, answers, documents, logprobs, strings nested in structured messages too; instead of the per-value limit) | 4 MiB | cut at a character boundary, keys listed in `sightline.truncated_attributes` (a log body as `body`), counted in `partial_success` and `/metrics` |
//! | `max_future_skew_secs` (timestamps ahead of the server clock) | 3,600 | item rejected |
//! | `max_inflight_requests` (export requests being processed) | 1,024 | 429 / `RESOURCE_EXHAUSTED` + retry |
//! | `max_series_per_tenant` (storage) | 1,000,000 | OTLP: data points of new series past the limit rejected (partial success, reason `series_limit`; a histogram point is kept or refused whole), 400 when none is left; remote write: 400 |
//! | `query_timeout_secs` (longest query evaluation; the `timeout` parameter can only lower it) | 120 | 503 `timeout` |
//! | `max_concurrent_queries` (query, metadata and detect work running at once, all tenants) | 20 | waits within the deadline, then 503 `timeout` |
//! | `max_concurrent_queries_per_tenant` (the same, one tenant) | 10 | waits within the deadline, then 503 `timeout` |
//! | `max_query_samples` (samples one PromQL query may hold, Prometheus' `--query.max-samples`) | 50,000,000 | 422 `execution` |
//! | `query_cache_bytes` (range query answers kept for repeated dashboard queries, all tenants; 0 turns the cache off) | 64 MiB | least recently used answers dropped |
//! | `query_cache_recent_secs` (steps this close to now are evaluated on every request, never kept) | 300 | |
//! | `max_connections` (open connections per listener, HTTP and gRPC) | 4,096 | connection closed at accept |
//! | `header_read_timeout_secs` (to send request headers; also the keep-alive idle timeout) | 30 | connection closed |
//! | `body_read_timeout_secs` (longest pause while sending a request body) | 60 | 400, connection closed |
//! | `max_detectors_per_tenant` (anomaly detectors one tenant may define) | 100 | 400 |
//! | `max_detector_parameters` (N-BEATS parameters of one detector's model) | 8,000,000 | 400 |
//! | `max_detector_training_bytes` (estimated memory of one model's training) | 1 GiB | 400 |
//! | `min_detector_retrain_secs` (shortest `retrain_every`) | 600 | 400 |
//! | `min_detector_step_secs` (shortest `step`, the scoring interval) | 10 | 400 |
//! | `max_detector_training_secs` (training wall time of one run) | 600 | training stops, best models so far kept |
//! | `max_assembling_traces` (traces waiting for their LLM spans and retrieved documents) | 100,000 | the trace is not evaluated, counted in `sightline_assembly_dropped_traces_total` |
//! | `assembly_settle_secs` (quiet time after a trace's last span before it is evaluated) | 2 | |
//! | `assembly_timeout_secs` (longest a trace waits for its pieces; later spans are not evaluated) | 60 | the trace is evaluated with what it has, or dropped |
//! | `assembly_recovery_secs` (how far back a start looks for traces left unevaluated) | 3,600 | |

use serde::{Deserialize, Serialize};

/// The limits in force (see the module table).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Largest request body on the wire, in bytes.
    pub max_body_bytes: usize,
    /// Largest body after gzip decompression, in bytes.
    pub max_decompressed_bytes: usize,
    /// Most spans, log records or metric data points in one request.
    pub max_items_per_request: usize,
    /// Largest estimated size of one decoded request (the pre-scan's estimate, an upper
    /// bound of the heap its decoded messages take), in bytes.
    pub max_decoded_bytes: usize,
    /// Most bytes of decompressed bodies and decoded requests held at once, across
    /// concurrent requests (each reserves its share before decoding).
    pub max_inflight_decoded_bytes: usize,
    /// Most attributes on one resource, scope, span, event, link, log record or data point.
    pub max_attributes_per_item: usize,
    /// Longest string or bytes attribute value (and log body), in bytes.
    pub max_attribute_value_bytes: usize,
    /// Deepest nesting of array / key-value-list values.
    pub max_attribute_depth: usize,
    /// Most bytes of LLM content (prompts, answers, documents, logprobs) kept for one span and
    /// its events; longer content is truncated, not rejected.
    pub max_content_bytes_per_span: usize,
    /// How far in the future a timestamp may be, in seconds.
    pub max_future_skew_secs: u64,
    /// Most export requests processed at once (both transports together).
    pub max_inflight_requests: usize,
    /// Longest evaluation of one query, in seconds (Prometheus' `--query.timeout`).
    pub query_timeout_secs: u64,
    /// Most query, metadata and detect computations running at once, all tenants together.
    pub max_concurrent_queries: usize,
    /// Most such computations of one tenant running at once.
    pub max_concurrent_queries_per_tenant: usize,
    /// Most samples one PromQL query may hold in memory (Prometheus' `--query.max-samples`).
    pub max_query_samples: usize,
    /// Bytes of range query answers kept for the next request of the same query, all tenants
    /// together; 0 turns the cache off.
    pub query_cache_bytes: usize,
    /// Steps of a range query less than this many seconds before now are evaluated on every
    /// request and never kept (their samples are still arriving).
    pub query_cache_recent_secs: u64,
    /// Most connections open at once, per listener (HTTP and gRPC each).
    pub max_connections: usize,
    /// Longest wait for a request's headers, in seconds; also the keep-alive idle timeout.
    pub header_read_timeout_secs: u64,
    /// Longest pause while a client sends a request body, in seconds.
    pub body_read_timeout_secs: u64,
    /// Most anomaly detectors one tenant may define.
    pub max_detectors_per_tenant: usize,
    /// Most N-BEATS parameters in one detector's model.
    pub max_detector_parameters: usize,
    /// Most memory one detector model's training may need (estimated from its shape), bytes.
    pub max_detector_training_bytes: u64,
    /// Shortest `retrain_every` of a detector, in seconds.
    pub min_detector_retrain_secs: u64,
    /// Shortest `step` (scoring interval) of a detector, in seconds.
    pub min_detector_step_secs: u64,
    /// Longest training of one detector run, in seconds; it then keeps its best models so far.
    pub max_detector_training_secs: u64,
    /// Most traces held while their LLM spans and retrieved documents arrive.
    pub max_assembling_traces: usize,
    /// Quiet time after a trace's last span before it is evaluated, in seconds.
    pub assembly_settle_secs: u64,
    /// Longest a trace waits for its pieces, in seconds.
    pub assembly_timeout_secs: u64,
    /// How far back a start looks for traces left unevaluated, in seconds.
    pub assembly_recovery_secs: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 16 << 20,
            max_decompressed_bytes: 64 << 20,
            max_items_per_request: 100_000,
            max_decoded_bytes: 256 << 20,
            max_inflight_decoded_bytes: 1 << 30,
            max_attributes_per_item: 1024,
            max_attribute_value_bytes: 256 << 10,
            max_attribute_depth: 16,
            max_content_bytes_per_span: 4 << 20,
            max_future_skew_secs: 3600,
            max_inflight_requests: 1024,
            query_timeout_secs: 120,
            max_concurrent_queries: 20,
            max_concurrent_queries_per_tenant: 10,
            max_query_samples: 50_000_000,
            query_cache_bytes: 64 << 20,
            query_cache_recent_secs: 300,
            max_connections: 4096,
            header_read_timeout_secs: 30,
            body_read_timeout_secs: 60,
            max_detectors_per_tenant: 100,
            max_detector_parameters: 8_000_000,
            max_detector_training_bytes: 1 << 30,
            min_detector_retrain_secs: 600,
            min_detector_step_secs: 10,
            max_detector_training_secs: 600,
            max_assembling_traces: 100_000,
            assembly_settle_secs: 2,
            assembly_timeout_secs: 60,
            assembly_recovery_secs: 3600,
        }
    }
}

impl Limits {
    /// Checks that every limit is usable.
    pub fn validate(&self) -> Result<(), crate::ConfigError> {
        let positive = [
            ("max_body_bytes", self.max_body_bytes),
            ("max_decompressed_bytes", self.max_decompressed_bytes),
            ("max_items_per_request", self.max_items_per_request),
            ("max_decoded_bytes", self.max_decoded_bytes),
            ("max_attributes_per_item", self.max_attributes_per_item),
            ("max_attribute_value_bytes", self.max_attribute_value_bytes),
            ("max_attribute_depth", self.max_attribute_depth),
            ("max_inflight_requests", self.max_inflight_requests),
            ("max_concurrent_queries", self.max_concurrent_queries),
            (
                "max_concurrent_queries_per_tenant",
                self.max_concurrent_queries_per_tenant,
            ),
            ("max_query_samples", self.max_query_samples),
            ("max_connections", self.max_connections),
            ("max_detectors_per_tenant", self.max_detectors_per_tenant),
            ("max_detector_parameters", self.max_detector_parameters),
            ("max_assembling_traces", self.max_assembling_traces),
        ];
        for (name, v) in positive {
            if v == 0 {
                return Err(crate::ConfigError::Invalid(format!(
                    "limits.{name} must be positive"
                )));
            }
        }
        let positive_u64 = [
            ("header_read_timeout_secs", self.header_read_timeout_secs),
            ("body_read_timeout_secs", self.body_read_timeout_secs),
            (
                "max_detector_training_bytes",
                self.max_detector_training_bytes,
            ),
            ("min_detector_step_secs", self.min_detector_step_secs),
            (
                "max_detector_training_secs",
                self.max_detector_training_secs,
            ),
            ("assembly_timeout_secs", self.assembly_timeout_secs),
        ];
        for (name, v) in positive_u64 {
            if v == 0 {
                return Err(crate::ConfigError::Invalid(format!(
                    "limits.{name} must be positive"
                )));
            }
        }
        if self.query_timeout_secs == 0 {
            return Err(crate::ConfigError::Invalid(
                "limits.query_timeout_secs must be positive".into(),
            ));
        }
        if self.max_decompressed_bytes < self.max_body_bytes {
            return Err(crate::ConfigError::Invalid(
                "limits.max_decompressed_bytes must be at least limits.max_body_bytes".into(),
            ));
        }
        if self.max_inflight_decoded_bytes
            < self
                .max_decoded_bytes
                .saturating_add(self.max_decompressed_bytes)
        {
            return Err(crate::ConfigError::Invalid(
                "limits.max_inflight_decoded_bytes must be at least limits.max_decoded_bytes + limits.max_decompressed_bytes (one largest request)".into(),
            ));
        }
        Ok(())
    }
}

/// The detectors' share of the limits (`sightline-detectors` owns the struct; the server fills
/// it from its configuration).
impl From<&Limits> for sightline_detectors::DetectorLimits {
    fn from(l: &Limits) -> Self {
        Self {
            max_per_tenant: l.max_detectors_per_tenant,
            max_parameters: l.max_detector_parameters,
            max_training_bytes: l.max_detector_training_bytes,
            min_retrain_secs: l.min_detector_retrain_secs,
            min_step_secs: l.min_detector_step_secs,
            max_training_secs: l.max_detector_training_secs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_detectors::DetectorLimits;

    #[test]
    fn detector_limits_defaults_are_the_servers() {
        assert_eq!(
            DetectorLimits::from(&Limits::default()),
            DetectorLimits::default()
        );
    }
}
