//! Shale's table layer: relational tables on the key-value engine, as `MyRocks` stores them.
//!
//! A [`Store`] opens a database directory and holds the catalog (databases, tables, columns,
//! indexes) under reserved system keys (docs/format/catalog.md). Each table's rows live under
//! `index_id ++ memcomparable(primary key)`, each secondary index entry under `index_id ++
//! memcomparable(index columns) ++ memcomparable(primary key)` (docs/format/table-keys.md,
//! docs/format/rows.md). Reads and writes go through a [`TableTxn`], one engine transaction.
//!
//! ```
//! use std::sync::Arc;
//! use shale_table::{
//!     Collation, ColumnDef, ColumnType, IndexChoice, IndexDef, KeyRange, LockMode, Store,
//!     StoreOptions, TableDef, TxnOptions, Value,
//! };
//!
//! # fn main() -> shale_table::Result<()> {
//! // An in-memory file system here; `StoreOptions::default()` uses the real one.
//! let mut options = StoreOptions::default();
//! options.engine.file_system = Arc::new(shale_fs::MemFs::new());
//! let store = Store::open("/db", options)?;
//!
//! store.create_database("shop")?;
//! let column = |name: &str, ty| ColumnDef {
//!     name: name.into(), ty, nullable: false, default: None, auto_increment: false,
//!     auto_timestamp: shale_table::AutoTimestamp::default(), generated: None,
//! };
//! let index = |name: &str, columns| IndexDef { name: name.into(), columns, unique: false, index_id: 0 };
//! let items = store.create_table(TableDef {
//!     database: "shop".into(),
//!     name: "items".into(),
//!     columns: vec![
//!         column("id", ColumnType::Int { unsigned: false }),
//!         column("name", ColumnType::VarChar { len: 40, collation: Collation::Utf8mb4GeneralCi }),
//!     ],
//!     primary_key: index("PRIMARY", vec![0]),
//!     indexes: vec![index("by_name", vec![1])],
//!     schema_version: 0,
//!     past_versions: Vec::new(),
//! })?;
//!
//! let mut txn = store.begin(TxnOptions::default())?;
//! txn.insert(&items, vec![Value::Int(1), Value::Bytes(b"Pear".to_vec())])?;
//! txn.insert(&items, vec![Value::Int(2), Value::Bytes(b"apple".to_vec())])?;
//! txn.commit()?;
//!
//! let mut txn = store.begin(TxnOptions::default())?;
//! // A point read by primary key: one engine get.
//! let pear = txn.get(&items, &[Value::Int(1)], LockMode::None)?;
//! assert_eq!(pear, Some(vec![Value::Int(1), Value::Bytes(b"Pear".to_vec())]));
//! // A case-insensitive lookup through the secondary index returns the stored text.
//! let by_name = KeyRange::prefix(vec![Value::Bytes(b"APPLE".to_vec())]);
//! let mut rows = txn.scan(&items, IndexChoice::Secondary(0), by_name, false, LockMode::None)?;
//! assert_eq!(rows.next_row()?, Some(vec![Value::Int(2), Value::Bytes(b"apple".to_vec())]));
//! assert_eq!(rows.next_row()?, None);
//! drop(rows);
//! assert!(txn.check_table(&items)?.is_ok());
//! drop(txn);
//! store.close()
//! # }
//! ```
//!
//! # What callers (the SQL layer) can rely on
//!
//! - Values: integer columns return `Value::Int` when signed and `Value::UInt` when unsigned
//!   (either is accepted on write if it fits); FLOAT and DOUBLE are `Value::Double` (a FLOAT
//!   keeps whatever f64 it was given: round to f32 before writing); strings come back exactly
//!   as written (CHAR's trailing spaces are not stripped here). Values out of the column's range,
//!   NaN and NULL in NOT NULL columns are refused with `InvalidArgument`.
//! - Scan bounds are value prefixes of the index's columns; out-of-range integers and fractions
//!   in bounds fold into the range. Comparisons follow the column's collation (PAD SPACE,
//!   `general_ci`).
//! - Each `insert`/`update`/`delete` is atomic; a multi-row statement wraps its calls in
//!   `set_savepoint` / `rollback_to_savepoint` / `release_savepoint`.
//! - `LockWaitTimeout` fails the call only. `Deadlock` (also a REPEATABLE READ write conflict)
//!   means the transaction was rolled back; the `TableTxn` goes on as a new, empty one.
//! - A [`RowCursor`] borrows its transaction: collect the rows before updating them.
//! - DDL is not coordinated with running transactions (no metadata locks yet): take a fresh
//!   [`Store::catalog`] per statement.
//!
//! | module | concept |
//! |---|---|
//! | `store` | open, the catalog snapshot, DDL |
//! | `sequence` | `AUTO_INCREMENT` and hidden row id counters |
//! | `system` | the system keys' layout and table definition encoding |
//! | `txn` | [`TableTxn`]: row reads and writes in one engine transaction |
//! | `cursor` | scans: index ranges and [`RowCursor`] |
//! | `index` | row keys and secondary index entries |
//! | `alter` | ALTER TABLE on columns (instant or by rewrite), RENAME TABLE |
//! | `shadow` | the online rewrite: the new definition writers maintain during the copy |
//! | `fill` | rows written under new ids before their definition (rewrites, CREATE ... SELECT) |
//! | `build` | CREATE INDEX's build; the sweep of orphaned index ids at open |
//! | `bulk`, `bulk_sort` | bulk load: rows sorted into table files and ingested |
//! | `check` | CHECK TABLE |
//! | `stats` | approximate table sizes for the planner |
//! | `auto_recalc` | index statistics estimated again after a tenth of a table changed |
//! | `file_properties` | the index ids and definitions every table file records |
//! | `temporary` | CREATE TEMPORARY TABLE's ids and rows; the sweep of their leftovers at open |
//! | `describe` | a table file's entries shown as rows (`shale tool sst`) |
//! | `codec` | memcomparable keys, row values, collation weights |
//! | `schema`, `types`, `value`, `error` | the public data types |

mod alter;
mod auto_recalc;
mod build;
mod bulk;
mod bulk_sort;
mod cardinality;
mod check;
mod codec;
mod cursor;
mod decimal;
mod describe;
mod error;
mod fence;
mod file_properties;
mod fill;
mod generated;
mod index;
mod maintenance;
mod metadata_lock;
mod name_lock;
mod online;
mod schema;
mod sequence;
mod shadow;
mod stats;
mod store;
mod system;
mod temporal;
mod temporary;
#[cfg(feature = "testing")]
pub mod testing;
mod time;
mod txn;
mod types;
mod value;
mod view;
mod zone;

pub use alter::{widens_losslessly, AlterMethod, ConvertFn, TableChange, MAX_PAST_VERSIONS};
pub use bulk::{BulkLoad, BulkLoadOptions, BulkLoadSummary};
pub use cardinality::SAMPLE_LIMIT;
pub use check::TableCheck;
pub use cursor::{IndexChoice, KeyRange, RowCursor};
pub use decimal::{
    Decimal, MAX_PRECISION as DECIMAL_MAX_PRECISION, MAX_SCALE as DECIMAL_MAX_SCALE,
};
pub use describe::key_text;
pub use error::{Error, Result};
pub use file_properties::{FileTables, INDEX_IDS_PROPERTY, TABLE_DEFS_PROPERTY};
pub use generated::{install_virtual_columns, VirtualColumns};
pub use metadata_lock::{
    LockWaiter, MetadataWait, MetadataWaitGuard, SessionLocks, TableLockMode, WAITING_STATE,
};
pub use name_lock::ExclusiveNames;
pub use schema::{
    AutoTimestamp, Catalog, ColumnDef, ColumnSource, Generated, IndexDef, PastVersion, TableDef,
};
pub use shale_engine::{Durability, IsolationLevel};
pub use stats::{TableStats, COUNT_LIMIT};
pub use store::{Store, StoreOptions};
pub use temporal::DateTime;
pub use time::{Time, TimeParse, TIME_MAX_MICROS};
pub use txn::{LockMode, TableTxn, TxnOptions};
pub use types::{Collation, ColumnType, ENUM_MAX_MEMBERS};
pub use value::Value;
pub use view::{ViewAlgorithm, ViewCheckOption, ViewDef, ViewSecurity, ViewWrite};
