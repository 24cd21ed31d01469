//! One client's state: current database, variables, open transaction, prepared statements.
//!
//! Transactions (MySQL's rules, docs/sql.md):
//! 1. With autocommit=1 and no BEGIN, each statement runs in its own `TableTxn`, committed
//!    when it ends; a failed statement rolls back only itself.
//! 2. BEGIN/START TRANSACTION (or autocommit=0) keeps one `TableTxn` open across statements
//!    until COMMIT or ROLLBACK. Each statement inside one runs under a savepoint: a failing
//!    statement undoes only itself; a deadlock (1213) or lock wait timeout (1205) rolls back
//!    the whole transaction (MySQL keeps the transaction on 1205; see docs/sql.md).
//! 3. DDL, BEGIN and SET autocommit=1 commit an open transaction first.
//!
//! Prepared statements are bound and planned once; the plan is reused while the instance's
//! DDL generation and the store's statistics version are unchanged ([`PlanEpoch`]), and
//! re-planned from its text after any DDL or after index statistics changed (ANALYZE TABLE,
//! their automatic recalculation), so an index choice follows the new figures.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use shale_table::{IsolationLevel, TableLockMode, TableTxn, TxnOptions, Value};
use sqlparser::ast::{self, Statement};

use crate::bind::{BindContext, Binder, BoundDelete, BoundInsert, BoundSelect, BoundUpdate};
use crate::error::SqlError;
use crate::exec;
use crate::expr::Env;
use crate::instance::Instance;
use crate::plan::{self, Access, Plan};
use crate::result::{ColumnMeta, ColumnTypeCode, ResultSink, StatementStatus};
use crate::types::SqlType;
use crate::variables;

mod sql_prepare;
mod statement_cache;

/// What COM_STMT_PREPARE answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedInfo {
    pub id: u32,
    /// Metadata of each `?` (MySQL sends them as VAR_STRING columns named `?`).
    pub params: Vec<ColumnMeta>,
    /// The result columns, empty for a statement that returns none.
    pub columns: Vec<ColumnMeta>,
}

/// A statement ready to run: bound and planned, or a session command kept as parsed.
#[derive(Debug)]
// One per statement or prepared statement; the hot path's plan stays unboxed.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Planned {
    Select(BoundSelect, Plan),
    /// Any other query: joins, derived tables, subqueries, UNION (query.rs).
    Query(Box<crate::query::StatementQuery>),
    /// With the plan of INSERT ... SELECT's query.
    Insert(BoundInsert, Option<Plan>),
    Update(BoundUpdate, Plan),
    Delete(BoundDelete, Plan),
    /// UPDATE or DELETE over joins or with subqueries (multi_dml.rs).
    MultiTable(Box<crate::multi_dml::PlannedDml>),
    Command(Box<Statement>),
}

#[derive(Debug)]
struct Prepared {
    sql: String,
    /// How `sql` was parsed: a re-plan parses it so again, whatever `sql_mode` is now.
    syntax: crate::syntax_mode::Syntax,
    planned: Arc<Planned>,
    /// What the plan was made under; another at execution re-plans.
    epoch: PlanEpoch,
    params: usize,
    /// What it needs, checked at every execution (privilege.rs rule 4).
    needs: crate::privilege::Needs,
    /// The views it reads, locked at every execution (views.rs rule 6).
    views: Vec<(String, String)>,
}

/// What a kept plan depends on besides its text: the catalog (the instance's DDL
/// generation) and the index statistics the planner weighed (the store's statistics
/// version). Both only grow, so a plan made under an older pair is stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PlanEpoch {
    generation: u64,
    statistics: u64,
}

/// Session state an expression may read (everything but the transaction).
#[derive(Debug)]
pub(crate) struct State {
    pub database: Option<String>,
    pub connection_id: u64,
    pub last_insert_id: u64,
    pub user: String,
    pub autocommit: bool,
    pub isolation: IsolationLevel,
    /// Variables set in this session (lower-case names).
    pub vars: BTreeMap<String, Value>,
    pub defaults: BTreeMap<&'static str, Value>,
    /// The last statement's warnings: level, code, message.
    pub warnings: Vec<(&'static str, u16, String)>,
    /// The instance's global variables (`@@global.x`).
    pub globals: Arc<Mutex<BTreeMap<String, Value>>>,
    /// User variables (`@x`), lower-case names.
    pub user_vars: crate::user_vars::UserVars,
    /// Status variables the server sets for this connection (`Ssl_cipher`), which
    /// `SHOW STATUS` lists; a reset keeps them (they describe the connection).
    pub status: BTreeMap<String, String>,
    /// When the running statement started (microseconds since 1970-01-01 UTC): NOW().
    pub statement_time: i64,
    /// ROW_COUNT() and FOUND_ROWS() of the previous statement (row_counts.rs).
    pub last_row_count: i64,
    pub last_found_rows: u64,
    /// The account whose privileges apply (`CURRENT_USER()`); `None` is an embedded session,
    /// which is not checked (privilege.rs rule 1).
    pub account: Option<crate::grants::Account>,
    /// The instance, for what a query shows of other sessions (information_schema's
    /// PROCESSLIST, SHALE_TRX); weak, as the instance outlives its sessions.
    pub instance: std::sync::Weak<Instance>,
    /// `@@sql_mode`, parsed when set (sql_mode.rs rule 1).
    pub sql_mode: crate::sql_mode::SqlMode,
    /// `@@warning_count` / `@@error_count` (last_counts.rs).
    pub last_counts: crate::last_counts::LastCounts,
}

pub(crate) struct RunEnv<'a> {
    pub(crate) state: &'a State,
    pub(crate) params: &'a [Value],
    /// How the statement stores values strict mode refuses, and the warnings that gave.
    pub(crate) conversions: crate::lenient_store::Conversions,
}

impl Env for RunEnv<'_> {
    fn param(&self, n: usize) -> Value {
        self.params.get(n).cloned().unwrap_or(Value::Null)
    }
    fn database(&self) -> Option<&str> {
        self.state.database.as_deref()
    }
    fn connection_id(&self) -> u64 {
        self.state.connection_id
    }
    fn last_insert_id(&self) -> u64 {
        self.state.last_insert_id
    }
    fn user(&self) -> &str {
        &self.state.user
    }
    fn current_user(&self) -> String {
        match &self.state.account {
            Some(a) => format!("{}@{}", a.user, a.host),
            None => self.state.user.clone(),
        }
    }
    fn variable(&self, name: &str) -> Value {
        self.state.variable(name)
    }
    fn user_variable(&self, name: &str) -> Value {
        self.state.user_vars.get(name)
    }
    fn assign_user_variable(&self, name: &str, value: Value) -> Result<(), SqlError> {
        self.state.user_vars.set(name.to_string(), value);
        Ok(())
    }
    fn statement_time(&self) -> i64 {
        self.state.statement_time
    }
    fn row_counts(&self) -> (i64, u64) {
        (self.state.last_row_count, self.state.last_found_rows)
    }
    fn store_rules(&self) -> crate::lenient_store::StoreRules {
        self.conversions.rules
    }
    fn warn(&self, code: u16, message: String) {
        self.conversions.warn(code, message);
    }
    fn division_by_zero(&self) -> Result<(), SqlError> {
        self.conversions.division_by_zero()
    }
    fn sessions_view(&self) -> Option<crate::info_schema::SessionsView> {
        let instance = self.state.instance.upgrade()?;
        Some(crate::processlist::sessions_view(
            &instance,
            self.state.account.as_ref(),
        ))
    }
}

impl State {
    pub(crate) fn variable(&self, name: &str) -> Value {
        if let Some(global) = name.strip_prefix("global.") {
            let global = if global == "tx_isolation" {
                "transaction_isolation"
            } else {
                global
            };
            let globals = self
                .globals
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            return globals
                .get(global)
                .or_else(|| self.defaults.get(global))
                .cloned()
                .unwrap_or(Value::Null);
        }
        match name {
            "autocommit" => Value::Int(i64::from(self.autocommit)),
            "transaction_isolation" | "tx_isolation" => Value::Bytes(
                variables::isolation_name(self.isolation)
                    .as_bytes()
                    .to_vec(),
            ),
            "last_insert_id" | "identity" => Value::UInt(self.last_insert_id),
            "warning_count" => self.last_counts.warning_count(),
            "error_count" => self.last_counts.error_count(),
            "sql_mode" => self.sql_mode.value(),
            _ if crate::engine_settings::is_engine_variable(name)
                || name == crate::settings::STATS_AUTO_RECALC =>
            {
                self.variable(&format!("global.{name}"))
            }
            _ => self
                .vars
                .get(name)
                .or_else(|| self.defaults.get(name))
                .cloned()
                .unwrap_or(Value::Null),
        }
    }

    pub(crate) fn status(&self, in_transaction: bool) -> StatementStatus {
        StatementStatus {
            affected_rows: 0,
            last_insert_id: 0,
            warnings: self.warnings.len().min(usize::from(u16::MAX)) as u16,
            info: String::new(),
            in_transaction,
            autocommit: self.autocommit,
            more_results: false,
        }
    }
}

/// One client session.
#[derive(Debug)]
pub struct Session {
    instance: Arc<Instance>,
    state: State,
    txn: Option<TableTxn>,
    /// BEGIN was issued: the transaction stays open until COMMIT/ROLLBACK.
    began: bool,
    /// Named savepoints of the open transaction, oldest first; each is one table-layer
    /// savepoint.
    savepoints: Vec<String>,
    /// The client asked for CLIENT_FOUND_ROWS: UPDATE reports matched rows, not changed.
    found_rows: bool,
    prepared: HashMap<u32, Prepared>,
    next_statement_id: u32,
    /// This session's entry in the instance's process list (SHOW PROCESSLIST, KILL).
    process: crate::processlist::Registration,
    /// The store's kept index statistics, for the planner (plan_stats.rs).
    stats: crate::plan_stats::StatsProvider,
    /// PREPARE's names (lowercased) and the prepared statements they name (sql_prepare.rs).
    sql_prepared: HashMap<String, u32>,
    /// `shale_bulk_load` and its running load (bulk_insert.rs).
    bulk: crate::bulk_insert::BulkMode,
    /// Plans of text INSERTs by shape (statement_cache.rs).
    statement_cache: statement_cache::StatementCache,
    /// The tables LOCK TABLES took (table_locks.rs); released when dropped.
    table_locks: Option<shale_table::SessionLocks>,
    /// CREATE TEMPORARY TABLE's tables, dropped when the session ends (temp_tables.rs).
    temp_tables: crate::temp_tables::TempTables,
    /// The views the statement about to run was bound through (database, name): its
    /// transaction locks their names before it runs (views.rs rule 6). Set by every plan,
    /// kept or fresh.
    views_in_use: std::cell::RefCell<Vec<(String, String)>>,
}

impl Drop for Session {
    fn drop(&mut self) {
        // Its transaction may have written a temporary table: it ends first.
        self.rollback_open();
        self.temp_tables.drop_all(&self.instance.store);
    }
}

/// What a session's variables start from: the global values (SET GLOBAL sql_mode = ''
/// reaches the sessions that connect afterwards, as in MySQL), else the defaults.
fn session_defaults(globals: &BTreeMap<String, Value>) -> BTreeMap<&'static str, Value> {
    let mut defaults = variables::defaults();
    for (name, value) in globals {
        if let Some(slot) = defaults.get_mut(name.as_str()) {
            slot.clone_from(value);
        }
    }
    defaults
}

fn text_value(s: &str) -> Value {
    Value::Bytes(s.as_bytes().to_vec())
}

/// A text result column named `name`.
pub(crate) fn text_column(name: &str) -> ColumnMeta {
    SqlType::Str {
        collation: shale_table::Collation::Utf8mb4GeneralCi,
        len: 64,
    }
    .meta(name, false)
}

impl Session {
    pub(crate) fn new(instance: Arc<Instance>, connection_id: u64) -> Session {
        let globals = Arc::clone(&instance.globals);
        let (isolation, autocommit, defaults, sql_mode) = {
            let g = globals
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let defaults = session_defaults(&g);
            let isolation = g
                .get("transaction_isolation")
                .and_then(|v| parse_isolation(v).ok())
                .unwrap_or(IsolationLevel::RepeatableRead);
            let autocommit = g
                .get("autocommit")
                .is_none_or(|v| crate::value::truth(v) != Some(false));
            let sql_mode = crate::sql_mode::SqlMode::of_stored(g.get("sql_mode"));
            (isolation, autocommit, defaults, sql_mode)
        };
        let process = instance.processes.register(connection_id);
        let weak_instance = Arc::downgrade(&instance);
        Session {
            stats: crate::plan_stats::StatsProvider::new(Arc::downgrade(&instance)),
            instance,
            process,
            state: State {
                database: None,
                connection_id,
                last_insert_id: 0,
                user: "root@localhost".into(),
                autocommit,
                isolation,
                vars: BTreeMap::new(),
                defaults,
                warnings: Vec::new(),
                globals,
                user_vars: crate::user_vars::UserVars::default(),
                status: BTreeMap::new(),
                statement_time: 0,
                last_row_count: -1,
                last_found_rows: 0,
                account: None,
                instance: weak_instance,
                sql_mode,
                last_counts: crate::last_counts::LastCounts::default(),
            },
            txn: None,
            began: false,
            savepoints: Vec::new(),
            found_rows: false,
            prepared: HashMap::new(),
            next_statement_id: 1,
            sql_prepared: HashMap::new(),
            bulk: crate::bulk_insert::BulkMode::default(),
            statement_cache: statement_cache::StatementCache::default(),
            table_locks: None,
            temp_tables: crate::temp_tables::TempTables::default(),
            views_in_use: std::cell::RefCell::default(),
        }
    }

    /// Sets the id `CONNECTION_ID()` returns (the server's connection id).
    pub fn set_connection_id(&mut self, id: u64) {
        self.state.connection_id = id;
        self.process.rename(id);
    }

    pub fn connection_id(&self) -> u64 {
        self.state.connection_id
    }

    /// Sets a status variable of this connection (what `SHOW STATUS` lists).
    pub fn set_status_variable(&mut self, name: &str, value: &str) {
        self.state.status.insert(name.to_owned(), value.to_owned());
    }

    /// Sets a session variable from the connection (`max_allowed_packet` as the server
    /// enforces it for this connection), without `SET SESSION`'s checks.
    pub fn set_connection_variable(&mut self, name: &str, value: Value) {
        self.state.vars.insert(name.to_owned(), value);
    }

    /// Sets the account `USER()` and `CURRENT_USER()` return (`user@host`).
    pub fn set_user(&mut self, user: &str, host: &str) {
        self.state.user = format!("{user}@{host}");
        self.process.process().set_user(user, host);
        // A plan may hold the user (CURRENT_USER()).
        self.statement_cache.clear();
    }

    /// What KILL CONNECTION of this session calls (the server closes the socket with it).
    pub fn set_kill_hook(&self, hook: crate::processlist::KillHook) {
        self.process.process().set_kill_hook(hook);
    }

    /// KILL CONNECTION was issued for this session: its owner should close it.
    pub fn connection_killed(&self) -> bool {
        self.process.process().connection_killed()
    }

    pub(crate) fn process(&self) -> &Arc<crate::processlist::Process> {
        self.process.process()
    }

    /// Sets the account whose privileges every later statement is checked against
    /// (`CURRENT_USER()`): `user`@`host` as `mysql.user` names it.
    pub fn set_account(&mut self, user: &str, host: &str) {
        self.state.account = Some(crate::grants::Account {
            user: user.to_owned(),
            host: host.to_owned(),
        });
    }

    /// COM_RESET_CONNECTION: rolls back any transaction, forgets prepared statements, user
    /// variables, session variables and warnings; keeps the database, the account and the
    /// connection id.
    pub fn reset(&mut self) {
        // A running bulk load ends with the session variable that started it.
        let _ = self.bulk.reset();
        self.rollback_open();
        if !self.temp_tables.is_empty() {
            self.temp_tables.drop_all(&self.instance.store);
            self.instance.bump_generation();
        }
        self.prepared.clear();
        self.sql_prepared.clear();
        self.statement_cache.clear();
        self.state.user_vars.clear();
        self.state.vars.clear();
        self.state.warnings.clear();
        self.state.last_insert_id = 0;
        let globals = self
            .state
            .globals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.state.defaults = session_defaults(&globals);
        self.state.isolation = globals
            .get("transaction_isolation")
            .and_then(|v| parse_isolation(v).ok())
            .unwrap_or(IsolationLevel::RepeatableRead);
        self.state.autocommit = globals
            .get("autocommit")
            .is_none_or(|v| crate::value::truth(v) != Some(false));
        self.state.sql_mode = crate::sql_mode::SqlMode::of_stored(globals.get("sql_mode"));
    }

    /// The client's CLIENT_FOUND_ROWS capability: UPDATE's affected rows count the rows
    /// matched instead of the rows changed.
    pub fn set_found_rows(&mut self, found_rows: bool) {
        self.found_rows = found_rows;
    }

    /// The warnings of the last statement (what SHOW WARNINGS lists).
    pub fn warning_count(&self) -> u16 {
        self.state.warnings.len().min(usize::from(u16::MAX)) as u16
    }

    /// Runs every statement of `sql` (`;`-separated), reporting each to `sink`. Stops at the
    /// first error and returns it.
    pub fn execute(&mut self, sql: &str, sink: &mut dyn ResultSink) -> Result<(), SqlError> {
        self.process().begin("Query", sql)?;
        crate::querylog::general(self, "Query", sql);
        let result = on_big_stack(sql, || self.execute_text(sql, sink));
        self.process().end(self.state.database.as_deref());
        result
    }

    /// Runs each statement of `sql` in turn (statement_split.rs): a statement is split off
    /// and parsed under the state its predecessors left (`SET sql_mode` included). The first
    /// error ends the text; every result but the last says more follow.
    fn execute_text(&mut self, sql: &str, sink: &mut dyn ResultSink) -> Result<(), SqlError> {
        let mut rest = sql;
        while let Some((first, after)) =
            crate::statement_split::split_first_str(rest, self.lexing())
        {
            let mut wrapped = crate::result::MoreResults {
                inner: &mut *sink,
                more: true,
            };
            self.execute_counted(first, &mut wrapped)?;
            rest = after;
        }
        self.execute_counted(rest, sink)
    }

    /// One statement of a text, counted for `@@warning_count` and `@@error_count`
    /// (last_counts.rs) as a statement of its own, as MySQL counts it.
    fn execute_counted(&mut self, sql: &str, sink: &mut dyn ResultSink) -> Result<(), SqlError> {
        let warnings = self.state.warnings.len();
        self.state.last_counts.statement_starts(warnings);
        let result = self.execute_statement(sql, sink);
        self.state.last_counts.statement_ended(result.is_err());
        result
    }

    /// How statement text is split now (statement_split.rs).
    fn lexing(&self) -> crate::statement_split::Lexing {
        crate::statement_split::Lexing {
            backslash_escapes: !self
                .state
                .sql_mode
                .has(crate::sql_mode::SqlMode::NO_BACKSLASH_ESCAPES),
        }
    }

    /// Runs one statement's text (the parser may still find several in it: each runs).
    fn execute_statement(&mut self, sql: &str, sink: &mut dyn ResultSink) -> Result<(), SqlError> {
        if let Some(result) = crate::bulk_insert::intercept(self, sql, sink) {
            return result;
        }
        if let Some(result) = self.run_through_cache(sql, sink) {
            return result;
        }
        if let Some(tables) = crate::check_table::parse_check_table(sql, self.syntax().ansi_quotes)
        {
            let mut needs = Vec::new();
            for (db, table) in &tables {
                let db = db.clone().map_or_else(|| self.current_db(), Ok)?;
                let table = table.clone();
                needs.push(crate::privilege::Need::AnyOnTable { db, table });
            }
            self.authorize(&needs)?;
            return crate::check_table::check_tables(self, &tables, sink);
        }
        if let Some((kind, tables)) =
            crate::table_maintenance::parse(sql, self.syntax().ansi_quotes)
        {
            let needs = crate::table_maintenance::needs(self, &tables)?;
            self.authorize(&needs)?;
            return crate::table_maintenance::run(self, kind, &tables, sink);
        }
        if let Some(statement) = crate::account_parse::parse(sql) {
            return crate::account::run(self, &statement?, sink);
        }
        if let Some(statement) = crate::persist::parse(sql) {
            // SET PERSIST changes the server for everyone: SET GLOBAL's privilege.
            self.authorize(&[crate::privilege::Need::Global {
                any_of: crate::grants::SUPER | crate::grants::SYSTEM_VARIABLES_ADMIN,
            }])?;
            let counter = crate::status::Counter::ComSet;
            return crate::ops::observe(self, counter, sql, sink, |s, sink| {
                crate::persist::run(s, statement, sink)
            });
        }
        if let Some(show) = crate::info_schema::show::recognize(sql) {
            return show.run(self, sink);
        }
        if let Some(prepare) = sql_prepare::parse_prepare(sql, self.syntax()) {
            let (name, source) = prepare?;
            return self.sql_prepare(&name, &source, sink);
        }
        let syntax = self.syntax();
        let statements = crate::parse::parse_as(sql, syntax)?;
        if statements.is_empty() {
            return Err(SqlError::new(1065, "42000", "Query was empty"));
        }
        let n = statements.len();
        for (i, mut stmt) in statements.into_iter().enumerate() {
            let more = i + 1 < n;
            let mut wrapped = crate::result::MoreResults { inner: sink, more };
            let counter = crate::status::command_counter(&stmt);
            let into = crate::select_into::take_targets(&mut stmt);
            crate::ops::observe(self, counter, sql, &mut wrapped, |s, sink| {
                let planned = s.plan(stmt)?;
                if let Some(targets) = into {
                    return crate::select_into::run(s, &planned, &targets?, sink);
                }
                // Parsed again only for a rerun, so the common path keeps no copy.
                s.run_rebinding(&planned, &[], sink, |s| {
                    let stmt = crate::parse::parse_as(sql, syntax)?.swap_remove(i);
                    s.plan(stmt).map(Arc::new)
                })
            })?;
        }
        Ok(())
    }

    /// Runs the SELECT of a CREATE TABLE ... AS SELECT from its tree. Printing it and parsing
    /// the text again would read its string literals under the session's `sql_mode` in a
    /// form printed for another (syntax_mode.rs rule 8).
    pub(crate) fn run_query(
        &mut self,
        query: &sqlparser::ast::Query,
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError> {
        let planned = self.plan(Statement::Query(Box::new(query.clone())))?;
        self.run(&planned, &[], sink)
    }

    /// Prepares one statement with `?` placeholders.
    pub fn prepare(&mut self, sql: &str) -> Result<PreparedInfo, SqlError> {
        crate::status::count(self, crate::status::Counter::ComStmtPrepare, 1);
        on_big_stack(sql, || self.prepare_text(sql))
    }

    fn prepare_text(&mut self, sql: &str) -> Result<PreparedInfo, SqlError> {
        let syntax = self.syntax();
        let mut statements =
            crate::parse::parse_as(&crate::placeholders::number(sql, syntax), syntax)?;
        if statements.len() != 1 {
            return Err(SqlError::new(
                1064,
                "42000",
                "You have an error in your SQL syntax; prepared statements hold one statement",
            ));
        }
        if self.prepared.len() >= MAX_PREPARED {
            return Err(SqlError::new(
                1461,
                "42000",
                format!(
                    "Can't create more than max_prepared_stmt_count statements (current value: \
                     {MAX_PREPARED})"
                ),
            ));
        }
        let stmt = statements.remove(0);
        let params = count_params(&stmt);
        // Taken before planning: a change while planning makes the plan stale.
        let epoch = self.plan_epoch();
        let (planned, needs) = self.plan_with_needs(stmt)?;
        self.authorize(&needs)?;
        if matches!(planned, Planned::Command(_)) && sql.len() > BIG_STATEMENT {
            // A kept command's AST would later be dropped on the session's own stack.
            return Err(SqlError::new(
                1295,
                "HY000",
                "This command is not supported in the prepared statement protocol yet",
            ));
        }
        let columns = match &planned {
            Planned::Select(s, _) => s.columns.clone(),
            Planned::Query(q) => q.query.columns().to_vec(),
            _ => Vec::new(),
        };
        let id = self.next_statement_id;
        self.next_statement_id = self.next_statement_id.wrapping_add(1).max(1);
        let mut param_meta = text_column("?");
        param_meta.type_code = ColumnTypeCode::VarString;
        self.prepared.insert(
            id,
            Prepared {
                sql: sql.to_string(),
                syntax,
                planned: Arc::new(planned),
                epoch,
                params,
                needs,
                views: self.views_in_use.borrow().clone(),
            },
        );
        Ok(PreparedInfo {
            id,
            params: vec![param_meta; params],
            columns,
        })
    }

    /// Runs a prepared statement with one value per placeholder.
    pub fn execute_prepared(
        &mut self,
        id: u32,
        params: &[Value],
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError> {
        let Some(p) = self.prepared.get(&id) else {
            return Err(SqlError::unknown_prepared(id));
        };
        let (sql, counter) = (p.sql.clone(), crate::ops::planned_counter(&p.planned));
        self.process().begin("Execute", &sql)?;
        crate::querylog::general(self, "Execute", &sql);
        crate::status::count(self, crate::status::Counter::ComStmtExecute, 1);
        let warnings = self.state.warnings.len();
        self.state.last_counts.statement_starts(warnings);
        let result = crate::ops::observe(self, counter, &sql, sink, |s, sink| {
            s.execute_prepared_observed(id, params, sink)
        });
        self.state.last_counts.statement_ended(result.is_err());
        self.process().end(self.state.database.as_deref());
        result
    }

    fn execute_prepared_observed(
        &mut self,
        id: u32,
        params: &[Value],
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError> {
        let epoch = self.plan_epoch();
        let (planned, stale, count) = match self.prepared.get(&id) {
            Some(p) => {
                self.authorize(&p.needs)?;
                self.views_in_use.replace(p.views.clone());
                (Arc::clone(&p.planned), p.epoch != epoch, p.params)
            }
            None => return Err(SqlError::unknown_prepared(id)),
        };
        if params.len() != count {
            return Err(SqlError::wrong_param_count());
        }
        let planned = if stale {
            self.replan_prepared(id, epoch)?
        } else {
            planned
        };
        self.run_rebinding(&planned, params, sink, |s| {
            let epoch = s.plan_epoch();
            s.replan_prepared(id, epoch)
        })
    }

    /// The DDL generation and statistics version a plan made now is made under.
    fn plan_epoch(&self) -> PlanEpoch {
        PlanEpoch {
            generation: self.instance.generation(),
            statistics: self.instance.store.statistics_version(),
        }
    }

    /// Plans prepared statement `id` again from its text, against the catalog and the
    /// statistics of `epoch` (taken before), and keeps the new plan.
    fn replan_prepared(&mut self, id: u32, epoch: PlanEpoch) -> Result<Arc<Planned>, SqlError> {
        let Some((sql, syntax)) = self.prepared.get(&id).map(|p| (p.sql.clone(), p.syntax)) else {
            return Err(SqlError::unknown_prepared(id));
        };
        let mut statements =
            crate::parse::parse_as(&crate::placeholders::number(&sql, syntax), syntax)?;
        if statements.is_empty() {
            return Err(SqlError::unknown_prepared(id));
        }
        let (fresh, needs) = self.plan_with_needs(statements.remove(0))?;
        self.authorize(&needs)?;
        let fresh = Arc::new(fresh);
        if let Some(p) = self.prepared.get_mut(&id) {
            p.planned = Arc::clone(&fresh);
            p.epoch = epoch;
            p.needs = needs;
            p.views.clone_from(&self.views_in_use.borrow());
        }
        Ok(fresh)
    }

    /// Forgets a prepared statement (COM_STMT_CLOSE).
    pub fn close_prepared(&mut self, id: u32) {
        self.prepared.remove(&id);
    }

    /// COM_INIT_DB: fails with 1044 for a database the account holds nothing in, 1049 for an
    /// unknown one.
    pub fn use_database(&mut self, name: &str) -> Result<(), SqlError> {
        if crate::info_schema::is_database(name) {
            self.state.database = Some(crate::info_schema::DATABASE.to_string());
            return Ok(());
        }
        self.authorize(&[crate::privilege::Need::SeeDb {
            db: name.to_owned(),
        }])?;
        if !self.instance.store.catalog().databases.contains_key(name) {
            return Err(SqlError::unknown_database(name));
        }
        self.state.database = Some(name.to_string());
        self.process().set_db(Some(name));
        Ok(())
    }

    /// How this session's `sql_mode` parses statement text (syntax_mode.rs).
    pub(crate) fn syntax(&self) -> crate::syntax_mode::Syntax {
        crate::syntax_mode::Syntax::of(self.state.sql_mode)
    }

    pub fn current_database(&self) -> Option<&str> {
        self.state.database.as_deref()
    }

    /// Whether a transaction is open (`SERVER_STATUS_IN_TRANS`).
    pub fn in_transaction(&self) -> bool {
        self.began || (!self.state.autocommit && self.txn.is_some())
    }

    pub fn autocommit(&self) -> bool {
        self.state.autocommit
    }

    /// Checks the session's account has what `needs` lists (privilege.rs).
    pub(crate) fn authorize(&self, needs: &[crate::privilege::Need]) -> Result<(), SqlError> {
        let Some(account) = &self.state.account else {
            return Ok(());
        };
        // The session's own temporary tables need no table privilege (temp_tables.rs rule 5).
        let own = |db: &str, table: &str| self.temp_tables.find(db, table).is_some();
        let filtered: Vec<crate::privilege::Need>;
        let needs = if self.temp_tables.is_empty() {
            needs
        } else {
            filtered = needs
                .iter()
                .filter(|n| match n {
                    crate::privilege::Need::Table { db, table, .. }
                    | crate::privilege::Need::AnyOnTable { db, table } => !own(db, table),
                    _ => true,
                })
                .cloned()
                .collect();
            &filtered
        };
        let (user, client_host) = self
            .state
            .user
            .rsplit_once('@')
            .unwrap_or((&self.state.user, ""));
        let asker = crate::privilege::Asker {
            account,
            user,
            client_host,
        };
        crate::privilege::check(&self.instance.grants(), &asker, needs)
    }

    /// Binds, plans and authorizes one parsed statement: the one place every statement passes
    /// (privilege.rs).
    fn plan(&self, stmt: Statement) -> Result<Planned, SqlError> {
        let (planned, needs) = self.plan_with_needs(stmt)?;
        self.authorize(&needs)?;
        Ok(planned)
    }

    /// Binds and plans one parsed statement, with what it needs: its kind's needs and SELECT
    /// on every table the binder resolved. A statement that fails to bind is still checked
    /// first, so a table the account may not touch is 1142 whether or not it exists.
    fn plan_with_needs(
        &self,
        mut stmt: Statement,
    ) -> Result<(Planned, crate::privilege::Needs), SqlError> {
        // INSERT ... SET is its VALUES form from here on (insert_set.rs).
        crate::insert_set::to_values(&mut stmt)?;
        let mut needs = crate::privilege::needs_of(self.state.database.as_deref(), &stmt)?;
        let touched = std::cell::RefCell::default();
        // A write through a view becomes one on its base table (view_dml.rs).
        let (planned, views) = crate::views::collect_bound_views(|| {
            crate::view_dml::rewrite(self, stmt).and_then(|w| {
                needs.extend(w.needs);
                let planned = self
                    .bind_and_plan(w.stmt, &touched, w.check.as_ref())
                    .map_err(|e| crate::view_dml::translate(w.target.as_ref(), e));
                crate::view_dml::hide(&mut touched.borrow_mut(), &w.hidden);
                planned
            })
        });
        self.views_in_use.replace(views);
        for (db, table) in touched.into_inner() {
            let covered = needs.iter().any(|n| {
                matches!(n, crate::privilege::Need::Table { db: d, table: t, .. }
                    if *d == db && t.eq_ignore_ascii_case(&table))
            });
            if !covered {
                needs.push(crate::privilege::Need::Table {
                    privs: crate::grants::SELECT,
                    db,
                    table,
                });
            }
        }
        match planned {
            Ok(planned) => Ok((planned, needs)),
            Err(e) => {
                self.authorize(&needs)?;
                Err(e)
            }
        }
    }

    /// Runs `f` with a binder over the current catalog and this session's database, variable
    /// defaults and account, recording the tables it resolves in `touched` (privilege.rs).
    pub(crate) fn bind_touching<R>(
        &self,
        touched: &std::cell::RefCell<Vec<(String, String)>>,
        f: impl FnOnce(&mut Binder<'_>) -> Result<R, SqlError>,
    ) -> Result<R, SqlError> {
        let catalog = self.catalog();
        let defaults = &self.state.defaults;
        let variable = |name: &str| defaults.get(name).cloned();
        let ctx = BindContext {
            catalog: &catalog,
            database: self.state.database.as_deref(),
            variable: &variable,
            user: &self.state.user,
            touched,
            statistics: Some(&self.stats),
            collation_connection: self.collation_connection(),
            full_group_by: self
                .state
                .sql_mode
                .has(crate::sql_mode::SqlMode::ONLY_FULL_GROUP_BY),
        };
        f(&mut Binder::new(&ctx))
    }

    fn bind_and_plan(
        &self,
        stmt: Statement,
        touched: &std::cell::RefCell<Vec<(String, String)>>,
        view_check: Option<&(ast::Expr, String)>,
    ) -> Result<Planned, SqlError> {
        let is_data = matches!(
            stmt,
            Statement::Query(_)
                | Statement::Insert(_)
                | Statement::Update(_)
                | Statement::Delete(_)
        );
        if !is_data {
            return Ok(Planned::Command(Box::new(stmt)));
        }
        self.bind_touching(touched, |binder| {
            binder.assigned_vars = std::rc::Rc::new(crate::user_vars::assigned_in(&stmt));
            let planned = match &stmt {
                Statement::Query(q) => {
                    let mut bound = binder.query(q)?;
                    let calc_found_rows = crate::found_rows::requested(q);
                    if binder.calc_found_rows > usize::from(calc_found_rows) {
                        return Err(crate::found_rows::misplaced());
                    }
                    let subqueries = std::mem::take(&mut binder.subqueries);
                    if calc_found_rows {
                        let window = crate::found_rows::Window::take(&mut bound);
                        let mut planned = crate::query::plan_statement(bound, subqueries);
                        planned.found_rows_window = Some(window);
                        return Ok(Planned::Query(Box::new(planned)));
                    }
                    let s = match bound {
                        crate::query::BoundQuery::Select(s)
                            if s.from.is_none() && subqueries.is_empty() =>
                        {
                            *s
                        }
                        other => {
                            return Ok(Planned::Query(Box::new(crate::query::plan_statement(
                                other, subqueries,
                            ))))
                        }
                    };
                    let mut access = match &s.table {
                        Some(t) => plan::plan(&t.def, s.filter.as_ref(), t.stats.as_ref()),
                        None => Plan {
                            access: Access::NoTable,
                            residual: s.filter.clone(),
                            ordered: None,
                        },
                    };
                    if let (Some(t), false) = (&s.table, s.order_by.is_empty()) {
                        access.ordered = plan::order(&t.def, &access, &s.order_by);
                    }
                    Planned::Select(s, access)
                }
                Statement::Insert(i) => {
                    let b = binder.insert(i)?;
                    if !binder.subqueries.is_empty() {
                        return Err(SqlError::unsupported(
                            "subqueries in INSERT ... VALUES or ON DUPLICATE KEY UPDATE",
                        ));
                    }
                    let plan = b.select.as_ref().map(|(s, _)| match &s.table {
                        Some(t) => plan::plan(&t.def, s.filter.as_ref(), t.stats.as_ref()),
                        None => Plan {
                            access: Access::NoTable,
                            residual: s.filter.clone(),
                            ordered: None,
                        },
                    });
                    Planned::Insert(b, plan)
                }
                Statement::Update(u) if crate::multi_dml::is_general_update(u) => {
                    Planned::MultiTable(Box::new(crate::multi_dml::plan_update(binder, u)?))
                }
                Statement::Delete(d) if crate::multi_dml::is_general_delete(d) => {
                    Planned::MultiTable(Box::new(crate::multi_dml::plan_delete(binder, d)?))
                }
                Statement::Update(u) => {
                    let b = binder.update(u)?;
                    if !binder.subqueries.is_empty() {
                        return Err(SqlError::unsupported("subqueries in UPDATE"));
                    }
                    let access =
                        plan::plan(&b.table.def, b.filter.as_ref(), b.table.stats.as_ref());
                    Planned::Update(b, access)
                }
                Statement::Delete(d) => {
                    let b = binder.delete(d)?;
                    if !binder.subqueries.is_empty() {
                        return Err(SqlError::unsupported("subqueries in DELETE"));
                    }
                    let access =
                        plan::plan(&b.table.def, b.filter.as_ref(), b.table.stats.as_ref());
                    Planned::Delete(b, access)
                }
                _ => Planned::Command(Box::new(stmt)),
            };
            crate::view_dml::attach_check(binder, view_check, planned)
        })
    }

    pub(crate) fn begin_txn(&self) -> Result<TableTxn, SqlError> {
        self.begin_txn_with(self.state.isolation)
    }

    fn begin_txn_with(&self, isolation: IsolationLevel) -> Result<TableTxn, SqlError> {
        let mut txn = self.instance.store.begin(TxnOptions {
            isolation,
            ..TxnOptions::default()
        })?;
        crate::timestamp::set_txn_zone(&mut txn, &self.state.variable("time_zone"))?;
        txn.set_owner(self.state.connection_id);
        Ok(txn)
    }

    /// Replaces the session's LOCK TABLES locks (table_locks.rs); returns whether it held
    /// some.
    pub(crate) fn set_table_locks(&mut self, locks: Option<shale_table::SessionLocks>) -> bool {
        std::mem::replace(&mut self.table_locks, locks).is_some()
    }

    /// The session's LOCK TABLES locks, if it holds some.
    pub(crate) fn table_locks(&self) -> Option<&shale_table::SessionLocks> {
        self.table_locks.as_ref()
    }

    /// Commits the open transaction, if any.
    pub(crate) fn commit_open(&mut self) -> Result<(), SqlError> {
        self.began = false;
        self.savepoints.clear();
        let committed = match self.txn.take() {
            Some(t) => t.commit(),
            None => Ok(()),
        };
        self.temp_tables.drop_retired(&self.instance.store);
        Ok(committed?)
    }

    fn rollback_open(&mut self) {
        self.began = false;
        self.savepoints.clear();
        if let Some(t) = self.txn.take() {
            t.rollback();
        }
        self.temp_tables.drop_retired(&self.instance.store);
    }

    /// Whether an engine transaction is open across statements (BEGIN, or autocommit off
    /// after a statement).
    pub(crate) fn transaction_open(&self) -> bool {
        self.txn.is_some()
    }

    /// SAVEPOINT: a no-op outside a transaction, as in MySQL with autocommit.
    fn savepoint(&mut self, name: &str) -> Result<(), SqlError> {
        if !self.keeps_transaction() {
            return Ok(());
        }
        if let Some(pos) = self
            .savepoints
            .iter()
            .position(|s| s.eq_ignore_ascii_case(name))
        {
            // Re-setting a savepoint replaces it; the table layer can only drop its newest.
            if pos + 1 != self.savepoints.len() {
                return Err(SqlError::unsupported(
                    "re-setting a savepoint that is not the newest",
                ));
            }
            self.unwind_to(name, false)?;
        }
        if self.txn.is_none() {
            self.txn = Some(self.begin_txn()?);
        }
        if let Some(txn) = self.txn.as_mut() {
            txn.set_savepoint();
        }
        self.savepoints.push(name.to_string());
        Ok(())
    }

    /// RELEASE SAVEPOINT (`rollback` false) or ROLLBACK TO SAVEPOINT (true): drops `name` and
    /// every later savepoint, keeping or undoing their changes.
    fn unwind_to(&mut self, name: &str, rollback: bool) -> Result<(), SqlError> {
        let Some(pos) = self
            .savepoints
            .iter()
            .position(|s| s.eq_ignore_ascii_case(name))
        else {
            return Err(SqlError::new(
                1305,
                "42000",
                format!("SAVEPOINT {name} does not exist"),
            ));
        };
        let Some(txn) = self.txn.as_mut() else {
            self.savepoints.clear();
            return Err(SqlError::new(
                1305,
                "42000",
                format!("SAVEPOINT {name} does not exist"),
            ));
        };
        while self.savepoints.len() > pos {
            self.savepoints.pop();
            if rollback {
                txn.rollback_to_savepoint()?;
            } else {
                txn.release_savepoint()?;
            }
        }
        Ok(())
    }

    /// Whether the transaction stays open after a statement.
    fn keeps_transaction(&self) -> bool {
        self.began || !self.state.autocommit
    }

    /// Runs a planned statement. An autocommit INSERT, UPDATE or DELETE that loses a write
    /// conflict (1213: under REPEATABLE READ a row changed after its snapshot) is retried in a
    /// fresh transaction, up to `MAX_RETRIES` times: nothing was committed or sent to the
    /// client yet, and InnoDB would have waited for the row instead of failing.
    pub(crate) fn run(
        &mut self,
        planned: &Planned,
        params: &[Value],
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError> {
        let retryable = writes_rows(planned);
        let mut attempt = 0;
        loop {
            let own_transaction = !self.keeps_transaction() && self.txn.is_none();
            match self.run_once(planned, params, sink) {
                Err(e)
                    if e.code == 1213 && retryable && own_transaction && attempt < MAX_RETRIES =>
                {
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    /// [`run`](Self::run), and a statement told that a DDL statement replaced its table's
    /// definition while it waited or ran (1412: a rewriting ALTER TABLE, shale-table's
    /// fence.rs and metadata_lock.rs) is planned again by `replan` against the new definition
    /// and rerun, up to `MAX_RETRIES` times, as MySQL binds a statement only after its
    /// metadata locks: an autocommit INSERT, UPDATE or DELETE (nothing of it was committed),
    /// and a SELECT that sent nothing to the client yet, in autocommit mode or inside a
    /// transaction (a REPEATABLE READ snapshot older than the rewrite gets 1412 again from the
    /// rerun, as InnoDB's consistent read of a rebuilt table does). A write inside a
    /// transaction keeps its 1412.
    fn run_rebinding(
        &mut self,
        planned: &Planned,
        params: &[Value],
        sink: &mut dyn ResultSink,
        mut replan: impl FnMut(&mut Self) -> Result<Arc<Planned>, SqlError>,
    ) -> Result<(), SqlError> {
        let reads = matches!(planned, Planned::Select(..) | Planned::Query(..));
        let retryable =
            reads || writes_rows(planned) && !self.keeps_transaction() && self.txn.is_none();
        let mut watched = Watched {
            inner: sink,
            used: false,
        };
        let mut result = self.run(planned, params, &mut watched);
        let mut attempt = 0;
        while retryable
            && !watched.used
            && attempt < MAX_RETRIES
            && matches!(&result, Err(e) if e.code == 1412)
        {
            attempt += 1;
            let fresh = replan(self)?;
            result = self.run(&fresh, params, &mut watched);
        }
        result
    }

    fn run_once(
        &mut self,
        planned: &Planned,
        params: &[Value],
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError> {
        self.state.statement_time =
            crate::timestamp::statement_clock(&self.state.variable("timestamp"));
        if let Planned::Command(stmt) = planned {
            let done = self.command(stmt, sink);
            if done.is_ok() {
                self.state.last_row_count = 0;
            }
            return done;
        }
        self.state.warnings.clear();
        let keep = self.keeps_transaction();
        let mut txn = match self.txn.take() {
            Some(t) => t,
            // An autocommit INSERT, UPDATE or DELETE is a transaction of one statement: no
            // earlier read needs a snapshot kept, and its rows are read with locks at their
            // newest committed version, as InnoDB's UPDATE and DELETE always read ("current
            // read"). READ COMMITTED gives exactly that, without REPEATABLE READ's write
            // conflicts (1213) on rows changed since a snapshot this statement never needed.
            None if !keep && writes_rows(planned) => {
                self.begin_txn_with(IsolationLevel::ReadCommitted)?
            }
            None => self.begin_txn()?,
        };
        if keep {
            // A failing statement inside a transaction undoes only itself.
            txn.set_savepoint();
        }
        let env = RunEnv {
            state: &self.state,
            params,
            conversions: crate::lenient_store::Conversions::of_statement(
                self.state.sql_mode,
                planned,
            ),
        };
        let mut status = self.state.status(keep);
        let mut insert_warnings = Vec::new();
        let mut counter = crate::row_counts::RowCounter {
            inner: sink,
            rows: 0,
            raised: env.conversions.raised(),
        };
        let sink = &mut counter;
        // SQL_CALC_FOUND_ROWS: every row the query found, past its LIMIT (found_rows.rs).
        let mut found_rows = None;
        // The views' names first, as MySQL opens a view (views.rs rule 6).
        let views = self.views_in_use.borrow().clone();
        let locked = if views.is_empty() {
            Ok(())
        } else {
            txn.lock_view_names(&views).map_err(SqlError::from)
        };
        let result = locked.and_then(|()| match planned {
            Planned::Select(s, access) => {
                exec::select(&mut txn, s, access, &env, sink, &status).map(|()| None)
            }
            Planned::Query(q) => match &q.found_rows_window {
                Some(window) => window.sink(sink, &env).and_then(|mut windowed| {
                    let ran =
                        crate::query::run_statement(&mut txn, q, &env, &mut windowed, &status);
                    found_rows = Some(windowed.found);
                    ran.map(|()| None)
                }),
                None => {
                    crate::query::run_statement(&mut txn, q, &env, sink, &status).map(|()| None)
                }
            },
            Planned::Insert(i, plan) => exec::insert(&mut txn, i, plan.as_ref(), &env).map(|out| {
                status.affected_rows = out.affected;
                status.last_insert_id = out.first_id;
                let warnings = out.warnings.len() + env.conversions.count();
                status.warnings = warnings.min(usize::from(u16::MAX)) as u16;
                if i.rows.len() > 1 || i.select.is_some() || i.query.is_some() {
                    status.info = format!(
                        "Records: {}  Duplicates: {}  Warnings: {warnings}",
                        out.records, out.duplicates,
                    );
                }
                insert_warnings = out.warnings;
                Some(status.clone())
            }),
            Planned::Update(u, access) => {
                exec::update(&mut txn, u, access, &env).map(|(matched, changed)| {
                    status.affected_rows = if self.found_rows { matched } else { changed };
                    let warnings = env.conversions.count();
                    status.warnings = warnings.min(usize::from(u16::MAX)) as u16;
                    status.info = format!(
                        "Rows matched: {matched}  Changed: {changed}  Warnings: {warnings}"
                    );
                    Some(status.clone())
                })
            }
            Planned::Delete(d, access) => exec::delete(&mut txn, d, access, &env).map(|n| {
                status.affected_rows = n;
                Some(status.clone())
            }),
            Planned::MultiTable(m) => {
                crate::multi_dml::run(&mut txn, m, &env).map(|(matched, changed)| {
                    if m.delete {
                        status.affected_rows = changed;
                    } else {
                        status.affected_rows = if self.found_rows { matched } else { changed };
                        let warnings = env.conversions.count();
                        status.warnings = warnings.min(usize::from(u16::MAX)) as u16;
                        status.info = format!(
                            "Rows matched: {matched}  Changed: {changed}  Warnings: {warnings}"
                        );
                    }
                    Some(status.clone())
                })
            }
            Planned::Command(_) => Ok(None),
        });
        let conversion_warnings = env.conversions.take();
        self.state.warnings.extend(conversion_warnings);
        self.state.warnings.extend(insert_warnings);
        match result {
            Ok(ok) => {
                if keep {
                    txn.release_savepoint()?;
                    self.txn = Some(txn);
                } else if matches!(planned, Planned::Select(..) | Planned::Query(..)) {
                    // A SELECT wrote nothing, and its result set has ended: rolling back (which
                    // cannot fail) releases its locks without a commit error after the fact.
                    txn.rollback();
                } else {
                    txn.commit()?;
                }
                if matches!(planned, Planned::Select(..) | Planned::Query(..)) {
                    self.state.last_row_count = -1;
                    self.state.last_found_rows = found_rows.unwrap_or(sink.rows);
                }
                if let Some(mut st) = ok {
                    self.state.last_row_count = i64::try_from(st.affected_rows).unwrap_or(i64::MAX);
                    if st.last_insert_id != 0 {
                        self.state.last_insert_id = st.last_insert_id;
                    }
                    st.in_transaction = self.in_transaction();
                    // The statement's own warnings and those its expressions raised.
                    st.warnings = u16::try_from(self.state.warnings.len()).unwrap_or(u16::MAX);
                    sink.ok(&st)?;
                }
                Ok(())
            }
            Err(e) => {
                if keep && !e.rolls_back_transaction() && txn.rollback_to_savepoint().is_ok() {
                    self.txn = Some(txn);
                } else {
                    txn.rollback();
                    self.savepoints.clear();
                    if keep {
                        self.began = false;
                    }
                }
                Err(e)
            }
        }
    }

    /// CREATE TABLE of a name in use: with IF NOT EXISTS, note 1050 and an OK; else 1050.
    pub(crate) fn table_already_exists(
        &mut self,
        name: &str,
        if_not_exists: bool,
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError> {
        if !if_not_exists {
            return Err(SqlError::table_exists(name));
        }
        self.state
            .warnings
            .push(("Note", 1050, format!("Table '{name}' already exists")));
        self.ok(sink, 0)
    }

    pub(crate) fn ok(&self, sink: &mut dyn ResultSink, affected: u64) -> Result<(), SqlError> {
        let mut st = self.state.status(self.in_transaction());
        st.affected_rows = affected;
        sink.ok(&st)
    }

    /// Sends a result set of text columns.
    pub(crate) fn text_rows(
        &self,
        sink: &mut dyn ResultSink,
        columns: &[ColumnMeta],
        rows: &[Vec<Value>],
    ) -> Result<(), SqlError> {
        sink.columns(columns)?;
        for r in rows {
            sink.row(r)?;
        }
        sink.end(&self.state.status(self.in_transaction()))
    }

    /// An OK status for this session's state (warnings, transaction flags).
    pub(crate) fn status(&self) -> StatementStatus {
        self.state.status(self.in_transaction())
    }

    pub(crate) fn ddl_prelude(&mut self) -> Result<(), SqlError> {
        self.state.warnings.clear();
        self.commit_open()
    }

    /// Takes `names` (database, name) exclusive for a DDL statement that creates, changes or
    /// drops them (shale-table's name_lock.rs): called after [`ddl_prelude`](Self::ddl_prelude)
    /// (the session's own transaction, and its shared locks, ended) and before the statement's
    /// first call into the store (lock order: names, then the store's DDL mutex, then table
    /// ids). Waits up to `lock_wait_timeout` (1205), or until KILL QUERY (1317).
    pub(crate) fn lock_names(
        &self,
        names: &[(String, String)],
    ) -> Result<shale_table::ExclusiveNames, SqlError> {
        Ok(self.instance.store.lock_names(names)?)
    }

    pub(crate) fn current_db(&self) -> Result<String, SqlError> {
        self.state
            .database
            .clone()
            .ok_or_else(SqlError::no_database)
    }

    fn qualify(&self, name: &ast::ObjectName) -> Result<(String, String), SqlError> {
        let parts = crate::bind::ident_name(name);
        let (db, table) = match parts.as_slice() {
            [t] => (self.current_db()?, t.clone()),
            [d, t] => (d.clone(), t.clone()),
            _ => return Err(SqlError::unsupported(format!("name {name}"))),
        };
        if crate::info_schema::is_database(&db) {
            // DDL on information_schema's tables (info_schema rule 3).
            return Err(crate::info_schema::access_denied(&self.state.user));
        }
        Ok((db, table))
    }

    /// Runs a session command or DDL statement.
    fn command(&mut self, stmt: &Statement, sink: &mut dyn ResultSink) -> Result<(), SqlError> {
        match stmt {
            Statement::StartTransaction { .. } => {
                self.commit_open()?;
                // As MySQL's START TRANSACTION, it releases LOCK TABLES' locks.
                self.unlock_tables_only();
                // The snapshot is taken by the first statement, as InnoDB takes it at the
                // first read.
                self.began = true;
                self.state.warnings.clear();
                self.ok(sink, 0)
            }
            Statement::Commit { chain: false, .. } => {
                self.state.warnings.clear();
                self.commit_open()?;
                self.ok(sink, 0)
            }
            Statement::Rollback {
                chain: false,
                savepoint: None,
            } => {
                self.state.warnings.clear();
                self.rollback_open();
                self.ok(sink, 0)
            }
            Statement::Savepoint { name } => {
                self.state.warnings.clear();
                self.savepoint(&name.value)?;
                self.ok(sink, 0)
            }
            Statement::ReleaseSavepoint { name } => {
                self.state.warnings.clear();
                self.unwind_to(&name.value, false)?;
                self.ok(sink, 0)
            }
            Statement::Rollback {
                chain: false,
                savepoint: Some(name),
            } => {
                self.state.warnings.clear();
                self.unwind_to(&name.value, true)?;
                // MySQL keeps the savepoint rolled back to.
                self.savepoint(&name.value)?;
                self.ok(sink, 0)
            }
            Statement::Set(set) => {
                self.state.warnings.clear();
                self.set(set)?;
                self.ok(sink, 0)
            }
            Statement::Use(u) => {
                let name = match u {
                    ast::Use::Object(n) | ast::Use::Database(n) | ast::Use::Schema(n) => {
                        crate::bind::ident_name(n).join(".")
                    }
                    _ => return Err(SqlError::unsupported(stmt.to_string())),
                };
                self.use_database(&name)?;
                self.state.warnings.clear();
                self.ok(sink, 0)
            }
            Statement::CreateDatabase {
                db_name,
                if_not_exists,
                ..
            }
            | Statement::CreateSchema {
                schema_name: ast::SchemaName::Simple(db_name),
                if_not_exists,
                ..
            } => {
                self.ddl_prelude()?;
                self.refuse_under_table_locks()?;
                let name = crate::bind::ident_name(db_name).join(".");
                if crate::info_schema::is_database(&name) {
                    return Err(crate::info_schema::access_denied(&self.state.user));
                }
                if self.instance.store.catalog().databases.contains_key(&name) {
                    if *if_not_exists {
                        self.state.warnings.push((
                            "Note",
                            1007,
                            format!("Can't create database '{name}'; database exists"),
                        ));
                        return self.ok(sink, 0);
                    }
                    return Err(SqlError::database_exists(&name));
                }
                self.instance.store.create_database(&name)?;
                self.instance.bump_generation();
                self.ok(sink, 1)
            }
            Statement::Drop {
                object_type: ast::ObjectType::Table,
                if_exists,
                names,
                temporary: true,
                ..
            } => crate::temp_tables::drop_temporary(self, *if_exists, names, sink),
            Statement::Drop {
                object_type,
                if_exists,
                names,
                table,
                ..
            } => self.drop(*object_type, *if_exists, names, table.as_ref(), sink),
            Statement::CreateView(cv) => crate::views::create_view(self, cv, sink),
            Statement::AlterView(av) => crate::views::alter_view(self, av, sink),
            Statement::CreateTable(ct) if ct.temporary => {
                crate::temp_tables::create(self, ct, sink)
            }
            Statement::CreateTable(ct) if ct.like.is_some() => {
                crate::alter::create_like(self, ct, sink)
            }
            Statement::CreateTable(ct) if ct.query.is_some() => {
                crate::alter::create_select(self, ct, sink)
            }
            Statement::CreateTable(ct) => {
                self.ddl_prelude()?;
                let (db, name) = self.qualify(&ct.name)?;
                let _name = self.lock_names(&[(db.clone(), name.clone())])?;
                let catalog = self.instance.store.catalog();
                if !catalog.databases.contains_key(&db) {
                    return Err(SqlError::unknown_database(&db));
                }
                if crate::bind::lookup_table(&catalog, &db, &name).is_some() {
                    return self.table_already_exists(&name, ct.if_not_exists, sink);
                }
                self.check_ddl_lock(&db, &name, TableLockMode::Write)?;
                let (def, warnings) = crate::ddl::table_def(&db, &name, ct)?;
                crate::gencols::check_table(&catalog, &def)?;
                self.instance.store.create_table(def)?;
                self.instance.bump_generation();
                self.state.warnings = warnings;
                self.ok(sink, 0)
            }
            Statement::CreateIndex(ci) => {
                self.ddl_prelude()?;
                let (db, name) = self.qualify(&ci.table_name)?;
                if let Some(def) = self.temp_tables.find(&db, &name) {
                    let mut new = (*def).clone();
                    new.indexes.push(crate::ddl::index_def(&def, ci)?);
                    return crate::alter::alter_temporary(self, &def, new, sink);
                }
                self.check_ddl_lock(&db, &name, TableLockMode::Write)?;
                let catalog = self.instance.store.catalog();
                let def = crate::bind::lookup_table(&catalog, &db, &name)
                    .ok_or_else(|| SqlError::no_such_table(&db, &name))?;
                let index = crate::ddl::index_def(&def, ci)?;
                self.instance.store.create_index(&db, &def.name, index)?;
                self.instance.bump_generation();
                let mut st = self.state.status(false);
                st.info = "Records: 0  Duplicates: 0  Warnings: 0".into();
                sink.ok(&st)
            }
            Statement::AlterTable(at) if crate::alter::handles(at) => {
                crate::alter::alter_table(self, at, sink)
            }
            // A temporary table's index-only ALTER is a rewrite as any other (temp_tables.rs
            // rule 7).
            Statement::AlterTable(at)
                if self
                    .qualify(&at.name)
                    .is_ok_and(|(db, name)| self.temp_tables.find(&db, &name).is_some()) =>
            {
                crate::alter::alter_table(self, at, sink)
            }
            Statement::RenameTable(renames) => crate::alter::rename_tables(self, renames, sink),
            Statement::AlterTable(at) => {
                self.ddl_prelude()?;
                let (db, name) = self.qualify(&at.name)?;
                self.check_ddl_lock(&db, &name, TableLockMode::Write)?;
                for op in &at.operations {
                    let catalog = self.instance.store.catalog();
                    let def = crate::bind::lookup_table(&catalog, &db, &name)
                        .ok_or_else(|| SqlError::no_such_table(&db, &name))?;
                    match op {
                        ast::AlterTableOperation::AddConstraint { constraint, .. } => {
                            let index = crate::ddl::constraint_index(&def, constraint)?;
                            self.instance.store.create_index(&db, &def.name, index)?;
                        }
                        ast::AlterTableOperation::DropIndex { name: index } => {
                            self.drop_index_named(&db, &def, &index.value)?;
                        }
                        other => return Err(SqlError::unsupported(format!("ALTER TABLE {other}"))),
                    }
                    self.instance.bump_generation();
                }
                let mut st = self.state.status(false);
                st.info = "Records: 0  Duplicates: 0  Warnings: 0".into();
                sink.ok(&st)
            }
            Statement::Truncate(t) => {
                let mut targets = Vec::new();
                for target in &t.table_names {
                    targets.push(self.qualify(&target.name)?);
                }
                // Only TRUNCATE of temporary tables leaves the transaction open (MySQL;
                // temp_tables.rs rule 8).
                if targets
                    .iter()
                    .all(|(db, name)| self.temp_tables.find(db, name).is_some())
                {
                    self.state.warnings.clear();
                } else {
                    self.ddl_prelude()?;
                }
                for (db, name) in targets {
                    if let Some(def) = self.temp_tables.find(&db, &name) {
                        crate::temp_tables::truncate(self, &def)?;
                        continue;
                    }
                    self.check_ddl_lock(&db, &name, TableLockMode::Write)?;
                    let catalog = self.instance.store.catalog();
                    let def = crate::bind::lookup_table(&catalog, &db, &name)
                        .ok_or_else(|| SqlError::no_such_table(&db, &name))?;
                    self.instance.store.truncate_table(&db, &def.name)?;
                }
                self.instance.bump_generation();
                self.ok(sink, 0)
            }
            Statement::Query(_)
            | Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_) => {
                let planned = self.plan(stmt.clone())?;
                self.run_rebinding(&planned, &[], sink, |s| s.plan(stmt.clone()).map(Arc::new))
            }
            Statement::ShowProcessList { .. }
            | Statement::Kill { .. }
            | Statement::ShowStatus { .. } => crate::ops::command(self, stmt, sink),
            Statement::Execute { .. } | Statement::Deallocate { .. } => {
                self.sql_prepared_command(stmt, sink)
            }
            other => crate::show::show(self, other, sink),
        }
    }

    fn drop(
        &mut self,
        object_type: ast::ObjectType,
        if_exists: bool,
        names: &[ast::ObjectName],
        table: Option<&ast::ObjectName>,
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError> {
        self.ddl_prelude()?;
        match object_type {
            ast::ObjectType::Database | ast::ObjectType::Schema => {
                self.refuse_under_table_locks()?;
                let mut dropped = 0;
                for n in names {
                    let name = crate::bind::ident_name(n).join(".");
                    if crate::info_schema::is_database(&name) {
                        return Err(crate::info_schema::access_denied(&self.state.user));
                    }
                    let tables = self
                        .instance
                        .store
                        .catalog()
                        .databases
                        .get(&name)
                        .map(std::collections::BTreeMap::len);
                    match tables {
                        None if if_exists => self.state.warnings.push((
                            "Note",
                            1008,
                            format!("Can't drop database '{name}'; database doesn't exist"),
                        )),
                        None => return Err(SqlError::drop_unknown_database(&name)),
                        Some(count) => {
                            // Its views go too: each waits for the transactions reading it.
                            let views: Vec<(String, String)> = self
                                .instance
                                .store
                                .catalog()
                                .views
                                .get(&name)
                                .into_iter()
                                .flat_map(|v| v.keys().map(|view| (name.clone(), view.clone())))
                                .collect();
                            let _views = self.lock_names(&views)?;
                            self.instance.store.drop_database(&name)?;
                            dropped += count as u64;
                            if self.state.database.as_deref() == Some(name.as_str()) {
                                self.state.database = None;
                            }
                        }
                    }
                }
                self.instance.bump_generation();
                self.ok(sink, dropped)
            }
            ast::ObjectType::View => crate::views::drop_views(self, if_exists, names, sink),
            ast::ObjectType::Table => {
                let mut qualified = Vec::new();
                for n in names {
                    let (db, name) = self.qualify(n)?;
                    // A session's temporary table needs no LOCK TABLES lock (MySQL).
                    if self.temp_tables.find(&db, &name).is_none() {
                        self.check_ddl_lock(&db, &name, TableLockMode::Write)?;
                    }
                    qualified.push((db, name));
                }
                let catalog = self.instance.store.catalog();
                let mut missing = Vec::new();
                let mut found = Vec::new();
                let mut temporary = Vec::new();
                for (db, name) in qualified {
                    // The session's temporary table first (temp_tables.rs rule 3).
                    if self.temp_tables.find(&db, &name).is_some() {
                        temporary.push((db, name));
                        continue;
                    }
                    match crate::bind::lookup_table(&catalog, &db, &name) {
                        Some(def) => found.push((db, def.name.clone())),
                        None => missing.push(format!("{db}.{name}")),
                    }
                }
                if !missing.is_empty() && !if_exists {
                    return Err(SqlError::unknown_table_drop(&missing.join(",")));
                }
                for (db, name) in temporary {
                    crate::temp_tables::drop_named(self, &db, &name)?;
                }
                for (db, name) in found {
                    self.instance.store.drop_table(&db, &name)?;
                }
                for m in missing {
                    self.state
                        .warnings
                        .push(("Note", 1051, format!("Unknown table '{m}'")));
                }
                self.instance.bump_generation();
                self.ok(sink, 0)
            }
            ast::ObjectType::Index => {
                let (Some(t), [index]) = (table, names) else {
                    return Err(SqlError::unsupported("DROP INDEX without ON table"));
                };
                let (db, name) = self.qualify(t)?;
                let index = crate::bind::ident_name(index).join(".");
                if let Some(def) = self.temp_tables.find(&db, &name) {
                    let mut new = (*def).clone();
                    let Some(at) = new
                        .indexes
                        .iter()
                        .position(|i| i.name.eq_ignore_ascii_case(&index))
                    else {
                        return Err(no_such_index(&index));
                    };
                    new.indexes.remove(at);
                    return crate::alter::alter_temporary(self, &def, new, sink);
                }
                self.check_ddl_lock(&db, &name, TableLockMode::Write)?;
                let catalog = self.instance.store.catalog();
                let def = crate::bind::lookup_table(&catalog, &db, &name)
                    .ok_or_else(|| SqlError::no_such_table(&db, &name))?;
                self.drop_index_named(&db, &def, &index)?;
                self.instance.bump_generation();
                self.ok(sink, 0)
            }
            other => Err(SqlError::unsupported(format!("DROP {other}"))),
        }
    }

    fn drop_index_named(
        &self,
        db: &str,
        def: &shale_table::TableDef,
        index: &str,
    ) -> Result<(), SqlError> {
        let Some(ix) = def
            .indexes
            .iter()
            .find(|i| i.name.eq_ignore_ascii_case(index))
        else {
            return Err(no_such_index(index));
        };
        Ok(self.instance.store.drop_index(db, &def.name, &ix.name)?)
    }

    pub(crate) fn set(&mut self, set: &ast::Set) -> Result<(), SqlError> {
        match set {
            ast::Set::SetNames {
                charset_name,
                collation_name,
            } => self.set_names(Some(&charset_name.value), collation_name.as_deref()),
            ast::Set::SetNamesDefault {} => self.set_names(None, None),
            ast::Set::SetTransaction { modes, .. } => {
                for m in modes {
                    if let ast::TransactionMode::IsolationLevel(l) = m {
                        self.state.isolation = match l {
                            ast::TransactionIsolationLevel::ReadUncommitted
                            | ast::TransactionIsolationLevel::ReadCommitted => {
                                IsolationLevel::ReadCommitted
                            }
                            _ => IsolationLevel::RepeatableRead,
                        };
                    }
                }
                Ok(())
            }
            ast::Set::SingleAssignment {
                variable,
                values,
                scope,
                ..
            } => {
                let name = crate::bind::ident_name(variable).join(".");
                let global = matches!(scope, Some(ast::ContextModifier::Global));
                self.assign(&name, values, global)
            }
            ast::Set::MultipleAssignments { assignments } => {
                for a in assignments {
                    let name = crate::bind::ident_name(&a.name).join(".");
                    let global = matches!(a.scope, Some(ast::ContextModifier::Global));
                    self.assign(&name, std::slice::from_ref(&a.value), global)?;
                }
                Ok(())
            }
            other => Err(SqlError::unsupported(other.to_string())),
        }
    }

    /// `SET @x = (SELECT ...)`: the value of an expression holding a subquery, read by running
    /// `SELECT expr` in this session (its transaction, privileges and errors: 1242 for a
    /// subquery of several rows). The parsed expression is planned as it is: printed back as
    /// text its literals would be read again (backslashes included).
    fn value_of_query(&mut self, e: &ast::Expr) -> Result<Value, SqlError> {
        let mut stmt = crate::parse::parse("SELECT NULL")?.swap_remove(0);
        if let Statement::Query(q) = &mut stmt {
            if let ast::SetExpr::Select(select) = q.body.as_mut() {
                select.projection = vec![ast::SelectItem::UnnamedExpr(e.clone())];
            }
        }
        let planned = self.plan(stmt)?;
        let mut result = crate::alter::Collected::default();
        self.run(&planned, &[], &mut result)?;
        Ok(result
            .rows
            .into_iter()
            .next()
            .and_then(|row| row.into_iter().next())
            .unwrap_or(Value::Null))
    }

    fn assign(&mut self, name: &str, values: &[ast::Expr], global: bool) -> Result<(), SqlError> {
        let user = name.starts_with('@') && !name.starts_with("@@");
        let lower = name.trim_start_matches('@').to_ascii_lowercase();
        let global = global || lower.starts_with("global.");
        let lower = lower
            .strip_prefix("session.")
            .or_else(|| lower.strip_prefix("global."))
            .or_else(|| lower.strip_prefix("local."))
            .unwrap_or(&lower)
            .to_string();
        let [value] = values else {
            return Err(SqlError::unsupported("SET with several values"));
        };
        // The value is a constant, a bare word (`SET sql_mode = ANSI`), DEFAULT, or an
        // expression (`@@x` and `@x` too: mysqldump's `SET TIME_ZONE=@OLD_TIME_ZONE`).
        let v = match value {
            ast::Expr::Identifier(id) if !id.value.starts_with('@') => {
                if id.value.eq_ignore_ascii_case("DEFAULT") {
                    self.state
                        .defaults
                        .get(lower.as_str())
                        .cloned()
                        .unwrap_or(Value::Null)
                } else {
                    text_value(&id.value)
                }
            }
            other if crate::multi_dml::holds_subquery(other) => self.value_of_query(other)?,
            other => {
                let catalog = shale_table::Catalog::default();
                let variable = |n: &str| self.state.defaults.get(n).cloned();
                let touched = std::cell::RefCell::default();
                let ctx = BindContext {
                    catalog: &catalog,
                    database: None,
                    variable: &variable,
                    user: &self.state.user,
                    touched: &touched,
                    statistics: None,
                    collation_connection: self.collation_connection(),
                    full_group_by: false,
                };
                let (e, _) = Binder::new(&ctx).expr(other)?;
                let env = RunEnv {
                    state: &self.state,
                    params: &[],
                    conversions: crate::lenient_store::Conversions::default(),
                };
                e.eval(&[], &env)?
            }
        };
        if user {
            self.state.user_vars.set(lower, v);
            return Ok(());
        }
        let as_bool = |v: &Value| -> Result<bool, SqlError> {
            match v {
                Value::Bytes(b) => match String::from_utf8_lossy(b).to_ascii_uppercase().as_str() {
                    "ON" | "TRUE" | "1" => Ok(true),
                    "OFF" | "FALSE" | "0" => Ok(false),
                    other => Err(SqlError::new(
                        1231,
                        "42000",
                        format!("Variable '{lower}' can't be set to the value of '{other}'"),
                    )),
                },
                other => Ok(crate::value::truth(other).unwrap_or(false)),
            }
        };
        if global {
            let stored = match lower.as_str() {
                "autocommit" => Value::Int(i64::from(as_bool(&v)?)),
                "sql_mode" => crate::sql_mode::SqlMode::parse(&v)?.value(),
                "transaction_isolation" | "tx_isolation" => {
                    let level = parse_isolation(&v).map_err(|bad| {
                        SqlError::new(
                            1231,
                            "42000",
                            format!("Variable '{lower}' can't be set to the value of '{bad}'"),
                        )
                    })?;
                    Value::Bytes(variables::isolation_name(level).as_bytes().to_vec())
                }
                crate::settings::STATS_AUTO_RECALC => {
                    let on = as_bool(&v)?;
                    self.instance.set_stats_auto_recalc(on);
                    Value::Int(i64::from(on))
                }
                _ => self.check_global_setting(&lower, v)?,
            };
            let mut globals = self
                .state
                .globals
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let key = if lower == "tx_isolation" {
                "transaction_isolation".to_string()
            } else {
                lower
            };
            globals.insert(key, stored);
            drop(globals);
            self.instance.globals_changed();
            return Ok(());
        }
        match lower.as_str() {
            "autocommit" => {
                let on = as_bool(&v)?;
                if on && !self.state.autocommit {
                    self.commit_open()?;
                }
                self.state.autocommit = on;
            }
            "transaction_isolation" | "tx_isolation" => {
                self.state.isolation = parse_isolation(&v).map_err(|bad| {
                    SqlError::new(
                        1231,
                        "42000",
                        format!("Variable '{lower}' can't be set to the value of '{bad}'"),
                    )
                })?;
            }
            "block_encryption_mode" => {
                crate::aes_funcs::check_mode(&v)?;
                self.state.vars.insert(lower, v);
            }
            "sql_mode" => self.state.sql_mode = crate::sql_mode::SqlMode::parse(&v)?,
            "character_set_client"
            | "character_set_connection"
            | "character_set_results"
            | "collation_connection" => self.set_names_variable(&lower, &v)?,
            "time_zone" => {
                if let Some(txn) = self.txn.as_mut() {
                    crate::timestamp::set_txn_zone(txn, &v)?;
                }
                crate::datetime_funcs::zone_offset(&v)?;
                self.state.vars.insert(lower, v);
            }
            _ => {
                crate::settings::check_session_setting(&lower)?;
                // Unknown variables are accepted and remembered: connectors set many.
                self.state.vars.insert(lower, v);
            }
        }
        Ok(())
    }

    pub(crate) fn bulk_mode(&mut self) -> &mut crate::bulk_insert::BulkMode {
        &mut self.bulk
    }

    pub(crate) fn instance(&self) -> &Arc<Instance> {
        &self.instance
    }

    pub(crate) fn state(&self) -> &State {
        &self.state
    }

    /// The catalog this session's statements resolve names in: the store's, with the
    /// session's temporary tables laid over it (temp_tables.rs rule 1).
    pub(crate) fn catalog(&self) -> Arc<shale_table::Catalog> {
        self.temp_tables.over(self.instance.store.catalog())
    }

    pub(crate) fn temp_tables(&self) -> &crate::temp_tables::TempTables {
        &self.temp_tables
    }

    pub(crate) fn temp_tables_mut(&mut self) -> &mut crate::temp_tables::TempTables {
        &mut self.temp_tables
    }

    /// Runs `body` as one statement of the session's transaction: inside an open one (undone
    /// alone if it fails), else in a transaction of its own, committed after it.
    pub(crate) fn in_transaction_statement(
        &mut self,
        body: impl FnOnce(&mut TableTxn) -> Result<(), SqlError>,
    ) -> Result<(), SqlError> {
        let keep = self.keeps_transaction();
        let mut txn = match self.txn.take() {
            Some(t) => t,
            None => self.begin_txn()?,
        };
        if keep {
            txn.set_savepoint();
        }
        match body(&mut txn) {
            Ok(()) if keep => {
                txn.release_savepoint()?;
                self.txn = Some(txn);
                Ok(())
            }
            Ok(()) => Ok(txn.commit()?),
            Err(e) => {
                if keep && !e.rolls_back_transaction() && txn.rollback_to_savepoint().is_ok() {
                    self.txn = Some(txn);
                } else {
                    txn.rollback();
                    self.savepoints.clear();
                    self.began = false;
                }
                Err(e)
            }
        }
    }

    pub(crate) fn state_mut(&mut self) -> &mut State {
        &mut self.state
    }

    /// EXPLAIN's plan text for a statement.
    pub(crate) fn explain(&self, stmt: &Statement) -> Result<String, SqlError> {
        Ok(match self.plan(stmt.clone())? {
            Planned::Select(s, plan) => plan::explain(s.table.as_ref().map(|t| &*t.def), &plan),
            Planned::Query(q) => crate::query::explain_statement(&q),
            Planned::Update(u, plan) => plan::explain(Some(&u.table.def), &plan),
            Planned::Delete(d, plan) => plan::explain(Some(&d.table.def), &plan),
            Planned::Insert(i, _) => format!("insert {}", i.table.def.name),
            Planned::MultiTable(m) => {
                let mut lines = Vec::new();
                crate::join::explain(&m.join, &mut lines, "");
                lines.join("\n")
            }
            Planned::Command(_) => return Err(SqlError::unsupported("EXPLAIN of this statement")),
        })
    }
}

/// Whether `planned` is an INSERT, UPDATE or DELETE (one table or several).
fn writes_rows(planned: &Planned) -> bool {
    matches!(
        planned,
        Planned::Insert(..) | Planned::Update(..) | Planned::Delete(..) | Planned::MultiTable(..)
    )
}

/// How often an autocommit write that lost a write conflict, or met a replaced table, is
/// retried.
const MAX_RETRIES: u32 = 8;

/// MySQL's default `max_prepared_stmt_count`, per session here.
const MAX_PREPARED: usize = 16_382;

/// Statements longer than this may nest deeper than a thread's usual 2 MiB stack allows
/// (each level of `1+1+...` or `((...))` takes at least two characters).
const BIG_STATEMENT: usize = 1024;

/// The stack a long statement is parsed, bound and dropped on (reserved, touched only as far
/// as it is used).
const BIG_STACK: usize = 256 << 20;

/// Runs `f` on a fresh large stack when `sql` is long enough to nest deeply: sqlparser's AST
/// is walked and dropped recursively, so one deep expression could otherwise overflow the
/// server's session thread. The binder separately caps nesting (`bind::MAX_DEPTH`), so what
/// outlives the statement stays shallow.
fn on_big_stack<R>(sql: &str, f: impl FnOnce() -> R) -> R {
    if sql.len() > BIG_STATEMENT {
        stacker::grow(BIG_STACK, f)
    } else {
        f()
    }
}

/// An isolation level from its variable value (`READ-COMMITTED`, `READ COMMITTED`, ...);
/// the text back when it names none.
fn parse_isolation(v: &Value) -> Result<IsolationLevel, String> {
    let s = crate::value::display(v)
        .to_ascii_uppercase()
        .replace(' ', "-");
    match s.as_str() {
        // Shale has no dirty reads: READ UNCOMMITTED runs as READ COMMITTED.
        "READ-COMMITTED" | "READ-UNCOMMITTED" => Ok(IsolationLevel::ReadCommitted),
        // SERIALIZABLE runs as REPEATABLE READ (snapshot isolation with write conflicts).
        "REPEATABLE-READ" | "SERIALIZABLE" => Ok(IsolationLevel::RepeatableRead),
        _ => Err(s),
    }
}

/// Counts the `?` placeholders of a statement.
fn count_params(stmt: &Statement) -> usize {
    // The tokenizer is the reliable counter: every Placeholder token is one parameter. The
    // text is printed in the form the default dialect reads (syntax_mode.rs rule 8).
    let text = crate::syntax_mode::stored_text(stmt);
    sqlparser::tokenizer::Tokenizer::new(&sqlparser::dialect::MySqlDialect {}, &text)
        .tokenize()
        .map_or(0, |tokens| {
            tokens
                .iter()
                .filter(|t| matches!(t, sqlparser::tokenizer::Token::Placeholder(p) if p.starts_with('?')))
                .count()
        })
}

/// Forwards a statement's results and remembers whether anything reached the client (a
/// statement that sent something cannot be rerun).
struct Watched<'a> {
    inner: &'a mut dyn ResultSink,
    used: bool,
}

impl ResultSink for Watched<'_> {
    fn ok(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        self.used = true;
        self.inner.ok(status)
    }
    fn columns(&mut self, columns: &[ColumnMeta]) -> Result<(), SqlError> {
        self.used = true;
        self.inner.columns(columns)
    }
    fn row(&mut self, row: &[Value]) -> Result<(), SqlError> {
        self.used = true;
        self.inner.row(row)
    }
    fn end(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        self.used = true;
        self.inner.end(status)
    }
    fn local_infile(&mut self, name: &str) -> Result<Option<Vec<u8>>, SqlError> {
        self.used = true;
        self.inner.local_infile(name)
    }
}

/// DROP INDEX of an index the table does not have.
fn no_such_index(index: &str) -> SqlError {
    SqlError::new(
        1091,
        "42000",
        format!("Can't DROP INDEX `{index}`; check that it exists"),
    )
}
