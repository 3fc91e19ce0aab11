//! Child process of the crash test (`tests/e2e/crash.rs`): writes to a store until it is killed.
//!
//! Usage: `crash_writer <data-dir> <run> <seed>`.
//!
//! It opens the store with tiny flush thresholds and eager compaction, so that the background
//! thread flushes and compacts all the time, starts [`WRITERS`] threads that append batches of
//! [`CRASH_BATCH_ROWS`] spans (see the `sightline_e2e` library for the batch layout) and one
//! thread that calls `flush()` / `compact()` at random. Everything the parent needs is printed on
//! stdout, one line per event, each line flushed before the next action:
//!
//! ```text
//! READY replayed=<records> leftovers=<dirs> truncated=<bytes>   store opened (recovery done)
//! ACK <batch-id>                                               append returned Ok
//! FLUSH_START / FLUSH_END                                      explicit flush() running
//! COMPACT_START / COMPACT_END                                  explicit compact() running
//! ```
//!
//! An `ACK` line is printed only after `append_spans` returned `Ok`, i.e. after the batch's WAL
//! record was fsynced. The process never exits on its own before [`MAX_RUN`] unless something
//! fails, in which case it prints the error on stderr and exits non-zero.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use sightline_e2e::{CRASH_BATCH_ROWS, CRASH_TENANT, batch_id, batch_spans, tenant};
use sightline_storage::{CompactionConfig, SegmentWriteOptions, StorageError, Store, StoreConfig};

/// Appending threads.
const WRITERS: u8 = 3;
/// The child stops by itself after this long (the parent kills it well before).
const MAX_RUN: Duration = Duration::from_secs(60);
/// Most batches one writer appends in one run (a limit on the loop, far above what fits in
/// [`MAX_RUN`]).
const MAX_BATCHES_PER_WRITER: u32 = 1 << 20;
/// Longest pause of the maintenance thread between explicit flushes and compactions.
const MAX_MAINTENANCE_PAUSE_MS: u64 = 40;

/// Prints one line on stdout and flushes it, so the parent sees it even if the next instruction
/// is where the process dies. A parent that went away ends the process.
fn emit(line: &str) {
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
        std::process::exit(4);
    }
}

fn fail(what: &str, e: &StorageError) -> ! {
    eprintln!("crash_writer: {what}: {e}");
    std::process::exit(2);
}

fn usage() -> ! {
    eprintln!("usage: crash_writer <data-dir> <run> <seed>");
    std::process::exit(64);
}

/// Tiny thresholds: a flush every few dozen batches, a compaction after every second flush of a
/// partition, WAL files rotated every few records, row groups of a few hundred rows.
fn config() -> StoreConfig {
    StoreConfig {
        background: true,
        flush_threshold_bytes: 128 * 1024,
        flush_interval: Duration::from_millis(100),
        wal_file_bytes: 64 * 1024,
        compaction: CompactionConfig {
            enabled: true,
            min_segments: 2,
            // Merged segments past this size stop being rewritten, which keeps each run's
            // compactions small however much earlier runs left behind.
            target_rows: 8_000,
            sample_target_rows: 8_000,
            ..CompactionConfig::default()
        },
        segment: SegmentWriteOptions {
            row_group_rows: 512,
            page_rows: 128,
            ..SegmentWriteOptions::default()
        },
        ..StoreConfig::default()
    }
}

fn writer(store: &Store, run: u32, w: u8, deadline: Instant) {
    let t = tenant(CRASH_TENANT);
    for seq in 0..MAX_BATCHES_PER_WRITER {
        if Instant::now() >= deadline {
            return;
        }
        let id = batch_id(run, w, seq);
        let spans = batch_spans(id, CRASH_BATCH_ROWS);
        loop {
            match store.append_spans(&t, &spans) {
                Ok(()) => break,
                // Refused appends write nothing; the same batch is retried.
                Err(StorageError::OverBudget { retry_after, .. }) => {
                    std::thread::sleep(retry_after.min(Duration::from_millis(10)));
                }
                Err(e) => fail(&format!("append of batch {id}"), &e),
            }
        }
        emit(&format!("ACK {id}"));
    }
}

fn maintenance(store: &Store, seed: u64, deadline: Instant) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(
            rng.random_range(0..=MAX_MAINTENANCE_PAUSE_MS),
        ));
        if rng.random_bool(0.5) {
            emit("FLUSH_START");
            if let Err(e) = store.flush() {
                fail("flush", &e);
            }
            emit("FLUSH_END");
        } else {
            emit("COMPACT_START");
            if let Err(e) = store.compact() {
                fail("compact", &e);
            }
            emit("COMPACT_END");
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir, run, seed] = args.as_slice() else {
        usage()
    };
    let dir = PathBuf::from(dir);
    let (Ok(run), Ok(seed)) = (run.parse::<u32>(), seed.parse::<u64>()) else {
        usage()
    };
    let store = match Store::open(&dir, config()) {
        Ok(s) => Arc::new(s),
        Err(e) => fail(&format!("open {}", dir.display()), &e),
    };
    let report = store.open_report();
    emit(&format!(
        "READY replayed={} leftovers={} truncated={}",
        report.wal.records_replayed,
        report.removed_leftovers.len(),
        report.wal.truncated_bytes
    ));
    let deadline = Instant::now() + MAX_RUN;
    let mut threads = Vec::new();
    for w in 0..WRITERS {
        let store = store.clone();
        threads.push(
            std::thread::Builder::new()
                .name(format!("writer-{w}"))
                .spawn(move || writer(&store, run, w, deadline))
                .expect("spawn a writer thread"),
        );
    }
    {
        let store = store.clone();
        threads.push(
            std::thread::Builder::new()
                .name("maintenance".into())
                .spawn(move || maintenance(&store, seed, deadline))
                .expect("spawn the maintenance thread"),
        );
    }
    for t in threads {
        t.join().expect("a crash_writer thread panicked");
    }
    eprintln!("crash_writer: ran for {MAX_RUN:?} without being killed");
    std::process::exit(3);
}
