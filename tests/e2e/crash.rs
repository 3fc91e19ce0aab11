//! Crash consistency: a child process (`crash_writer`) appends, flushes and compacts until it is
//! killed with SIGKILL at a random moment; the data directory is then reopened in this process.
//!
//! After every kill:
//! - every batch the child acknowledged (in this or any earlier run) is present, each row exactly
//!   once (no loss, no duplicate);
//! - every batch present at all is complete (an append is atomic, acknowledged or not);
//! - every batch that was present after an earlier kill is still present (recovered data is not
//!   lost by a later recovery);
//! - no segment was quarantined (a kill must never leave a committed segment damaged);
//! - rows read back are exactly the rows written (a sample is decoded in full).
//!
//! The same directory is reused by every run, so each child also recovers from the previous
//! kill, and some kills land during that recovery. Knobs: `SIGHTLINE_CRASH_ITERATIONS` (default
//! 24, at least 20) and `SIGHTLINE_CRASH_SEED` (default: from the clock, printed).

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use sightline_e2e::{CRASH_BATCH_ROWS, CRASH_TENANT, run_of, span_of, tenant, trace_id_of};
use sightline_storage::{Store, StoreConfig};

use crate::common::Census;

const MIN_KILLS: usize = 20;
const DEFAULT_ITERATIONS: usize = 24;
/// Kill delay after spawn, in milliseconds (inclusive range).
const KILL_AFTER_MS: (u64, u64) = (50, 400);
/// Acknowledged batches decoded in full after each kill.
const DEEP_CHECKS_PER_RUN: usize = 4;

/// Where the child was when the kill landed, from the last markers it printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum KillPoint {
    /// Before `READY`: opening the store (WAL replay, leftover removal).
    Recovery,
    /// Between `FLUSH_START` and `FLUSH_END` of an explicit flush (which includes waiting for a
    /// background flush or compaction: they take the same lock).
    Flush,
    /// Between `COMPACT_START` and `COMPACT_END` of an explicit compaction (likewise).
    Compaction,
    /// Anywhere else: appends, background flushes and compactions.
    Other,
}

/// What one child printed.
#[derive(Debug, Default)]
struct ChildLog {
    ready: bool,
    acked: Vec<u64>,
    in_flush: bool,
    in_compaction: bool,
    flushes: usize,
    compactions: usize,
}

impl ChildLog {
    fn parse(lines: &[String]) -> Self {
        let mut log = ChildLog::default();
        for line in lines {
            let mut words = line.split_whitespace();
            match words.next() {
                Some("READY") => log.ready = true,
                Some("ACK") => log.acked.push(
                    words
                        .next()
                        .and_then(|w| w.parse().ok())
                        .unwrap_or_else(|| panic!("bad ACK line {line:?}")),
                ),
                Some("FLUSH_START") => log.in_flush = true,
                Some("FLUSH_END") => {
                    log.in_flush = false;
                    log.flushes += 1;
                }
                Some("COMPACT_START") => log.in_compaction = true,
                Some("COMPACT_END") => {
                    log.in_compaction = false;
                    log.compactions += 1;
                }
                _ => panic!("unexpected line from crash_writer: {line:?}"),
            }
        }
        log
    }

    fn kill_point(&self) -> KillPoint {
        if !self.ready {
            KillPoint::Recovery
        } else if self.in_flush {
            KillPoint::Flush
        } else if self.in_compaction {
            KillPoint::Compaction
        } else {
            KillPoint::Other
        }
    }
}

/// Reads a child's stdout as whole lines (a line cut by the kill has no newline and is dropped).
fn read_lines(mut out: impl Read + Send + 'static) -> JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        out.read_to_end(&mut bytes).expect("read child stdout");
        let mut lines: Vec<String> = BufReader::new(&bytes[..])
            .lines()
            .map(|l| l.expect("child output is UTF-8"))
            .collect();
        if !bytes.ends_with(b"\n") {
            lines.pop();
        }
        lines
    })
}

fn read_all(mut err: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    })
}

fn spawn_child(dir: &Path, run: u32, seed: u64) -> Child {
    Command::new(env!("CARGO_BIN_EXE_crash_writer"))
        .arg(dir)
        .arg(run.to_string())
        .arg(seed.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn crash_writer")
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number"))
    })
}

/// Checks the directory after a kill; returns the census and how many leftovers of interrupted
/// flushes/compactions the reopen removed.
fn verify(
    dir: &Path,
    run: u32,
    acked: &BTreeSet<u64>,
    previously_present: &BTreeSet<u64>,
    rng: &mut impl Rng,
) -> (Census, usize) {
    let cfg = StoreConfig {
        background: false,
        ..StoreConfig::default()
    };
    let store = Store::open(dir, cfg).expect("reopen after kill");
    let report = store.open_report().clone();
    assert!(
        report.quarantined.is_empty(),
        "run {run}: a kill left committed segments damaged: {:?}",
        report.quarantined
    );
    assert!(
        report.wal.quarantined_files.is_empty(),
        "run {run}: WAL files after a damaged record were quarantined: {:?}",
        report.wal
    );
    let t = tenant(CRASH_TENANT);
    let census = Census::scan(&store, &t, CRASH_BATCH_ROWS);
    assert_eq!(
        census.foreign_rows, 0,
        "run {run}: rows the workload never wrote"
    );
    let broken = census.broken();
    assert!(
        broken.is_empty(),
        "run {run}: {} batches not exactly once per row (row counts): {:?}",
        broken.len(),
        &broken[..broken.len().min(5)]
    );
    let lost: Vec<u64> = acked
        .iter()
        .copied()
        .filter(|id| !census.contains(*id))
        .collect();
    assert!(
        lost.is_empty(),
        "run {run}: {} acknowledged batches lost, e.g. {:?} (runs {:?})",
        lost.len(),
        &lost[..lost.len().min(5)],
        lost.iter().map(|id| run_of(*id)).collect::<BTreeSet<_>>()
    );
    let vanished: Vec<u64> = previously_present
        .iter()
        .copied()
        .filter(|id| !census.contains(*id))
        .collect();
    assert!(
        vanished.is_empty(),
        "run {run}: {} batches recovered earlier vanished, e.g. {:?}",
        vanished.len(),
        &vanished[..vanished.len().min(5)]
    );
    let future: Vec<u64> = census
        .batches
        .keys()
        .copied()
        .filter(|id| run_of(*id) > run)
        .collect();
    assert!(
        future.is_empty(),
        "run {run}: batches of later runs {future:?}"
    );
    // Content, not just presence: a few acknowledged batches decoded in full.
    let acked_list: Vec<u64> = acked.iter().copied().collect();
    for _ in 0..DEEP_CHECKS_PER_RUN.min(acked_list.len()) {
        let id = acked_list[rng.random_range(0..acked_list.len())];
        let row = rng.random_range(0..CRASH_BATCH_ROWS);
        let got = store.trace(&t, trace_id_of(id, row)).expect("trace lookup");
        assert_eq!(
            got,
            vec![span_of(id, row)],
            "run {run}: batch {id} row {row}"
        );
    }
    (census, report.removed_leftovers.len())
}

#[test]
fn sigkill_at_random_points_loses_no_acknowledged_batch() {
    let iterations = env_u64("SIGHTLINE_CRASH_ITERATIONS")
        .map_or(DEFAULT_ITERATIONS, |n| n as usize)
        .max(MIN_KILLS);
    let seed = env_u64("SIGHTLINE_CRASH_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    println!("crash test: {iterations} kills, SIGHTLINE_CRASH_SEED={seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();

    let mut acked: BTreeSet<u64> = BTreeSet::new();
    let mut present: BTreeSet<u64> = BTreeSet::new();
    let mut points: Vec<KillPoint> = Vec::new();
    let mut kills_with_leftovers = 0usize;
    let mut unacked_but_present = 0usize;
    for run in 1..=iterations as u32 {
        let mut child = spawn_child(dir.path(), run, rng.random());
        let stdout = read_lines(child.stdout.take().expect("piped stdout"));
        let stderr = read_all(child.stderr.take().expect("piped stderr"));
        let delay = rng.random_range(KILL_AFTER_MS.0..=KILL_AFTER_MS.1);
        std::thread::sleep(Duration::from_millis(delay));
        // SIGKILL: no destructor, no flush, no chance to finish the current write.
        child.kill().expect("kill crash_writer");
        let status = child.wait().expect("wait for crash_writer");
        let lines = stdout.join().expect("stdout reader");
        let errors = stderr.join().expect("stderr reader");
        assert_eq!(
            status.signal(),
            Some(9),
            "run {run}: crash_writer ended by itself ({status}) before the kill:\n{errors}"
        );
        let log = ChildLog::parse(&lines);
        let point = log.kill_point();
        points.push(point);
        acked.extend(log.acked.iter().copied());

        let (census, leftovers) = verify(dir.path(), run, &acked, &present, &mut rng);
        if leftovers > 0 {
            kills_with_leftovers += 1;
        }
        let now_present: BTreeSet<u64> = census.batches.keys().copied().collect();
        let this_run_unacked = now_present
            .iter()
            .filter(|id| run_of(**id) == run && !log.acked.contains(id))
            .count();
        unacked_but_present += this_run_unacked;
        println!(
            "run {run:2}: killed after {delay:3} ms at {point:?}; acked {:4} (total {:6}), \
             present {:6} batches / {:7} rows, unacked present {this_run_unacked}, \
             explicit flushes {} compactions {}, leftovers removed {leftovers}",
            log.acked.len(),
            acked.len(),
            now_present.len(),
            census.rows,
            log.flushes,
            log.compactions,
        );
        present = now_present;
    }
    let count = |p: KillPoint| points.iter().filter(|&&x| x == p).count();
    let summary = format!(
        "crash test: {} kills in {:.1} s: {} in recovery, {} in explicit flush, {} in explicit \
         compaction, {} elsewhere (appends, background flush/compaction); {} kills left \
         interrupted flush/compaction output on disk; {} acknowledged batches, {} unacknowledged \
         batches survived whole\n",
        points.len(),
        started.elapsed().as_secs_f64(),
        count(KillPoint::Recovery),
        count(KillPoint::Flush),
        count(KillPoint::Compaction),
        count(KillPoint::Other),
        kills_with_leftovers,
        acked.len(),
        unacked_but_present,
    );
    // Past the harness's output capture (unlike `println!`), so CI logs show where kills landed.
    let _ = std::io::stderr().write_all(summary.as_bytes());
    assert!(points.len() >= MIN_KILLS);
    assert!(!acked.is_empty(), "the child never acknowledged a batch");
    assert!(
        count(KillPoint::Flush) + count(KillPoint::Compaction) + kills_with_leftovers > 0,
        "no kill landed inside a flush or compaction; the test exercised only appends"
    );
}
