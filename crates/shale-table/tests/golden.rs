//! Golden test: the keys and values a tiny table writes, byte for byte, so the format pages
//! (docs/format/table-keys.md, rows.md, catalog.md) and the code cannot drift apart.
//! Regenerate with `SHALE_REGENERATE_GOLDEN=1 cargo test -p shale-table --test golden` after a
//! deliberate format change (and update the pages).

use std::fmt::Write as _;
use std::sync::Arc;

use shale_engine::{Options, ReadOptions};
use shale_fs::MemFs;
use shale_table::{
    Collation, ColumnDef, ColumnType, IndexDef, Store, StoreOptions, TableDef, TxnOptions, Value,
};

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn golden_table() -> TableDef {
    let column = |name: &str, ty, nullable| ColumnDef {
        name: name.into(),
        ty,
        nullable,
        default: None,
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    };
    TableDef {
        database: "d".into(),
        name: "t".into(),
        columns: vec![
            column("id", ColumnType::Int { unsigned: false }, false),
            column(
                "name",
                ColumnType::VarChar {
                    len: 20,
                    collation: Collation::Utf8mb4GeneralCi,
                },
                true,
            ),
            column("score", ColumnType::Double, true),
        ],
        primary_key: IndexDef {
            name: "PRIMARY".into(),
            columns: vec![0],
            unique: true,
            index_id: 0,
        },
        indexes: vec![
            IndexDef {
                name: "by_name".into(),
                columns: vec![1],
                unique: false,
                index_id: 0,
            },
            IndexDef {
                name: "u_score".into(),
                columns: vec![2],
                unique: true,
                index_id: 0,
            },
        ],
        schema_version: 0,
        past_versions: Vec::new(),
    }
}

#[test]
fn golden_table_layout() {
    let fs = MemFs::new();
    let store = Store::open(
        "/db",
        StoreOptions {
            engine: Options {
                file_system: Arc::new(fs),
                ..Options::default()
            },
            ..StoreOptions::default()
        },
    )
    .unwrap();
    store.create_database("d").unwrap();
    let table = store.create_table(golden_table()).unwrap();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    txn.insert(
        &table,
        vec![
            Value::Int(1),
            Value::Bytes(b"Ann".to_vec()),
            Value::Double(-0.5),
        ],
    )
    .unwrap();
    txn.insert(&table, vec![Value::Int(-2), Value::Null, Value::Null])
        .unwrap();
    txn.commit().unwrap();

    let mut out = String::new();
    for (name, keyspace) in [("default", store.engine().db().default_keyspace())] {
        // System keys (index id 1) first, then the table's rows and entries.
        writeln!(out, "keyspace {name}").unwrap();
        let mut iter = keyspace.iterator(ReadOptions::default()).unwrap();
        iter.seek_to_first();
        while iter.valid() {
            writeln!(
                out,
                "  key   {}\n  value {}",
                hex(iter.key()),
                hex(iter.value())
            )
            .unwrap();
            iter.next();
        }
    }
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/testdata/golden_table.txt"
    );
    if std::env::var_os("SHALE_REGENERATE_GOLDEN").is_some() {
        std::fs::write(path, &out).unwrap();
    }
    let expected = std::fs::read_to_string(path).unwrap_or_default();
    assert_eq!(
        out, expected,
        "the table layout changed; if deliberate, regenerate with \
         SHALE_REGENERATE_GOLDEN=1 cargo test -p shale-table --test golden"
    );
}
