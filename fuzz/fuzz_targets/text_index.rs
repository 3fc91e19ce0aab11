//! Opening and searching a log segment's token index (`text.idx`) must never panic, whatever
//! its bytes: every damage is an error.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sightline_storage::text_index::{TextQuery, TokenIndexFile};

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("sightline-fuzz-text-{}.idx", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    if let Ok(idx) = TokenIndexFile::open(&path)
        && let Ok(lookup) = idx.lookup()
    {
        for q in ["a", "b*", "\"a b\"", "-a", "*"] {
            let query = TextQuery::parse(q).expect("valid query");
            let _ = query.candidates(&lookup, idx.rows().min(1 << 20));
        }
    }
});
