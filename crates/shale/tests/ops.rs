//! Running `shale serve` as a DBA, through real clients (PyMySQL): SHOW PROCESSLIST seen from
//! a second connection, KILL QUERY of a long join, KILL of an idle connection with an open
//! transaction, `max_execution_time`, status counters moving by the right amounts, the
//! Prometheus endpoint scraped, and SET GLOBAL / SET SESSION of the live settings.
//!
//! Each test starts its own server on a free port with its own data directory and stops it
//! with SIGTERM by PID. A test whose client is missing prints SKIPPED and passes, except
//! under CI=true, where it fails.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `shale serve`.
struct Served {
    child: Child,
    port: u16,
    /// The /metrics port, when started with `--metrics-port 0`.
    metrics_port: Option<u16>,
    _stdout: BufReader<ChildStdout>,
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("shale-ops-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

// The child moves into `Served`, whose Drop kills and reaps it.
#[allow(clippy::zombie_processes)]
fn serve(datadir: &Path, extra: &[&str]) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_shale"))
        .args(["serve", "--port", "0", "--initialize-insecure", "--datadir"])
        .arg(datadir)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start shale serve");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut metrics_port = None;
    loop {
        let mut line = String::new();
        let n = stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "shale serve exited before listening");
        if let Some(rest) = line.strip_prefix("shale serve: metrics on http://127.0.0.1:") {
            metrics_port = Some(rest.split('/').next().unwrap().parse().unwrap());
        }
        if let Some(rest) = line.strip_prefix("shale serve: listening on 127.0.0.1:") {
            let port = rest.split_whitespace().next().unwrap().parse().unwrap();
            return Served {
                child,
                port,
                metrics_port,
                _stdout: stdout,
            };
        }
    }
}

impl Served {
    /// SIGTERM by PID; the server must exit 0.
    fn stop(mut self) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "shale serve exited with {status}");
                return;
            }
            assert!(Instant::now() < deadline, "shale serve did not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs a PyMySQL script with PORT set; panics with its output when it fails.
    fn python(&self, script: &str) {
        let out = Command::new("/usr/bin/python3")
            .arg("-c")
            .arg(script)
            .env("PORT", self.port.to_string())
            .output()
            .expect("run python3");
        assert!(
            out.status.success(),
            "script failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// GET `path` from the metrics port: the status line and the body.
    fn http_get(&self, path: &str) -> (String, String) {
        let port = self.metrics_port.expect("started with --metrics-port");
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").unwrap();
        (head.lines().next().unwrap().to_owned(), body.to_owned())
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn have_pymysql() -> bool {
    let found = Command::new("/usr/bin/python3")
        .args(["-c", "import pymysql"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "PyMySQL is missing in CI; .ci/run must install it"
        );
        eprintln!("SKIPPED: PyMySQL is not usable here (apt-get install python3-pymysql)");
    }
    found
}

/// Shared by the scripts: connections, and a join long enough to be killed (300^3 rows
/// looked at, tens of seconds unkilled).
const PRELUDE: &str = r#"
import os, threading, time, pymysql
port = int(os.environ["PORT"])
def connect(**kw):
    return pymysql.connect(host="127.0.0.1", port=port, user="root", password="", autocommit=True, **kw)
LONG = "SELECT COUNT(*) FROM t x, t y, t z WHERE x.k + y.k + z.k < 0"
def error_of(cur, sql):
    try:
        cur.execute(sql)
        cur.fetchall()
    except pymysql.err.MySQLError as e:
        return e.args[0]
    return None
def processes(cur, full=False):
    cur.execute("SHOW FULL PROCESSLIST" if full else "SHOW PROCESSLIST")
    return {row[0]: row for row in cur.fetchall()}
def wait_until(what, check):
    deadline = time.time() + 30
    while not check():
        assert time.time() < deadline, what
        time.sleep(0.05)
"#;

const PROCESSLIST_AND_KILL: &str = r#"
a, b = connect(), connect()
ca, cb = a.cursor(), b.cursor()
ca.execute("CREATE DATABASE ops")
ca.execute("USE ops")
ca.execute("CREATE TABLE t (k INT PRIMARY KEY)")
ca.executemany("INSERT INTO t VALUES (%s)", [(i,) for i in range(300)])
a_id, b_id = a.thread_id(), b.thread_id()
assert a_id != b_id

# The second connection sees the first one idle in its database, and itself running.
seen = processes(cb)
cb.execute("SHOW PROCESSLIST")
assert [d[0] for d in cb.description] == ["Id", "User", "Host", "db", "Command", "Time", "State", "Info"], cb.description
assert seen[a_id][1:5] == ("root", "localhost", "ops", "Sleep"), seen[a_id]
assert seen[a_id][7] is None, seen[a_id]
assert seen[b_id][4] == "Query" and seen[b_id][7] == "SHOW PROCESSLIST", seen[b_id]

# KILL QUERY stops a long join with 1317; the connection stays usable.
outcome = {}
def run_long():
    outcome["error"] = error_of(ca, LONG)
worker = threading.Thread(target=run_long)
worker.start()
wait_until("the join shows as running", lambda: processes(cb, True)[a_id][4] == "Query")
assert processes(cb, True)[a_id][7] == LONG
cb.execute("KILL QUERY %d" % a_id)
worker.join(60)
assert not worker.is_alive(), "KILL QUERY did not stop the join"
assert outcome["error"] == 1317, outcome
ca.execute("SELECT COUNT(*) FROM t")
assert ca.fetchone() == (300,)
assert processes(cb)[a_id][4] == "Sleep"

# A KILL QUERY that arrives while the connection is idle does not hit its next statement.
cb.execute("KILL QUERY %d" % a_id)
ca.execute("SELECT COUNT(*) FROM t")
assert ca.fetchone() == (300,)

# max_execution_time (session variable, then the optimizer hint) stops SELECTs with 3024,
# not writes.
ca.execute("SET SESSION max_execution_time = 200")
assert error_of(ca, LONG) == 3024
ca.execute("INSERT INTO t VALUES (5000)")
ca.execute("DELETE FROM t WHERE k = 5000")
ca.execute("SET SESSION max_execution_time = 0")
assert error_of(ca, LONG.replace("SELECT", "SELECT /*+ MAX_EXECUTION_TIME(200) */")) == 3024

# SLEEP() as MySQL's: 0 when it sleeps the whole time, 1210 for a negative or NULL time;
# cut short by KILL QUERY or max_execution_time it returns 1 when it is the statement's only
# work, and the statement fails (1317, 3024) when it was reading a table.
ca.execute("SELECT SLEEP(0.05)")
assert ca.fetchone() == (0,)
assert error_of(ca, "SELECT SLEEP(-1)") == 1210
assert error_of(ca, "SELECT SLEEP(NULL)") == 1210
def killed_after_start(sql):
    outcome = {}
    def run():
        try:
            ca.execute(sql)
            outcome["rows"] = ca.fetchall()
        except pymysql.err.MySQLError as e:
            outcome["error"] = e.args[0]
    worker = threading.Thread(target=run)
    worker.start()
    wait_until("the sleep shows as running", lambda: processes(cb, True)[a_id][7] == sql)
    cb.execute("KILL QUERY %d" % a_id)
    worker.join(60)
    assert not worker.is_alive(), "KILL QUERY did not stop " + sql
    return outcome
assert killed_after_start("SELECT SLEEP(600)") == {"rows": ((1,),)}
assert killed_after_start("SELECT k FROM t WHERE k = 7 AND SLEEP(600)") == {"error": 1317}
ca.execute("SET SESSION max_execution_time = 200")
ca.execute("SELECT SLEEP(600)")
assert ca.fetchone() == (1,)
assert error_of(ca, "SELECT k FROM t WHERE k = 7 AND SLEEP(600)") == 3024
assert error_of(ca, "SELECT BENCHMARK(10000000000, 1 + 1)") == 3024
# Fewer rows than the executor's 256-row check interval, each building a 4 MB value: the
# values' bytes count as work, so the deadline is seen inside this scan.
ca.execute("SET SESSION max_execution_time = 1")
assert error_of(ca, "SELECT COUNT(*) FROM t WHERE k < 100 AND LENGTH(REPEAT('ab', 2000000 + k)) > 0") == 3024
ca.execute("SET SESSION max_execution_time = 0")
ca.execute("SELECT COUNT(*) FROM t WHERE k < 3 AND LENGTH(REPEAT('ab', 2000000 + k)) > 0")
assert ca.fetchone() == (3,)

# Unknown ids: 1094, for both forms.
assert error_of(cb, "KILL 987654") == 1094
assert error_of(cb, "KILL QUERY 987654") == 1094

# KILL of an idle connection inside a transaction: it is closed and its insert rolled back.
ca.execute("BEGIN")
ca.execute("INSERT INTO t VALUES (1000)")
cb.execute("KILL %d" % a_id)
wait_until("the killed connection leaves the list", lambda: a_id not in processes(cb))
code = error_of(ca, "SELECT 1")
assert code in (2006, 2013), code
cb.execute("SELECT COUNT(*) FROM ops.t WHERE k = 1000")
assert cb.fetchone() == (0,)

# KILL CONNECTION of a connection running a query ends both.
c = connect(database="ops")
cc = c.cursor()
c_id = c.thread_id()
outcome = {}
def run_long_c():
    outcome["error"] = error_of(cc, LONG)
worker = threading.Thread(target=run_long_c)
worker.start()
wait_until("the join shows as running", lambda: processes(cb)[c_id][4] == "Query")
cb.execute("KILL CONNECTION %d" % c_id)
worker.join(60)
assert not worker.is_alive()
assert outcome["error"] in (1317, 2013), outcome
wait_until("the killed connection leaves the list", lambda: c_id not in processes(cb))
"#;

#[test]
fn processlist_kill_query_kill_connection_and_max_execution_time() {
    if !have_pymysql() {
        return;
    }
    let served = serve(&scratch("kill"), &[]);
    served.python(&format!("{PRELUDE}{PROCESSLIST_AND_KILL}"));
    served.stop();
}

const COUNTERS: &str = r#"
a = connect()
ca = a.cursor()
def status(cur, scope):
    cur.execute("SHOW %s STATUS" % scope)
    return {name: value for name, value in cur.fetchall()}
def delta(before, after, name):
    return int(after[name]) - int(before[name])
ca.execute("CREATE DATABASE c")
ca.execute("USE c")
ca.execute("CREATE TABLE t (k INT PRIMARY KEY, v INT)")
g0, s0 = status(ca, "GLOBAL"), status(ca, "SESSION")
ca.execute("INSERT INTO t VALUES (1, 1), (2, 2), (3, 3)")
ca.execute("INSERT INTO t VALUES (4, 4)")
ca.execute("UPDATE t SET v = v + 1 WHERE k <= 2")
ca.execute("DELETE FROM t WHERE k = 4")
ca.execute("SELECT * FROM t")
assert len(ca.fetchall()) == 3
ca.execute("BEGIN")
ca.execute("COMMIT")
g1, s1 = status(ca, "GLOBAL"), status(ca, "SESSION")
for scope0, scope1 in ((g0, g1), (s0, s1)):
    # Seven statements and two SHOW STATUS (each counts itself before it reads).
    assert delta(scope0, scope1, "Questions") == 9, (scope0["Questions"], scope1["Questions"])
    assert delta(scope0, scope1, "Com_insert") == 2
    assert delta(scope0, scope1, "Com_update") == 1
    assert delta(scope0, scope1, "Com_delete") == 1
    assert delta(scope0, scope1, "Com_select") == 1
    assert delta(scope0, scope1, "Com_begin") == 1
    assert delta(scope0, scope1, "Com_commit") == 1
    assert delta(scope0, scope1, "Com_show") == 2
    assert delta(scope0, scope1, "Shale_rows_inserted") == 4
    assert delta(scope0, scope1, "Shale_rows_updated") == 2
    assert delta(scope0, scope1, "Shale_rows_deleted") == 1
    # UPDATE and DELETE read 2 and 1 rows through the primary key, SELECT reads 3.
    assert delta(scope0, scope1, "Shale_rows_read") == 6, delta(scope0, scope1, "Shale_rows_read")
assert int(g1["Bytes_received"]) > int(g0["Bytes_received"])
# The engine's block cache, at shale serve's default size.
assert int(g1["Shale_block_cache_capacity"]) == 512 << 20, g1["Shale_block_cache_capacity"]
assert int(g1["Bytes_sent"]) > int(g0["Bytes_sent"])

# A second connection: Connections and Threads_connected move, the first one's session
# counters do not see its statements.
b = connect()
cb = b.cursor()
cb.execute("SELECT 1")
g2, s2 = status(ca, "GLOBAL"), status(ca, "SESSION")
assert delta(g1, g2, "Connections") == 1
assert int(g2["Threads_connected"]) == 2
assert int(g2["Threads_running"]) == 1
assert delta(g1, g2, "Com_select") == 1
assert delta(s1, s2, "Com_select") == 0
b.close()

# A failed login counts in Aborted_connects.
try:
    pymysql.connect(host="127.0.0.1", port=port, user="root", password="wrong")
    raise SystemExit("login with a wrong password worked")
except pymysql.err.OperationalError as e:
    assert e.args[0] == 1045, e.args
# The server counts the failure after it sent the 1045, so the count may lag the error.
wait_until("Aborted_connects", lambda: delta(g2, status(ca, "GLOBAL"), "Aborted_connects") == 1)

# Slow_queries counts statements past long_query_time.
ca.execute("SET SESSION long_query_time = 0")
ca.execute("SELECT 1")
ca.execute("SET SESSION long_query_time = 10")
assert delta(s2, status(ca, "SESSION"), "Slow_queries") >= 1
ca.execute("SHOW STATUS LIKE 'Ssl_cipher'")
assert ca.fetchall() == (("Ssl_cipher", ""),)
ca.execute("SHOW GLOBAL STATUS LIKE 'Uptime'")
assert int(ca.fetchone()[1]) >= 0
"#;

/// The value of an unlabelled metric in an exposition.
fn metric(body: &str, name: &str) -> u64 {
    body.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} missing from:\n{body}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn status_counters_move_by_the_right_amounts_and_metrics_show_them() {
    if !have_pymysql() {
        return;
    }
    let served = serve(&scratch("counters"), &["--metrics-port", "0"]);
    let (status, before) = served.http_get("/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(metric(&before, "mysql_up"), 1);
    assert!(
        before.contains("# TYPE mysql_global_status_threads_connected gauge"),
        "{before}"
    );
    served.python(&format!("{PRELUDE}{COUNTERS}"));
    // The script's connections are gone once the server has seen them close.
    let deadline = Instant::now() + Duration::from_secs(30);
    let after = loop {
        let (_, body) = served.http_get("/metrics");
        if metric(&body, "mysql_global_status_threads_connected") == 0 {
            break body;
        }
        assert!(
            Instant::now() < deadline,
            "connections still counted:\n{body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let moved = |name: &str| metric(&after, name) - metric(&before, name);
    assert!(moved("mysql_global_status_questions") >= 20);
    assert_eq!(
        metric(
            &after,
            "mysql_global_status_commands_total{command=\"insert\"}"
        ) - metric(
            &before,
            "mysql_global_status_commands_total{command=\"insert\"}"
        ),
        2
    );
    assert_eq!(moved("mysql_global_status_shale_rows_inserted"), 4);
    assert_eq!(moved("mysql_global_status_connections"), 3);
    assert_eq!(moved("mysql_global_status_aborted_connects"), 1);
    assert_eq!(
        metric(&after, "mysql_global_variables_max_connections"),
        151
    );
    assert!(after.contains("mysql_global_status_shale_wal_bytes_written "));
    assert_eq!(served.http_get("/other").0, "HTTP/1.1 404 Not Found");
    served.stop();
}

const SETTINGS: &str = r#"
a = connect()
ca = a.cursor()
ca.execute("SELECT @@global.max_connections, @@global.wait_timeout")
assert ca.fetchone() == (151, 28800)
# max_connections changes at once: with 2 allowed, a third connection is root's only
# because root holds SUPER (MySQL's extra connection for administrators); a fourth gets 1040.
ca.execute("SET GLOBAL max_connections = 2")
b = connect()
c = connect()
try:
    connect()
    raise SystemExit("a fourth connection was accepted")
except pymysql.err.OperationalError as e:
    assert e.args[0] == 1040, e.args
c.close()
b.close()
time.sleep(0.2)
ca.execute("SET GLOBAL max_connections = 0")
ca.execute("SHOW WARNINGS")
assert ca.fetchall() == (("Warning", 1292, "Truncated incorrect max_connections value: '0'"),)
ca.execute("SET GLOBAL max_connections = 100")
connect().close()
# Errors with MySQL's codes.
assert error_of(ca, "SET GLOBAL max_connections = 'many'") == 1232
assert error_of(ca, "SET SESSION max_connections = 10") == 1229
assert error_of(ca, "SET GLOBAL port = 1") == 1238
assert error_of(ca, "SET GLOBAL shale_use_direct_reads = 1") == 1238
# SET SESSION wait_timeout closes this idle connection after it.
c = connect()
cc = c.cursor()
cc.execute("SET SESSION wait_timeout = 1")
time.sleep(2.5)
code = error_of(cc, "SELECT 1")
assert code in (2006, 2013), code
# SET GLOBAL wait_timeout applies to connections from then on (and idle ones' next wait).
ca.execute("SET GLOBAL wait_timeout = 1")
d = connect()
time.sleep(2.5)
code = error_of(d.cursor(), "SELECT 1")
assert code in (2006, 2013), code
"#;

#[test]
fn set_global_and_session_change_live_settings() {
    if !have_pymysql() {
        return;
    }
    let served = serve(&scratch("settings"), &[]);
    served.python(&format!("{PRELUDE}{SETTINGS}"));
    served.stop();
}

const PERSIST_FIRST: &str = r#"
a = connect()
ca = a.cursor()
ca.execute("SET PERSIST max_connections = 300")
ca.execute("SELECT @@global.max_connections")
assert ca.fetchone() == (300,)
ca.execute("SET PERSIST_ONLY shale_flush_log_at_trx_commit = 2")
ca.execute("SET PERSIST wait_timeout = 600")
# Only for the next start: the running server keeps what it has.
ca.execute("SELECT @@global.shale_flush_log_at_trx_commit")
assert ca.fetchone() == (1,)
assert error_of(ca, "SET PERSIST shale_use_direct_reads = 1") == 1235
assert error_of(ca, "SET PERSIST_ONLY shale_flush_log_at_trx_commit = 7") == 1231
assert error_of(ca, "SET PERSIST_ONLY max_connections = 'many'") == 1232
assert error_of(ca, "SET PERSIST port = 1") == 1235
"#;

const PERSIST_SECOND: &str = r#"
a = connect()
ca = a.cursor()
ca.execute("SELECT @@global.max_connections, @@global.wait_timeout, @@global.shale_flush_log_at_trx_commit")
assert ca.fetchone() == (300, 600, 2), "persisted settings not applied"
ca.execute("RESET PERSIST max_connections")
assert error_of(ca, "RESET PERSIST max_connections") == 3615
ca.execute("RESET PERSIST IF EXISTS max_connections")
ca.execute("SHOW WARNINGS")
assert ca.fetchall() == (("Warning", 3615, "Variable max_connections does not exist in persisted config file"),)
"#;

const PERSIST_THIRD: &str = r#"
a = connect()
ca = a.cursor()
ca.execute("SELECT @@global.max_connections, @@global.wait_timeout, @@global.shale_flush_log_at_trx_commit")
assert ca.fetchone() == (151, 600, 2), "RESET PERSIST of one setting"
ca.execute("RESET PERSIST")
"#;

#[test]
fn set_persist_survives_a_restart_and_reset_persist_forgets_it() {
    if !have_pymysql() {
        return;
    }
    let dir = scratch("persist");
    let served = serve(&dir, &[]);
    served.python(&format!("{PRELUDE}{PERSIST_FIRST}"));
    served.stop();
    let file = std::fs::read_to_string(dir.join("shale-auto.cnf")).unwrap();
    assert!(
        file.contains("[shale]\ndurability = flush\nmax-connections = 300\nwait-timeout = 600\n"),
        "{file}"
    );
    // The persisted values win over the command line, as mysqld-auto.cnf does.
    let served = serve(&dir, &["--max-connections", "20"]);
    served.python(&format!("{PRELUDE}{PERSIST_SECOND}"));
    served.stop();
    let served = serve(&dir, &[]);
    served.python(&format!("{PRELUDE}{PERSIST_THIRD}"));
    served.stop();
    let file = std::fs::read_to_string(dir.join("shale-auto.cnf")).unwrap();
    assert!(file.ends_with("[shale]\n"), "{file}");
}

const LOGS: &str = r#"
a = connect()
ca = a.cursor()
ca.execute("CREATE DATABASE logs")
ca.execute("USE logs")
ca.execute("CREATE TABLE t (k INT PRIMARY KEY, v INT)")
ca.executemany("INSERT INTO t VALUES (%s, %s)", [(i, i) for i in range(10)])
ca.execute("SELECT @@global.general_log, @@global.slow_query_log, @@global.long_query_time")
row = ca.fetchone()
assert row[:2] == (1, 1) and float(row[2]) == 100.0, row
# Not slow at the server's 100 s; slow for this session at 0.
ca.execute("SELECT v FROM t WHERE k = 3")
ca.execute("SET SESSION long_query_time = 0")
ca.execute("SELECT v FROM t WHERE k >= 7 ORDER BY k")
assert ca.fetchall() == ((7,), (8,), (9,))
assert error_of(ca, "SET GLOBAL slow_query_log = 0") == 1238
print(a.thread_id())
"#;

#[test]
fn general_and_slow_query_logs_are_written_in_the_data_directory() {
    if !have_pymysql() {
        return;
    }
    let dir = scratch("logs");
    let served = serve(
        &dir,
        &[
            "--general-log",
            "--slow-query-log",
            "--long-query-time",
            "100",
        ],
    );
    served.python(&format!("{PRELUDE}{LOGS}"));
    served.stop();
    let general = std::fs::read_to_string(dir.join("general.log")).unwrap();
    let lines: Vec<&str> = general.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with(" Query\tSELECT v FROM t WHERE k = 3")),
        "{general}"
    );
    // Every line: an RFC 3339 UTC time with microseconds, the connection id, the command.
    for line in &lines {
        let (time, rest) = line.split_once('\t').unwrap();
        assert_eq!(time.len(), "2026-11-27T05:06:39.350568Z".len(), "{line}");
        assert!(time.ends_with('Z') && rest.contains(" Query\t"), "{line}");
    }
    let slow = std::fs::read_to_string(dir.join("slow.log")).unwrap();
    assert!(!slow.contains("k = 3"), "not slow at 100 s:\n{slow}");
    let entry = slow
        .split("# Time: ")
        .find(|e| e.contains("SELECT v FROM t WHERE k >= 7 ORDER BY k;"))
        .unwrap_or_else(|| panic!("no entry for the slow SELECT:\n{slow}"));
    assert!(
        entry.contains("Rows_sent: 3  Rows_examined: 3\n"),
        "{entry}"
    );
    assert!(
        entry.contains("# User@Host: root@localhost  Id:"),
        "{entry}"
    );
    assert!(entry.contains("# Plan: range t.PRIMARY"), "{entry}");
    assert!(entry.contains("SET timestamp="), "{entry}");
}
