//! The benchmark process's resident memory, from `/proc/self` (Linux): the peak since start or
//! since the last [`reset_peak`], so a run can report load and queries apart.

/// Peak resident set size (`VmHWM`) in bytes; `None` where `/proc` cannot tell.
pub fn peak_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Starts a new peak at the current resident size; false where the kernel refused.
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_peak_is_at_least_what_was_touched() {
        let before = super::peak_bytes().unwrap_or(0);
        let v = vec![1u8; 64 << 20];
        let after = super::peak_bytes().unwrap_or(0);
        assert!(v.iter().all(|&b| b == 1));
        assert!(after >= before);
        assert!(after >= 64 << 20, "peak {after} after touching 64 MiB");
    }
}
