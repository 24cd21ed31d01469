//! Protocol features through real clients against the built `shale serve`: the compressed
//! protocol (the mariadb client's `--compress`, `MySQLdb`'s `compress=1`, sysbench's
//! `--mysql-compression=on` with prepared statements) with results of several MB, and the
//! `Compression` status variable. Byte-level tests of the same features are in
//! crates/shale-server/tests (compressed.rs).

mod support;

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use support::{have, scratch, start_shale, Server};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The mariadb client in batch mode with extra flags, `sql` on its standard input (a long
/// INSERT does not fit in an argument); stdout, or a panic with its stderr.
fn mariadb(server: &Server, flags: &[&str], sql: &str) -> String {
    let mut child = Command::new("mariadb")
        .args([
            "--no-defaults",
            "-h127.0.0.1",
            &format!("-P{}", server.port),
            "-uroot",
            "--batch",
            "--skip-column-names",
        ])
        .args(flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mariadb");
    let mut stdin = child.stdin.take().unwrap();
    let input = sql.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let shown: String = sql.chars().take(200).collect();
    assert!(out.status.success(), "{shown}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// The last line the mariadb client prints for a statement that fails (the error).
fn mariadb_error(server: &Server, sql: &str) -> String {
    let out = Command::new("mariadb")
        .args([
            "--no-defaults",
            "-h127.0.0.1",
            &format!("-P{}", server.port),
            "-uroot",
            "-e",
            sql,
        ])
        .output()
        .expect("run mariadb");
    assert!(!out.status.success(), "{sql} succeeded");
    text(&out.stderr)
        .trim()
        .lines()
        .last()
        .unwrap_or("")
        .to_owned()
}

/// Runs a Python script with `/usr/bin/python3` (which has `MySQLdb` and `PyMySQL`); `PORT` is
/// set in its environment.
fn python(server: &Server, script: &str) -> Output {
    Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(script)
        .env("PORT", server.port.to_string())
        .output()
        .expect("run python3")
}

/// The number after `label` in sysbench's summary (`transactions:   1234   (246.6 per sec.)`).
fn summary(stdout: &str, label: &str) -> u64 {
    stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix(label))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `{label}` in:\n{stdout}"))
}

fn have_mysqldb() -> bool {
    have("/usr/bin/python3", &["-c", "import MySQLdb"])
}

/// A table of `rows` rows of 100 bytes each (about 10 KB per 100 rows), made with the
/// mariadb client.
fn fill(server: &Server, rows: u32) {
    mariadb(
        server,
        &[],
        "CREATE DATABASE w; CREATE TABLE w.t (id INT PRIMARY KEY, s VARCHAR(200))",
    );
    let mut sql = String::from("INSERT INTO w.t VALUES ");
    for i in 0..rows {
        if i > 0 {
            sql.push(',');
        }
        let _ = write!(sql, "({i}, CONCAT(REPEAT('a', 50), LPAD({i}, 50, '-')))");
    }
    mariadb(server, &[], &sql);
}

#[test]
fn the_mariadb_client_with_compress_gets_large_results_whole() {
    if !have("mariadb", &["--version"]) {
        return;
    }
    let server = start_shale(&scratch("wire-compress-mariadb"));
    fill(&server, 40_000);
    let plain = mariadb(&server, &[], "SELECT id, s FROM w.t ORDER BY id");
    let compressed = mariadb(
        &server,
        &["--compress"],
        "SELECT id, s FROM w.t ORDER BY id",
    );
    assert!(plain.len() > 4_000_000, "{} bytes", plain.len());
    assert!(compressed == plain, "the same rows either way");
    // One value of 5 MB: a packet that spans compressed packets.
    let big = mariadb(
        &server,
        &["--compress", "--max-allowed-packet=64M"],
        "SELECT LENGTH(REPEAT('xyz', 1700000)), REPEAT('xyz', 1700000)",
    );
    let (length, value) = big.trim_end().split_once('\t').unwrap();
    assert_eq!(length, "5100000");
    assert_eq!(value, "xyz".repeat(1_700_000));
    let status = mariadb(
        &server,
        &["--compress"],
        "SHOW SESSION STATUS LIKE 'Compression'",
    );
    assert_eq!(status, "Compression\tON\n");
    let status = mariadb(&server, &[], "SHOW SESSION STATUS LIKE 'Compression'");
    assert_eq!(status, "Compression\tOFF\n");
    // Compression inside TLS: the same rows.
    let ca = format!("--ssl-ca={}", server.datadir.join("ca.pem").display());
    let tls = [
        "--compress",
        "--ssl",
        ca.as_str(),
        "--ssl-verify-server-cert",
    ];
    let status = mariadb(
        &server,
        &tls,
        "SHOW SESSION STATUS LIKE 'Compression'; SHOW SESSION STATUS LIKE 'Ssl_version'",
    );
    assert_eq!(status, "Compression\tON\nSsl_version\tTLSv1.3\n");
    let over_tls = mariadb(&server, &tls, "SELECT id, s FROM w.t ORDER BY id");
    assert!(over_tls == plain, "the same rows over TLS");
}

#[test]
fn mysqldb_with_compress_reads_megabytes_and_writes() {
    if !have("mariadb", &["--version"]) || !have_mysqldb() {
        return;
    }
    let server = start_shale(&scratch("wire-compress-mysqldb"));
    fill(&server, 30_000);
    let out = python(
        &server,
        r#"
import os, MySQLdb
c = MySQLdb.connect(host="127.0.0.1", port=int(os.environ["PORT"]), user="root", passwd="",
                    db="w", compress=1)
cur = c.cursor()
cur.execute("SHOW SESSION STATUS LIKE 'Compression'")
assert cur.fetchall() == (("Compression", "ON"),), "compressed"
cur.execute("SELECT id, s FROM t ORDER BY id")
rows = cur.fetchall()
assert len(rows) == 30000, len(rows)
for i, (id, s) in enumerate(rows):
    assert id == i and s == "a" * 50 + str(i).rjust(50, "-"), (i, id, s)
# A large statement from the client: many rows in one INSERT (several MB compressed).
values = ",".join("(%d, '%s')" % (100000 + i, "b" * 150) for i in range(20000))
cur.execute("INSERT INTO t VALUES " + values)
assert cur.rowcount == 20000
c.commit()
cur.execute("SELECT COUNT(*), SUM(LENGTH(s)) FROM t WHERE id >= 100000")
assert cur.fetchall() == ((20000, 3000000),), "inserted"
# Parameters (MySQLdb inlines them in the text) and a server-side (unbuffered) cursor.
ss = c.cursor(MySQLdb.cursors.SSCursor)
ss.execute("SELECT id FROM t WHERE id < %s ORDER BY id", (1000,))
assert [r[0] for r in ss] == list(range(1000))
print("ok")
"#,
    );
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout), "ok\n");
}

#[test]
fn sysbench_with_compression_runs_prepared_statements() {
    if !have("sysbench", &["--version"]) || !have("mariadb", &["--version"]) {
        return;
    }
    let server = start_shale(&scratch("wire-compress-sysbench"));
    mariadb(&server, &[], "CREATE DATABASE sbtest");
    let sysbench = |command: &str| {
        let out = Command::new("sysbench")
            .args([
                "oltp_read_only",
                "--db-driver=mysql",
                "--mysql-host=127.0.0.1",
                &format!("--mysql-port={}", server.port),
                "--mysql-user=root",
                "--mysql-password=",
                "--mysql-db=sbtest",
                "--mysql-compression=on",
                "--tables=1",
                "--table-size=2000",
                "--time=2",
                "--threads=2",
                "--report-interval=0",
                command,
            ])
            .output()
            .expect("run sysbench");
        assert!(
            out.status.success(),
            "sysbench {command}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    };
    sysbench("prepare");
    let stdout = sysbench("run");
    let transactions = summary(&stdout, "transactions:");
    assert!(transactions > 0, "{stdout}");
    assert_eq!(summary(&stdout, "ignored errors:"), 0, "{stdout}");
    eprintln!("oltp_read_only with compression: {transactions} transactions in 2 s");
}

/// libmariadb's cursor API through Python's ctypes (no C compiler or headers needed):
/// `STMT_ATTR_CURSOR_TYPE` = `CURSOR_TYPE_READ_ONLY` with `STMT_ATTR_PREFETCH_ROWS` = 3 makes
/// `mysql_stmt_execute` open a cursor and each `mysql_stmt_fetch` past the prefetched rows
/// send `COM_STMT_FETCH`. A text query in the middle only works because the rows wait on the
/// server (without a cursor, libmariadb would report "Commands out of sync").
const LIBMARIADB_CURSOR: &str = r#"
import ctypes, ctypes.util, os, sys
lib = ctypes.CDLL(ctypes.util.find_library("mariadb") or "libmariadb.so.3")
P, c_ulong = ctypes.c_void_p, ctypes.c_ulong
lib.mysql_init.restype = P
lib.mysql_real_connect.restype = P
lib.mysql_real_connect.argtypes = [P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                   ctypes.c_char_p, ctypes.c_uint, ctypes.c_char_p, c_ulong]
lib.mysql_error.restype = ctypes.c_char_p
lib.mysql_error.argtypes = [P]
lib.mysql_stmt_init.restype = P
lib.mysql_stmt_init.argtypes = [P]
lib.mysql_stmt_prepare.argtypes = [P, ctypes.c_char_p, c_ulong]
lib.mysql_stmt_attr_set.argtypes = [P, ctypes.c_int, P]
lib.mysql_stmt_execute.argtypes = [P]
lib.mysql_stmt_bind_result.argtypes = [P, P]
lib.mysql_stmt_fetch.argtypes = [P]
lib.mysql_stmt_error.restype = ctypes.c_char_p
lib.mysql_stmt_error.argtypes = [P]
lib.mysql_stmt_close.argtypes = [P]
lib.mysql_query.argtypes = [P, ctypes.c_char_p]
lib.mysql_store_result.restype = P
lib.mysql_store_result.argtypes = [P]
lib.mysql_num_rows.restype = ctypes.c_ulonglong
lib.mysql_num_rows.argtypes = [P]
lib.mysql_free_result.argtypes = [P]
lib.mysql_close.argtypes = [P]

class Bind(ctypes.Structure):  # MYSQL_BIND of libmariadb 3
    _fields_ = [("length", P), ("is_null", P), ("buffer", P), ("error", P), ("u", P),
                ("store_param_func", P), ("fetch_result", P), ("skip_result", P),
                ("buffer_length", c_ulong),
                ("offset", c_ulong), ("length_value", c_ulong), ("flags", ctypes.c_uint),
                ("pack_length", ctypes.c_uint), ("buffer_type", ctypes.c_int),
                ("error_value", ctypes.c_char), ("is_unsigned", ctypes.c_char),
                ("long_data_used", ctypes.c_char), ("is_null_value", ctypes.c_char),
                ("extension", P)]
assert ctypes.sizeof(Bind) == 112

m = lib.mysql_init(None)
if not lib.mysql_real_connect(m, b"127.0.0.1", b"root", b"", b"w", int(os.environ["PORT"]), None, 0):
    sys.exit("connect: %s" % lib.mysql_error(m))
stmt = lib.mysql_stmt_init(m)
sql = b"SELECT id, s FROM t WHERE id < 10 ORDER BY id"
assert lib.mysql_stmt_prepare(stmt, sql, len(sql)) == 0, lib.mysql_stmt_error(stmt)
read_only, prefetch = c_ulong(1), c_ulong(3)
assert lib.mysql_stmt_attr_set(stmt, 1, ctypes.byref(read_only)) == 0   # STMT_ATTR_CURSOR_TYPE
assert lib.mysql_stmt_attr_set(stmt, 2, ctypes.byref(prefetch)) == 0    # STMT_ATTR_PREFETCH_ROWS
assert lib.mysql_stmt_execute(stmt) == 0, lib.mysql_stmt_error(stmt)
ident = ctypes.c_longlong()
text = ctypes.create_string_buffer(256)
text_len = c_ulong()
binds = (Bind * 2)()
binds[0].buffer_type, binds[0].buffer = 8, ctypes.cast(ctypes.byref(ident), P)   # LONGLONG
binds[1].buffer_type, binds[1].buffer = 254, ctypes.cast(text, P)                # STRING
binds[1].buffer_length = 256
binds[1].length = ctypes.cast(ctypes.byref(text_len), P)
assert lib.mysql_stmt_bind_result(stmt, binds) == 0, lib.mysql_stmt_error(stmt)
rows = []
def fetch():
    rc = lib.mysql_stmt_fetch(stmt)
    if rc == 100:  # MYSQL_NO_DATA
        return False
    assert rc == 0, (rc, lib.mysql_stmt_error(stmt))
    rows.append((ident.value, text.raw[:text_len.value].decode()))
    return True
for _ in range(4):
    assert fetch()
# Another statement while the cursor holds the rest of the rows.
assert lib.mysql_query(m, b"SELECT 1 UNION ALL SELECT 2") == 0, lib.mysql_error(m)
res = lib.mysql_store_result(m)
assert res and lib.mysql_num_rows(res) == 2
lib.mysql_free_result(res)
while fetch():
    pass
assert rows == [(i, "a" * 50 + str(i).rjust(50, "-")) for i in range(10)], rows
lib.mysql_stmt_close(stmt)
lib.mysql_close(m)
print("ok")
"#;

#[test]
fn libmariadb_cursors_fetch_in_pieces_around_other_statements() {
    if !have("mariadb", &["--version"])
        || !have(
            "/usr/bin/python3",
            &["-c", "import ctypes; ctypes.CDLL('libmariadb.so.3')"],
        )
    {
        return;
    }
    let server = start_shale(&scratch("wire-cursor-libmariadb"));
    fill(&server, 50);
    let out = python(&server, LIBMARIADB_CURSOR);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout), "ok\n");
}

/// `COM_PROCESS_KILL` (the deprecated command byte that PyMySQL's `kill()` and libmariadb's
/// `mysql_kill()` still send) runs the KILL statement: the other connection is closed, an
/// unknown id is 1094.
#[test]
fn com_process_kill_from_pymysql_and_mysqldb() {
    if !have_mysqldb() || !have("/usr/bin/python3", &["-c", "import pymysql"]) {
        return;
    }
    let server = start_shale(&scratch("wire-process-kill"));
    let out = python(
        &server,
        r#"
import os, time, pymysql, MySQLdb
port = int(os.environ["PORT"])
def py():
    return pymysql.connect(host="127.0.0.1", port=port, user="root", password="")
def gone(conn, errors):
    # The kill closes the connection from the server's side right after its OK; the victim
    # sees it at its next command: lost (2013, 2006), or 1317 if that command raced the
    # close (the KILL statement's own behaviour).
    for _ in range(50):
        try:
            conn.cursor().execute("SELECT 1")
        except errors as e:
            return e.args[0]
        time.sleep(0.1)
    return None
victim, killer = py(), py()
assert killer.kill(victim.thread_id()).server_status is not None
assert gone(victim, pymysql.err.OperationalError) in (1317, 2006, 2013), "closed"
try:
    killer.kill(987654)
    raise SystemExit("no error for an unknown id")
except pymysql.err.InternalError as e:
    assert e.args == (1094, "Unknown thread id: 987654"), e.args
except pymysql.err.OperationalError as e:
    assert e.args == (1094, "Unknown thread id: 987654"), e.args
m = MySQLdb.connect(host="127.0.0.1", port=port, user="root", passwd="")
v = MySQLdb.connect(host="127.0.0.1", port=port, user="root", passwd="")
m.kill(v.thread_id())
assert gone(v, MySQLdb.OperationalError) in (1317, 2006, 2013), "closed"
c = m.cursor()
c.execute("SELECT 1")
assert c.fetchall() == ((1,),), "the killer goes on"
print("ok")
"#,
    );
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout), "ok\n");
}

/// `@@max_allowed_packet` is `--max-allowed-packet`; `SET GLOBAL` changes it for connections
/// that log in afterwards (each keeps its own, as in MySQL), `SET SESSION` is 1621, and a
/// statement larger than the limit ends the connection (1153 is sent before the body is
/// read; the client, still writing, may only see the connection go).
#[test]
fn max_allowed_packet_is_the_servers_and_applies_per_connection() {
    if !have("mariadb", &["--version"]) {
        return;
    }
    let server = support::start_shale_with(
        &scratch("wire-max-allowed-packet"),
        &["--max-allowed-packet=1048576"],
    );
    let shown = mariadb(
        &server,
        &[],
        "SELECT @@max_allowed_packet, @@global.max_allowed_packet, @@session.max_allowed_packet",
    );
    assert_eq!(shown, "1048576\t1048576\t1048576\n");
    let big = format!("SELECT LENGTH('{}')", "x".repeat(1_500_000));
    let refused = Command::new("mariadb")
        .args([
            "--no-defaults",
            "-h127.0.0.1",
            &format!("-P{}", server.port),
            "-uroot",
            "--batch",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().unwrap().write_all(big.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(
        !refused.status.success(),
        "a 1.5 MB statement over a 1 MB limit"
    );
    let error = text(&refused.stderr);
    assert!(
        error.contains("ERROR 1153")
            || error.contains("ERROR 2006")
            || error.contains("ERROR 2013"),
        "{error}"
    );
    assert_eq!(
        mariadb_error(&server, "SET SESSION max_allowed_packet = 4194304"),
        "ERROR 1621 (HY000) at line 1: SESSION variable 'max_allowed_packet' is read-only. \
         Use SET GLOBAL to assign the value"
    );
    // Out of range: clamped with 1292, as the other live settings.
    let shown = mariadb(
        &server,
        &[],
        "SET GLOBAL max_allowed_packet = 100; SHOW WARNINGS; \
         SET GLOBAL max_allowed_packet = 4194304; \
         SELECT @@global.max_allowed_packet, @@max_allowed_packet",
    );
    assert_eq!(
        shown,
        "Warning\t1292\tTruncated incorrect max_allowed_packet value: '100'\n\
         4194304\t1048576\n"
    );
    // A new connection takes the new limit.
    assert_eq!(mariadb(&server, &[], &big), "1500000\n");
    assert_eq!(
        mariadb(&server, &[], "SELECT @@max_allowed_packet"),
        "4194304\n"
    );
}

/// The character set a client names in its handshake, and SET NAMES, are what
/// `@@character_set_client`, `@@character_set_results` and `@@collation_connection` show
/// (recorded only: text is UTF-8 either way; docs/server.md).
#[test]
fn the_clients_character_set_is_recorded() {
    if !have("mariadb", &["--version"]) {
        return;
    }
    let server = start_shale(&scratch("wire-names"));
    let show = "SELECT @@character_set_client, @@character_set_connection, \
                @@character_set_results, @@collation_connection";
    for (charset, expected) in [
        ("utf8mb4", "utf8mb4\tutf8mb4\tutf8mb4\tutf8mb4_general_ci\n"),
        ("utf8mb3", "utf8mb3\tutf8mb3\tutf8mb3\tutf8mb3_general_ci\n"),
        ("latin1", "latin1\tlatin1\tlatin1\tlatin1_swedish_ci\n"),
        ("binary", "binary\tbinary\tbinary\tbinary\n"),
    ] {
        let flag = format!("--default-character-set={charset}");
        assert_eq!(mariadb(&server, &[&flag], show), expected, "{charset}");
    }
    let shown = mariadb(
        &server,
        &[],
        "SET NAMES latin1; SELECT @@character_set_client, @@collation_connection; \
         SET NAMES utf8mb4 COLLATE utf8mb4_bin; SELECT @@character_set_results, @@collation_connection; \
         SET NAMES utf8mb4; SELECT @@collation_connection; \
         SET NAMES DEFAULT; SELECT @@collation_connection",
    );
    assert_eq!(
        shown,
        "latin1\tlatin1_swedish_ci\nutf8mb4\tutf8mb4_bin\nutf8mb4_0900_ai_ci\nutf8mb4_general_ci\n"
    );
    for (sql, error) in [
        (
            "SET NAMES koi9",
            "ERROR 1115 (42000) at line 1: Unknown character set: 'koi9'",
        ),
        (
            "SET NAMES utf8mb4 COLLATE latin1_bin",
            "ERROR 1253 (42000) at line 1: COLLATION 'latin1_bin' is not valid for CHARACTER SET 'utf8mb4'",
        ),
        (
            "SET NAMES latin1 COLLATE nope",
            "ERROR 1273 (HY000) at line 1: Unknown collation: 'nope'",
        ),
    ] {
        assert_eq!(mariadb_error(&server, sql), error);
    }
    if !have_mysqldb() {
        return;
    }
    let out = python(
        &server,
        r#"
import os, MySQLdb, pymysql
port = int(os.environ["PORT"])
show = "SELECT @@character_set_client, @@collation_connection"
m = MySQLdb.connect(host="127.0.0.1", port=port, user="root", passwd="", charset="latin1")
c = m.cursor(); c.execute(show); print(c.fetchall())
p = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", charset="utf8mb4")
c = p.cursor(); c.execute(show); print(c.fetchall())
"#,
    );
    assert_eq!(
        text(&out.stdout),
        "(('latin1', 'latin1_swedish_ci'),)\n(('utf8mb4', 'utf8mb4_general_ci'),)\n",
        "{}",
        text(&out.stderr)
    );
}

/// LOAD DATA LOCAL INFILE under compression: mid-command, the server asks for the file and
/// the client sends it as many packets inside compressed packets (whose inner ids follow the
/// client's own numbering), then the statement's OK.
#[test]
fn load_data_local_over_a_compressed_connection() {
    if !have("mariadb", &["--version"]) {
        return;
    }
    let dir = scratch("wire-compress-local-infile");
    let server = support::start_shale_with(&dir, &["--local-infile"]);
    mariadb(
        &server,
        &[],
        "CREATE DATABASE w; CREATE TABLE w.t (id INT PRIMARY KEY, s VARCHAR(200))",
    );
    let mut csv = String::new();
    for i in 0..50_000 {
        let _ = writeln!(csv, "{i},{}", "z".repeat(i % 150));
    }
    let file = dir.join("rows.csv");
    {
        use shale_fs::FileSystem as _;
        let fs = shale_fs::OsFs::new();
        let mut f = fs.create(&file).unwrap();
        f.append(csv.as_bytes()).unwrap();
        f.sync_data().unwrap();
    }
    let load = format!(
        "LOAD DATA LOCAL INFILE '{}' INTO TABLE w.t FIELDS TERMINATED BY ','; \
         SELECT COUNT(*), SUM(LENGTH(s)) FROM w.t; SHOW SESSION STATUS LIKE 'Compression'",
        file.display()
    );
    let out = mariadb(&server, &["--compress", "--local-infile=1"], &load);
    let total: usize = (0..50_000).map(|i| i % 150).sum();
    assert_eq!(out, format!("50000\t{total}\nCompression\tON\n"));
}
