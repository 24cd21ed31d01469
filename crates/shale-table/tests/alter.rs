//! ALTER TABLE on columns and RENAME TABLE in the table layer (alter.rs): instant changes
//! keep old rows readable through past schema versions across reopens, rewrites convert
//! every row and rebuild the indexes, a failed rewrite leaves the table as it was.

use std::sync::Arc;

use shale_engine::Options;
use shale_fs::MemFs;
use shale_table::{
    AlterMethod, Collation, ColumnDef, ColumnSource, ColumnType, ConvertFn, Error, IndexChoice,
    IndexDef, KeyRange, LockMode, Store, StoreOptions, TableChange, TableDef, TxnOptions, Value,
};

fn open(fs: &MemFs) -> Store {
    let options = StoreOptions {
        engine: Options {
            file_system: Arc::new(fs.clone()),
            ..Options::default()
        },
        ..StoreOptions::default()
    };
    Store::open("/db", options).unwrap()
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

const INT: ColumnType = ColumnType::Int { unsigned: false };

/// `t (id INT PRIMARY KEY, k INT, c VARCHAR(10), KEY k_1 (k), KEY kc (k, c))` with rows
/// `(i, i % 3, 'v{i}')` for i in 0..n.
fn setup(store: &Store, n: i64) -> Arc<TableDef> {
    store.create_database("d").unwrap();
    let varchar = ColumnType::VarChar {
        len: 10,
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
            columns: vec![
                column("id", INT, false),
                column("k", INT, true),
                column("c", varchar, true),
            ],
            primary_key: index("PRIMARY", vec![0]),
            indexes: vec![index("k_1", vec![1]), index("kc", vec![1, 2])],
            schema_version: 0,
            past_versions: Vec::new(),
        })
        .unwrap();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for i in 0..n {
        txn.insert(
            &t,
            vec![
                Value::Int(i),
                Value::Int(i % 3),
                Value::Bytes(format!("v{i}").into_bytes()),
            ],
        )
        .unwrap();
    }
    txn.commit().unwrap();
    t
}

fn alter(
    store: &Store,
    f: impl FnOnce(&mut TableDef) -> Vec<ColumnSource>,
    convert: ConvertFn<Error>,
) -> Result<AlterMethod, Error> {
    let mut def = (**store.catalog().table("d", "t").unwrap()).clone();
    let sources = f(&mut def);
    store
        .alter_table("d", "t", TableChange { def, sources }, convert)
        .map(|(_, method)| method)
}

#[allow(clippy::unnecessary_wraps)] // the converter's signature
fn unchanged(_: &ColumnDef, _: &ColumnDef, v: Value, _: u64) -> Result<Value, Error> {
    Ok(v)
}

fn rows(store: &Store) -> Vec<Vec<Value>> {
    let t = store.catalog().table("d", "t").unwrap().clone();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    assert!(txn.check_table(&t).unwrap().is_ok());
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

#[test]
#[allow(clippy::too_many_lines)] // one story of four ALTERs
fn instant_add_and_drop_column_keep_old_rows_readable_across_reopens() {
    let fs = MemFs::new();
    let store = open(&fs);
    setup(&store, 5);
    // ADD COLUMN a INT NOT NULL DEFAULT 7 FIRST.
    let method = alter(
        &store,
        |def| {
            let mut a = column("a", INT, false);
            a.default = Some(Value::Int(7));
            def.columns.insert(0, a);
            def.primary_key.columns = vec![1];
            def.indexes[0].columns = vec![2];
            def.indexes[1].columns = vec![2, 3];
            vec![
                ColumnSource::Fill(Value::Int(7)),
                ColumnSource::Stored(0),
                ColumnSource::Stored(1),
                ColumnSource::Stored(2),
            ]
        },
        Arc::new(unchanged),
    )
    .unwrap();
    assert_eq!(method, AlterMethod::Instant);
    // A row written at the new version beside the old ones.
    let t = store.catalog().table("d", "t").unwrap().clone();
    assert_eq!(t.past_versions.len(), 1);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    txn.insert(
        &t,
        vec![
            Value::Int(1),
            Value::Int(10),
            Value::Null,
            Value::Bytes(b"new".to_vec()),
        ],
    )
    .unwrap();
    txn.commit().unwrap();
    // The default changes later; rows from before the ADD still read the value it was
    // added with.
    alter(
        &store,
        |def| {
            def.columns[0].default = Some(Value::Int(8));
            (0..4).map(ColumnSource::Stored).collect()
        },
        Arc::new(unchanged),
    )
    .unwrap();
    // ADD COLUMN z VARCHAR(10) NULL (appended), then DROP COLUMN a: both instant, composed
    // over two past versions.
    alter(
        &store,
        |def| {
            def.columns.push(column(
                "z",
                ColumnType::VarChar {
                    len: 10,
                    collation: Collation::Utf8mb4Bin,
                },
                true,
            ));
            (0..4)
                .map(ColumnSource::Stored)
                .chain([ColumnSource::Fill(Value::Null)])
                .collect()
        },
        Arc::new(unchanged),
    )
    .unwrap();
    let method = alter(
        &store,
        |def| {
            def.columns.remove(0);
            def.primary_key.columns = vec![0];
            def.indexes[0].columns = vec![1];
            def.indexes[1].columns = vec![1, 2];
            (1..5).map(ColumnSource::Stored).collect()
        },
        Arc::new(unchanged),
    )
    .unwrap();
    assert_eq!(method, AlterMethod::Instant);
    let got = rows(&store);
    assert_eq!(got.len(), 6);
    assert_eq!(
        got[1],
        vec![
            Value::Int(1),
            Value::Int(1),
            Value::Bytes(b"v1".to_vec()),
            Value::Null
        ]
    );
    assert_eq!(
        got[5],
        vec![
            Value::Int(10),
            Value::Null,
            Value::Bytes(b"new".to_vec()),
            Value::Null
        ]
    );
    drop(store);
    let store = open(&fs);
    assert_eq!(rows(&store), got);
    let t = store.catalog().table("d", "t").unwrap().clone();
    assert_eq!(t.past_versions.len(), 3);
    // The secondary index still leads to the rows.
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let mut cursor = txn
        .scan(
            &t,
            IndexChoice::Secondary(0),
            KeyRange::prefix(vec![Value::Int(2)]),
            false,
            LockMode::None,
        )
        .unwrap();
    assert_eq!(
        cursor.next_row().unwrap().map(|r| r[0].clone()),
        Some(Value::Int(2))
    );
}

#[test]
fn first_rows_read_their_add_time_value_after_a_default_change() {
    let fs = MemFs::new();
    let store = open(&fs);
    setup(&store, 2);
    alter(
        &store,
        |def| {
            let mut a = column("a", INT, false);
            a.default = Some(Value::Int(7));
            def.columns.push(a);
            (0..3)
                .map(ColumnSource::Stored)
                .chain([ColumnSource::Fill(Value::Int(7))])
                .collect()
        },
        Arc::new(unchanged),
    )
    .unwrap();
    alter(
        &store,
        |def| {
            def.columns[3].default = Some(Value::Int(8));
            (0..4).map(ColumnSource::Stored).collect()
        },
        Arc::new(unchanged),
    )
    .unwrap();
    assert_eq!(rows(&store)[0][3], Value::Int(7));
}

#[test]
fn dropping_an_indexed_column_rewrites_and_removes_it_from_the_index() {
    let fs = MemFs::new();
    let store = open(&fs);
    let before = setup(&store, 50);
    // DROP COLUMN c: kc (k, c) becomes kc (k).
    let method = alter(
        &store,
        |def| {
            def.columns.pop();
            def.indexes[1].columns = vec![1];
            vec![ColumnSource::Stored(0), ColumnSource::Stored(1)]
        },
        Arc::new(unchanged),
    )
    .unwrap();
    assert_eq!(method, AlterMethod::Rewrite { rows: 50 });
    let t = store.catalog().table("d", "t").unwrap().clone();
    assert_ne!(t.primary_key.index_id, before.primary_key.index_id);
    assert!(t.past_versions.is_empty());
    let got = rows(&store);
    assert_eq!(got.len(), 50);
    assert_eq!(got[7], vec![Value::Int(7), Value::Int(1)]);
    drop(store);
    assert_eq!(rows(&open(&fs)), got);
}

#[test]
fn a_failed_conversion_or_duplicate_leaves_the_table_as_it_was() {
    let fs = MemFs::new();
    let store = open(&fs);
    let before = setup(&store, 20);
    let old_rows = rows(&store);
    // MODIFY c INT: the converter refuses 'v13'.
    let result = alter(
        &store,
        |def| {
            def.columns[2].ty = INT;
            (0..3).map(ColumnSource::Stored).collect()
        },
        Arc::new(|_: &ColumnDef, _: &ColumnDef, v: Value, _: u64| match v {
            Value::Bytes(b) if b == b"v13" => Err(Error::InvalidArgument("v13".into())),
            _ => Ok(Value::Int(0)),
        }),
    );
    assert!(matches!(result, Err(Error::InvalidArgument(m)) if m == "v13"));
    // A unique index over k (which repeats) fails the rewrite with a duplicate.
    let result = alter(
        &store,
        |def| {
            def.columns[1].ty = ColumnType::BigInt { unsigned: false };
            def.indexes[0].unique = true;
            (0..3).map(ColumnSource::Stored).collect()
        },
        Arc::new(unchanged),
    );
    assert!(
        matches!(result, Err(Error::DuplicateKey { .. })),
        "{result:?}"
    );
    assert_eq!(store.catalog().table("d", "t").unwrap(), &before);
    assert_eq!(rows(&store), old_rows);
    drop(store);
    let store = open(&fs);
    assert_eq!(rows(&store), old_rows);
}

#[test]
fn rename_tables_is_ordered_and_all_or_nothing() {
    let fs = MemFs::new();
    let store = open(&fs);
    setup(&store, 3);
    let mut u = (**store.catalog().table("d", "t").unwrap()).clone();
    u.name = "u".into();
    u.indexes.clear();
    store.create_table(u).unwrap();
    let t_id = store
        .catalog()
        .table("d", "t")
        .unwrap()
        .primary_key
        .index_id;
    // A swap through a temporary name.
    store
        .rename_tables(&[
            ("d", "t", "d", "tmp"),
            ("d", "u", "d", "t"),
            ("d", "tmp", "d", "u"),
        ])
        .unwrap();
    assert_eq!(
        store
            .catalog()
            .table("d", "u")
            .unwrap()
            .primary_key
            .index_id,
        t_id
    );
    // The second rename fails: nothing changes.
    let result = store.rename_tables(&[("d", "u", "d", "v"), ("d", "nope", "d", "w")]);
    assert!(matches!(result, Err(Error::NoSuchTable { .. })));
    let result = store.rename_tables(&[("d", "u", "d", "t")]);
    assert!(matches!(result, Err(Error::TableExists { .. })));
    drop(store);
    let store = open(&fs);
    let catalog = store.catalog();
    assert_eq!(catalog.table("d", "u").unwrap().primary_key.index_id, t_id);
    assert!(catalog.table("d", "v").is_none());
    assert_eq!(rows_of(&store, "u"), 3);
}

fn rows_of(store: &Store, name: &str) -> usize {
    let t = store.catalog().table("d", name).unwrap().clone();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    txn.check_table(&t).unwrap().rows as usize
}

#[test]
fn a_table_made_with_its_rows_appears_whole_or_not_at_all() {
    let fs = MemFs::new();
    let store = open(&fs);
    let t = setup(&store, 0);
    let mut def = (*t).clone();
    def.name = "c".into();
    def.primary_key.columns.clear(); // hidden row ids, numbered from 1
    def.indexes[0].unique = true;
    let row = |i: i64| {
        vec![
            Value::Int(i),
            Value::Int(i),
            Value::Bytes(format!("v{i}").into_bytes()),
        ]
    };
    // The source fails half-way: no table, nothing left under its ids.
    let mut failing = (0..5000).map(|i| {
        if i == 4500 {
            Err(Error::InvalidArgument("source failed".into()))
        } else {
            Ok(row(i))
        }
    });
    let result = store.create_table_with_rows(def.clone(), &mut failing);
    assert!(matches!(result, Err(Error::InvalidArgument(m)) if m == "source failed"));
    // A duplicate in the unique index fails it too.
    let mut duplicate = (0..10).map(|i| Ok::<_, Error>(row(i % 9)));
    let result = store.create_table_with_rows(def.clone(), &mut duplicate);
    assert!(
        matches!(result, Err(Error::DuplicateKey { .. })),
        "{result:?}"
    );
    assert!(store.catalog().table("d", "c").is_none());
    let mut good = (0..5000).map(|i| Ok::<_, Error>(row(i)));
    let (c, count) = store.create_table_with_rows(def, &mut good).unwrap();
    assert_eq!(count, 5000);
    assert_eq!(rows_of(&store, "c"), 5000);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let mut cursor = txn
        .scan(
            &c,
            IndexChoice::Primary,
            KeyRange::all(),
            false,
            LockMode::None,
        )
        .unwrap();
    assert_eq!(cursor.next_row().unwrap(), Some(row(0)));
    assert_eq!(cursor.row_id(), Some(1));
    drop(cursor);
    drop(txn);
    // Only the live table's ids hold keys after a reopen's sweep of the failed attempts.
    drop(store);
    let store = open(&fs);
    let ids: Vec<u32> = store
        .catalog()
        .databases
        .values()
        .flat_map(|t| t.values())
        .flat_map(|t| std::iter::once(&t.primary_key).chain(&t.indexes))
        .map(|i| i.index_id)
        .collect();
    let mut iter = store
        .engine()
        .db()
        .iterator(shale_engine::ReadOptions::default())
        .unwrap();
    iter.seek_to_first();
    while iter.valid() {
        let id = u32::from_be_bytes(iter.key()[..4].try_into().unwrap());
        assert!(id == 1 || ids.contains(&id), "a key of index id {id}");
        iter.next();
    }
}

#[test]
fn past_versions_are_capped_by_a_rewrite() {
    let fs = MemFs::new();
    let store = open(&fs);
    setup(&store, 3);
    let mut methods = Vec::new();
    for i in 0..=shale_table::MAX_PAST_VERSIONS {
        // Alternately add a column `x` and drop it again: each a new schema version.
        let method = alter(
            &store,
            |def| {
                if def.columns.len() == 4 {
                    def.columns.pop();
                    (0..3).map(ColumnSource::Stored).collect()
                } else {
                    def.columns.push(column("x", INT, true));
                    (0..3)
                        .map(ColumnSource::Stored)
                        .chain([ColumnSource::Fill(Value::Int(i64::try_from(i).unwrap()))])
                        .collect()
                }
            },
            Arc::new(unchanged),
        )
        .unwrap();
        methods.push(method);
    }
    let t = store.catalog().table("d", "t").unwrap().clone();
    assert!(methods[..shale_table::MAX_PAST_VERSIONS]
        .iter()
        .all(|m| *m == AlterMethod::Instant));
    assert_eq!(methods.last(), Some(&AlterMethod::Rewrite { rows: 3 }));
    assert!(t.past_versions.is_empty());
    let got = rows(&store);
    assert_eq!(got.len(), 3);
    drop(store);
    assert_eq!(rows(&open(&fs)), got);
}
