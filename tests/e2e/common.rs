//! Helpers shared by the test modules: decoding scan results into batch censuses and spans.

use std::collections::BTreeMap;

use sightline_e2e::decode_trace_id;
use sightline_storage::columnar::spans_from_batch;
use sightline_storage::schema::col;
use sightline_storage::{ScanRequest, ScanResult, Signal, SpanRecord, Store, TenantId, TimeRange};

/// The trace ids of every row of a span scan result, in result order. The scan must have read
/// the `trace_id` column.
///
/// Reads the fixed-size binary column through `ArrayData` (values buffer, 16 bytes a row), which
/// keeps this crate free of a direct Arrow dependency.
pub fn trace_ids(res: &ScanResult) -> Vec<[u8; 16]> {
    let mut out = Vec::with_capacity(res.num_rows());
    for b in &res.batches {
        let column = b
            .column_by_name(col::TRACE_ID)
            .expect("scan result carries trace_id");
        let data = column.to_data();
        assert_eq!(data.null_count(), 0, "trace_id is never null");
        let values = data.buffers()[0].as_slice();
        for i in data.offset()..data.offset() + data.len() {
            let mut id = [0u8; 16];
            id.copy_from_slice(&values[i * 16..(i + 1) * 16]);
            out.push(id);
        }
    }
    out
}

/// Every span of a scan result, decoded (the scan must not project).
pub fn decode_spans(res: &ScanResult) -> Vec<SpanRecord> {
    res.batches
        .iter()
        .flat_map(|b| spans_from_batch(b).expect("decode spans"))
        .collect()
}

/// Every span of `tenant`, sorted by trace id.
pub fn all_spans(store: &Store, tenant: &TenantId) -> Vec<SpanRecord> {
    let res = store
        .scan(&ScanRequest::new(
            tenant.clone(),
            Signal::Spans,
            TimeRange::ALL,
        ))
        .expect("scan all spans");
    let mut spans = decode_spans(&res);
    spans.sort_by_key(|s| s.trace_id);
    spans
}

/// How many times each row of each batch was seen: batch id -> count per row index.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Census {
    /// Row counts per batch id.
    pub batches: BTreeMap<u64, Vec<u32>>,
    /// Rows whose trace id was not written by the workload generator.
    pub foreign_rows: usize,
    /// Rows seen in total.
    pub rows: usize,
}

impl Census {
    /// Counts the rows of a scan result by batch.
    pub fn of(res: &ScanResult, batch_rows: u32) -> Self {
        let mut c = Census::default();
        for id in trace_ids(res) {
            c.rows += 1;
            match decode_trace_id(&id) {
                Some((batch, row)) if row < batch_rows => {
                    c.batches
                        .entry(batch)
                        .or_insert_with(|| vec![0; batch_rows as usize])[row as usize] += 1;
                }
                _ => c.foreign_rows += 1,
            }
        }
        c
    }

    /// Scans every span of `tenant` (reading only `trace_id`) and counts it.
    pub fn scan(store: &Store, tenant: &TenantId, batch_rows: u32) -> Self {
        let req = ScanRequest::new(tenant.clone(), Signal::Spans, TimeRange::ALL)
            .project(&[col::TRACE_ID]);
        Self::of(&store.scan(&req).expect("scan spans"), batch_rows)
    }

    /// Batches not seen exactly once per row (partial, duplicated, or both), with their counts.
    pub fn broken(&self) -> Vec<(u64, Vec<u32>)> {
        self.batches
            .iter()
            .filter(|(_, rows)| rows.iter().any(|&n| n != 1))
            .map(|(id, rows)| (*id, rows.clone()))
            .collect()
    }

    /// Whether batch `id` was seen (any of its rows).
    pub fn contains(&self, id: u64) -> bool {
        self.batches.contains_key(&id)
    }
}
