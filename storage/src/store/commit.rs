//! Manifest commits: the one place the manifest changes.
//!
//! Flushes, compactions, retention and quarantine prepare their segments without holding any
//! lock that another of them needs, then commit here: under the commit lock the current manifest
//! is re-read, the change is checked against it and applied, written atomically, and installed
//! for readers in the same state-lock section. Commits are serialised, so each installs the next
//! generation; a change whose inputs were removed meanwhile (a compaction racing retention or
//! quarantine) is refused by its `edit` and leaves nothing behind in the manifest.

use super::{Inner, State};
use crate::error::Result;
use crate::manifest::Manifest;
use crate::types::SegmentId;

/// Allocates a segment id. Ids come from the in-memory manifest, so segments prepared
/// concurrently never share one; the persisted counter catches up at the next commit (an id
/// handed out to a segment that never commits names a leftover directory, removed at open).
pub(super) fn allocate_segment_id(inner: &Inner) -> SegmentId {
    inner.state.lock().manifest.allocate_segment_id()
}

/// Commits one change. `edit` sees the current manifest and returns `None` to abandon the
/// change (nothing is written) or what `install` needs to update the readers' view under the
/// state lock. Returns that value when the change was committed.
pub(super) fn commit<T>(
    inner: &Inner,
    edit: impl FnOnce(&mut Manifest) -> Option<T>,
    install: impl FnOnce(&mut State, &T),
) -> Result<Option<T>> {
    let _commit = inner.commit.lock();
    let mut manifest = inner.state.lock().manifest.clone();
    let Some(change) = edit(&mut manifest) else {
        return Ok(None);
    };
    manifest.generation += 1;
    manifest.store(&inner.root)?;
    let mut state = inner.state.lock();
    // Commits are serialised by the commit lock: each installs the next generation.
    debug_assert_eq!(
        manifest.generation,
        state.manifest.generation + 1,
        "manifest generations increase by one per commit"
    );
    // Ids allocated while this commit was written stay allocated.
    manifest.next_segment_id = manifest.next_segment_id.max(state.manifest.next_segment_id);
    state.manifest = manifest;
    install(&mut state, &change);
    Ok(Some(change))
}
