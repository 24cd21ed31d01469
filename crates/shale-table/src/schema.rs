//! Table definitions and the catalog: what the system keys hold (stored as
//! docs/format/catalog.md describes; `system.rs` encodes them).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::types::ColumnType;
use crate::value::Value;

/// One column.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDef {
    pub name: String,
    pub ty: ColumnType,
    pub nullable: bool,
    /// The value an INSERT that names no value for this column stores (None: NULL, or an
    /// error under strict mode when NOT NULL).
    pub default: Option<Value>,
    pub auto_increment: bool,
}

/// The primary key or a secondary index.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexDef {
    pub name: String,
    /// Positions in [`TableDef::columns`], in key order.
    pub columns: Vec<usize>,
    pub unique: bool,
    /// Assigned by the [`Store`](crate::Store) when the index is created; never reused while
    /// any of its data may remain.
    pub index_id: u32,
}

/// A table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableDef {
    pub database: String,
    pub name: String,
    pub columns: Vec<ColumnDef>,
    /// The primary key (`index_id` is the table's id). Empty `columns`: a hidden 8-byte row
    /// id is the key.
    pub primary_key: IndexDef,
    pub indexes: Vec<IndexDef>,
    /// Raised by every change of `columns`; each row records the version it was written in.
    pub schema_version: u32,
}

impl TableDef {
    /// The position of the column called `name` (ASCII case-insensitive, as `MySQL`).
    pub fn column_position(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// The position in [`TableDef::indexes`] of the secondary index called `name` (ASCII
    /// case-insensitive).
    pub fn index_position(&self, name: &str) -> Option<usize> {
        self.indexes
            .iter()
            .position(|i| i.name.eq_ignore_ascii_case(name))
    }

    /// The position of the `AUTO_INCREMENT` column, if the table has one.
    pub fn auto_increment_column(&self) -> Option<usize> {
        self.columns.iter().position(|c| c.auto_increment)
    }

    /// Whether the table has no primary key (rows are keyed by a hidden row id).
    pub fn has_hidden_primary_key(&self) -> bool {
        self.primary_key.columns.is_empty()
    }
}

/// An immutable snapshot of every database and table definition. DDL builds a new one and
/// swaps it in; a statement keeps the snapshot it started with.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Database name -> table name -> definition (names as created).
    pub databases: BTreeMap<String, BTreeMap<String, Arc<TableDef>>>,
}

impl Catalog {
    /// The table `database.name`, if it exists.
    pub fn table(&self, database: &str, name: &str) -> Option<&Arc<TableDef>> {
        self.databases.get(database)?.get(name)
    }
}
