//! CREATE INDEX while other transactions write the table (online.rs): the index ends up
//! holding exactly one entry per row, whichever definition the writers were bound to.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{IsolationLevel, Options, TransactionDbOptions};
use shale_fs::MemFs;
use shale_table::{
    ColumnDef, ColumnType, Error, IndexDef, LockMode, Store, StoreOptions, TableDef, TxnOptions,
    Value,
};

fn store(ddl_wait: Option<Duration>) -> Arc<Store> {
    let store = Store::open(
        "/db",
        StoreOptions {
            engine: Options {
                file_system: Arc::new(MemFs::new()),
                ..Options::default()
            },
            transactions: TransactionDbOptions {
                lock_wait_timeout: Duration::from_millis(500),
                ..TransactionDbOptions::default()
            },
            ddl_wait_timeout: ddl_wait,
        },
    )
    .unwrap();
    store.create_database("d").unwrap();
    let column = |name: &str| ColumnDef {
        name: name.into(),
        ty: ColumnType::BigInt { unsigned: false },
        nullable: false,
        default: None,
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    };
    store
        .create_table(TableDef {
            database: "d".into(),
            name: "t".into(),
            columns: vec![column("id"), column("k"), column("u")],
            primary_key: IndexDef {
                name: "PRIMARY".into(),
                columns: vec![0],
                unique: true,
                index_id: 0,
            },
            indexes: vec![],
            schema_version: 0,
            past_versions: Vec::new(),
        })
        .unwrap();
    Arc::new(store)
}

fn index(name: &str, column: usize, unique: bool) -> IndexDef {
    IndexDef {
        name: name.into(),
        columns: vec![column],
        unique,
        index_id: 0,
    }
}

fn current(store: &Store) -> Arc<TableDef> {
    store.catalog().table("d", "t").unwrap().clone()
}

/// `u` is unique by construction: it encodes the row's id.
fn row(id: i64, k: i64, generation: i64) -> Vec<Value> {
    vec![
        Value::Int(id),
        Value::Int(k),
        Value::Int(id * 1_000_000 + generation),
    ]
}

fn load(store: &Store, rows: i64) {
    let table = current(store);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in 0..rows {
        txn.insert(&table, row(id, id % 97, 0)).unwrap();
    }
    txn.commit().unwrap();
}

fn assert_whole(store: &Store) {
    let table = current(store);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let check = txn.check_table(&table).unwrap();
    assert!(check.is_ok(), "{check:?}");
}

/// One random change to a random row, through `table` (maybe a definition older than the
/// index being built). Conflicts are expected and skipped.
fn random_change(store: &Store, table: &TableDef, rng: &mut SmallRng, ids: i64) {
    let isolation = if rng.gen_bool(0.5) {
        IsolationLevel::ReadCommitted
    } else {
        IsolationLevel::RepeatableRead
    };
    let mut txn = store
        .begin(TxnOptions {
            isolation,
            ..TxnOptions::default()
        })
        .unwrap();
    let result = (|| -> Result<(), Error> {
        for _ in 0..rng.gen_range(1..4) {
            let id = rng.gen_range(0..ids);
            let old = txn.get(table, &[Value::Int(id)], LockMode::Exclusive)?;
            let generation = rng.gen_range(1..1_000_000);
            match (old, rng.gen_range(0..3)) {
                (None, _) => match txn.insert(table, row(id, rng.gen_range(0..50), generation)) {
                    Err(Error::DuplicateKey { .. }) | Ok(()) => {}
                    Err(e) => return Err(e),
                },
                (Some(old), 0) => txn.delete(table, &old)?,
                (Some(old), _) => {
                    let new_id = if rng.gen_bool(0.2) {
                        rng.gen_range(0..ids)
                    } else {
                        id
                    };
                    match txn.update(table, &old, row(new_id, rng.gen_range(0..50), generation)) {
                        Err(Error::DuplicateKey { .. }) | Ok(()) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(())
    })();
    match result {
        Ok(()) if rng.gen_bool(0.8) => match txn.commit() {
            Ok(()) | Err(Error::Deadlock | Error::LockWaitTimeout) => {}
            Err(e) => panic!("commit: {e}"),
        },
        Ok(()) | Err(Error::Deadlock | Error::LockWaitTimeout) => txn.rollback(),
        Err(e) => panic!("write: {e}"),
    }
}

#[test]
fn indexes_built_under_writers_hold_one_entry_per_row() {
    let store = store(None);
    let ids = 6_000;
    load(&store, ids / 2);
    let stale = current(&store);
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3)
        .map(|seed| {
            let (store, stale, stop) = (store.clone(), stale.clone(), stop.clone());
            thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed);
                let mut changes = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    // Half the writes use the definition from before the builds.
                    let table = if rng.gen_bool(0.5) {
                        stale.clone()
                    } else {
                        current(&store)
                    };
                    random_change(&store, &table, &mut rng, ids);
                    changes += 1;
                }
                changes
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(50));
    store.create_index("d", "t", index("k", 1, false)).unwrap();
    store.create_index("d", "t", index("u", 2, true)).unwrap();
    thread::sleep(Duration::from_millis(50));
    stop.store(true, Ordering::Relaxed);
    let changes: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    assert!(changes > 0);
    let table = current(&store);
    assert_eq!(table.indexes.len(), 2);
    assert_whole(&store);
}

#[test]
fn a_duplicate_from_a_writer_during_the_build_fails_it_or_the_write() {
    for attempt in 0..4u64 {
        let store = store(None);
        load(&store, 3_000);
        let stale = current(&store);
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (store, stale, stop) = (store.clone(), stale.clone(), stop.clone());
            thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(attempt);
                let mut id = 10_000;
                while !stop.load(Ordering::Relaxed) {
                    // `u` of an existing row: a duplicate for the unique index being built.
                    let mut duplicate = row(id, 0, 0);
                    duplicate[2] = Value::Int(rng.gen_range(0..3_000) * 1_000_000);
                    let mut txn = store.begin(TxnOptions::default()).unwrap();
                    match txn.insert(&stale, duplicate) {
                        Ok(()) => {
                            let _ = txn.commit();
                        }
                        Err(Error::DuplicateKey { .. }) => return, // the index was published
                        // A fill transaction wrote the key after this one's snapshot.
                        Err(Error::Deadlock | Error::LockWaitTimeout) => {}
                        Err(e) => panic!("{e}"),
                    }
                    id += 1;
                    thread::sleep(Duration::from_millis(rng.gen_range(0..3)));
                }
            })
        };
        thread::sleep(Duration::from_millis((attempt % 2) * 5));
        let built = store.create_index("d", "t", index("u", 2, true));
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        match built {
            Err(Error::DuplicateKey { key, .. }) => {
                assert_eq!(key, "u");
                assert!(current(&store).indexes.is_empty());
            }
            // Built: the index is there, and `assert_whole` below finds one entry per row, so
            // no duplicate got in.
            Ok(()) => assert_eq!(current(&store).indexes.len(), 1),
            Err(e) => panic!("{e}"),
        }
        assert_whole(&store);
    }
}

#[test]
fn the_build_waits_for_write_transactions_that_began_before_it() {
    let store = store(Some(Duration::from_millis(200)));
    load(&store, 100);
    let table = current(&store);
    let mut open = store.begin(TxnOptions::default()).unwrap();
    open.insert(&table, row(500, 7, 0)).unwrap();
    // The open writer's row is not committed, so no snapshot shows it: the build waits.
    assert!(matches!(
        store.create_index("d", "t", index("k", 1, false)),
        Err(Error::LockWaitTimeout)
    ));
    assert!(current(&store).indexes.is_empty());
    let started = Instant::now();
    let builder = {
        let store = store.clone();
        thread::spawn(move || store.create_index("d", "t", index("k", 1, false)))
    };
    thread::sleep(Duration::from_millis(50));
    open.commit().unwrap();
    builder.join().unwrap().unwrap();
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert_eq!(current(&store).indexes.len(), 1);
    assert_whole(&store);
}

#[test]
fn a_definition_from_before_the_index_still_maintains_it() {
    let store = store(None);
    load(&store, 10);
    let stale = current(&store);
    store.create_index("d", "t", index("u", 2, true)).unwrap();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    txn.insert(&stale, row(20, 1, 0)).unwrap();
    let old = txn
        .get(&stale, &[Value::Int(3)], LockMode::Exclusive)
        .unwrap()
        .unwrap();
    txn.update(&stale, &old, row(3, 2, 5)).unwrap();
    let old = txn
        .get(&stale, &[Value::Int(4)], LockMode::Exclusive)
        .unwrap()
        .unwrap();
    txn.delete(&stale, &old).unwrap();
    // The index is published: a duplicate through the old definition is refused.
    let mut duplicate = row(21, 0, 0);
    duplicate[2] = Value::Int(5_000_000);
    assert!(matches!(
        txn.insert(&stale, duplicate),
        Err(Error::DuplicateKey { ref key, .. }) if key == "u"
    ));
    txn.commit().unwrap();
    assert_whole(&store);
}

/// Whether any key of index id `id` is in the engine (committed).
fn has_keys_of(store: &Store, id: u32) -> bool {
    let db = store.engine().db();
    let mut iter = db.iterator(shale_engine::ReadOptions::default()).unwrap();
    iter.seek(&id.to_be_bytes());
    iter.valid() && iter.key().starts_with(&id.to_be_bytes())
}

/// Regression: a REPEATABLE READ writer whose snapshot is older than an entry the fill wrote
/// failed with a snapshot conflict (`Error::Deadlock`, 1213) when its update moved that
/// entry: it locked the entry with a plain locking read, which validates against its
/// snapshot. The entry is the build's, not a change the writer's snapshot governs.
#[test]
fn a_repeatable_read_writer_older_than_the_fill_moves_a_filled_unique_entry() {
    let store = store(None);
    load(&store, 1_000);
    let table = current(&store);
    // Snapshot taken now; no write yet, so the build does not wait for it.
    let mut writer = store.begin(TxnOptions::default()).unwrap();
    let old = writer
        .get(&table, &[Value::Int(5)], LockMode::None)
        .unwrap()
        .unwrap();
    // A read lock on the last row (no write: not waited for) stalls the fill's last chunk
    // after the first ones committed.
    let mut holder = store
        .begin(TxnOptions {
            isolation: IsolationLevel::ReadCommitted,
            ..TxnOptions::default()
        })
        .unwrap();
    holder
        .get(&table, &[Value::Int(999)], LockMode::Exclusive)
        .unwrap()
        .unwrap();
    let index_id = table.primary_key.index_id + 1;
    let builder = {
        let store = store.clone();
        thread::spawn(move || store.create_index("d", "t", index("u", 2, true)))
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !has_keys_of(&store, index_id) {
        assert!(Instant::now() < deadline, "the fill wrote nothing");
        thread::sleep(Duration::from_millis(1));
    }
    // Row 5's entry is committed by the fill, after the writer's snapshot.
    writer.update(&table, &old, row(5, 1, 7)).unwrap();
    writer.commit().unwrap();
    holder.rollback();
    builder.join().unwrap().unwrap();
    assert_whole(&store);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let now = txn
        .get(&current(&store), &[Value::Int(5)], LockMode::None)
        .unwrap()
        .unwrap();
    assert_eq!(now, row(5, 1, 7));
}
