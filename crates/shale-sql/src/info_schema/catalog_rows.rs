//! Rows described from the catalog: SCHEMATA, TABLES, COLUMNS, STATISTICS,
//! KEY_COLUMN_USAGE and SHALE_DDL. Sizes in TABLES come from estimates (module doc rule 2):
//! TABLE_ROWS from `Store::table_stats` (at most `COUNT_LIMIT` rows read, then extrapolated),
//! DATA_LENGTH and INDEX_LENGTH from the bytes of table files holding each index's keys
//! (`Store::index_disk_bytes`, block-granular) capped by the index's uncompressed estimate,
//! or that estimate while an index's entries are all still in memtables.

use shale_table::{Collation, ColumnType, IndexChoice, KeyRange, Store, TableDef, Value};

use super::tables::ALL;
use super::{text, DATABASE};
use crate::error::SqlError;

type Row = Vec<Value>;

const CATALOG: &str = "def";

/// Every database with its tables, `information_schema` first (it has no catalog entry).
fn databases(store: &Store) -> Vec<String> {
    let mut names = vec![DATABASE.to_string()];
    names.extend(store.catalog().databases.keys().cloned());
    names
}

/// The collation name of a column type's text (None for numbers and dates).
pub(super) fn collation_name(ty: &ColumnType) -> Option<&'static str> {
    let collation = match ty {
        ColumnType::Char { collation, .. }
        | ColumnType::VarChar { collation, .. }
        | ColumnType::Text { collation }
        | ColumnType::Enum { collation, .. }
        | ColumnType::Set { collation, .. } => *collation,
        _ => return None,
    };
    match collation {
        Collation::Binary => None,
        other => Some(crate::coercibility::stored_name(other)),
    }
}

pub(super) fn schemata(store: &Store) -> Vec<Row> {
    databases(store)
        .iter()
        .map(|db| {
            let (charset, collation) = if db == DATABASE {
                ("utf8mb3", "utf8mb3_general_ci")
            } else {
                ("utf8mb4", "utf8mb4_general_ci")
            };
            vec![
                text(CATALOG),
                text(db),
                text(charset),
                text(collation),
                Value::Null,
                text("NO"),
            ]
        })
        .collect()
}

/// What SHOW TABLE STATUS and TABLES report of one table's size.
#[derive(Debug, Clone, Copy)]
pub(super) struct TableSize {
    pub rows: u64,
    pub data_length: u64,
    pub index_length: u64,
}

impl TableSize {
    pub(super) fn avg_row_length(&self) -> u64 {
        self.data_length.checked_div(self.rows).unwrap_or(0)
    }
}

/// Bytes of an index: its keys' bytes in table files, at most the uncompressed estimate
/// (a range smaller than a data block would otherwise count whole blocks), or the estimate
/// while none of its keys is in a table file yet.
fn index_bytes(on_disk: u64, estimate: u64) -> u64 {
    if on_disk > 0 {
        on_disk.min(estimate)
    } else {
        estimate
    }
}

/// The estimates of the module doc for `def`.
pub(super) fn table_size(store: &Store, def: &TableDef) -> Result<TableSize, SqlError> {
    let stats = store.table_stats(def)?;
    let data_length = index_bytes(
        store.index_disk_bytes(def, IndexChoice::Primary)?,
        stats.data_bytes,
    );
    let mut index_length = 0;
    for i in 0..def.indexes.len() {
        let estimate = store
            .records_in_range(def, IndexChoice::Secondary(i), KeyRange::all())?
            .data_bytes;
        index_length += index_bytes(
            store.index_disk_bytes(def, IndexChoice::Secondary(i))?,
            estimate,
        );
    }
    Ok(TableSize {
        rows: stats.rows,
        data_length,
        index_length,
    })
}

pub(super) fn tables(store: &Store) -> Result<Vec<Row>, SqlError> {
    let mut out = Vec::new();
    for t in ALL {
        let mut row = vec![
            text(CATALOG),
            text(DATABASE),
            text(t.name()),
            text("SYSTEM VIEW"),
        ];
        row.extend(std::iter::repeat_n(Value::Null, 13));
        row.extend([text("utf8mb3_general_ci"), Value::Null, text(""), text("")]);
        out.push(row);
    }
    for (db, tables) in &store.catalog().databases {
        for def in tables.values() {
            let size = table_size(store, def)?;
            out.push(table_row(db, def, &size));
        }
    }
    out.extend(crate::views::info_schema_tables(store));
    Ok(out)
}

fn table_row(db: &str, def: &TableDef, size: &TableSize) -> Row {
    vec![
        text(CATALOG),
        text(db),
        text(&def.name),
        text("BASE TABLE"),
        text("Shale"),
        Value::Int(10),
        text("Dynamic"),
        Value::UInt(size.rows),
        Value::UInt(size.avg_row_length()),
        Value::UInt(size.data_length),
        Value::UInt(0),
        Value::UInt(size.index_length),
        Value::UInt(0),
        // The next AUTO_INCREMENT value is kept by the table layer's sequence, which it
        // does not expose without reserving a value: NULL, as MySQL shows for tables
        // without AUTO_INCREMENT.
        Value::Null,
        Value::Null,
        Value::Null,
        Value::Null,
        text("utf8mb4_general_ci"),
        Value::Null,
        text(""),
        text(""),
    ]
}

/// COLUMN_KEY / SHOW COLUMNS' Key of column `pos`.
fn column_key(def: &TableDef, pos: usize) -> &'static str {
    if def.primary_key.columns.contains(&pos) {
        "PRI"
    } else if def
        .indexes
        .iter()
        .any(|i| i.unique && i.columns.first() == Some(&pos))
    {
        "UNI"
    } else if def.indexes.iter().any(|i| i.columns.first() == Some(&pos)) {
        "MUL"
    } else {
        ""
    }
}

/// DATA_TYPE, CHARACTER_MAXIMUM_LENGTH, CHARACTER_OCTET_LENGTH, NUMERIC_PRECISION,
/// NUMERIC_SCALE, DATETIME_PRECISION.
fn type_parts(ty: &ColumnType) -> (&'static str, Value, Value, Value, Value, Value) {
    let n = Value::Null;
    let u = |x: u64| Value::UInt(x);
    let chars = |name, len: u32, per_char: u64| {
        (
            name,
            Value::Int(i64::from(len)),
            Value::Int(i64::from(len) * per_char as i64),
            Value::Null,
            Value::Null,
            Value::Null,
        )
    };
    let per_char = |c: &Collation| if *c == Collation::Binary { 1 } else { 4 };
    match ty {
        ColumnType::TinyInt { .. } => ("tinyint", n.clone(), n, u(3), u(0), Value::Null),
        ColumnType::SmallInt { .. } => ("smallint", n.clone(), n, u(5), u(0), Value::Null),
        ColumnType::MediumInt { .. } => ("mediumint", n.clone(), n, u(7), u(0), Value::Null),
        ColumnType::Int { .. } => ("int", n.clone(), n, u(10), u(0), Value::Null),
        ColumnType::BigInt { unsigned } => (
            "bigint",
            n.clone(),
            n,
            u(if *unsigned { 20 } else { 19 }),
            u(0),
            Value::Null,
        ),
        ColumnType::Float => ("float", n.clone(), n, u(12), Value::Null, Value::Null),
        ColumnType::Double => ("double", n.clone(), n, u(22), Value::Null, Value::Null),
        ColumnType::Decimal { precision, scale } => (
            "decimal",
            n.clone(),
            n,
            u(u64::from(*precision)),
            u(u64::from(*scale)),
            Value::Null,
        ),
        ColumnType::Date => ("date", n.clone(), n.clone(), n.clone(), n, Value::Null),
        ColumnType::Year => ("year", n.clone(), n.clone(), n.clone(), n, Value::Null),
        ColumnType::Timestamp { fsp } => (
            "timestamp",
            n.clone(),
            n.clone(),
            n.clone(),
            n,
            u(u64::from(*fsp)),
        ),
        ColumnType::Json => ("json", n.clone(), n.clone(), n.clone(), n, Value::Null),
        ColumnType::Time { fsp } => (
            "time",
            n.clone(),
            n.clone(),
            n.clone(),
            n,
            u(u64::from(*fsp)),
        ),
        ColumnType::DateTime { fsp } => (
            "datetime",
            n.clone(),
            n.clone(),
            n.clone(),
            n,
            u(u64::from(*fsp)),
        ),
        ColumnType::Enum { members, collation } => chars(
            "enum",
            crate::enum_type::max_chars(members),
            per_char(collation),
        ),
        ColumnType::Set { members, collation } => chars(
            "set",
            crate::set_type::max_chars(members),
            per_char(collation),
        ),
        ColumnType::Char { len, collation } => chars(
            if *collation == Collation::Binary {
                "binary"
            } else {
                "char"
            },
            *len,
            per_char(collation),
        ),
        ColumnType::VarChar { len, collation } => chars(
            if *collation == Collation::Binary {
                "varbinary"
            } else {
                "varchar"
            },
            *len,
            per_char(collation),
        ),
        ColumnType::Text { collation } => {
            let name = if *collation == Collation::Binary {
                "blob"
            } else {
                "text"
            };
            (
                name,
                Value::Int(65_535 / per_char(collation) as i64),
                Value::Int(65_535),
                Value::Null,
                Value::Null,
                Value::Null,
            )
        }
    }
}

pub(super) fn columns(store: &Store) -> Vec<Row> {
    let mut out = Vec::new();
    for t in ALL {
        for (i, col) in t.columns().iter().enumerate() {
            let ty = if col.kind.sql_type().meta("", false).charset == 63 {
                "bigint unsigned"
            } else {
                "varchar(64)"
            };
            let data_type = ty.split(' ').next().unwrap_or(ty);
            out.push(vec![
                text(CATALOG),
                text(DATABASE),
                text(t.name()),
                text(col.name),
                Value::UInt(i as u64 + 1),
                Value::Null,
                text(if col.kind.nullable() { "YES" } else { "NO" }),
                text(data_type),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                text(ty),
                text(""),
                text(""),
                text("select"),
                text(""),
                text(""),
                Value::Null,
            ]);
        }
    }
    let catalog = store.catalog();
    let tables = catalog.databases.values().flat_map(|t| t.values().cloned());
    // Views' columns too, as their SELECT types them now (views.rs).
    for def in tables.chain(crate::views::shapes(&catalog)) {
        let db = &def.database;
        for (pos, c) in def.columns.iter().enumerate() {
            let (data_type, max_len, octets, precision, scale, fsp) = type_parts(&c.ty);
            let collation = collation_name(&c.ty);
            let default = crate::timestamp::default_text(c)
                .or_else(|| c.default.as_ref().and_then(crate::value::as_text))
                .map_or(Value::Null, |d| text(&d));
            out.push(vec![
                text(CATALOG),
                text(db),
                text(&def.name),
                text(&c.name),
                Value::UInt(pos as u64 + 1),
                default,
                text(if c.nullable { "YES" } else { "NO" }),
                text(data_type),
                max_len,
                octets,
                precision,
                scale,
                fsp,
                collation.map_or(Value::Null, |name| {
                    text(crate::names::charset_of_collation(name).unwrap_or("utf8mb4"))
                }),
                collation.map_or(Value::Null, text),
                text(&crate::ddl::type_text(&c.ty)),
                text(column_key(&def, pos)),
                if c.auto_increment {
                    text("auto_increment")
                } else {
                    text(&crate::gencols::extra_text(c))
                },
                text("select,insert,update,references"),
                text(""),
                text(crate::gencols::expression_text(c)),
                Value::Null,
            ]);
        }
    }
    out
}

/// The primary key (unless hidden) and the secondary indexes of `def`: name, unique,
/// column positions.
fn indexes(def: &TableDef) -> Vec<(&str, bool, &[usize])> {
    let mut out = Vec::new();
    if !def.has_hidden_primary_key() {
        out.push(("PRIMARY", true, def.primary_key.columns.as_slice()));
    }
    for ix in &def.indexes {
        out.push((ix.name.as_str(), ix.unique, ix.columns.as_slice()));
    }
    out
}

pub(super) fn statistics(store: &Store) -> Vec<Row> {
    let mut out = Vec::new();
    for (db, tables) in &store.catalog().databases {
        for def in tables.values() {
            // One row estimate for all the table's indexes; a failed estimate shows NULL.
            let rows = store.table_stats(def).map(|s| s.rows).ok();
            for (n, (name, unique, cols)) in indexes(def).into_iter().enumerate() {
                // `indexes` lists PRIMARY first unless it is hidden.
                let index = if def.has_hidden_primary_key() {
                    shale_table::IndexChoice::Secondary(n)
                } else if n == 0 {
                    shale_table::IndexChoice::Primary
                } else {
                    shale_table::IndexChoice::Secondary(n - 1)
                };
                let cardinality =
                    rows.and_then(|rows| store.cached_index_cardinality(def, index, rows).ok());
                for (seq, &pos) in cols.iter().enumerate() {
                    let Some(col) = def.columns.get(pos) else {
                        continue;
                    };
                    out.push(vec![
                        text(CATALOG),
                        text(db),
                        text(&def.name),
                        Value::UInt(u64::from(!unique)),
                        text(db),
                        text(name),
                        Value::UInt(seq as u64 + 1),
                        text(&col.name),
                        text("A"),
                        crate::show::cardinality_value(cardinality.as_deref(), seq),
                        Value::Null,
                        Value::Null,
                        text(if col.nullable { "YES" } else { "" }),
                        text("LSM"),
                        text(""),
                        text(""),
                        text("YES"),
                        Value::Null,
                    ]);
                }
            }
        }
    }
    out
}

pub(super) fn key_column_usage(store: &Store) -> Vec<Row> {
    let mut out = Vec::new();
    for (db, tables) in &store.catalog().databases {
        for def in tables.values() {
            for (name, unique, cols) in indexes(def) {
                if !unique {
                    continue;
                }
                for (seq, &pos) in cols.iter().enumerate() {
                    let Some(col) = def.columns.get(pos) else {
                        continue;
                    };
                    out.push(vec![
                        text(CATALOG),
                        text(db),
                        text(name),
                        text(CATALOG),
                        text(db),
                        text(&def.name),
                        text(&col.name),
                        Value::UInt(seq as u64 + 1),
                        Value::Null,
                        Value::Null,
                        Value::Null,
                        Value::Null,
                    ]);
                }
            }
        }
    }
    out
}

/// A row per PRIMARY KEY and UNIQUE key (a hidden primary key is none), as MySQL lists them;
/// Shale has no FOREIGN KEY or CHECK constraints.
pub(super) fn table_constraints(store: &Store) -> Vec<Row> {
    let mut out = Vec::new();
    for (db, tables) in &store.catalog().databases {
        for def in tables.values() {
            for (name, unique, _) in indexes(def) {
                if !unique {
                    continue;
                }
                let kind = if name == "PRIMARY" && !def.has_hidden_primary_key() {
                    "PRIMARY KEY"
                } else {
                    "UNIQUE"
                };
                out.push(vec![
                    text(CATALOG),
                    text(db),
                    text(name),
                    text(db),
                    text(&def.name),
                    text(kind),
                    text("YES"),
                ]);
            }
        }
    }
    out
}

pub(super) fn shale_ddl(store: &Store) -> Vec<Row> {
    let mut out = Vec::new();
    for (db, tables) in &store.catalog().databases {
        for def in tables.values() {
            let primary = if def.has_hidden_primary_key() {
                "PRIMARY (hidden row id)"
            } else {
                "PRIMARY"
            };
            let mut add = |name: &str, kind: &str, id: u32| {
                out.push(vec![
                    text(db),
                    text(&def.name),
                    text(name),
                    text(kind),
                    Value::UInt(u64::from(id)),
                    text(shale_engine::DEFAULT_KEYSPACE),
                ]);
            };
            add("PRIMARY", primary, def.primary_key.index_id);
            for ix in &def.indexes {
                add(
                    &ix.name,
                    if ix.unique { "UNIQUE" } else { "SECONDARY" },
                    ix.index_id,
                );
            }
        }
    }
    out
}
