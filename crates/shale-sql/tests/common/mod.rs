//! Test support: an instance over an in-memory file system, a sink that records what a
//! statement returned as text, and a runner for the testdata/*.test files.
//!
//! A `.test` file is a list of records separated by blank lines. A record is a statement
//! (one or more lines), a line `----`, and the exact output expected. Statements starting
//! with `@` are harness commands:
//! - `@prepare NAME SQL`: prepares SQL; output `prepared params=N columns=M`.
//! - `@execute NAME v1, v2, ...`: runs it with the values (integers, decimals, 'strings',
//!   NULL).
//! - `@meta SQL`: runs SQL and prints the result's column metadata instead of its rows.
//! - `@session N`: switches to session N (created on first use), for transaction tests.
//! - `@login USER HOST`: the current session becomes the account USER@HOST (connected from
//!   `localhost`), whose privileges are checked from then on, as the server's sessions are.
//!
//! Set `SHALE_REGENERATE=1` to rewrite the files with the output the code produces now.

#![allow(dead_code)]

pub mod sessions;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use shale_engine::Options;
use shale_fs::MemFs;
use shale_sql::{
    ColumnMeta, Instance, InstanceOptions, ResultSink, Session, SqlError, StatementStatus, Value,
};
use shale_table::StoreOptions;

/// Runs `sql` in `session`, panicking with the statement on an error; what it returned.
pub fn run(session: &mut Session, sql: &str) -> TextSink {
    let mut sink = TextSink::default();
    session
        .execute(sql, &mut sink)
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    sink
}

/// The error `sql` fails with in `session`, panicking when it succeeds.
pub fn fail(session: &mut Session, sql: &str) -> SqlError {
    let mut sink = TextSink::default();
    match session.execute(sql, &mut sink) {
        Ok(()) => panic!("{sql} succeeded: {}", sink.out),
        Err(e) => e,
    }
}

/// An instance on a fresh in-memory file system, with the background recalculation of
/// index statistics off: it would change SHOW INDEX figures and plans at times of its own
/// (a test that needs it sets `shale_stats_auto_recalc` ON).
pub fn instance() -> Arc<Instance> {
    let instance = open_instance();
    instance.set_stats_auto_recalc(false);
    instance
}

/// An instance on a fresh in-memory file system, as `shale serve` opens one.
pub fn open_instance() -> Arc<Instance> {
    Instance::open("/db", options_on(&Arc::new(MemFs::new()))).expect("open instance")
}

/// The default options over the in-memory file system `fs` (keep it to open `/db` again).
pub fn options_on(fs: &Arc<MemFs>) -> InstanceOptions {
    InstanceOptions {
        transaction_isolation: shale_sql::IsolationLevel::default(),
        store: StoreOptions {
            engine: Options {
                file_system: fs.clone(),
                ..Options::default()
            },
            ..StoreOptions::default()
        },
    }
}

/// Records results as text.
#[derive(Debug, Default)]
pub struct TextSink {
    pub out: String,
    pub columns: Vec<ColumnMeta>,
    pub rows: Vec<Vec<Value>>,
    pub meta_only: bool,
}

pub fn show_value(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Double(d) => format!("{d}"),
        Value::Decimal(d) => d.to_string(),
        Value::DateTime(d) => d.to_string(),
        Value::Time(t) => t.to_string(),
        Value::Enum(_, text) | Value::Set(_, text) if text.is_empty() => "''".into(),
        Value::Enum(_, text) | Value::Set(_, text) => text.clone(),
        Value::Bytes(b) if b.is_empty() => "''".into(),
        Value::Bytes(b) => String::from_utf8_lossy(b).replace('\n', "\\n"),
    }
}

fn status_text(s: &StatementStatus) -> String {
    let mut t = format!("ok affected={}", s.affected_rows);
    if s.last_insert_id != 0 {
        let _ = write!(t, " last_insert_id={}", s.last_insert_id);
    }
    if s.warnings != 0 {
        let _ = write!(t, " warnings={}", s.warnings);
    }
    if !s.info.is_empty() {
        let _ = write!(t, " info=\"{}\"", s.info);
    }
    if s.in_transaction {
        t.push_str(" in_transaction");
    }
    if s.more_results {
        t.push_str(" more");
    }
    t
}

impl ResultSink for TextSink {
    fn ok(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        let _ = writeln!(self.out, "{}", status_text(status));
        Ok(())
    }
    fn columns(&mut self, columns: &[ColumnMeta]) -> Result<(), SqlError> {
        self.columns = columns.to_vec();
        if self.meta_only {
            for c in columns {
                let _ = writeln!(
                    self.out,
                    "{} org={} table={} db={} type={:?} len={} flags={} decimals={} charset={}",
                    c.name,
                    c.org_name,
                    c.table,
                    c.database,
                    c.type_code,
                    c.length,
                    c.flags,
                    c.decimals,
                    c.charset
                );
            }
        } else {
            let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
            let _ = writeln!(self.out, "{}", names.join("\t"));
        }
        Ok(())
    }
    fn row(&mut self, row: &[Value]) -> Result<(), SqlError> {
        self.rows.push(row.to_vec());
        if !self.meta_only {
            let vals: Vec<String> = row.iter().map(show_value).collect();
            let _ = writeln!(self.out, "{}", vals.join("\t"));
        }
        Ok(())
    }
    fn end(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        let _ = write!(self.out, "end");
        if status.warnings != 0 {
            let _ = write!(self.out, " warnings={}", status.warnings);
        }
        if status.in_transaction {
            self.out.push_str(" in_transaction");
        }
        if status.more_results {
            self.out.push_str(" more");
        }
        self.out.push('\n');
        Ok(())
    }
}

/// Parses `@execute` values.
pub fn parse_params(text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('\'') {
            let end = r.find('\'').unwrap_or(r.len());
            out.push(Value::Bytes(r.as_bytes()[..end].to_vec()));
            rest = r.get(end + 1..).unwrap_or("").trim_start();
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            let tok = rest[..end].trim();
            out.push(if tok.eq_ignore_ascii_case("NULL") {
                Value::Null
            } else if let Ok(i) = tok.parse::<i64>() {
                Value::Int(i)
            } else if let Ok(u) = tok.parse::<u64>() {
                Value::UInt(u)
            } else if let Ok(d) = tok.parse::<f64>() {
                Value::Double(d)
            } else {
                Value::Bytes(tok.as_bytes().to_vec())
            });
            rest = &rest[end..];
        }
        rest = rest
            .trim_start()
            .strip_prefix(',')
            .unwrap_or(rest)
            .trim_start();
    }
    out
}

/// Sessions and prepared statement names of one test file.
pub struct Runner {
    pub instance: Arc<Instance>,
    sessions: HashMap<u32, Session>,
    current: u32,
    prepared: HashMap<String, (u32, u32)>,
}

impl Runner {
    pub fn new() -> Runner {
        let instance = instance();
        let mut sessions = HashMap::new();
        sessions.insert(1, instance.session());
        Runner {
            instance,
            sessions,
            current: 1,
            prepared: HashMap::new(),
        }
    }

    fn session(&mut self) -> &mut Session {
        let instance = Arc::clone(&self.instance);
        self.sessions
            .entry(self.current)
            .or_insert_with(|| instance.session())
    }

    /// Runs one record's statement; returns its output text.
    pub fn run(&mut self, sql: &str) -> String {
        let mut sink = TextSink::default();
        let result = if let Some(rest) = sql.strip_prefix("@session ") {
            self.current = rest.trim().parse().unwrap_or(1);
            self.session();
            sink.out.push_str("switched\n");
            Ok(())
        } else if let Some(rest) = sql.strip_prefix("@login ") {
            let (user, host) = rest.trim().split_once(' ').unwrap_or((rest.trim(), "%"));
            self.session().set_user(user, "localhost");
            self.session().set_account(user, host);
            sink.out.push_str("logged in\n");
            Ok(())
        } else if let Some(rest) = sql.strip_prefix("@prepare ") {
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            let current = self.current;
            match self.session().prepare(text) {
                Ok(info) => {
                    self.prepared.insert(name.to_string(), (current, info.id));
                    let _ = writeln!(
                        sink.out,
                        "prepared params={} columns={}",
                        info.params.len(),
                        info.columns.len()
                    );
                    Ok(())
                }
                Err(e) => Err(e),
            }
        } else if let Some(rest) = sql.strip_prefix("@execute ") {
            let (name, values) = rest.split_once(' ').unwrap_or((rest, ""));
            let params = parse_params(values);
            let (sess, id) = self
                .prepared
                .get(name)
                .copied()
                .unwrap_or((self.current, 0));
            let saved = self.current;
            self.current = sess;
            let r = self.session().execute_prepared(id, &params, &mut sink);
            self.current = saved;
            r
        } else if let Some(rest) = sql.strip_prefix("@meta ") {
            sink.meta_only = true;
            self.session().execute(rest, &mut sink)
        } else {
            self.session().execute(sql, &mut sink)
        };
        if let Err(e) = result {
            let _ = writeln!(sink.out, "error {} ({}): {}", e.code, e.sqlstate, e.message);
        }
        sink.out
    }
}

/// Runs testdata/NAME.test, comparing (or with `SHALE_REGENERATE=1` rewriting) its outputs.
pub fn run_file(name: &str) {
    let path = format!("{}/testdata/{name}.test", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("read test file");
    let regenerate = std::env::var_os("SHALE_REGENERATE").is_some();
    let mut runner = Runner::new();
    let mut out = String::new();
    let mut failures = Vec::new();
    let mut lines = text.lines().peekable();
    while lines.peek().is_some() {
        // Comments and blank lines between records are kept as they are.
        while let Some(l) = lines.peek() {
            if l.trim().is_empty() || l.starts_with('#') {
                out.push_str(l);
                out.push('\n');
                lines.next();
            } else {
                break;
            }
        }
        let mut sql = Vec::new();
        for l in lines.by_ref() {
            if l == "----" {
                break;
            }
            sql.push(l);
        }
        if sql.is_empty() {
            break;
        }
        let mut expected = String::new();
        while let Some(l) = lines.peek() {
            if l.is_empty() {
                break;
            }
            expected.push_str(l);
            expected.push('\n');
            lines.next();
        }
        let sql = sql.join("\n");
        let actual = runner.run(&sql);
        if actual != expected {
            failures.push(format!("--- {sql}\nexpected:\n{expected}actual:\n{actual}"));
        }
        out.push_str(&sql);
        out.push_str("\n----\n");
        out.push_str(&actual);
    }
    if regenerate {
        std::fs::write(&path, out).expect("write test file");
        return;
    }
    assert!(
        failures.is_empty(),
        "{} of testdata/{name}.test differ (SHALE_REGENERATE=1 rewrites):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
