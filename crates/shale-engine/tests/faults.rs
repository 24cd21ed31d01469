//! Fault-injection tests: `FaultFs` over `MemFs` fails WAL appends and syncs, table writes,
//! MANIFEST writes and reads at open, and a wrapper panics inside a background job. Each test
//! checks the contract of STYLE.md "Errors" and db.rs invariant 4:
//!
//! - the failing call returns an error naming the operation and the file;
//! - from then on every write fails while reads keep working: with `Error::Paused` after a
//!   failed table, WAL or MANIFEST write (the engine recovers by itself: a retry, a new log, a
//!   new MANIFEST), with `Error::Background`, whose text says the database must be reopened,
//!   after a background job panicked three times in a row (a sticky background error);
//! - a failed sync is never retried (shale-fs durability contract, rule 3);
//! - after reopening (on the same files, as after a process restart, and on a crash image, as
//!   after a power cut) every acknowledged write is there and a failed batch is all or nothing;
//! - a failing open returns an error naming the file, never panics, and damages nothing.
//!
//! A failed table write of a flush or compaction (ENOSPC above all, but also EIO, a short
//! write or a failed sync of a table) is recoverable instead: the job deletes its partial
//! tables, writes fail with `Error::Paused` naming the failure, the job is retried with
//! backoff (`Db::resume` retries at once), and once it succeeds writes go on without a reopen
//! (`enospc_during_flush_pauses_writes_until_space_is_freed` and the tests after it). So is a
//! failed WAL append, flush or sync (the WAL tests below, and `tests/wal_resume.rs`): the log is
//! replaced and the memtables flushed before writes go on, the failed log is never synced
//! again, and the refused write is not there afterwards. So is a failed MANIFEST write or sync
//! (`tests/manifest_resume.rs`): the database rolls to a new MANIFEST before writes go on.
//!
//! `random_faults_never_lose_acknowledged_writes` injects one random fault (operation, file
//! kind, trigger, error) per seed into a workload with flushes and compactions; scale it with
//! `SHALE_FAULT_SEEDS` (default 100, about half a second; 4000 ran clean). Everything else is
//! deterministic.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shale_engine::{
    Db, Durability, Error, KeyspaceOptions, Options, ReadOptions, WriteBatch, WriteOptions,
};
use shale_fs::{
    CrashMode, FaultError, FaultFs, FaultRule, FaultTrigger, FileSystem, MemFs, Op, OpKind,
};

const DIR: &str = "/db";

/// What a batch does: key -> new value (`None`: deleted), in order.
type Effects = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// A database on `FaultFs` over `MemFs`, and the writes it acknowledged.
struct Harness {
    mem: MemFs,
    fault: FaultFs,
    durability: Durability,
    write_buffer_size: usize,
    /// What the acknowledged writes left: key -> value (`None`: deleted).
    acked: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// The effects of a failed write whose record may have reached the WAL (the first one, or
    /// the latest refused by a failed WAL step), so recovery may apply it (whole) after the
    /// acknowledged ones.
    maybe: Option<Effects>,
    /// The reason of the last pause a write got.
    last_pause: Option<String>,
    next: u32,
}

impl Harness {
    fn new(durability: Durability, write_buffer_size: usize) -> Self {
        let mem = MemFs::new();
        let fault = FaultFs::new(Arc::new(mem.clone()));
        Harness {
            mem,
            fault,
            durability,
            write_buffer_size,
            acked: BTreeMap::new(),
            maybe: None,
            last_pause: None,
            next: 0,
        }
    }

    fn options(&self, fs: Arc<dyn FileSystem>) -> Options {
        let mut options = Options {
            file_system: fs,
            durability: self.durability,
            sync_interval: Duration::from_millis(5),
            ..Options::default()
        };
        options.default_keyspace.write_buffer_size = self.write_buffer_size;
        options.default_keyspace.level0_compaction_trigger = 2;
        options
    }

    fn open(&self) -> Db {
        Db::open(DIR, self.options(Arc::new(self.fault.clone()))).unwrap()
    }

    /// Writes a batch of two puts and a delete of an earlier key; records it if acknowledged.
    fn write(&mut self, db: &Db) -> Result<(), Error> {
        let n = self.next;
        self.next += 1;
        let mut batch = WriteBatch::new();
        let mut effects = Vec::new();
        for part in ["a", "b"] {
            let key = format!("key{n:05}{part}").into_bytes();
            let value = format!("value{n}{part}-{}", "x".repeat(200)).into_bytes();
            batch.put(0, &key, &value).unwrap();
            effects.push((key, Some(value)));
        }
        if n % 3 == 2 {
            let key = format!("key{:05}a", n - 2).into_bytes();
            batch.delete(0, &key).unwrap();
            effects.push((key, None));
        }
        match db.write(batch, &WriteOptions::default()) {
            Ok(()) => {
                self.acked.extend(effects);
                Ok(())
            }
            Err(error) => {
                match &error {
                    // A new WAL failure (the writes paused after it repeat its reason): this
                    // write's record may be in the failed log. The recovery's MANIFEST edit
                    // cuts it off; if that edit fails (sticky), the next open may apply it.
                    Error::Paused { reason }
                        if reason.contains("writing the WAL failed")
                            && self.last_pause.as_ref() != Some(reason) =>
                    {
                        self.maybe = Some(effects);
                    }
                    // Paused before its WAL step: never in the WAL.
                    Error::Paused { .. } => {}
                    _ => {
                        self.maybe.get_or_insert(effects);
                    }
                }
                if let Error::Paused { reason } = &error {
                    self.last_pause = Some(reason.clone());
                }
                Err(error)
            }
        }
    }

    /// Writes until a write fails; returns its error. Panics if none fails within `limit`.
    fn write_until_error(&mut self, db: &Db, limit: usize) -> Error {
        for _ in 0..limit {
            if let Err(error) = self.write(db) {
                return error;
            }
        }
        panic!("no write failed in {limit} tries");
    }

    /// Every acknowledged write reads back from `db`.
    fn assert_acked_present(&self, db: &Db, context: &str) {
        for (key, value) in &self.acked {
            assert_eq!(
                db.get(key).unwrap().as_ref(),
                value.as_ref(),
                "{context}: key {}",
                String::from_utf8_lossy(key)
            );
        }
    }

    /// After recovery: every acknowledged write, plus the first failed write either whole or
    /// not at all.
    fn assert_recovered(&self, db: &Db, context: &str) {
        let Some(maybe) = &self.maybe else {
            return self.assert_acked_present(db, context);
        };
        let mut with = self.acked.clone();
        with.extend(maybe.iter().cloned());
        let read = |key: &Vec<u8>| db.get(key).unwrap();
        let matches = |expected: &BTreeMap<Vec<u8>, Option<Vec<u8>>>| {
            expected.iter().all(|(key, value)| read(key) == *value)
        };
        assert!(
            matches(&self.acked) || matches(&with),
            "{context}: the recovered state is neither the acknowledged writes nor those and \
             the failed batch"
        );
    }

    /// Opens `fs` (with no faults), checks every acknowledged write and that the failed
    /// `batch` (if any) is all or nothing, writes again, and closes.
    fn check_reopen(&self, fs: Arc<dyn FileSystem>, context: &str, failed: Option<&[Vec<u8>]>) {
        let db = Db::open(DIR, self.options(fs))
            .unwrap_or_else(|e| panic!("{context}: reopen failed: {e}"));
        self.assert_recovered(&db, context);
        if let Some(keys) = failed {
            let present = keys.iter().filter(|k| db.get(k).unwrap().is_some()).count();
            assert!(
                present == 0 || present == keys.len(),
                "{context}: {present} of {} entries of the failed batch recovered",
                keys.len()
            );
        }
        db.put(b"after-reopen", b"ok")
            .unwrap_or_else(|e| panic!("{context}: write after reopen failed: {e}"));
        assert_eq!(db.get(b"after-reopen").unwrap(), Some(b"ok".to_vec()));
        db.close()
            .unwrap_or_else(|e| panic!("{context}: close after reopen failed: {e}"));
    }

    /// Reopens as after a process restart (the same files) and as after a power cut (the
    /// synced part only; for `Sync` writes that is everything acknowledged).
    fn check_recovery(&self, context: &str, failed: Option<&[Vec<u8>]>) {
        let image = self.mem.crash_image(CrashMode::DropUnsynced);
        if self.durability == Durability::Sync {
            self.check_reopen(Arc::new(image), &format!("{context}, crash image"), failed);
        }
        self.check_reopen(
            Arc::new(self.mem.clone()),
            &format!("{context}, restart"),
            failed,
        );
    }
}

/// A batch of three puts, written as one record: the write that is failed.
fn failing_batch() -> (WriteBatch, Vec<Vec<u8>>) {
    let keys: Vec<Vec<u8>> = ["failed-a", "failed-b", "failed-c"]
        .iter()
        .map(|k| k.as_bytes().to_vec())
        .collect();
    let mut batch = WriteBatch::new();
    for key in &keys {
        batch.put(0, key, &[b'f'; 300]).unwrap();
    }
    (batch, keys)
}

/// Every kind of write fails with a `Background` error whose reason contains `why`; reads
/// still work.
fn assert_refuses_writes(db: &Db, harness: &Harness, why: &str) {
    check_refusals(db, harness, why, true);
}

/// Every kind of write fails with a `Paused` error whose reason contains `why`; reads still
/// work.
fn assert_pauses_writes(db: &Db, harness: &Harness, why: &str) {
    check_refusals(db, harness, why, false);
}

fn check_refusals(db: &Db, harness: &Harness, why: &str, sticky: bool) {
    let results = [
        ("put", db.put(b"later", b"v")),
        ("delete", db.delete(b"later")),
        ("delete_range", db.delete_range(b"a", b"b")),
        ("write", db.write(failing_batch().0, &WriteOptions::sync())),
        ("flush", db.flush()),
        (
            "create_keyspace",
            db.create_keyspace("later", KeyspaceOptions::default())
                .map(|_| ()),
        ),
    ];
    for (what, result) in results {
        let error = result.expect_err(what);
        let text = error.to_string();
        match &error {
            Error::Background { reason } if sticky => {
                assert!(reason.contains(why), "{what}: {reason:?} lacks {why:?}");
                assert!(
                    text.contains("refuses writes") && text.contains("reopen"),
                    "{what}: {text}"
                );
            }
            Error::Paused { reason } if !sticky => {
                assert!(reason.contains(why), "{what}: {reason:?} lacks {why:?}");
                assert!(
                    text.contains("writes are paused") && text.contains("Db::resume"),
                    "{what}: {text}"
                );
            }
            other => panic!(
                "{what}: not a {} error: {other}",
                if sticky { "sticky" } else { "paused" }
            ),
        }
    }
    harness.assert_acked_present(db, "reads after the failure");
    let mut iter = db.iterator(ReadOptions::default()).unwrap();
    iter.seek_to_first();
    assert!(iter.valid() || harness.acked.values().all(Option::is_none));
    iter.status().unwrap();
}

/// The current (newest) WAL's file name.
fn newest_wal(mem: &MemFs) -> String {
    mem.list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| Path::new(n).extension().is_some_and(|e| e == "wal"))
        .max_by_key(|n| n.trim_end_matches(".wal").parse::<u64>().unwrap_or(0))
        .unwrap()
}

/// Waits until `db` reports a background error (a background job failed), then returns it.
fn wait_for_background_error(db: &Db) -> Error {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Err(error) = db.wait_for_background_work() {
            return error;
        }
        if let Err(error) = db.put(b"probe", b"p") {
            return error;
        }
        assert!(Instant::now() < deadline, "no background error in 10 s");
        std::thread::sleep(Duration::from_millis(2));
    }
}

// ---------------------------------------------------------------------------------------------
// The WAL.

/// A rule that keeps a WAL recovery from finishing (no new log can be created), so that a
/// test sees writes paused; removing it lets the recovery go on.
fn hold_wal_recovery(harness: &Harness) -> shale_fs::RuleId {
    harness.fault.add_rule(
        FaultRule::new(OpKind::Create, FaultTrigger::Always, FaultError::NoSpace)
            .path_contains(".wal"),
    )
}

/// After `db.resume()` succeeded: writes go on, and the keys of the refused batch are not
/// there, neither now nor after a restart or (for `Sync`) a power cut.
fn check_resumed(mut harness: Harness, db: Db, failed_keys: &[Vec<u8>], context: &str) {
    db.resume()
        .unwrap_or_else(|e| panic!("{context}: resume: {e}"));
    for _ in 0..5 {
        harness
            .write(&db)
            .unwrap_or_else(|e| panic!("{context}: write after resume: {e}"));
    }
    harness.assert_acked_present(&db, context);
    for key in failed_keys {
        assert_eq!(
            db.get(key).unwrap(),
            None,
            "{context}: refused write applied"
        );
    }
    db.close()
        .unwrap_or_else(|e| panic!("{context}: close after resume: {e}"));
    harness.fault.clear_rules();
    // The refused batch is not "maybe" any more: the recovery cut it out of the log.
    harness.maybe = None;
    harness.check_recovery(context, Some(failed_keys));
    let db = Db::open(DIR, harness.options(Arc::new(harness.mem.clone()))).unwrap();
    for key in failed_keys {
        assert_eq!(
            db.get(key).unwrap(),
            None,
            "{context}: refused write recovered"
        );
    }
    db.close().unwrap();
}

#[test]
fn failed_wal_append_pauses_writes_and_loses_nothing() {
    for durability in [Durability::Sync, Durability::Flush, Durability::Buffered] {
        for fault in [FaultError::Eio, FaultError::NoSpace, FaultError::ShortWrite] {
            let context = format!("{durability:?}, {fault}");
            let mut harness = Harness::new(durability, 1 << 20);
            let db = harness.open();
            for _ in 0..20 {
                harness.write(&db).unwrap();
            }
            let hold = hold_wal_recovery(&harness);
            harness.fault.add_rule(
                FaultRule::new(OpKind::Append, FaultTrigger::Nth(1), fault).path_contains(".wal"),
            );
            let (batch, failed_keys) = failing_batch();
            let error = db
                .write(batch, &WriteOptions::default())
                .expect_err(&context);
            let text = error.to_string();
            assert!(
                matches!(&error, Error::Paused { reason } if reason.contains("writing the WAL failed"))
                    && text.contains("append of /db/")
                    && text.contains(".wal")
                    && text.contains(&fault.to_string()),
                "{context}: {text}"
            );
            for key in &failed_keys {
                assert_eq!(
                    db.get(key).unwrap(),
                    None,
                    "{context}: failed write visible"
                );
            }
            assert_pauses_writes(&db, &harness, "WAL");
            assert!(harness.fault.remove_rule(hold));
            check_resumed(harness, db, &failed_keys, &context);
        }
    }
}

#[test]
fn failed_wal_sync_fails_the_write_and_is_never_retried() {
    let mut harness = Harness::new(Durability::Sync, 1 << 20);
    let db = harness.open();
    for _ in 0..10 {
        harness.write(&db).unwrap();
    }
    let wal = newest_wal(&harness.mem);
    let hold = hold_wal_recovery(&harness);
    harness.fault.add_rule(
        FaultRule::new(
            OpKind::SyncData,
            FaultTrigger::Nth(1),
            FaultError::FailedSync,
        )
        .path_contains(&wal),
    );
    let (batch, failed_keys) = failing_batch();
    let error = db.write(batch, &WriteOptions::sync()).unwrap_err();
    let text = error.to_string();
    assert!(
        matches!(error, Error::Paused { .. })
            && text.contains("fdatasync")
            && text.contains(&wal)
            && text.contains("failed sync"),
        "{text}"
    );
    // A tripwire: any later sync, append or reopening of that WAL is counted.
    let tripwire =
        |op| FaultRule::new(op, FaultTrigger::Always, FaultError::Eio).path_contains(&wal);
    harness.fault.add_rule(tripwire(OpKind::SyncData));
    harness.fault.add_rule(tripwire(OpKind::Append));
    harness.fault.add_rule(tripwire(OpKind::OpenAppend));
    let injected = harness.fault.injected_count();
    assert_pauses_writes(&db, &harness, "WAL");
    // The background syncer runs every 5 ms; give it the chance to retry (it must not).
    std::thread::sleep(Duration::from_millis(50));
    assert!(harness.fault.remove_rule(hold));
    let while_held = harness.fault.injected_count() - injected;
    db.resume().unwrap();
    assert_eq!(
        harness.fault.injected_count() - injected,
        while_held,
        "the failed WAL was touched again"
    );
    assert!(
        !harness.mem.list(Path::new(DIR)).unwrap().contains(&wal),
        "the failed WAL is deleted once its memtables are flushed"
    );
    check_resumed(harness, db, &failed_keys, "failed WAL sync");
}

#[test]
fn failed_background_wal_sync_pauses_writes_until_the_log_is_replaced() {
    for durability in [Durability::Flush, Durability::Buffered] {
        let context = format!("{durability:?}");
        let mut harness = Harness::new(durability, 1 << 20);
        let db = harness.open();
        let hold = hold_wal_recovery(&harness);
        harness.fault.add_rule(
            FaultRule::new(
                OpKind::SyncData,
                FaultTrigger::Always,
                FaultError::FailedSync,
            )
            .path_contains(".wal"),
        );
        // Writes are acknowledged without a sync until the background syncer fails.
        let error = loop {
            match harness.write(&db) {
                Ok(()) => std::thread::sleep(Duration::from_millis(1)),
                Err(error) => break error,
            }
        };
        match &error {
            Error::Paused { reason } => assert!(
                reason.contains("WAL") && reason.contains("fdatasync")
                    || reason.contains("creating WAL"),
                "{context}: {reason}"
            ),
            other => panic!("{context}: {other}"),
        }
        assert!(
            !harness.acked.is_empty(),
            "{context}: a write was acknowledged"
        );
        assert_pauses_writes(&db, &harness, "WAL");
        // One recovery attempt (its MANIFEST edit syncs the MANIFEST) fails on the held
        // create; later attempts only try the create again.
        assert!(
            matches!(db.resume(), Err(Error::Paused { .. })),
            "{context}: the held recovery succeeded"
        );
        let syncs = harness.fault.op_count(OpKind::SyncData);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(
            harness.fault.op_count(OpKind::SyncData),
            syncs,
            "{context}: the failed sync was retried"
        );
        // The new logs' syncs may fail too: only the held recovery is lifted, and the
        // acknowledged writes past the failed sync reach tables through its flush.
        assert!(harness.fault.remove_rule(hold));
        db.resume()
            .unwrap_or_else(|e| panic!("{context}: resume: {e}"));
        harness.assert_acked_present(&db, &context);
        harness.fault.clear_rules();
        check_resumed(harness, db, &[], &context);
    }
}

#[test]
fn failed_wal_switch_pauses_writes_until_a_log_can_be_created() {
    let mut harness = Harness::new(Durability::Sync, 4096);
    let db = harness.open();
    harness.write(&db).unwrap();
    let hold = hold_wal_recovery(&harness);
    let error = harness.write_until_error(&db, 100);
    assert!(
        matches!(error, Error::Paused { .. })
            && error.to_string().contains("create of /db/")
            && error.to_string().contains(".wal"),
        "{error}"
    );
    assert_pauses_writes(&db, &harness, "WAL");
    assert!(harness.fault.remove_rule(hold));
    check_resumed(harness, db, &[], "failed WAL switch");
}

// ---------------------------------------------------------------------------------------------
// Flush, compaction, MANIFEST.

/// The table files in the directory.
fn table_files(mem: &MemFs) -> Vec<u64> {
    let mut tables: Vec<u64> = mem
        .list(Path::new(DIR))
        .unwrap()
        .iter()
        .filter_map(|n| n.strip_suffix(".sst").and_then(|n| n.parse().ok()))
        .collect();
    tables.sort_unstable();
    tables
}

/// The table files the current Version names.
fn live_tables(db: &Db) -> Vec<u64> {
    let mut tables: Vec<u64> = db
        .current_version()
        .all_files()
        .map(|(_, _, f)| f.number)
        .collect();
    tables.sort_unstable();
    tables
}

/// Between retries, no partial table of a failed job is left (the retries run every 100 ms
/// and more, so some listing within a second falls between two).
fn assert_no_partial_tables(harness: &Harness, db: &Db, context: &str) {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let (on_disk, live) = (table_files(&harness.mem), live_tables(db));
        if on_disk == live {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{context}: tables on disk {on_disk:?}, live {live:?}: partial outputs were left"
        );
        std::thread::sleep(Duration::from_millis(7));
    }
}

/// A flush fails by `rule` (always): writes pause with the reason, partial tables are gone,
/// `resume` fails while the fault lasts; once it is removed `resume` succeeds, writes go on
/// without a reopen, and recovery has every acknowledged write.
fn check_paused_flush(rule: FaultRule, fault_text: &str) {
    let context = format!("{rule:?}");
    let mut harness = Harness::new(Durability::Sync, 4096);
    let db = harness.open();
    let rule = harness.fault.add_rule(rule);
    let error = harness.write_until_error(&db, 1000);
    match &error {
        Error::Paused { reason } => assert!(
            reason.contains("flushing a memtable to table") && reason.contains(fault_text),
            "{context}: {reason}"
        ),
        other => panic!("{context}: not a paused error: {other}"),
    }
    assert_pauses_writes(&db, &harness, fault_text);
    assert_no_partial_tables(&harness, &db, &context);
    let again = db.resume().expect_err("resume while the fault lasts");
    assert!(matches!(again, Error::Paused { .. }), "{context}: {again}");
    harness.fault.remove_rule(rule);
    db.resume()
        .unwrap_or_else(|e| panic!("{context}: resume after the fault: {e}"));
    for _ in 0..50 {
        harness.write(&db).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    harness.assert_acked_present(&db, &context);
    assert_eq!(table_files(&harness.mem), live_tables(&db), "{context}");
    db.close().unwrap();
    harness.check_recovery(&context, None);
}

#[test]
fn failed_table_write_or_sync_during_flush_pauses_writes_until_a_retry_succeeds() {
    for (op, fault) in [
        (OpKind::Append, FaultError::Eio),
        (OpKind::Append, FaultError::ShortWrite),
        (OpKind::SyncData, FaultError::FailedSync),
        (OpKind::Create, FaultError::Eio),
    ] {
        check_paused_flush(
            FaultRule::new(op, FaultTrigger::Always, fault).path_contains(".sst"),
            &fault.to_string(),
        );
    }
}

#[test]
fn enospc_during_flush_pauses_writes_until_space_is_freed() {
    check_paused_flush(
        FaultRule::new(OpKind::Append, FaultTrigger::Always, FaultError::NoSpace)
            .path_contains(".sst"),
        "no space left on device (ENOSPC)",
    );
}

#[test]
fn writes_resume_by_themselves_once_space_is_freed() {
    let mut harness = Harness::new(Durability::Sync, 4096);
    let db = harness.open();
    let full = harness.fault.add_rule(
        FaultRule::new(OpKind::Append, FaultTrigger::Always, FaultError::NoSpace)
            .path_contains(".sst"),
    );
    let error = harness.write_until_error(&db, 1000);
    assert!(error.to_string().contains("ENOSPC"), "{error}");
    harness.fault.remove_rule(full);
    // No resume call: the background retry (after at most a few backoff steps) clears it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Err(error) = harness.write(&db) {
        assert!(matches!(error, Error::Paused { .. }), "{error}");
        assert!(Instant::now() < deadline, "writes did not resume in 10 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    for _ in 0..50 {
        harness.write(&db).unwrap();
    }
    harness.assert_acked_present(&db, "resumed");
    db.close().unwrap();
    harness.check_recovery("resumed by itself", None);
}

#[test]
fn failed_manifest_sync_is_never_retried() {
    let mut harness = Harness::new(Durability::Sync, 4096);
    let db = harness.open();
    let manifest = harness
        .mem
        .list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .find(|n| n.starts_with("MANIFEST-"))
        .unwrap();
    harness.fault.add_rule(
        FaultRule::new(
            OpKind::SyncData,
            FaultTrigger::Always,
            FaultError::FailedSync,
        )
        .path_contains(&manifest),
    );
    harness.fault.add_rule(
        FaultRule::new(OpKind::Append, FaultTrigger::EveryFrom(2), FaultError::Eio)
            .path_contains(&manifest),
    );
    let error = harness.write_until_error(&db, 1000);
    assert!(error.to_string().contains("MANIFEST"), "{error}");
    // The database rolls to a new MANIFEST (tests/manifest_resume.rs) and never touches the
    // failed one again: one injected failure in all, and the old file is gone.
    db.resume()
        .unwrap_or_else(|e| panic!("resume after a failed MANIFEST sync: {e}"));
    for _ in 0..50 {
        harness.write(&db).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    assert_eq!(
        harness.fault.injected_count(),
        1,
        "the MANIFEST was synced or appended again after a failed sync"
    );
    assert!(!harness.mem.exists(&Path::new(DIR).join(&manifest)).unwrap());
    db.close().unwrap();
    harness.fault.clear_rules();
    harness.check_recovery("failed MANIFEST sync", None);
}

#[test]
fn failed_compaction_table_write_pauses_writes_until_a_retry_succeeds() {
    // The third table created and synced is the compaction's output (the first two are the
    // flushes'); every later one fails too until the rule is removed.
    for (op, fault) in [
        (OpKind::SyncData, FaultError::FailedSync),
        (OpKind::Create, FaultError::NoSpace),
    ] {
        let rule = FaultRule::new(op, FaultTrigger::EveryFrom(3), fault).path_contains(".sst");
        let context = format!("{rule:?}");
        let mut harness = Harness::new(Durability::Sync, 1 << 20);
        let db = harness.open();
        let rule = harness.fault.add_rule(rule);
        let mut flushed = Ok(());
        for _ in 0..2 {
            for _ in 0..20 {
                harness.write(&db).unwrap();
            }
            flushed = db.flush();
        }
        let error = flushed
            .err()
            .unwrap_or_else(|| wait_for_background_error(&db));
        match &error {
            Error::Paused { reason } => assert!(
                reason.contains("compaction of keyspace 0 failed")
                    && reason.contains(&fault.to_string()),
                "{context}: {reason}"
            ),
            other => panic!("{context}: not a paused error: {other}"),
        }
        assert_pauses_writes(&db, &harness, "compaction of keyspace 0 failed");
        assert_no_partial_tables(&harness, &db, &context);
        assert_eq!(db.stats().compactions, 0, "{context}");
        harness.fault.remove_rule(rule);
        db.resume()
            .unwrap_or_else(|e| panic!("{context}: resume after the fault: {e}"));
        db.wait_for_background_work().unwrap();
        assert!(db.stats().compactions > 0, "{context}");
        for _ in 0..20 {
            harness.write(&db).unwrap();
        }
        harness.assert_acked_present(&db, &context);
        db.close().unwrap();
        harness.check_recovery(&context, None);
    }
}

/// A failed read of a compaction input is neither sticky nor a pause: writes go on, the
/// compaction is retried with backoff and succeeds once the fault is gone
/// (`tests/background_resume.rs` has the details: backoff, damaged tables).
#[test]
fn failed_compaction_read_is_retried_while_writes_go_on() {
    // Flushes read no table; the compaction reads its inputs.
    let mut harness = Harness::new(Durability::Sync, 1 << 20);
    let db = harness.open();
    let rule = harness.fault.add_rule(
        FaultRule::new(OpKind::Read, FaultTrigger::Always, FaultError::Eio).path_contains(".sst"),
    );
    for _ in 0..2 {
        for _ in 0..20 {
            harness.write(&db).unwrap();
        }
        db.flush().unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while db.stats().compaction_read_errors == 0 {
        assert!(Instant::now() < deadline, "no compaction failed reading");
        std::thread::sleep(Duration::from_millis(2));
    }
    for _ in 0..20 {
        harness.write(&db).unwrap();
    }
    assert!(harness.fault.remove_rule(rule));
    while db.stats().compactions == 0 {
        assert!(Instant::now() < deadline, "the compaction never succeeded");
        std::thread::sleep(Duration::from_millis(2));
    }
    harness.assert_acked_present(&db, "after the retried compaction");
    db.close().unwrap();
    harness.check_recovery("failed compaction read", None);
}

// ---------------------------------------------------------------------------------------------
// A panic in a background job.

/// A flush that panics every time is retried (`crate::job_panic`) and sticky after three
/// panics in a row (`tests/background_resume.rs`: a panic that goes away is not).
#[test]
fn panic_in_every_background_flush_is_sticky() {
    let mut harness = Harness::new(Durability::Sync, 4096);
    let armed = Arc::new(AtomicBool::new(false));
    // Panics when a table file is created while armed: a bug inside a flush.
    let fs = FaultFs::new(Arc::new(harness.mem.clone()));
    let panics = armed.clone();
    fs.set_hook(move |call| {
        let creates_table = call.op == Op::Create && call.has_extension("sst");
        assert!(
            !(creates_table && panics.load(Ordering::SeqCst)),
            "injected panic creating {}",
            call.path.display()
        );
        Ok(())
    });
    let db = Db::open(DIR, harness.options(Arc::new(fs))).unwrap();
    harness.write(&db).unwrap();
    armed.store(true, Ordering::SeqCst);
    let error = harness.write_until_error(&db, 1000);
    assert!(
        matches!(&error, Error::Paused { reason } | Error::Background { reason }
            if reason.contains("injected panic creating")),
        "{error}"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !matches!(db.put(b"probe", b"p"), Err(Error::Background { .. })) {
        assert!(Instant::now() < deadline, "the panics never became sticky");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_refuses_writes(&db, &harness, "panicked (3 in a row)");
    assert!(db.close().is_err(), "close reports the panic");
    harness.check_recovery("background panic", None);
}

// ---------------------------------------------------------------------------------------------
// Opening.

#[test]
fn failed_reads_at_open_are_clear_errors() {
    let mut harness = Harness::new(Durability::Sync, 1 << 20);
    let db = harness.open();
    for _ in 0..30 {
        harness.write(&db).unwrap();
    }
    db.flush().unwrap();
    for _ in 0..10 {
        harness.write(&db).unwrap(); // left in the WAL
    }
    db.close().unwrap();
    for (op, path, names) in [
        (OpKind::OpenRead, "CURRENT", "CURRENT"),
        (OpKind::Read, "CURRENT", "CURRENT"),
        (OpKind::OpenRead, "MANIFEST", "MANIFEST"),
        (OpKind::Read, "MANIFEST", "MANIFEST"),
        (OpKind::Read, "OPTIONS", "OPTIONS"),
        (OpKind::Read, ".wal", ".wal"),
        (OpKind::List, DIR, DIR),
        (OpKind::Lock, "LOCK", "LOCK"),
        (OpKind::Create, "MANIFEST", "MANIFEST"),
        (OpKind::SyncDir, DIR, DIR),
    ] {
        let context = format!("{op:?} of {path}");
        let rule = harness.fault.add_rule(
            FaultRule::new(op, FaultTrigger::Always, FaultError::Eio).path_contains(path),
        );
        let error =
            Db::open(DIR, harness.options(Arc::new(harness.fault.clone()))).expect_err(&context);
        let text = error.to_string();
        assert!(
            text.contains(names) && text.contains("I/O error (EIO)"),
            "{context}: {text}"
        );
        harness.fault.remove_rule(rule);
        // The failed open changed nothing that matters.
        let db = harness.open();
        harness.assert_acked_present(&db, &context);
        db.close().unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// Group commit.

/// The second key of a concurrent writer's batch.
fn twin(key: &[u8]) -> Vec<u8> {
    [key, b"-twin"].concat()
}

/// Keys written by one thread.
type Keys = Vec<Vec<u8>>;

/// Four writers commit `Sync` batches of two keys through group commit while WAL appends fail
/// now and then: every writer of a failed group gets the error (none is acknowledged), the
/// recovery replaces the log each time, and writes go on. Afterwards, and after a restart and
/// a power cut: every acknowledged batch is there, no refused one, and no batch is half there.
#[test]
fn failed_wal_append_under_concurrent_writers_loses_nothing_acknowledged() {
    let harness = Harness::new(Durability::Sync, 1 << 20);
    let db = harness.open();
    for nth in [60, 200, 400] {
        harness.fault.add_rule(
            FaultRule::new(OpKind::Append, FaultTrigger::Nth(nth), FaultError::Eio)
                .path_contains(".wal"),
        );
    }
    // Each writer reports what was acknowledged and what was refused.
    let outcomes: Vec<(Keys, Keys)> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..4)
            .map(|t| {
                let db = &db;
                scope.spawn(move || {
                    let (mut acked, mut refused) = (Vec::new(), Vec::new());
                    for i in 0..300 {
                        let key = format!("t{t}-{i:04}").into_bytes();
                        let mut batch = WriteBatch::new();
                        batch.put(0, &key, b"v").unwrap();
                        batch.put(0, &twin(&key), b"v").unwrap();
                        match db.write(batch, &WriteOptions::sync()) {
                            Ok(()) => acked.push(key),
                            Err(error @ Error::Paused { .. }) => {
                                let text = error.to_string();
                                assert!(text.contains("WAL"), "writer {t}: {text}");
                                refused.push(key);
                                std::thread::sleep(Duration::from_millis(1));
                            }
                            Err(error) => panic!("writer {t}: {error}"),
                        }
                    }
                    (acked, refused)
                })
            })
            .collect();
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let refused: Vec<_> = outcomes.iter().flat_map(|o| o.1.iter()).collect();
    assert!(!refused.is_empty(), "no write was refused");
    db.resume().unwrap();
    db.put(b"after", b"resume").unwrap();
    db.close().unwrap();
    let image = harness.mem.crash_image(CrashMode::DropUnsynced);
    for (fs, what) in [
        (Arc::new(image) as Arc<dyn FileSystem>, "crash image"),
        (Arc::new(harness.mem.clone()), "restart"),
    ] {
        let db = Db::open(DIR, harness.options(fs)).unwrap();
        for key in outcomes.iter().flat_map(|o| o.0.iter()) {
            assert!(db.get(key).unwrap().is_some(), "{what}: lost {key:?}");
        }
        for key in &refused {
            assert!(
                db.get(key).unwrap().is_none(),
                "{what}: refused {key:?} applied"
            );
        }
        // No batch is half there.
        let mut iter = db.iterator(ReadOptions::default()).unwrap();
        iter.seek_to_first();
        let mut keys = std::collections::BTreeSet::new();
        while iter.valid() {
            if iter.key() != b"after" {
                keys.insert(iter.key().to_vec());
            }
            iter.next();
        }
        for key in keys.iter().filter(|k| !k.ends_with(b"-twin")) {
            assert!(keys.contains(&twin(key)), "{what}: half a batch");
        }
        assert_eq!(
            keys.len(),
            2 * keys.iter().filter(|k| !k.ends_with(b"-twin")).count()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// A failure elsewhere does not stop the WAL from becoming durable.

/// A failed flush (not a WAL failure) stops writes, but writes acknowledged under
/// `Flush`/`Buffered` still reach the disk: by `close`, and by the background syncer within
/// about an interval (ARCHITECTURE.md invariant 5 bounds the loss by time, not by whether an
/// unrelated job failed).
#[test]
fn acknowledged_writes_become_durable_after_an_unrelated_failure() {
    for (durability, by_close) in [
        (Durability::Buffered, true),
        (Durability::Flush, true),
        (Durability::Buffered, false),
        (Durability::Flush, false),
    ] {
        let context = format!("{durability:?}, synced by close: {by_close}");
        let mut harness = Harness::new(durability, 4096);
        let mut options = harness.options(Arc::new(harness.fault.clone()));
        if by_close {
            options.sync_interval = Duration::from_secs(3600);
        }
        let db = Db::open(DIR, options).unwrap();
        harness.fault.add_rule(
            FaultRule::new(OpKind::Append, FaultTrigger::Always, FaultError::Eio)
                .path_contains(".sst"),
        );
        let error = harness.write_until_error(&db, 1000);
        assert!(error.to_string().contains("flushing a memtable"), "{error}");
        let image = if by_close {
            assert!(db.close().is_err(), "{context}: close reports the failure");
            harness.mem.crash_image(CrashMode::DropUnsynced)
        } else {
            std::thread::sleep(Duration::from_millis(100));
            let image = harness.mem.crash_image(CrashMode::DropUnsynced);
            drop(db);
            image
        };
        harness.fault.clear_rules();
        harness.check_reopen(Arc::new(image), &context, None);
    }
}

// ---------------------------------------------------------------------------------------------
// Random faults.

/// One random fault per run: an operation, a file kind and a trigger, during a workload with
/// flushes and compactions. Whatever fails, the first failed write names the injected fault,
/// every later write is refused, and recovery loses nothing acknowledged. Runs
/// `SHALE_FAULT_SEEDS` seeds (default 100).
#[test]
fn random_faults_never_lose_acknowledged_writes() {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    let seeds: u64 = std::env::var("SHALE_FAULT_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    // The calls a workload makes (an operation on a kind of file).
    let targets = [
        (OpKind::Append, ".wal"),
        (OpKind::Append, ".sst"),
        (OpKind::Append, "MANIFEST"),
        (OpKind::SyncData, ".wal"),
        (OpKind::SyncData, ".sst"),
        (OpKind::SyncData, "MANIFEST"),
        (OpKind::Flush, ".wal"),
        (OpKind::Create, ".wal"),
        (OpKind::Create, ".sst"),
        (OpKind::SyncDir, DIR),
        (OpKind::Remove, DIR),
        (OpKind::List, DIR),
        (OpKind::OpenRead, ".sst"),
        (OpKind::Read, ".sst"),
        (OpKind::Any, DIR),
    ];
    let faults = [
        FaultError::Eio,
        FaultError::NoSpace,
        FaultError::ShortWrite,
        FaultError::FailedSync,
    ];
    let durabilities = [Durability::Sync, Durability::Flush, Durability::Buffered];
    for seed in 0..seeds {
        let mut rng = SmallRng::seed_from_u64(seed);
        let durability = durabilities[rng.gen_range(0..3)];
        // Most files see few calls of an operation: mostly small counts.
        let n = if rng.gen_bool(0.6) {
            rng.gen_range(1..6)
        } else {
            rng.gen_range(1..80)
        };
        let (op, path) = targets[rng.gen_range(0..targets.len())];
        let rule = FaultRule::new(
            op,
            if rng.gen_bool(0.5) {
                FaultTrigger::Nth(n)
            } else {
                FaultTrigger::EveryFrom(n)
            },
            faults[rng.gen_range(0..faults.len())],
        )
        .path_contains(path);
        let context = format!("seed {seed}: {durability:?}, {rule:?}");
        let mut harness = Harness::new(durability, 4096);
        let db = harness.open();
        harness.fault.add_rule(rule);
        let mut first_error: Option<String> = None;
        for i in 0..300 {
            let result = if i % 60 == 59 {
                db.flush()
            } else {
                harness.write(&db)
            };
            match (result, &first_error) {
                (Ok(()), None) => {}
                (Ok(()), Some(first)) => {
                    panic!("{context}: step {i} succeeded after a failure ({first})")
                }
                // A failed table write pauses writes until a retry succeeds; only sticky
                // errors are final.
                (Err(error @ Error::Paused { .. }), None) => {
                    let text = error.to_string();
                    assert!(text.contains("injected"), "{context}: unclear error {text}");
                }
                (Err(error), None) => {
                    let text = error.to_string();
                    assert!(text.contains("injected"), "{context}: unclear error {text}");
                    first_error = Some(text);
                }
                (Err(error), Some(_)) => {
                    let text = error.to_string();
                    assert!(
                        matches!(error, Error::Background { .. }) && text.contains("injected"),
                        "{context}: step {i}: {text}"
                    );
                }
            }
        }
        drop(db);
        harness.fault.clear_rules();
        harness.check_recovery(&context, None);
    }
}
