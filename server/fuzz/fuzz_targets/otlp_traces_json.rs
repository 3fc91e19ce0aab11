//! Fuzzes OTLP/Json traces decoding and mapping onto storage rows: no input may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sightline_server::Limits;
use sightline_server::otlp::{self, Encoding, MapContext};
use sightline_storage::UnixNanos;

/// A fixed receive time, so every run maps the same input the same way.
const FUZZ_NOW: UnixNanos = UnixNanos(1_780_000_000_000_000_000);

fuzz_target!(|data: &[u8]| {
    if let Ok(req) = otlp::decode_traces(data, Encoding::Json) {
        let ctx = MapContext::at(&Limits::default(), FUZZ_NOW);
        let _ = otlp::traces::map_traces(&req, &ctx);
    }
});
