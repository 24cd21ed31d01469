//! The `shale serve` child that `shale stress sql` starts, kills with SIGKILL (by its PID,
//! through `Child::kill`) and restarts on the same data directory.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use mysql::prelude::Queryable as _;
use mysql::{Conn, OptsBuilder};

/// A running server: its process and the port it listens on (`--port 0`, so a fresh free
/// one on every start).
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    pub port: u16,
}

/// How to start the server.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    pub datadir: PathBuf,
    pub durability: String,
    pub isolation: String,
}

impl ServerProcess {
    /// Starts `shale serve` (this very binary) and waits for its "listening" line.
    pub fn start(spec: &ServerSpec) -> Result<ServerProcess, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find shale: {e}"))?;
        let mut child = Command::new(exe)
            .args(["serve", "--port", "0", "--initialize-insecure", "--datadir"])
            .arg(&spec.datadir)
            .args(["--durability", &spec.durability])
            .args(["--transaction-isolation", &spec.isolation])
            .args(["--block-cache-size", "16777216"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start shale serve: {e}"))?;
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("shale serve has no stdout".into());
        };
        let mut lines = BufReader::new(stdout);
        let mut banner = String::new();
        let port = loop {
            let mut line = String::new();
            if lines.read_line(&mut line).unwrap_or(0) == 0 {
                let status = child.wait();
                return Err(format!(
                    "shale serve exited before listening ({status:?}): {banner}"
                ));
            }
            banner.push_str(&line);
            if let Some(rest) = line.strip_prefix("shale serve: listening on 127.0.0.1:") {
                let port = rest.split_whitespace().next().and_then(|p| p.parse().ok());
                break port.ok_or_else(|| format!("unreadable banner: {line}"))?;
            }
        };
        // The rest of its stdout goes nowhere; a thread keeps the pipe drained.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while lines.read_line(&mut sink).unwrap_or(0) > 0 {
                sink.clear();
            }
        });
        Ok(ServerProcess { child, port })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, then reap.
    pub fn kill(mut self) -> Result<(), String> {
        self.child
            .kill()
            .map_err(|e| format!("cannot kill shale serve (pid {}): {e}", self.pid()))?;
        let _ = self.child.wait();
        Ok(())
    }

    /// A connection as root to database `db` (none if empty).
    pub fn connect(&self, db: &str) -> Result<Conn, mysql::Error> {
        connect(self.port, db)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A connection as root (empty password) on 127.0.0.1:`port` to `db` (none if empty).
pub fn connect(port: u16, db: &str) -> Result<Conn, mysql::Error> {
    let opts = OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .user(Some("root"))
        .pass(Some(""))
        .db_name((!db.is_empty()).then_some(db))
        .prefer_socket(false)
        .tcp_connect_timeout(Some(Duration::from_secs(10)))
        // Longer than any lock wait we provoke: a stuck server shows as a failed run.
        .read_timeout(Some(Duration::from_secs(120)))
        .write_timeout(Some(Duration::from_secs(120)));
    Conn::new(opts)
}

/// CHECK TABLE on each of `tables`: `Err` names the first whose result is not `status OK`.
pub fn check_tables(conn: &mut Conn, tables: &[&str]) -> Result<(), String> {
    let sql = format!("CHECK TABLE {}", tables.join(", "));
    let rows: Vec<(String, String, String, String)> =
        conn.query(&sql).map_err(|e| format!("{sql}: {e}"))?;
    if rows.len() != tables.len() {
        return Err(format!("{sql}: {rows:?}"));
    }
    for (table, _, kind, text) in &rows {
        if kind != "status" || text != "OK" {
            return Err(format!("{sql}: {table}: {kind}: {text}"));
        }
    }
    Ok(())
}

/// The default data directory of a run: a fresh one under the temporary directory.
pub fn default_datadir(seed: u64) -> PathBuf {
    std::env::temp_dir().join(format!("shale-stress-sql-{}-{seed}", std::process::id()))
}

/// Whether `path` can be used as a fresh data directory (absent).
pub fn is_fresh(path: &Path) -> bool {
    !path.exists()
}
