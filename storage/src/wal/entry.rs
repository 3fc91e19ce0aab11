//! The logical content of a WAL record: one appended batch of one tenant and signal.
//!
//! ```text
//! u8 signal | u8 tenant length | tenant | u32 LE series length | series (Arrow IPC stream,
//! samples only, may be empty) | rows (Arrow IPC stream)
//! ```
//! Arrow IPC keeps the record self-describing, so replay can check the schema, and encoding is
//! mostly a copy of the batch's buffers.

use std::io::Cursor;

use arrow_array::RecordBatch;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;

use crate::error::{Result, StorageError};
use crate::schema;
use crate::types::{Signal, TenantId};

/// A decoded WAL record.
#[derive(Debug)]
pub struct WalEntry {
    /// Owning tenant.
    pub tenant: TenantId,
    /// Signal of the rows.
    pub signal: Signal,
    /// The rows.
    pub batch: RecordBatch,
    /// New series defined by this record (samples only).
    pub series: Option<RecordBatch>,
}

/// Arrow IPC stream bytes of a batch.
pub fn ipc_bytes(batch: &RecordBatch) -> Result<Vec<u8>> {
    let mut w = StreamWriter::try_new(Vec::new(), &batch.schema())?;
    w.write(batch)?;
    w.finish()?;
    Ok(w.into_inner()?)
}

/// The header of a record, up to the rows.
pub fn encode_header(tenant: &TenantId, signal: Signal, series_ipc: &[u8], out: &mut Vec<u8>) {
    out.push(signal.code());
    let t = tenant.as_str().as_bytes();
    out.push(t.len() as u8);
    out.extend_from_slice(t);
    out.extend_from_slice(&(series_ipc.len() as u32).to_le_bytes());
    out.extend_from_slice(series_ipc);
}

fn read_one(bytes: &[u8], expect: &arrow_schema::Schema) -> Result<RecordBatch> {
    let bad = |d: String| StorageError::corruption("<wal record>", d);
    let mut reader =
        StreamReader::try_new(Cursor::new(bytes), None).map_err(|e| bad(e.to_string()))?;
    if reader.schema().fields() != expect.fields() {
        return Err(bad("record schema differs from this build's schema".into()));
    }
    let batch = reader
        .next()
        .ok_or_else(|| bad("record holds no batch".into()))?
        .map_err(|e| bad(e.to_string()))?;
    Ok(batch)
}

/// Decodes a record payload.
pub fn decode(payload: &[u8]) -> Result<WalEntry> {
    let bad = |d: &str| StorageError::corruption("<wal record>", d.to_owned());
    let signal = match payload.first() {
        Some(1) => Signal::Spans,
        Some(2) => Signal::Logs,
        Some(3) => Signal::Samples,
        _ => return Err(bad("unknown signal")),
    };
    let tlen = *payload.get(1).ok_or_else(|| bad("truncated"))? as usize;
    let tenant = payload
        .get(2..2 + tlen)
        .ok_or_else(|| bad("truncated tenant"))?;
    let tenant = std::str::from_utf8(tenant).map_err(|_| bad("tenant not UTF-8"))?;
    let tenant = TenantId::new(tenant).map_err(|_| bad("invalid tenant"))?;
    let pos = 2 + tlen;
    let slen = payload
        .get(pos..pos + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or_else(|| bad("truncated"))?;
    let series_bytes = payload
        .get(pos + 4..pos + 4 + slen)
        .ok_or_else(|| bad("truncated series"))?;
    let rows = payload
        .get(pos + 4 + slen..)
        .ok_or_else(|| bad("truncated rows"))?;
    let series = if slen > 0 {
        Some(read_one(series_bytes, &schema::SERIES)?)
    } else {
        None
    };
    let batch = read_one(rows, &schema::of(signal))?;
    Ok(WalEntry {
        tenant,
        signal,
        batch,
        series,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columnar;
    use crate::model::Sample;
    use crate::types::SeriesId;

    #[test]
    fn round_trip_and_garbage() {
        let batch = columnar::samples_to_batch(&[Sample {
            series: SeriesId(9),
            timestamp_ms: 5,
            value: 1.5,
        }])
        .expect("batch");
        let tenant = TenantId::new("t1").expect("tenant");
        let mut payload = Vec::new();
        encode_header(&tenant, Signal::Samples, &[], &mut payload);
        payload.extend(ipc_bytes(&batch).expect("ipc"));
        let e = decode(&payload).expect("decode");
        assert_eq!(e.tenant, tenant);
        assert_eq!(e.batch, batch);
        assert!(e.series.is_none());
        // Truncated payloads never panic; the few cuts that only lose the stream's end marker
        // still decode to the full batch (the WAL frame checksum catches real truncation).
        for cut in 0..payload.len() {
            if let Ok(e) = decode(&payload[..cut]) {
                assert_eq!(e.batch, batch, "cut at {cut} decoded to different rows");
            }
        }
    }
}
