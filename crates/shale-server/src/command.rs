//! The command phase on a connection's thread (MySQL "Command Phase"): each command packet
//! from the client becomes calls into the connection's [`BackendSession`], and its reply is
//! written through an [`Output`]. The connection's thread (conn.rs) reads the packets and
//! handles COM_QUIT and COM_CHANGE_USER itself; every other command comes here.
//!
//! Invariants:
//! 1. A session exists only after authentication succeeded: no statement runs before it.
//! 2. Each command gets exactly one reply, even when the SQL layer fails or panics (a panic
//!    becomes error 1105 and closes the connection).
//! 3. COM_STMT_SEND_LONG_DATA and COM_STMT_CLOSE have no reply packet, as the protocol says.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use shale_sql::{ColumnMeta, ResultSink, SqlError, StatementStatus, Value};

use crate::backend::BackendSession;
use crate::compress::Algorithm;
use crate::cursor::{self, Materialized, Opened};
use crate::prepared::Statements;
use crate::protocol::{capability, command, errors, status, OkPacket};
use crate::results::{put_columns, put_end, Output, ResultWriter};
use crate::results_charset::conversion_target;
use crate::server::Shared;
use crate::split::may_change_reading;
use crate::statement_text::{self, TextMode};
use crate::text::put_column_definition;
use crate::tls::TlsSession;
use crate::wire::{put_u16, put_u32, Reader};
use shale_sql::statement_split::{has_several_statements, split_first, Lexing};
use shale_sql::{Charset, MoreResults};

/// What a connection's session shares with the task that watches the connection.
#[derive(Debug, Default)]
pub struct ConnControl {
    /// Notified by KILL CONNECTION of this connection's session: the watching task shuts the
    /// socket's read side, so an idle connection's thread wakes and ends.
    pub killed: tokio::sync::Notify,
    /// The session's own wait_timeout in seconds (`SET SESSION wait_timeout`), 0 if unset.
    pub wait_timeout_secs: AtomicU64,
}

/// Who a connection's session serves.
#[derive(Debug)]
pub struct Identity {
    pub connection_id: u32,
    pub user: String,
    pub host: String,
    /// The host pattern of the account that matched (`mysql.user.Host`).
    pub account_host: String,
    pub tls: Option<TlsSession>,
    pub control: Arc<ConnControl>,
    /// The collation id the client named in its handshake (or COM_CHANGE_USER).
    pub collation: u8,
    /// The protocol compression in use.
    pub compression: Option<Algorithm>,
}

/// A session variable's text (`character_set_client`), if it has one.
fn variable_text(session: &dyn BackendSession, name: &str) -> Option<String> {
    match session.session_variable(name)? {
        Value::Bytes(bytes) => String::from_utf8(bytes).ok(),
        // `sql_mode` is a SET value (its bits and text).
        Value::Set(_, text) => Some(text),
        _ => None,
    }
}

/// What a session learns from its connection, again after COM_RESET_CONNECTION: the
/// connection's `max_allowed_packet` and the character set its client named.
fn apply_connection_settings(
    session: &mut dyn BackendSession,
    identity: &Identity,
    max_allowed_packet: usize,
) {
    session.set_connection_variable("max_allowed_packet", Value::UInt(max_allowed_packet as u64));
    session.set_client_collation(identity.collation);
}

fn new_session(
    shared: &Shared,
    identity: &Identity,
    capabilities: u32,
    max_allowed_packet: usize,
) -> Box<dyn BackendSession> {
    let mut session = shared.backend.session();
    apply_connection_settings(session.as_mut(), identity, max_allowed_packet);
    session.set_connection(identity.connection_id, &identity.user, &identity.host);
    session.set_account(&identity.user, &identity.account_host);
    session.set_found_rows(capabilities & capability::FOUND_ROWS != 0);
    let control = Arc::clone(&identity.control);
    session.set_kill_hook(Box::new(move || control.killed.notify_one()));
    // What `SHOW STATUS LIKE 'Ssl%'` reports, empty on a plain connection as in MySQL.
    let (version, cipher) = identity
        .tls
        .as_ref()
        .map_or(("", ""), |t| (t.version.as_str(), t.cipher.as_str()));
    session.set_status_variable("Ssl_version", version);
    session.set_status_variable("Ssl_cipher", cipher);
    // As MySQL 8.0.18+: Compression ON/OFF, and the algorithm and level in use ('' and 0
    // without).
    let (on, algorithm, level) = identity
        .compression
        .map_or(("OFF", "", 0), |a| ("ON", a.name(), a.level()));
    session.set_status_variable("Compression", on);
    session.set_status_variable("Compression_algorithm", algorithm);
    session.set_status_variable("Compression_level", &level.to_string());
    session
}

fn internal_error() -> SqlError {
    SqlError {
        code: 1105,
        sqlstate: "HY000",
        message: "Internal error in the SQL layer; the connection is closed".into(),
    }
}

/// One authenticated connection's command state.
pub struct CommandHandler {
    shared: Arc<Shared>,
    identity: Identity,
    session: Box<dyn BackendSession>,
    capabilities: u32,
    statements: Statements,
    /// The connection's packet limit, also `@@max_allowed_packet` of its session.
    max_allowed_packet: usize,
}

impl std::fmt::Debug for CommandHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandHandler")
            .field("capabilities", &self.capabilities)
            .field("statements", &self.statements)
            .finish_non_exhaustive()
    }
}

impl CommandHandler {
    /// Creates the connection's session, selects the handshake's `database` and writes OK or
    /// ERR into `output`; None when the connection must close (the reply says why).
    pub fn open(
        shared: &Arc<Shared>,
        identity: Identity,
        capabilities: u32,
        database: Option<&str>,
        output: &mut Output,
    ) -> Option<CommandHandler> {
        let max_allowed_packet = output.max_allowed_packet();
        let session = catch_unwind(AssertUnwindSafe(|| {
            new_session(shared, &identity, capabilities, max_allowed_packet)
        }));
        let Ok(session) = session else {
            output.err(&internal_error());
            return None;
        };
        let mut handler = CommandHandler {
            identity,
            shared: shared.clone(),
            session,
            capabilities,
            statements: Statements::new(max_allowed_packet),
            max_allowed_packet,
        };
        (!handler.connect(database, output)).then_some(handler)
    }

    /// Runs one command packet, its reply buffered in `output`; true closes the connection
    /// after the reply (COM_QUIT, a panic, KILL CONNECTION of this session).
    pub fn run(&mut self, payload: &[u8], output: &mut Output) -> bool {
        let result = catch_unwind(AssertUnwindSafe(|| self.command(payload, output)));
        let close = result.unwrap_or_else(|_| {
            output.err(&internal_error());
            true
        });
        // A KILL CONNECTION of this session (by another, or itself) ends the connection
        // after this reply; its transaction is rolled back when the session is dropped.
        let own = self.session.wait_timeout().unwrap_or(0);
        self.identity
            .control
            .wait_timeout_secs
            .store(own, Ordering::Relaxed);
        close || self.session.connection_killed()
    }

    /// `character_set_client` (utf8mb4 when unset or not one Shale converts).
    fn client_charset(&self) -> Charset {
        variable_text(self.session.as_ref(), "character_set_client")
            .and_then(|name| Charset::from_name(&name))
            .unwrap_or(Charset::Utf8mb4)
    }

    /// How statement text is read now (statement_text.rs).
    fn text_mode(&self) -> TextMode {
        let sql_mode = variable_text(self.session.as_ref(), "sql_mode").unwrap_or_default();
        TextMode::new(self.client_charset(), &sql_mode)
    }

    /// What text results and errors go out in now (results_charset.rs).
    fn results_target(&self) -> Option<Charset> {
        let results = variable_text(self.session.as_ref(), "character_set_results")
            .and_then(|name| Charset::from_name(&name));
        conversion_target(results)
    }

    /// `shale_query_memory`: what a cursor's rows may take.
    fn query_memory(&self) -> usize {
        match self.session.session_variable("shale_query_memory") {
            Some(Value::Int(n)) => usize::try_from(n).unwrap_or(0),
            Some(Value::UInt(n)) => usize::try_from(n).unwrap_or(usize::MAX),
            _ => usize::MAX,
        }
    }

    /// The status flags of the session now.
    fn status(&self) -> u16 {
        let mut flags = 0;
        if self.session.in_transaction() {
            flags |= status::IN_TRANS;
        }
        if self.session.autocommit() {
            flags |= status::AUTOCOMMIT;
        }
        flags
    }

    fn ok(&self, output: &mut Output) {
        output.ok(&OkPacket {
            status: self.status(),
            ..OkPacket::default()
        });
    }

    /// Selects the handshake's database; true closes the connection.
    fn connect(&mut self, database: Option<&str>, output: &mut Output) -> bool {
        if let Some(db) = database {
            if let Err(error) = self.session.use_database(db) {
                output.err(&error);
                return true;
            }
        }
        self.ok(output);
        false
    }

    /// Runs one command; true closes the connection.
    fn command(&mut self, payload: &[u8], output: &mut Output) -> bool {
        let Some((&code, body)) = payload.split_first() else {
            output.err(&errors::malformed("empty command"));
            return true;
        };
        // Each command's replies are in the character set the session has when it starts.
        output.set_results_charset(self.results_target());
        match code {
            command::QUIT => return true,
            command::QUERY => {
                let text_mode = self.text_mode();
                let lexing = Lexing {
                    backslash_escapes: !text_mode.no_backslash_escapes,
                };
                let multi = self.capabilities & capability::MULTI_STATEMENTS != 0;
                // Most texts hold one statement: that scan before the words.
                if multi && has_several_statements(body, lexing) && may_change_reading(body) {
                    self.query_each(body, output);
                    return false;
                }
                let sql = match statement_text::to_utf8(body, text_mode) {
                    Ok(sql) => sql,
                    Err(error) => {
                        output.err(&error);
                        return false;
                    }
                };
                if !multi && has_several_statements(body, lexing) {
                    output.err(&errors::multi_statements_off());
                    return false;
                }
                let mut writer = ResultWriter::new(output, self.capabilities, false);
                let result = self.session.execute(&sql, &mut writer);
                writer.finish(result, self.status());
            }
            command::INIT_DB => {
                let name = self.client_charset().decode(body);
                match name.and_then(|name| self.session.use_database(&name)) {
                    Ok(()) => self.ok(output),
                    Err(error) => output.err(&error),
                }
            }
            command::PING => self.ok(output),
            command::STATISTICS => {
                // Only what the server knows; MySQL's other counters would be made up.
                let text = format!(
                    "Uptime: {}  Threads: {}",
                    self.shared.started.elapsed().as_secs(),
                    self.shared.connections.load(Ordering::Relaxed),
                );
                output
                    .writer
                    .packet(|out| out.extend_from_slice(text.as_bytes()));
            }
            command::FIELD_LIST => self.field_list(body, output),
            command::STMT_PREPARE => self.prepare(body, output),
            command::STMT_EXECUTE => self.execute(body, output),
            command::STMT_SEND_LONG_DATA => self.statements.send_long_data(body),
            command::STMT_CLOSE => {
                if let Ok(id) = Reader::new(body).u32("statement id") {
                    if self.statements.remove(id) {
                        self.session.close_prepared(id);
                    }
                }
            }
            command::STMT_RESET => match Reader::new(body).u32("statement id") {
                Ok(id) if self.statements.reset(id) => self.ok(output),
                Ok(id) => output.err(&errors::unknown_statement(id, "mysqld_stmt_reset")),
                Err(e) => output.err(&errors::malformed(e.0)),
            },
            command::SET_OPTION => match Reader::new(body).u16("option") {
                Ok(option @ 0..=1) => {
                    if option == 0 {
                        self.capabilities |= capability::MULTI_STATEMENTS;
                    } else {
                        self.capabilities &= !capability::MULTI_STATEMENTS;
                    }
                    let status = self.status();
                    put_end(output, self.capabilities, 0, status);
                }
                Ok(_) => output.err(&errors::unknown_command(code)),
                Err(e) => output.err(&errors::malformed(e.0)),
            },
            command::RESET_CONNECTION => self.reset_connection(output),
            // The deprecated command byte for `KILL id`: the same statement, so the same
            // privilege checks and errors (1094, 1095) as the KILL a client sends as text.
            command::PROCESS_KILL => match Reader::new(body).u32("connection id") {
                Ok(id) => {
                    let mut writer = ResultWriter::new(output, self.capabilities, false);
                    let result = self.session.execute(&format!("KILL {id}"), &mut writer);
                    writer.finish(result, self.status());
                }
                Err(e) => output.err(&errors::malformed(e.0)),
            },
            command::STMT_FETCH => self.fetch(body, output),
            _ => output.err(&errors::unknown_command(code)),
        }
        false
    }

    /// A multi-statement COM_QUERY that may change the character sets or `sql_mode`
    /// (split.rs): each statement is split off, read in `character_set_client` (and under
    /// `sql_mode`) and answered in `character_set_results` as they are when it starts, as
    /// MySQL does; the first error ends the text.
    fn query_each(&mut self, body: &[u8], output: &mut Output) {
        let mut rest = body;
        loop {
            let text_mode = self.text_mode();
            let lexing = Lexing {
                backslash_escapes: !text_mode.no_backslash_escapes,
            };
            let (text, after) = match split_first(rest, lexing) {
                Some((first, after)) => (first, Some(after)),
                None => (rest, None),
            };
            output.set_results_charset(self.results_target());
            let sql = match statement_text::to_utf8(text, text_mode) {
                Ok(sql) => sql,
                Err(error) => return output.err(&error),
            };
            let mut writer = ResultWriter::new(output, self.capabilities, false);
            let result = self.session.execute(
                &sql,
                &mut MoreResults {
                    inner: &mut writer,
                    more: after.is_some(),
                },
            );
            match after {
                Some(after) if result.is_ok() => rest = after,
                _ => {
                    writer.finish(result, self.status());
                    return;
                }
            }
        }
    }

    /// COM_STMT_PREPARE -> COM_STMT_PREPARE_OK, parameter definitions, column definitions.
    fn prepare(&mut self, body: &[u8], output: &mut Output) {
        let sql = statement_text::to_utf8(body, self.text_mode());
        let info = match sql.and_then(|sql| self.session.prepare(&sql)) {
            Ok(info) => info,
            Err(error) => {
                output.err(&error);
                return;
            }
        };
        self.statements.add(info.id, info.params.len());
        output.writer.packet(|out| {
            out.push(0x00);
            put_u32(out, info.id);
            put_u16(out, info.columns.len().min(usize::from(u16::MAX)) as u16);
            put_u16(out, info.params.len().min(usize::from(u16::MAX)) as u16);
            out.push(0);
            put_u16(out, 0);
        });
        let status = self.status();
        if !info.params.is_empty() {
            put_columns(output, self.capabilities, &info.params, status);
        }
        if !info.columns.is_empty() {
            put_columns(output, self.capabilities, &info.columns, status);
        }
    }

    /// COM_STMT_EXECUTE -> OK, ERR, a binary result set, or a cursor's column definitions.
    fn execute(&mut self, body: &[u8], output: &mut Output) {
        let mut execute = match self.statements.decode_execute(body) {
            Ok(execute) => execute,
            Err(error) => {
                output.err(&error);
                return;
            }
        };
        if let Err(error) = self.decode_text_params(&mut execute.params, &execute.text_params) {
            output.err(&error);
            return;
        }
        // A new execution closes the statement's cursor (cursor.rs, invariant 1).
        self.statements.close_cursor(execute.id);
        if cursor::wants_cursor(execute.cursor_flags) {
            self.execute_with_cursor(execute.id, &execute.params, output);
            return;
        }
        let mut writer = ResultWriter::new(output, self.capabilities, true);
        let result = self
            .session
            .execute_prepared(execute.id, &execute.params, &mut writer);
        writer.finish(result, self.status());
    }

    /// String parameters arrive in `character_set_client`, as MySQL takes them (BLOB-typed
    /// ones are binary): decoded to UTF-8. A utf8mb4 or binary client's are taken as sent.
    fn decode_text_params(&self, params: &mut [Value], text: &[bool]) -> Result<(), SqlError> {
        let client = self.client_charset();
        if matches!(client, Charset::Utf8mb4 | Charset::Binary) {
            return Ok(());
        }
        for (param, _) in params.iter_mut().zip(text).filter(|(_, &text)| text) {
            if let Value::Bytes(bytes) = param {
                if let std::borrow::Cow::Owned(utf8) = client.decode(bytes)? {
                    *bytes = utf8.into_bytes();
                }
            }
        }
        Ok(())
    }

    /// COM_STMT_EXECUTE with a cursor flag: the result is kept and a cursor opened over it.
    fn execute_with_cursor(&mut self, id: u32, params: &[Value], output: &mut Output) {
        let mut result = Materialized::new(output.results_charset(), self.query_memory());
        if let Err(error) = self.session.execute_prepared(id, params, &mut result) {
            output.err(&error);
            return;
        }
        match result.open(output, self.capabilities, self.status()) {
            Opened::Cursor(cursor) => self.statements.set_cursor(id, cursor),
            Opened::NoResultSet(status) => {
                // A write error marks the output broken; the command loop then ends.
                let _ = ResultWriter::new(output, self.capabilities, true).ok(&status);
            }
        }
    }

    /// COM_STMT_FETCH (`int<4>` statement id, `int<4>` rows): the next rows of its cursor.
    fn fetch(&mut self, body: &[u8], output: &mut Output) {
        let mut r = Reader::new(body);
        let (id, rows) = match (r.u32("statement id"), r.u32("number of rows")) {
            (Ok(id), Ok(rows)) => (id, rows),
            (Err(e), _) | (_, Err(e)) => {
                output.err(&errors::malformed(e.0));
                return;
            }
        };
        let flags = self.status();
        let capabilities = self.capabilities;
        match self.statements.cursor(id) {
            Ok(cursor) => {
                if cursor.fetch(rows, output, capabilities, flags) {
                    self.statements.close_cursor(id);
                }
            }
            Err(error) => output.err(&error),
        }
    }

    /// COM_FIELD_LIST (deprecated, used by clients' name completion): the table's column
    /// definitions with a default-value field, then the end of the list.
    fn field_list(&mut self, body: &[u8], output: &mut Output) {
        let table = Reader::new(body).nul_bytes();
        let table = match self.client_charset().decode(table) {
            Ok(table) => table.replace('`', "``"),
            Err(error) => {
                output.err(&error);
                return;
            }
        };
        let mut sink = ColumnCapture::default();
        let sql = format!("SELECT * FROM `{table}` LIMIT 0");
        if let Err(error) = self.session.execute(&sql, &mut sink) {
            output.err(&error);
            return;
        }
        let target = output.results_charset();
        for column in &sink.columns {
            output
                .writer
                .packet(|out| put_column_definition(out, column, true, target));
        }
        let status = self.status();
        put_end(output, self.capabilities, 0, status);
    }

    /// COM_RESET_CONNECTION: the session forgets its transaction, prepared statements and
    /// variables, and keeps its database, account and connection id.
    fn reset_connection(&mut self, output: &mut Output) {
        self.statements.clear();
        if self.session.reset() {
            apply_connection_settings(
                self.session.as_mut(),
                &self.identity,
                self.max_allowed_packet,
            );
            self.ok(output);
            return;
        }
        // A session that cannot reset itself is replaced by a fresh one.
        let database = self.session.current_database();
        self.session = new_session(
            &self.shared,
            &self.identity,
            self.capabilities,
            self.max_allowed_packet,
        );
        if let Some(db) = database {
            if let Err(error) = self.session.use_database(&db) {
                output.err(&error);
                return;
            }
        }
        self.ok(output);
    }
}

/// Keeps a result set's columns and drops its rows (COM_FIELD_LIST).
#[derive(Debug, Default)]
struct ColumnCapture {
    columns: Vec<ColumnMeta>,
}

impl ResultSink for ColumnCapture {
    fn ok(&mut self, _: &StatementStatus) -> Result<(), SqlError> {
        Ok(())
    }
    fn columns(&mut self, columns: &[ColumnMeta]) -> Result<(), SqlError> {
        self.columns = columns.to_vec();
        Ok(())
    }
    fn row(&mut self, _: &[Value]) -> Result<(), SqlError> {
        Ok(())
    }
    fn end(&mut self, _: &StatementStatus) -> Result<(), SqlError> {
        Ok(())
    }
}
