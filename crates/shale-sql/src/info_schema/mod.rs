//! `information_schema`: a database whose tables are virtual, computed from the catalog and
//! the engine when a query reads them, and queried with the whole SELECT machinery (FROM
//! binds them as an input of their own, `from.rs`; the join executor asks [`rows`] for
//! their rows, then filters, joins, groups and sorts them like any other input).
//!
//! Rules:
//! 1. The database name and the table names match case-insensitively, as MySQL's.
//! 2. Nothing is stored: every read computes the rows from the catalog snapshot and the
//!    engine's counters at that moment. Sizes come from estimates (`Store::table_stats`,
//!    `Store::index_disk_bytes`), never from a scan of a whole table.
//! 3. Writes are refused with MySQL's 1044 (access denied to `information_schema`).
//!
//! `tables.rs` holds each table's columns, `catalog_rows.rs` the rows described from the
//! catalog (SCHEMATA, TABLES, COLUMNS, STATISTICS, KEY_COLUMN_USAGE), `engine_rows.rs` the
//! fixed ones and Shale's own views of the engine (SHALE_*), `txn_rows.rs` the sessions and
//! transactions (PROCESSLIST, SHALE_TRX, SHALE_LOCKS, SHALE_DEADLOCKS), `show.rs` the SHOW
//! statements answered from the same rows.

mod catalog_rows;
mod engine_rows;
mod engine_status;
pub(crate) mod show;
mod tables;
mod txn_rows;

use shale_table::{Store, Value};

use crate::error::SqlError;
use crate::from::ScopeColumn;

pub(crate) use tables::InfoTable;
pub(crate) use txn_rows::{transaction_status, SessionsView};

/// The database's name as MySQL spells it.
pub(crate) const DATABASE: &str = "information_schema";

/// Whether `name` names `information_schema` (rule 1).
pub(crate) fn is_database(name: &str) -> bool {
    name.eq_ignore_ascii_case(DATABASE)
}

/// MySQL's 1044 for a write to `information_schema` by `user` (`name@host`).
pub(crate) fn access_denied(user: &str) -> SqlError {
    let (name, host) = user.split_once('@').unwrap_or((user, "%"));
    SqlError::new(
        1044,
        "42000",
        format!("Access denied for user '{name}'@'{host}' to database '{DATABASE}'"),
    )
}

/// The table names, in `SHOW TABLES` order.
pub(crate) fn table_names() -> Vec<String> {
    tables::ALL.iter().map(|t| t.name().to_string()).collect()
}

/// The columns of `table` as FROM sees them (`alias` is the name the query gives it).
pub(crate) fn scope_columns(table: InfoTable, alias: &str) -> Vec<ScopeColumn> {
    table
        .columns()
        .iter()
        .map(|c| {
            let ty = c.kind.sql_type();
            let mut meta = ty.meta(c.name, c.kind.nullable());
            meta.org_name = c.name.to_string();
            meta.table = alias.to_string();
            meta.org_table = table.name().to_string();
            meta.database = DATABASE.to_string();
            ScopeColumn {
                name: c.name.to_string(),
                ty,
                meta,
            }
        })
        .collect()
}

/// The rows of `table` now (rule 2), in its column order. `sessions` is what the query's
/// session may see of the instance's sessions (PROCESSLIST, SHALE_TRX); without it those
/// tables list no session.
pub(crate) fn rows(
    table: InfoTable,
    store: &Store,
    sessions: Option<&SessionsView>,
) -> Result<Vec<Vec<Value>>, SqlError> {
    match table {
        InfoTable::ProcessList => Ok(txn_rows::processlist(sessions)),
        InfoTable::ShaleTrx => txn_rows::shale_trx(store, sessions),
        InfoTable::ShaleLocks => txn_rows::shale_locks(store, sessions),
        InfoTable::ShaleDeadlocks => txn_rows::shale_deadlocks(store, sessions),
        InfoTable::Schemata => Ok(catalog_rows::schemata(store)),
        InfoTable::Tables => catalog_rows::tables(store),
        InfoTable::Columns => Ok(catalog_rows::columns(store)),
        InfoTable::Statistics => Ok(catalog_rows::statistics(store)),
        InfoTable::KeyColumnUsage => Ok(catalog_rows::key_column_usage(store)),
        InfoTable::TableConstraints => Ok(catalog_rows::table_constraints(store)),
        InfoTable::Engines => Ok(engine_rows::engines()),
        InfoTable::Collations => Ok(engine_rows::collations()),
        InfoTable::CharacterSets => Ok(engine_rows::character_sets()),
        InfoTable::ShaleDdl => Ok(catalog_rows::shale_ddl(store)),
        InfoTable::ShaleKeyspaces => engine_rows::shale_keyspaces(store),
        InfoTable::ShaleCompactionStats => Ok(engine_rows::shale_compaction_stats(store)),
        InfoTable::ShaleTableFiles => Ok(engine_rows::shale_table_files(store)),
        InfoTable::Views => Ok(crate::views::info_schema_views(store)),
        InfoTable::Routines
        | InfoTable::Triggers
        | InfoTable::Files
        | InfoTable::Partitions
        | InfoTable::ReferentialConstraints => Ok(Vec::new()),
    }
}

fn text(s: &str) -> Value {
    Value::Bytes(s.as_bytes().to_vec())
}
