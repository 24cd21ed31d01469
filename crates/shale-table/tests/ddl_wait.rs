//! What DDL on a table waits for (online.rs, fence.rs): the write transactions that wrote
//! that table before it, not those that wrote only other tables. A transaction that writes
//! the table for the first time while the DDL runs maintains what the DDL builds, or waits at
//! its fence.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shale_engine::Options;
use shale_fs::MemFs;
use shale_table::{
    AlterMethod, ColumnDef, ColumnSource, ColumnType, ConvertFn, Error, IndexChoice, IndexDef,
    KeyRange, LockMode, Store, StoreOptions, TableChange, TableDef, TxnOptions, Value,
};

const INT: ColumnType = ColumnType::Int { unsigned: false };

fn open(ddl_wait: Duration) -> Arc<Store> {
    let store = Store::open(
        "/db",
        StoreOptions {
            engine: Options {
                file_system: Arc::new(MemFs::new()),
                ..Options::default()
            },
            ddl_wait_timeout: Some(ddl_wait),
            ..StoreOptions::default()
        },
    )
    .unwrap();
    store.create_database("d").unwrap();
    for name in ["a", "b"] {
        let table = store.create_table(table(name)).unwrap();
        let mut txn = store.begin(TxnOptions::default()).unwrap();
        for id in 0..1_000 {
            txn.insert(&table, row(id)).unwrap();
        }
        txn.commit().unwrap();
    }
    Arc::new(store)
}

/// `name (id INT PRIMARY KEY, k INT, c INT)`.
fn table(name: &str) -> TableDef {
    let column = |name: &str| ColumnDef {
        name: name.into(),
        ty: INT,
        nullable: true,
        default: None,
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    };
    TableDef {
        database: "d".into(),
        name: name.into(),
        columns: vec![column("id"), column("k"), column("c")],
        primary_key: index("PRIMARY", 0),
        indexes: vec![],
        schema_version: 0,
        past_versions: Vec::new(),
    }
}

fn index(name: &str, column: usize) -> IndexDef {
    IndexDef {
        name: name.into(),
        columns: vec![column],
        unique: false,
        index_id: 0,
    }
}

fn row(id: i64) -> Vec<Value> {
    vec![Value::Int(id), Value::Int(id % 7), Value::Int(id)]
}

fn current(store: &Store, name: &str) -> Arc<TableDef> {
    store.catalog().table("d", name).unwrap().clone()
}

/// ALTER TABLE `name` MODIFY c INT UNSIGNED, ADD KEY c (c): a rewrite; `convert` sees
/// every row.
fn rewrite(store: &Store, name: &str, convert: ConvertFn<Error>) -> Result<AlterMethod, Error> {
    let mut def = (*current(store, name)).clone();
    def.columns[2].ty = ColumnType::Int { unsigned: true };
    def.indexes.push(index("c", 2));
    let sources = (0..3).map(ColumnSource::Stored).collect();
    store
        .alter_table("d", name, TableChange { def, sources }, convert)
        .map(|(_, method)| method)
}

/// The conversion to INT UNSIGNED (every `c` here is at least 0).
fn same(_: &ColumnDef, _: &ColumnDef, v: Value, _: u64) -> Result<Value, Error> {
    match v {
        Value::Int(c) => u64::try_from(c)
            .map(Value::UInt)
            .map_err(|_| Error::InvalidArgument(format!("{c} is below 0"))),
        other => Ok(other),
    }
}

fn ids(store: &Store, name: &str) -> Vec<i64> {
    let t = current(store, name);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let check = txn.check_table(&t).unwrap();
    assert!(check.is_ok(), "{name}: {check:?}");
    let mut cursor = txn
        .scan(
            &t,
            IndexChoice::Primary,
            KeyRange::all(),
            false,
            LockMode::None,
        )
        .unwrap();
    let mut out = Vec::new();
    while let Some(r) = cursor.next_row().unwrap() {
        match r[0] {
            Value::Int(id) => out.push(id),
            ref other => panic!("{other:?}"),
        }
    }
    out
}

/// Regression: every DDL waited for every open write transaction, whatever it wrote.
#[test]
fn a_transaction_open_on_another_table_does_not_hold_up_ddl() {
    let store = open(Duration::from_millis(300));
    let a = current(&store, "a");
    let mut open_on_a = store.begin(TxnOptions::default()).unwrap();
    open_on_a.insert(&a, row(5_000)).unwrap();
    store.create_index("d", "b", index("k", 1)).unwrap();
    assert!(matches!(
        rewrite(&store, "b", Arc::new(same)),
        Ok(AlterMethod::Rewrite { rows: 1_000 })
    ));
    store.truncate_table("d", "b").unwrap();
    store.drop_table("d", "b").unwrap();
    open_on_a.commit().unwrap();
    assert_eq!(ids(&store, "a").len(), 1_001);
}

#[test]
fn a_transaction_that_wrote_the_table_holds_up_ddl_on_it() {
    let store = open(Duration::from_millis(300));
    let (a, b) = (current(&store, "a"), current(&store, "b"));
    let mut open = store.begin(TxnOptions::default()).unwrap();
    open.insert(&a, row(5_000)).unwrap();
    open.insert(&b, row(5_000)).unwrap();
    assert!(matches!(
        store.create_index("d", "b", index("k", 1)),
        Err(Error::LockWaitTimeout)
    ));
    assert!(matches!(
        rewrite(&store, "b", Arc::new(same)),
        Err(Error::LockWaitTimeout)
    ));
    assert!(matches!(
        store.truncate_table("d", "b"),
        Err(Error::LockWaitTimeout)
    ));
    assert_eq!(current(&store, "b"), b);
    // Once it ends, the DDL goes through, with its row.
    let started = Instant::now();
    let altering = {
        let store = store.clone();
        std::thread::spawn(move || rewrite(&store, "b", Arc::new(same)))
    };
    std::thread::sleep(Duration::from_millis(50));
    open.commit().unwrap();
    assert!(matches!(
        altering.join().unwrap(),
        Ok(AlterMethod::Rewrite { rows: 1_001 })
    ));
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert_eq!(ids(&store, "b").len(), 1_001);
}

/// A transaction that wrote another table before the ALTER began and writes the altered
/// table during its copy: it is not waited for at the start, maintains the new definition,
/// and is waited for at the switch, so its row is in the rewritten table.
#[test]
fn a_transaction_older_than_the_alter_that_writes_its_table_during_the_copy_is_kept() {
    let store = open(Duration::from_secs(30));
    let (a, b) = (current(&store, "a"), current(&store, "b"));
    let mut open = store.begin(TxnOptions::default()).unwrap();
    open.insert(&a, row(5_000)).unwrap();
    let (reached, resume) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    // The copy pauses at its 500th row until the transaction has written b.
    let convert: ConvertFn<Error> = {
        let (reached, resume) = (reached.clone(), resume.clone());
        Arc::new(move |was, column, v, row| {
            if row == 500 {
                reached.store(true, Ordering::SeqCst);
                let deadline = Instant::now() + Duration::from_secs(30);
                while !resume.load(Ordering::SeqCst) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            same(was, column, v, row)
        })
    };
    let altering = {
        let store = store.clone();
        std::thread::spawn(move || rewrite(&store, "b", convert))
    };
    while !reached.load(Ordering::SeqCst) {
        assert!(
            !altering.is_finished(),
            "the copy ended before its 500th row"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    open.insert(&b, row(6_000)).unwrap();
    let old = open
        .get(&b, &[Value::Int(900)], LockMode::Exclusive)
        .unwrap()
        .unwrap();
    open.delete(&b, &old).unwrap();
    resume.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !altering.is_finished(),
        "the switch waits for the writer of b"
    );
    open.commit().unwrap();
    assert!(matches!(
        altering.join().unwrap(),
        Ok(AlterMethod::Rewrite { .. })
    ));
    let got = ids(&store, "b");
    assert_eq!(got.len(), 1_000);
    assert!(got.contains(&6_000) && !got.contains(&900));
    assert_eq!(ids(&store, "a").len(), 1_001);
}
