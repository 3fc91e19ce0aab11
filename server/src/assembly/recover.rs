//! At start: the traces of the last `assembly_recovery_secs` that hold an answer and context
//! (retrieved documents, a tool result) but no evaluation (the process stopped before
//! evaluating them). Answers and tool results in GenAI log records count too.

use std::collections::HashMap;
use std::time::Duration;

use sightline_storage::columnar::{logs_from_batch, spans_from_batch};
use sightline_storage::{
    Deadline, MatchOp, Matcher, Predicate, ScanRequest, Signal, StorageError, Store, TenantId,
    TimeRange, TraceId, UnixNanos,
};

use super::evaluate::EVALUATION_SPAN;
use super::{log_role, role};

/// Log records that may be GenAI events: the `event_name` field, or the `event.name`
/// attribute of older SDKs, starting with `gen_ai.`.
fn genai_events() -> Result<Predicate, StorageError> {
    let re = r"gen_ai\..+";
    Ok(Predicate::AnyOf(vec![
        Matcher::new("event_name", MatchOp::Regex, re)?,
        Matcher::new("event.name", MatchOp::Regex, re)?,
    ]))
}

/// Longest the recovery scan may take.
const SCAN_TIMEOUT: Duration = Duration::from_secs(120);

/// The traces to evaluate, per tenant (see the module docs).
pub fn recover(store: &Store, window: Duration) -> Result<Vec<(TenantId, TraceId)>, StorageError> {
    let now = store.now().0;
    let back = i64::try_from(window.as_nanos()).unwrap_or(i64::MAX);
    // Spans may start a little in the future of this clock (ingest allows skew).
    let time = TimeRange::new(
        UnixNanos(now.saturating_sub(back)),
        UnixNanos(now.saturating_add(3_600_000_000_000)),
    )?;
    let deadline = Deadline::after(SCAN_TIMEOUT);
    let mut out = Vec::new();
    for tenant in store.tenants() {
        let req = ScanRequest::new(tenant.clone(), Signal::Spans, time).until(deadline.clone());
        let res = store.scan(&req)?;
        // trace -> (answer, documents, evaluated)
        let mut seen: HashMap<TraceId, (bool, bool, bool)> = HashMap::new();
        for b in &res.batches {
            deadline.check()?;
            for s in spans_from_batch(b)? {
                let (llm, docs) = role(&s);
                let e = seen.entry(s.trace_id).or_default();
                e.0 |= llm;
                e.1 |= docs;
                e.2 |= s.name == EVALUATION_SPAN;
            }
        }
        let req = ScanRequest::new(tenant.clone(), Signal::Logs, time)
            .with(genai_events()?)
            .until(deadline.clone());
        for b in &store.scan(&req)?.batches {
            deadline.check()?;
            for l in logs_from_batch(b)? {
                let (Some(trace), (llm, context)) = (l.trace_id, log_role(&l)) else {
                    continue;
                };
                let e = seen.entry(trace).or_default();
                e.0 |= llm;
                e.1 |= context;
            }
        }
        out.extend(
            seen.into_iter()
                .filter(|(_, (llm, docs, done))| *llm && *docs && !*done)
                .map(|(t, _)| (tenant.clone(), t)),
        );
    }
    Ok(out)
}
