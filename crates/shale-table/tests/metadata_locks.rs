//! Metadata locks as an embedder sees them (`metadata_lock.rs`): DDL waits for a transaction
//! that only read its table, a wait ends at the thread's `MetadataWait` timeout or when its
//! `LockWaiter` says the caller was killed, and a reader's transaction keeps reading the
//! table until it ends. Waits are observed through the `LockWaiter`, never by sleeping.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use shale_engine::Options;
use shale_fs::MemFs;
use shale_table::{
    ColumnDef, ColumnType, Error, IndexDef, LockMode, LockWaiter, MetadataWait, Store,
    StoreOptions, TableDef, TxnOptions, Value,
};

const LONG: Duration = Duration::from_secs(60);

fn open() -> Arc<Store> {
    let store = Store::open(
        "/db",
        StoreOptions {
            engine: Options {
                file_system: Arc::new(MemFs::new()),
                ..Options::default()
            },
            ..StoreOptions::default()
        },
    )
    .unwrap();
    store.create_database("d").unwrap();
    let column = |name: &str| ColumnDef {
        name: name.into(),
        ty: ColumnType::Int { unsigned: false },
        nullable: true,
        default: None,
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    };
    let table = store
        .create_table(TableDef {
            database: "d".into(),
            name: "t".into(),
            columns: vec![column("id"), column("v")],
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
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in 0..10 {
        txn.insert(&table, vec![Value::Int(id), Value::Int(id)])
            .unwrap();
    }
    txn.commit().unwrap();
    Arc::new(store)
}

/// Counts the waits it is told of; says "killed" once `killed` is set.
#[derive(Default)]
struct Caller {
    waits: AtomicU32,
    killed: AtomicBool,
}

impl LockWaiter for Caller {
    fn interrupted(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }
    fn waiting(&self, waiting: bool) {
        if waiting {
            self.waits.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Runs `ddl` on a thread with `caller` as its waiter and `timeout`; returns once the DDL
/// waits.
fn spawn_waiting(
    store: &Arc<Store>,
    caller: &Arc<Caller>,
    timeout: Duration,
    ddl: fn(&Store) -> shale_table::Result<()>,
) -> std::thread::JoinHandle<shale_table::Result<()>> {
    let handle = {
        let (store, caller) = (store.clone(), caller.clone());
        std::thread::spawn(move || {
            let _wait = MetadataWait {
                timeout,
                waiter: Some(caller),
                owner: None,
            }
            .install();
            ddl(&store)
        })
    };
    while caller.waits.load(Ordering::SeqCst) == 0 {
        if handle.is_finished() {
            // It may have waited and timed out since the count was read.
            assert!(
                caller.waits.load(Ordering::SeqCst) > 0,
                "the DDL ended without waiting"
            );
            break;
        }
        std::thread::yield_now();
    }
    handle
}

fn read(
    txn: &mut shale_table::TableTxn,
    table: &TableDef,
) -> shale_table::Result<Option<Vec<Value>>> {
    txn.get(table, &[Value::Int(3)], LockMode::None)
}

#[test]
fn drop_waits_for_a_transaction_that_only_read_the_table() {
    let store = open();
    let t = store.catalog().table("d", "t").unwrap().clone();
    let mut reader = store.begin(TxnOptions::default()).unwrap();
    assert!(read(&mut reader, &t).unwrap().is_some());
    let caller = Arc::new(Caller::default());
    let drop_table = spawn_waiting(&store, &caller, LONG, |s| s.drop_table("d", "t"));
    // The reader goes on seeing the table whole while the DROP waits for it.
    assert!(read(&mut reader, &t).unwrap().is_some());
    assert!(!drop_table.is_finished());
    reader.commit().unwrap();
    drop_table.join().unwrap().unwrap();
    let mut late = store.begin(TxnOptions::default()).unwrap();
    assert!(matches!(
        read(&mut late, &t),
        Err(Error::NoSuchTable { .. })
    ));
}

#[test]
fn a_ddl_wait_ends_at_the_timeout_or_when_the_caller_is_killed_and_changes_nothing() {
    let store = open();
    let t = store.catalog().table("d", "t").unwrap().clone();
    let mut reader = store.begin(TxnOptions::default()).unwrap();
    assert!(read(&mut reader, &t).unwrap().is_some());
    let timed = Arc::new(Caller::default());
    let truncate = spawn_waiting(&store, &timed, Duration::from_millis(50), |s| {
        s.truncate_table("d", "t")
    });
    assert!(matches!(
        truncate.join().unwrap(),
        Err(Error::LockWaitTimeout)
    ));
    let killed = Arc::new(Caller::default());
    let truncate = spawn_waiting(&store, &killed, LONG, |s| s.truncate_table("d", "t"));
    killed.killed.store(true, Ordering::SeqCst);
    assert!(matches!(truncate.join().unwrap(), Err(Error::Interrupted)));
    reader.commit().unwrap();
    let mut after = store.begin(TxnOptions::default()).unwrap();
    assert!(read(&mut after, &t).unwrap().is_some(), "nothing truncated");
}

#[test]
fn a_reader_that_comes_after_a_waiting_ddl_waits_behind_it() {
    let store = open();
    let t = store.catalog().table("d", "t").unwrap().clone();
    let mut holder = store.begin(TxnOptions::default()).unwrap();
    assert!(read(&mut holder, &t).unwrap().is_some());
    let ddl = Arc::new(Caller::default());
    let truncate = spawn_waiting(&store, &ddl, LONG, |s| s.truncate_table("d", "t"));
    let late = Arc::new(Caller::default());
    let reader = {
        let (store, late, t) = (store.clone(), late.clone(), t.clone());
        std::thread::spawn(move || {
            let _wait = MetadataWait {
                timeout: LONG,
                waiter: Some(late),
                owner: None,
            }
            .install();
            let mut txn = store.begin(TxnOptions::default()).unwrap();
            read(&mut txn, &t)
        })
    };
    while late.waits.load(Ordering::SeqCst) == 0 {
        assert!(!reader.is_finished(), "the reader did not queue");
        std::thread::yield_now();
    }
    holder.commit().unwrap();
    truncate.join().unwrap().unwrap();
    // TRUNCATE keeps the table's ids and definition: the queued reader finds it empty.
    assert_eq!(reader.join().unwrap().unwrap(), None);
}
