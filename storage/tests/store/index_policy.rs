//! The index policy on a realistic span mix: a high-cardinality `user.id` (each user in a few
//! traces) moves from postings to block blooms, which keep the postings file small and
//! still skip the row groups and pages without the user; a low-cardinality key keeps exact postings;
//! token counts get none. Answers equal a brute-force filter, flushed or not.

use sightline_storage::columnar::spans_from_batch;
use sightline_storage::postings::Postings;
use sightline_storage::{
    AttrValue, Matcher, Predicate, ScanRequest, Signal, SpanId, SpanRecord, Store, TimeRange,
    UnixNanos,
};

use super::{T0, config, tenant, trace_id};

const USERS: u64 = 4_000;
const SPANS: u64 = 40_000;

/// Ten spans per trace, each trace one user's; users in order of their traces, so a user's
/// spans sit in one or two row groups.
fn span(n: u64) -> SpanRecord {
    let trace = n / 10;
    let user = trace % USERS;
    let mut s = SpanRecord::new(
        trace_id(trace),
        SpanId((n + 1).to_be_bytes()),
        "chat",
        format!("op-{}", n % 5),
        UnixNanos(T0 + n as i64 * 1_000),
        UnixNanos(T0 + n as i64 * 1_000 + 500),
    );
    s.gen_ai.input_tokens = Some((n % 997) as i64);
    s.attributes = vec![
        ("user.id".into(), AttrValue::Str(format!("user-{user:05}"))),
        (
            "tier".into(),
            AttrValue::Str(["free", "pro"][(user % 2) as usize].into()),
        ),
    ];
    s
}

fn ids(store: &Store, key: &str, value: &str) -> (Vec<SpanId>, usize, usize, u64) {
    let req = ScanRequest::new(tenant("acme"), Signal::Spans, TimeRange::ALL)
        .with(Predicate::Attr(Matcher::eq(key, value)));
    let res = store.scan(&req).expect("scan");
    let mut out: Vec<SpanId> = res
        .batches
        .iter()
        .flat_map(|b| spans_from_batch(b).expect("decode"))
        .map(|s| s.span_id)
        .collect();
    out.sort();
    (
        out,
        res.stats.row_groups_read,
        res.stats.row_groups_total,
        res.stats.rows_decoded,
    )
}

#[test]
fn high_cardinality_keys_move_to_block_blooms() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cfg = config();
    cfg.segment.row_group_rows = 8192;
    let store = Store::open(dir.path(), cfg).expect("open");
    let t = tenant("acme");
    let spans: Vec<SpanRecord> = (0..SPANS).map(span).collect();
    store.append_spans(&t, &spans).expect("append");
    let brute = |key: &str, value: &str| {
        let mut v: Vec<SpanId> = spans
            .iter()
            .filter(|s| {
                s.attributes
                    .iter()
                    .any(|(k, x)| k == key && *x == AttrValue::Str(value.into()))
            })
            .map(|s| s.span_id)
            .collect();
        v.sort();
        v
    };
    let probes = [
        ("user.id", "user-00000"),
        ("user.id", "user-01234"),
        ("user.id", "user-03999"),
        ("user.id", "nobody"),
        ("tier", "pro"),
    ];
    let unflushed: Vec<Vec<SpanId>> = probes.iter().map(|(k, v)| ids(&store, k, v).0).collect();
    store.flush().expect("flush");

    // The segment: user.id in the blooms, tier in the postings, tokens in neither.
    let seg_dir = walk(dir.path(), "postings.bin").expect("a segment");
    let postings = Postings::decode(
        &std::fs::read(seg_dir.join("postings.bin")).expect("read"),
        &seg_dir,
    )
    .expect("decode");
    assert!(postings.in_blooms("user.id"));
    assert!(!postings.in_blooms("tier"));
    assert_eq!(postings.values("tier").count(), 2);
    assert_eq!(postings.values("gen_ai.usage.input_tokens").count(), 0);
    assert!(seg_dir.join("attr_blooms.bin").exists());
    let size = |f: &str| std::fs::metadata(seg_dir.join(f)).expect("stat").len();
    let (post, blooms, data) = (
        size("postings.bin"),
        size("attr_blooms.bin"),
        size("data.parquet"),
    );
    eprintln!("postings {post} B, attribute blooms {blooms} B, data {data} B for {SPANS} spans");
    // The indexes held in memory are counted: about the postings and blooms on disk plus the
    // trace-id blooms.
    let held = store.stats().segment_index_bytes as u64;
    assert!(
        held >= blooms && held < 4 * (post + blooms) + 64 * 1024,
        "{held} B held"
    );
    assert!(
        (post + blooms) * 5 < data,
        "indexes {post} + {blooms} B against {data} B of data"
    );

    for ((key, value), before) in probes.iter().zip(&unflushed) {
        let want = brute(key, value);
        let (got, read, total, decoded) = ids(&store, key, value);
        assert_eq!(&got, &want, "{key}={value} from the segment");
        assert_eq!(before, &want, "{key}={value} from the memtable");
        if *key == "user.id" {
            // A user's spans sit in one or two of the 5 row groups; false positives of a 1 %
            // bloom may add one more.
            assert!(
                read <= 3,
                "{key}={value}: {read} of {total} row groups read"
            );
            // Blooms cover blocks of one data page (1,024 rows): only those blocks of the
            // row groups are decoded, not the groups' 8,192 rows each.
            assert!(decoded <= 3 * 1024, "{key}={value}: {decoded} rows decoded");
        }
    }
}

/// The directory under `root` holding a file named `name`.
fn walk(root: &std::path::Path, name: &str) -> Option<std::path::PathBuf> {
    for e in std::fs::read_dir(root).ok()? {
        let p = e.ok()?.path();
        if p.is_dir() {
            if p.join(name).exists() {
                return Some(p);
            }
            if let Some(found) = walk(&p, name) {
                return Some(found);
            }
        }
    }
    None
}
