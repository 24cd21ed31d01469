//! Bulk loading through SQL: `SET SESSION shale_bulk_load = 1` (alias `rocksdb_bulk_load`,
//! `MyRocks`' name) and `LOAD DATA [LOCAL] INFILE` (load_data.rs parses it).
//!
//! While a session's bulk mode is on, each INSERT statement text (a single plain INSERT ...
//! VALUES) adds its rows to a table-layer [`BulkLoad`] instead of writing them in a
//! transaction. The load is finished (its table files ingested, every row visible at once)
//! by `SET ... = 0`, by an INSERT or LOAD DATA into another table, by COM_RESET_CONNECTION, or
//! when the session ends, as in `MyRocks`. A duplicate key (or rows overlapping rows already in
//! the table) fails the statement that finishes the load, and nothing of the load is kept.
//!
//! LOAD DATA uses a bulk load of its own, finished at the end of the statement, when the
//! session's bulk mode is off, the table is empty, no transaction is open and duplicates are
//! errors (no IGNORE, REPLACE or LOCAL, which implies IGNORE); otherwise it inserts its rows
//! in one transaction (`IGNORE`: duplicates skipped with warning 1062).
//!
//! Rules kept here:
//! 1. Values are converted as INSERT converts them (`types::store_value`, and outside strict
//!    mode lenient_store.rs): bulk mode changes when rows become visible, never what is
//!    stored.
//! 2. A session has at most one running load; rows of another table finish it first.
//! 3. A temporary table is never bulk loaded (a load's files are ingested under the store's
//!    catalog, which does not have it): LOAD DATA into one inserts in a transaction, and an
//!    INSERT into one while bulk mode is on runs as a plain INSERT.

use std::path::Path;

use shale_table::{BulkLoad, BulkLoadOptions, IndexChoice, KeyRange, LockMode, TableDef, Value};
use sqlparser::ast::{self, Statement};

use crate::error::SqlError;
use crate::exec::row_values;
use crate::grants;
use crate::lenient_store::{Conversions, StoreRules};
use crate::load_data::{self, Duplicates, LoadData, Target};
use crate::privilege::Need;
use crate::result::{ResultSink, StatementStatus};
use crate::session::{RunEnv, Session};
use crate::types::int_value;

/// A session's bulk mode and its running load.
#[derive(Debug, Default)]
pub(crate) struct BulkMode {
    enabled: bool,
    load: Option<BulkLoad>,
}

impl BulkMode {
    /// Finishes the running load, if any: its rows become visible (or the error says why
    /// none did).
    pub(crate) fn finish(&mut self) -> Result<(), SqlError> {
        match self.load.take() {
            Some(load) => load.finish().map(|_| ()).map_err(SqlError::from),
            None => Ok(()),
        }
    }

    /// Turns bulk mode off, finishing the load (COM_RESET_CONNECTION).
    pub(crate) fn reset(&mut self) -> Result<(), SqlError> {
        self.enabled = false;
        self.finish()
    }
}

impl Drop for BulkMode {
    /// The session ended with a load running: `MyRocks` commits it then, and so do we. An
    /// error here has no client to go to; the load is then dropped whole (nothing visible).
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// Handles `sql` if it is a statement of this module (LOAD DATA; SET of the bulk-load
/// variable; an INSERT while bulk mode is on); `None` lets the session run it.
pub(crate) fn intercept(
    session: &mut Session,
    sql: &str,
    sink: &mut dyn ResultSink,
) -> Option<Result<(), SqlError>> {
    // A bulk load takes its table's metadata lock: the wait ends as a statement's does.
    if let Some(parsed) = load_data::parse_load_data(sql) {
        let _wait = crate::ops::metadata_wait(session).install();
        return Some(parsed.and_then(|load| run_load_data(session, &load, sink)));
    }
    if let Some(on) = parse_set_bulk_load(sql) {
        return Some(on.and_then(|on| set_bulk_load(session, on, sink)));
    }
    if session.bulk_mode().enabled && first_word_is(sql, "INSERT") {
        let _wait = crate::ops::metadata_wait(session).install();
        return bulk_insert(session, sql, sink);
    }
    None
}

fn first_word_is(sql: &str, word: &str) -> bool {
    sql.trim_start()
        .get(..word.len())
        .is_some_and(|w| w.eq_ignore_ascii_case(word))
}

/// `SET [SESSION | LOCAL] [@@[session.|local.]](shale|rocksdb)_bulk_load = value` alone:
/// the new value. Other forms (GLOBAL, several assignments) go to the session as usual.
fn parse_set_bulk_load(sql: &str) -> Option<Result<bool, SqlError>> {
    let text = sql.trim().trim_end_matches(';').trim_end();
    if !first_word_is(text, "SET") {
        return None;
    }
    let mut rest = text[3..].trim_start();
    for scope in ["SESSION ", "LOCAL "] {
        if first_word_is(rest, scope) {
            rest = rest[scope.len()..].trim_start();
        }
    }
    let lower = rest.to_ascii_lowercase();
    let mut name = lower.as_str();
    for prefix in ["@@session.", "@@local.", "@@"] {
        if let Some(n) = name.strip_prefix(prefix) {
            name = n;
            break;
        }
    }
    let after = name
        .strip_prefix("shale_bulk_load")
        .or_else(|| name.strip_prefix("rocksdb_bulk_load"))?;
    let value = after.trim_start().strip_prefix('=')?.trim();
    let value = value.trim_matches('\'').trim_matches('"');
    Some(match value {
        "1" | "on" | "true" => Ok(true),
        "0" | "off" | "false" | "default" => Ok(false),
        other => Err(SqlError::new(
            1231,
            "42000",
            format!("Variable 'shale_bulk_load' can't be set to the value of '{other}'"),
        )),
    })
}

fn set_bulk_load(
    session: &mut Session,
    on: bool,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    session.state_mut().warnings.clear();
    let v = Value::Int(i64::from(on));
    let vars = &mut session.state_mut().vars;
    vars.insert("shale_bulk_load".into(), v.clone());
    vars.insert("rocksdb_bulk_load".into(), v);
    session.bulk_mode().enabled = on;
    if !on {
        // Off even when finishing fails: the failed load is gone, nothing of it kept.
        session.bulk_mode().finish()?;
    }
    sink.ok(&status(session, 0, String::new()))
}

fn status(session: &Session, affected: u64, info: String) -> StatementStatus {
    StatementStatus {
        affected_rows: affected,
        info,
        warnings: session.warning_count(),
        in_transaction: session.in_transaction(),
        autocommit: session.autocommit(),
        ..StatementStatus::default()
    }
}

/// The session's load for `table`, finishing a load of another table first (rule 2).
fn load_for<'s>(session: &'s mut Session, table: &TableDef) -> Result<&'s mut BulkLoad, SqlError> {
    let same = session.bulk_mode().load.as_ref().is_some_and(|l| {
        let t = l.table();
        t.primary_key.index_id == table.primary_key.index_id
    });
    if !same {
        session.bulk_mode().finish()?;
        let load = session
            .instance()
            .store
            .bulk_load(table, BulkLoadOptions::default())?;
        session.bulk_mode().load = Some(load);
    }
    session
        .bulk_mode()
        .load
        .as_mut()
        .ok_or_else(|| SqlError::internal("bulk load missing"))
}

/// An INSERT in bulk mode; `None` when `sql` is not one INSERT statement (the session then
/// reports whatever it is).
fn bulk_insert(
    session: &mut Session,
    sql: &str,
    sink: &mut dyn ResultSink,
) -> Option<Result<(), SqlError>> {
    let mut statements = match crate::parse::parse_as(sql, session.syntax()) {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    let [Statement::Insert(insert)] = statements.as_mut_slice() else {
        return None;
    };
    if writes_temporary(session, insert) {
        return None;
    }
    let result = crate::insert_set::insert_to_values(insert)
        .and_then(|()| bulk_insert_statement(session, insert, sink));
    Some(result)
}

/// Whether `insert` writes the session's temporary table (rule 3).
fn writes_temporary(session: &Session, insert: &ast::Insert) -> bool {
    let ast::TableObject::TableName(name) = &insert.table else {
        return false;
    };
    let parts = crate::bind::ident_name(name);
    let (db, table) = match parts.as_slice() {
        [t] => match session.current_db() {
            Ok(db) => (db, t.clone()),
            Err(_) => return false,
        },
        [d, t] => (d.clone(), t.clone()),
        _ => return false,
    };
    session.temp_tables().find(&db, &table).is_some()
}

fn bulk_insert_statement(
    session: &mut Session,
    insert: &ast::Insert,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    session.state_mut().warnings.clear();
    let touched = std::cell::RefCell::new(Vec::new());
    let bound = session.bind_touching(&touched, |binder| {
        let bound = binder.insert(insert)?;
        if bound.select.is_some()
            || !binder.subqueries.is_empty()
            || !matches!(bound.on_duplicate, crate::bind::OnDuplicate::Error)
        {
            return Err(SqlError::unsupported(
                "INSERT ... SELECT, IGNORE, REPLACE or ON DUPLICATE KEY UPDATE while \
                 shale_bulk_load is on",
            ));
        }
        Ok(bound)
    })?;
    let table = bound.table.def.clone();
    // The privilege check the normal INSERT path makes (privilege.rs).
    session.authorize(&[Need::Table {
        privs: grants::INSERT,
        db: bound.table.database.clone(),
        table: table.name.clone(),
    }])?;
    // Every value is evaluated and converted before the first row is added (rule 1).
    let mut rows = Vec::with_capacity(bound.rows.len());
    let warnings;
    {
        let env = RunEnv {
            state: session.state(),
            params: &[],
            conversions: Conversions::new(StoreRules::of(
                session.state().sql_mode,
                false,
                bound.rows.len() > 1,
                true,
            )),
        };
        for (i, exprs) in bound.rows.iter().enumerate() {
            let order = bound.value_order.as_deref();
            let given = crate::exec::values_row(&table, exprs, order, i + 1, &env)?;
            rows.push(row_values(&table, given, i + 1, &env)?);
        }
        warnings = env.conversions.take();
    }
    let info_warnings = warnings.len();
    session.state_mut().warnings.extend(warnings);
    let n = rows.len() as u64;
    let mut first_id = 0;
    let load = load_for(session, &table)?;
    for (mut row, auto) in rows {
        if let Some(pos) = auto {
            let id = load.next_auto_increment()?;
            if first_id == 0 {
                first_id = id;
            }
            row[pos] = int_value(&table.columns[pos].ty, i128::from(id));
        }
        load.insert(&row)?;
    }
    let info = if n > 1 {
        format!("Records: {n}  Duplicates: 0  Warnings: {info_warnings}")
    } else {
        String::new()
    };
    let mut st = status(session, n, info);
    st.last_insert_id = first_id;
    sink.ok(&st)
}

fn run_load_data(
    session: &mut Session,
    load: &LoadData,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    session.state_mut().warnings.clear();
    let database = match &load.database {
        Some(d) => d.clone(),
        None => session.current_db()?,
    };
    // INSERT on the table; a file on the server also needs SUPER (MySQL's FILE privilege,
    // which Shale does not have separately).
    let mut needs = vec![Need::Table {
        privs: grants::INSERT,
        db: database.clone(),
        table: load.table.clone(),
    }];
    if !load.local {
        needs.push(Need::Global {
            any_of: grants::SUPER,
        });
    }
    session.authorize(&needs)?;
    // The session's temporary table of the name first (temp_tables.rs rule 1).
    let table = session
        .catalog()
        .table(&database, &load.table)
        .cloned()
        .ok_or_else(|| SqlError::no_such_table(&database, &load.table))?;
    let temporary = session.temp_tables().find(&database, &table.name).is_some();
    let data = read_input(session, load, sink)?;
    let data = convert_charset(load.charset.as_deref(), data)?;
    // Which column (or user variable) each field fills.
    let targets: Vec<Target> = match &load.targets {
        Some(t) => t.clone(),
        None => table
            .columns
            .iter()
            .map(|c| Target::Column(c.name.clone()))
            .collect(),
    };
    let mut positions = Vec::with_capacity(targets.len());
    for t in &targets {
        positions.push(match t {
            Target::Column(name) => Some(
                table
                    .columns
                    .iter()
                    .position(|c| c.name.eq_ignore_ascii_case(name))
                    .ok_or_else(|| SqlError::unknown_column(name, "field list"))?,
            ),
            Target::Variable(_) => None,
        });
    }
    let assignments = match &load.set_text {
        Some(text) => bind_set(session, &database, &table, text)?,
        None => Vec::new(),
    };
    let ignore = load.duplicates == Duplicates::Ignore
        || (load.local && load.duplicates != Duplicates::Replace);
    if load.duplicates == Duplicates::Replace {
        return Err(SqlError::unsupported("LOAD DATA ... REPLACE"));
    }
    let mut rows = Vec::new();
    let mut warnings = Vec::new();
    let mut number = 0usize;
    load_data::split_rows(&data, &load.format, load.ignore_lines, |fields| {
        number += 1;
        if fields.len() < targets.len() {
            warnings.push((
                "Warning",
                1261,
                format!("Row {number} doesn't contain data for all columns"),
            ));
        } else if fields.len() > targets.len() {
            warnings.push((
                "Warning",
                1262,
                format!(
                    "Row {number} was truncated; it contained more data than there were input \
                     columns"
                ),
            ));
        }
        let mut given: Vec<Option<Value>> = vec![None; table.columns.len()];
        let mut vars = Vec::new();
        for (i, target) in targets.iter().enumerate() {
            let value = match fields.get(i) {
                Some(Some(bytes)) => Value::Bytes(bytes.clone()),
                Some(None) => Value::Null,
                // A missing field: the column's default, or an empty value as MySQL sets.
                None => match positions[i].and_then(|p| table.columns.get(p)) {
                    Some(c) if c.default.is_some() || c.nullable || c.auto_increment => continue,
                    _ => Value::Bytes(Vec::new()),
                },
            };
            match (target, positions[i]) {
                (_, Some(p)) => given[p] = Some(value),
                (Target::Variable(name), None) => vars.push((name.clone(), value)),
                (Target::Column(_), None) => {}
            }
        }
        rows.push((given, vars, number));
        Ok(())
    })?;
    // SET expressions see the row as read (columns, and user variables from the list).
    let mut prepared = Vec::with_capacity(rows.len());
    for (mut given, vars, number) in rows {
        if !assignments.is_empty() {
            for (name, value) in vars {
                session.state().user_vars.set(name, value);
            }
            let current: Vec<Value> = given
                .iter()
                .zip(&table.columns)
                .map(|(v, c)| {
                    v.clone()
                        .or_else(|| c.default.clone())
                        .unwrap_or(Value::Null)
                })
                .collect();
            let env = RunEnv {
                state: session.state(),
                params: &[],
                conversions: Conversions::default(),
            };
            for (position, expr) in &assignments {
                given[*position] = Some(expr.eval(&current, &env)?);
            }
        }
        let env = RunEnv {
            state: session.state(),
            params: &[],
            conversions: Conversions::new(StoreRules::of(
                session.state().sql_mode,
                ignore,
                true,
                true,
            )),
        };
        prepared.push(row_values(&table, given, number, &env)?);
        warnings.extend(env.conversions.take());
    }
    let use_bulk = !temporary
        && (session.bulk_mode().enabled
            || (!ignore && !session.in_transaction() && table_is_empty(session, &table)?));
    let (affected, skipped) = if use_bulk {
        insert_bulk(session, &table, prepared)?
    } else {
        insert_in_transaction(session, &table, prepared, ignore, &mut warnings)?
    };
    let info = format!(
        "Records: {}  Deleted: 0  Skipped: {skipped}  Warnings: {}",
        affected + skipped,
        warnings.len()
    );
    session.state_mut().warnings.extend(warnings);
    sink.ok(&status(session, affected, info))
}

fn table_is_empty(session: &Session, table: &TableDef) -> Result<bool, SqlError> {
    let mut txn = session.begin_txn()?;
    let mut rows = txn.scan(
        table,
        IndexChoice::Primary,
        KeyRange::all(),
        false,
        LockMode::None,
    )?;
    Ok(rows.next_row()?.is_none())
}

/// Adds the rows to the session's load; with bulk mode off, a load of this statement only,
/// finished before it returns.
fn insert_bulk(
    session: &mut Session,
    table: &TableDef,
    rows: Vec<(Vec<Value>, Option<usize>)>,
) -> Result<(u64, u64), SqlError> {
    let n = rows.len() as u64;
    let zone = crate::datetime_funcs::zone_offset(&session.state().variable("time_zone"))?;
    let load = load_for(session, table)?;
    for (mut row, auto) in rows {
        crate::timestamp::row_to_utc(table, &mut row, zone);
        if let Some(pos) = auto {
            let id = load.next_auto_increment()?;
            row[pos] = int_value(&table.columns[pos].ty, i128::from(id));
        }
        load.insert(&row)?;
    }
    if !session.bulk_mode().enabled {
        session.bulk_mode().finish()?;
    }
    Ok((n, 0))
}

fn insert_in_transaction(
    session: &mut Session,
    table: &TableDef,
    rows: Vec<(Vec<Value>, Option<usize>)>,
    ignore: bool,
    warnings: &mut Vec<(&'static str, u16, String)>,
) -> Result<(u64, u64), SqlError> {
    if session.in_transaction() {
        return Err(SqlError::unsupported(
            "LOAD DATA inside an open transaction (commit first)",
        ));
    }
    let mut txn = session.begin_txn()?;
    let (mut affected, mut skipped) = (0, 0);
    for (mut row, auto) in rows {
        if let Some(pos) = auto {
            let id = txn.next_auto_increment(table)?;
            row[pos] = int_value(&table.columns[pos].ty, i128::from(id));
        }
        if !ignore {
            txn.insert(table, row)?;
            affected += 1;
            continue;
        }
        txn.set_savepoint();
        match txn.insert(table, row) {
            Ok(()) => {
                txn.release_savepoint()?;
                affected += 1;
            }
            Err(shale_table::Error::DuplicateKey { key, entry, .. }) => {
                txn.rollback_to_savepoint()?;
                let e = SqlError::duplicate_entry(&entry, &key);
                warnings.push(("Warning", e.code, e.message));
                skipped += 1;
            }
            Err(e) => return Err(e.into()),
        }
    }
    txn.commit()?;
    Ok((affected, skipped))
}

/// The file's bytes: from the client for LOCAL, else from the server's file system inside
/// `secure_file_priv`.
fn read_input(
    session: &Session,
    load: &LoadData,
    sink: &mut dyn ResultSink,
) -> Result<Vec<u8>, SqlError> {
    if load.local {
        if !session.instance().local_infile() {
            return Err(local_disabled());
        }
        return sink.local_infile(&load.file)?.ok_or_else(local_disabled);
    }
    let Some(dir) = session.instance().secure_file_priv() else {
        return Err(SqlError::new(
            1290,
            "HY000",
            "The MySQL server is running with the --secure-file-priv option so it cannot \
             execute this statement",
        ));
    };
    let path = dir.join(&load.file);
    if !inside(&dir, &path) {
        return Err(SqlError::new(
            1290,
            "HY000",
            "The MySQL server is running with the --secure-file-priv option so it cannot \
             execute this statement",
        ));
    }
    read_file(&path).map_err(|e| {
        SqlError::new(
            29,
            "HY000",
            format!("File '{}' not found (OS errno 2 - {e})", path.display()),
        )
    })
}

fn read_file(path: &Path) -> Result<Vec<u8>, shale_fs::Error> {
    use shale_fs::FileSystem as _;
    let file = shale_fs::OsFs::new().open_read(path)?;
    let size = file.size()?;
    let mut data = vec![0; usize::try_from(size).unwrap_or(usize::MAX)];
    file.read_exact_at(0, &mut data)?;
    Ok(data)
}

/// Whether `path` (`dir` joined with the statement's file name) stays inside `dir`: no `..`
/// component, and an absolute name must start with `dir`. A symbolic link inside `dir` is
/// followed (docs/sql.md says so).
fn inside(dir: &Path, path: &Path) -> bool {
    path.starts_with(dir)
        && !path
            .components()
            .any(|c| c == std::path::Component::ParentDir)
}

fn local_disabled() -> SqlError {
    SqlError::new(
        3948,
        "42000",
        "Loading local data is disabled; this must be enabled on both the client and server sides",
    )
}

fn convert_charset(charset: Option<&str>, data: Vec<u8>) -> Result<Vec<u8>, SqlError> {
    match charset {
        None | Some("utf8mb4" | "utf8" | "utf8mb3" | "binary" | "ascii") => Ok(data),
        // MySQL's latin1 is cp1252 (charset.rs): 0x80 is the euro sign.
        Some("latin1") => Ok(crate::charset::Charset::Latin1
            .decode(&data)?
            .into_owned()
            .into_bytes()),
        Some(other) => Err(SqlError::new(
            1115,
            "42000",
            format!("Unknown character set: '{other}'"),
        )),
    }
}

/// `SET col = expr, ...` bound against the table, as an UPDATE's assignments are.
fn bind_set(
    session: &Session,
    database: &str,
    table: &TableDef,
    text: &str,
) -> Result<Vec<(usize, crate::expr::Expr)>, SqlError> {
    let quote = |s: &str| format!("`{}`", s.replace('`', "``"));
    let sql = format!(
        "UPDATE {}.{} SET {text}",
        quote(database),
        quote(&table.name)
    );
    let statements = crate::parse::parse_as(&sql, session.syntax())?;
    let [Statement::Update(update)] = statements.as_slice() else {
        return Err(SqlError::syntax(text, 1));
    };
    let touched = std::cell::RefCell::new(Vec::new());
    let bound = session.bind_touching(&touched, |binder| binder.update(update))?;
    Ok(bound.assignments)
}
