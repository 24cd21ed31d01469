//! The catalog must not keep old write-ahead logs alive: after DDL, a long run of writes that
//! flushes many times leaves only the newest WALs (the engine keeps every WAL an unflushed
//! memtable of any keyspace needs; docs/format/catalog.md says why the catalog shares the
//! default keyspace).

use std::path::Path;
use std::sync::Arc;

use shale_engine::Options;
use shale_fs::{FileSystem, MemFs};
use shale_table::{
    ColumnDef, ColumnType, IndexDef, Store, StoreOptions, TableDef, TxnOptions, Value,
};

#[test]
fn ddl_does_not_pin_write_ahead_logs() {
    let fs = MemFs::new();
    let mut options = StoreOptions {
        engine: Options {
            file_system: Arc::new(fs.clone()),
            ..Options::default()
        },
        ..StoreOptions::default()
    };
    options.engine.default_keyspace.write_buffer_size = 256 << 10;
    let store = Store::open("/db", options).unwrap();
    store.create_database("d").unwrap();
    let column = |name: &str, auto_increment| ColumnDef {
        name: name.into(),
        ty: ColumnType::BigInt { unsigned: false },
        nullable: false,
        default: None,
        auto_increment,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    };
    let t = store
        .create_table(TableDef {
            database: "d".into(),
            name: "t".into(),
            columns: vec![column("a", true), column("b", false)],
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
    let id = txn.next_auto_increment(&t).unwrap(); // a reservation write too
    txn.insert(&t, vec![Value::Int(id.cast_signed()), Value::Int(0)])
        .unwrap();
    txn.commit().unwrap();
    for round in 1..40 {
        let mut txn = store.begin(TxnOptions::default()).unwrap();
        for i in 0..2000 {
            txn.insert(&t, vec![Value::Int(round * 10_000 + i), Value::Int(i)])
                .unwrap();
        }
        txn.commit().unwrap();
    }
    store.engine().db().wait_for_background_work().unwrap();
    let files = fs.list(Path::new("/db")).unwrap();
    let count = |extension: &str| {
        files
            .iter()
            .filter(|f| Path::new(f).extension().is_some_and(|e| e == extension))
            .count()
    };
    let (wals, tables) = (count("wal"), count("sst"));
    assert!(tables >= 5, "the test did not flush: {files:?}");
    assert!(
        wals <= 3,
        "{wals} WALs kept after {tables} flushes: {files:?}"
    );
}
