//! Temporary tables: `CREATE TEMPORARY TABLE`, and the session's own namespace of them.
//!
//! A temporary table's definition lives only in its session ([`TempTables`]); its rows are
//! ordinary table keys under index ids the store hands out, and the store never writes the
//! definition to the catalog (shale-table's temporary.rs, docs/format/catalog.md). So other
//! sessions, SHOW TABLES and information_schema never see it, and a crash leaves only keys
//! under ids no definition names, which the next open deletes.
//!
//! Rules (MySQL 8's):
//! 1. Names resolve to the session's temporary table first: the binder reads the store's
//!    catalog with the session's temporary tables laid over it ([`TempTables::over`]), so a
//!    temporary table shadows a base table of the same name in every statement of that
//!    session, and nowhere else.
//! 2. CREATE and DROP TEMPORARY TABLE neither commit the open transaction nor are undone by
//!    its rollback; rows written to a temporary table are part of the transaction.
//! 3. DROP TABLE t drops the session's temporary t if there is one (the base t stays);
//!    DROP TEMPORARY TABLE never drops a base table.
//! 4. The session drops its temporary tables when it ends (disconnect, COM_CHANGE_USER,
//!    COM_RESET_CONNECTION, `shale sql` exit); a crash leaves them to the next open.
//! 5. Once created, the session may use its temporary table without table privileges
//!    (`Session::authorize` skips them).
//! 6. A temporary table's DDL bumps the instance's DDL generation, so no kept plan (prepared
//!    statement, statement cache) still names a table that shadowing changed.
//! 7. ALTER TABLE, CREATE/DROP INDEX and RENAME TABLE (ALTER TABLE ... RENAME too) of a
//!    temporary table change only the session's definition: a rename keeps the rows, any other
//!    change copies them into fresh index ids (shale-table's temporary.rs). Like a base
//!    table's ALTER they commit the open transaction first (MySQL). CHECK, ANALYZE and
//!    OPTIMIZE TABLE work on it as on a base table; LOCK TABLES of its name locks the base
//!    table (MySQL needs no lock on a temporary table).
//! 8. TRUNCATE of a temporary table does not commit the open transaction (MySQL). Inside one
//!    the table moves to fresh, empty index ids, so the transaction's snapshot no longer sees
//!    its rows; the old ids are dropped again when the transaction ends
//!    ([`TempTables::drop_retired`]), since a commit writes the transaction's own writes
//!    under them.
//! 9. A view may not refer to a temporary table (1352, views.rs).

use std::sync::{Arc, Mutex, PoisonError};

use shale_table::{Catalog, ConvertFn, Store, TableChange, TableDef, Value};
use sqlparser::ast;

use crate::error::SqlError;
use crate::result::ResultSink;
use crate::session::Session;
use crate::types::store_value;

/// The temporary tables of one session.
#[derive(Debug, Default)]
pub(crate) struct TempTables {
    tables: Vec<Arc<TableDef>>,
    /// Definitions a TRUNCATE inside a transaction replaced, dropped once more when the
    /// transaction ends (rule 8).
    retired: Vec<Arc<TableDef>>,
    /// The last catalog laid over, and the result (rule 1): rebuilt when the store's catalog
    /// or the session's tables change.
    overlay: Mutex<Option<(Arc<Catalog>, Arc<Catalog>)>>,
}

impl TempTables {
    /// The temporary table `db`.`name`: names match exactly, else ASCII case-insensitively
    /// (as `bind::lookup_table`).
    pub(crate) fn find(&self, db: &str, name: &str) -> Option<Arc<TableDef>> {
        find_in(&self.tables, db, name)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// `base` with this session's temporary tables in it, each replacing a base table of the
    /// same name (rule 1).
    pub(crate) fn over(&self, base: Arc<Catalog>) -> Arc<Catalog> {
        if self.tables.is_empty() {
            return base;
        }
        let mut overlay = self.overlay.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((was, laid)) = overlay.as_ref() {
            if Arc::ptr_eq(was, &base) {
                return laid.clone();
            }
        }
        let mut laid = (*base).clone();
        for t in &self.tables {
            if let Some(tables) = laid.databases.get_mut(&t.database) {
                tables.insert(t.name.clone(), t.clone());
            }
            // A view of the name is shadowed too.
            if let Some(views) = laid.views.get_mut(&t.database) {
                views.retain(|name, _| !name.eq_ignore_ascii_case(&t.name));
            }
        }
        let laid = Arc::new(laid);
        *overlay = Some((base, laid.clone()));
        laid
    }

    fn add(&mut self, def: Arc<TableDef>) {
        self.tables.push(def);
        *self
            .overlay
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }

    fn remove(&mut self, def: &TableDef) {
        self.tables
            .retain(|t| t.primary_key.index_id != def.primary_key.index_id);
        self.changed();
    }

    /// Puts `new` in the place of `old` (an ALTER, rename or TRUNCATE).
    fn replace(&mut self, old: &TableDef, new: Arc<TableDef>) {
        if let Some(t) = self
            .tables
            .iter_mut()
            .find(|t| t.primary_key.index_id == old.primary_key.index_id)
        {
            *t = new;
        }
        self.changed();
    }

    fn changed(&mut self) {
        *self
            .overlay
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Drops the index ids a TRUNCATE inside the transaction that just ended replaced (rule
    /// 8). Best effort, as [`TempTables::drop_all`].
    pub(crate) fn drop_retired(&mut self, store: &Store) {
        for def in std::mem::take(&mut self.retired) {
            let _ = store.drop_temporary_table(&def);
        }
    }

    /// Drops every temporary table (rule 4). Best effort: a table whose drop fails is left
    /// to the sweep at the next open.
    pub(crate) fn drop_all(&mut self, store: &Store) {
        for def in std::mem::take(&mut self.tables) {
            let _ = store.drop_temporary_table(&def);
        }
        self.drop_retired(store);
        self.changed();
    }
}

/// The table `db`.`name` of `tables`: names match exactly, else ASCII case-insensitively (as
/// `bind::lookup_table`).
fn find_in(tables: &[Arc<TableDef>], db: &str, name: &str) -> Option<Arc<TableDef>> {
    let mut in_db = tables.iter().filter(|t| t.database == db);
    in_db
        .clone()
        .find(|t| t.name == name)
        .or_else(|| in_db.find(|t| t.name.eq_ignore_ascii_case(name)))
        .cloned()
}

fn qualify(session: &Session, name: &ast::ObjectName) -> Result<(String, String), SqlError> {
    let parts = crate::bind::ident_name(name);
    let (db, table) = match parts.as_slice() {
        [t] => (session.current_db()?, t.clone()),
        [d, t] => (d.clone(), t.clone()),
        _ => return Err(SqlError::unsupported(format!("name {name}"))),
    };
    if crate::info_schema::is_database(&db) {
        return Err(crate::info_schema::access_denied(&session.state().user));
    }
    Ok((db, table))
}

/// CREATE TEMPORARY TABLE [IF NOT EXISTS] t (...) | LIKE other | [AS] SELECT ... (rule 2: the
/// open transaction stays open).
pub(crate) fn create(
    session: &mut Session,
    ct: &ast::CreateTable,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    session.state_mut().warnings.clear();
    if ct.or_replace {
        return Err(SqlError::unsupported("CREATE OR REPLACE TEMPORARY TABLE"));
    }
    let (db, name) = qualify(session, &ct.name)?;
    let instance = session.instance().clone();
    let catalog = session.catalog();
    if !catalog.databases.contains_key(&db) {
        return Err(SqlError::unknown_database(&db));
    }
    if session.temp_tables().find(&db, &name).is_some() {
        return session.table_already_exists(&name, ct.if_not_exists, sink);
    }
    let mut rows = Vec::new();
    let def = if let Some(like) = &ct.like {
        let (ast::CreateTableLikeKind::Parenthesized(like) | ast::CreateTableLikeKind::Plain(like)) =
            like;
        let (from_db, from_name) = qualify(session, &like.name)?;
        let from = crate::bind::lookup_table(&catalog, &from_db, &from_name)
            .ok_or_else(|| SqlError::no_such_table(&from_db, &from_name))?;
        let mut def = (*from).clone();
        def.database = db;
        def.name = name;
        def.past_versions = Vec::new();
        def
    } else if let Some(query) = &ct.query {
        if !ct.columns.is_empty() || !ct.constraints.is_empty() {
            return Err(SqlError::unsupported(
                "CREATE TABLE with column definitions and a SELECT",
            ));
        }
        let mut result = crate::alter::Collected::default();
        session.run_query(query, &mut result)?;
        session.state_mut().warnings.clear();
        let def = crate::alter::select_table_def(db, name, &result.columns)?;
        rows = result.rows;
        def
    } else {
        let plain = ast::CreateTable {
            temporary: false,
            ..ct.clone()
        };
        let (def, warnings) = crate::ddl::table_def(&db, &name, &plain)?;
        crate::gencols::check_table(&catalog, &def)?;
        session.state_mut().warnings = warnings;
        def
    };
    let def = instance.store.create_temporary_table(def)?;
    session.temp_tables_mut().add(def.clone());
    instance.bump_generation();
    let filled = fill(session, &def, rows);
    let count = match filled {
        Ok(count) => count,
        Err(e) => {
            // CREATE ... SELECT makes the table with all its rows or not at all.
            session.temp_tables_mut().remove(&def);
            let _ = instance.store.drop_temporary_table(&def);
            instance.bump_generation();
            return Err(e);
        }
    };
    let mut st = session.status();
    if ct.query.is_some() {
        st.affected_rows = count;
        st.info = format!("Records: {count}  Duplicates: 0  Warnings: 0");
    }
    sink.ok(&st)
}

/// Writes CREATE TEMPORARY TABLE ... SELECT's rows into the new table, in the session's
/// transaction (rule 2); the count written.
fn fill(session: &mut Session, def: &TableDef, rows: Vec<Vec<Value>>) -> Result<u64, SqlError> {
    if rows.is_empty() {
        return Ok(0);
    }
    let mut count = 0;
    session.in_transaction_statement(|txn| {
        for (i, row) in rows.into_iter().enumerate() {
            let row = row
                .into_iter()
                .zip(&def.columns)
                .map(|(value, column)| store_value(column, value, i + 1))
                .collect::<Result<Vec<Value>, SqlError>>()?;
            txn.insert(def, row)?;
            count += 1;
        }
        Ok(())
    })?;
    Ok(count)
}

/// Drops the session's temporary `db`.`name`, if it has one; whether it did (rules 2, 3).
pub(crate) fn drop_named(session: &mut Session, db: &str, name: &str) -> Result<bool, SqlError> {
    let Some(def) = session.temp_tables().find(db, name) else {
        return Ok(false);
    };
    session.instance().store.drop_temporary_table(&def)?;
    session.temp_tables_mut().remove(&def);
    Ok(true)
}

/// DROP TEMPORARY TABLE [IF EXISTS] a, b: only temporary tables (rule 3), all checked before
/// any is dropped, as MySQL's 1051.
pub(crate) fn drop_temporary(
    session: &mut Session,
    if_exists: bool,
    names: &[ast::ObjectName],
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    session.state_mut().warnings.clear();
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for n in names {
        let (db, name) = qualify(session, n)?;
        match session.temp_tables().find(&db, &name) {
            Some(_) => found.push((db, name)),
            None => missing.push(format!("{db}.{name}")),
        }
    }
    if !missing.is_empty() && !if_exists {
        return Err(SqlError::unknown_table_drop(&missing.join(",")));
    }
    for (db, name) in found {
        drop_named(session, &db, &name)?;
    }
    for m in missing {
        session
            .state_mut()
            .warnings
            .push(("Note", 1051, format!("Unknown table '{m}'")));
    }
    session.instance().bump_generation();
    sink.ok(&session.status())
}

/// TRUNCATE of a temporary table: empties it and resets its `AUTO_INCREMENT` counter,
/// without committing the open transaction (rule 8).
pub(crate) fn truncate(session: &mut Session, def: &Arc<TableDef>) -> Result<(), SqlError> {
    let instance = session.instance().clone();
    if session.transaction_open() {
        let renewed = instance.store.renew_temporary_table(def)?;
        let tables = session.temp_tables_mut();
        tables.replace(def, renewed);
        tables.retired.push(def.clone());
    } else {
        instance.store.truncate_temporary_table(def)?;
    }
    Ok(())
}

/// ALTER TABLE (or CREATE / DROP INDEX) of the session's temporary table `old`: its rows
/// copied into fresh ids under `change`'s definition (rule 7); the rows copied. The caller
/// has committed the open transaction.
pub(crate) fn alter(
    session: &mut Session,
    old: &Arc<TableDef>,
    change: TableChange,
    convert: ConvertFn<SqlError>,
) -> Result<u64, SqlError> {
    check_target(session, &session.temp_tables().tables, old, &change.def)?;
    let instance = session.instance().clone();
    let (def, rows) = instance.store.alter_temporary_table(old, change, convert)?;
    session.temp_tables_mut().replace(old, def);
    instance.bump_generation();
    Ok(rows)
}

/// A renamed temporary table's new name: its database must exist (1049) and no other
/// temporary table in `tables` have the name (1050). A base table of the name may exist:
/// the temporary table shadows it (rule 1).
fn check_target(
    session: &Session,
    tables: &[Arc<TableDef>],
    old: &TableDef,
    new: &TableDef,
) -> Result<(), SqlError> {
    if !session
        .instance()
        .store
        .catalog()
        .databases
        .contains_key(&new.database)
    {
        return Err(SqlError::unknown_database(&new.database));
    }
    match find_in(tables, &new.database, &new.name) {
        Some(t) if t.primary_key.index_id != old.primary_key.index_id => {
            Err(SqlError::table_exists(&new.name))
        }
        _ => Ok(()),
    }
}

/// RENAME TABLE's pairs split between the session's temporary tables, renamed in the session
/// (rule 7), and the base tables. A pair's source is a temporary table when one has that
/// name after the pairs before it (`RENAME TABLE t TO x, x TO y` moves temporary `t`
/// twice), as MariaDB resolves it. Every temporary pair is checked before any table is
/// renamed; the caller renames the base tables (all or none) and then calls
/// [`TempRenames::apply`].
pub(crate) struct TempRenames {
    /// The session's temporary tables as they will be.
    tables: Vec<Arc<TableDef>>,
    /// Whether some pair names a temporary table.
    pub(crate) any: bool,
    /// The base tables' pairs, in order: `(db, name, to db, to name)`.
    pub(crate) base: Vec<(String, String, String, String)>,
}

impl TempRenames {
    pub(crate) fn plan(
        session: &Session,
        pairs: Vec<(String, String, String, String)>,
    ) -> Result<TempRenames, SqlError> {
        let mut tables = session.temp_tables().tables.clone();
        let mut any = false;
        let mut base = Vec::new();
        for (db, name, to_db, to_name) in pairs {
            let Some(old) = find_in(&tables, &db, &name) else {
                base.push((db, name, to_db, to_name));
                continue;
            };
            any = true;
            let mut def = (*old).clone();
            def.database = to_db;
            def.name = to_name;
            check_target(session, &tables, &old, &def)?;
            let def = Arc::new(def);
            for t in &mut tables {
                if t.primary_key.index_id == old.primary_key.index_id {
                    *t = def.clone();
                }
            }
        }
        Ok(TempRenames { tables, any, base })
    }

    pub(crate) fn apply(self, session: &mut Session) {
        let tables = session.temp_tables_mut();
        tables.tables = self.tables;
        tables.changed();
        session.instance().bump_generation();
    }
}

/// `CREATE TEMPORARY TABLE` for SHOW CREATE TABLE of a temporary table.
pub(crate) fn show_create(text: String) -> String {
    match text.strip_prefix("CREATE TABLE ") {
        Some(rest) => format!("CREATE TEMPORARY TABLE {rest}"),
        None => text,
    }
}
