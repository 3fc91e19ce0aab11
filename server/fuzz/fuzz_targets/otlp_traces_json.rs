//! Fuzzes OTLP/Json traces decoding and mapping onto storage rows: no input may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sightline_server::Limits;
use sightline_server::otlp::{self, Encoding, MapContext};

fuzz_target!(|data: &[u8]| {
    if let Ok(req) = otlp::decode_traces(data, Encoding::Json) {
        let ctx = MapContext::now(&Limits::default());
        let _ = otlp::traces::map_traces(&req, &ctx);
    }
});
