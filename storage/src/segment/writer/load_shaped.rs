//! Segments shaped like the load generator's: what a write costs, phase by phase (ignored
//! tests, run by hand with `--release`), and which leaves keep statistics and compression.

use super::*;
use crate::model::{AttrValue, SpanRecord};
use crate::types::{SpanId, TraceId, UnixNanos};

/// Spans shaped like `otlp-load`'s (GenAI fields promoted, a few attributes left).
fn load_spans(n: u32) -> Vec<SpanRecord> {
    (0..n)
        .map(|i| {
            let seq = i / 512;
            let mut t = [0u8; 16];
            t[..4].copy_from_slice(&(seq + 1).to_be_bytes());
            t[8..12].copy_from_slice(&((i % 512) / 8 + 1).to_be_bytes());
            let start = UnixNanos(1_700_000_000_000_000_000 + i64::from(i) * 1000);
            let mut s = SpanRecord::new(
                TraceId(t),
                SpanId(u64::from(i + 1).to_be_bytes()),
                format!("llm-svc-{}", seq % 4),
                if i % 8 == 0 {
                    "rag-pipeline"
                } else {
                    "chat gpt-4o"
                },
                start,
                UnixNanos(start.0 + 250_000_000),
            );
            s.gen_ai.operation_name = Some("chat".into());
            s.gen_ai.provider_name = Some("openai".into());
            s.gen_ai.request_model = Some("gpt-4o".into());
            s.gen_ai.response_model = Some("gpt-4o-2024-08-06".into());
            s.gen_ai.input_tokens = Some(800 + i64::from(i % 512));
            s.gen_ai.output_tokens = Some(120);
            s.gen_ai.temperature = Some(0.2);
            s.gen_ai.conversation_id = Some(format!("conv-{}", i % 32));
            s.attributes.push((
                "user.id".into(),
                AttrValue::Str(format!("user-{}", i % 100)),
            ));
            s.resource_attributes = vec![
                (
                    "deployment.environment.name".into(),
                    AttrValue::Str("bench".into()),
                ),
                (
                    "service.instance.id".into(),
                    AttrValue::Str("load-1".into()),
                ),
            ];
            s
        })
        .collect()
}

/// This thread's CPU time (not wall time: the machine may be shared), from schedstat.
fn cpu() -> std::time::Duration {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    std::time::Duration::from_nanos(s.split_whitespace().next().unwrap().parse().unwrap())
}

/// CPU time of a segment write's phases on `batch`: (sort, Parquet, postings) and the sorted
/// rows and encoded postings.
struct Phases {
    sort: std::time::Duration,
    parquet: std::time::Duration,
    postings: std::time::Duration,
    postings_bytes: usize,
    sorted: RecordBatch,
}

fn time_phases(signal: Signal, batch: &RecordBatch, path: &Path) -> Phases {
    let t = cpu();
    let sorted = sort_for_segment(signal, batch).unwrap();
    let sort = cpu() - t;
    let props = uncompress_valueless_leaves(
        writer_properties(signal, batch.num_rows(), &SegmentWriteOptions::default()).unwrap(),
        &sorted,
    )
    .unwrap();
    let t = cpu();
    write_parquet(path, &sorted, props).unwrap();
    let parquet = cpu() - t;
    let t = cpu();
    let (p, _, _) = span_log_postings(signal, &sorted)
        .unwrap()
        .finish_indexed(8192);
    let postings_bytes = p.encode().len();
    let postings = cpu() - t;
    Phases {
        sort,
        parquet,
        postings,
        postings_bytes,
        sorted,
    }
}

#[test]
#[ignore = "timing, run by hand with --release"]
fn flush_phase_timing() {
    let n = 200_000;
    let spans = load_spans(n);
    let dir = tempfile::tempdir().unwrap();
    for round in 0..3 {
        let t = cpu();
        let batch = columnar::spans_to_batch(&spans).unwrap();
        let t_enc = cpu() - t;
        let ph = time_phases(
            Signal::Spans,
            &batch,
            &dir.path().join(format!("d{round}.parquet")),
        );
        let t = cpu();
        let rollup = crate::rollup::build(&ph.sorted).unwrap();
        let t_roll = cpu() - t;
        let us = |d: std::time::Duration| d.as_secs_f64() * 1e6 / f64::from(n);
        eprintln!(
            "CPU per span: encode {:.2} us, sort {:.2} us, parquet {:.2} us, postings {:.2} us ({} bytes), rollup {:.2} us ({} rows)",
            us(t_enc),
            us(ph.sort),
            us(ph.parquet),
            us(ph.postings),
            ph.postings_bytes,
            us(t_roll),
            rollup
                .and_then(|r| r.minute)
                .map_or(0, |m| m.rows.num_rows())
        );
    }
}

#[test]
#[ignore = "timing, run by hand with --release"]
fn log_flush_phase_timing() {
    use crate::model::LogRecord;
    let n = 300_000u32;
    let attrs = |v: &[(&str, &str)]| {
        v.iter()
            .map(|(k, v)| ((*k).to_owned(), AttrValue::Str((*v).to_owned())))
            .collect::<Vec<_>>()
    };
    let logs: Vec<LogRecord> = (0..n)
        .map(|i| LogRecord {
            time: UnixNanos(1_700_000_000_000_000_000 + i64::from(i) * 3000),
            observed_time: UnixNanos(0),
            severity_number: 9,
            severity_text: "INFO".into(),
            body: AttrValue::Str(format!(
                "request {}-{} answered by gpt-4o in 250 ms with 120 tokens",
                i / 512,
                i % 512
            )),
            trace_id: None,
            span_id: None,
            flags: 0,
            service_name: format!("llm-svc-{}", i / 512 % 4),
            scope_name: String::new(),
            event_name: String::new(),
            resource_attributes: attrs(&[
                ("service.instance.id", "load-1"),
                ("deployment.environment.name", "bench"),
            ]),
            attributes: attrs(&[("route", "/ask")]),
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    for round in 0..2 {
        let batch = columnar::logs_to_batch(&logs).unwrap();
        let meta = SegmentMeta::to_write(
            crate::types::SegmentId(100 + round),
            crate::TenantId::default_tenant(),
            Signal::Logs,
            (UnixNanos(0), 3_600_000_000_000),
            0,
        );
        let wall = std::time::Instant::now();
        write_segment(
            dir.path(),
            meta,
            batch,
            &HashMap::new(),
            &SegmentWriteOptions::default(),
        )
        .unwrap();
        eprintln!(
            "write_segment: {:.2} us per line, wall",
            wall.elapsed().as_secs_f64() * 1e6 / f64::from(n)
        );
        let t = cpu();
        let batch = columnar::logs_to_batch(&logs).unwrap();
        let t_enc = cpu() - t;
        let mem = columnar::batch_bytes(&batch);
        let ph = time_phases(
            Signal::Logs,
            &batch,
            &dir.path().join(format!("d{round}.parquet")),
        );
        let wall = std::time::Instant::now();
        let t = cpu();
        let bodies = columnar::decode_column::<StringArray>(&ph.sorted, col::BODY).unwrap();
        text_index::build(
            &dir.path().join(format!("text{round}.idx")),
            (0..bodies.len()).map(|i| bodies.value(i)),
        )
        .unwrap();
        let t_text = cpu() - t;
        let us = |d: std::time::Duration| d.as_secs_f64() * 1e6 / f64::from(n);
        eprintln!(
            "per line: {} B in memory; CPU encode {:.2} us, sort {:.2} us, parquet {:.2} us, postings {:.2} us ({} bytes), text index {:.2} us ({} bytes), {:.2} us wall",
            mem / n as usize,
            us(t_enc),
            us(ph.sort),
            us(ph.parquet),
            us(ph.postings),
            ph.postings_bytes,
            us(t_text),
            fs::metadata(dir.path().join(format!("text{round}.idx")))
                .unwrap()
                .len(),
            us(wall.elapsed()),
        );
    }
}

/// Statistics stay on ids, times and numbers (the pruner reads trace_id and time ranges,
/// a trace lookup the trace_id page index) and are off on strings and nested leaves.
#[test]
fn statistics_only_where_readers_prune() {
    let n = 2_000;
    let batch = columnar::spans_to_batch(&load_spans(n)).unwrap();
    let sorted = sort_for_segment(Signal::Spans, &batch).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("d.parquet");
    let props =
        writer_properties(Signal::Spans, n as usize, &SegmentWriteOptions::default()).unwrap();
    write_parquet(&file, &sorted, props).unwrap();
    let reader =
        parquet::file::serialized_reader::SerializedFileReader::new(fs::File::open(&file).unwrap())
            .unwrap();
    use parquet::file::reader::FileReader as _;
    let rg = reader.metadata().row_group(0);
    let has_stats = |name: &str| {
        let c = (0..rg.num_columns())
            .map(|i| rg.column(i))
            .find(|c| c.column_path().string() == name)
            .unwrap_or_else(|| panic!("no column {name}"));
        c.statistics().is_some_and(|s| s.min_bytes_opt().is_some())
    };
    for kept in [
        col::TRACE_ID,
        col::START_TIME,
        col::DURATION,
        col::GEN_AI_INPUT_TOKENS,
    ] {
        assert!(has_stats(kept), "{kept} lost its statistics");
    }
    for dropped in [
        col::SERVICE_NAME,
        col::GEN_AI_REQUEST_MODEL,
        "attributes.entries.key",
        "attributes.entries.value.str",
        "resource_attributes.entries.value.str",
    ] {
        assert!(!has_stats(dropped), "{dropped} still has statistics");
    }
}

/// Leaves without a value in the segment are written uncompressed; every other leaf keeps
/// zstd, and the rows read back the same.
#[test]
fn valueless_leaves_are_uncompressed() {
    use parquet::basic::Compression;
    use parquet::file::reader::FileReader as _;
    let n = 3_000;
    let batch = columnar::spans_to_batch(&load_spans(n)).unwrap();
    let sorted = sort_for_segment(Signal::Spans, &batch).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("d.parquet");
    let props = uncompress_valueless_leaves(
        writer_properties(Signal::Spans, n as usize, &SegmentWriteOptions::default()).unwrap(),
        &sorted,
    )
    .unwrap();
    write_parquet(&file, &sorted, props).unwrap();
    let reader =
        parquet::file::serialized_reader::SerializedFileReader::new(fs::File::open(&file).unwrap())
            .unwrap();
    let rg = reader.metadata().row_group(0);
    let codec = |name: &str| {
        (0..rg.num_columns())
            .map(|i| rg.column(i))
            .find(|c| c.column_path().string() == name)
            .unwrap_or_else(|| panic!("no column {name}"))
            .compression()
    };
    // No span has events, links or a cost.
    for empty in [
        "events.list.item.time_unix_nano",
        "events.list.item.attributes.entries.value.str",
        "links.list.item.trace_id",
        col::GEN_AI_COST,
    ] {
        assert_eq!(codec(empty), Compression::UNCOMPRESSED, "{empty}");
    }
    // Null in every entry of attribute maps that have entries: varying levels, kept.
    for full in [
        col::TRACE_ID,
        col::START_TIME,
        "attributes.entries.key",
        "attributes.entries.value.str",
        "attributes.entries.value.double",
        col::GEN_AI_TEMPERATURE,
    ] {
        assert!(matches!(codec(full), Compression::ZSTD(_)), "{full}");
    }
    let back: Vec<RecordBatch> = parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(
        fs::File::open(&file).unwrap(),
        8192,
    )
    .unwrap()
    .collect::<std::result::Result<_, _>>()
    .unwrap();
    let back = arrow_select::concat::concat_batches(&sorted.schema(), &back).unwrap();
    assert_eq!(back, sorted);
}
