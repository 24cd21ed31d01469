//! A rewriting ALTER TABLE beside writers of the same table (fence.rs, shadow.rs): no
//! committed row is lost, writers that began before it are waited for, those that write
//! during the copy are waited for at the switch, those that come at the switch wait and then
//! must bind again (`Error::TableDefChanged`), and a failed wait leaves the table as it was.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use shale_engine::Options;
use shale_fs::MemFs;
use shale_table::{
    AlterMethod, Collation, ColumnDef, ColumnSource, ColumnType, Error, IndexChoice, IndexDef,
    KeyRange, LockMode, Store, StoreOptions, TableChange, TableDef, TxnOptions, Value,
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

fn column(name: &str, ty: ColumnType) -> ColumnDef {
    ColumnDef {
        name: name.into(),
        ty,
        nullable: true,
        default: None,
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    }
}

/// `t (id INT PRIMARY KEY, k INT, c VARCHAR(20), KEY kc (k, c))` with ids `0..n`.
fn setup(store: &Store, n: i64) {
    store.create_database("d").unwrap();
    let varchar = ColumnType::VarChar {
        len: 20,
        collation: Collation::Utf8mb4GeneralCi,
    };
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
            columns: vec![column("id", INT), column("k", INT), column("c", varchar)],
            primary_key: index("PRIMARY", vec![0]),
            indexes: vec![index("kc", vec![1, 2])],
            schema_version: 0,
            past_versions: Vec::new(),
        })
        .unwrap();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in 0..n {
        txn.insert(&t, row(&t, id)).unwrap();
    }
    txn.commit().unwrap();
}

/// Row `id` shaped for `t` as it is now (with or without `c`).
fn row(t: &TableDef, id: i64) -> Vec<Value> {
    let mut row = vec![Value::Int(id), Value::Int(id % 7)];
    if t.columns.len() == 3 {
        row.push(Value::Bytes(format!("row {id}").into_bytes()));
    }
    row
}

fn table(store: &Store) -> Arc<TableDef> {
    store.catalog().table("d", "t").unwrap().clone()
}

/// DROP COLUMN c, which rewrites every row under new ids (an index uses c).
fn drop_c(store: &Store) -> Result<AlterMethod, Error> {
    let mut def = (*table(store)).clone();
    def.columns.pop();
    def.indexes[0].columns = vec![1];
    let sources = vec![ColumnSource::Stored(0), ColumnSource::Stored(1)];
    store
        .alter_table(
            "d",
            "t",
            TableChange { def, sources },
            Arc::new(|_: &ColumnDef, _: &ColumnDef, v: Value, _: u64| Ok::<_, Error>(v)),
        )
        .map(|(_, method)| method)
}

fn ids(store: &Store) -> BTreeSet<i64> {
    let t = table(store);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    assert!(
        txn.check_table(&t).unwrap().is_ok(),
        "indexes agree with rows"
    );
    let mut cursor = txn
        .scan(
            &t,
            IndexChoice::Primary,
            KeyRange::all(),
            false,
            LockMode::None,
        )
        .unwrap();
    let mut out = BTreeSet::new();
    while let Some(row) = cursor.next_row().unwrap() {
        let Value::Int(id) = row[0] else {
            panic!("{row:?}")
        };
        out.insert(id);
    }
    out
}

/// Inserts `id` in its own transaction, binding to the catalog's definition again when told
/// it changed (as the SQL layer binds a statement again); true once committed.
fn insert_committed(store: &Store, id: i64) -> bool {
    loop {
        let t = table(store);
        let mut txn = store.begin(TxnOptions::default()).unwrap();
        match txn.insert(&t, row(&t, id)) {
            Ok(()) => return txn.commit().is_ok(),
            Err(Error::TableDefChanged { table }) => {
                assert_eq!(table, "t");
                txn.rollback();
            }
            Err(e) => panic!("insert {id}: {e}"),
        }
    }
}

#[test]
fn rows_committed_while_a_rewrite_runs_are_all_in_the_new_table() {
    let fs = MemFs::new();
    let store = Arc::new(open(&fs, None));
    setup(&store, 20_000);
    let stop = Arc::new(AtomicBool::new(false));
    let committed = Arc::new(Mutex::new(BTreeSet::new()));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (store, stop, committed) = (store.clone(), stop.clone(), committed.clone());
            std::thread::spawn(move || {
                let mut id = 1_000_000 * (w + 1);
                while !stop.load(Ordering::SeqCst) {
                    if insert_committed(&store, id) {
                        committed.lock().unwrap().insert(id);
                    }
                    id += 1;
                }
            })
        })
        .collect();
    // Let the writers get going, so some write while the rewrite reads its snapshot.
    while committed.lock().unwrap().len() < 50 {
        std::thread::yield_now();
    }
    let method = drop_c(&store).unwrap();
    assert!(
        matches!(method, AlterMethod::Rewrite { rows } if rows >= 20_050),
        "{method:?}"
    );
    let after_alter = committed.lock().unwrap().len();
    while committed.lock().unwrap().len() < after_alter + 50 {
        std::thread::yield_now();
    }
    stop.store(true, Ordering::SeqCst);
    for writer in writers {
        writer.join().unwrap();
    }
    assert_eq!(table(&store).columns.len(), 2);
    let committed = committed.lock().unwrap().clone();
    let got = ids(&store);
    let lost: Vec<_> = committed.difference(&got).take(10).collect();
    assert!(
        lost.is_empty(),
        "committed rows lost by the rewrite: {lost:?}"
    );
    assert_eq!(got.len(), 20_000 + committed.len());
    drop(store);
    assert_eq!(ids(&open(&fs, None)), got);
}

#[test]
fn a_writer_that_began_first_is_waited_for_and_a_stale_definition_must_bind_again() {
    let fs = MemFs::new();
    let store = Arc::new(open(&fs, None));
    setup(&store, 100);
    let old = table(&store);
    // An open transaction wrote the table before the ALTER: the ALTER waits for it.
    let mut early = store.begin(TxnOptions::default()).unwrap();
    early.insert(&old, row(&old, 500)).unwrap();
    let alter = {
        let store = store.clone();
        std::thread::spawn(move || drop_c(&store))
    };
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !alter.is_finished(),
        "the ALTER did not wait for the older writer"
    );
    // It may go on writing the table: the ALTER has not read its snapshot yet.
    early.insert(&old, row(&old, 501)).unwrap();
    early.commit().unwrap();
    assert!(matches!(
        alter.join().unwrap().unwrap(),
        AlterMethod::Rewrite { rows: 102 }
    ));
    // A statement still bound to the old definition can neither write nor read.
    let mut late = store.begin(TxnOptions::default()).unwrap();
    assert!(matches!(
        late.insert(&old, row(&old, 600)),
        Err(Error::TableDefChanged { .. })
    ));
    assert!(matches!(
        late.get(&old, &[Value::Int(1)], LockMode::None),
        Err(Error::TableDefChanged { .. })
    ));
    assert!(matches!(
        late.scan(
            &old,
            IndexChoice::Primary,
            KeyRange::all(),
            false,
            LockMode::None
        ),
        Err(Error::TableDefChanged { .. })
    ));
    // Bound again, it works.
    let new = table(&store);
    late.insert(&new, row(&new, 600)).unwrap();
    late.commit().unwrap();
    let got = ids(&store);
    assert!(got.contains(&500) && got.contains(&501) && got.contains(&600));
    assert_eq!(got.len(), 103);
}

#[test]
fn a_writer_goes_on_during_the_copy_and_one_that_comes_at_the_switch_waits_for_it() {
    let fs = MemFs::new();
    let store = Arc::new(open(&fs, None));
    setup(&store, 100);
    let old = table(&store);
    // An older writer holds the ALTER at its first wait.
    let mut early = store.begin(TxnOptions::default()).unwrap();
    early.insert(&old, row(&old, 500)).unwrap();
    let alter = {
        let store = store.clone();
        std::thread::spawn(move || drop_c(&store))
    };
    std::thread::sleep(Duration::from_millis(50));
    // A writer that begins now is not held (the rewrite is online, shale-table's shadow.rs):
    // it writes the new definition too, and the switch waits for it.
    let mut middle = store.begin(TxnOptions::default()).unwrap();
    middle.insert(&old, row(&old, 600)).unwrap();
    early.commit().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !alter.is_finished(),
        "the switch did not wait for the writer"
    );
    // One that begins writing now waits at the fence until the switch, then is told to bind
    // again.
    let late = {
        let (store, old) = (store.clone(), old.clone());
        std::thread::spawn(move || {
            let mut txn = store.begin(TxnOptions::default()).unwrap();
            txn.insert(&old, row(&old, 700))
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !late.is_finished(),
        "the later writer did not wait at the fence"
    );
    middle.insert(&old, row(&old, 601)).unwrap();
    middle.commit().unwrap();
    alter.join().unwrap().unwrap();
    assert!(matches!(
        late.join().unwrap(),
        Err(Error::TableDefChanged { .. })
    ));
    let got = ids(&store);
    assert!(got.contains(&500) && got.contains(&600) && got.contains(&601));
    assert!(!got.contains(&700));
    assert_eq!(got.len(), 103);
}

#[test]
fn a_rewrite_that_times_out_waiting_leaves_the_table_as_it_was_and_writable() {
    let fs = MemFs::new();
    let store = Arc::new(open(&fs, Some(Duration::from_millis(200))));
    setup(&store, 100);
    let old = table(&store);
    let mut early = store.begin(TxnOptions::default()).unwrap();
    early.insert(&old, row(&old, 500)).unwrap();
    assert!(matches!(drop_c(&store), Err(Error::LockWaitTimeout)));
    assert_eq!(table(&store).columns.len(), 3);
    early.insert(&old, row(&old, 501)).unwrap();
    early.commit().unwrap();
    // The fence is down: a new writer with the old (still current) definition goes on.
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    txn.insert(&old, row(&old, 502)).unwrap();
    txn.commit().unwrap();
    assert_eq!(ids(&store).len(), 103);
    drop(store);
    assert_eq!(ids(&open(&fs, None)).len(), 103);
}
