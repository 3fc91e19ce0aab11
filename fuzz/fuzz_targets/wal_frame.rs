//! WAL framing must never panic and never return a record it was not given intact.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sightline_storage::Lsn;
use sightline_storage::wal::frame;

fuzz_target!(|data: &[u8]| {
    let d = frame::decode(data, Lsn(0));
    assert!(d.valid_len <= data.len());
    let mut last = Lsn(0);
    for (lsn, payload) in &d.records {
        assert!(*lsn > last);
        last = *lsn;
        let mut re = Vec::new();
        frame::encode(*lsn, payload, &mut re);
        assert!(data.windows(re.len()).any(|w| w == re.as_slice()));
    }
});
