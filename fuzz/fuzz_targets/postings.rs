//! Decoding postings must never panic; what decodes re-encodes to the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sightline_storage::postings::Postings;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = Postings::decode(data, std::path::Path::new("fuzz")) {
        let again = Postings::decode(&p.encode(), std::path::Path::new("fuzz"));
        assert_eq!(again.ok(), Some(p));
    }
});
