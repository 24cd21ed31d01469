//! SQL fuzzing of a live server (docs/reliability.md, "SQL fuzzing of a live server"): a real
//! `shale serve` process, clients sending generated statements (generate.rs) over the wire
//! with the `mysql` crate, some as text queries and some prepared (the binary protocol).
//!
//! What fails the test (a finding, printed with the worker, statement number and seed, and
//! the whole statement written to `$CARGO_TARGET_TMPDIR/shale-sql-fuzz-findings.sql`):
//! - the server process exits;
//! - a statement's connection breaks (the SQL layer panicked: 1105 "Internal error", then
//!   the close), or a statement gets no answer within the client's read timeout (a hang:
//!   SELECTs run under `max_execution_time` = 3 s, the rest is bounded by small tables);
//! - the probe connection's `SELECT 1` (every 250 ms) fails or times out;
//! - the server's resident memory (`VmRSS` in `/proc/PID/status`) passes the bound;
//! - `CHECK TABLE` of the fuzzed tables fails at the end (indexes disagree with rows).
//!
//! Errors with MySQL codes are the expected outcome of most statements and are only counted.
//! Statements run in blocks of 100, every other block without `ONLY_FULL_GROUP_BY` in its
//! `sql_mode` ([`block_sql_mode`]), so random GROUP BY queries group rather than fail 1055.
//!
//! Size: `SHALE_SQL_FUZZ_STATEMENTS` per worker (default 1,500), `SHALE_SQL_FUZZ_SECONDS`
//! (default 120: a worker stops at whichever comes first), `SHALE_SQL_FUZZ_WORKERS` (2),
//! `SHALE_SQL_FUZZ_SEED` (fixed by default; printed), `SHALE_SQL_FUZZ_MAX_RSS_MB` (1,536).

#[path = "../support/mod.rs"]
mod support;

mod generate;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable as _;
use mysql::{Conn, OptsBuilder};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn connect(port: u16, db: Option<&str>, read_timeout: Duration) -> Result<Conn, mysql::Error> {
    let opts = OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .user(Some("root"))
        .pass(Some(""))
        .db_name(db)
        .prefer_socket(false)
        .tcp_connect_timeout(Some(Duration::from_secs(10)))
        .read_timeout(Some(read_timeout))
        .write_timeout(Some(read_timeout))
        // 4 MiB literals and 200,000-item IN lists.
        .max_allowed_packet(Some(64 << 20));
    Conn::new(opts)
}

/// The fuzz connection's setup: SELECTs stop after 3 s.
fn fuzz_connection(port: u16) -> Result<Conn, mysql::Error> {
    let mut conn = connect(port, Some("fz"), STATEMENT_TIMEOUT)?;
    conn.query_drop("SET max_execution_time = 3000")?;
    Ok(conn)
}

/// Runs `sql` and reads every row of every result set, so an error that arrives after the
/// column definitions (a statement that fails while it streams) is seen, not swallowed.
fn run(conn: &mut Conn, sql: &str, prepared: bool) -> Result<(), mysql::Error> {
    if prepared {
        let mut result = conn.exec_iter(sql, ())?;
        while let Some(set) = result.iter() {
            for row in set {
                row?;
            }
        }
    } else {
        let mut result = conn.query_iter(sql)?;
        while let Some(set) = result.iter() {
            for row in set {
                row?;
            }
        }
    }
    Ok(())
}

/// The `SET sql_mode` of statement `n`'s block of 100: MySQL 8's default, and for every
/// other block the same without `ONLY_FULL_GROUP_BY`, under which most generated grouped
/// queries (a select list of random expressions grouped by its first, or aggregates beside
/// plain columns) fail with 1055 / 1140 before they group anything. So half the statements
/// exercise grouping, and half the checks that refuse it.
fn block_sql_mode(n: u64) -> &'static str {
    if (n / 100).is_multiple_of(2) {
        "SET SESSION sql_mode = 'ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,\
         NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'"
    } else {
        "SET SESSION sql_mode = 'STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,\
         ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'"
    }
}

/// A statement with no answer after this long is a hang.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(60);

/// The server's resident set in bytes, from /proc.
fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn alive(pid: u32) -> bool {
    std::fs::metadata(format!("/proc/{pid}")).is_ok()
        && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

/// What every worker adds to.
#[derive(Default)]
struct Tally {
    statements: u64,
    ok: u64,
    errors: BTreeMap<u16, u64>,
    /// (time, statement head) of the slowest statement.
    slowest: (Duration, String),
    findings: Vec<(String, String)>,
    /// A few distinct 1105 ("Unknown error") messages with their statements: internal
    /// errors that are not crashes, printed for a person to look at.
    unknown_errors: BTreeMap<String, String>,
}

fn head(sql: &str) -> String {
    let mut s: String = sql.chars().take(160).collect();
    if s.len() < sql.len() {
        s = format!("{s}... ({} bytes)", sql.len());
    }
    s
}

fn run_worker(
    port: u16,
    pid: u32,
    worker: u64,
    seed: u64,
    tally: &Mutex<Tally>,
    stop: &AtomicBool,
) {
    let statements = env_u64("SHALE_SQL_FUZZ_STATEMENTS", 1_500);
    let deadline = Instant::now() + Duration::from_secs(env_u64("SHALE_SQL_FUZZ_SECONDS", 120));
    let mut generator = generate::Generator::new(seed.wrapping_add(worker));
    let mut conn = fuzz_connection(port).expect("connect");
    for n in 0..statements {
        if stop.load(Ordering::Relaxed) || Instant::now() > deadline {
            break;
        }
        if n % 200 == 0 {
            for sql in generate::refill(seed ^ n) {
                let _ = conn.query_drop(sql);
            }
        }
        if n % 100 == 0 {
            conn.query_drop(block_sql_mode(n))
                .expect("set the block's sql_mode");
        }
        let sql = generator.statement();
        let prepared = n % 10 == 3;
        let started = Instant::now();
        let result = run(&mut conn, &sql, prepared);
        let took = started.elapsed();
        let mut t = tally.lock().unwrap();
        t.statements += 1;
        if took > t.slowest.0 {
            t.slowest = (took, head(&sql));
        }
        let broken = match result {
            Ok(()) => {
                t.ok += 1;
                None
            }
            Err(mysql::Error::MySqlError(e)) => {
                *t.errors.entry(e.code).or_default() += 1;
                if e.code == 1105 && t.unknown_errors.len() < 8 {
                    let key: String = e.message.chars().take(60).collect();
                    t.unknown_errors.entry(key).or_insert_with(|| head(&sql));
                }
                (e.code == 1105 && e.message.starts_with("Internal error"))
                    .then(|| format!("panic in the SQL layer: {}", e.message))
            }
            Err(other) => Some(format!("connection broken after {took:?}: {other}")),
        };
        if let Some(what) = broken {
            let server = if alive(pid) {
                "server up"
            } else {
                "SERVER DIED"
            };
            let label = format!(
                "worker {worker} statement {n} (seed {seed}, prepared {prepared}, {server}): {what}"
            );
            eprintln!("FINDING: {label}\n  {}", head(&sql));
            t.findings.push((label, sql));
            drop(t);
            if !alive(pid) {
                stop.store(true, Ordering::Relaxed);
                return;
            }
            conn = fuzz_connection(port).expect("reconnect");
            conn.query_drop(block_sql_mode(n))
                .expect("set the block's sql_mode");
        }
    }
}

/// Every 250 ms: `SELECT 1` on its own connection (latency kept), and the server's RSS.
fn run_probe(
    port: u16,
    pid: u32,
    stop: &AtomicBool,
    max_rss: &AtomicU64,
    tally: &Mutex<Tally>,
) -> Duration {
    let mut conn = connect(port, None, Duration::from_secs(30)).expect("probe connect");
    let mut worst = Duration::ZERO;
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let answer: Result<Option<u64>, _> = conn.query_first("SELECT 1");
        worst = worst.max(started.elapsed());
        if !matches!(answer, Ok(Some(1))) {
            let label = format!("the probe SELECT 1 failed: {answer:?}");
            eprintln!("FINDING: {label}");
            tally
                .lock()
                .unwrap()
                .findings
                .push((label, "SELECT 1".into()));
            match connect(port, None, Duration::from_secs(30)) {
                Ok(c) => conn = c,
                Err(_) => return worst,
            }
        }
        if let Some(rss) = rss_bytes(pid) {
            max_rss.fetch_max(rss, Ordering::Relaxed);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    worst
}

#[test]
fn generated_statements_never_crash_hang_or_bloat_a_live_server() {
    let dir = support::scratch("sql-fuzz");
    let server = support::start_shale_with(&dir, &["--block-cache-size=67108864"]);
    let pid = server.pid();
    let seed = env_u64("SHALE_SQL_FUZZ_SEED", 20_261_127);
    let workers = env_u64("SHALE_SQL_FUZZ_WORKERS", 2);
    let max_rss_mb = env_u64("SHALE_SQL_FUZZ_MAX_RSS_MB", 1_536);
    eprintln!("sql fuzz: seed {seed}, {workers} workers, server pid {pid}");

    let mut setup = connect(server.port, None, STATEMENT_TIMEOUT).unwrap();
    setup.query_drop("CREATE DATABASE fz").unwrap();
    setup.query_drop("USE fz").unwrap();
    for sql in generate::SCHEMA {
        setup.query_drop(sql).unwrap();
    }
    for sql in generate::refill(seed) {
        setup.query_drop(sql).unwrap();
    }
    let rss_at_start = rss_bytes(pid).unwrap_or(0);

    let tally = Arc::new(Mutex::new(Tally::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let max_rss = Arc::new(AtomicU64::new(rss_at_start));
    let started = Instant::now();
    let probe = {
        let (stop, max_rss, tally) = (stop.clone(), max_rss.clone(), tally.clone());
        let port = server.port;
        std::thread::spawn(move || run_probe(port, pid, &stop, &max_rss, &tally))
    };
    let threads: Vec<_> = (0..workers)
        .map(|w| {
            let (stop, tally) = (stop.clone(), tally.clone());
            let port = server.port;
            std::thread::spawn(move || run_worker(port, pid, w, seed, &tally, &stop))
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let worst_probe = probe.join().unwrap();
    let elapsed = started.elapsed();

    let mut tally = Arc::try_unwrap(tally).ok().unwrap().into_inner().unwrap();
    if alive(pid) {
        let mut check = connect(server.port, Some("fz"), STATEMENT_TIMEOUT).unwrap();
        let rows: Vec<(String, String, String, String)> =
            check.query("CHECK TABLE t0, t1, t2").unwrap();
        for (table, _, kind, text) in rows {
            if kind != "status" || text != "OK" {
                tally
                    .findings
                    .push((format!("CHECK TABLE {table}: {kind} {text}"), String::new()));
            }
        }
    } else {
        tally
            .findings
            .push(("the server died".into(), server.log_text()));
    }
    let mut top: Vec<(u16, u64)> = tally.errors.iter().map(|(c, n)| (*c, *n)).collect();
    top.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let max_rss = max_rss.load(Ordering::Relaxed);
    eprintln!(
        "sql fuzz: {} statements in {elapsed:.1?} ({} ok), errors by code (most first): {:?}",
        tally.statements,
        tally.ok,
        &top[..top.len().min(20)]
    );
    eprintln!(
        "sql fuzz: slowest statement {:.1?}: {}",
        tally.slowest.0, tally.slowest.1
    );
    eprintln!(
        "sql fuzz: probe SELECT 1 worst {worst_probe:.1?}; server RSS {} MiB at start, {} MiB at most",
        rss_at_start >> 20,
        max_rss >> 20
    );
    for (message, sql) in &tally.unknown_errors {
        eprintln!("sql fuzz: 1105 {message}... from: {sql}");
    }
    if !tally.findings.is_empty() {
        let path =
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("shale-sql-fuzz-findings.sql");
        let mut file = std::fs::File::create(&path).unwrap();
        for (label, sql) in &tally.findings {
            writeln!(file, "-- {label}\n{sql};\n").unwrap();
        }
        let labels: Vec<&str> = tally.findings.iter().map(|(l, _)| l.as_str()).collect();
        panic!(
            "{} findings (statements in {}):\n{}",
            labels.len(),
            path.display(),
            labels.join("\n")
        );
    }
    assert!(
        max_rss < max_rss_mb << 20,
        "the server's RSS reached {} MiB (bound {max_rss_mb} MiB)",
        max_rss >> 20
    );
}

/// Every statement the fuzzer found a defect with, fixed, must now get an answer: a result
/// or a MySQL error, never the closed connection of a panic or a wait past the time limit.
const FOUND: &[(&str, Option<u16>)] = &[
    // Month arithmetic far past year 9999 overflowed i64 (datetime_funcs.rs add_interval).
    (
        "SELECT a, s FROM t0 UNION SELECT ((641733.405 LIKE NULL) && ti), \
         ((127 + INTERVAL '1e309' MICROSECOND) - INTERVAL 809652.518 YEAR) FROM t1",
        None,
    ),
    (
        "SELECT a, s FROM t0 UNION DISTINCT SELECT (CONCAT(NULL, bl) - INTERVAL CAST(dt AS DATE) \
         DAY), (CASE '76146' WHEN d THEN a ELSE dc END IN ((- '72323'), u, \
         (dt - INTERVAL dt MONTH), CAST(ti AS CHAR))) FROM t1",
        None,
    ),
    (
        "SELECT DATE '2024-01-31' + INTERVAL 9223372036854775807 MONTH",
        None,
    ),
    // A time text with a huge day count overflowed i64 (datetime_funcs.rs parse of TIME).
    (
        "DELETE FROM t1 WHERE ((('9999-12-31 23:59:59.999999' IS NOT NULL) XOR \
         TIMEDIFF(bn, u)) IN (@v, s, tx)) LIMIT 3",
        None,
    ),
    (
        "SELECT TIMEDIFF('99999999999999999 10:00:00', '1:00:00')",
        None,
    ),
    // 20 MB partition keys per row: ran 62 s past max_execution_time and took 2.5 GiB;
    // the keys now count against shale_query_memory (3170).
    (
        "SELECT id, LAST_VALUE(dt) OVER (PARTITION BY RPAD(X'00FF', dt, 0xFFFFFFFFFFFFFFFFFF) \
         ORDER BY big ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM t0",
        Some(3170),
    ),
];

#[test]
fn statements_the_fuzzer_broke_the_server_with_are_answered() {
    let dir = support::scratch("sql-fuzz-found");
    let server = support::start_shale_with(&dir, &[]);
    let mut setup = connect(server.port, None, STATEMENT_TIMEOUT).unwrap();
    setup.query_drop("CREATE DATABASE fz").unwrap();
    setup.query_drop("USE fz").unwrap();
    for sql in generate::SCHEMA
        .iter()
        .copied()
        .map(str::to_owned)
        .chain(generate::refill(1))
    {
        setup.query_drop(sql).unwrap();
    }
    let mut conn = fuzz_connection(server.port).unwrap();
    for (sql, expected) in FOUND {
        let started = Instant::now();
        let result = run(&mut conn, sql, false);
        let took = started.elapsed();
        match (&result, expected) {
            (Ok(()), None) => {}
            (Err(mysql::Error::MySqlError(e)), _) if e.code != 1105 => {
                if let Some(code) = expected {
                    assert_eq!(e.code, *code, "{sql}: {e}");
                }
            }
            _ => panic!("{sql}: {result:?} after {took:?}"),
        }
        eprintln!(
            "{took:>10.1?} {:?}: {}",
            result.err().map(|e| e.to_string()),
            head(sql)
        );
        let probe: Option<u64> = conn.query_first("SELECT 1").unwrap();
        assert_eq!(probe, Some(1));
    }
    // A join of 200 tables planned for 13 to 23 s before max_execution_time could stop it.
    // Past 61 tables it is now refused (1116), as MySQL refuses it; 61 still run.
    let join = |n: usize| {
        let joins: Vec<String> = (1..n)
            .map(|i| format!("JOIN t2 y{i} ON y{i}.id = y0.id"))
            .collect();
        format!(
            "SELECT COUNT(*) FROM t2 y0 {} WHERE y0.id < 3",
            joins.join(" ")
        )
    };
    // 4,097 columns: the table layer's refusal came back as 1105; now MySQL's 1117.
    let columns: Vec<String> = (0..4096).map(|i| format!("c{i} INT")).collect();
    match conn.query_drop(format!(
        "CREATE TABLE wide (id INT PRIMARY KEY, {})",
        columns.join(", ")
    )) {
        Err(mysql::Error::MySqlError(e)) => {
            assert_eq!((e.code, e.message.as_str()), (1117, "Too many columns"));
        }
        other => panic!("a table of 4,097 columns: {other:?}"),
    }
    let count: Option<u64> = conn.query_first(join(61)).unwrap();
    assert_eq!(count, Some(2));
    for n in [62, 200] {
        match conn.query_drop(join(n)) {
            Err(mysql::Error::MySqlError(e)) => {
                assert_eq!(e.code, 1116, "{e}");
                assert_eq!(
                    e.message,
                    "Too many tables; MySQL can only use 61 tables in a join"
                );
            }
            other => panic!("a join of {n} tables: {other:?}"),
        }
    }
}
