//! The critical path of a trace: the chain of span segments that determines its end-to-end
//! latency.
//!
//! ## Algorithm
//!
//! 1. **Root.** Spans without a parent, or whose parent is not in the trace (orphans: the parent
//!    was never received), are roots. The root that ends last is chosen (ties: the one that
//!    starts first, then the smaller span id); subtrees under other roots are not on the path.
//! 2. **Clipping (clock skew).** A child's interval is clipped to its parent's window: a child
//!    that starts before its parent or ends after it (clocks of different hosts disagree) only
//!    counts for the part inside the parent. A child entirely outside is ignored.
//! 3. **Walk.** Inside a span's window `[start, end]`, a cursor starts at `end`. Repeatedly pick,
//!    among the children not yet used that start before the cursor, the one still running latest
//!    before the cursor (largest `min(child.end, cursor)`; ties: later start, then smaller span
//!    id). The gap between that child's (clipped) end and the cursor is the parent's own time
//!    and goes on the path; the child's path in `[child.start, min(child.end, cursor)]` follows;
//!    the cursor moves to the child's start. A child that overlaps a chosen one (it started
//!    before the cursor and ended after it) is clipped at the cursor, so the overlapping time is
//!    attributed to the child that finished last, and the earlier part to the child that was
//!    running then. When no child is left, `[start, cursor]` is the parent's own time.
//!
//! The path is returned in chronological order as segments `(span, start, end)`; the segments
//! tile the root's window without gaps or overlaps, so their lengths add up to the root's
//! duration. The walk uses an explicit stack (deep traces cannot overflow the thread's stack),
//! visits each span at most once (duplicate span ids keep the first). Cost: `O(n log n)` plus,
//! per span, `O(k * p)` for `k` children of which `p` end up on the path.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use sightline_storage::SpanId;

/// The fields of a span the walk needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathSpan {
    /// Span id.
    pub span_id: SpanId,
    /// Parent, if any.
    pub parent: Option<SpanId>,
    /// Start, ns.
    pub start: i64,
    /// End, ns (at or after the start).
    pub end: i64,
}

/// One piece of the critical path: `span` was the one doing the work during `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PathSegment {
    /// The span.
    pub span_id: SpanId,
    /// Segment start, ns.
    pub start_unix_nano: i64,
    /// Segment end, ns.
    pub end_unix_nano: i64,
}

enum Work {
    Visit { idx: usize, lo: i64, hi: i64 },
    Emit(PathSegment),
}

/// The root the critical path starts from (see the module docs), as an index into `spans`.
pub fn choose_root(spans: &[PathSpan]) -> Option<usize> {
    let ids: HashSet<SpanId> = spans.iter().map(|s| s.span_id).collect();
    spans
        .iter()
        .enumerate()
        .filter(|(_, s)| s.parent.is_none_or(|p| !ids.contains(&p) || p == s.span_id))
        .max_by(|(_, a), (_, b)| {
            a.end
                .cmp(&b.end)
                .then(b.start.cmp(&a.start))
                .then(b.span_id.cmp(&a.span_id))
        })
        .map(|(i, _)| i)
}

/// Computes the critical path of a trace (see the module docs). Empty for an empty trace.
pub fn critical_path(spans: &[PathSpan]) -> Vec<PathSegment> {
    // First occurrence of each id wins.
    let mut index: HashMap<SpanId, usize> = HashMap::new();
    for (i, s) in spans.iter().enumerate() {
        index.entry(s.span_id).or_insert(i);
    }
    let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, s) in spans.iter().enumerate() {
        if index.get(&s.span_id) != Some(&i) {
            continue;
        }
        if let Some(p) = s.parent.and_then(|p| index.get(&p)).copied()
            && p != i
        {
            children.entry(p).or_default().push(i);
        }
    }
    let Some(root) = choose_root(spans) else {
        return Vec::new();
    };
    let mut visited = vec![false; spans.len()];
    let mut out: Vec<PathSegment> = Vec::new();
    let mut stack = vec![Work::Visit {
        idx: root,
        lo: spans[root].start,
        hi: spans[root].end.max(spans[root].start),
    }];
    while let Some(w) = stack.pop() {
        let (idx, lo, hi) = match w {
            Work::Emit(seg) => {
                if seg.end_unix_nano > seg.start_unix_nano {
                    out.push(seg);
                }
                continue;
            }
            Work::Visit { idx, lo, hi } => (idx, lo, hi),
        };
        if visited[idx] {
            continue;
        }
        visited[idx] = true;
        let id = spans[idx].span_id;
        let seg = |a: i64, b: i64| {
            Work::Emit(PathSegment {
                span_id: id,
                start_unix_nano: a,
                end_unix_nano: b,
            })
        };
        // Children clipped to this span's window, dropping those entirely outside.
        let mut kids: Vec<(i64, i64, usize)> = children
            .get(&idx)
            .into_iter()
            .flatten()
            .filter(|&&c| !visited[c])
            .filter_map(|&c| {
                let s = spans[c].start.max(lo);
                let e = spans[c].end.min(hi);
                (e >= s && spans[c].end >= lo && spans[c].start <= hi).then_some((s, e, c))
            })
            .collect();
        // Latest end first; the sweep below only ever moves the cursor left.
        kids.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then(b.0.cmp(&a.0))
                .then(spans[a.2].span_id.cmp(&spans[b.2].span_id))
        });
        // Items in reverse chronological order (latest first).
        let mut items: Vec<Work> = Vec::new();
        let mut cursor = hi;
        let mut used = vec![false; kids.len()];
        loop {
            // Among unused children starting before the cursor, the one running latest.
            let mut best: Option<(usize, i64)> = None;
            for (k, &(s, e, c)) in kids.iter().enumerate() {
                if used[k] || s >= cursor {
                    continue;
                }
                let clipped = e.min(cursor);
                let better = match best {
                    None => true,
                    Some((bk, be)) => {
                        let (bs, _, bc) = kids[bk];
                        clipped > be
                            || (clipped == be
                                && (s > bs || (s == bs && spans[c].span_id < spans[bc].span_id)))
                    }
                };
                if better {
                    best = Some((k, clipped));
                }
            }
            let Some((k, clipped_end)) = best else {
                break;
            };
            used[k] = true;
            let (s, _, c) = kids[k];
            items.push(seg(clipped_end, cursor));
            items.push(Work::Visit {
                idx: c,
                lo: s,
                hi: clipped_end,
            });
            cursor = s;
        }
        items.push(seg(lo, cursor));
        // The stack pops last-pushed first; output is built latest-first and reversed at the end.
        for it in items.into_iter().rev() {
            stack.push(it);
        }
    }
    out.reverse();
    out
}

/// The distinct spans on a path, in order of their first segment.
pub fn path_spans(path: &[PathSegment]) -> Vec<SpanId> {
    let mut seen = HashSet::new();
    path.iter()
        .filter(|s| seen.insert(s.span_id))
        .map(|s| s.span_id)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn id(n: u64) -> SpanId {
        SpanId((n + 1).to_be_bytes())
    }

    fn sp(n: u64, parent: Option<u64>, start: i64, end: i64) -> PathSpan {
        PathSpan {
            span_id: id(n),
            parent: parent.map(id),
            start,
            end,
        }
    }

    fn segs(path: &[PathSegment]) -> Vec<(u64, i64, i64)> {
        path.iter()
            .map(|s| {
                let n = u64::from_be_bytes(s.span_id.0) - 1;
                (n, s.start_unix_nano, s.end_unix_nano)
            })
            .collect()
    }

    #[test]
    fn overlapping_children_hand_off_at_the_later_start() {
        // root 0..100; A 10..60 and B 50..90 overlap; B has a child C 55..85.
        let spans = [
            sp(0, None, 0, 100),
            sp(1, Some(0), 10, 60),
            sp(2, Some(0), 50, 90),
            sp(3, Some(2), 55, 85),
        ];
        let path = critical_path(&spans);
        assert_eq!(
            segs(&path),
            vec![
                (0, 0, 10),
                (1, 10, 50),
                (2, 50, 55),
                (3, 55, 85),
                (2, 85, 90),
                (0, 90, 100)
            ]
        );
        assert_eq!(path_spans(&path), vec![id(0), id(1), id(2), id(3)]);
    }

    #[test]
    fn a_child_hidden_by_a_longer_sibling_is_not_on_the_path() {
        let spans = [
            sp(0, None, 0, 100),
            sp(1, Some(0), 10, 80),
            sp(2, Some(0), 20, 70),
        ];
        assert_eq!(
            segs(&critical_path(&spans)),
            vec![(0, 0, 10), (1, 10, 80), (0, 80, 100)]
        );
    }

    #[test]
    fn sequential_children_each_take_their_turn() {
        let spans = [
            sp(0, None, 0, 100),
            sp(1, Some(0), 0, 30),
            sp(2, Some(0), 40, 70),
            sp(3, Some(0), 70, 100),
        ];
        assert_eq!(
            segs(&critical_path(&spans)),
            vec![(1, 0, 30), (0, 30, 40), (2, 40, 70), (3, 70, 100)]
        );
    }

    #[test]
    fn clock_skew_is_clipped_to_the_parent() {
        // The child claims to start before and end after its parent; another child lies
        // entirely outside the parent and is ignored.
        let spans = [
            sp(0, None, 100, 200),
            sp(1, Some(0), 50, 250),
            sp(2, Some(0), 300, 400),
        ];
        assert_eq!(segs(&critical_path(&spans)), vec![(1, 100, 200)]);
    }

    #[test]
    fn orphans_and_missing_parents() {
        // Span 5's parent (99) was never received. It ends after the real root, so it is the
        // root the path starts from; the real root's subtree is not on the path.
        let spans = [
            sp(0, None, 0, 100),
            sp(1, Some(0), 10, 90),
            sp(5, Some(99), 50, 300),
            sp(6, Some(5), 60, 250),
        ];
        assert_eq!(choose_root(&spans), Some(2));
        assert_eq!(
            segs(&critical_path(&spans)),
            vec![(5, 50, 60), (6, 60, 250), (5, 250, 300)]
        );
        // Without the true root, the orphan that ends last is chosen; with no spans, nothing.
        let spans = [sp(1, Some(0), 10, 90), sp(2, Some(0), 5, 50)];
        assert_eq!(segs(&critical_path(&spans)), vec![(1, 10, 90)]);
        assert!(critical_path(&[]).is_empty());
    }

    #[test]
    fn cycles_and_duplicates_terminate() {
        // 1 and 2 are each other's parent (unreachable from the root); 3 appears twice.
        let spans = [
            sp(0, None, 0, 10),
            sp(1, Some(2), 1, 2),
            sp(2, Some(1), 1, 2),
            sp(3, Some(0), 2, 8),
            sp(3, Some(0), 0, 10),
            sp(4, Some(4), 0, 5),
        ];
        assert_eq!(
            segs(&critical_path(&spans)),
            vec![(0, 0, 2), (3, 2, 8), (0, 8, 10)]
        );
    }

    #[test]
    fn deep_traces_do_not_overflow_the_stack() {
        let n = 200_000u64;
        let spans: Vec<PathSpan> = (0..n)
            .map(|i| sp(i, i.checked_sub(1), i as i64, 2 * n as i64 - i as i64))
            .collect();
        let path = critical_path(&spans);
        assert_eq!(path.len(), 2 * n as usize - 1);
        let total: i64 = path
            .iter()
            .map(|s| s.end_unix_nano - s.start_unix_nano)
            .sum();
        assert_eq!(total, 2 * n as i64);
    }

    fn tree() -> impl Strategy<Value = Vec<PathSpan>> {
        prop::collection::vec((0u64..1000, 0i64..1000, 0i64..500), 1..40).prop_map(|raw| {
            raw.iter()
                .enumerate()
                .map(|(i, &(p, s, d))| {
                    let parent = if i == 0 { None } else { Some(p % i as u64) };
                    sp(i as u64, parent, s, s + d)
                })
                .collect()
        })
    }

    proptest! {
        /// The segments tile the root's window exactly, each inside its own span's interval.
        #[test]
        fn path_tiles_the_root_window(spans in tree()) {
            let path = critical_path(&spans);
            let root = spans[choose_root(&spans).expect("root")];
            if root.end > root.start {
                prop_assert_eq!(path.first().map(|s| s.start_unix_nano), Some(root.start));
                prop_assert_eq!(path.last().map(|s| s.end_unix_nano), Some(root.end));
            }
            for w in path.windows(2) {
                prop_assert_eq!(w[0].end_unix_nano, w[1].start_unix_nano);
            }
            for s in &path {
                prop_assert!(s.end_unix_nano > s.start_unix_nano);
                let own = spans.iter().find(|x| x.span_id == s.span_id).expect("span");
                prop_assert!(s.start_unix_nano >= own.start && s.end_unix_nano <= own.end);
            }
        }
    }
}
