//! Online recovery from a failed MANIFEST append, fdatasync or switch (`crate::manifest_recovery`,
//! docs/reliability.md "A failed MANIFEST write or fsync"): writes pause with `Error::Paused`
//! naming the MANIFEST, and resume by themselves (or at once through `Db::resume`) once a new
//! MANIFEST holding the current version is what `CURRENT` names. Each test checks that no
//! acknowledged write is lost (after the fault is lifted, after a restart and after a power
//! cut), that no file the live version names is deleted, that `CURRENT` always names a
//! MANIFEST that exists, and that the old MANIFEST is deleted only once `CURRENT` moved.
//!
//! Deterministic: no test sleeps for a fixed time and expects something done; waits poll with
//! a generous deadline, or go through `Db::resume`, which waits for one retry to finish.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use shale_engine::{Db, Durability, Error, KeyspaceOptions, Options, WriteBatch, WriteOptions};
use shale_fs::{
    CrashMode, FaultError, FaultFs, FaultRule, FaultTrigger, FileSystem, MemFs, OpKind,
};

const DIR: &str = "/db";

/// A database on `FaultFs` over `MemFs`, and the writes it acknowledged.
struct Run {
    mem: MemFs,
    fault: FaultFs,
    acked: BTreeMap<Vec<u8>, Vec<u8>>,
    next: u32,
}

impl Run {
    fn new() -> Self {
        let mem = MemFs::new();
        let fault = FaultFs::new(Arc::new(mem.clone()));
        Run {
            mem,
            fault,
            acked: BTreeMap::new(),
            next: 0,
        }
    }

    fn options(fs: Arc<dyn FileSystem>) -> Options {
        let mut options = Options {
            file_system: fs,
            durability: Durability::Sync,
            sync_interval: Duration::from_millis(5),
            ..Options::default()
        };
        // Small memtables: a flush (and so a MANIFEST edit) every few writes.
        options.default_keyspace.write_buffer_size = 4096;
        options.default_keyspace.level0_compaction_trigger = 2;
        options
    }

    fn open(&self) -> Db {
        Db::open(DIR, Self::options(Arc::new(self.fault.clone()))).unwrap()
    }

    /// Writes one batch of two keys (synced); records it if acknowledged.
    fn write(&mut self, db: &Db) -> Result<(), Error> {
        let n = self.next;
        self.next += 1;
        let keys = [format!("k{n:05}a"), format!("k{n:05}b")];
        let value = format!("v{n}-{}", "x".repeat(200)).into_bytes();
        let mut batch = WriteBatch::new();
        for key in &keys {
            batch.put(0, key.as_bytes(), &value).unwrap();
        }
        db.write(batch, &WriteOptions::default())?;
        for key in keys {
            self.acked.insert(key.into_bytes(), value.clone());
        }
        Ok(())
    }

    /// Writes until one is refused; returns its error, which must be a pause.
    fn write_until_paused(&mut self, db: &Db) -> String {
        for _ in 0..2000 {
            match self.write(db) {
                Ok(()) => {}
                Err(Error::Paused { reason }) => return reason,
                Err(other) => panic!("not a pause: {other}"),
            }
        }
        panic!("no write was refused in 2000 tries");
    }

    /// Polls writes (no `resume` call) until one is accepted again.
    fn wait_until_writes_resume(&mut self, db: &Db, context: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.write(db) {
                Ok(()) => return,
                Err(Error::Paused { .. }) => {}
                Err(other) => panic!("{context}: not a pause: {other}"),
            }
            assert!(
                Instant::now() < deadline,
                "{context}: writes did not resume in 30 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn assert_acked_present(&self, db: &Db, context: &str) {
        for (key, value) in &self.acked {
            assert_eq!(
                db.get(key).unwrap().as_deref(),
                Some(value.as_slice()),
                "{context}: key {}",
                String::from_utf8_lossy(key)
            );
        }
    }

    /// Opens `fs` without faults, checks every acknowledged write, writes, and closes.
    fn check_reopen(&self, fs: Arc<dyn FileSystem>, context: &str) {
        let db = Db::open(DIR, Self::options(fs))
            .unwrap_or_else(|e| panic!("{context}: reopen failed: {e}"));
        self.assert_acked_present(&db, context);
        db.put(b"after-reopen", b"ok")
            .unwrap_or_else(|e| panic!("{context}: write after reopen: {e}"));
        db.close()
            .unwrap_or_else(|e| panic!("{context}: close after reopen: {e}"));
    }

    /// Reopens as after a power cut (synced bytes only) and as after a restart.
    fn check_recovery(&self, context: &str) {
        let image = self.mem.crash_image(CrashMode::DropUnsynced);
        self.check_reopen(Arc::new(image), &format!("{context}, crash image"));
        self.check_reopen(Arc::new(self.mem.clone()), &format!("{context}, restart"));
    }
}

/// The MANIFEST files in the directory, by number.
fn manifests(mem: &MemFs) -> Vec<String> {
    let mut names: Vec<String> = mem
        .list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("MANIFEST-"))
        .collect();
    names.sort();
    names
}

/// The MANIFEST `CURRENT` names.
fn current(mem: &MemFs) -> String {
    let bytes = mem.file_contents(Path::new(DIR).join("CURRENT")).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    text.split(' ').next().unwrap().to_owned()
}

/// `CURRENT` names a MANIFEST that exists, and every file the live version names exists.
fn assert_consistent_on_disk(run: &Run, db: &Db, context: &str) {
    let named = current(&run.mem);
    assert!(
        manifests(&run.mem).contains(&named),
        "{context}: CURRENT names {named}, which is gone: {:?}",
        manifests(&run.mem)
    );
    for (_, _, file) in db.current_version().all_files() {
        let path = Path::new(DIR).join(format!("{:06}.sst", file.number));
        assert!(
            run.mem.exists(&path).unwrap(),
            "{context}: live table {} was deleted",
            file.number
        );
    }
}

/// The tables in level 0.
fn level0_tables(db: &Db) -> usize {
    db.current_version()
        .all_files()
        .filter(|(_, level, _)| *level == 0)
        .count()
}

/// After writes resumed: one MANIFEST is left, `CURRENT` names it, it is not the one that
/// failed, and the database keeps working through flushes and compactions.
fn check_resumed(mut run: Run, db: Db, failed_manifest: &str, context: &str) {
    assert_eq!(
        manifests(&run.mem),
        vec![current(&run.mem)],
        "{context}: the old MANIFEST (or one of a failed roll) was left"
    );
    assert_ne!(current(&run.mem), failed_manifest, "{context}");
    for _ in 0..60 {
        run.write(&db)
            .unwrap_or_else(|e| panic!("{context}: write after the roll: {e}"));
    }
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    run.assert_acked_present(&db, context);
    assert_consistent_on_disk(&run, &db, context);
    db.close()
        .unwrap_or_else(|e| panic!("{context}: close after the roll: {e}"));
    run.check_recovery(context);
}

#[test]
fn failed_manifest_append_or_sync_pauses_writes_until_a_new_manifest_is_written() {
    for (op, fault) in [
        (OpKind::Append, FaultError::Eio),
        (OpKind::Append, FaultError::NoSpace),
        (OpKind::Append, FaultError::ShortWrite),
        (OpKind::SyncData, FaultError::FailedSync),
    ] {
        let context = format!("{op:?} {fault:?}");
        let mut run = Run::new();
        let db = run.open();
        let failed_manifest = current(&run.mem);
        // Every MANIFEST write fails, the roll's too: writes stay paused while it lasts.
        let rule = run
            .fault
            .add_rule(FaultRule::new(op, FaultTrigger::Always, fault).path_contains("MANIFEST"));
        let reason = run.write_until_paused(&db);
        assert!(
            reason.contains("MANIFEST") && reason.contains(&fault.to_string()),
            "{context}: {reason}"
        );
        // Every kind of write is refused with the pause, and never as sticky.
        for (what, result) in [
            ("put", db.put(b"later", b"v")),
            ("flush", db.flush()),
            (
                "create_keyspace",
                db.create_keyspace("later", KeyspaceOptions::default())
                    .map(|_| ()),
            ),
        ] {
            match result {
                Err(Error::Paused { reason }) => {
                    assert!(reason.contains("MANIFEST"), "{context}: {what}: {reason}");
                }
                other => panic!("{context}: {what}: not a pause: {other:?}"),
            }
        }
        run.assert_acked_present(&db, &context);
        assert_consistent_on_disk(&run, &db, &context);
        // A retry while the fault lasts fails and writes stay paused; the failed MANIFEST is
        // still the one CURRENT names.
        assert!(
            matches!(db.resume(), Err(Error::Paused { .. })),
            "{context}"
        );
        assert_eq!(current(&run.mem), failed_manifest, "{context}");
        assert_consistent_on_disk(&run, &db, &context);
        // A power cut now loses nothing acknowledged.
        run.check_reopen(
            Arc::new(run.mem.crash_image(CrashMode::DropUnsynced)),
            &format!("{context}, crash while paused"),
        );
        run.fault.remove_rule(rule);
        // No resume call: the background retry rolls the MANIFEST and writes go on.
        run.wait_until_writes_resume(&db, &context);
        check_resumed(run, db, &failed_manifest, &context);
    }
}

#[test]
fn a_failed_step_of_the_roll_keeps_writes_paused_and_current_valid() {
    // Each step of the roll: creating the new MANIFEST, writing and syncing it, writing and
    // syncing CURRENT.tmp, the rename over CURRENT, the directory sync after it.
    for (op, path, fault) in [
        (OpKind::Create, "MANIFEST", FaultError::NoSpace),
        (OpKind::Append, "MANIFEST", FaultError::NoSpace),
        (OpKind::SyncData, "MANIFEST", FaultError::FailedSync),
        (OpKind::Append, "CURRENT", FaultError::NoSpace),
        (OpKind::SyncData, "CURRENT", FaultError::FailedSync),
        (OpKind::Rename, "CURRENT", FaultError::Eio),
        (OpKind::SyncDir, "db", FaultError::FailedSync),
    ] {
        let context = format!("{op:?} {path} {fault:?}");
        let mut run = Run::new();
        let db = run.open();
        let failed_manifest = current(&run.mem);
        // Every MANIFEST append fails, the roll's too, until the step's rule is in place.
        let first = run.fault.add_rule(
            FaultRule::new(OpKind::Append, FaultTrigger::Always, FaultError::Eio)
                .path_contains("MANIFEST"),
        );
        run.write_until_paused(&db);
        // Writes are paused: from now on only the roll writes or syncs (no flush, no WAL
        // sync), so the step's rule hits the roll and nothing else.
        let step = run
            .fault
            .add_rule(FaultRule::new(op, FaultTrigger::Always, fault).path_contains(path));
        run.fault.remove_rule(first);
        for attempt in 0..2 {
            match db.resume() {
                Err(Error::Paused { reason }) => assert!(
                    reason.contains("writing a new MANIFEST") && reason.contains("injected"),
                    "{context}: attempt {attempt}: {reason}"
                ),
                other => panic!("{context}: attempt {attempt}: not a pause: {other:?}"),
            }
            assert!(
                matches!(db.put(b"later", b"v"), Err(Error::Paused { .. })),
                "{context}"
            );
            assert_consistent_on_disk(&run, &db, &context);
            assert!(
                manifests(&run.mem).contains(&failed_manifest),
                "{context}: the old MANIFEST was deleted before CURRENT moved"
            );
            run.check_reopen(
                Arc::new(run.mem.crash_image(CrashMode::DropUnsynced)),
                &format!("{context}, crash after failed roll {attempt}"),
            );
        }
        run.assert_acked_present(&db, &context);
        run.fault.remove_rule(step);
        db.resume()
            .unwrap_or_else(|e| panic!("{context}: resume after the fault: {e}"));
        check_resumed(run, db, &failed_manifest, &context);
    }
}

#[test]
fn crash_images_at_each_sync_of_the_roll_recover_every_acknowledged_write() {
    let mut run = Run::new();
    let db = run.open();
    let failed_manifest = current(&run.mem);
    // Every MANIFEST sync fails, the roll's too, until the hook is in place.
    let rule = run.fault.add_rule(
        FaultRule::new(
            OpKind::SyncData,
            FaultTrigger::Always,
            FaultError::FailedSync,
        )
        .path_contains("MANIFEST"),
    );
    run.write_until_paused(&db);
    // Paused: the syncs from here on are the roll's (the new MANIFEST, CURRENT.tmp, the
    // directory). An image at each, with the unsynced bytes dropped or kept.
    let images: Arc<Mutex<Vec<MemFs>>> = Arc::default();
    let (mem, taken) = (run.mem.clone(), images.clone());
    run.mem.set_sync_hook(Some(Arc::new(move |_| {
        let mut taken = taken.lock().unwrap();
        taken.push(mem.crash_image(CrashMode::DropUnsynced));
        taken.push(mem.crash_image(CrashMode::Torn { seed: 1 }));
    })));
    run.fault.remove_rule(rule);
    db.resume().unwrap();
    run.mem.set_sync_hook(None);
    let images = std::mem::take(&mut *images.lock().unwrap());
    assert!(
        images.len() >= 6,
        "the roll synced fewer than 3 times: {} images",
        images.len()
    );
    for (i, image) in images.into_iter().enumerate() {
        run.check_reopen(Arc::new(image), &format!("image {i} of the roll"));
    }
    check_resumed(run, db, &failed_manifest, "after the roll");
}

#[test]
fn a_failed_compaction_edit_pauses_writes_and_the_compaction_runs_after_the_roll() {
    let mut run = Run::new();
    let mut options = Run::options(Arc::new(run.fault.clone()));
    // Two L0 tables and no background compaction: the manual one below is the only edit.
    options.default_keyspace.write_buffer_size = 1 << 20;
    options.default_keyspace.level0_compaction_trigger = 20;
    options.default_keyspace.level0_slowdown_writes_trigger = 30;
    options.default_keyspace.level0_stop_writes_trigger = 40;
    options.wal_synced_record_interval = Duration::ZERO;
    let db = Db::open(DIR, options).unwrap();
    for _ in 0..2 {
        for _ in 0..20 {
            run.write(&db).unwrap();
        }
        db.flush().unwrap();
    }
    db.wait_for_background_work().unwrap();
    assert_eq!(level0_tables(&db), 2);
    let failed_manifest = current(&run.mem);
    let rule = run.fault.add_rule(
        FaultRule::new(OpKind::Append, FaultTrigger::Always, FaultError::NoSpace)
            .path_contains("MANIFEST"),
    );
    match db.compact_range(&db.default_keyspace(), None, None) {
        Err(Error::Paused { reason }) => assert!(
            reason.contains("recording a compaction in the MANIFEST failed")
                && reason.contains("ENOSPC"),
            "{reason}"
        ),
        other => panic!("not a pause: {other:?}"),
    }
    // Not installed: the inputs are still the live tables, and they are on disk.
    assert_eq!(level0_tables(&db), 2, "{:?}", db.current_version());
    assert_consistent_on_disk(&run, &db, "compaction edit failed");
    assert!(matches!(db.put(b"p", b"v"), Err(Error::Paused { .. })));
    run.fault.remove_rule(rule);
    db.resume().unwrap();
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();
    assert_eq!(level0_tables(&db), 0, "{:?}", db.current_version());
    assert_consistent_on_disk(&run, &db, "after the roll");
    run.assert_acked_present(&db, "after the roll");
    check_resumed(run, db, &failed_manifest, "compaction after the roll");
}

#[test]
fn a_keyspace_change_whose_edit_failed_can_be_made_again_after_the_roll() {
    let mut run = Run::new();
    let db = run.open();
    run.write(&db).unwrap();
    let failed_manifest = current(&run.mem);
    let rule = run.fault.add_rule(
        FaultRule::new(
            OpKind::SyncData,
            FaultTrigger::Always,
            FaultError::FailedSync,
        )
        .path_contains(failed_manifest.as_str()),
    );
    match db.create_keyspace("users", KeyspaceOptions::default()) {
        Err(Error::Paused { reason }) => assert!(
            reason.contains("creating keyspace \"users\"") && reason.contains("failed sync"),
            "{reason}"
        ),
        other => panic!("not a pause: {:?}", other.map(|_| ())),
    }
    assert!(db.keyspace("users").is_none());
    run.fault.remove_rule(rule);
    db.resume().unwrap();
    let users = db
        .create_keyspace("users", KeyspaceOptions::default())
        .unwrap();
    // The failed creation took id 1 (the first after the default keyspace's 0); a MANIFEST
    // left in doubt may name it, so it is never handed out again.
    assert_eq!(users.id(), 2);
    users.put(b"u", b"1").unwrap();
    run.write(&db).unwrap();
    db.close().unwrap();
    let db = Db::open(DIR, Run::options(Arc::new(run.mem.clone()))).unwrap();
    assert_eq!(
        db.keyspace("users").unwrap().get(b"u").unwrap().as_deref(),
        Some(&b"1"[..])
    );
    run.assert_acked_present(&db, "after reopen");
    db.close().unwrap();
}
