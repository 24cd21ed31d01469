//! DROP TABLE, DROP DATABASE and TRUNCATE TABLE beside write transactions (fence.rs,
//! invariant 5): they wait for the transactions that wrote before them, so no committed
//! write brings rows back after them; writers that come later wait, then find the table gone
//! or empty; a wait that times out leaves the table as it was.

use std::sync::Arc;
use std::time::Duration;

use shale_engine::{Options, ReadOptions};
use shale_fs::MemFs;
use shale_table::{
    ColumnDef, ColumnType, Error, IndexChoice, IndexDef, KeyRange, LockMode, Store, StoreOptions,
    TableDef, TxnOptions, Value,
};

const INT: ColumnType = ColumnType::Int { unsigned: false };

fn open(fs: &MemFs, ddl_wait: Option<Duration>) -> Store {
    let options = StoreOptions {
        engine: Options {
            file_system: Arc::new(fs.clone()),
            ..Options::default()
        },
        ddl_wait_timeout: ddl_wait,
        ..StoreOptions::default()
    };
    Store::open("/db", options).unwrap()
}

fn column(name: &str) -> ColumnDef {
    ColumnDef {
        name: name.into(),
        ty: INT,
        nullable: true,
        default: None,
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    }
}

/// `d.t (id INT PRIMARY KEY, k INT, v INT, KEY k (k))` with rows `(id, id * 10, 0)` for
/// ids `0..n`.
fn setup(store: &Store, n: i64) -> Arc<TableDef> {
    store.create_database("d").unwrap();
    let index = |name: &str, columns| IndexDef {
        name: name.into(),
        columns,
        unique: false,
        index_id: 0,
    };
    let t = store
        .create_table(TableDef {
            database: "d".into(),
            name: "t".into(),
            columns: vec![column("id"), column("k"), column("v")],
            primary_key: index("PRIMARY", vec![0]),
            indexes: vec![index("k", vec![1])],
            schema_version: 0,
            past_versions: Vec::new(),
        })
        .unwrap();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in 0..n {
        txn.insert(&t, row(id, 0)).unwrap();
    }
    txn.commit().unwrap();
    t
}

fn row(id: i64, v: i64) -> Vec<Value> {
    vec![Value::Int(id), Value::Int(id * 10), Value::Int(v)]
}

/// A transaction that has updated `v` (no index uses it) of row 1 and not committed yet.
fn open_update(store: &Store, t: &TableDef) -> shale_table::TableTxn {
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    txn.update(t, &row(1, 0), row(1, 5)).unwrap();
    txn
}

/// The rows of `d.t`, after checking that its indexes agree with them.
fn rows(store: &Store) -> Vec<Vec<Value>> {
    let t = store.catalog().table("d", "t").unwrap().clone();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let check = txn.check_table(&t).unwrap();
    assert!(check.is_ok(), "indexes disagree with rows: {check:?}");
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
    while let Some(row) = cursor.next_row().unwrap() {
        out.push(row);
    }
    out
}

/// How many keys the engine holds under `index_id` (visible or not to any definition).
fn keys_under(store: &Store, index_id: u32) -> usize {
    let db = store.engine().db();
    let start = index_id.to_be_bytes().to_vec();
    let end = (index_id + 1).to_be_bytes().to_vec();
    let mut iter = db
        .iterator(ReadOptions {
            lower_bound: Some(start),
            upper_bound: Some(end),
            ..ReadOptions::default()
        })
        .unwrap();
    iter.seek_to_first();
    let mut n = 0;
    while iter.valid() {
        n += 1;
        iter.next();
    }
    n
}

fn missing(error: &Error) -> bool {
    matches!(error, Error::NoSuchTable { database, table } if database == "d" && table == "t")
}

#[test]
fn truncate_waits_for_a_transaction_that_updated_the_table_and_its_row_stays_gone() {
    let fs = MemFs::new();
    let store = Arc::new(open(&fs, None));
    let t = setup(&store, 100);
    let early = open_update(&store, &t);
    let truncate = {
        let store = store.clone();
        std::thread::spawn(move || store.truncate_table("d", "t"))
    };
    std::thread::sleep(Duration::from_millis(100));
    let waited = !truncate.is_finished();
    // A writer that comes now waits at the fence, then writes into the emptied table (READ
    // COMMITTED, as an autocommit statement: under REPEATABLE READ its snapshot would be
    // older than the truncation, and its write a conflict, Error::Deadlock).
    let late = {
        let (store, t) = (store.clone(), t.clone());
        std::thread::spawn(move || {
            let mut txn = store
                .begin(TxnOptions {
                    isolation: shale_engine::IsolationLevel::ReadCommitted,
                    ..TxnOptions::default()
                })
                .unwrap();
            txn.insert(&t, row(500, 1)).unwrap();
            txn.commit().unwrap();
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    let late_waited = !late.is_finished();
    early.commit().unwrap();
    truncate.join().unwrap().unwrap();
    late.join().unwrap();
    // Without the wait, the update committed after the range tombstones brings row 1 back
    // without its entry in `k`.
    assert_eq!(rows(&store), vec![row(500, 1)]);
    assert!(
        waited,
        "TRUNCATE did not wait for the open transaction that updated the table"
    );
    assert!(late_waited, "a later writer passed the fence");
    drop(store);
    assert_eq!(rows(&open(&fs, None)), vec![row(500, 1)]);
}

#[test]
fn drop_waits_for_a_transaction_that_updated_the_table_and_leaves_no_key_behind() {
    let fs = MemFs::new();
    let store = Arc::new(open(&fs, None));
    let t = setup(&store, 100);
    let early = open_update(&store, &t);
    let drop_table = {
        let store = store.clone();
        std::thread::spawn(move || store.drop_table("d", "t"))
    };
    std::thread::sleep(Duration::from_millis(100));
    let waited = !drop_table.is_finished();
    // A writer that comes now waits at the fence, then finds the table gone.
    let late = {
        let (store, t) = (store.clone(), t.clone());
        std::thread::spawn(move || {
            let mut txn = store.begin(TxnOptions::default()).unwrap();
            txn.insert(&t, row(500, 1)).unwrap_err()
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    let late_waited = !late.is_finished();
    early.commit().unwrap();
    drop_table.join().unwrap().unwrap();
    let error = late.join().unwrap();
    assert!(store.catalog().table("d", "t").is_none());
    // Without the wait, the update committed after the range tombstones leaves row 1 under
    // the dropped id.
    for index_id in [t.primary_key.index_id, t.indexes[0].index_id] {
        assert_eq!(
            keys_under(&store, index_id),
            0,
            "keys left under {index_id}"
        );
    }
    assert!(
        waited,
        "DROP TABLE did not wait for the open transaction that updated the table"
    );
    assert!(late_waited, "a later writer passed the fence");
    assert!(missing(&error), "{error:?}");
    // Reads and writes still bound to the dropped definition fail as a missing table.
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    assert!(missing(
        &txn.get(&t, &[Value::Int(2)], LockMode::None).unwrap_err()
    ));
    assert!(missing(&txn.delete(&t, &row(2, 0)).unwrap_err()));
    let scan = txn.scan(
        &t,
        IndexChoice::Primary,
        KeyRange::all(),
        false,
        LockMode::None,
    );
    assert!(missing(&scan.err().unwrap()));
}

#[test]
fn drop_database_waits_for_a_writer_of_its_tables() {
    let fs = MemFs::new();
    let store = Arc::new(open(&fs, None));
    let t = setup(&store, 10);
    let early = open_update(&store, &t);
    let drop_database = {
        let store = store.clone();
        std::thread::spawn(move || store.drop_database("d"))
    };
    std::thread::sleep(Duration::from_millis(100));
    assert!(!drop_database.is_finished());
    early.commit().unwrap();
    drop_database.join().unwrap().unwrap();
    assert_eq!(keys_under(&store, t.primary_key.index_id), 0);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    assert!(missing(&txn.insert(&t, row(500, 1)).unwrap_err()));
}

#[test]
fn a_wait_that_times_out_leaves_the_table_as_it_was() {
    let fs = MemFs::new();
    let store = Arc::new(open(&fs, Some(Duration::from_millis(200))));
    let t = setup(&store, 10);
    let early = open_update(&store, &t);
    assert!(matches!(
        store.truncate_table("d", "t"),
        Err(Error::LockWaitTimeout)
    ));
    assert!(matches!(
        store.drop_table("d", "t"),
        Err(Error::LockWaitTimeout)
    ));
    assert!(matches!(
        store.drop_database("d"),
        Err(Error::LockWaitTimeout)
    ));
    // The fences came down: the open transaction and new ones go on writing.
    let mut early = early;
    early.insert(&t, row(100, 0)).unwrap();
    early.commit().unwrap();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    txn.insert(&t, row(101, 0)).unwrap();
    txn.commit().unwrap();
    let got = rows(&store);
    assert_eq!(got.len(), 12);
    assert!(got.contains(&row(1, 5)));
    store.truncate_table("d", "t").unwrap();
    assert!(rows(&store).is_empty());
}
