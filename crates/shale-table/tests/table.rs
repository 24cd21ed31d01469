//! Behaviour of the table layer: CRUD through both index kinds, index maintenance checked by
//! CHECK TABLE, duplicate keys, scans, persistence across reopen, DDL, locks.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{IsolationLevel, Options, TransactionDbOptions};
use shale_fs::MemFs;
use shale_table::{
    Collation, ColumnDef, ColumnType, Error, IndexChoice, IndexDef, KeyRange, LockMode, Store,
    StoreOptions, TableDef, TxnOptions, Value,
};

fn options(fs: &MemFs) -> StoreOptions {
    StoreOptions {
        engine: Options {
            file_system: Arc::new(fs.clone()),
            ..Options::default()
        },
        transactions: TransactionDbOptions {
            lock_wait_timeout: Duration::from_millis(200),
            ..TransactionDbOptions::default()
        },
        ..StoreOptions::default()
    }
}

fn open(fs: &MemFs) -> Store {
    Store::open("/db", options(fs)).unwrap()
}

fn column(name: &str, ty: ColumnType, nullable: bool) -> ColumnDef {
    ColumnDef {
        name: name.into(),
        ty,
        nullable,
        default: None,
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    }
}

fn index(name: &str, columns: Vec<usize>, unique: bool) -> IndexDef {
    IndexDef {
        name: name.into(),
        columns,
        unique,
        index_id: 0,
    }
}

/// sysbench's table (`id INT AUTO_INCREMENT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60),
/// KEY k_1 (k)`) plus a nullable unique `general_ci` column `u`.
fn sbtest(name: &str) -> TableDef {
    let mut id = column("id", ColumnType::Int { unsigned: false }, false);
    id.auto_increment = true;
    TableDef {
        database: "sbtest".into(),
        name: name.into(),
        columns: vec![
            id,
            column("k", ColumnType::Int { unsigned: false }, false),
            column(
                "c",
                ColumnType::Char {
                    len: 120,
                    collation: Collation::Utf8mb4GeneralCi,
                },
                false,
            ),
            column(
                "pad",
                ColumnType::Char {
                    len: 60,
                    collation: Collation::Utf8mb4Bin,
                },
                false,
            ),
            column(
                "u",
                ColumnType::VarChar {
                    len: 20,
                    collation: Collation::Utf8mb4GeneralCi,
                },
                true,
            ),
        ],
        primary_key: index("PRIMARY", vec![0], true),
        indexes: vec![index("k_1", vec![1], false), index("u_1", vec![4], true)],
        schema_version: 0,
        past_versions: Vec::new(),
    }
}

fn row(id: i64, k: i64, c: &str, u: Option<&str>) -> Vec<Value> {
    vec![
        Value::Int(id),
        Value::Int(k),
        Value::Bytes(c.into()),
        Value::Bytes(b"pad".to_vec()),
        u.map_or(Value::Null, |u| Value::Bytes(u.into())),
    ]
}

fn setup() -> (MemFs, Store, Arc<TableDef>) {
    let fs = MemFs::new();
    let store = open(&fs);
    store.create_database("sbtest").unwrap();
    let table = store.create_table(sbtest("sbtest1")).unwrap();
    (fs, store, table)
}

fn collect(cursor: &mut shale_table::RowCursor<'_>) -> Vec<Vec<Value>> {
    let mut rows = Vec::new();
    while let Some(row) = cursor.next_row().unwrap() {
        rows.push(row);
    }
    rows
}

fn ids(rows: &[Vec<Value>]) -> Vec<i64> {
    rows.iter()
        .map(|r| match r[0] {
            Value::Int(v) => v,
            _ => panic!("id is not an Int: {r:?}"),
        })
        .collect()
}

#[test]
fn crud_through_primary_and_secondary_indexes() {
    let (_fs, store, t) = setup();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in 1..=10 {
        txn.insert(&t, row(id, id % 3, &format!("c{id}"), None))
            .unwrap();
    }
    assert_eq!(
        txn.get(&t, &[Value::Int(4)], LockMode::None).unwrap(),
        Some(row(4, 1, "c4", None))
    );
    assert_eq!(
        txn.get(&t, &[Value::Int(11)], LockMode::None).unwrap(),
        None
    );
    txn.commit().unwrap();

    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let k1 = collect(
        &mut txn
            .scan(
                &t,
                IndexChoice::Secondary(0),
                KeyRange::prefix(vec![Value::Int(1)]),
                false,
                LockMode::None,
            )
            .unwrap(),
    );
    assert_eq!(ids(&k1), [1, 4, 7, 10], "k = 1, in pk order");
    let k1_rev = collect(
        &mut txn
            .scan(
                &t,
                IndexChoice::Secondary(0),
                KeyRange::prefix(vec![Value::Int(1)]),
                true,
                LockMode::None,
            )
            .unwrap(),
    );
    assert_eq!(ids(&k1_rev), [10, 7, 4, 1]);
    txn.update(&t, &row(4, 1, "c4", None), row(4, 2, "changed", Some("x")))
        .unwrap();
    txn.delete(&t, &row(7, 1, "c7", None)).unwrap();
    let k1 = collect(
        &mut txn
            .scan(
                &t,
                IndexChoice::Secondary(0),
                KeyRange::prefix(vec![Value::Int(1)]),
                false,
                LockMode::None,
            )
            .unwrap(),
    );
    assert_eq!(ids(&k1), [1, 10], "own writes seen by a scan");
    let u = collect(
        &mut txn
            .scan(
                &t,
                IndexChoice::Secondary(1),
                KeyRange::prefix(vec![Value::Bytes(b"X".to_vec())]),
                false,
                LockMode::None,
            )
            .unwrap(),
    );
    assert_eq!(
        u,
        [row(4, 2, "changed", Some("x"))],
        "general_ci unique index finds 'X' as 'x', returns the original"
    );
    // pk change = delete + insert
    txn.update(&t, &row(10, 1, "c10", None), row(100, 1, "c10", None))
        .unwrap();
    assert_eq!(
        txn.get(&t, &[Value::Int(10)], LockMode::None).unwrap(),
        None
    );
    assert!(txn
        .get(&t, &[Value::Int(100)], LockMode::None)
        .unwrap()
        .is_some());
    let check = txn.check_table(&t).unwrap();
    assert!(check.is_ok(), "{check:?}");
    assert_eq!(check.rows, 9);
    txn.commit().unwrap();
}

#[test]
fn scans_honour_bounds_in_both_directions() {
    let (_fs, store, t) = setup();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in -5..=5 {
        txn.insert(&t, row(id, 0, "c", None)).unwrap();
    }
    let range = |lower: Bound<i64>, upper: Bound<i64>| KeyRange {
        lower: lower.map(|v| vec![Value::Int(v)]),
        upper: upper.map(|v| vec![Value::Int(v)]),
    };
    let cases = [
        (
            range(Bound::Included(-2), Bound::Excluded(2)),
            vec![-2, -1, 0, 1],
        ),
        (
            range(Bound::Excluded(-2), Bound::Included(2)),
            vec![-1, 0, 1, 2],
        ),
        (range(Bound::Unbounded, Bound::Excluded(-3)), vec![-5, -4]),
        (range(Bound::Excluded(3), Bound::Unbounded), vec![4, 5]),
        (range(Bound::Included(9), Bound::Unbounded), vec![]),
        (range(Bound::Included(3), Bound::Excluded(-3)), vec![]),
        (range(Bound::Excluded(1), Bound::Excluded(1)), vec![]),
    ];
    for (range, expected) in cases {
        let forward = ids(&collect(
            &mut txn
                .scan(
                    &t,
                    IndexChoice::Primary,
                    range.clone(),
                    false,
                    LockMode::None,
                )
                .unwrap(),
        ));
        assert_eq!(forward, expected, "{range:?}");
        let mut backward = ids(&collect(
            &mut txn
                .scan(
                    &t,
                    IndexChoice::Primary,
                    range.clone(),
                    true,
                    LockMode::Exclusive,
                )
                .unwrap(),
        ));
        backward.reverse();
        assert_eq!(backward, expected, "reverse {range:?}");
    }
    // secondary index on k = 0 for all; a bound on (k) then pk order
    let all = ids(&collect(
        &mut txn
            .scan(
                &t,
                IndexChoice::Secondary(0),
                KeyRange::all(),
                false,
                LockMode::None,
            )
            .unwrap(),
    ));
    assert_eq!(all, (-5..=5).collect::<Vec<_>>());
    assert!(matches!(
        txn.scan(
            &t,
            IndexChoice::Secondary(0),
            KeyRange::prefix(vec![Value::Int(1), Value::Int(2)]),
            false,
            LockMode::None
        ),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn bounds_outside_an_integer_columns_range_fold_into_the_range() {
    let (_fs, store, t) = setup();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in -5..=5 {
        txn.insert(&t, row(id, 0, "c", None)).unwrap();
    }
    txn.commit().unwrap();
    // Committed data: the engine's iterator, not the pending batch.
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    // Bounds outside INT's range, and fractions, are folded in rather than refused.
    let value_range = |lower: Bound<Value>, upper: Bound<Value>| KeyRange {
        lower: lower.map(|v| vec![v]),
        upper: upper.map(|v| vec![v]),
    };
    let folded = [
        (
            value_range(Bound::Unbounded, Bound::Excluded(Value::Int(1 << 40))),
            (-5..=5).collect::<Vec<_>>(),
        ),
        (
            value_range(Bound::Included(Value::Double(2.5)), Bound::Unbounded),
            vec![3, 4, 5],
        ),
        (
            value_range(Bound::Excluded(Value::Double(2.0)), Bound::Unbounded),
            vec![3, 4, 5],
        ),
        (
            value_range(Bound::Unbounded, Bound::Excluded(Value::Double(-2.5))),
            vec![-5, -4, -3],
        ),
        (
            value_range(Bound::Included(Value::UInt(u64::MAX)), Bound::Unbounded),
            vec![],
        ),
        (
            value_range(
                Bound::Included(Value::Int(3)),
                Bound::Excluded(Value::Int(-3)),
            ),
            vec![],
        ),
        (
            value_range(
                Bound::Excluded(Value::Double(f64::NEG_INFINITY)),
                Bound::Included(Value::Int(i64::MIN)),
            ),
            vec![],
        ),
    ];
    for (range, expected) in folded {
        for reverse in [false, true] {
            let mut got = ids(&collect(
                &mut txn
                    .scan(
                        &t,
                        IndexChoice::Primary,
                        range.clone(),
                        reverse,
                        LockMode::None,
                    )
                    .unwrap(),
            ));
            if reverse {
                got.reverse();
            }
            assert_eq!(got, expected, "{range:?} reverse={reverse}");
        }
    }
    let backward = ids(&collect(
        &mut txn
            .scan(
                &t,
                IndexChoice::Primary,
                KeyRange::all(),
                true,
                LockMode::None,
            )
            .unwrap(),
    ));
    assert_eq!(backward, (-5..=5).rev().collect::<Vec<_>>());
}

#[test]
fn duplicate_keys_name_the_key_and_entry_and_change_nothing() {
    let (_fs, store, t) = setup();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    txn.insert(&t, row(1, 5, "a", Some("abc"))).unwrap();
    txn.insert(&t, row(2, 5, "a", None)).unwrap();
    txn.insert(&t, row(3, 5, "a", None)).unwrap(); // NULLs do not collide in a unique index
    match txn.insert(&t, row(1, 6, "b", None)) {
        Err(Error::DuplicateKey { table, key, entry }) => {
            assert_eq!(
                (table.as_str(), key.as_str(), entry.as_str()),
                ("sbtest1", "PRIMARY", "1")
            );
        }
        other => panic!("expected a duplicate, got {other:?}"),
    }
    match txn.insert(&t, row(4, 6, "b", Some("ABC  "))) {
        Err(Error::DuplicateKey { key, entry, .. }) => {
            assert_eq!((key.as_str(), entry.as_str()), ("u_1", "ABC  "));
        }
        other => panic!("expected a duplicate, got {other:?}"),
    }
    assert_eq!(
        txn.get(&t, &[Value::Int(4)], LockMode::None).unwrap(),
        None,
        "the failed insert left nothing"
    );
    match txn.update(&t, &row(2, 5, "a", None), row(2, 5, "a", Some("Abc"))) {
        Err(Error::DuplicateKey { key, .. }) => assert_eq!(key, "u_1"),
        other => panic!("expected a duplicate, got {other:?}"),
    }
    match txn.update(&t, &row(2, 5, "a", None), row(3, 5, "a", None)) {
        Err(Error::DuplicateKey { key, entry, .. }) => {
            assert_eq!((key.as_str(), entry.as_str()), ("PRIMARY", "3"));
        }
        other => panic!("expected a duplicate, got {other:?}"),
    }
    // updating a row to its own unique value (different case) is not a duplicate
    txn.update(
        &t,
        &row(1, 5, "a", Some("abc")),
        row(1, 7, "a", Some("ABC")),
    )
    .unwrap();
    assert!(txn.check_table(&t).unwrap().is_ok());
    txn.commit().unwrap();
}

#[test]
fn random_writes_keep_indexes_and_rows_in_agreement() {
    let (_fs, store, t) = setup();
    let mut rng = SmallRng::seed_from_u64(42);
    let mut model: BTreeMap<i64, Vec<Value>> = BTreeMap::new();
    for round in 0..20 {
        let mut txn = store.begin(TxnOptions::default()).unwrap();
        for _ in 0..50 {
            let id = rng.gen_range(0..60);
            let u = if rng.gen_bool(0.5) {
                None
            } else {
                Some(format!("u{}", rng.gen_range(0..40)))
            };
            let new = row(
                id,
                rng.gen_range(0..5),
                &format!("c{}", rng.gen_range(0..3)),
                u.as_deref(),
            );
            let unique_clash = |m: &BTreeMap<i64, Vec<Value>>, skip: i64| {
                u.as_ref().is_some_and(|u| {
                    m.iter().any(|(&other, r)| {
                        other != skip && matches!(&r[4], Value::Bytes(b) if b.eq_ignore_ascii_case(u.as_bytes()))
                    })
                })
            };
            match (model.get(&id).cloned(), rng.gen_range(0..3)) {
                (None, _) => {
                    let result = txn.insert(&t, new.clone());
                    if unique_clash(&model, id) {
                        assert!(
                            matches!(result, Err(Error::DuplicateKey { .. })),
                            "{result:?}"
                        );
                    } else {
                        result.unwrap();
                        model.insert(id, new);
                    }
                }
                (Some(old), 0) => {
                    txn.delete(&t, &old).unwrap();
                    model.remove(&id);
                }
                (Some(old), _) => {
                    let result = txn.update(&t, &old, new.clone());
                    if unique_clash(&model, id) {
                        assert!(
                            matches!(result, Err(Error::DuplicateKey { .. })),
                            "{result:?}"
                        );
                    } else {
                        result.unwrap();
                        model.insert(id, new);
                    }
                }
            }
        }
        let check = txn.check_table(&t).unwrap();
        assert!(check.is_ok(), "round {round}: {check:?}");
        assert_eq!(check.rows, model.len() as u64);
        let rows = collect(
            &mut txn
                .scan(
                    &t,
                    IndexChoice::Primary,
                    KeyRange::all(),
                    false,
                    LockMode::None,
                )
                .unwrap(),
        );
        assert_eq!(rows, model.values().cloned().collect::<Vec<_>>());
        if rng.gen_bool(0.8) {
            txn.commit().unwrap();
        } else {
            txn.rollback();
            // restore the model from the store
            let mut reader = store.begin(TxnOptions::default()).unwrap();
            let rows = collect(
                &mut reader
                    .scan(
                        &t,
                        IndexChoice::Primary,
                        KeyRange::all(),
                        false,
                        LockMode::None,
                    )
                    .unwrap(),
            );
            model = rows
                .into_iter()
                .map(|r| (ids(std::slice::from_ref(&r))[0], r))
                .collect();
        }
    }
}

#[test]
fn check_table_finds_planted_inconsistencies() {
    let (_fs, store, t) = setup();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in 1..=5 {
        txn.insert(&t, row(id, id, "c", Some(&format!("u{id}"))))
            .unwrap();
    }
    assert!(txn.check_table(&t).unwrap().is_ok());
    txn.delete_row_key_only(&t, &[Value::Int(2)]).unwrap();
    txn.delete_index_entry_only(&t, 0, &row(4, 4, "c", Some("u4")))
        .unwrap();
    let check = txn.check_table(&t).unwrap();
    assert!(!check.is_ok());
    assert_eq!(check.rows, 4);
    assert_eq!(check.index_entries, [4, 5]);
    let names = |v: &[(String, Vec<u8>)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&check.entries_without_rows),
        ["k_1", "u_1"],
        "row 2's two entries"
    );
    assert_eq!(
        names(&check.rows_without_entries),
        ["k_1"],
        "row 4 lost its k_1 entry"
    );
}

#[test]
fn catalog_rows_and_auto_increment_survive_reopen() {
    let fs = MemFs::new();
    {
        let store = open(&fs);
        store.create_database("sbtest").unwrap();
        let t = store.create_table(sbtest("sbtest1")).unwrap();
        let mut txn = store.begin(TxnOptions::default()).unwrap();
        for _ in 0..3 {
            let id = txn.next_auto_increment(&t).unwrap();
            txn.insert(&t, row(id.cast_signed(), 1, "c", None)).unwrap();
        }
        txn.insert(&t, row(10, 1, "c", None)).unwrap();
        assert_eq!(
            txn.next_auto_increment(&t).unwrap(),
            11,
            "an explicit id moves the counter"
        );
        txn.commit().unwrap();
        store.close().unwrap();
    }
    let store = open(&fs);
    let catalog = store.catalog();
    let t = catalog.table("sbtest", "sbtest1").unwrap().clone();
    assert_eq!(t.columns.len(), 5);
    assert_eq!(t.indexes.len(), 2);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    assert_eq!(
        ids(&collect(
            &mut txn
                .scan(
                    &t,
                    IndexChoice::Primary,
                    KeyRange::all(),
                    false,
                    LockMode::None
                )
                .unwrap()
        )),
        [1, 2, 3, 10]
    );
    let next = txn.next_auto_increment(&t).unwrap();
    assert!(
        next > 11,
        "11 was handed out before the restart, got {next}"
    );
    assert!(txn.check_table(&t).unwrap().is_ok());
    // new ids never reuse old ones
    let t2 = store.create_table(sbtest("sbtest2")).unwrap();
    assert!(t2.primary_key.index_id > t.indexes[1].index_id);
}

#[test]
fn auto_increment_is_not_reused_after_a_crash() {
    let fs = MemFs::new();
    let store = open(&fs);
    store.create_database("sbtest").unwrap();
    let t = store.create_table(sbtest("sbtest1")).unwrap();
    let mut txn = store
        .begin(TxnOptions {
            durability: Some(shale_table::Durability::Sync),
            ..TxnOptions::default()
        })
        .unwrap();
    let first = txn.next_auto_increment(&t).unwrap();
    txn.insert(&t, row(first.cast_signed(), 1, "c", None))
        .unwrap();
    txn.commit().unwrap();
    let image = fs.crash_image(shale_fs::CrashMode::DropUnsynced);
    drop(store);
    let store = open(&image);
    let t = store.catalog().table("sbtest", "sbtest1").unwrap().clone();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    assert!(txn.next_auto_increment(&t).unwrap() > first);
}

#[test]
fn ddl_errors_drop_truncate_and_indexes() {
    let (fs, store, t) = setup();
    assert!(matches!(
        store.create_database("sbtest"),
        Err(Error::DatabaseExists(_))
    ));
    assert!(matches!(
        store.create_table(sbtest("sbtest1")),
        Err(Error::TableExists { .. })
    ));
    let mut other = sbtest("x");
    other.database = "nope".into();
    assert!(matches!(
        store.create_table(other),
        Err(Error::NoSuchDatabase(_))
    ));
    assert!(matches!(
        store.drop_table("sbtest", "nope"),
        Err(Error::NoSuchTable { .. })
    ));

    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in 1..=20 {
        txn.insert(&t, row(id, id % 4, &format!("c{}", id % 2), None))
            .unwrap();
    }
    txn.commit().unwrap();

    // CREATE INDEX fills the index; a unique one over duplicates is refused
    store
        .create_index("sbtest", "sbtest1", index("c_k", vec![2, 1], false))
        .unwrap();
    assert!(matches!(
        store.create_index("sbtest", "sbtest1", index("c_u", vec![2], true)),
        Err(Error::DuplicateKey { .. })
    ));
    let t = store.catalog().table("sbtest", "sbtest1").unwrap().clone();
    assert_eq!(t.indexes.len(), 3);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let hits = collect(
        &mut txn
            .scan(
                &t,
                IndexChoice::Secondary(2),
                KeyRange::prefix(vec![Value::Bytes(b"C1".to_vec()), Value::Int(1)]),
                false,
                LockMode::None,
            )
            .unwrap(),
    );
    assert_eq!(ids(&hits), [1, 5, 9, 13, 17]);
    assert!(txn.check_table(&t).unwrap().is_ok());
    drop(txn);

    store.drop_index("sbtest", "sbtest1", "k_1").unwrap();
    let t = store.catalog().table("sbtest", "sbtest1").unwrap().clone();
    assert_eq!(
        t.indexes
            .iter()
            .map(|i| i.name.as_str())
            .collect::<Vec<_>>(),
        ["u_1", "c_k"]
    );
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    assert!(txn.check_table(&t).unwrap().is_ok());
    drop(txn);

    store.truncate_table("sbtest", "sbtest1").unwrap();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let check = txn.check_table(&t).unwrap();
    assert_eq!((check.rows, check.index_entries.clone()), (0, vec![0, 0]));
    assert_eq!(
        txn.next_auto_increment(&t).unwrap(),
        1,
        "TRUNCATE resets AUTO_INCREMENT"
    );
    txn.insert(&t, row(1, 1, "again", None)).unwrap();
    txn.commit().unwrap();

    store.drop_table("sbtest", "sbtest1").unwrap();
    assert!(store.catalog().table("sbtest", "sbtest1").is_none());
    store.create_table(sbtest("sbtest2")).unwrap();
    store.drop_database("sbtest").unwrap();
    assert!(store.catalog().databases.is_empty());
    store.close().unwrap();
    let store = open(&fs);
    assert!(store.catalog().databases.is_empty());
    // the dropped data is gone from the engine too: only system keys (index id 1) remain
    let mut iter = store
        .engine()
        .db()
        .iterator(shale_engine::ReadOptions::default())
        .unwrap();
    iter.seek_to_first();
    while iter.valid() {
        assert_eq!(
            &iter.key()[..4],
            [0, 0, 0, 1],
            "data left behind after DROP DATABASE"
        );
        assert!(
            !matches!(iter.key()[4], b'T' | b'D' | b'A' | b'R'),
            "catalog entry left behind"
        );
        iter.next();
    }
}

#[test]
fn tables_without_a_primary_key_use_hidden_row_ids() {
    let fs = MemFs::new();
    let store = open(&fs);
    store.create_database("d").unwrap();
    let def = TableDef {
        database: "d".into(),
        name: "heap".into(),
        columns: vec![
            column("a", ColumnType::Int { unsigned: true }, true),
            column(
                "b",
                ColumnType::Text {
                    collation: Collation::Binary,
                },
                true,
            ),
        ],
        primary_key: index("", vec![], true),
        indexes: vec![index("a", vec![0], false)],
        schema_version: 0,
        past_versions: Vec::new(),
    };
    let t = store.create_table(def).unwrap();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let r = vec![Value::UInt(7), Value::Bytes(b"x".to_vec())];
    txn.insert(&t, r.clone()).unwrap();
    txn.insert(&t, r.clone()).unwrap(); // duplicates are fine without a key
    txn.insert(&t, vec![Value::Null, Value::Null]).unwrap();
    let all = collect(
        &mut txn
            .scan(
                &t,
                IndexChoice::Primary,
                KeyRange::all(),
                false,
                LockMode::None,
            )
            .unwrap(),
    );
    assert_eq!(all.len(), 3);
    assert_eq!(
        txn.get(&t, &[Value::UInt(1)], LockMode::None).unwrap(),
        Some(r.clone()),
        "row ids start at 1"
    );
    txn.update(&t, &r, vec![Value::UInt(8), Value::Bytes(b"y".to_vec())])
        .unwrap();
    txn.delete(&t, &r).unwrap();
    let by_a = collect(
        &mut txn
            .scan(
                &t,
                IndexChoice::Secondary(0),
                KeyRange::all(),
                false,
                LockMode::None,
            )
            .unwrap(),
    );
    assert_eq!(
        by_a,
        [
            vec![Value::Null, Value::Null],
            vec![Value::UInt(8), Value::Bytes(b"y".to_vec())]
        ]
    );
    assert!(txn.check_table(&t).unwrap().is_ok());
    // By row id: the cursor tells which row it returned.
    let mut cursor = txn
        .scan(
            &t,
            IndexChoice::Secondary(0),
            KeyRange::prefix(vec![Value::UInt(8)]),
            false,
            LockMode::None,
        )
        .unwrap();
    assert!(cursor.next_row().unwrap().is_some());
    let id = cursor.row_id().expect("a hidden row id");
    drop(cursor);
    txn.update_by_row_id(&t, id, vec![Value::UInt(9), Value::Null])
        .unwrap();
    assert_eq!(
        txn.get(&t, &[Value::UInt(id)], LockMode::None).unwrap(),
        Some(vec![Value::UInt(9), Value::Null])
    );
    txn.delete_by_row_id(&t, id).unwrap();
    assert_eq!(
        txn.get(&t, &[Value::UInt(id)], LockMode::None).unwrap(),
        None
    );
    let check = txn.check_table(&t).unwrap();
    assert!(check.is_ok() && check.rows == 1, "{check:?}");
    txn.commit().unwrap();
}

#[test]
fn lock_waits_time_out_and_the_transaction_goes_on() {
    let (_fs, store, t) = setup();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    txn.insert(&t, row(1, 1, "c", None)).unwrap();
    txn.commit().unwrap();

    let rc = TxnOptions {
        isolation: IsolationLevel::ReadCommitted,
        ..TxnOptions::default()
    };
    let mut a = store.begin(rc.clone()).unwrap();
    let mut b = store.begin(rc).unwrap();
    assert!(a
        .get(&t, &[Value::Int(1)], LockMode::Exclusive)
        .unwrap()
        .is_some());
    assert!(matches!(
        b.get(&t, &[Value::Int(1)], LockMode::Shared),
        Err(Error::LockWaitTimeout)
    ));
    assert!(matches!(
        b.update(&t, &row(1, 1, "c", None), row(1, 2, "c", None)),
        Err(Error::LockWaitTimeout)
    ));
    assert!(
        matches!(
            b.insert(&t, row(1, 1, "c", None)),
            Err(Error::LockWaitTimeout)
        ),
        "the pk check waits too"
    );
    assert!(
        b.get(&t, &[Value::Int(1)], LockMode::None)
            .unwrap()
            .is_some(),
        "plain reads do not wait"
    );
    b.insert(&t, row(2, 1, "c", None)).unwrap();
    a.update(&t, &row(1, 1, "c", None), row(1, 9, "c", None))
        .unwrap();
    a.commit().unwrap();
    b.commit().unwrap();
    let mut check = store.begin(TxnOptions::default()).unwrap();
    assert_eq!(
        check.get(&t, &[Value::Int(1)], LockMode::None).unwrap(),
        Some(row(1, 9, "c", None))
    );
    assert!(check.check_table(&t).unwrap().is_ok());
}

#[test]
fn a_repeatable_read_write_conflict_is_a_deadlock_and_resets_the_transaction() {
    let (_fs, store, t) = setup();
    let mut setup_txn = store.begin(TxnOptions::default()).unwrap();
    setup_txn.insert(&t, row(1, 1, "c", None)).unwrap();
    setup_txn.commit().unwrap();
    let mut a = store.begin(TxnOptions::default()).unwrap();
    a.insert(&t, row(50, 1, "mine", None)).unwrap();
    let mut b = store.begin(TxnOptions::default()).unwrap();
    b.update(&t, &row(1, 1, "c", None), row(1, 2, "c", None))
        .unwrap();
    b.commit().unwrap();
    assert!(matches!(
        a.update(&t, &row(1, 1, "c", None), row(1, 3, "c", None)),
        Err(Error::Deadlock)
    ));
    assert_eq!(
        a.get(&t, &[Value::Int(50)], LockMode::None).unwrap(),
        None,
        "rolled back whole"
    );
    a.update(&t, &row(1, 2, "c", None), row(1, 3, "c", None))
        .unwrap();
    a.commit().unwrap();
}

#[test]
fn table_txn_is_send_and_store_is_sync() {
    fn send<T: Send>() {}
    fn sync<T: Send + Sync>() {}
    send::<shale_table::TableTxn>();
    send::<shale_table::RowCursor<'static>>();
    sync::<shale_table::Catalog>();
    sync::<Store>();
}

#[test]
fn table_stats_count_small_tables_and_estimate_large_ones() {
    let (_fs, store, t) = setup();
    let other = store.create_table(sbtest("other")).unwrap();
    let fill = |table: &TableDef, n: i64| {
        let mut txn = store.begin(TxnOptions::default()).unwrap();
        for id in 0..n {
            txn.insert(table, row(id, id, "c", None)).unwrap();
        }
        txn.commit().unwrap();
    };
    fill(&t, 100);
    fill(&other, 10_000);
    let small = store.table_stats(&t).unwrap();
    assert_eq!((small.rows, small.exact), (100, true));
    store.engine().db().flush().unwrap();
    let large = store.table_stats(&other).unwrap();
    assert!(!large.exact);
    assert!((9_000..=11_000).contains(&large.rows), "{large:?}");
    assert!(large.data_bytes > 0);
    let range = |lower: i64, upper: i64| KeyRange {
        lower: Bound::Included(vec![Value::Int(lower)]),
        upper: Bound::Excluded(vec![Value::Int(upper)]),
    };
    let few = store
        .records_in_range(&other, IndexChoice::Primary, range(100, 200))
        .unwrap();
    assert_eq!((few.rows, few.exact), (100, true));
    let many = store
        .records_in_range(&other, IndexChoice::Primary, range(0, 9000))
        .unwrap();
    assert!(
        !many.exact && (8_000..=10_000).contains(&many.rows),
        "{many:?}"
    );
    let none = store
        .records_in_range(&other, IndexChoice::Primary, range(50, 10))
        .unwrap();
    assert_eq!(none.rows, 0);
    let by_k = store
        .records_in_range(
            &other,
            IndexChoice::Secondary(0),
            KeyRange::prefix(vec![Value::Int(7)]),
        )
        .unwrap();
    assert_eq!((by_k.rows, by_k.exact), (1, true));
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let got = txn
        .get_many(
            &t,
            &[
                vec![Value::Int(3)],
                vec![Value::Int(1000)],
                vec![Value::Int(5)],
            ],
            LockMode::None,
        )
        .unwrap();
    assert_eq!(
        got,
        [Some(row(3, 3, "c", None)), None, Some(row(5, 5, "c", None))]
    );
}

#[test]
fn failed_statements_and_savepoints_undo_their_writes() {
    let (_fs, store, t) = setup();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    txn.insert(&t, row(1, 1, "a", Some("one"))).unwrap();
    txn.insert(&t, row(2, 2, "b", Some("two"))).unwrap();
    // A pk change deletes the old row and its entries before the unique check of the new
    // entry fails: the statement must undo those deletes.
    match txn.update(
        &t,
        &row(2, 2, "b", Some("two")),
        row(3, 3, "b", Some("ONE")),
    ) {
        Err(Error::DuplicateKey { key, .. }) => assert_eq!(key, "u_1"),
        other => panic!("expected a duplicate, got {other:?}"),
    }
    assert_eq!(
        txn.get(&t, &[Value::Int(2)], LockMode::None).unwrap(),
        Some(row(2, 2, "b", Some("two")))
    );
    assert!(txn.check_table(&t).unwrap().is_ok());

    txn.set_savepoint();
    txn.insert(&t, row(4, 4, "d", Some("four"))).unwrap();
    txn.delete(&t, &row(1, 1, "a", Some("one"))).unwrap();
    txn.rollback_to_savepoint().unwrap();
    assert_eq!(txn.get(&t, &[Value::Int(4)], LockMode::None).unwrap(), None);
    assert!(txn
        .get(&t, &[Value::Int(1)], LockMode::None)
        .unwrap()
        .is_some());
    txn.set_savepoint();
    txn.insert(&t, row(5, 5, "e", None)).unwrap();
    txn.release_savepoint().unwrap();
    assert!(txn.rollback_to_savepoint().is_err(), "no savepoint left");
    let check = txn.check_table(&t).unwrap();
    assert!(check.is_ok() && check.rows == 3, "{check:?}");
    txn.commit().unwrap();
}

#[test]
fn a_plain_key_value_database_is_not_taken_for_a_store() {
    let fs = MemFs::new();
    {
        let db = shale_engine::Db::open("/db", options(&fs).engine).unwrap();
        db.put(b"user key", b"value").unwrap();
        db.close().unwrap();
    }
    assert!(matches!(
        Store::open("/db", options(&fs)),
        Err(Error::InvalidArgument(_))
    ));
    let db = shale_engine::Db::open("/db", options(&fs).engine).unwrap();
    assert_eq!(
        db.get(b"user key").unwrap(),
        Some(b"value".to_vec()),
        "nothing was swept"
    );
}

#[test]
fn auto_increment_columns_must_be_integers_leading_a_key() {
    let (_fs, store, _t) = setup();
    let mut unkeyed = sbtest("unkeyed");
    unkeyed.columns[0].auto_increment = false;
    unkeyed.columns[1].auto_increment = true;
    unkeyed.indexes.clear();
    assert!(
        matches!(
            store.create_table(unkeyed.clone()),
            Err(Error::InvalidArgument(_))
        ),
        "AUTO_INCREMENT must lead a key"
    );
    unkeyed.indexes.push(index("k_1", vec![1], false));
    store.create_table(unkeyed.clone()).unwrap();
    assert!(
        matches!(
            store.drop_index("sbtest", "unkeyed", "k_1"),
            Err(Error::InvalidArgument(_))
        ),
        "its key cannot be dropped"
    );
    let mut text = sbtest("text");
    text.columns[0].auto_increment = false;
    text.columns[2].auto_increment = true;
    text.indexes.push(index("c_1", vec![2], false));
    assert!(
        matches!(store.create_table(text), Err(Error::InvalidArgument(_))),
        "and be an integer"
    );
}

#[test]
fn auto_increment_values_of_rolled_back_inserts_are_not_reused_after_a_crash() {
    let (fs, store, t) = setup();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let mut last = 0;
    for _ in 0..3000 {
        last = txn.next_auto_increment(&t).unwrap();
    }
    assert_eq!(last, 3000);
    txn.rollback();
    let image = fs.crash_image(shale_fs::CrashMode::DropUnsynced);
    drop(store);
    let store = open(&image);
    let t = store.catalog().table("sbtest", "sbtest1").unwrap().clone();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let next = txn.next_auto_increment(&t).unwrap();
    assert!(next > 3000, "handed out again: {next}");
    assert!(
        next <= 3000 + 1025,
        "at most one reservation skipped: {next}"
    );
}

/// TIMESTAMP values are stored in UTC: rows written at different UTC offsets sort in UTC order
/// through both indexes, read back at any offset shifted by it, are found again by `update` and
/// `delete` at that offset, and outside the TIMESTAMP range are refused.
#[test]
fn timestamps_are_stored_in_utc_and_shown_at_the_transactions_offset() {
    let fs = MemFs::new();
    let store = open(&fs);
    store.create_database("d").unwrap();
    let def = TableDef {
        database: "d".into(),
        name: "t".into(),
        columns: vec![
            column("id", ColumnType::Int { unsigned: false }, false),
            column("at", ColumnType::Timestamp { fsp: 0 }, true),
        ],
        primary_key: index("PRIMARY", vec![0], true),
        indexes: vec![index("at", vec![1], false)],
        schema_version: 1,
        past_versions: Vec::new(),
    };
    let table = store.create_table(def).unwrap();
    let at = |text: &str| Value::DateTime(shale_table::DateTime::parse(text, Some(0)).unwrap());
    let hour = 3600;
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    // 10:00 at +05:00 is 05:00 UTC; 07:00 at -01:00 is 08:00 UTC; 06:00 UTC.
    txn.set_time_zone_offset(5 * hour);
    txn.insert(&table, vec![Value::Int(1), at("2024-01-01 10:00:00")])
        .unwrap();
    txn.set_time_zone_offset(-hour);
    txn.insert(&table, vec![Value::Int(2), at("2024-01-01 07:00:00")])
        .unwrap();
    txn.set_time_zone_offset(0);
    txn.insert(&table, vec![Value::Int(3), at("2024-01-01 06:00:00")])
        .unwrap();
    let by_time = |txn: &mut shale_table::TableTxn, range: KeyRange| {
        let mut cursor = txn
            .scan(
                &table,
                IndexChoice::Secondary(0),
                range,
                false,
                LockMode::None,
            )
            .unwrap();
        collect(&mut cursor)
    };
    let rows = by_time(&mut txn, KeyRange::all());
    assert_eq!(ids(&rows), vec![1, 3, 2]);
    assert_eq!(rows[0][1], at("2024-01-01 05:00:00"));
    txn.set_time_zone_offset(2 * hour);
    let rows = by_time(&mut txn, KeyRange::all());
    assert_eq!(rows[2][1], at("2024-01-01 10:00:00"));
    // Bounds are in the transaction's zone too: [07:30, 08:00] at +02:00 is [05:30, 06:00] UTC.
    let range = KeyRange {
        lower: Bound::Included(vec![at("2024-01-01 07:30:00")]),
        upper: Bound::Included(vec![at("2024-01-01 08:00:00")]),
    };
    assert_eq!(ids(&by_time(&mut txn, range)), vec![3]);
    let row = txn
        .get(&table, &[Value::Int(2)], LockMode::None)
        .unwrap()
        .unwrap();
    assert_eq!(row[1], at("2024-01-01 10:00:00"));
    txn.update(&table, &row, vec![Value::Int(2), at("2024-01-01 06:30:00")])
        .unwrap();
    let third = txn
        .get(&table, &[Value::Int(3)], LockMode::None)
        .unwrap()
        .unwrap();
    txn.delete(&table, &third).unwrap();
    txn.set_time_zone_offset(0);
    let rows = by_time(&mut txn, KeyRange::all());
    assert_eq!(ids(&rows), vec![2, 1]);
    assert_eq!(rows[0][1], at("2024-01-01 04:30:00"));
    assert!(matches!(
        txn.insert(&table, vec![Value::Int(4), at("2038-01-19 03:14:08")]),
        Err(Error::TimestampOutOfRange { .. })
    ));
    txn.set_time_zone_offset(hour);
    assert!(matches!(
        txn.insert(&table, vec![Value::Int(4), at("1970-01-01 01:00:00")]),
        Err(Error::TimestampOutOfRange { .. })
    ));
    assert!(txn.check_table(&table).unwrap().is_ok());
    txn.commit().unwrap();
}

#[test]
fn index_cardinality_counts_distinct_prefixes_by_collation_and_scales_a_sample() {
    let (_fs, store, _t) = setup();
    let cardinality = |table: &TableDef, index: IndexChoice| {
        let rows = store.table_stats(table).unwrap().rows;
        store.index_cardinality(table, index, rows).unwrap()
    };
    let mut def = sbtest("kc");
    def.indexes = vec![index("kc", vec![1, 2], false)];
    let kc = store.create_table(def).unwrap();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in 0..100 {
        // 'a' and 'A' are one value under utf8mb4_general_ci.
        let c = if id % 4 < 2 { "a" } else { "A" };
        txn.insert(&kc, row(id, id % 10, c, None)).unwrap();
    }
    txn.commit().unwrap();
    assert_eq!(cardinality(&kc, IndexChoice::Primary), vec![100]);
    assert_eq!(cardinality(&kc, IndexChoice::Secondary(0)), vec![10, 10]);
    let mut nulls = sbtest("nulls");
    nulls.indexes = vec![index("u_1", vec![4], false)];
    let nulls = store.create_table(nulls).unwrap();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in 0..50 {
        txn.insert(&nulls, row(id, 0, "c", None)).unwrap();
    }
    txn.commit().unwrap();
    assert_eq!(
        cardinality(&nulls, IndexChoice::Secondary(0)),
        vec![1],
        "NULLs count as one value (innodb_stats_method=nulls_equal)"
    );

    // Past the sample: 40 rows per k, so the first entries hold only the lowest k values
    // and the count is scaled by the table's estimated rows.
    let big = store.create_table(sbtest("big")).unwrap();
    let rows: i64 = 40_000;
    assert!(rows.unsigned_abs() > shale_table::SAMPLE_LIMIT);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in 0..rows {
        txn.insert(&big, row(id, id % 1000, "c", None)).unwrap();
    }
    txn.commit().unwrap();
    store.engine().db().flush().unwrap();
    let k = cardinality(&big, IndexChoice::Secondary(0));
    assert!((950..=1050).contains(&k[0]), "k_1 cardinality {k:?}");
    let primary = cardinality(&big, IndexChoice::Primary);
    assert!(
        (38_000..=42_000).contains(&primary[0]),
        "PRIMARY cardinality {primary:?}"
    );
}

#[test]
fn index_statistics_are_stored_across_restarts_and_swept_with_their_table() {
    let (fs, store, _t) = setup();
    // Nothing estimates behind the test's back.
    store.set_stats_auto_recalc(false);
    let mut def = sbtest("kept");
    def.indexes = vec![index("k_1", vec![1], false)];
    let kept = store.create_table(def).unwrap();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in 0..60 {
        txn.insert(&kept, row(id, id % 6, "c", None)).unwrap();
    }
    txn.commit().unwrap();
    let k_1 = IndexChoice::Secondary(0);
    // Never estimated: nothing is known, and asking does not estimate.
    assert_eq!(store.known_index_cardinality(&kept, k_1).unwrap(), None);
    assert_eq!(store.known_index_cardinality(&kept, k_1).unwrap(), None);
    store.analyze_index(&kept, k_1).unwrap();
    let (figures, rows) = store.known_index_cardinality(&kept, k_1).unwrap().unwrap();
    assert_eq!((&*figures, rows), (&[6u64][..], 60));
    let id = kept.indexes[0].index_id;
    store.close().unwrap();

    let store = open(&fs);
    let kept = Arc::clone(store.catalog().table("sbtest", "kept").unwrap());
    let (figures, rows) = store.known_index_cardinality(&kept, k_1).unwrap().unwrap();
    assert_eq!(
        (&*figures, rows),
        (&[6u64][..], 60),
        "read back after a restart"
    );
    // The primary key was never estimated.
    assert_eq!(
        store
            .known_index_cardinality(&kept, IndexChoice::Primary)
            .unwrap(),
        None
    );
    store.drop_table("sbtest", "kept").unwrap();
    store.close().unwrap();

    // The next open deletes the figures of index ids the catalog no longer has.
    let store = open(&fs);
    let mut key = vec![0, 0, 0, 1, b'S'];
    key.extend_from_slice(&id.to_be_bytes());
    assert_eq!(store.engine().db().get(&key).unwrap(), None);
}

#[test]
fn index_statistics_are_estimated_again_once_a_tenth_of_the_rows_changed() {
    let (_fs, store, _t) = setup();
    let mut def = sbtest("auto");
    def.indexes = vec![index("k_1", vec![1], false)];
    let auto = store.create_table(def).unwrap();
    let k_1 = IndexChoice::Secondary(0);
    let insert = |ids: std::ops::Range<i64>, k: fn(i64) -> i64| {
        let mut txn = store.begin(TxnOptions::default()).unwrap();
        for id in ids {
            txn.insert(&auto, row(id, k(id), "c", None)).unwrap();
        }
        txn.commit().unwrap();
    };
    insert(0..100, |id| id % 2);
    // Waits (bounded) until k_1's figures are `expected`, made with `rows` rows.
    let wait_for = |expected: u64, rows: u64| {
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        loop {
            let known = store.known_index_cardinality(&auto, k_1).unwrap();
            if known
                .as_ref()
                .is_some_and(|(figures, r)| figures[0] == expected && *r == rows)
            {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "k_1's figures are still {known:?}, not [{expected}] of {rows} rows"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    // A table never estimated is estimated at its first change.
    wait_for(2, 100);
    // 100 more rows with a value each: more than a tenth of 100 changed.
    insert(100..200, |id| id);
    wait_for(102, 200);
    assert!(store.stats_auto_recalc());
}

#[test]
fn dropping_the_store_closes_the_engine_even_while_statistics_are_estimated() {
    // A first change queues a table at once, so the statistics thread is estimating (and
    // holding the store) around the moment the test drops it; the reopen must never find
    // the engine's LOCK still held. Many tables, many rounds: the race is narrow.
    let fs = MemFs::new();
    for round in 0..30 {
        let store = open(&fs);
        if round == 0 {
            store.create_database("sbtest").unwrap();
        }
        let mut def = sbtest(&format!("r{round}"));
        def.indexes = vec![index("k_1", vec![1], false)];
        let t = store.create_table(def).unwrap();
        let mut txn = store.begin(TxnOptions::default()).unwrap();
        for id in 0..300 {
            txn.insert(&t, row(id, id % 7, "c", None)).unwrap();
        }
        txn.commit().unwrap();
        // Vary how far the thread got (it is due at once) before the drop.
        std::thread::sleep(Duration::from_millis(round % 3));
        drop(store);
    }
    open(&fs).close().unwrap();
}
