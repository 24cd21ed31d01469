//! Group commit groups (issue claim): with many writers under `Durability::Sync`, one WAL
//! sync covers the commits that queued behind it, so the WAL is synced far fewer times than
//! there are commits. Syncs are counted through the file system seam and made slow (as a
//! real device's are), so writers overlap even on a loaded machine.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use shale_engine::{Db, Durability, Options, WriteBatch, WriteOptions, DEFAULT_KEYSPACE_ID};
use shale_fs::{FaultFs, MemFs, Op};

/// How long each WAL sync takes.
const SYNC_TIME: Duration = Duration::from_millis(2);

/// Opens a database with counted, slow WAL syncs; runs `writers` threads each committing
/// `commits` one-key batches with `WriteOptions::sync()`; returns the WAL syncs they caused.
fn syncs_for(writers: usize, commits: usize) -> usize {
    let syncs = Arc::new(AtomicUsize::new(0));
    let counter = syncs.clone();
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    fs.set_hook(move |call| {
        // Either way of syncing: the file's own sync or its concurrent syncer's.
        if call.op == Op::SyncData && call.has_extension("wal") {
            std::thread::sleep(SYNC_TIME);
            counter.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    });
    let db = Arc::new(
        Db::open(
            "/db",
            Options {
                file_system: Arc::new(fs),
                durability: Durability::Sync,
                ..Options::default()
            },
        )
        .unwrap(),
    );
    let before = syncs.load(Ordering::SeqCst);
    let threads: Vec<_> = (0..writers)
        .map(|w| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..commits {
                    let mut batch = WriteBatch::new();
                    let key = format!("w{w:02}-{i:05}");
                    batch
                        .put(DEFAULT_KEYSPACE_ID, key.as_bytes(), b"v")
                        .unwrap();
                    db.write(batch, &WriteOptions::sync()).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let used = syncs.load(Ordering::SeqCst) - before;
    // Every commit is there (and was acknowledged only after a sync covering it).
    for w in 0..writers {
        for i in 0..commits {
            let key = format!("w{w:02}-{i:05}");
            assert!(db.get(key.as_bytes()).unwrap().is_some(), "{key}");
        }
    }
    used
}

#[test]
fn a_lone_writer_syncs_once_per_commit() {
    // The counter sees every sync: nothing to group with, so one sync per commit.
    let syncs = syncs_for(1, 50);
    assert!(syncs >= 50, "{syncs} syncs for 50 commits");
}

#[test]
fn many_writers_under_sync_share_wal_syncs() {
    let (writers, commits) = (8, 60);
    let syncs = syncs_for(writers, commits);
    let total = writers * commits;
    println!("{total} commits by {writers} writers: {syncs} WAL syncs");
    // If every writer synced alone there would be `total` syncs; with seven writers queued
    // behind each 2 ms sync, a group holds several commits.
    assert!(syncs * 2 <= total, "{syncs} WAL syncs for {total} commits");
}
