//! Online recovery from a failed WAL append or fdatasync (`crate::wal_recovery`, docs/
//! reliability.md "Failed writes"): writes pause with `Error::Paused` naming the WAL, resume
//! by themselves once the fault is lifted (or at once through `Db::resume`), every
//! acknowledged write is kept and no refused write is applied, also across a restart, a power
//! cut, and a crash in the middle of the recovery's flush.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shale_engine::{Db, Durability, Error, Options, WriteBatch, WriteOptions};
use shale_fs::{
    CrashMode, FaultError, FaultFs, FaultRule, FaultTrigger, FileSystem, MemFs, OpKind,
};

const DIR: &str = "/db";

/// A database on `FaultFs` over `MemFs`, with what it acknowledged and what it refused.
struct Run {
    mem: MemFs,
    fault: FaultFs,
    durability: Durability,
    acked: BTreeMap<Vec<u8>, Vec<u8>>,
    refused: Vec<Vec<u8>>,
    next: u32,
}

impl Run {
    fn new(durability: Durability) -> Self {
        let mem = MemFs::new();
        let fault = FaultFs::new(Arc::new(mem.clone()));
        Run {
            mem,
            fault,
            durability,
            acked: BTreeMap::new(),
            refused: Vec::new(),
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
        options.default_keyspace.write_buffer_size = 64 << 10;
        options
    }

    fn open(&self) -> Db {
        Db::open(DIR, self.options(Arc::new(self.fault.clone()))).unwrap()
    }

    /// Writes one batch of two keys; records whether it was acknowledged or refused. A
    /// refusal must be a pause naming the WAL (or the recovery's flush).
    fn write(&mut self, db: &Db) -> bool {
        let n = self.next;
        self.next += 1;
        let keys = [format!("k{n:05}a"), format!("k{n:05}b")];
        let value = format!("v{n}-{}", "x".repeat(100)).into_bytes();
        let mut batch = WriteBatch::new();
        for key in &keys {
            batch.put(0, key.as_bytes(), &value).unwrap();
        }
        match db.write(batch, &WriteOptions::default()) {
            Ok(()) => {
                for key in keys {
                    self.acked.insert(key.into_bytes(), value.clone());
                }
                true
            }
            Err(Error::Paused { reason }) => {
                // The WAL, or the recovery's flush when that is what failed last.
                assert!(
                    reason.contains(".wal") || reason.contains("flushing a memtable"),
                    "the pause names no WAL: {reason}"
                );
                self.refused.extend(keys.map(String::into_bytes));
                false
            }
            Err(other) => panic!("write {n}: not a pause: {other}"),
        }
    }

    /// Every acknowledged write is in `db` and no refused one.
    fn check(&self, db: &Db, context: &str) {
        for (key, value) in &self.acked {
            assert_eq!(
                db.get(key).unwrap().as_ref(),
                Some(value),
                "{context}: lost {}",
                String::from_utf8_lossy(key)
            );
        }
        for key in &self.refused {
            assert_eq!(
                db.get(key).unwrap(),
                None,
                "{context}: refused {} applied",
                String::from_utf8_lossy(key)
            );
        }
    }

    /// Opens `fs` without faults, checks, writes once more and closes.
    fn check_reopen(&self, fs: Arc<dyn FileSystem>, context: &str) {
        let db = Db::open(DIR, self.options(fs))
            .unwrap_or_else(|e| panic!("{context}: reopen failed: {e}"));
        self.check(&db, context);
        db.put(b"after-reopen", b"ok").unwrap();
        db.close().unwrap();
    }
}

/// The files of `mem` as they are now, kept whole: what a process crash (not a power cut)
/// leaves, since the OS keeps every byte handed to it.
fn process_crash_image(mem: &MemFs) -> MemFs {
    let image = MemFs::new();
    image.create_dir_all(Path::new(DIR)).unwrap();
    for name in mem.list(Path::new(DIR)).unwrap() {
        let path = Path::new(DIR).join(&name);
        if let Ok(bytes) = mem.file_contents(&path) {
            image.write_file_for_test(&path, &bytes).unwrap();
        }
    }
    image
}

/// The numbers of the WAL files in `mem`, oldest first.
fn wal_numbers(mem: &MemFs) -> Vec<u64> {
    let mut numbers: Vec<u64> = mem
        .list(Path::new(DIR))
        .unwrap()
        .iter()
        .filter_map(|n| n.strip_suffix(".wal")?.parse().ok())
        .collect();
    numbers.sort_unstable();
    numbers
}

/// ENOSPC on every WAL append (so the new log cannot be started either) until `refusals`
/// writes were refused; then the fault is lifted and writes must go on by themselves
/// (`by_resume` false) or after `Db::resume` (true).
fn check_enospc_on_wal_append(durability: Durability, by_resume: bool) {
    let context = format!("{durability:?}, resume: {by_resume}");
    let mut run = Run::new(durability);
    let db = run.open();
    for _ in 0..50 {
        assert!(run.write(&db), "{context}");
    }
    let rule = run.fault.add_rule(
        FaultRule::new(OpKind::Append, FaultTrigger::Always, FaultError::NoSpace)
            .path_contains(".wal"),
    );
    let mut refusals = 0;
    while refusals < 20 {
        if !run.write(&db) {
            refusals += 1;
        }
    }
    run.check(&db, &format!("{context}, paused"));
    assert!(run.fault.remove_rule(rule));
    if by_resume {
        db.resume()
            .unwrap_or_else(|e| panic!("{context}: resume: {e}"));
        assert!(
            run.write(&db),
            "{context}: a write after resume was refused"
        );
    } else {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !run.write(&db) {
            assert!(Instant::now() < deadline, "{context}: writes never resumed");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    for _ in 0..50 {
        assert!(run.write(&db), "{context}: refused after the recovery");
    }
    run.check(&db, &format!("{context}, resumed"));
    db.close().unwrap();
    run.check_reopen(Arc::new(run.mem.clone()), &format!("{context}, restart"));
    if durability == Durability::Sync {
        let image = run.mem.crash_image(CrashMode::DropUnsynced);
        run.check_reopen(Arc::new(image), &format!("{context}, power cut"));
    }
}

#[test]
fn enospc_on_wal_appends_pauses_writes_and_they_resume_by_themselves() {
    for durability in [Durability::Sync, Durability::Flush, Durability::Buffered] {
        check_enospc_on_wal_append(durability, false);
    }
}

#[test]
fn enospc_on_wal_appends_pauses_writes_until_resume() {
    for durability in [Durability::Sync, Durability::Flush, Durability::Buffered] {
        check_enospc_on_wal_append(durability, true);
    }
}

/// Under `Sync`, a failed WAL fdatasync refuses the write whose sync failed; the recovery
/// never syncs, appends to or reopens that log again (a tripwire rule on its path counts
/// every such call), deletes it once its memtables are flushed, and writes go on.
#[test]
fn failed_wal_fdatasync_under_sync_resumes_and_never_syncs_the_old_log() {
    let mut run = Run::new(Durability::Sync);
    let db = run.open();
    for _ in 0..30 {
        assert!(run.write(&db));
    }
    let old = *wal_numbers(&run.mem).last().unwrap();
    let old_name = format!("{old:06}.wal");
    run.fault.add_rule(
        FaultRule::new(
            OpKind::SyncData,
            FaultTrigger::Nth(1),
            FaultError::FailedSync,
        )
        .path_contains(&old_name),
    );
    assert!(
        !run.write(&db),
        "the write whose fdatasync failed was acknowledged"
    );
    let tripwires: Vec<_> = [
        OpKind::SyncData,
        OpKind::Append,
        OpKind::OpenAppend,
        OpKind::Flush,
    ]
    .into_iter()
    .map(|op| {
        run.fault.add_rule(
            FaultRule::new(op, FaultTrigger::Always, FaultError::Eio).path_contains(&old_name),
        )
    })
    .collect();
    let injected = run.fault.injected_count();
    db.resume().unwrap();
    for _ in 0..200 {
        assert!(run.write(&db), "a write after the recovery was refused");
    }
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(
        run.fault.injected_count(),
        injected,
        "the failed log was synced, appended to or reopened again"
    );
    assert!(
        !wal_numbers(&run.mem).contains(&old),
        "the failed log was not deleted"
    );
    run.check(&db, "resumed");
    db.close().unwrap();
    for id in tripwires {
        run.fault.remove_rule(id);
    }
    run.check_reopen(Arc::new(run.mem.clone()), "restart");
    let image = run.mem.crash_image(CrashMode::DropUnsynced);
    run.check_reopen(Arc::new(image), "power cut");
}

/// The writers queued behind a leader whose group's fdatasync fails get the error too: none
/// of them is acknowledged, none is applied.
#[test]
fn group_commit_followers_of_a_failed_sync_get_the_error() {
    let run = Run::new(Durability::Sync);
    let db = run.open();
    db.put(b"before", b"v").unwrap();
    // The first group's sync is slow, so the other writers queue up into one second group,
    // whose sync fails.
    let slow = Arc::new(AtomicBool::new(false));
    let hook_slow = slow.clone();
    run.mem.set_sync_hook(Some(Arc::new(move |_| {
        if hook_slow.swap(false, Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(300));
        }
    })));
    let wal = format!("{:06}.wal", wal_numbers(&run.mem).last().unwrap());
    // Keeps the recovery from finishing, so a follower slowed down by a busy machine (queued
    // after the failed group) is refused too rather than acknowledged after the recovery.
    let hold = run.fault.add_rule(
        FaultRule::new(OpKind::Create, FaultTrigger::Always, FaultError::NoSpace)
            .path_contains(".wal"),
    );
    // The next two WAL syncs: the first (slow) one works, the second fails.
    run.fault.add_rule(
        FaultRule::new(
            OpKind::SyncData,
            FaultTrigger::Nth(2),
            FaultError::FailedSync,
        )
        .path_contains(&wal),
    );
    slow.store(true, Ordering::SeqCst);
    let results: Vec<(u32, Result<(), Error>)> = std::thread::scope(|scope| {
        let db = &db;
        let first = scope.spawn(move || (0, db.put(b"w0", b"v")));
        std::thread::sleep(Duration::from_millis(100));
        let followers: Vec<_> = (1..6u32)
            .map(|i| scope.spawn(move || (i, db.put(format!("w{i}").as_bytes(), b"v"))))
            .collect();
        std::iter::once(first)
            .chain(followers)
            .map(|t| t.join().unwrap())
            .collect()
    });
    run.mem.set_sync_hook(None);
    assert!(results[0].1.is_ok(), "the first group: {:?}", results[0].1);
    for (i, result) in &results[1..] {
        match result {
            Err(Error::Paused { reason }) => {
                assert!(reason.contains("WAL"), "writer {i}: {reason}");
            }
            other => panic!("writer {i} of the failed group: {other:?}"),
        }
    }
    let failed_sync = results[1..]
        .iter()
        .filter(|(_, r)| matches!(r, Err(Error::Paused { reason }) if reason.contains("fdatasync")))
        .count();
    assert!(failed_sync >= 1, "no writer got the failed fdatasync");
    assert!(run.fault.remove_rule(hold));
    db.resume().unwrap();
    for (i, _) in &results[1..] {
        assert_eq!(
            db.get(format!("w{i}").as_bytes()).unwrap(),
            None,
            "w{i} applied"
        );
    }
    assert_eq!(db.get(b"w0").unwrap(), Some(b"v".to_vec()));
    db.close().unwrap();
    let db = Db::open(DIR, run.options(Arc::new(run.mem.clone()))).unwrap();
    for (i, _) in &results[1..] {
        assert_eq!(
            db.get(format!("w{i}").as_bytes()).unwrap(),
            None,
            "w{i} recovered"
        );
    }
    assert_eq!(db.get(b"w0").unwrap(), Some(b"v".to_vec()));
    db.close().unwrap();
}

/// A crash after the failed log was replaced but before its memtables reached tables (the
/// flush is held by ENOSPC on table appends): the open replays the failed log up to its
/// recorded end, so every acknowledged write is there and the refused one is not, as after a
/// process crash (every byte the OS had) and after a power cut (only synced bytes).
#[test]
fn a_crash_in_the_middle_of_the_recovery_flush_loses_nothing_acknowledged() {
    for (durability, fault) in [
        (Durability::Sync, OpKind::SyncData),
        (Durability::Sync, OpKind::Append),
        (Durability::Flush, OpKind::Append),
        (Durability::Buffered, OpKind::Append),
    ] {
        let context = format!("{durability:?}, failed {fault:?}");
        let mut run = Run::new(durability);
        let db = run.open();
        for _ in 0..40 {
            assert!(run.write(&db), "{context}");
        }
        let hold_flush = run.fault.add_rule(
            FaultRule::new(OpKind::Append, FaultTrigger::Always, FaultError::NoSpace)
                .path_contains(".sst"),
        );
        let old = *wal_numbers(&run.mem).last().unwrap();
        let error = if fault == OpKind::SyncData {
            FaultError::FailedSync
        } else {
            FaultError::NoSpace
        };
        run.fault.add_rule(
            FaultRule::new(fault, FaultTrigger::Nth(1), error)
                .path_contains(format!("{old:06}.wal")),
        );
        assert!(
            !run.write(&db),
            "{context}: the failing write was acknowledged"
        );
        // The switch happens at once; the flush then fails on ENOSPC and is retried.
        let deadline = Instant::now() + Duration::from_secs(10);
        while wal_numbers(&run.mem).last() == Some(&old) {
            assert!(
                Instant::now() < deadline,
                "{context}: the log was never replaced"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            !run.write(&db),
            "{context}: a write went on before the recovery flush"
        );
        let killed = process_crash_image(&run.mem);
        let power_cut = run.mem.crash_image(CrashMode::DropUnsynced);
        run.check_reopen(Arc::new(killed), &format!("{context}, process crash"));
        // After a failed append the recovery syncs what the log holds; after a failed sync
        // only `Sync` writes (all synced before their acknowledgement) survive a power cut.
        if durability == Durability::Sync || fault == OpKind::Append {
            run.check_reopen(Arc::new(power_cut), &format!("{context}, power cut"));
        }
        // Then the space comes back and the same database goes on.
        assert!(run.fault.remove_rule(hold_flush));
        db.resume()
            .unwrap_or_else(|e| panic!("{context}: resume: {e}"));
        assert!(run.write(&db), "{context}: refused after the recovery");
        run.check(&db, &context);
        db.close().unwrap();
        run.check_reopen(Arc::new(run.mem.clone()), &format!("{context}, restart"));
    }
}
