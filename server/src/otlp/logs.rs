//! OTLP log records to [`LogRecord`]s.
//!
//! Timestamps: `observed_time_unix_nano` of zero becomes the server's receive time;
//! `time_unix_nano` of zero becomes the observed time. Either more than `max_future_skew_secs`
//! ahead rejects the record. Trace correlation: empty or all-zero ids mean "not correlated";
//! ids of the wrong length reject the record. The body keeps its type (string, or a
//! structured value stored as JSON text); its string/bytes values count against
//! `max_attribute_value_bytes`.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::logs::v1::LogRecord as OtlpLog;
use sightline_storage::{LogRecord, SpanId, TraceId};

use super::attributes::{
    ResourceInfo, check_scope_attributes, convert_attributes, convert_resource, convert_value,
};
use super::{ItemError, MapContext, Mapped, RejectReason};

/// Number of log records in a request.
pub fn count_logs(req: &ExportLogsServiceRequest) -> usize {
    req.resource_logs
        .iter()
        .flat_map(|r| &r.scope_logs)
        .map(|s| s.log_records.len())
        .sum()
}

fn optional_id<T>(
    bytes: &[u8],
    len: usize,
    what: &str,
    parse: impl Fn(&[u8]) -> sightline_storage::Result<T>,
) -> Result<Option<T>, ItemError> {
    if bytes.is_empty() || (bytes.len() == len && bytes.iter().all(|b| *b == 0)) {
        return Ok(None);
    }
    parse(bytes)
        .map(Some)
        .map_err(|e| ItemError::new(RejectReason::InvalidId, format!("{what}: {e}")))
}

fn map_log(
    r: &OtlpLog,
    resource: &ResourceInfo,
    scope_name: &str,
    ctx: &MapContext,
) -> Result<LogRecord, ItemError> {
    let observed_time = if r.observed_time_unix_nano == 0 {
        ctx.now
    } else {
        ctx.timestamp("observed_time_unix_nano", r.observed_time_unix_nano)?
    };
    let time = if r.time_unix_nano == 0 {
        observed_time
    } else {
        ctx.timestamp("time_unix_nano", r.time_unix_nano)?
    };
    let trace_id = optional_id(&r.trace_id, TraceId::LEN, "trace id", TraceId::from_slice)?;
    let span_id = optional_id(&r.span_id, SpanId::LEN, "span id", SpanId::from_slice)?;
    let body = convert_value(r.body.as_ref(), "body", &ctx.limits, 0)?;
    Ok(LogRecord {
        time,
        observed_time,
        severity_number: r.severity_number,
        severity_text: r.severity_text.clone(),
        body,
        trace_id,
        span_id,
        flags: r.flags,
        service_name: resource.service_name.clone(),
        scope_name: scope_name.to_owned(),
        event_name: r.event_name.clone(),
        resource_attributes: resource.attributes.clone(),
        attributes: convert_attributes(&r.attributes, &ctx.limits)?,
    })
}

/// Maps a request's log records; rejected records are counted, not returned.
pub fn map_logs(req: &ExportLogsServiceRequest, ctx: &MapContext) -> Mapped<Vec<LogRecord>> {
    let mut out = Mapped::<Vec<LogRecord>> {
        rows: Vec::with_capacity(count_logs(req)),
        ..Mapped::default()
    };
    for rl in &req.resource_logs {
        let resource = match convert_resource(rl.resource.as_ref(), &ctx.limits) {
            Ok(r) => r,
            Err(e) => {
                for _ in rl.scope_logs.iter().flat_map(|s| &s.log_records) {
                    out.reject(ItemError::new(e.reason, format!("resource: {}", e.message)));
                }
                continue;
            }
        };
        for sl in &rl.scope_logs {
            let scope = sl.scope.as_ref();
            if let Some(Err(e)) =
                scope.map(|sc| check_scope_attributes(&sc.attributes, &ctx.limits))
            {
                for _ in &sl.log_records {
                    out.reject(ItemError::new(e.reason, format!("scope: {}", e.message)));
                }
                continue;
            }
            let scope_name = scope.map_or("", |s| s.name.as_str());
            for r in &sl.log_records {
                match map_log(r, &resource, scope_name, ctx) {
                    Ok(rec) => {
                        out.accepted += 1;
                        out.rows.push(rec);
                    }
                    Err(e) => out.reject(e),
                }
            }
        }
    }
    out
}
