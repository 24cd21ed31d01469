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
    /// DEFAULT / ON UPDATE `CURRENT_TIMESTAMP` of a TIMESTAMP or DATETIME column (the SQL
    /// layer fills the values; the table layer only keeps the declaration).
    pub auto_timestamp: AutoTimestamp,
    /// `AS (expression) VIRTUAL | STORED`: the column's value is computed from the other
    /// columns of its row (generated.rs).
    pub generated: Option<Generated>,
}

/// A generated column's expression. The table layer never parses it: the SQL layer computes
/// stored columns before a write and, through [`VirtualColumns`](crate::VirtualColumns),
/// virtual ones whenever a row is decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// The expression as SQL text (without the parentheses).
    pub expression: String,
    /// STORED: the value is in the row. VIRTUAL: the row stores nothing for it.
    pub stored: bool,
}

impl ColumnDef {
    /// A VIRTUAL generated column: rows store nothing for it.
    pub fn is_virtual(&self) -> bool {
        self.generated.as_ref().is_some_and(|g| !g.stored)
    }
}

/// Whether a TIMESTAMP or DATETIME column takes the statement's time when a row is inserted
/// without a value for it (DEFAULT `CURRENT_TIMESTAMP`) and when another column of the row
/// changes (ON UPDATE `CURRENT_TIMESTAMP`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AutoTimestamp {
    pub on_insert: bool,
    pub on_update: bool,
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
    /// The column lists of earlier schema versions that rows may still carry, oldest first
    /// (instant ALTER TABLE keeps them so old rows decode without a rewrite; a new table or a
    /// rewritten one has none). The store maintains them; callers building a new table pass
    /// an empty list.
    pub past_versions: Vec<PastVersion>,
}

/// An earlier schema version of a table: how its rows are laid out and how each of the
/// table's current columns is read from them (docs/format/rows.md).
#[derive(Debug, Clone, PartialEq)]
pub struct PastVersion {
    pub schema_version: u32,
    /// The columns a row of this version stores, in stored order, typed as they were.
    pub columns: Vec<ColumnDef>,
    /// One per current column of the table: where a row of this version gets its value.
    pub current: Vec<ColumnSource>,
}

/// Where a column's value comes from in a row written before an ALTER TABLE.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnSource {
    /// The stored column at this position (of the older column list); its type converts to
    /// the current one without loss (an instant change, alter.rs).
    Stored(usize),
    /// A column added later: rows written before read this value (its default when added).
    Fill(Value),
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

    /// Whether any column is VIRTUAL (its value is computed when a row is decoded).
    pub fn has_virtual_columns(&self) -> bool {
        self.columns.iter().any(ColumnDef::is_virtual)
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
    /// Database name -> view name -> definition (view.rs); a database without views may
    /// have no entry.
    pub views: BTreeMap<String, BTreeMap<String, Arc<crate::view::ViewDef>>>,
}

impl Catalog {
    /// The table `database.name`, if it exists.
    pub fn table(&self, database: &str, name: &str) -> Option<&Arc<TableDef>> {
        self.databases.get(database)?.get(name)
    }
}
