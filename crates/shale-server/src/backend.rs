//! What the server needs from the SQL layer, as two traits: [`Backend`] (shared by every
//! connection) and [`BackendSession`] (one per connection). [`shale_sql::Instance`] and
//! [`shale_sql::Session`] implement them; protocol tests use a small fake, so the wire code is
//! tested on its own.
//!
//! A session is created on, and only ever used from, its connection's thread, so it
//! need not be `Send`.

use std::sync::Arc;

use shale_sql::{
    Instance, KillHook, PreparedInfo, ResultSink, Session, SqlError, StatusCounters, UserRecord,
    Value,
};

/// The database every connection shares.
pub trait Backend: Send + Sync + 'static {
    /// A new session (called on the connection's thread).
    fn session(&self) -> Box<dyn BackendSession>;
    /// The account `user`@`host`, if it exists.
    fn lookup_user(&self, user: &str, host: &str) -> Result<Option<UserRecord>, SqlError>;
    /// The answer to a login of the existing account `user`@`account_host` from
    /// `client_host` after its password check came out `verified`: `Err` is sent instead of
    /// the OK (or of the 1045): a locked account's 3118 or 3955. The fake backends of
    /// protocol tests lock nothing.
    fn check_login(
        &self,
        user: &str,
        account_host: &str,
        client_host: &str,
        verified: bool,
    ) -> Result<(), SqlError> {
        let _ = (user, account_host, client_host, verified);
        Ok(())
    }
    /// Whether the account holds SUPER or CONNECTION_ADMIN, which MySQL lets use one
    /// connection past `max_connections`.
    fn is_connection_admin(&self, user: &str, account_host: &str) -> bool {
        let _ = (user, account_host);
        false
    }
    /// The status counters the server adds its figures to (connections, bytes); None keeps
    /// them to the server.
    fn status_counters(&self) -> Option<Arc<StatusCounters>> {
        None
    }
    /// A global variable's current value as a number, for the settings `SET GLOBAL` changes
    /// live (`max_connections`, `wait_timeout`); None when not set.
    fn global_number(&self, name: &str) -> Option<u64> {
        let _ = name;
        None
    }
    /// A number that changes whenever a global variable does (0: never changes), so the
    /// server re-reads the values it caches only then.
    fn globals_version(&self) -> u64 {
        0
    }
}

/// One connection's SQL state; mirrors [`shale_sql::Session`].
pub trait BackendSession {
    /// Tells the session who it serves (`CONNECTION_ID()`, `USER()`), right after creation.
    fn set_connection(&mut self, connection_id: u32, user: &str, host: &str) {
        let _ = (connection_id, user, host);
    }
    /// Tells the session which account's privileges apply (`mysql.user`'s user and host),
    /// right after `set_connection`.
    fn set_account(&mut self, user: &str, host: &str) {
        let _ = (user, host);
    }
    /// Sets a session status variable the server knows (`Ssl_cipher`), for `SHOW STATUS`.
    fn set_status_variable(&mut self, name: &str, value: &str) {
        let _ = (name, value);
    }
    /// COM_RESET_CONNECTION: forget the transaction, prepared statements and variables, keep
    /// the database, account and connection id. False if the session cannot, in which case
    /// the server replaces it with a new one.
    fn reset(&mut self) -> bool {
        false
    }
    /// What KILL CONNECTION of this session calls: the server closes the connection.
    fn set_kill_hook(&mut self, hook: KillHook) {
        let _ = hook;
    }
    /// KILL CONNECTION was issued for this session: the connection closes after its reply.
    fn connection_killed(&self) -> bool {
        false
    }
    /// The session's own `wait_timeout` in seconds, when it set one (`SET SESSION`).
    fn wait_timeout(&self) -> Option<u64> {
        None
    }
    /// Sets a session variable from the connection (`max_allowed_packet`), right after
    /// creation and after COM_RESET_CONNECTION.
    fn set_connection_variable(&mut self, name: &str, value: Value) {
        let _ = (name, value);
    }
    /// The collation id of the client's handshake, recorded in `character_set_client` and
    /// the like (shale-sql's names.rs); false for an id the SQL layer does not know.
    fn set_client_collation(&mut self, id: u8) -> bool {
        let _ = id;
        false
    }
    /// A session variable's value (`character_set_client`, `sql_mode`,
    /// `shale_query_memory`), which the server reads before each command; None if unset.
    fn session_variable(&self, name: &str) -> Option<Value> {
        let _ = name;
        None
    }
    /// The client set CLIENT_FOUND_ROWS: UPDATE reports matched rows, not changed ones.
    fn set_found_rows(&mut self, found_rows: bool) {
        let _ = found_rows;
    }
    fn execute(&mut self, sql: &str, sink: &mut dyn ResultSink) -> Result<(), SqlError>;
    fn prepare(&mut self, sql: &str) -> Result<PreparedInfo, SqlError>;
    fn execute_prepared(
        &mut self,
        id: u32,
        params: &[Value],
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError>;
    fn close_prepared(&mut self, id: u32);
    fn use_database(&mut self, name: &str) -> Result<(), SqlError>;
    fn current_database(&self) -> Option<String>;
    fn in_transaction(&self) -> bool;
    fn autocommit(&self) -> bool;
}

impl Backend for Arc<Instance> {
    fn session(&self) -> Box<dyn BackendSession> {
        Box::new(Instance::session(self))
    }

    fn lookup_user(&self, user: &str, host: &str) -> Result<Option<UserRecord>, SqlError> {
        Instance::lookup_user(self, user, host)
    }

    fn check_login(
        &self,
        user: &str,
        account_host: &str,
        client_host: &str,
        verified: bool,
    ) -> Result<(), SqlError> {
        Instance::check_login(self, user, account_host, client_host, verified)
    }

    fn is_connection_admin(&self, user: &str, account_host: &str) -> bool {
        Instance::is_connection_admin(self, user, account_host)
    }

    fn status_counters(&self) -> Option<Arc<StatusCounters>> {
        Some(Arc::clone(Instance::status_counters(self)))
    }

    fn global_number(&self, name: &str) -> Option<u64> {
        Instance::global_number(self, name)
    }

    fn globals_version(&self) -> u64 {
        Instance::globals_version(self)
    }
}

impl BackendSession for Session {
    fn set_connection(&mut self, connection_id: u32, user: &str, host: &str) {
        Session::set_connection_id(self, u64::from(connection_id));
        Session::set_user(self, user, host);
    }

    fn set_account(&mut self, user: &str, host: &str) {
        Session::set_account(self, user, host);
    }

    fn set_found_rows(&mut self, found_rows: bool) {
        Session::set_found_rows(self, found_rows);
    }

    fn set_connection_variable(&mut self, name: &str, value: Value) {
        Session::set_connection_variable(self, name, value);
    }

    fn set_client_collation(&mut self, id: u8) -> bool {
        Session::set_client_collation(self, id)
    }

    fn set_kill_hook(&mut self, hook: KillHook) {
        Session::set_kill_hook(self, hook);
    }

    fn session_variable(&self, name: &str) -> Option<Value> {
        Some(Session::session_variable(self, name)).filter(|v| !matches!(v, Value::Null))
    }

    fn connection_killed(&self) -> bool {
        Session::connection_killed(self)
    }

    fn wait_timeout(&self) -> Option<u64> {
        Session::own_number(self, "wait_timeout")
    }

    fn set_status_variable(&mut self, name: &str, value: &str) {
        Session::set_status_variable(self, name, value);
    }

    fn reset(&mut self) -> bool {
        Session::reset(self);
        true
    }

    fn execute(&mut self, sql: &str, sink: &mut dyn ResultSink) -> Result<(), SqlError> {
        Session::execute(self, sql, sink)
    }

    fn prepare(&mut self, sql: &str) -> Result<PreparedInfo, SqlError> {
        Session::prepare(self, sql)
    }

    fn execute_prepared(
        &mut self,
        id: u32,
        params: &[Value],
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError> {
        Session::execute_prepared(self, id, params, sink)
    }

    fn close_prepared(&mut self, id: u32) {
        Session::close_prepared(self, id);
    }

    fn use_database(&mut self, name: &str) -> Result<(), SqlError> {
        Session::use_database(self, name)
    }

    fn current_database(&self) -> Option<String> {
        Session::current_database(self).map(str::to_owned)
    }

    fn in_transaction(&self) -> bool {
        Session::in_transaction(self)
    }

    fn autocommit(&self) -> bool {
        Session::autocommit(self)
    }
}
