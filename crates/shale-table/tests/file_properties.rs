//! Self-describing table files (`file_properties.rs`, docs/format/catalog.md "Table file
//! properties"): every table file of the store records its index ids and the definitions
//! behind them, after a flush, a compaction and a bulk load, and its entries read as rows.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_engine::inspect::{read_table_properties, table_file_name};
use shale_engine::Options;
use shale_fs::MemFs;
use shale_sst::{ParsedInternalKey, Table, TableOpenOptions};
use shale_table::{
    BulkLoadOptions, Collation, ColumnDef, ColumnType, Error, FileTables, IndexDef, Store,
    StoreOptions, TableDef, TxnOptions, Value, INDEX_IDS_PROPERTY, TABLE_DEFS_PROPERTY,
};

const DIR: &str = "/db";

fn open(fs: &MemFs) -> Store {
    Store::open(
        DIR,
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

/// `shop.items`: id INT primary key, name VARCHAR (`general_ci`), code VARBINARY; a
/// non-unique index on name and a unique one on code. `shop.tags`: no primary key.
fn create(store: &Store) -> (Arc<TableDef>, Arc<TableDef>) {
    store.create_database("shop").unwrap();
    let items = store
        .create_table(TableDef {
            database: "shop".into(),
            name: "items".into(),
            columns: vec![
                column("id", ColumnType::Int { unsigned: false }, false),
                column(
                    "name",
                    ColumnType::VarChar {
                        len: 40,
                        collation: Collation::Utf8mb4GeneralCi,
                    },
                    false,
                ),
                column(
                    "code",
                    ColumnType::VarChar {
                        len: 8,
                        collation: Collation::Binary,
                    },
                    true,
                ),
            ],
            primary_key: index("PRIMARY", vec![0], true),
            indexes: vec![
                index("by_name", vec![1], false),
                index("by_code", vec![2], true),
            ],
            schema_version: 0,
            past_versions: Vec::new(),
        })
        .unwrap();
    let tags = store
        .create_table(TableDef {
            database: "shop".into(),
            name: "tags".into(),
            columns: vec![column("tag", ColumnType::BigInt { unsigned: true }, false)],
            primary_key: index("PRIMARY", Vec::new(), true),
            indexes: Vec::new(),
            schema_version: 0,
            past_versions: Vec::new(),
        })
        .unwrap();
    (items, tags)
}

fn insert(store: &Store, table: &TableDef, rows: Vec<Vec<Value>>) {
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for row in rows {
        txn.insert(table, row).unwrap();
    }
    txn.commit().unwrap();
}

fn item(id: i64, name: &str, code: Option<&str>) -> Vec<Value> {
    vec![
        Value::Int(id),
        Value::Bytes(name.as_bytes().to_vec()),
        code.map_or(Value::Null, |c| Value::Bytes(c.as_bytes().to_vec())),
    ]
}

fn ids(table: &TableDef) -> Vec<u32> {
    let mut ids: Vec<u32> = std::iter::once(&table.primary_key)
        .chain(&table.indexes)
        .map(|i| i.index_id)
        .collect();
    ids.sort_unstable();
    ids
}

/// The live table files of the store, with what each says it holds.
fn live_files(fs: &MemFs, store: &Store) -> Vec<(PathBuf, FileTables)> {
    let version = store.engine().db().current_version();
    version
        .all_files()
        .map(|(_, _, file)| {
            let path = table_file_name(Path::new(DIR), file.number);
            let props = read_table_properties(fs, &path).unwrap();
            let tables = FileTables::from_properties(&props.user, &path)
                .unwrap()
                .unwrap_or_else(|| panic!("{} describes nothing", path.display()));
            (path, tables)
        })
        .collect()
}

/// The definitions a file carries, by table name.
fn defs(tables: &FileTables) -> BTreeMap<String, (TableDef, Vec<u32>)> {
    tables
        .tables
        .iter()
        .map(|(def, ids)| (def.name.clone(), (def.clone(), ids.clone())))
        .collect()
}

/// Every entry of the file at `path` described as a row, in order.
fn describe_all(fs: &MemFs, path: &Path, tables: &FileTables) -> Vec<String> {
    let table = Table::open(fs, path, &TableOpenOptions::default()).unwrap();
    let mut iter = table.iter(shale_sst::ReadOptions::default());
    iter.seek_to_first();
    let mut out = Vec::new();
    while iter.valid() {
        let key = ParsedInternalKey::parse(iter.key()).unwrap();
        if let Some(text) = tables
            .describe_entry(key.user_key, key.kind, iter.value())
            .unwrap()
        {
            out.push(text);
        }
        iter.next();
    }
    out
}

#[test]
fn flushed_and_compacted_files_carry_the_definitions_of_their_tables() {
    let fs = MemFs::new();
    let store = open(&fs);
    let (items, tags) = create(&store);
    insert(
        &store,
        &items,
        vec![item(1, "Pear", Some("p-1")), item(2, "apple", None)],
    );
    insert(&store, &tags, vec![vec![Value::UInt(7)]]);
    let db = store.engine().db();
    db.flush().unwrap();

    let files = live_files(&fs, &store);
    assert_eq!(files.len(), 1);
    let (path, tables) = &files[0];
    let mut expected_ids = vec![1]; // the catalog's own keys
    expected_ids.extend(ids(&items));
    expected_ids.extend(ids(&tags));
    expected_ids.sort_unstable();
    assert_eq!(tables.index_ids, expected_ids);
    let described = defs(tables);
    assert_eq!(described.len(), 2, "{described:?}");
    assert_eq!(described["items"], ((*items).clone(), ids(&items)));
    assert_eq!(described["tags"], ((*tags).clone(), ids(&tags)));
    assert_eq!(
        store.catalog().table("shop", "items").map(|t| &**t),
        Some(&described["items"].0)
    );

    let rows = describe_all(&fs, path, tables);
    let pear = "shop.items (id=1) = (id=1, name='Pear', code='p-1')";
    assert!(rows.contains(&pear.to_owned()), "{rows:#?}");
    assert!(
        rows.contains(&"shop.items index by_code (code='p-1') -> pk (id=1)".to_owned()),
        "{rows:#?}"
    );
    // A unique index entry with a NULL keeps the primary key in its key.
    assert!(
        rows.contains(&"shop.items index by_code (code=NULL) -> pk (id=2)".to_owned()),
        "{rows:#?}"
    );
    // general_ci keys keep weights only (uppercase, no trailing spaces).
    assert!(
        rows.contains(&"shop.items index by_name (name~'APPLE') -> pk (id=2)".to_owned()),
        "{rows:#?}"
    );
    assert!(
        rows.iter()
            .any(|r| r.starts_with("shop.tags (row id ") && r.ends_with("= (tag=7)")),
        "{rows:#?}"
    );
    assert_eq!(rows.len(), 2 * 3 + 1, "{rows:#?}");

    // A compaction's output describes the same tables.
    insert(&store, &items, vec![item(3, "plum", Some("p-3"))]);
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();
    let files = live_files(&fs, &store);
    assert_eq!(files.len(), 1);
    let (path, tables) = &files[0];
    assert_eq!(tables.index_ids, expected_ids);
    assert_eq!(defs(tables)["items"], ((*items).clone(), ids(&items)));
    let rows = describe_all(&fs, path, tables);
    assert!(rows.contains(&pear.to_owned()), "{rows:#?}");
    assert!(
        rows.contains(&"shop.items (id=3) = (id=3, name='plum', code='p-3')".to_owned()),
        "{rows:#?}"
    );
    store.close().unwrap();
}

#[test]
fn a_file_written_after_a_drop_lists_the_dropped_ids_without_definitions() {
    let fs = MemFs::new();
    let store = open(&fs);
    let (items, tags) = create(&store);
    insert(&store, &items, vec![item(1, "Pear", None)]);
    insert(&store, &tags, vec![vec![Value::UInt(7)]]);
    // The rows of tags are still in the memtable (under the drop's range tombstone) when it
    // is flushed.
    store.drop_table("shop", "tags").unwrap();
    store.engine().db().flush().unwrap();
    let files = live_files(&fs, &store);
    assert_eq!(files.len(), 1);
    let (path, tables) = &files[0];
    assert!(tables.index_ids.contains(&tags.primary_key.index_id));
    let defs = defs(tables);
    assert_eq!(defs.keys().collect::<Vec<_>>(), ["items"]);
    assert!(tables.lookup(tags.primary_key.index_id).is_none());
    // Its rows are not described (the tool shows them in hex).
    let rows = describe_all(&fs, path, tables);
    assert!(
        rows.iter().all(|r| r.starts_with("shop.items")),
        "{rows:#?}"
    );
    store.close().unwrap();
}

#[test]
fn bulk_loaded_files_carry_the_definition() {
    let fs = MemFs::new();
    let store = open(&fs);
    let (items, _) = create(&store);
    let mut load = store.bulk_load(&items, BulkLoadOptions::default()).unwrap();
    for id in 1..=50 {
        load.insert(&item(id, &format!("n{id}"), Some(&format!("c{id}"))))
            .unwrap();
    }
    load.finish().unwrap();
    let files = live_files(&fs, &store);
    // One ingested file per index: rows, by_name, by_code.
    assert_eq!(files.len(), 3, "{files:?}");
    let mut seen_ids: Vec<u32> = Vec::new();
    for (path, tables) in &files {
        assert_eq!(tables.index_ids.len(), 1, "{tables:?}");
        let (def, held) = &tables.tables[0];
        assert_eq!(def, &*items);
        assert_eq!(held, &tables.index_ids);
        seen_ids.extend(held);
        assert_eq!(describe_all(&fs, path, tables).len(), 50);
    }
    seen_ids.sort_unstable();
    assert_eq!(seen_ids, ids(&items));
    store.close().unwrap();
}

/// A change to a property's bytes.
type Damage = fn(&mut Vec<u8>);

#[test]
fn malformed_properties_are_errors_naming_the_file_and_property() {
    let fs = MemFs::new();
    let store = open(&fs);
    let (items, _) = create(&store);
    insert(&store, &items, vec![item(1, "Pear", None)]);
    store.engine().db().flush().unwrap();
    let version = store.engine().db().current_version();
    let file = version.all_files().next().unwrap().2.clone();
    let path = table_file_name(Path::new(DIR), file.number);
    let good = read_table_properties(&fs, &path).unwrap().user;
    store.close().unwrap();

    let cases: [(&str, Damage); 5] = [
        (INDEX_IDS_PROPERTY, |b| b[0] = 9),
        (INDEX_IDS_PROPERTY, |b| b.truncate(b.len() - 1)),
        (TABLE_DEFS_PROPERTY, |b| b.truncate(b.len() - 3)),
        (TABLE_DEFS_PROPERTY, |b| b.push(0)),
        // The first table's first id (after the version, the table count and its id count)
        // becomes one it does not own.
        (TABLE_DEFS_PROPERTY, |b| b[3..7].copy_from_slice(&[0xFF; 4])),
    ];
    for (property, damage) in cases {
        let mut user = good.clone();
        damage(user.get_mut(property).unwrap());
        let err = FileTables::from_properties(&user, &path).unwrap_err();
        assert!(matches!(err, Error::Corruption(_)), "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&path.display().to_string()) && text.contains(property),
            "{text}"
        );
    }
    // A file with no such properties describes nothing.
    assert_eq!(
        FileTables::from_properties(&BTreeMap::new(), &path).unwrap(),
        None
    );
}

#[test]
fn key_text_reads_keys_of_each_index_back_into_columns() {
    let fs = MemFs::new();
    let store = open(&fs);
    let (items, tags) = create(&store);
    insert(
        &store,
        &items,
        vec![item(1, "Pear", Some("p-1")), item(2, "apple", None)],
    );
    insert(&store, &tags, vec![vec![Value::UInt(7)]]);
    let db = store.engine().db();
    db.flush().unwrap();
    let files = live_files(&fs, &store);
    let (path, _) = &files[0];
    let table = Table::open(&fs, path, &TableOpenOptions::default()).unwrap();
    let mut iter = table.iter(shale_sst::ReadOptions::default());
    iter.seek_to_first();
    let mut texts = Vec::new();
    while iter.valid() {
        let key = ParsedInternalKey::parse(iter.key())
            .unwrap()
            .user_key
            .to_vec();
        let id = u32::from_be_bytes(*key.first_chunk::<4>().unwrap());
        let choice = if id == items.primary_key.index_id {
            Some((&items, None))
        } else if id == tags.primary_key.index_id {
            Some((&tags, None))
        } else {
            items
                .indexes
                .iter()
                .position(|i| i.index_id == id)
                .map(|i| (&items, Some(i)))
        };
        if let Some((def, index)) = choice {
            texts.push(shale_table::key_text(def, index, &key).unwrap());
            // A key cut short, or one read against the wrong index, is an error, never a
            // panic or a made-up value.
            assert!(shale_table::key_text(def, index, &key[..key.len() - 1]).is_err());
        }
        iter.next();
    }
    for expected in [
        "id=1",
        "id=2",
        "name~'APPLE' -> pk (id=2)",
        "name~'PEAR' -> pk (id=1)",
        "code='p-1'",
        "code=NULL -> pk (id=2)",
    ] {
        assert!(texts.contains(&expected.to_owned()), "{texts:#?}");
    }
    assert!(texts.iter().any(|t| t.starts_with("row id ")), "{texts:#?}");
    assert_eq!(texts.len(), 7, "{texts:#?}");
}
