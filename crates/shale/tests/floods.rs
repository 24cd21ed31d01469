//! Connection floods and slow clients against a live `shale serve` (docs/reliability.md,
//! "Connection floods and slow clients"), while a normal client runs a small query in a loop
//! and its latency is printed per phase (never asserted as a time):
//!
//! 1. a flood past `max_connections`: every connection beyond it gets 1040 "Too many
//!    connections" (through the `mysql` crate and as raw TCP connections that never log in);
//! 2. slow clients: connections that send a query with a large result and never read it
//!    (closed by the server after `net_write_timeout`), a client that sends its login one byte
//!    per second (dropped after `connect_timeout`), and one that sends a command one byte per
//!    second (served when the last byte arrives, as MySQL serves it).
//!
//! Asserted: the normal client is answered throughout, every refused connection gets 1040,
//! and afterwards the server's connections return to normal: `Threads_connected` is back to
//! its value before the abuse and `max_connections` clients can connect again.

mod support;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable as _;
use mysql::{Conn, OptsBuilder};

const MAX_CONNECTIONS: usize = 12;

fn connect(port: u16) -> Result<Conn, mysql::Error> {
    let opts = OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .user(Some("root"))
        .pass(Some(""))
        .db_name(Some("fl"))
        .prefer_socket(false)
        .tcp_connect_timeout(Some(Duration::from_secs(10)))
        .read_timeout(Some(Duration::from_secs(60)))
        .write_timeout(Some(Duration::from_secs(60)));
    Conn::new(opts)
}

/// A client speaking the protocol by hand, for what a driver will not do (stop reading,
/// dribble bytes).
struct Raw {
    stream: TcpStream,
}

impl Raw {
    fn open(port: u16) -> Raw {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Raw { stream }
    }

    /// The next packet's payload; None once the server closed the connection.
    fn read(&mut self) -> Option<Vec<u8>> {
        let mut header = [0u8; 4];
        self.stream.read_exact(&mut header).ok()?;
        let len =
            usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
        let mut payload = vec![0; len];
        self.stream.read_exact(&mut payload).ok()?;
        Some(payload)
    }

    fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut out = len.to_le_bytes()[..3].to_vec();
        out.push(seq);
        out.extend_from_slice(payload);
        out
    }

    /// `HandshakeResponse41` for root with an empty password (`mysql_native_password`).
    fn login_packet() -> Vec<u8> {
        // LONG_PASSWORD | PROTOCOL_41 | TRANSACTIONS | SECURE_CONNECTION | PLUGIN_AUTH |
        // DEPRECATE_EOF
        let capabilities: u32 = 0x1 | 0x200 | 0x2000 | 0x8000 | 0x8_0000 | 0x100_0000;
        let mut payload = capabilities.to_le_bytes().to_vec();
        payload.extend_from_slice(&(16u32 << 20).to_le_bytes());
        payload.push(45);
        payload.extend_from_slice(&[0; 23]);
        payload.extend_from_slice(b"root\0\0mysql_native_password\0");
        Raw::packet(1, &payload)
    }

    /// Logs in as root; panics unless the server says OK. Retries a 1040 for a while: the
    /// server may not have seen the flood's connections go yet.
    fn login(port: u16) -> Raw {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut raw = loop {
            let mut raw = Raw::open(port);
            let hello = raw.read().unwrap();
            if hello[0] == 10 {
                break raw;
            }
            assert!(
                error_code(&hello) == Some(1040) && Instant::now() < deadline,
                "no handshake: {hello:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        raw.stream.write_all(&Raw::login_packet()).unwrap();
        let ok = raw.read().unwrap();
        assert_eq!(ok[0], 0, "login: {ok:?}");
        raw
    }

    /// Whether the server closed the connection (reads to its end).
    fn closed(&mut self) -> bool {
        let mut sink = vec![0u8; 1 << 16];
        loop {
            match self.stream.read(&mut sink) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) => {
                    return matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
                    )
                }
            }
        }
    }
}

fn error_code(payload: &[u8]) -> Option<u16> {
    (payload.first() == Some(&0xFF)).then(|| u16::from_le_bytes([payload[1], payload[2]]))
}

/// The normal client's latencies, by phase.
#[derive(Default)]
struct Latencies {
    by_phase: Vec<Vec<Duration>>,
    failures: Vec<String>,
}

const PHASES: [&str; 4] = [
    "quiet",
    "flood past max_connections",
    "slow clients",
    "after",
];

fn measure(port: u16, phase: &AtomicUsize, stop: &AtomicBool, out: &Mutex<Latencies>) {
    let mut conn = connect(port).unwrap();
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let result: Result<Option<u64>, _> =
            conn.query_first("SELECT COUNT(*) FROM t WHERE id BETWEEN 100 AND 199");
        let took = started.elapsed();
        let mut l = out.lock().unwrap();
        match result {
            Ok(Some(100)) => {
                let p = phase.load(Ordering::Relaxed);
                l.by_phase[p].push(took);
            }
            other => l.failures.push(format!("{other:?}")),
        }
        drop(l);
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn threads_connected(admin: &mut Conn) -> u64 {
    let row: Option<(String, u64)> = admin
        .query_first("SHOW GLOBAL STATUS LIKE 'Threads_connected'")
        .unwrap();
    row.unwrap().1
}

fn print_latencies(latencies: &Latencies) {
    for (name, samples) in PHASES.iter().zip(&latencies.by_phase) {
        let mut sorted = samples.clone();
        sorted.sort();
        let at = |percent: usize| {
            sorted
                .get(sorted.len().saturating_sub(1) * percent / 100)
                .copied()
                .unwrap_or_default()
        };
        eprintln!(
            "normal client, {name}: {} queries, p50 {:.2?}, p99 {:.2?}, max {:.2?}",
            sorted.len(),
            at(50),
            at(99),
            sorted.last().copied().unwrap_or_default()
        );
    }
}

/// Phase 1: fill every slot, then knock: each extra connection gets 1040.
fn flood(port: u16) -> (usize, usize) {
    let mut held = Vec::new();
    let refused = loop {
        match connect(port) {
            Ok(conn) => held.push(conn),
            Err(mysql::Error::MySqlError(e)) => break e,
            Err(other) => panic!("connecting: {other}"),
        }
        assert!(
            held.len() <= MAX_CONNECTIONS,
            "more than max_connections accepted"
        );
    };
    assert_eq!(refused.code, 1040, "{refused:?}");
    assert_eq!(refused.message, "Too many connections");
    let knockers: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut refused = 0;
                for i in 0..50 {
                    if i % 2 == 0 {
                        match connect(port) {
                            Err(mysql::Error::MySqlError(e)) if e.code == 1040 => refused += 1,
                            other => {
                                panic!("expected 1040, got {:?}", other.map(|_| "a connection"))
                            }
                        }
                    } else {
                        // A raw connection that would never log in is refused at once too.
                        let mut raw = Raw::open(port);
                        let payload = raw.read().expect("an answer");
                        assert_eq!(error_code(&payload), Some(1040));
                        refused += 1;
                    }
                }
                refused
            })
        })
        .collect();
    let refused: usize = 1 + knockers
        .into_iter()
        .map(|k| k.join().unwrap())
        .sum::<usize>();
    // The normal client keeps a full server's last slot for a while longer.
    std::thread::sleep(Duration::from_millis(1500));
    let accepted = held.len();
    drop(held);
    (accepted, refused)
}

/// Phase 2: clients that never read a large result, trickle their login, trickle a command.
fn slow_clients(port: u16) {
    let readers: Vec<Raw> = (0..3)
        .map(|_| {
            let mut raw = Raw::login(port);
            let mut query = vec![0x03];
            query.extend_from_slice(
                b"SELECT REPEAT('x', 20000), a.id FROM fl.t a, fl.t b WHERE b.id < 20",
            );
            raw.stream.write_all(&Raw::packet(0, &query)).unwrap();
            raw
        })
        .collect();
    let started = Instant::now();
    let login_trickler = std::thread::spawn(move || {
        let mut raw = Raw::open(port);
        assert_eq!(raw.read().unwrap()[0], 10);
        for byte in Raw::login_packet() {
            if raw.stream.write_all(&[byte]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
            if started.elapsed() > Duration::from_secs(20) {
                break;
            }
        }
        // connect_timeout (3 s) cuts it long before the packet is complete.
        assert!(
            raw.closed(),
            "a login trickled byte by byte was not cut off"
        );
        started.elapsed()
    });
    let command_trickler = std::thread::spawn(move || {
        let mut raw = Raw::login(port);
        for byte in Raw::packet(0, b"\x03SET @t=1") {
            raw.stream.write_all(&[byte]).unwrap();
            std::thread::sleep(Duration::from_secs(1));
        }
        let ok = raw.read().expect("an answer to the trickled command");
        assert_eq!(ok[0], 0, "{ok:?}");
    });
    let cut_after = login_trickler.join().unwrap();
    command_trickler.join().unwrap();
    eprintln!("a login sent a byte a second was cut off after {cut_after:.1?}");
    // The server gives up on the readers after net_write_timeout (2 s here) and closes them.
    for mut reader in readers {
        assert_eq!(reader.read().unwrap(), [2], "a result set's column count");
        let closed = reader.closed();
        assert!(closed, "a client that never read was not closed");
    }
    eprintln!(
        "clients that never read their result were closed within {:.1?}",
        started.elapsed()
    );
}

#[test]
fn floods_and_slow_clients_never_starve_a_normal_client() {
    let dir = support::scratch("floods");
    let server = support::start_shale_with(
        &dir,
        &[
            &format!("--max-connections={MAX_CONNECTIONS}"),
            "--connect-timeout=3",
            "--connection-control-failed-connections-threshold=0",
        ],
    );
    let port = server.port;
    {
        let opts = OptsBuilder::new()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(port)
            .user(Some("root"))
            .pass(Some(""))
            .prefer_socket(false);
        let mut setup = Conn::new(opts).unwrap();
        setup.query_drop("CREATE DATABASE fl").unwrap();
        setup
            .query_drop("CREATE TABLE fl.t (id INT PRIMARY KEY, v VARCHAR(100))")
            .unwrap();
        let rows: Vec<String> = (0..1000)
            .map(|i| format!("({i}, REPEAT('v', 100))"))
            .collect();
        setup
            .query_drop(format!("INSERT INTO fl.t VALUES {}", rows.join(", ")))
            .unwrap();
    }
    let mut admin = connect(port).unwrap();
    admin
        .query_drop("SET GLOBAL net_write_timeout = 2")
        .unwrap();

    let phase = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let latencies = Arc::new(Mutex::new(Latencies {
        by_phase: vec![Vec::new(); PHASES.len()],
        failures: Vec::new(),
    }));
    let measurer = {
        let (phase, stop, latencies) = (phase.clone(), stop.clone(), latencies.clone());
        std::thread::spawn(move || measure(port, &phase, &stop, &latencies))
    };
    std::thread::sleep(Duration::from_millis(1500));
    let normal = threads_connected(&mut admin);

    phase.store(1, Ordering::Relaxed);
    let (accepted, refused) = flood(port);
    eprintln!(
        "flood: {accepted} more connections accepted (max_connections {MAX_CONNECTIONS}, 2 in use), {refused} refused with 1040"
    );
    // root holds SUPER, so it also gets the one connection MySQL keeps for administrators.
    assert_eq!(accepted, MAX_CONNECTIONS - 2 + 1);

    phase.store(2, Ordering::Relaxed);
    slow_clients(port);

    phase.store(3, Ordering::Relaxed);
    let deadline = Instant::now() + Duration::from_secs(30);
    while threads_connected(&mut admin) != normal {
        assert!(
            Instant::now() < deadline,
            "Threads_connected stayed at {} (was {normal})",
            threads_connected(&mut admin)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    measurer.join().unwrap();
    // Every slot is free again, unauthenticated ones included.
    // (The measurer's own close may take a moment to reach the server.)
    let mut again = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while again.len() < MAX_CONNECTIONS - 1 {
        match connect(port) {
            Ok(conn) => again.push(conn),
            Err(e) if Instant::now() < deadline => {
                eprintln!("waiting for a slot: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("only {} slots came back: {e}", again.len()),
        }
    }
    drop(again);

    let latencies = latencies.lock().unwrap();
    print_latencies(&latencies);
    assert!(latencies.failures.is_empty(), "{:?}", latencies.failures);
    for (name, samples) in PHASES.iter().zip(&latencies.by_phase) {
        assert!(
            !samples.is_empty(),
            "the normal client was not served during {name}"
        );
    }
}
