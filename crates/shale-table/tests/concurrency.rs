//! Transactions on many threads: unique keys stay unique, indexes stay in agreement with
//! rows, conflicts surface as `MySQL`'s retryable errors.

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{IsolationLevel, Options, TransactionDbOptions};
use shale_fs::MemFs;
use shale_table::{
    ColumnDef, ColumnType, Error, IndexChoice, IndexDef, KeyRange, LockMode, Store, StoreOptions,
    TableDef, TxnOptions, Value,
};

fn store() -> (Store, Arc<TableDef>) {
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
            ..StoreOptions::default()
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
    let t = store
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
            indexes: vec![
                IndexDef {
                    name: "k".into(),
                    columns: vec![1],
                    unique: false,
                    index_id: 0,
                },
                IndexDef {
                    name: "u".into(),
                    columns: vec![2],
                    unique: true,
                    index_id: 0,
                },
            ],
            schema_version: 0,
            past_versions: Vec::new(),
        })
        .unwrap();
    (store, t)
}

fn retryable(error: &Error) -> bool {
    matches!(error, Error::Deadlock | Error::LockWaitTimeout)
}

#[test]
fn racing_inserts_of_one_unique_value_admit_exactly_one() {
    for isolation in [
        IsolationLevel::ReadCommitted,
        IsolationLevel::RepeatableRead,
    ] {
        let (store, t) = store();
        let store = Arc::new(store);
        let threads = 4;
        let barrier = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (store, t, barrier) = (store.clone(), t.clone(), barrier.clone());
                thread::spawn(move || {
                    let mut txn = store
                        .begin(TxnOptions {
                            isolation,
                            ..TxnOptions::default()
                        })
                        .unwrap();
                    barrier.wait();
                    let id = i64::try_from(i).unwrap();
                    let result =
                        txn.insert(&t, vec![Value::Int(id), Value::Int(0), Value::Int(42)]);
                    thread::sleep(Duration::from_millis(20));
                    match result {
                        Ok(()) => txn.commit().map(|()| true),
                        Err(e) => Err(e),
                    }
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let won = results.iter().filter(|r| matches!(r, Ok(true))).count();
        assert_eq!(won, 1, "{isolation:?}: {results:?}");
        for result in &results {
            if let Err(e) = result {
                assert!(
                    matches!(e, Error::DuplicateKey { .. }) || retryable(e),
                    "{isolation:?}: {e:?}"
                );
            }
        }
        let mut txn = store.begin(TxnOptions::default()).unwrap();
        let check = txn.check_table(&t).unwrap();
        assert!(check.is_ok() && check.rows == 1, "{check:?}");
    }
}

#[test]
fn concurrent_sysbench_like_updates_keep_indexes_consistent() {
    let (store, t) = store();
    let rows = 50i64;
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in 0..rows {
        txn.insert(&t, vec![Value::Int(id), Value::Int(id % 5), Value::Int(id)])
            .unwrap();
    }
    txn.commit().unwrap();
    let store = Arc::new(store);
    let handles: Vec<_> = (0..4u64)
        .map(|seed| {
            let (store, t) = (store.clone(), t.clone());
            thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed);
                let isolation = if seed % 2 == 0 {
                    IsolationLevel::RepeatableRead
                } else {
                    IsolationLevel::ReadCommitted
                };
                let mut committed = 0;
                for _ in 0..150 {
                    let mut txn = store
                        .begin(TxnOptions {
                            isolation,
                            ..TxnOptions::default()
                        })
                        .unwrap();
                    let outcome = (|| -> Result<(), Error> {
                        for _ in 0..3 {
                            let id = rng.gen_range(0..rows);
                            let Some(old) = txn.get(&t, &[Value::Int(id)], LockMode::Exclusive)?
                            else {
                                continue;
                            };
                            let mut new = old.clone();
                            new[1] = Value::Int(rng.gen_range(0..5));
                            txn.update(&t, &old, new)?;
                        }
                        // a short range read through the secondary index
                        let k = rng.gen_range(0..5);
                        let mut cursor = txn.scan(
                            &t,
                            IndexChoice::Secondary(0),
                            KeyRange::prefix(vec![Value::Int(k)]),
                            false,
                            LockMode::None,
                        )?;
                        while let Some(row) = cursor.next_row()? {
                            assert_eq!(row.len(), 3);
                        }
                        Ok(())
                    })();
                    match outcome {
                        Ok(()) => {
                            txn.commit().unwrap();
                            committed += 1;
                        }
                        Err(e) if retryable(&e) => txn.rollback(),
                        Err(e) => panic!("unexpected {e:?}"),
                    }
                }
                committed
            })
        })
        .collect();
    let committed: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(committed > 100, "only {committed} transactions committed");
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let check = txn.check_table(&t).unwrap();
    assert!(check.is_ok(), "{check:?}");
    assert_eq!(check.rows, 50);
}
