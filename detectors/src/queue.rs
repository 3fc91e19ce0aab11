//! The scheduler's queue: first in, first out within a tenant, round-robin across tenants, so a
//! tenant with many queued runs does not hold up another tenant's one run behind all of them.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// Items queued per key (a tenant), served one key at a time in turn.
#[derive(Debug)]
pub struct FairQueue<K, T> {
    /// Keys with queued items, in serving order.
    turns: VecDeque<K>,
    /// Queued items per key, oldest first.
    items: HashMap<K, VecDeque<T>>,
}

impl<K, T> Default for FairQueue<K, T> {
    fn default() -> Self {
        Self {
            turns: VecDeque::new(),
            items: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash + Clone, T> FairQueue<K, T> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queue `item` for `key`; a key with nothing queued takes its turn after the others.
    pub fn push(&mut self, key: K, item: T) {
        let q = self.items.entry(key.clone()).or_default();
        if q.is_empty() {
            self.turns.push_back(key);
        }
        q.push_back(item);
    }

    /// The oldest item of the key whose turn it is; that key then goes after the others.
    pub fn pop(&mut self) -> Option<T> {
        let key = self.turns.pop_front()?;
        let q = self.items.get_mut(&key)?;
        let item = q.pop_front();
        if q.is_empty() {
            self.items.remove(&key);
        } else {
            self.turns.push_back(key);
        }
        item
    }

    /// Items queued.
    pub fn len(&self) -> usize {
        self.items.values().map(VecDeque::len).sum()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(q: &mut FairQueue<&'static str, String>) -> Vec<String> {
        std::iter::from_fn(|| q.pop()).collect()
    }

    #[test]
    fn tenants_take_turns() {
        let mut q = FairQueue::new();
        for i in 0..50 {
            q.push("busy", format!("busy{i}"));
        }
        q.push("quiet", "quiet0".to_owned());
        assert_eq!(q.len(), 51);
        let order = drain(&mut q);
        // the quiet tenant's one run goes second, not 51st
        assert_eq!(&order[..3], ["busy0", "quiet0", "busy1"]);
        let busy: Vec<String> = (0..50).map(|i| format!("busy{i}")).collect();
        let rest: Vec<String> = order.iter().filter(|s| *s != "quiet0").cloned().collect();
        assert_eq!(rest, busy, "FIFO within a tenant");
        assert!(q.is_empty() && q.pop().is_none());
    }

    #[test]
    fn three_tenants_interleave_and_a_late_one_waits_one_round() {
        let mut q = FairQueue::new();
        for i in 0..3 {
            q.push("a", format!("a{i}"));
            q.push("b", format!("b{i}"));
        }
        q.push("c", "c0".to_owned());
        assert_eq!(q.pop().as_deref(), Some("a0"));
        q.push("d", "d0".to_owned());
        assert_eq!(
            drain(&mut q),
            ["b0", "c0", "a1", "d0", "b1", "a2", "b2"]
                .map(String::from)
                .to_vec()
        );
        // a tenant emptied and queued again starts at the back
        q.push("a", "a3".to_owned());
        q.push("b", "b3".to_owned());
        q.push("a", "a4".to_owned());
        assert_eq!(drain(&mut q), ["a3", "b3", "a4"].map(String::from).to_vec());
    }
}
