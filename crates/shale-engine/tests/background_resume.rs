//! Background failures that used to stop writes until a reopen and now recover online
//! (docs/reliability.md, "Failed writes: sticky and recoverable errors"):
//!
//! - a failed directory sync of a new WAL's name before the flush edit that names the log:
//!   writes pause, the WAL recovery syncs again and replaces the log, writes resume;
//! - a failed read of a compaction input: an I/O error is retried with backoff while writes
//!   go on; a damaged table is marked, never compacted again, reads and writes go on, and a
//!   write stall it would make endless fails with the damage instead;
//! - a damage mark is remembered by the MANIFEST across a restart and leaves with its table;
//! - a panic while a flush or compaction (or a subcompaction) writes its tables: retried,
//!   sticky after three in a row.
//!
//! Every acknowledged write is checked after the recovery, after a restart and (under
//! `Sync`) on a power-cut image.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shale_engine::{Db, Durability, Error, Options};
use shale_fs::{
    CrashMode, FaultError, FaultFs, FaultRule, FaultTrigger, FileSystem, MemFs, OpKind,
};

const DIR: &str = "/db";

/// The keys the tests write, over and over.
const KEYS: u32 = 100;

/// Generous: CI is a loaded 2-core machine.
const DEADLINE: Duration = Duration::from_secs(30);

/// A database on `FaultFs` over `MemFs`, and what it acknowledged.
struct Run {
    mem: MemFs,
    fault: FaultFs,
    acked: BTreeMap<Vec<u8>, Vec<u8>>,
    next: u32,
    /// Applied to the options of every open.
    tune: fn(&mut Options),
}

impl Run {
    fn new(tune: fn(&mut Options)) -> Self {
        let mem = MemFs::new();
        let fault = FaultFs::new(Arc::new(mem.clone()));
        Run {
            mem,
            fault,
            acked: BTreeMap::new(),
            next: 0,
            tune,
        }
    }

    fn options(&self, fs: Arc<dyn FileSystem>) -> Options {
        let mut options = Options {
            file_system: fs,
            durability: Durability::Sync,
            // The WAL syncer stays out of the way: the tests count directory syncs.
            sync_interval: Duration::from_secs(3600),
            ..Options::default()
        };
        options.default_keyspace.level0_compaction_trigger = 2;
        (self.tune)(&mut options);
        options
    }

    fn open(&self) -> Db {
        Db::open(DIR, self.options(Arc::new(self.fault.clone()))).unwrap()
    }

    /// Writes one of [`KEYS`] keys (so every table overlaps every other, and no compaction is
    /// a trivial move); records it if acknowledged.
    fn write(&mut self, db: &Db) -> Result<(), Error> {
        let n = self.next;
        self.next += 1;
        let key = format!("key{:06}", n % KEYS).into_bytes();
        let value = format!("value{n}-{}", "x".repeat(100)).into_bytes();
        db.put(&key, &value)?;
        self.acked.insert(key, value);
        Ok(())
    }

    fn write_all(&mut self, db: &Db, count: usize) {
        for _ in 0..count {
            self.write(db).unwrap();
        }
    }

    /// Writes until one is acknowledged; every refusal must satisfy `refused`.
    fn write_until_accepted(&mut self, db: &Db, context: &str, refused: impl Fn(&Error)) {
        let start = Instant::now();
        loop {
            match self.write(db) {
                Ok(()) => return,
                Err(error) => refused(&error),
            }
            assert!(
                start.elapsed() < DEADLINE,
                "{context}: writes never resumed"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn assert_acked_present(&self, db: &Db, context: &str) {
        for (key, value) in &self.acked {
            assert_eq!(
                db.get(key).unwrap().as_ref(),
                Some(value),
                "{context}: lost {}",
                String::from_utf8_lossy(key)
            );
        }
    }

    /// Reopens the files as after a restart, and the synced part as after a power cut.
    fn check_recovery(&self, context: &str) {
        let images = [
            ("restart", self.mem.clone()),
            ("power cut", self.mem.crash_image(CrashMode::DropUnsynced)),
        ];
        for (what, image) in images {
            let db = Db::open(DIR, self.options(Arc::new(image)))
                .unwrap_or_else(|e| panic!("{context}, {what}: reopen failed: {e}"));
            self.assert_acked_present(&db, &format!("{context}, {what}"));
            db.put(b"after-reopen", b"ok").unwrap();
            db.close().unwrap();
        }
    }
}

/// Waits until `done` holds, failing the test after [`DEADLINE`].
fn wait_until(context: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < DEADLINE, "{context}: timed out");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn assert_paused(error: &Error, why: &str) {
    match error {
        Error::Paused { reason } => assert!(reason.contains(why), "{reason:?} lacks {why:?}"),
        other => panic!("not a pause naming {why:?}: {other}"),
    }
}

// ---------------------------------------------------------------------------------------------
// A failed directory sync of a new WAL's name.

/// The flush after a memtable switch syncs the table's directory entry, then (before its edit
/// names the new log) the log's: the second directory sync is the log's, and it fails until
/// the rule is lifted. Writes pause naming it, stay paused while the recovery's own directory
/// sync keeps failing, and go on once it succeeds; nothing acknowledged is lost.
#[test]
fn a_failed_directory_sync_of_a_new_wal_pauses_writes_until_a_retry_succeeds() {
    let mut run = Run::new(|_| {});
    let db = run.open();
    run.write_all(&db, 100);
    // Makes the first WAL's and the second one's names durable: the next switch syncs none.
    db.flush().unwrap();
    run.write_all(&db, 100);
    let before = run.fault.op_count(OpKind::SyncDir);
    let rule = run.fault.add_rule(FaultRule::new(
        OpKind::SyncDir,
        FaultTrigger::EveryFrom(2),
        FaultError::Eio,
    ));
    let flushed = db.flush();
    let error = flushed.expect_err("the flush edit was written without a durable WAL name");
    assert_paused(&error, "directory entry");
    assert!(
        run.fault.op_count(OpKind::SyncDir) >= before + 2,
        "the failure was not the second directory sync"
    );
    // Paused, not sticky, and the recovery's retries keep failing meanwhile.
    let failures = run.fault.injected_count();
    wait_until("the recovery retries the directory sync", || {
        run.fault.injected_count() > failures
    });
    for _ in 0..5 {
        assert_paused(&run.write(&db).unwrap_err(), "directory entry");
    }
    run.assert_acked_present(&db, "paused");
    assert!(run.fault.remove_rule(rule));
    run.write_until_accepted(&db, "after the fault", |e| {
        assert_paused(e, "directory entry");
    });
    run.write_all(&db, 100);
    db.wait_for_background_work().unwrap();
    run.assert_acked_present(&db, "resumed");
    db.close().unwrap();
    run.check_recovery("failed WAL directory sync");
}

// ---------------------------------------------------------------------------------------------
// A failed read of a compaction input.

/// Two flushes make two L0 tables, which triggers a compaction that reads them.
fn two_tables_and_a_compaction(run: &mut Run, db: &Db) {
    for _ in 0..2 {
        run.write_all(db, 100);
        db.flush().unwrap();
    }
}

#[test]
fn a_failed_read_of_a_compaction_input_is_retried_with_backoff_while_writes_go_on() {
    let mut run = Run::new(|_| {});
    let db = run.open();
    let rule = run.fault.add_rule(
        FaultRule::new(OpKind::Read, FaultTrigger::Always, FaultError::Eio).path_contains(".sst"),
    );
    two_tables_and_a_compaction(&mut run, &db);
    wait_until("a compaction fails reading", || {
        db.stats().compaction_read_errors >= 1
    });
    // Not sticky, not paused: writes and flushes go on under the fault.
    run.write_all(&db, 50);
    // Waiting for background work reports the failure instead of waiting for ever.
    let error = db
        .wait_for_background_work()
        .expect_err("a compaction is due and failing");
    assert!(error.to_string().contains(".sst"), "{error}");
    // Retried, after a backoff (100 ms, then 200 ms, ...): a few tries, not a busy loop.
    wait_until("the compaction is retried", || {
        db.stats().compaction_read_errors >= 2
    });
    let started = Instant::now();
    let tries = db.stats().compaction_read_errors;
    std::thread::sleep(Duration::from_millis(300));
    let later = db.stats().compaction_read_errors - tries;
    let elapsed_ms = started.elapsed().as_millis() as u64;
    assert!(
        later <= elapsed_ms / 100 + 1,
        "{later} retries in {elapsed_ms} ms: no backoff"
    );
    assert_eq!(db.stats().compactions, 0);
    assert!(db.damaged_tables().is_empty(), "an I/O error is not damage");
    assert!(run.fault.remove_rule(rule));
    wait_until("the compaction succeeds once the fault is gone", || {
        db.stats().compactions >= 1 && db.wait_for_background_work().is_ok()
    });
    run.write_all(&db, 50);
    run.assert_acked_present(&db, "after the retry");
    db.close().unwrap();
    run.check_recovery("failed compaction read");
}

/// L0 at its stop trigger while every compaction fails reading: a write is paused naming the
/// read error instead of waiting for ever (the random fault test hung here before), and goes
/// on once a compaction succeeds (`resume` tries at once).
#[test]
fn a_write_at_a_stop_trigger_while_compactions_fail_reading_is_paused_not_hung() {
    let mut run = Run::new(|options| {
        options.default_keyspace.level0_slowdown_writes_trigger = 3;
        options.default_keyspace.level0_stop_writes_trigger = 4;
    });
    let db = run.open();
    let rule = run.fault.add_rule(
        FaultRule::new(OpKind::Read, FaultTrigger::Always, FaultError::Eio).path_contains(".sst"),
    );
    for _ in 0..4 {
        run.write_all(&db, 100);
        db.flush().unwrap();
    }
    wait_until("a compaction fails reading", || {
        db.stats().compaction_read_errors >= 1
    });
    assert_eq!(db.level_file_counts(&db.default_keyspace()).unwrap()[0], 4);
    let error = run.write(&db).expect_err("L0 is at its stop trigger");
    assert_paused(&error, "fail reading their inputs");
    assert!(error.to_string().contains(".sst"), "{error}");
    assert!(run.fault.remove_rule(rule));
    db.resume().unwrap();
    run.write_until_accepted(&db, "after the fault", |e| {
        assert_paused(e, "fail reading their inputs");
    });
    db.wait_for_background_work().unwrap();
    assert!(db.stats().compactions >= 1);
    run.assert_acked_present(&db, "after the stop");
    db.close().unwrap();
    run.check_recovery("stop trigger under failing compaction reads");
}

/// The table file of `number`.
fn table_path(number: u64) -> PathBuf {
    Path::new(DIR).join(format!("{number:06}.sst"))
}

/// The numbers of the table files in `mem`.
fn tables(mem: &MemFs) -> Vec<u64> {
    let mut numbers: Vec<u64> = mem
        .list(Path::new(DIR))
        .unwrap()
        .iter()
        .filter_map(|n| n.strip_suffix(".sst")?.parse().ok())
        .collect();
    numbers.sort_unstable();
    numbers
}

#[test]
fn a_damaged_compaction_input_is_marked_and_never_compacted_again() {
    // L0 stops writes at 4 tables, so the test can reach the stop the damage makes endless.
    let mut run = Run::new(|options| {
        options.default_keyspace.level0_slowdown_writes_trigger = 3;
        options.default_keyspace.level0_stop_writes_trigger = 4;
    });
    let db = run.open();
    run.write_all(&db, 100);
    db.flush().unwrap();
    db.close().unwrap();
    let damaged = *tables(&run.mem).first().expect("the flush wrote a table");
    // One flipped byte in the first data block: its checksum no longer matches. Every key
    // is written again below, so no read needs the damaged table.
    let mut bytes = run.mem.file_contents(table_path(damaged)).unwrap();
    bytes[20] ^= 0x40;
    run.mem
        .write_file_for_test(table_path(damaged), &bytes)
        .unwrap();

    let db = run.open();
    run.write_all(&db, 100);
    db.flush().unwrap();
    wait_until("the compaction finds the damage", || {
        db.stats().damaged_tables == 1
    });
    let listed = db.damaged_tables();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].0, damaged, "{listed:?}");
    assert!(listed[0].1.contains("corruption"), "{listed:?}");
    // Marked, not retried: nothing is due, and waiting returns at once.
    db.wait_for_background_work().unwrap();
    assert_eq!(db.stats().compactions, 0);
    assert_eq!(db.stats().compaction_read_errors, 0);
    // Reads and writes go on; the damaged table is never picked again.
    run.write_all(&db, 100);
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    assert_eq!(
        db.stats().compactions,
        0,
        "a compaction read the damaged table"
    );
    assert_eq!(db.stats().damaged_tables, 1);
    run.assert_acked_present(&db, "beside the damaged table");
    // L0 at its stop trigger can never be compacted: writes fail with the damage, never hang.
    run.write_all(&db, 10);
    db.flush().unwrap();
    assert_eq!(db.level_file_counts(&db.default_keyspace()).unwrap()[0], 4);
    let error = run.write(&db).expect_err("L0 is at its stop trigger");
    assert!(error.is_corruption(), "{error}");
    let text = error.to_string();
    assert!(
        text.contains(&format!("{damaged:06}.sst")) && text.contains("repair"),
        "{text}"
    );
    run.assert_acked_present(&db, "stopped by the damage");
    db.close().unwrap();
    // A restart still opens (the damage is in one data block), with every other write.
    let db = Db::open(DIR, run.options(Arc::new(run.mem.clone()))).unwrap();
    run.assert_acked_present(&db, "restart");
    db.close().unwrap();
}

/// Writes keys 0..100 with values naming `round` into `keyspace`.
fn write_round(keyspace: &shale_engine::Keyspace, round: u32) {
    for n in 0..KEYS {
        let value = format!("round{round}-{}", "x".repeat(100));
        keyspace
            .put(format!("key{n:06}").as_bytes(), value.as_bytes())
            .unwrap();
    }
}

/// The mark a compaction makes is in the MANIFEST: a restart (even read-only, where no
/// compaction runs) lists it without reading the damage again, no background compaction picks
/// the table after the restart, and the mark leaves with the table (its keyspace dropped).
#[test]
fn a_damage_mark_is_remembered_after_a_restart_and_leaves_with_its_table() {
    let run = Run::new(|_| {});
    let keyspace_options = run
        .options(Arc::new(run.fault.clone()))
        .default_keyspace
        .clone();
    let db = run.open();
    let doomed = db
        .create_keyspace("doomed", keyspace_options.clone())
        .unwrap();
    write_round(&doomed, 0);
    db.flush().unwrap();
    db.close().unwrap();
    let damaged = *tables(&run.mem).first().expect("the flush wrote a table");
    let mut bytes = run.mem.file_contents(table_path(damaged)).unwrap();
    bytes[20] ^= 0x40;
    run.mem
        .write_file_for_test(table_path(damaged), &bytes)
        .unwrap();

    let db = run.open();
    let doomed = db.keyspace("doomed").unwrap();
    write_round(&doomed, 1);
    db.flush().unwrap();
    wait_until("the compaction finds the damage", || {
        db.stats().damaged_tables == 1
    });
    db.close().unwrap();

    // Read-only: no compaction runs, so only the MANIFEST can say.
    let options = run.options(Arc::new(run.fault.clone()));
    let db = Db::open_read_only(DIR, options).unwrap();
    let listed = db.damaged_tables();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].0, damaged, "{listed:?}");
    assert!(
        listed[0].1.contains(&format!("{damaged:06}.sst")),
        "{listed:?}"
    );
    assert_eq!(db.stats().damaged_tables, 1);
    db.close().unwrap();

    let db = run.open();
    assert_eq!(db.damaged_tables().len(), 1);
    let doomed = db.keyspace("doomed").unwrap();
    write_round(&doomed, 2);
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    assert_eq!(
        db.stats().compactions,
        0,
        "a background compaction read the remembered damaged table"
    );
    // A manual compaction still tries, and reports the damage to its caller.
    let error = db.compact_range(&doomed, None, None).unwrap_err();
    assert!(error.is_corruption(), "{error}");
    assert!(
        error.to_string().contains(&format!("{damaged:06}.sst")),
        "{error}"
    );
    assert_eq!(
        doomed.get(b"key000007").unwrap().as_deref(),
        Some(format!("round2-{}", "x".repeat(100)).as_bytes())
    );
    drop(doomed);
    db.drop_keyspace("doomed").unwrap();
    assert!(db.damaged_tables().is_empty(), "{:?}", db.damaged_tables());
    assert!(db.current_version().damaged_files().is_empty());
    db.close().unwrap();
    let db = run.open();
    assert!(db.damaged_tables().is_empty(), "{:?}", db.damaged_tables());
    assert_eq!(db.stats().damaged_tables, 0);
    db.close().unwrap();
}

// ---------------------------------------------------------------------------------------------
// A panic in a flush or a compaction.

#[test]
fn a_panic_writing_a_flush_is_retried_and_writes_resume() {
    let mut run = Run::new(|_| {});
    let db = run.open();
    let panics = Arc::new(AtomicU32::new(0));
    let hook_panics = panics.clone();
    assert!(db.set_in_flush_hook(move || {
        let earlier = hook_panics.fetch_add(1, Ordering::SeqCst);
        assert!(earlier >= 2, "injected panic in a flush");
    }));
    run.write_all(&db, 100);
    match db.flush() {
        Ok(()) => {}
        Err(error) => assert_paused(&error, "injected panic in a flush"),
    }
    run.write_until_accepted(&db, "after two panics", |e| {
        assert_paused(e, "panicked");
    });
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    assert_eq!(db.stats().background_job_panics, 2);
    assert!(db.stats().flushes >= 1);
    run.write_all(&db, 50);
    run.assert_acked_present(&db, "after the retries");
    db.close().unwrap();
    run.check_recovery("panicking flush");
}

#[test]
fn a_flush_that_keeps_panicking_is_sticky_after_three_tries() {
    let mut run = Run::new(|_| {});
    let db = run.open();
    assert!(db.set_in_flush_hook(|| panic!("injected panic in every flush")));
    run.write_all(&db, 100);
    let _ = db.flush();
    let start = Instant::now();
    let reason = loop {
        match run.write(&db) {
            Ok(()) => panic!("a write was accepted while a flush kept panicking"),
            Err(Error::Background { reason }) => break reason,
            Err(error) => assert_paused(&error, "panicked"),
        }
        assert!(start.elapsed() < DEADLINE, "the panics never became sticky");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(
        reason.contains("3 in a row") && reason.contains("injected panic in every flush"),
        "{reason}"
    );
    assert_eq!(db.stats().background_job_panics, 3);
    run.assert_acked_present(&db, "sticky");
    assert!(db.close().is_err(), "close reports the sticky error");
    run.check_recovery("flush panicking for good");
}

#[test]
fn a_panic_in_a_compaction_is_retried() {
    let mut run = Run::new(|_| {});
    let db = run.open();
    let panics = Arc::new(AtomicU32::new(0));
    let hook_panics = panics.clone();
    assert!(db.set_in_compaction_hook(move || {
        let earlier = hook_panics.fetch_add(1, Ordering::SeqCst);
        assert!(earlier >= 1, "injected panic in a compaction");
    }));
    for _ in 0..2 {
        run.write_all(&db, 100);
        // The second flush may see the pause of the compaction's panic.
        if let Err(error) = db.flush() {
            assert_paused(&error, "injected panic in a compaction");
        }
    }
    wait_until("the compaction is retried and succeeds", || {
        db.stats().compactions >= 1
    });
    run.write_until_accepted(&db, "after the panic", |e| assert_paused(e, "panicked"));
    db.wait_for_background_work().unwrap();
    assert_eq!(db.stats().background_job_panics, 1);
    assert_eq!(db.level_file_counts(&db.default_keyspace()).unwrap()[0], 0);
    run.assert_acked_present(&db, "after the retry");
    db.close().unwrap();
    run.check_recovery("panicking compaction");
}

/// A subcompaction runs on its own thread: its panic is the compaction's, retried like one
/// (it used to stop writes until a reopen).
#[test]
fn a_panic_in_a_subcompaction_is_retried() {
    let mut run = Run::new(|options| {
        options.default_keyspace.max_subcompactions = 4;
        options.default_keyspace.target_file_size = 8 << 10;
    });
    let db = run.open();
    let panics = Arc::new(AtomicU32::new(0));
    let hook_panics = panics.clone();
    assert!(db.set_in_subcompaction_hook(move || {
        let earlier = hook_panics.fetch_add(1, Ordering::SeqCst);
        assert!(earlier >= 1, "injected panic in a subcompaction");
    }));
    for _ in 0..2 {
        run.write_all(&db, 100);
        if let Err(error) = db.flush() {
            assert_paused(&error, "injected panic in a subcompaction");
        }
    }
    wait_until("the compaction is retried and succeeds", || {
        db.stats().compactions >= 1
    });
    assert!(panics.load(Ordering::SeqCst) >= 2, "no subcompaction ran");
    run.write_until_accepted(&db, "after the panic", |e| assert_paused(e, "panicked"));
    db.wait_for_background_work().unwrap();
    assert!(db.stats().subcompactions >= 2);
    assert_eq!(db.stats().background_job_panics, 1);
    assert_eq!(db.level_file_counts(&db.default_keyspace()).unwrap()[0], 0);
    run.assert_acked_present(&db, "after the retry");
    db.close().unwrap();
    run.check_recovery("panicking subcompaction");
}
