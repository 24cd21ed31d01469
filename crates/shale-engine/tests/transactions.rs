//! Behaviour of transactions (docs/transactions.md): isolation, locking, deadlocks, timeouts,
//! read-your-own-writes, savepoints, size cap, bulk mode and optimistic transactions.

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{
    BulkCommit, Error, IsolationLevel, Options, ReadOptions, TransactionDb, TransactionDbOptions,
    TransactionError, TransactionOptions,
};
use shale_fs::MemFs;

fn open_with(txn_options: TransactionDbOptions) -> TransactionDb {
    let options = Options {
        file_system: Arc::new(MemFs::new()),
        ..Options::default()
    };
    TransactionDb::open("/db", options, txn_options).unwrap()
}

fn open() -> TransactionDb {
    open_with(TransactionDbOptions::default())
}

fn rc() -> TransactionOptions {
    TransactionOptions {
        isolation: IsolationLevel::ReadCommitted,
        ..TransactionOptions::default()
    }
}

fn rr() -> TransactionOptions {
    TransactionOptions::default()
}

fn txn_error(result: Result<impl std::fmt::Debug, Error>) -> TransactionError {
    match result {
        Err(Error::Transaction(e)) => e,
        other => panic!("expected a transaction error, got {other:?}"),
    }
}

#[test]
fn no_dirty_reads() {
    let db = open();
    db.db().put(b"x", b"committed").unwrap();
    let mut writer = db.begin(rc()).unwrap();
    writer.put(b"x", b"dirty").unwrap();
    writer.put(b"y", b"dirty").unwrap();
    assert_eq!(
        writer.get(b"x").unwrap(),
        Some(b"dirty".to_vec()),
        "own write"
    );
    for options in [rc(), rr()] {
        let mut reader = db.begin(options).unwrap();
        assert_eq!(reader.get(b"x").unwrap(), Some(b"committed".to_vec()));
        assert_eq!(reader.get(b"y").unwrap(), None);
    }
    assert_eq!(db.db().get(b"x").unwrap(), Some(b"committed".to_vec()));
    writer.rollback();
    assert_eq!(db.db().get(b"y").unwrap(), None);
    assert_eq!(
        db.stats().rollbacks,
        3,
        "two readers dropped, one rolled back"
    );
}

#[test]
fn repeatable_read_keeps_its_snapshot_and_refuses_stale_writes() {
    let db = open();
    db.db().put(b"x", b"1").unwrap();
    let mut repeatable = db.begin(rr()).unwrap();
    let mut committed = db.begin(rc()).unwrap();
    assert_eq!(repeatable.get(b"x").unwrap(), Some(b"1".to_vec()));
    assert_eq!(committed.get(b"x").unwrap(), Some(b"1".to_vec()));
    let mut other = db.begin(rc()).unwrap();
    other.put(b"x", b"2").unwrap();
    other.commit().unwrap();
    assert_eq!(repeatable.get(b"x").unwrap(), Some(b"1".to_vec()), "RR");
    assert_eq!(committed.get(b"x").unwrap(), Some(b"2".to_vec()), "RC");
    // The iterator reads the same snapshot.
    let mut iter = repeatable.iterator(ReadOptions::default()).unwrap();
    iter.seek_to_first();
    assert_eq!((iter.key(), iter.value()), (&b"x"[..], &b"1"[..]));
    // Writing or locking a row changed after the snapshot fails, as in MyRocks.
    let error = txn_error(repeatable.put(b"x", b"3"));
    assert!(
        matches!(error, TransactionError::SnapshotConflict { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("\"x\""), "{error}");
    let error = txn_error(repeatable.get_for_update(b"x"));
    assert!(matches!(error, TransactionError::SnapshotConflict { .. }));
    // A row not changed since the snapshot can be written.
    repeatable.put(b"y", b"fine").unwrap();
    repeatable.commit().unwrap();
    // Under RC the same write goes through.
    committed.put(b"x", b"4").unwrap();
    committed.commit().unwrap();
    assert_eq!(db.db().get(b"x").unwrap(), Some(b"4".to_vec()));
    assert_eq!(db.db().get(b"y").unwrap(), Some(b"fine".to_vec()));
    assert_eq!(db.stats().snapshot_conflicts, 2);
}

/// Concurrent increments of one counter: with `get_for_update` none is lost.
fn increments(db: &TransactionDb, options: &TransactionOptions, threads: usize, each: usize) {
    db.db().put(b"counter", b"0").unwrap();
    thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut done = 0;
                while done < each {
                    let mut txn = db.begin(options.clone()).unwrap();
                    let value = match txn.get_for_update(b"counter") {
                        Ok(value) => value.unwrap(),
                        Err(Error::Transaction(TransactionError::SnapshotConflict { .. })) => {
                            continue
                        }
                        Err(e) => panic!("{e}"),
                    };
                    let n: u64 = std::str::from_utf8(&value).unwrap().parse().unwrap();
                    txn.put(b"counter", (n + 1).to_string().as_bytes()).unwrap();
                    txn.commit().unwrap();
                    done += 1;
                }
            });
        }
    });
    let total = (threads * each).to_string();
    assert_eq!(db.db().get(b"counter").unwrap(), Some(total.into_bytes()));
}

#[test]
fn no_lost_updates_under_locking() {
    let db = open();
    increments(&db, &rc(), 8, 40);
    assert_eq!(db.stats().snapshot_conflicts, 0, "RC never conflicts");
    assert!(db.stats().commits >= 320);
    let db = open();
    increments(&db, &rr(), 8, 40);
}

#[test]
fn deadlock_is_detected_and_the_youngest_rolled_back() {
    let db = open();
    let barrier = Barrier::new(2);
    let (older_result, younger_result) = thread::scope(|scope| {
        let older = scope.spawn(|| {
            let mut txn = db.begin(rc()).unwrap();
            txn.put(b"a", b"older").unwrap();
            barrier.wait();
            // Wait until the younger one is waiting for "a" before closing the cycle.
            while db.stats().lock_waits == 0 {
                thread::yield_now();
            }
            let result = txn.put(b"b", b"older");
            (result.map(|()| txn.commit()), db.stats())
        });
        let younger = scope.spawn(|| {
            barrier.wait();
            let mut txn = db.begin(rc()).unwrap();
            txn.put(b"b", b"younger").unwrap();
            // Give the older transaction its "a" first: it began before the barrier.
            let result = txn.put(b"a", b"younger");
            let after = txn.put(b"c", b"younger");
            (result, after)
        });
        (older.join().unwrap(), younger.join().unwrap())
    });
    let (older, _) = older_result;
    older.unwrap().unwrap();
    let error = txn_error(younger_result.0);
    match &error {
        TransactionError::Deadlock { victim, key, .. } => {
            assert!(*victim > 1, "the younger transaction is the victim");
            assert_eq!(key, "\"a\"");
        }
        other => panic!("{other:?}"),
    }
    assert!(error.to_string().contains("deadlock"), "{error}");
    // The victim was rolled back whole and refuses further work.
    let after = txn_error(younger_result.1);
    assert!(
        matches!(after, TransactionError::InvalidState { .. }),
        "{after}"
    );
    assert_eq!(db.db().get(b"a").unwrap(), Some(b"older".to_vec()));
    assert_eq!(db.db().get(b"b").unwrap(), Some(b"older".to_vec()));
    assert_eq!(db.db().get(b"c").unwrap(), None);
    assert_eq!(db.stats().deadlocks, 1);
}

#[test]
fn lock_wait_timeout_is_honoured_and_only_fails_the_statement() {
    let db = open_with(TransactionDbOptions {
        lock_wait_timeout: Duration::from_millis(150),
        ..TransactionDbOptions::default()
    });
    let mut holder = db.begin(rc()).unwrap();
    holder.get_for_update(b"row").unwrap();
    let mut waiter = db.begin(rc()).unwrap();
    waiter.put(b"other", b"kept").unwrap();
    let start = Instant::now();
    let error = txn_error(waiter.put(b"row", b"x"));
    let elapsed = start.elapsed();
    assert!(elapsed >= Duration::from_millis(150), "{elapsed:?}");
    match &error {
        TransactionError::LockTimeout { holders, key, .. } => {
            assert_eq!(holders, &vec![holder.id()]);
            assert_eq!(key, "\"row\"");
        }
        other => panic!("{other:?}"),
    }
    // A per-transaction timeout overrides the database's.
    let mut quick = db
        .begin(TransactionOptions {
            lock_wait_timeout: Some(Duration::ZERO),
            ..rc()
        })
        .unwrap();
    assert!(quick.get_for_share(b"row").is_err());
    drop(quick);
    holder.commit().unwrap();
    waiter.put(b"row", b"x").unwrap();
    waiter.commit().unwrap();
    assert_eq!(db.db().get(b"other").unwrap(), Some(b"kept".to_vec()));
    let stats = db.stats();
    assert_eq!(stats.lock_timeouts, 2);
    assert_eq!(stats.lock_waits, 2);
}

#[test]
fn shared_locks_admit_readers_and_block_writers() {
    let db = open_with(TransactionDbOptions {
        lock_wait_timeout: Duration::from_millis(30),
        ..TransactionDbOptions::default()
    });
    db.db().put(b"k", b"v").unwrap();
    let mut a = db.begin(rc()).unwrap();
    let mut b = db.begin(rc()).unwrap();
    assert_eq!(a.get_for_share(b"k").unwrap(), Some(b"v".to_vec()));
    assert_eq!(b.get_for_share(b"k").unwrap(), Some(b"v".to_vec()));
    let mut c = db.begin(rc()).unwrap();
    assert!(matches!(
        txn_error(c.put(b"k", b"w")),
        TransactionError::LockTimeout { .. }
    ));
    a.rollback();
    b.rollback();
    c.put(b"k", b"w").unwrap();
    c.commit().unwrap();
}

#[test]
fn savepoints_undo_changes_since() {
    let db = open();
    db.db().put(b"a", b"0").unwrap();
    let mut txn = db.begin(rr()).unwrap();
    txn.put(b"a", b"1").unwrap();
    txn.set_savepoint();
    txn.put(b"b", b"2").unwrap();
    txn.delete(b"a").unwrap();
    txn.set_savepoint();
    txn.put(b"c", b"3").unwrap();
    txn.rollback_to_savepoint().unwrap();
    assert_eq!(txn.get(b"c").unwrap(), None);
    assert_eq!(txn.get(b"a").unwrap(), None);
    txn.rollback_to_savepoint().unwrap();
    assert_eq!(txn.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(txn.get(b"b").unwrap(), None);
    assert!(matches!(
        txn_error(txn.rollback_to_savepoint()),
        TransactionError::InvalidState { .. }
    ));
    txn.set_savepoint();
    txn.put(b"d", b"4").unwrap();
    txn.pop_savepoint().unwrap();
    txn.commit().unwrap();
    assert_eq!(db.db().get(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.db().get(b"b").unwrap(), None);
    assert_eq!(db.db().get(b"d").unwrap(), Some(b"4".to_vec()));
}

#[test]
fn memory_cap_gives_a_clear_error_and_keeps_the_transaction() {
    let db = open();
    let mut txn = db
        .begin(TransactionOptions {
            max_bytes: Some(1000),
            ..rc()
        })
        .unwrap();
    txn.put(b"small", &[7; 100]).unwrap();
    let error = txn_error(txn.put(b"big", &[7; 1000]));
    assert!(matches!(
        error,
        TransactionError::TooLarge { limit: 1000, .. }
    ));
    assert!(error.to_string().contains("max_bytes"), "{error}");
    txn.commit().unwrap();
    assert_eq!(db.db().get(b"small").unwrap(), Some(vec![7; 100]));
    assert_eq!(db.db().get(b"big").unwrap(), None);
}

#[test]
fn bulk_mode_commits_in_the_middle() {
    let db = open();
    let mut txn = db
        .begin(TransactionOptions {
            bulk: Some(BulkCommit {
                rows: 10,
                bytes: 1 << 20,
            }),
            max_bytes: Some(20 * 200),
            ..rr()
        })
        .unwrap();
    for i in 0..35u32 {
        txn.put(format!("row{i:03}").as_bytes(), &[1; 64]).unwrap();
    }
    assert_eq!(txn.pending_rows(), 5);
    assert_eq!(db.db().get(b"row029").unwrap(), Some(vec![1; 64]));
    assert_eq!(db.db().get(b"row030").unwrap(), None);
    txn.commit().unwrap();
    assert_eq!(db.db().get(b"row034").unwrap(), Some(vec![1; 64]));
    assert_eq!(db.stats().bulk_commits, 3);
    // Without bulk mode the same load hits the cap.
    let mut txn = db
        .begin(TransactionOptions {
            max_bytes: Some(20 * 200),
            ..rr()
        })
        .unwrap();
    let failed = (0..35u32).find(|i| {
        txn.put(format!("again{i:03}").as_bytes(), &[1; 64])
            .is_err()
    });
    assert!(failed.is_some());
    let refused = db.begin(TransactionOptions {
        bulk: Some(BulkCommit { rows: 0, bytes: 1 }),
        ..rr()
    });
    assert!(matches!(refused, Err(Error::InvalidArgument(_))));
}

#[test]
fn optimistic_transactions_validate_at_commit() {
    let db = open();
    db.db().put(b"x", b"0").unwrap();
    let mut first = db.begin_optimistic(TransactionOptions::default()).unwrap();
    let mut second = db.begin_optimistic(TransactionOptions::default()).unwrap();
    assert_eq!(first.get(b"x").unwrap(), Some(b"0".to_vec()));
    assert_eq!(second.get(b"x").unwrap(), Some(b"0".to_vec()));
    first.put(b"x", b"1").unwrap();
    second.put(b"x", b"2").unwrap();
    first.commit().unwrap();
    let error = txn_error(second.commit());
    assert!(
        matches!(error, TransactionError::OptimisticConflict { .. }),
        "{error}"
    );
    assert_eq!(db.db().get(b"x").unwrap(), Some(b"1".to_vec()));
    // A read-only conflict counts too: the read key changed.
    let mut reader = db.begin_optimistic(TransactionOptions::default()).unwrap();
    reader.get(b"x").unwrap();
    reader.put(b"y", b"derived").unwrap();
    db.db().put(b"x", b"changed").unwrap();
    assert!(reader.commit().is_err());
    assert_eq!(db.db().get(b"y").unwrap(), None);
    // Disjoint keys commit.
    let mut a = db.begin_optimistic(TransactionOptions::default()).unwrap();
    let mut b = db.begin_optimistic(TransactionOptions::default()).unwrap();
    a.put(b"p", b"1").unwrap();
    b.put(b"q", b"1").unwrap();
    a.commit().unwrap();
    b.commit().unwrap();
    assert_eq!(db.stats().optimistic_conflicts, 2);
}

/// Random database contents and random uncommitted changes: the transaction's iterator, in
/// both directions, with bounds and seeks, matches a `BTreeMap` of the merged view.
#[test]
fn iterator_merges_own_writes_with_the_database() {
    let mut rng = SmallRng::seed_from_u64(0x7a11);
    for round in 0..40 {
        let db = open();
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let key = |rng: &mut SmallRng| format!("k{:02}", rng.gen_range(0..30)).into_bytes();
        for _ in 0..rng.gen_range(0..25) {
            let k = key(&mut rng);
            db.db().put(&k, b"db").unwrap();
            model.insert(k, b"db".to_vec());
        }
        if round % 3 == 0 {
            db.db().flush().unwrap();
        }
        let mut txn = db.begin(rc()).unwrap();
        for i in 0..rng.gen_range(0..25) {
            let k = key(&mut rng);
            if rng.gen_bool(0.3) {
                txn.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = format!("txn{i}").into_bytes();
                txn.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        let lower = rng.gen_bool(0.5).then(|| key(&mut rng));
        let upper = rng.gen_bool(0.5).then(|| key(&mut rng));
        let in_bounds = |k: &[u8]| {
            lower.as_deref().is_none_or(|l| k >= l) && upper.as_deref().is_none_or(|u| k < u)
        };
        let expected: Vec<(Vec<u8>, Vec<u8>)> = model
            .iter()
            .filter(|(k, _)| in_bounds(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut iter = txn
            .iterator(ReadOptions {
                lower_bound: lower.clone(),
                upper_bound: upper.clone(),
                ..ReadOptions::default()
            })
            .unwrap();
        let mut forward = Vec::new();
        iter.seek_to_first();
        while iter.valid() {
            forward.push((iter.key().to_vec(), iter.value().to_vec()));
            iter.next();
        }
        assert_eq!(forward, expected, "round {round} forward");
        let mut backward = Vec::new();
        iter.seek_to_last();
        while iter.valid() {
            backward.push((iter.key().to_vec(), iter.value().to_vec()));
            iter.prev();
        }
        backward.reverse();
        assert_eq!(backward, expected, "round {round} backward");
        // Random seeks and direction changes.
        for _ in 0..20 {
            let target = key(&mut rng);
            let at = expected.partition_point(|(k, _)| k < &target);
            if rng.gen_bool(0.5) {
                iter.seek(&target);
                let want = expected.get(at);
                assert_eq!(iter.valid(), want.is_some(), "round {round} seek");
                if let Some((k, _)) = want {
                    assert_eq!(iter.key(), &k[..]);
                    iter.prev();
                    let before = at.checked_sub(1).and_then(|i| expected.get(i));
                    assert_eq!(iter.valid(), before.is_some(), "round {round} prev");
                    if let Some((k, v)) = before {
                        assert_eq!((iter.key(), iter.value()), (&k[..], &v[..]));
                        iter.next();
                        assert_eq!(iter.key(), &expected[at].0[..], "round {round} next");
                    }
                }
            } else {
                iter.seek_for_prev(&target);
                let at = expected.partition_point(|(k, _)| k <= &target);
                let want = at.checked_sub(1).and_then(|i| expected.get(i));
                assert_eq!(iter.valid(), want.is_some(), "round {round} seek_for_prev");
                if let Some((k, _)) = want {
                    assert_eq!(iter.key(), &k[..]);
                    iter.next();
                    assert_eq!(
                        iter.valid(),
                        at < expected.len(),
                        "round {round} next after seek_for_prev"
                    );
                    if at < expected.len() {
                        assert_eq!(iter.key(), &expected[at].0[..]);
                    }
                }
            }
        }
        iter.status().unwrap();
    }
}

/// Sets its flag when dropped, also by a panic.
struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Writers keep changing rows while REPEATABLE READ readers read them twice, by point reads
/// and by iterator: each reader sees the same values both times, and the sum every writer
/// preserves.
#[test]
fn repeatable_reads_under_concurrent_writers() {
    let db = open();
    for i in 0..20u32 {
        db.db().put(format!("r{i:02}").as_bytes(), b"100").unwrap();
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    thread::scope(|scope| {
        for w in 0..3u64 {
            let (db, stop) = (&db, &stop);
            scope.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(w);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let a = format!("r{:02}", rng.gen_range(0..20)).into_bytes();
                    let b = format!("r{:02}", rng.gen_range(0..20)).into_bytes();
                    if a == b {
                        continue;
                    }
                    let mut txn = db.begin(rc()).unwrap();
                    let Ok(Some(va)) = txn.get_for_update(&a) else {
                        continue;
                    };
                    let Ok(Some(vb)) = txn.get_for_update(&b) else {
                        continue;
                    };
                    let va: i64 = std::str::from_utf8(&va).unwrap().parse().unwrap();
                    let vb: i64 = std::str::from_utf8(&vb).unwrap().parse().unwrap();
                    txn.put(&a, (va - 1).to_string().as_bytes()).unwrap();
                    txn.put(&b, (vb + 1).to_string().as_bytes()).unwrap();
                    txn.commit().unwrap();
                }
            });
        }
        // Stops the writers however the readers end (a failed assertion must not hang).
        let _stop_writers = StopOnDrop(&stop);
        for _ in 0..30 {
            let mut reader = db.begin(rr()).unwrap();
            let read = |txn: &mut shale_engine::Transaction<'_>| -> Vec<Vec<u8>> {
                (0..20u32)
                    .map(|i| txn.get(format!("r{i:02}").as_bytes()).unwrap().unwrap())
                    .collect()
            };
            let first = read(&mut reader);
            thread::sleep(Duration::from_millis(2));
            let second = read(&mut reader);
            assert_eq!(first, second, "RR point reads repeat");
            let mut iter = reader.iterator(ReadOptions::default()).unwrap();
            let mut scanned = Vec::new();
            iter.seek_to_first();
            while iter.valid() {
                scanned.push(iter.value().to_vec());
                iter.next();
            }
            assert_eq!(scanned, first, "RR iterator matches point reads");
            let sum: i64 = first
                .iter()
                .map(|v| std::str::from_utf8(v).unwrap().parse::<i64>().unwrap())
                .sum();
            assert_eq!(sum, 2000);
        }
    });
    assert!(db.stats().commits > 0);
}

/// Optimistic read-modify-write from 8 threads, retried on conflict: no update is lost.
#[test]
fn optimistic_increments_lose_nothing() {
    let db = open();
    db.db().put(b"n", b"0").unwrap();
    thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                let mut done = 0;
                while done < 25 {
                    let mut txn = db.begin_optimistic(TransactionOptions::default()).unwrap();
                    let n: u64 = std::str::from_utf8(&txn.get(b"n").unwrap().unwrap())
                        .unwrap()
                        .parse()
                        .unwrap();
                    // Widen the read-to-commit window so that threads overlap.
                    thread::sleep(Duration::from_micros(200));
                    txn.put(b"n", (n + 1).to_string().as_bytes()).unwrap();
                    match txn.commit() {
                        Ok(()) => done += 1,
                        Err(Error::Transaction(TransactionError::OptimisticConflict {
                            ..
                        })) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
            });
        }
    });
    assert_eq!(db.db().get(b"n").unwrap(), Some(b"200".to_vec()));
    assert!(
        db.stats().optimistic_conflicts > 0,
        "the threads overlapped"
    );
}

/// The conflict check finds changes wherever they live: memtable, L0, lower levels after
/// compaction, and range deletions covering the key.
#[test]
fn snapshot_conflicts_see_flushed_compacted_and_range_deleted_changes() {
    let options = Options {
        file_system: Arc::new(MemFs::new()),
        default_keyspace: shale_engine::KeyspaceOptions {
            level0_compaction_trigger: 2,
            ..shale_engine::KeyspaceOptions::default()
        },
        ..Options::default()
    };
    let db = TransactionDb::open("/db", options, TransactionDbOptions::default()).unwrap();
    for round in 0..3 {
        for key in [&b"a"[..], b"b", b"c", b"m", b"z"] {
            db.db().put(key, format!("{round}").as_bytes()).unwrap();
        }
        db.db().flush().unwrap();
    }
    db.db().wait_for_background_work().unwrap();
    let counts = db
        .db()
        .level_file_counts(&db.db().default_keyspace())
        .unwrap();
    assert!(
        counts.iter().skip(1).any(|&n| n > 0),
        "compacted: {counts:?}"
    );

    let mut txn = db.begin(rr()).unwrap();
    // Unchanged keys in table files do not conflict.
    txn.put(b"a", b"mine").unwrap();
    // "y" changes after the snapshot and is compacted below L0; "m" stays in L0.
    db.db().put(b"y", b"later").unwrap();
    let keyspace = db.db().default_keyspace();
    let mut counts = Vec::new();
    for _ in 0..4 {
        db.db().flush().unwrap();
        db.db().wait_for_background_work().unwrap();
        counts = db.db().level_file_counts(&keyspace).unwrap();
        if counts[0] == 0 {
            break;
        }
        db.db().put(b"n", b"filler").unwrap();
    }
    assert_eq!(counts[0], 0, "compacted: {counts:?}");
    assert!(
        matches!(
            txn_error(txn.put(b"y", b"x")),
            TransactionError::SnapshotConflict { .. }
        ),
        "a change compacted below L0"
    );
    db.db().put(b"m", b"later").unwrap();
    db.db().flush().unwrap();
    db.db().delete_range(b"b", b"c").unwrap();
    assert!(
        matches!(
            txn_error(txn.put(b"m", b"x")),
            TransactionError::SnapshotConflict { .. }
        ),
        "a change flushed to L0"
    );
    assert!(
        matches!(
            txn_error(txn.get_for_update(b"b")),
            TransactionError::SnapshotConflict { .. }
        ),
        "a covering range deletion"
    );
    // "c" is the range's exclusive end and "z" is untouched.
    txn.put(b"c", b"mine").unwrap();
    txn.delete(b"z").unwrap();
    txn.commit().unwrap();
    assert_eq!(db.db().get(b"a").unwrap(), Some(b"mine".to_vec()));
    assert_eq!(db.db().get(b"z").unwrap(), None);
}

#[test]
fn shared_transaction_outlives_its_borrow_and_locks_across_threads() {
    let tdb = Arc::new(open());
    // A session keeps its transaction between commands, on whichever thread runs it.
    let mut held = tdb.begin_shared(rr()).unwrap();
    held.put(b"k", b"v1").unwrap();
    let held = thread::spawn(move || held).join().unwrap();
    let other = Arc::clone(&tdb);
    let blocked = thread::spawn(move || {
        let mut txn = other
            .begin_shared(TransactionOptions {
                lock_wait_timeout: Some(Duration::from_millis(50)),
                ..rr()
            })
            .unwrap();
        txn_error(txn.put(b"k", b"v2"))
    })
    .join()
    .unwrap();
    assert!(
        matches!(blocked, TransactionError::LockTimeout { .. }),
        "{blocked:?}"
    );
    held.commit().unwrap();
    assert_eq!(tdb.db().get(b"k").unwrap().as_deref(), Some(&b"v1"[..]));
}

#[test]
fn untracked_writes_take_no_lock_and_skip_the_conflict_check() {
    let db = open();
    db.db().put(b"entry", b"old").unwrap();
    let mut first = db.begin(rr()).unwrap();
    // A committed change after `first`'s snapshot: a tracked write would conflict.
    db.db().put(b"entry", b"newer").unwrap();
    first.put_untracked(b"entry", b"first").unwrap();
    first.put_untracked(b"other", b"1").unwrap();
    assert_eq!(
        first.get(b"entry").unwrap(),
        Some(b"first".to_vec()),
        "own write"
    );
    // No lock is held: another transaction writes the same key at once.
    let mut second = db
        .begin(TransactionOptions {
            lock_wait_timeout: Some(Duration::from_millis(1)),
            ..rc()
        })
        .unwrap();
    second.put(b"entry", b"second").unwrap();
    second.put(b"other", b"2").unwrap();
    second.commit().unwrap();
    first.delete_untracked(b"other").unwrap();
    first.commit().unwrap();
    let stats = db.stats();
    assert_eq!((stats.lock_waits, stats.snapshot_conflicts), (0, 0));
    assert_eq!(db.db().get(b"entry").unwrap(), Some(b"first".to_vec()));
    assert_eq!(db.db().get(b"other").unwrap(), None);

    // Savepoints undo untracked writes as any other.
    let mut txn = db.begin(rr()).unwrap();
    txn.set_savepoint();
    txn.put_untracked(b"undone", b"x").unwrap();
    txn.rollback_to_savepoint().unwrap();
    txn.commit().unwrap();
    assert_eq!(db.db().get(b"undone").unwrap(), None);
}
