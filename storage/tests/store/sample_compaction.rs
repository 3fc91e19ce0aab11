//! Sample segments merged a range of series at a time answer exactly what the segments they
//! replace answered, over the whole day and over any part of it (a sample page holds one
//! series, and scans skip the pages outside their time range).

use std::collections::BTreeMap;

use proptest::prelude::*;
use sightline_storage::{
    CompactionConfig, MetricBatch, MetricKind, Sample, ScanRequest, SegmentWriteOptions, SeriesDef,
    Signal, Store, StoreConfig, TenantId, TimeRange, UnixNanos,
};

const T0_MS: i64 = 1_795_960_800_000; // 2026-11-29T14:00Z

fn series() -> Vec<SeriesDef> {
    (0..9)
        .map(|i| SeriesDef::new("up", MetricKind::Gauge, vec![("i".into(), i.to_string())]))
        .collect()
}

/// Every sample of `store` in `[lo, hi)` (ms), by (series, time).
fn scan(store: &Store, t: &TenantId, lo: i64, hi: i64) -> BTreeMap<(u64, i64), f64> {
    let range =
        TimeRange::new(UnixNanos::from_millis(lo), UnixNanos::from_millis(hi)).expect("range");
    let req = ScanRequest::new(t.clone(), Signal::Samples, range);
    let res = store.scan_samples(&req, usize::MAX).expect("scan");
    let mut out = BTreeMap::new();
    for s in res.series {
        for (ts, v) in s.timestamps.iter().zip(&s.values) {
            out.insert((s.series.0, *ts), *v);
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn merged_sample_segments_answer_what_their_inputs_did(
        flushes in proptest::collection::vec(
            proptest::collection::vec((0usize..9, 0i64..120, -1e6f64..1e6), 1..60),
            2..7,
        ),
        slice in 1u64..40,
        page_rows in 1usize..9,
        cut in (0i64..120, 0i64..120),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = StoreConfig {
            background: false,
            compaction: CompactionConfig {
                enabled: true,
                min_segments: 2,
                sample_merge_slice_rows: slice,
                ..CompactionConfig::default()
            },
            segment: SegmentWriteOptions {
                sample_page_rows: page_rows,
                ..SegmentWriteOptions::default()
            },
            ..StoreConfig::default()
        };
        let store = Store::open(dir.path(), cfg).expect("open");
        let t = TenantId::default_tenant();
        let defs = series();
        // What the store must answer: of samples sharing a series and a time, the last sent.
        let mut model: BTreeMap<(u64, i64), f64> = BTreeMap::new();
        for flush in &flushes {
            let samples: Vec<Sample> = flush
                .iter()
                .map(|&(s, k, v)| Sample {
                    series: defs[s].id,
                    timestamp_ms: T0_MS + k * 10_000,
                    value: v,
                })
                .collect();
            for s in &samples {
                model.insert((s.series.0, s.timestamp_ms), s.value);
            }
            store
                .append_metrics(&t, &MetricBatch { series: defs.clone(), samples })
                .expect("append");
            store.flush().expect("flush");
        }
        let before = store.segments().len();
        while store.compact().expect("compact") > 0 {}
        let segs = store.segments();
        prop_assert!(segs.len() < before || before < 2, "{before} -> {}", segs.len());
        prop_assert_eq!(segs.len(), 1);
        prop_assert_eq!(segs[0].rows as usize, model.len());

        prop_assert_eq!(&scan(&store, &t, T0_MS, T0_MS + 1_200_000), &model);
        let (a, b) = (cut.0.min(cut.1), cut.0.max(cut.1) + 1);
        let (lo, hi) = (T0_MS + a * 10_000, T0_MS + b * 10_000);
        let part: BTreeMap<(u64, i64), f64> = model
            .iter()
            .filter(|((_, ts), _)| (lo..hi).contains(ts))
            .map(|(k, v)| (*k, *v))
            .collect();
        prop_assert_eq!(scan(&store, &t, lo, hi), part);
    }
}
