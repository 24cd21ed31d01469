//! Bulk load (bulk.rs): rows sorted into table files and ingested with their index entries;
//! nothing visible before `finish`, all of it after; duplicates and overlaps refused; a crash
//! at any sync point of a load leaves the table as it was or fully loaded.

use std::path::Path;
use std::sync::{Arc, Mutex};

use shale_engine::Options;
use shale_fs::{CrashMode, FileSystem, MemFs};
use shale_table::{
    BulkLoadOptions, Collation, ColumnDef, ColumnType, Error, IndexChoice, IndexDef, KeyRange,
    LockMode, Store, StoreOptions, TableDef, TxnOptions, Value,
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

/// sbtest's shape: id PK, k (non-unique index), c, and u (a unique index).
fn create(store: &Store) -> Arc<TableDef> {
    let column = |name: &str, ty| ColumnDef {
        name: name.into(),
        ty,
        nullable: false,
        default: None,
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    };
    let index = |name: &str, columns, unique| IndexDef {
        name: name.into(),
        columns,
        unique,
        index_id: 0,
    };
    store.create_database("d").unwrap();
    store
        .create_table(TableDef {
            database: "d".into(),
            name: "t".into(),
            columns: vec![
                column("id", ColumnType::Int { unsigned: false }),
                column("k", ColumnType::Int { unsigned: false }),
                column(
                    "c",
                    ColumnType::Char {
                        len: 120,
                        collation: Collation::Utf8mb4GeneralCi,
                    },
                ),
                column("u", ColumnType::Int { unsigned: false }),
            ],
            primary_key: index("PRIMARY", vec![0], true),
            indexes: vec![index("k_1", vec![1], false), index("u", vec![3], true)],
            schema_version: 0,
            past_versions: Vec::new(),
        })
        .unwrap()
}

fn row(id: i64) -> Vec<Value> {
    vec![
        Value::Int(id),
        Value::Int(id % 97),
        Value::Bytes(format!("{id:012}-abcdefghijklmnopqrstuvwxyz").into_bytes()),
        Value::Int(1_000_000 + id),
    ]
}

fn count(store: &Store, t: &TableDef, index: IndexChoice) -> usize {
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let mut cursor = txn
        .scan(t, index, KeyRange::all(), false, LockMode::None)
        .unwrap();
    let mut n = 0;
    while cursor.next_row().unwrap().is_some() {
        n += 1;
    }
    n
}

fn check(store: &Store, t: &TableDef) {
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let report = txn.check_table(t).unwrap();
    assert!(report.is_ok(), "{report:?}");
}

fn tmp_files(fs: &MemFs) -> Vec<String> {
    let dir = Path::new("/db/bulk-tmp");
    if fs.exists(dir).unwrap() {
        fs.list(dir).unwrap()
    } else {
        Vec::new()
    }
}

/// A small budget, so that 20 000 rows spill several runs per index.
fn small() -> BulkLoadOptions {
    BulkLoadOptions {
        memory_budget: 256 * 1024,
        target_file_size: 512 * 1024,
    }
}

#[test]
fn unsorted_rows_with_spills_load_with_their_indexes_visible_only_at_finish() {
    let fs = MemFs::new();
    let store = open(&fs);
    let t = create(&store);
    let mut load = store.bulk_load(&t, small()).unwrap();
    let n = 20_000i64;
    for i in 0..n {
        // A permutation of 0..n: unsorted input.
        load.insert(&row((i * 7919) % n)).unwrap();
    }
    assert_eq!(
        count(&store, &t, IndexChoice::Primary),
        0,
        "visible before finish"
    );
    let summary = load.finish().unwrap();
    assert_eq!(summary.rows, 20_000);
    assert!(summary.spill_runs > 3, "{summary:?}");
    assert!(summary.files > 3, "{summary:?}");
    assert_eq!(count(&store, &t, IndexChoice::Primary), 20_000);
    assert_eq!(count(&store, &t, IndexChoice::Secondary(0)), 20_000);
    assert_eq!(count(&store, &t, IndexChoice::Secondary(1)), 20_000);
    check(&store, &t);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    assert_eq!(
        txn.get(&t, &[Value::Int(12_345)], LockMode::None).unwrap(),
        Some(row(12_345))
    );
    let by_k = KeyRange::prefix(vec![Value::Int(5)]);
    let mut cursor = txn
        .scan(&t, IndexChoice::Secondary(0), by_k, false, LockMode::None)
        .unwrap();
    let mut ids = Vec::new();
    while let Some(r) = cursor.next_row().unwrap() {
        ids.push(r[0].clone());
    }
    assert_eq!(ids.len(), (0..n).filter(|i| i % 97 == 5).count());
    assert_eq!(ids.first(), Some(&Value::Int(5)));
    drop(cursor);
    drop(txn);
    assert!(tmp_files(&fs).is_empty(), "{:?}", tmp_files(&fs));
}

#[test]
fn a_repeated_primary_key_fails_the_load_and_leaves_nothing() {
    let fs = MemFs::new();
    let store = open(&fs);
    let t = create(&store);
    let mut load = store.bulk_load(&t, small()).unwrap();
    for i in 0..5000 {
        load.insert(&row(i)).unwrap();
    }
    let mut again = row(1234);
    again[3] = Value::Int(7); // the unique column differs: only the primary key repeats
    load.insert(&again).unwrap();
    let err = load.finish().unwrap_err();
    assert!(
        matches!(&err, Error::DuplicateKey { key, entry, .. } if key == "PRIMARY" && entry == "1234"),
        "{err:?}"
    );
    assert_eq!(count(&store, &t, IndexChoice::Primary), 0);
    assert_eq!(count(&store, &t, IndexChoice::Secondary(1)), 0);
    assert!(tmp_files(&fs).is_empty(), "{:?}", tmp_files(&fs));
}

#[test]
fn a_repeated_unique_key_names_the_index_and_the_value() {
    let fs = MemFs::new();
    let store = open(&fs);
    let t = create(&store);
    let mut load = store.bulk_load(&t, small()).unwrap();
    for i in 0..5000 {
        load.insert(&row(i)).unwrap();
    }
    let mut clash = row(9999);
    clash[3] = Value::Int(1_000_042);
    load.insert(&clash).unwrap();
    let err = load.finish().unwrap_err();
    assert!(
        matches!(&err, Error::DuplicateKey { key, entry, .. } if key == "u" && entry == "1000042"),
        "{err:?}"
    );
    assert_eq!(count(&store, &t, IndexChoice::Primary), 0);
}

#[test]
fn a_load_must_not_overlap_existing_rows_or_unique_keys() {
    let fs = MemFs::new();
    let store = open(&fs);
    let t = create(&store);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    txn.insert(&t, row(500)).unwrap();
    txn.commit().unwrap();
    // 0..1000 spans id 500.
    let mut load = store.bulk_load(&t, small()).unwrap();
    for i in (0..1000).filter(|&i| i != 500) {
        load.insert(&row(i)).unwrap();
    }
    let err = load.finish().unwrap_err();
    assert!(matches!(err, Error::BulkLoadOverlap { .. }), "{err:?}");
    // Above the existing rows, but one unique value exists.
    let mut load = store.bulk_load(&t, small()).unwrap();
    for i in 1000..2000 {
        load.insert(&row(i)).unwrap();
    }
    let mut clash = row(2000);
    clash[3] = Value::Int(1_000_500);
    load.insert(&clash).unwrap();
    let err = load.finish().unwrap_err();
    assert!(
        matches!(&err, Error::DuplicateKey { key, entry, .. } if key == "u" && entry == "1000500"),
        "{err:?}"
    );
    assert_eq!(count(&store, &t, IndexChoice::Primary), 1);
    // A clean append works, and the table stays consistent.
    let mut load = store.bulk_load(&t, small()).unwrap();
    for i in 1000..3000 {
        load.insert(&row(i)).unwrap();
    }
    load.finish().unwrap();
    assert_eq!(count(&store, &t, IndexChoice::Primary), 2001);
    check(&store, &t);
}

#[test]
fn a_dropped_load_leaves_nothing_and_bad_values_are_refused_at_insert() {
    let fs = MemFs::new();
    let store = open(&fs);
    let t = create(&store);
    let mut load = store.bulk_load(&t, small()).unwrap();
    for i in 0..5000 {
        load.insert(&row(i)).unwrap();
    }
    let mut bad = row(6000);
    bad[1] = Value::Null;
    assert!(matches!(load.insert(&bad), Err(Error::InvalidArgument(_))));
    assert!(!tmp_files(&fs).is_empty());
    drop(load);
    assert!(tmp_files(&fs).is_empty(), "{:?}", tmp_files(&fs));
    assert_eq!(count(&store, &t, IndexChoice::Primary), 0);
}

/// A crash image at every sync point of a load (spills, table files, the ingestion): the
/// reopened table holds no row or every row, agrees with its indexes, and `bulk-tmp/` is empty.
#[test]
fn a_crash_at_any_sync_point_leaves_the_table_empty_or_fully_loaded() {
    let fs = MemFs::new();
    let store = open(&fs);
    let t = create(&store);
    let images: Arc<Mutex<Vec<MemFs>>> = Arc::default();
    let hook_images = images.clone();
    let hook_fs = fs.clone();
    fs.set_sync_hook(Some(Arc::new(move |_: u64| {
        hook_images
            .lock()
            .unwrap()
            .push(hook_fs.crash_image(CrashMode::DropUnsynced));
    })));
    let mut load = store.bulk_load(&t, small()).unwrap();
    for i in (0..3000).rev() {
        load.insert(&row(i)).unwrap();
    }
    load.finish().unwrap();
    fs.set_sync_hook(None);
    let images = std::mem::take(&mut *images.lock().unwrap());
    assert!(images.len() > 3, "{} sync points", images.len());
    let mut seen_full = false;
    for image in images
        .into_iter()
        .chain([fs.crash_image(CrashMode::DropUnsynced)])
    {
        drop_store_on(&image, &mut seen_full);
    }
    assert!(seen_full, "the last image holds the load");
    store.close().unwrap();
}

fn drop_store_on(image: &MemFs, seen_full: &mut bool) {
    let store = open(image);
    let t = store.catalog().table("d", "t").unwrap().clone();
    let rows = count(&store, &t, IndexChoice::Primary);
    assert!(rows == 0 || rows == 3000, "{rows} rows after a crash");
    assert_eq!(count(&store, &t, IndexChoice::Secondary(0)), rows);
    check(&store, &t);
    assert!(tmp_files(image).is_empty(), "{:?}", tmp_files(image));
    *seen_full |= rows == 3000;
    store.close().unwrap();
}
