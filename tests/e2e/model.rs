//! Model-based property test: random sequences of store operations against a brute-force model.
//!
//! The model is a `Vec` of every span appended, each with its tenant and marked flushed or not.
//! Operations: append a batch for one of two tenants (within one hour or across two), flush,
//! compact, scan one tenant with random predicates and time range, reopen (drop, or close then
//! drop, then open), and retention after moving a [`ManualClock`] forward (the tenants have
//! different TTLs). After every operation the live segments must hold exactly the model's
//! flushed rows, and every scan must return exactly the rows the model selects by brute force
//! (full records when not projected, trace ids when projected).
//!
//! Retention model: a row is dropped once it is flushed and its hourly partition ended at least a
//! TTL before the clock; unflushed rows stay until a flush writes them and a later retention pass
//! drops them. Cases: `PROPTEST_CASES` (default 16; this test is about sequences, not volume).

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use sightline_e2e::{HOUR_NANOS, MODELS, T0_NANOS, batch_id, mix, span_of, tenant};
use sightline_storage::schema::col;
use sightline_storage::{
    Clock, CompactionConfig, ManualClock, MatchOp, Matcher, Predicate, ScanRequest, Signal,
    SpanRecord, Store, StoreConfig, TenantId, TimeRange, TraceId, UnixNanos,
};

use crate::common::{decode_spans, trace_ids};

/// Hours of data the generator spreads rows over.
const HOURS: u8 = 6;
/// The tenants, and each one's retention TTL in hours (the first uses the default TTL, the
/// second a per-tenant override).
const TENANTS: [(&str, i64); 2] = [("model-a", 3), ("model-b", 5)];
const MINUTE_NANOS: i64 = 60_000_000_000;

/// A predicate the generator can pick; each maps to a [`Matcher`] or a trace id.
#[derive(Clone, Debug)]
enum Filter {
    /// `user.id = u<k>` (span attribute, indexed).
    UserEq(u8),
    /// `gen_ai.request.model = <model>` (promoted column).
    ModelEq(usize),
    /// `gen_ai.request.model = <a>` or `gen_ai.response.model = <b>-2026` (alternatives).
    ModelAny(usize, usize),
    /// `service.name != gateway` (negative: no postings).
    ServiceNe,
    /// `name =~ op-[01]` (regex over postings values).
    NameRegex,
    /// `name !~ op-[01]`.
    NameNotRegex,
    /// `status = error`.
    StatusError,
    /// `batch.row = <k>` (integer attribute, rendered in decimal).
    RowEq(u8),
    /// `deployment.environment = e2e` (resource attribute).
    EnvEq,
    /// `no.such.key != x`: matches every row (a missing key reads as "").
    MissingNe,
    /// `no.such.key = ""`: matches every row.
    MissingEq,
    /// `user.id =~ u[0-2]|nobody`.
    UserRegex,
    /// The trace of the `k`-th model row (modulo), or an unknown trace when the model is empty.
    TraceOf(usize),
}

impl Filter {
    fn predicate(&self, rows: &[Row]) -> Predicate {
        let m = |k: &str, op, v: &str| Predicate::Attr(Matcher::new(k, op, v).expect("matcher"));
        match self {
            Filter::UserEq(k) => m("user.id", MatchOp::Eq, &format!("u{k}")),
            Filter::ModelEq(k) => m("gen_ai.request.model", MatchOp::Eq, MODELS[*k]),
            Filter::ModelAny(a, b) => Predicate::AnyOf(vec![
                Matcher::eq("gen_ai.request.model", MODELS[*a]),
                Matcher::eq("gen_ai.response.model", format!("{}-2026", MODELS[*b])),
            ]),
            Filter::ServiceNe => m("service.name", MatchOp::NotEq, "gateway"),
            Filter::NameRegex => m("name", MatchOp::Regex, "op-[01]"),
            Filter::NameNotRegex => m("name", MatchOp::NotRegex, "op-[01]"),
            Filter::StatusError => m("status", MatchOp::Eq, "error"),
            Filter::RowEq(k) => m("batch.row", MatchOp::Eq, &k.to_string()),
            Filter::EnvEq => m("deployment.environment", MatchOp::Eq, "e2e"),
            Filter::MissingNe => m("no.such.key", MatchOp::NotEq, "x"),
            Filter::MissingEq => m("no.such.key", MatchOp::Eq, ""),
            Filter::UserRegex => m("user.id", MatchOp::Regex, "u[0-2]|nobody"),
            Filter::TraceOf(k) => Predicate::TraceId(if rows.is_empty() {
                TraceId([0xee; 16])
            } else {
                rows[k % rows.len()].span.trace_id
            }),
        }
    }
}

#[derive(Clone, Debug)]
struct Query {
    filters: Vec<Filter>,
    /// `[start, end)` in minutes after T0, if the scan is time-bounded.
    minutes: Option<(u16, u16)>,
    /// Read only `trace_id` instead of every column.
    project: bool,
}

#[derive(Clone, Debug)]
enum Op {
    /// Appends `rows` spans of tenant `tenant` starting in hour `hour` (and the next one too
    /// when `spread`).
    Append {
        tenant: usize,
        rows: u8,
        hour: u8,
        spread: bool,
    },
    Flush,
    Compact,
    /// Scans tenant `.0`.
    Scan(usize, Query),
    /// Drop the store (after `close()` when `close`) and open it again.
    Reopen {
        close: bool,
    },
    /// Move the clock forward, then apply retention.
    Retention {
        minutes: u16,
    },
}

fn filter_strategy() -> impl Strategy<Value = Filter> {
    prop_oneof![
        (0u8..8).prop_map(Filter::UserEq),
        (0..MODELS.len()).prop_map(Filter::ModelEq),
        (0..MODELS.len(), 0..MODELS.len()).prop_map(|(a, b)| Filter::ModelAny(a, b)),
        Just(Filter::ServiceNe),
        Just(Filter::NameRegex),
        Just(Filter::NameNotRegex),
        Just(Filter::StatusError),
        (0u8..20).prop_map(Filter::RowEq),
        Just(Filter::EnvEq),
        Just(Filter::MissingNe),
        Just(Filter::MissingEq),
        Just(Filter::UserRegex),
        any::<usize>().prop_map(Filter::TraceOf),
    ]
}

fn query_strategy() -> impl Strategy<Value = Query> {
    let minutes = (0u16..HOURS as u16 * 60, 0u16..HOURS as u16 * 60 + 60)
        .prop_map(|(a, b)| (a.min(b), a.max(b)));
    (
        prop::collection::vec(filter_strategy(), 0..3),
        prop::option::of(minutes),
        any::<bool>(),
    )
        .prop_map(|(filters, minutes, project)| Query {
            filters,
            minutes,
            project,
        })
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..TENANTS.len(), 1u8..20, 0..HOURS, any::<bool>()).prop_map(
            |(tenant, rows, hour, spread)| Op::Append { tenant, rows, hour, spread }
        ),
        2 => Just(Op::Flush),
        2 => Just(Op::Compact),
        6 => (0..TENANTS.len(), query_strategy()).prop_map(|(t, q)| Op::Scan(t, q)),
        1 => any::<bool>().prop_map(|close| Op::Reopen { close }),
        1 => (0u16..120).prop_map(|minutes| Op::Retention { minutes }),
    ]
}

#[derive(Clone, Debug)]
struct Row {
    tenant: usize,
    span: SpanRecord,
    flushed: bool,
}

fn partition_end(s: &SpanRecord) -> i64 {
    s.start.0.div_euclid(HOUR_NANOS) * HOUR_NANOS + HOUR_NANOS
}

/// The value a matcher compares for `key` on `s`: the promoted column if the key has one, else
/// the span attribute, else the resource attribute, else "".
fn value_of(s: &SpanRecord, key: &str) -> String {
    let opt = |v: &Option<String>| v.clone().unwrap_or_default();
    match key {
        "service.name" => s.service_name.clone(),
        "name" => s.name.clone(),
        "status" => s.status_code.as_str().to_owned(),
        "gen_ai.request.model" => opt(&s.gen_ai.request_model),
        "gen_ai.response.model" => opt(&s.gen_ai.response_model),
        "gen_ai.operation.name" => opt(&s.gen_ai.operation_name),
        _ => s
            .attributes
            .iter()
            .chain(&s.resource_attributes)
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.render())
            .unwrap_or_default(),
    }
}

fn selects(p: &Predicate, s: &SpanRecord) -> bool {
    match p {
        Predicate::Attr(m) => m.matches(&value_of(s, &m.key)),
        Predicate::TraceId(t) => s.trace_id == *t,
        Predicate::AnyOf(ms) => ms.iter().any(|m| m.matches(&value_of(s, &m.key))),
        Predicate::FullText(_) | Predicate::BodyContains(_) => {
            unreachable!("spans have no full-text or line-filter predicate")
        }
    }
}

/// Rows of one appended batch: start times spread over hour `hour` (and `hour + 1`).
fn make_batch(id: u64, rows: u8, hour: u8, spread: bool) -> Vec<SpanRecord> {
    (0..u32::from(rows))
        .map(|r| {
            let mut s = span_of(id, r);
            let duration = s.duration_nanos();
            let h = i64::from(hour) + i64::from(spread && r % 2 == 1);
            let within = (mix(id ^ u64::from(r)) % HOUR_NANOS as u64) as i64;
            s.start = UnixNanos(T0_NANOS + h * HOUR_NANOS + within);
            s.end = s.start.saturating_add(duration);
            s
        })
        .collect()
}

struct Harness {
    dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    store: Option<Store>,
    tenants: Vec<TenantId>,
    rows: Vec<Row>,
    next_seq: u32,
}

impl Harness {
    fn config(&self) -> StoreConfig {
        let mut cfg = StoreConfig {
            background: false,
            compaction: CompactionConfig {
                enabled: true,
                min_segments: 2,
                target_rows: 1_000_000,
                ..CompactionConfig::default()
            },
            clock: self.clock.clone(),
            ..StoreConfig::default()
        };
        let hours = |h: i64| Duration::from_secs(h as u64 * 3600);
        cfg.retention.default_ttl = Some(hours(TENANTS[0].1));
        cfg.retention
            .per_tenant
            .insert(tenant(TENANTS[1].0), hours(TENANTS[1].1));
        cfg
    }

    fn new() -> Self {
        let mut h = Harness {
            dir: tempfile::tempdir().expect("tempdir"),
            clock: Arc::new(ManualClock::new(UnixNanos(T0_NANOS + 2 * HOUR_NANOS))),
            store: None,
            tenants: TENANTS.iter().map(|(t, _)| tenant(t)).collect(),
            rows: Vec::new(),
            next_seq: 0,
        };
        h.store = Some(Store::open(h.dir.path(), h.config()).expect("open"));
        h
    }

    fn store(&self) -> &Store {
        self.store.as_ref().expect("store is open")
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match op {
            Op::Append {
                tenant,
                rows,
                hour,
                spread,
            } => {
                let id = batch_id(1, 0, self.next_seq);
                self.next_seq += 1;
                let batch = make_batch(id, *rows, *hour, *spread);
                self.store()
                    .append_spans(&self.tenants[*tenant], &batch)
                    .expect("append");
                self.rows.extend(batch.into_iter().map(|span| Row {
                    tenant: *tenant,
                    span,
                    flushed: false,
                }));
            }
            Op::Flush => {
                self.store().flush().expect("flush");
                self.rows.iter_mut().for_each(|r| r.flushed = true);
            }
            Op::Compact => {
                self.store().compact().expect("compact");
            }
            Op::Scan(t, q) => self.scan(*t, q)?,
            Op::Reopen { close } => {
                let store = self.store.take().expect("store is open");
                if *close {
                    store.close().expect("close");
                    self.rows.iter_mut().for_each(|r| r.flushed = true);
                }
                drop(store);
                let store = Store::open(self.dir.path(), self.config()).expect("reopen");
                prop_assert!(
                    !store.open_report().found_damage(),
                    "{:?}",
                    store.open_report()
                );
                self.store = Some(store);
            }
            Op::Retention { minutes } => {
                self.clock.advance(i64::from(*minutes) * MINUTE_NANOS);
                let dropped = self.store().apply_retention().expect("retention");
                let now = self.clock.now().0;
                let before = self.rows.len();
                self.rows.retain(|r| {
                    let horizon = now - TENANTS[r.tenant].1 * HOUR_NANOS;
                    !(r.flushed && partition_end(&r.span) <= horizon)
                });
                prop_assert_eq!(
                    dropped > 0,
                    self.rows.len() < before,
                    "retention dropped {} segments, model dropped {} rows",
                    dropped,
                    before - self.rows.len()
                );
            }
        }
        // Live segments hold exactly the flushed rows, tenant by tenant.
        let segments = self.store().segments();
        for (i, t) in self.tenants.iter().enumerate() {
            let segment_rows: u64 = segments
                .iter()
                .filter(|m| m.tenant == *t)
                .map(|m| m.rows)
                .sum();
            let flushed = self
                .rows
                .iter()
                .filter(|r| r.flushed && r.tenant == i)
                .count() as u64;
            prop_assert_eq!(
                segment_rows,
                flushed,
                "segment rows vs flushed model rows of {} after {:?}",
                t,
                op
            );
        }
        Ok(())
    }

    fn scan(&self, tenant: usize, q: &Query) -> Result<(), TestCaseError> {
        let time = match q.minutes {
            Some((a, b)) => TimeRange::new(
                UnixNanos(T0_NANOS + i64::from(a) * MINUTE_NANOS),
                UnixNanos(T0_NANOS + i64::from(b) * MINUTE_NANOS),
            )
            .expect("range"),
            None => TimeRange::ALL,
        };
        let mut req = ScanRequest::new(self.tenants[tenant].clone(), Signal::Spans, time);
        // Trace ids are picked among all tenants' rows: another tenant's trace selects nothing.
        req.predicates = q.filters.iter().map(|f| f.predicate(&self.rows)).collect();
        if q.project {
            req = req.project(&[col::TRACE_ID]);
        }
        let mut want: Vec<SpanRecord> = self
            .rows
            .iter()
            .filter(|r| r.tenant == tenant)
            .map(|r| &r.span)
            .filter(|s| time.contains(s.start) && req.predicates.iter().all(|p| selects(p, s)))
            .cloned()
            .collect();
        want.sort_by_key(|s| s.trace_id);
        let res = self.store().scan(&req).expect("scan");
        if q.project {
            let mut got = trace_ids(&res);
            got.sort_unstable();
            let want: Vec<[u8; 16]> = want.iter().map(|s| s.trace_id.0).collect();
            prop_assert_eq!(got, want, "trace ids of {:?}", q);
        } else {
            let mut got = decode_spans(&res);
            got.sort_by_key(|s| s.trace_id);
            prop_assert_eq!(got.len(), want.len(), "row count of {:?}", q);
            prop_assert!(got == want, "rows of {:?} differ", q);
        }
        Ok(())
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        max_shrink_iters: 512,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_operation_sequences_agree_with_a_brute_force_model(
        ops in prop::collection::vec(op_strategy(), 1..48)
    ) {
        let mut h = Harness::new();
        for op in &ops {
            h.apply(op)?;
        }
        // Finally every row must still be there through a full scan after a clean reopen.
        h.apply(&Op::Reopen { close: true })?;
        for t in 0..TENANTS.len() {
            h.apply(&Op::Scan(t, Query { filters: vec![], minutes: None, project: false }))?;
        }
    }
}
