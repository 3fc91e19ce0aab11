//! The series catalog of one tenant: series id -> definition, with a label index for matchers.

use std::collections::HashMap;
use std::sync::Arc;

use crate::deadline::Deadline;
use crate::error::Result;
use crate::model::{METRIC_NAME_LABEL, SeriesDef};
use crate::predicate::{MatchOp, Matcher};
use crate::types::SeriesId;

/// Series examined between two checks of a [`Deadline`] while matching.
pub const DEADLINE_STRIDE: usize = 1024;

/// The runs of equal series ids in `ids`, as index ranges in order. Segments hold samples
/// sorted by series, so readers do per-series work once per run instead of once per sample
/// (unsorted input, such as a memtable, just gives runs of one).
pub fn id_runs(ids: &[u64]) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        let id = *ids.get(i)?;
        let start = i;
        i += ids[i..].iter().take_while(|&&x| x == id).count();
        Some(start..i)
    })
}

/// Known series of a tenant.
#[derive(Debug, Default, Clone)]
pub struct SeriesCatalog {
    by_id: HashMap<SeriesId, Arc<SeriesDef>>,
    /// label name -> value -> series (metric name under `__name__`).
    index: HashMap<String, HashMap<String, Vec<SeriesId>>>,
}

impl SeriesCatalog {
    /// Number of series.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Whether `id` is known.
    pub fn contains(&self, id: SeriesId) -> bool {
        self.by_id.contains_key(&id)
    }

    /// The definition of `id`.
    pub fn get(&self, id: SeriesId) -> Option<&Arc<SeriesDef>> {
        self.by_id.get(&id)
    }

    /// All series by id.
    pub fn by_id(&self) -> &HashMap<SeriesId, Arc<SeriesDef>> {
        &self.by_id
    }

    /// Adds a series (no-op when known).
    pub fn insert(&mut self, def: Arc<SeriesDef>) {
        if self.by_id.contains_key(&def.id) {
            return;
        }
        let id = def.id;
        self.index
            .entry(METRIC_NAME_LABEL.to_owned())
            .or_default()
            .entry(def.metric_name.clone())
            .or_default()
            .push(id);
        for (k, v) in &def.labels {
            self.index
                .entry(k.clone())
                .or_default()
                .entry(v.clone())
                .or_default()
                .push(id);
        }
        self.by_id.insert(id, def);
    }

    /// Series satisfying every matcher (all series when there are none).
    pub fn select(&self, matchers: &[&Matcher]) -> Vec<Arc<SeriesDef>> {
        // A deadline that never expires cannot fail the selection.
        self.select_until(matchers, &Deadline::none())
            .unwrap_or_default()
    }

    /// [`SeriesCatalog::select`] that checks `deadline` every [`DEADLINE_STRIDE`] series
    /// examined and fails with [`crate::StorageError::DeadlineExceeded`] once it expires.
    pub fn select_until(
        &self,
        matchers: &[&Matcher],
        deadline: &Deadline,
    ) -> Result<Vec<Arc<SeriesDef>>> {
        deadline.check()?;
        // Start from the smallest candidate set an equality matcher gives.
        let mut best: Option<&Vec<SeriesId>> = None;
        let empty = Vec::new();
        for m in matchers {
            if m.op == MatchOp::Eq && !m.value.is_empty() {
                let c = self
                    .index
                    .get(&m.key)
                    .and_then(|vals| vals.get(&m.value))
                    .unwrap_or(&empty);
                if best.is_none_or(|b| c.len() < b.len()) {
                    best = Some(c);
                }
            }
        }
        let check = |d: &SeriesDef| matchers.iter().all(|m| m.matches(d.label(&m.key)));
        let mut out = Vec::new();
        let mut keep = |i: usize, d: &Arc<SeriesDef>| -> Result<()> {
            if i % DEADLINE_STRIDE == DEADLINE_STRIDE - 1 {
                deadline.check()?;
            }
            if check(d) {
                out.push(d.clone());
            }
            Ok(())
        };
        match best {
            Some(ids) => {
                for (i, d) in ids.iter().filter_map(|id| self.by_id.get(id)).enumerate() {
                    keep(i, d)?;
                }
            }
            None => {
                for (i, d) in self.by_id.values().enumerate() {
                    keep(i, d)?;
                }
            }
        }
        Ok(out)
    }

    /// Label names in use (including `__name__`), sorted.
    pub fn label_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.index.keys().cloned().collect();
        v.sort();
        v
    }

    /// Values of a label, sorted.
    pub fn label_values(&self, name: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .index
            .get(name)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn id_runs_cover_every_index_once() {
        let runs: Vec<_> = super::id_runs(&[7, 7, 3, 9, 9, 9, 7]).collect();
        assert_eq!(runs, vec![0..2, 2..3, 3..6, 6..7]);
        assert_eq!(super::id_runs(&[]).count(), 0);
    }

    use super::*;
    use crate::model::MetricKind;

    #[test]
    fn select_with_matchers() {
        let mut c = SeriesCatalog::default();
        for (m, model) in [("tokens", "a"), ("tokens", "b"), ("latency", "a")] {
            c.insert(Arc::new(SeriesDef::new(
                m,
                MetricKind::Counter,
                vec![("model".into(), model.into())],
            )));
        }
        let name = Matcher::eq("__name__", "tokens");
        assert_eq!(c.select(&[&name]).len(), 2);
        let not_a = Matcher::new("model", MatchOp::NotEq, "a").expect("ok");
        assert_eq!(c.select(&[&name, &not_a]).len(), 1);
        let re = Matcher::new("__name__", MatchOp::Regex, "tok.*|lat.*").expect("ok");
        assert_eq!(c.select(&[&re]).len(), 3);
        let missing = Matcher::eq("zone", "");
        assert_eq!(c.select(&[&missing]).len(), 3);
        assert_eq!(c.label_values("model"), vec!["a", "b"]);
    }

    #[test]
    fn select_until_stops_at_the_deadline() {
        let mut c = SeriesCatalog::default();
        for i in 0..3 * DEADLINE_STRIDE {
            c.insert(Arc::new(SeriesDef::new(
                "tokens",
                MetricKind::Counter,
                vec![("i".into(), i.to_string())],
            )));
        }
        let re = Matcher::new("i", MatchOp::Regex, "1.*").expect("ok");
        let all = c.select_until(&[&re], &Deadline::none()).expect("select");
        assert_eq!(all.len(), c.select(&[&re]).len());
        assert!(all.len() > 100);
        let past = Deadline::at(std::time::Instant::now() - std::time::Duration::from_millis(1));
        assert!(matches!(
            c.select_until(&[&re], &past),
            Err(crate::StorageError::DeadlineExceeded)
        ));
    }
}
