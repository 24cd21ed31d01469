//! Temporary tables (temporary.rs): rows under fresh ids that no catalog names, dropped by
//! their session, and swept at the next open when the process ended without dropping them.

use std::sync::Arc;

use shale_engine::{Options, ReadOptions};
use shale_fs::{CrashMode, MemFs};
use shale_table::{
    ColumnDef, ColumnType, IndexChoice, IndexDef, KeyRange, LockMode, Store, StoreOptions,
    TableDef, TxnOptions, Value,
};

fn open(fs: &MemFs) -> Store {
    Store::open(
        "/db",
        StoreOptions {
            engine: Options {
                file_system: Arc::new(fs.clone()),
                ..Options::default()
            },
            ..StoreOptions::default()
        },
    )
    .unwrap()
}

/// `t (id INT AUTO_INCREMENT PRIMARY KEY, k INT, KEY (k))`.
fn table(name: &str) -> TableDef {
    let column = |name: &str, auto_increment| ColumnDef {
        name: name.into(),
        ty: ColumnType::Int { unsigned: false },
        nullable: false,
        default: None,
        auto_increment,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    };
    let index = |name: &str, columns| IndexDef {
        name: name.into(),
        columns,
        unique: false,
        index_id: 0,
    };
    TableDef {
        database: "d".into(),
        name: name.into(),
        columns: vec![column("id", true), column("k", false)],
        primary_key: index("PRIMARY", vec![0]),
        indexes: vec![index("k", vec![1])],
        schema_version: 0,
        past_versions: Vec::new(),
    }
}

fn insert(store: &Store, def: &TableDef, rows: std::ops::Range<i64>) {
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for k in rows {
        let id = txn.next_auto_increment(def).unwrap();
        txn.insert(def, vec![Value::UInt(id), Value::Int(k)])
            .unwrap();
    }
    txn.commit().unwrap();
}

fn count(store: &Store, def: &TableDef) -> usize {
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let mut rows = txn
        .scan(
            def,
            IndexChoice::Primary,
            KeyRange::all(),
            false,
            LockMode::None,
        )
        .unwrap();
    let mut n = 0;
    while rows.next_row().unwrap().is_some() {
        n += 1;
    }
    n
}

/// Every key of the default keyspace whose 4-byte index id is `id`, and every system key
/// (`00 00 00 01` + tag + id) that names it.
fn keys_of(store: &Store, ids: &[u32]) -> Vec<Vec<u8>> {
    let db = store.engine().db();
    let mut iter = db.iterator(ReadOptions::default()).unwrap();
    iter.seek_to_first();
    let mut found = Vec::new();
    while iter.valid() {
        let key = iter.key();
        let owner = key
            .get(..4)
            .map(|b| u32::from_be_bytes(b.try_into().unwrap()));
        let named = key
            .get(5..9)
            .filter(|_| owner == Some(1))
            .map(|b| u32::from_be_bytes(b.try_into().unwrap()));
        if owner.is_some_and(|o| ids.contains(&o)) || named.is_some_and(|n| ids.contains(&n)) {
            found.push(key.to_vec());
        }
        iter.next();
    }
    found
}

fn ids_of(def: &TableDef) -> Vec<u32> {
    std::iter::once(&def.primary_key)
        .chain(&def.indexes)
        .map(|i| i.index_id)
        .collect()
}

#[test]
fn a_temporary_table_is_not_in_the_catalog_and_its_drop_leaves_nothing() {
    let fs = MemFs::new();
    let store = open(&fs);
    store.create_database("d").unwrap();
    let base = store.create_table(table("t")).unwrap();
    insert(&store, &base, 0..3);
    let temp = store.create_temporary_table(table("t")).unwrap();
    assert!(temp.primary_key.index_id > base.indexes[0].index_id);
    assert!(store.is_temporary(temp.primary_key.index_id));
    // The catalog still names the base table only.
    let catalog = store.catalog();
    assert_eq!(
        catalog.table("d", "t").unwrap().primary_key,
        base.primary_key
    );
    insert(&store, &temp, 0..5);
    assert_eq!((count(&store, &base), count(&store, &temp)), (3, 5));
    assert!(!keys_of(&store, &ids_of(&temp)).is_empty());

    store.truncate_temporary_table(&temp).unwrap();
    assert_eq!(count(&store, &temp), 0);
    insert(&store, &temp, 0..1);
    // TRUNCATE reset the AUTO_INCREMENT counter.
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let row = txn.get(&temp, &[Value::Int(1)], LockMode::None).unwrap();
    assert_eq!(row, Some(vec![Value::Int(1), Value::Int(0)]));
    drop(txn);

    store.drop_temporary_table(&temp).unwrap();
    assert!(!store.is_temporary(temp.primary_key.index_id));
    assert_eq!(keys_of(&store, &ids_of(&temp)), Vec::<Vec<u8>>::new());
    assert_eq!(count(&store, &base), 3);
    // A temporary table needs its database.
    let mut elsewhere = table("t");
    elsewhere.database = "nowhere".into();
    assert!(store.create_temporary_table(elsewhere).is_err());
    store.close().unwrap();
}

#[test]
fn a_crash_leaves_no_temporary_table_behind() {
    let fs = MemFs::new();
    let store = open(&fs);
    store.create_database("d").unwrap();
    let base = store.create_table(table("t")).unwrap();
    insert(&store, &base, 0..3);
    let temp = store.create_temporary_table(table("t")).unwrap();
    let other = store.create_temporary_table(table("u")).unwrap();
    insert(&store, &temp, 0..2000);
    insert(&store, &other, 0..10);
    // Some of the rows in table files, some only in the WAL.
    store.engine().db().flush().unwrap();
    insert(&store, &temp, 0..10);
    let ids: Vec<u32> = ids_of(&temp).into_iter().chain(ids_of(&other)).collect();
    // The process dies without dropping them.
    let image = fs.crash_image(CrashMode::DropUnsynced);
    drop(store);
    // The image holds their rows (and the AUTO_INCREMENT reservations) ...
    let leftover = |db: &shale_engine::Db| {
        let mut iter = db.iterator(ReadOptions::default()).unwrap();
        iter.seek_to_first();
        let mut n = 0;
        while iter.valid() {
            let key = iter.key();
            let owner = u32::from_be_bytes(key[..4].try_into().unwrap());
            let named = (owner == 1 && key.len() == 9)
                .then(|| u32::from_be_bytes(key[5..9].try_into().unwrap()));
            if ids.contains(&owner) || named.is_some_and(|n| ids.contains(&n)) {
                n += 1;
            }
            iter.next();
        }
        n
    };
    let engine_options = Options {
        file_system: Arc::new(image.clone()),
        ..Options::default()
    };
    let raw = shale_engine::Db::open("/db", engine_options).unwrap();
    assert!(leftover(&raw) > 2000, "{}", leftover(&raw));
    drop(raw);

    // ... which the next open deletes.
    let store = open(&image);
    assert_eq!(keys_of(&store, &ids), Vec::<Vec<u8>>::new());
    assert!(!store.is_temporary(temp.primary_key.index_id));
    let catalog = store.catalog();
    let t = catalog.table("d", "t").unwrap();
    assert_eq!(count(&store, t), 3);
    assert!(catalog.table("d", "u").is_none());
    // The ids are never handed out again.
    let next = store.create_table(table("v")).unwrap();
    assert!(next.primary_key.index_id > *ids.iter().max().unwrap());
    store.close().unwrap();
}
