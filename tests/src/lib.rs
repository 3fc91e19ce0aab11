//! Shared workload of Sightline's end-to-end tests.
//!
//! The crash-writer child process (`src/bin/crash_writer.rs`) and the `e2e` test binary must agree
//! byte for byte on what a batch looks like, so the generator lives here, in the package's
//! library, and both link it.
//!
//! A *batch* is a fixed number of spans appended in one call. Its 64-bit id is written into every
//! row's trace id (`batch id (8 bytes, BE) | row (4 bytes, BE) | 0xc0ffee01`), so a reader can tell
//! from the `trace_id` column alone which batch and which row of it a span is, and therefore
//! detect lost, duplicated and partially visible batches. The rest of a span is a pure function of
//! `(batch id, row)`, so any row read back can be compared with what was written.

use sightline_storage::model::AttrValue;
use sightline_storage::{SpanId, SpanKind, SpanRecord, StatusCode, TenantId, TraceId, UnixNanos};

/// 2026-11-29T14:00:00Z in nanoseconds: the start of every generated workload.
pub const T0_NANOS: i64 = 1_795_960_800_000_000_000;
/// One hour in nanoseconds (the store's default partition length).
pub const HOUR_NANOS: i64 = 3_600_000_000_000;
/// Number of hourly partitions the crash workload spreads its batches over.
pub const CRASH_PARTITIONS: u64 = 3;
/// Rows in every batch of the crash workload.
pub const CRASH_BATCH_ROWS: u32 = 16;
/// Tenant of the crash workload.
pub const CRASH_TENANT: &str = "crash";
/// Tail of every generated trace id, so foreign rows are recognised.
const TRACE_MAGIC: [u8; 4] = [0xc0, 0xff, 0xee, 0x01];
/// Models cycled through by the generator.
pub const MODELS: [&str; 3] = ["gpt-4o", "claude-3-5-sonnet", "llama-3.1-70b"];

/// Batch id of the `seq`-th batch of `writer` in run `run`. Unique across runs as long as a
/// writer appends fewer than 2^24 batches per run (the crash writer stops long before).
pub fn batch_id(run: u32, writer: u8, seq: u32) -> u64 {
    assert!(
        seq < 1 << 24,
        "sequence {seq} overflows the batch id layout"
    );
    (u64::from(run) << 32) | (u64::from(writer) << 24) | u64::from(seq)
}

/// The run a batch id belongs to.
pub fn run_of(batch_id: u64) -> u32 {
    (batch_id >> 32) as u32
}

/// Trace id of row `row` of batch `batch_id`.
pub fn trace_id_of(batch_id: u64, row: u32) -> TraceId {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&batch_id.to_be_bytes());
    b[8..12].copy_from_slice(&row.to_be_bytes());
    b[12..].copy_from_slice(&TRACE_MAGIC);
    TraceId(b)
}

/// Recovers `(batch id, row)` from a trace id written by [`trace_id_of`].
pub fn decode_trace_id(bytes: &[u8]) -> Option<(u64, u32)> {
    if bytes.len() != 16 || bytes[12..] != TRACE_MAGIC {
        return None;
    }
    let mut id = [0u8; 8];
    id.copy_from_slice(&bytes[..8]);
    let mut row = [0u8; 4];
    row.copy_from_slice(&bytes[8..12]);
    Some((u64::from_be_bytes(id), u32::from_be_bytes(row)))
}

/// A well-mixed 64-bit hash (SplitMix64 finaliser), for deterministic pseudo-random fields.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Start time of row `row` of batch `batch_id`: spread over [`CRASH_PARTITIONS`] hours so flushes
/// write several partitions and compaction has several to merge.
pub fn start_of(batch_id: u64, row: u32) -> UnixNanos {
    let h = mix(batch_id);
    let partition = (h % CRASH_PARTITIONS) as i64;
    let within = ((h >> 8) % 3_000_000_000_000) as i64;
    UnixNanos(T0_NANOS + partition * HOUR_NANOS + within + i64::from(row) * 1_000)
}

/// Row `row` of batch `batch_id`: every field is a function of the two.
pub fn span_of(batch_id: u64, row: u32) -> SpanRecord {
    let h = mix(batch_id ^ (u64::from(row) << 40));
    let start = start_of(batch_id, row);
    let duration = 1_000 + (h % 5_000_000_000) as i64;
    let mut s = SpanRecord::new(
        trace_id_of(batch_id, row),
        SpanId((h | 1).to_be_bytes()),
        if row.is_multiple_of(2) {
            "gateway"
        } else {
            "retriever"
        },
        format!("op-{}", row % 4),
        start,
        start.saturating_add(duration),
    );
    let model = MODELS[(h % MODELS.len() as u64) as usize];
    s.kind = SpanKind::Client;
    s.status_code = if h.is_multiple_of(11) {
        StatusCode::Error
    } else {
        StatusCode::Ok
    };
    s.gen_ai.operation_name = Some("chat".into());
    s.gen_ai.request_model = Some(model.into());
    s.gen_ai.response_model = Some(format!("{model}-2026"));
    s.gen_ai.input_tokens = Some((h % 4096) as i64);
    s.gen_ai.output_tokens = Some(((h >> 12) % 1024) as i64);
    s.gen_ai.temperature = Some(f64::from(row % 10) / 10.0);
    s.gen_ai.finish_reasons = vec!["stop".into()];
    s.attributes = vec![
        ("batch.id".into(), AttrValue::Int(batch_id as i64)),
        ("batch.row".into(), AttrValue::Int(i64::from(row))),
        ("user.id".into(), AttrValue::Str(format!("u{}", h % 7))),
    ];
    s.resource_attributes = vec![(
        "deployment.environment".into(),
        AttrValue::Str("e2e".into()),
    )];
    s
}

/// All rows of batch `batch_id`.
pub fn batch_spans(batch_id: u64, rows: u32) -> Vec<SpanRecord> {
    (0..rows).map(|r| span_of(batch_id, r)).collect()
}

/// A tenant id from a literal known to be valid.
pub fn tenant(id: &str) -> TenantId {
    TenantId::new(id).unwrap_or_else(|e| panic!("tenant id {id:?} is invalid: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_ids_round_trip() {
        let id = batch_id(7, 2, 12_345);
        assert_eq!(run_of(id), 7);
        let t = trace_id_of(id, 9);
        assert_eq!(decode_trace_id(&t.0), Some((id, 9)));
        assert_eq!(decode_trace_id(&[0u8; 16]), None);
        assert_eq!(span_of(id, 3), span_of(id, 3));
        assert_ne!(span_of(id, 3), span_of(id, 4));
    }
}
