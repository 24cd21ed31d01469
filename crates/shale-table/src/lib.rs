//! Shale's table layer: relational tables on the key-value engine, as `MyRocks` stores them.
//!
//! A [`Store`] opens a database directory and holds the catalog (databases, tables, columns,
//! indexes) in a system keyspace. Each table's rows live under `index_id ++
//! memcomparable(primary key)`, each secondary index entry under `index_id ++
//! memcomparable(index columns) ++ memcomparable(primary key)` (docs/format/table-keys.md,
//! docs/format/rows.md). Reads and writes go through a [`TableTxn`], one engine transaction.

mod check;
mod codec;
mod error;
mod index;
mod schema;
mod store;
mod system;
mod txn;
mod types;
mod value;

pub use check::TableCheck;
pub use error::{Error, Result};
pub use schema::{Catalog, ColumnDef, IndexDef, TableDef};
pub use shale_engine::{Durability, IsolationLevel};
pub use store::{Store, StoreOptions};
pub use txn::{IndexChoice, KeyRange, LockMode, RowCursor, TableTxn, TxnOptions};
pub use types::{Collation, ColumnType};
pub use value::Value;
