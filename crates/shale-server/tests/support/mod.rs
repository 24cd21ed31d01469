//! A fake SQL layer and a server running it on a background runtime, so the protocol can be
//! tested with real clients without the real engine. The fake understands a few statements:
//! `select 1`, `select rows N`, `select mixed`, `begin`, `commit`, `set autocommit=0|1`,
//! `fail`, `fail NAME` (1146 naming it), `select text` (non-ASCII text in a text and a BLOB
//! column), `echo TEXT` (TEXT as the SQL layer got it, in one row), `panic`, `use DB`,
//! `set NAME = VALUE` (kept for `session_variable`: numbers as
//! numbers, `null` as unset, the rest as text); anything else is an OK with one affected row. Prepared
//! statements echo their parameters back as one row, except `select rows N`, which returns
//! its N rows.

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use shale_fs::FileSystem as _;

use shale_server::{
    hash_password, Backend, BackendSession, RsaKeyPair, Server, ServerOptions, CACHING_SHA2,
    NATIVE_PASSWORD,
};
use shale_sql::{
    ColumnMeta, ColumnTypeCode, PreparedInfo, ResultSink, SqlError, StatementStatus, UserRecord,
    Value,
};

#[derive(Debug)]
pub struct Fake;

impl Backend for Fake {
    fn session(&self) -> Box<dyn BackendSession> {
        Box::new(FakeSession {
            autocommit: true,
            in_txn: false,
            database: None,
            prepared: Vec::new(),
            vars: HashMap::new(),
        })
    }

    fn lookup_user(&self, user: &str, host: &str) -> Result<Option<UserRecord>, SqlError> {
        // Hashed once: a `caching_sha2_password` hash has a fresh salt each time, and a real
        // account's stored hash does not change between logins.
        static HASHES: OnceLock<std::sync::Mutex<HashMap<String, Vec<u8>>>> = OnceLock::new();
        let (plugin, password) = match user {
            "root" => (NATIVE_PASSWORD, "pw"),
            "sha" => (CACHING_SHA2, "pw2"),
            "nopw" => (NATIVE_PASSWORD, ""),
            _ => return Ok(None),
        };
        let mut hashes = HASHES
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let stored = hashes
            .entry(user.to_owned())
            .or_insert_with(|| hash_password(plugin, password))
            .clone();
        Ok((host == "localhost").then(|| UserRecord {
            user: user.into(),
            host: host.into(),
            plugin: plugin.into(),
            authentication_string: stored,
        }))
    }
}

#[derive(Debug)]
struct FakeSession {
    autocommit: bool,
    in_txn: bool,
    database: Option<String>,
    prepared: Vec<String>,
    vars: HashMap<String, Value>,
}

pub fn column(name: &str, type_code: ColumnTypeCode, flags: u16) -> ColumnMeta {
    ColumnMeta {
        name: name.into(),
        org_name: name.into(),
        table: "t".into(),
        org_table: "t".into(),
        database: "db".into(),
        type_code,
        length: 80,
        flags,
        decimals: if type_code == ColumnTypeCode::Double {
            31
        } else {
            0
        },
        charset: if matches!(type_code, ColumnTypeCode::VarString) {
            45
        } else {
            63
        },
    }
}

fn syntax_error() -> SqlError {
    SqlError {
        code: 1064,
        sqlstate: "42000",
        message: "You have an error in your SQL syntax".into(),
    }
}

impl FakeSession {
    fn status(&self, more: bool) -> StatementStatus {
        StatementStatus {
            in_transaction: self.in_txn,
            autocommit: self.autocommit,
            more_results: more,
            ..StatementStatus::default()
        }
    }

    // One arm per fake statement: a flat list reads best.
    #[allow(clippy::too_many_lines)]
    fn statement(
        &mut self,
        sql: &str,
        more: bool,
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError> {
        let lower = sql.trim().to_ascii_lowercase();
        let words: Vec<&str> = lower.split_whitespace().collect();
        if let Some(text) = sql.trim().strip_prefix("echo ") {
            sink.columns(&[column("echo", ColumnTypeCode::VarString, 0)])?;
            sink.row(&[Value::Bytes(text.as_bytes().to_vec())])?;
            return sink.end(&self.status(more));
        }
        match words.as_slice() {
            ["select", "text"] => {
                let mut blob = column("b", ColumnTypeCode::Blob, 0);
                blob.length = 65_535;
                sink.columns(&[column("café", ColumnTypeCode::VarString, 0), blob])?;
                let text = "café €😀".as_bytes().to_vec();
                sink.row(&[Value::Bytes(text.clone()), Value::Bytes(text)])?;
                sink.end(&self.status(more))
            }
            ["fail", name] => Err(SqlError {
                code: 1146,
                sqlstate: "42S02",
                message: format!("Table 'db.{name}' doesn't exist"),
            }),
            ["select", "1"] => {
                sink.columns(&[column("1", ColumnTypeCode::LongLong, 1)])?;
                sink.row(&[Value::Int(1)])?;
                sink.end(&self.status(more))
            }
            ["select", "rows", n] => {
                let n: u64 = n.parse().map_err(|_| syntax_error())?;
                sink.columns(&[
                    column("n", ColumnTypeCode::LongLong, 0),
                    column("s", ColumnTypeCode::VarString, 0),
                ])?;
                for i in 0..n {
                    sink.row(&[
                        Value::UInt(i),
                        Value::Bytes(format!("row-{i}").into_bytes()),
                    ])?;
                }
                sink.end(&self.status(more))
            }
            ["select", "mixed"] => {
                sink.columns(&[
                    column("i", ColumnTypeCode::LongLong, 0),
                    column("u", ColumnTypeCode::LongLong, 32),
                    column("d", ColumnTypeCode::Double, 0),
                    column("s", ColumnTypeCode::VarString, 0),
                    column("n", ColumnTypeCode::VarString, 0),
                    column("dt", ColumnTypeCode::DateTime, 0),
                ])?;
                sink.row(&[
                    Value::Int(-5),
                    Value::UInt(u64::MAX),
                    Value::Double(2.5),
                    Value::Bytes(b"hello".to_vec()),
                    Value::Null,
                    Value::Bytes(b"2024-01-02 03:04:05".to_vec()),
                ])?;
                sink.end(&self.status(more))
            }
            ["begin"] => {
                self.in_txn = true;
                sink.ok(&self.status(more))
            }
            ["commit"] => {
                self.in_txn = false;
                sink.ok(&self.status(more))
            }
            ["set", "autocommit", "=", v] | ["set", "autocommit", v] => {
                self.autocommit = *v == "1" || *v == "=1";
                sink.ok(&self.status(more))
            }
            ["sleep", ms] => {
                let ms: u64 = ms.parse().map_err(|_| syntax_error())?;
                std::thread::sleep(Duration::from_millis(ms));
                sink.columns(&[column("slept", ColumnTypeCode::LongLong, 0)])?;
                sink.row(&[Value::UInt(ms)])?;
                sink.end(&self.status(more))
            }
            ["set", name, "=", value] => {
                let value = match value.parse::<i64>() {
                    Ok(n) => Some(Value::Int(n)),
                    Err(_) if *value == "null" => None,
                    Err(_) => Some(Value::Bytes(value.as_bytes().to_vec())),
                };
                match value {
                    Some(value) => self.vars.insert((*name).to_owned(), value),
                    None => self.vars.remove(*name),
                };
                let mut status = self.status(more);
                status.affected_rows = 1;
                sink.ok(&status)
            }
            ["fail"] => Err(syntax_error()),
            ["panic"] => panic!("the fake SQL layer panics on request"),
            ["use", db] => self
                .use_database(db)
                .and_then(|()| sink.ok(&self.status(more))),
            _ => {
                let mut status = self.status(more);
                status.affected_rows = 1;
                sink.ok(&status)
            }
        }
    }
}

impl BackendSession for FakeSession {
    fn session_variable(&self, name: &str) -> Option<Value> {
        self.vars.get(name).cloned()
    }

    fn execute(&mut self, sql: &str, sink: &mut dyn ResultSink) -> Result<(), SqlError> {
        let statements: Vec<&str> = sql
            .split(';')
            .filter(|s| !s.trim().is_empty() && !s.trim().starts_with("--"))
            .collect();
        for (i, statement) in statements.iter().enumerate() {
            self.statement(statement, i + 1 < statements.len(), sink)?;
        }
        Ok(())
    }

    fn prepare(&mut self, sql: &str) -> Result<PreparedInfo, SqlError> {
        if sql.trim().eq_ignore_ascii_case("fail") {
            return Err(syntax_error());
        }
        self.prepared.push(sql.to_owned());
        let n = sql.matches('?').count();
        let params = (0..n)
            .map(|_| column("?", ColumnTypeCode::VarString, 0))
            .collect();
        let columns = if sql.trim().to_ascii_lowercase().starts_with("select") {
            (0..n)
                .map(|i| column(&format!("p{i}"), ColumnTypeCode::VarString, 0))
                .collect()
        } else {
            Vec::new()
        };
        Ok(PreparedInfo {
            id: self.prepared.len() as u32,
            params,
            columns,
        })
    }

    fn execute_prepared(
        &mut self,
        id: u32,
        params: &[Value],
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError> {
        let sql = self
            .prepared
            .get(id as usize - 1)
            .ok_or_else(syntax_error)?
            .clone();
        // `select rows N` (no parameters): N rows, as the text protocol's (cursor tests).
        if sql.trim().to_ascii_lowercase().starts_with("select rows") {
            return self.statement(&sql, false, sink);
        }
        if !sql.trim().to_ascii_lowercase().starts_with("select") {
            let mut status = self.status(false);
            status.affected_rows = params.len() as u64;
            return sink.ok(&status);
        }
        let columns: Vec<ColumnMeta> = params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let name = format!("p{i}");
                match p {
                    Value::Int(_) => column(&name, ColumnTypeCode::LongLong, 0),
                    Value::UInt(_) => column(&name, ColumnTypeCode::LongLong, 32),
                    Value::Double(_) => column(&name, ColumnTypeCode::Double, 0),
                    _ => column(&name, ColumnTypeCode::VarString, 0),
                }
            })
            .collect();
        sink.columns(&columns)?;
        sink.row(params)?;
        sink.end(&self.status(false))
    }

    fn close_prepared(&mut self, _id: u32) {}

    fn use_database(&mut self, name: &str) -> Result<(), SqlError> {
        if name == "nodb" {
            return Err(SqlError {
                code: 1049,
                sqlstate: "42000",
                message: format!("Unknown database '{name}'"),
            });
        }
        self.database = Some(name.to_owned());
        Ok(())
    }

    fn current_database(&self) -> Option<String> {
        self.database.clone()
    }

    fn in_transaction(&self) -> bool {
        self.in_txn
    }

    fn autocommit(&self) -> bool {
        self.autocommit
    }
}

/// Starts a server over [`Fake`] on a free port; it runs until the test process ends. It has
/// an RSA key pair (for `caching_sha2_password` on plain connections) but no TLS.
pub fn start(max_allowed_packet: usize) -> SocketAddr {
    start_with(ServerOptions {
        max_allowed_packet,
        connect_timeout: Duration::from_secs(5),
        rsa_keys: Some(rsa_keys()),
        ..ServerOptions::default()
    })
}

/// One RSA key pair for every server of the test process (generating one takes a while).
pub fn rsa_keys() -> Arc<RsaKeyPair> {
    static KEYS: OnceLock<Arc<RsaKeyPair>> = OnceLock::new();
    KEYS.get_or_init(|| Arc::new(RsaKeyPair::generate().unwrap()))
        .clone()
}

/// A CA and a server certificate for `localhost`/`127.0.0.1` signed by it, as `shale serve`
/// generates them: the server's TLS configuration and the CA's PEM file (under `dir`).
pub fn test_tls(dir: &Path) -> (Arc<rustls::ServerConfig>, PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    // Distinct names: a certificate whose issuer is its own subject counts as self-signed.
    ca.distinguished_name
        .push(DnType::CommonName, "Shale test CA");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut server =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    server
        .distinguished_name
        .push(DnType::CommonName, "Shale test server");
    let cert = server.signed_by(&key, &ca_cert, &ca_key).unwrap();
    let config = shale_server::tls_server_config(
        cert.pem().as_bytes(),
        key.serialize_pem().as_bytes(),
        None,
    )
    .unwrap();
    let fs = shale_fs::OsFs::new();
    fs.create_dir_all(dir).unwrap();
    let ca_path = dir.join("ca.pem");
    let mut file = fs.create(&ca_path).unwrap();
    file.append(ca_cert.pem().as_bytes()).unwrap();
    file.sync_data().unwrap();
    (config, ca_path)
}

/// [`start`] with any options.
pub fn start_with(options: ServerOptions) -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let backend: Arc<dyn Backend> = Arc::new(Fake);
            let server = Server::bind("127.0.0.1:0".parse().unwrap(), backend, options)
                .await
                .unwrap();
            tx.send(server.local_addr().unwrap()).unwrap();
            server.run(std::future::pending()).await;
        });
    });
    rx.recv().unwrap()
}

/// A server that stops when `stop` is sent; `done` receives its shutdown report.
#[derive(Debug)]
pub struct Stoppable {
    pub addr: SocketAddr,
    pub stop: tokio::sync::oneshot::Sender<()>,
    pub done: std::sync::mpsc::Receiver<shale_server::ShutdownReport>,
}

pub fn start_stoppable(options: ServerOptions) -> Stoppable {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (done_tx, done) = std::sync::mpsc::channel();
    let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let backend: Arc<dyn Backend> = Arc::new(Fake);
            let server = Server::bind("127.0.0.1:0".parse().unwrap(), backend, options)
                .await
                .unwrap();
            addr_tx.send(server.local_addr().unwrap()).unwrap();
            let report = server
                .run(async {
                    let _ = stop_rx.await;
                })
                .await;
            done_tx.send(report).unwrap();
        });
    });
    Stoppable {
        addr: addr_rx.recv().unwrap(),
        stop,
        done,
    }
}

/// Whether `program` can be run here; tests that need a missing client say so and pass.
pub fn have(program: &str, arg: &str) -> bool {
    let found = Command::new(program)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        skip_outside_ci(&format!("`{program}` is not installed (apt-get install mariadb-client sysbench python3-pymysql)"));
    }
    found
}

/// Runs the mariadb client in batch mode against `addr` (a server without TLS: `--ssl=0`, as
/// libmariadb with its default `--ssl` would send a `caching_sha2_password` in the clear,
/// which the server refuses on a plain connection, and not use the RSA exchange).
pub fn mariadb(addr: SocketAddr, user: &str, password: &str, sql: &str) -> Output {
    Command::new("mariadb")
        .args([
            "--no-defaults",
            "--protocol=TCP",
            "--ssl=0",
            "-h127.0.0.1",
            &format!("-P{}", addr.port()),
            &format!("-u{user}"),
            &format!("--password={password}"),
            "--batch",
            "-e",
            sql,
        ])
        .output()
        .expect("run mariadb")
}

/// Runs a Python script with `PyMySQL`; `PORT` is set in its environment.
pub fn python(addr: SocketAddr, script: &str) -> Output {
    Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(script)
        .env("PORT", addr.port().to_string())
        .output()
        .expect("run python3")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A test whose client is missing passes with a note, except in CI, which installs every
/// client (.ci/run): there the missing client fails the test.
pub fn skip_outside_ci(why: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{why}; CI must run every end-to-end test"
    );
    eprintln!("SKIPPED: {why}");
}
