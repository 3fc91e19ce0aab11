//! Decoding a manifest must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sightline_storage::manifest::Manifest;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Manifest::decode(data, std::path::Path::new("fuzz")) {
        let bytes = m.encode().expect("a decoded manifest encodes");
        assert_eq!(Manifest::decode(&bytes, std::path::Path::new("fuzz")).ok(), Some(m));
    }
});
