//! LOCK TABLES and UNLOCK TABLES: table locks a session holds across statements (shale-table's
//! metadata_lock.rs), as MySQL's LOCK TABLES takes them.
//!
//! Rules:
//! 1. LOCK TABLES commits the open transaction and releases the locks the session held
//!    before, then takes every named table: `WRITE` keeps other sessions from reading and
//!    writing it, `READ` (`READ LOCAL` too, as InnoDB treats it) from writing it. A view
//!    locks its base tables, nested views included, in the same mode.
//! 2. UNLOCK TABLES releases them and, when some were held, commits the open transaction;
//!    START TRANSACTION releases them too, and so does the end of the session.
//! 3. A session's own write to a table it holds READ fails with 1099; its statements and DDL
//!    on tables it holds WRITE never wait for its own lock.
//! 4. The holder's DDL may change only a table it holds WRITE ([`Session::check_ddl_lock`]):
//!    ALTER, DROP, TRUNCATE, CREATE/DROP INDEX, RENAME (of each source) and OPTIMIZE fail
//!    with 1100 on a table it did not lock and 1099 on one it holds READ; ANALYZE and CHECK
//!    need READ. CREATE TABLE (plain, LIKE, AS SELECT) of a new name fails with 1100, as a
//!    name not locked (MySQL and MariaDB agree). A dropped table leaves the set: its name
//!    is then not locked. A table keeps its lock through ALTER TABLE ... RENAME and RENAME
//!    TABLE (MySQL 8's rule; MariaDB refuses RENAME TABLE under LOCK TABLES with 1192).
//! 5. View DDL, CREATE DATABASE and DROP DATABASE are refused with 1192 while the session
//!    holds table locks ([`Session::refuse_under_table_locks`]), as in MySQL and MariaDB.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use shale_table::{Catalog, TableLockMode};
use sqlparser::ast::visit_relations;

use crate::error::SqlError;
use crate::session::Session;

/// A table as LOCK TABLES names it: database (`None`: the current one), name, mode.
pub(crate) type LockItem = (Option<String>, String, TableLockMode);

/// How many views deep LOCK TABLES follows a view's tables.
const MAX_VIEW_DEPTH: usize = 32;

impl Session {
    /// LOCK TABLES (rule 1).
    pub(crate) fn lock_tables(&mut self, items: &[LockItem]) -> Result<(), SqlError> {
        self.commit_open()?;
        self.unlock_tables_only();
        let catalog = self.instance().store.catalog();
        let mut tables = Vec::new();
        for (db, name, mode) in items {
            let db = match db {
                Some(d) => d.clone(),
                None => self.current_db()?,
            };
            add_table(&catalog, &db, name, *mode, 0, &mut tables)?;
        }
        let owner = self.connection_id();
        let _wait = crate::ops::metadata_wait(self).install();
        let locks = self
            .instance()
            .store
            .lock_tables_for_session(owner, &tables)?;
        self.set_table_locks(Some(locks));
        Ok(())
    }

    /// UNLOCK TABLES (rule 2).
    pub(crate) fn unlock_tables(&mut self) -> Result<(), SqlError> {
        if self.unlock_tables_only() {
            self.commit_open()?;
        }
        Ok(())
    }

    /// Releases the session's table locks; returns whether it held any.
    pub(crate) fn unlock_tables_only(&mut self) -> bool {
        self.set_table_locks(None)
    }

    /// Rule 4: fails when the session holds table locks and `db.name` is not one it holds in
    /// a mode that allows `need` (`Write`: the DDL changes the table; `Read`: it reads it).
    /// A name that is no table (a new one, a dropped one) is not locked.
    pub(crate) fn check_ddl_lock(
        &self,
        db: &str,
        name: &str,
        need: TableLockMode,
    ) -> Result<(), SqlError> {
        let Some(locks) = self.table_locks() else {
            return Ok(());
        };
        let catalog = self.instance().store.catalog();
        let mode =
            crate::bind::lookup_table(&catalog, db, name).and_then(|def| locks.mode_of(&def));
        let table = name.to_owned();
        match (mode, need) {
            (None, _) => Err(shale_table::Error::TableNotLocked { table }.into()),
            (Some(TableLockMode::Read), TableLockMode::Write) => {
                Err(shale_table::Error::TableLockedForRead { table }.into())
            }
            _ => Ok(()),
        }
    }

    /// Rule 5: MySQL's 1192 for a statement not allowed while the session holds table locks.
    pub(crate) fn refuse_under_table_locks(&self) -> Result<(), SqlError> {
        if self.table_locks().is_some() {
            return Err(SqlError::new(
                1192,
                "HY000",
                "Can't execute the given command because you have active locked tables or an \
                 active transaction",
            ));
        }
        Ok(())
    }
}

/// Adds `db.name` in `mode` to `out`: a table as itself, a view as its base tables.
fn add_table(
    catalog: &Catalog,
    db: &str,
    name: &str,
    mode: TableLockMode,
    depth: usize,
    out: &mut Vec<(String, String, TableLockMode)>,
) -> Result<(), SqlError> {
    if let Some(def) = crate::bind::lookup_table(catalog, db, name) {
        out.push((def.database.clone(), def.name.clone(), mode));
        return Ok(());
    }
    let Some(view) = catalog.view(db, name).cloned() else {
        return Err(SqlError::no_such_table(db, name));
    };
    if depth >= MAX_VIEW_DEPTH {
        return Ok(());
    }
    let Ok(statements) = crate::parse::parse(&view.query) else {
        return Ok(());
    };
    // Names the view's query reads; one that is neither a table nor a view is a CTE's.
    let mut names = BTreeSet::new();
    for statement in &statements {
        let _ = visit_relations(statement, |relation| {
            let parts: Vec<String> = relation
                .0
                .iter()
                .filter_map(|p| p.as_ident().map(|i| i.value.clone()))
                .collect();
            match parts.as_slice() {
                [table] => names.insert((view.database.clone(), table.clone())),
                [database, table] => names.insert((database.clone(), table.clone())),
                _ => false,
            };
            ControlFlow::<()>::Continue(())
        });
    }
    for (database, table) in names {
        let known = crate::bind::lookup_table(catalog, &database, &table).is_some()
            || catalog.view(&database, &table).is_some();
        if known {
            add_table(catalog, &database, &table, mode, depth + 1, out)?;
        }
    }
    Ok(())
}
