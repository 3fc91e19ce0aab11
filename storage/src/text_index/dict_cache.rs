//! Token dictionaries of searched log segments, kept in memory process-wide up to
//! [`CACHE_BYTES`], least recently used first out.
//!
//! A search over many days of logs opens many segments' dictionaries; each stays loaded only
//! while it is among the most recently searched that fit the cache. One larger than the whole
//! cache is used by the search that loaded it and not kept. A segment removes its own entry when
//! it is dropped (merged away, retired, quarantined).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use fst::Map;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;

/// Most bytes of token dictionaries kept in memory, process-wide.
pub const CACHE_BYTES: usize = 64 << 20;

/// A loaded dictionary.
pub(super) type Dict = Arc<Map<Vec<u8>>>;

struct Entry {
    dict: Dict,
    bytes: usize,
    used: u64,
}

#[derive(Default)]
struct Cache {
    entries: FxHashMap<u64, Entry>,
    bytes: usize,
    tick: u64,
}

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(Mutex::default);
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// A process-unique key for one opened token index.
pub(super) fn new_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// The dictionary kept for `id`, marked as just used.
pub(super) fn get(id: u64) -> Option<Dict> {
    let mut c = CACHE.lock();
    c.tick += 1;
    let tick = c.tick;
    c.entries.get_mut(&id).map(|e| {
        e.used = tick;
        e.dict.clone()
    })
}

/// Keeps `dict` for `id` if it fits the cache, dropping the least recently used ones to make
/// room.
pub(super) fn insert(id: u64, dict: Dict) {
    insert_bounded(&CACHE, CACHE_BYTES, id, dict);
}

fn insert_bounded(cache: &Mutex<Cache>, cap: usize, id: u64, dict: Dict) {
    let bytes = dict.as_fst().size();
    if bytes > cap {
        return;
    }
    let mut c = cache.lock();
    if let Some(old) = c.entries.remove(&id) {
        c.bytes -= old.bytes;
    }
    while c.bytes + bytes > cap {
        let Some(oldest) = c
            .entries
            .iter()
            .min_by_key(|(_, e)| e.used)
            .map(|(k, _)| *k)
        else {
            break;
        };
        if let Some(e) = c.entries.remove(&oldest) {
            c.bytes -= e.bytes;
        }
    }
    c.tick += 1;
    let used = c.tick;
    c.bytes += bytes;
    c.entries.insert(id, Entry { dict, bytes, used });
    debug_assert!(c.bytes <= cap, "the cache stays within its bytes");
}

/// Drops the dictionary kept for `id`, if any.
pub(super) fn remove(id: u64) {
    let mut c = CACHE.lock();
    if let Some(e) = c.entries.remove(&id) {
        c.bytes -= e.bytes;
    }
}

/// Bytes of token dictionaries kept now, process-wide.
pub fn cached_bytes() -> usize {
    CACHE.lock().bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dict(tokens: &[&str]) -> Dict {
        let mut sorted = tokens.to_vec();
        sorted.sort_unstable();
        Arc::new(
            Map::from_iter(sorted.iter().enumerate().map(|(i, t)| (*t, i as u64)))
                .expect("sorted tokens"),
        )
    }

    #[test]
    fn least_recently_used_dictionaries_leave_first_and_the_bound_holds() {
        let cache = Mutex::new(Cache::default());
        let a = dict(&["alpha", "beta", "gamma"]);
        let size = a.as_fst().size();
        let cap = size * 2 + size / 2;
        insert_bounded(&cache, cap, 1, a.clone());
        insert_bounded(&cache, cap, 2, dict(&["delta", "eps", "zeta"]));
        // Touch 1 so 2 is the oldest.
        {
            let mut c = cache.lock();
            c.tick += 1;
            let t = c.tick;
            c.entries.get_mut(&1).expect("kept").used = t;
        }
        insert_bounded(&cache, cap, 3, dict(&["eta", "iota", "kappa"]));
        let c = cache.lock();
        assert!(c.entries.contains_key(&1) && c.entries.contains_key(&3));
        assert!(
            !c.entries.contains_key(&2),
            "the least recently used one left"
        );
        assert!(c.bytes <= cap);
        assert_eq!(c.bytes, c.entries.values().map(|e| e.bytes).sum::<usize>());
    }

    #[test]
    fn a_dictionary_larger_than_the_cache_is_not_kept() {
        let cache = Mutex::new(Cache::default());
        let d = dict(&["one", "two", "three", "four"]);
        insert_bounded(&cache, d.as_fst().size() - 1, 7, d);
        assert!(cache.lock().entries.is_empty());
        assert_eq!(cache.lock().bytes, 0);
    }

    #[test]
    fn reinserting_the_same_id_does_not_count_it_twice() {
        let cache = Mutex::new(Cache::default());
        let d = dict(&["x", "y"]);
        insert_bounded(&cache, 1 << 20, 5, d.clone());
        insert_bounded(&cache, 1 << 20, 5, d.clone());
        assert_eq!(cache.lock().bytes, d.as_fst().size());
    }
}
