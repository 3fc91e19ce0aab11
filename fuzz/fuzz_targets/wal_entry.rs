//! Decoding a WAL payload (tenant, signal, Arrow IPC) must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sightline_storage::wal::entry::decode(data);
});
