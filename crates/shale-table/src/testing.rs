//! Entry points for tests and fuzz targets (feature `testing`): the encoders and decoders on
//! their own, without a store. The `fuzz_*` functions are the bodies of the cargo-fuzz targets
//! in fuzz/ (`tests/fuzz_smoke.rs` runs them on every `cargo test`).

use crate::error::Result;
use crate::schema::{ColumnDef, TableDef};
use crate::value::Value;

/// One column's memcomparable key encoding (docs/format/table-keys.md).
pub fn encode_key_column(column: &ColumnDef, value: &Value) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    crate::codec::key::encode_column(&mut out, column, value, &mut Vec::new())?;
    Ok(out)
}

/// A row value's encoding (docs/format/rows.md).
pub fn encode_row(table: &TableDef, row: &[Value]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    crate::codec::row::encode_row(&mut out, table, row)?;
    Ok(out)
}

/// Decodes a row value (untrusted bytes).
pub fn decode_row(table: &TableDef, bytes: &[u8]) -> Result<Vec<Value>> {
    crate::codec::row::decode_row(table, bytes)
}

/// A table definition as the catalog stores it (docs/format/catalog.md): seeds for the
/// `table_definition` fuzz target.
pub fn encode_table_definition(def: &TableDef) -> Vec<u8> {
    crate::system::encode_table(def)
}

/// Decodes a stored table definition (untrusted bytes; docs/format/catalog.md).
pub fn decode_table_definition(bytes: &[u8]) -> Result<TableDef> {
    crate::system::decode_table(bytes)
}

/// sysbench's table `sbtest.sbtest1`: `id INT PRIMARY KEY [AUTO_INCREMENT], k INT, c CHAR(120),
/// pad CHAR(60), KEY k_1 (k)`, every column NOT NULL, strings in `utf8mb4_general_ci` (the
/// examples and benchmarks all load this one).
pub fn sysbench_table(auto_increment: bool) -> TableDef {
    use crate::schema::IndexDef;
    use crate::types::{Collation, ColumnType};
    let column = |name: &str, ty| ColumnDef {
        name: name.into(),
        ty,
        nullable: false,
        default: None,
        auto_increment: false,
        auto_timestamp: crate::schema::AutoTimestamp::default(),
        generated: None,
    };
    let chars = |len| ColumnType::Char {
        len,
        collation: Collation::Utf8mb4GeneralCi,
    };
    let mut id = column("id", ColumnType::Int { unsigned: false });
    id.auto_increment = auto_increment;
    TableDef {
        database: "sbtest".into(),
        name: "sbtest1".into(),
        columns: vec![
            id,
            column("k", ColumnType::Int { unsigned: false }),
            column("c", chars(120)),
            column("pad", chars(60)),
        ],
        primary_key: IndexDef {
            name: "PRIMARY".into(),
            columns: vec![0],
            unique: true,
            index_id: 0,
        },
        indexes: vec![IndexDef {
            name: "k_1".into(),
            columns: vec![1],
            unique: false,
            index_id: 0,
        }],
        schema_version: 0,
        past_versions: Vec::new(),
    }
}

/// A table with one column of every type and collation (nullable ones too), a composite
/// primary key and three secondary indexes: what [`fuzz_row`] decodes against.
pub fn fuzz_table() -> TableDef {
    use crate::schema::IndexDef;
    use crate::types::{Collation, ColumnType};
    let column = |name: &str, ty, nullable| ColumnDef {
        name: name.into(),
        ty,
        nullable,
        default: None,
        auto_increment: false,
        auto_timestamp: crate::schema::AutoTimestamp::default(),
        generated: None,
    };
    let string = |collation| ColumnType::VarChar { len: 40, collation };
    let index = |name: &str, columns: Vec<usize>, unique| IndexDef {
        name: name.into(),
        columns,
        unique,
        index_id: 0,
    };
    TableDef {
        database: "fuzz".into(),
        name: "t".into(),
        columns: vec![
            column("i", ColumnType::Int { unsigned: false }, false),
            column("s", string(Collation::Utf8mb4GeneralCi), false),
            column("t", ColumnType::TinyInt { unsigned: false }, true),
            column("m", ColumnType::MediumInt { unsigned: true }, true),
            column("b", ColumnType::BigInt { unsigned: true }, true),
            column("d", ColumnType::Double, true),
            column("bin", string(Collation::Binary), true),
            column("u", string(Collation::Utf8mb4Bin), true),
            column("sm", ColumnType::SmallInt { unsigned: false }, true),
        ],
        primary_key: IndexDef {
            name: "PRIMARY".into(),
            columns: vec![0, 1],
            unique: true,
            index_id: 300,
        },
        indexes: vec![
            index("by_d", vec![5, 2], false),
            index("by_u", vec![7], true),
            index("by_bin", vec![6, 4, 3], true),
        ],
        schema_version: 1,
        past_versions: Vec::new(),
    }
}

/// Fuzz body: `data` as a row value of [`fuzz_table`]. What decodes must re-encode, decode to
/// the same row, and give keys for the row and every index entry that lead back to the row.
pub fn fuzz_row(data: &[u8]) {
    let table = fuzz_table();
    let Ok(row) = decode_row(&table, data) else {
        return;
    };
    let again = encode_row(&table, &row).expect("a decoded row re-encodes");
    assert_eq!(
        decode_row(&table, &again).ok(),
        Some(row.clone()),
        "a row changed through a round trip"
    );
    let mut scratch = Vec::new();
    let mut pk = Vec::new();
    crate::index::pk_key_of_row(&mut pk, &table, &row, None, &mut scratch)
        .expect("a decoded row has a key");
    for index in &table.indexes {
        let (key, value) = crate::index::entry_for_row(&table, index, &row, &pk, &mut scratch)
            .expect("a decoded row has entries");
        let back = crate::index::pk_key_of_entry(&table, index, &key, &value)
            .expect("an entry leads to its row");
        assert_eq!(back, pk, "entry of index {} leads elsewhere", index.name);
    }
}

/// Fuzz body: `data` as a stored table definition. What decodes must re-encode to bytes that
/// decode to the same definition; `data` also goes through the key column skipper and the
/// entry-to-row decoder of [`fuzz_table`]'s indexes.
pub fn fuzz_table_definition(data: &[u8]) {
    if let Ok(def) = crate::system::decode_table(data) {
        let encoded = crate::system::encode_table(&def);
        let again = crate::system::decode_table(&encoded).expect("a decoded definition re-encodes");
        assert_eq!(
            crate::system::encode_table(&again),
            encoded,
            "a definition changed through a round trip"
        );
    }
    let table = fuzz_table();
    for index in &table.indexes {
        let _ = crate::index::pk_key_of_entry(&table, index, data, b"");
    }
}
