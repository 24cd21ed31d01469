//! The protocol byte by byte, with a minimal client written here: prepared statements and
//! their binary encodings (parameter types, NULL bitmap, rebinding, long data), result-set
//! terminators with and without `CLIENT_DEPRECATE_EOF`, 16 MiB packet joins, and hostile input
//! (bad sequence ids, oversized and truncated packets, unknown commands, a panicking statement)
//! that must cost one connection at most.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use shale_server::native_scramble_response;

const PROTOCOL_41: u32 = 1 << 9;
const SECURE_CONNECTION: u32 = 1 << 15;
const MULTI_STATEMENTS: u32 = 1 << 16;
const MULTI_RESULTS: u32 = 1 << 17;
const PLUGIN_AUTH: u32 = 1 << 19;
const DEPRECATE_EOF: u32 = 1 << 24;
const INTERACTIVE: u32 = 1 << 10;

struct Client {
    stream: TcpStream,
}

impl Client {
    fn read(&mut self) -> Option<(u8, Vec<u8>)> {
        let mut header = [0u8; 4];
        self.stream.read_exact(&mut header).ok()?;
        let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
        let mut payload = vec![0; len];
        self.stream.read_exact(&mut payload).ok()?;
        Some((header[3], payload))
    }

    fn payload(&mut self) -> Vec<u8> {
        self.read().expect("a packet").1
    }

    fn write(&mut self, seq: u8, payload: &[u8]) {
        let mut out = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        out.push(seq);
        out.extend_from_slice(payload);
        self.stream.write_all(&out).unwrap();
    }

    fn connect(addr: SocketAddr, capabilities: u32) -> Client {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut c = Client { stream };
        let hello = c.payload();
        assert_eq!(hello[0], 10);
        let version_end = hello.iter().position(|&b| b == 0).unwrap();
        let mut scramble = hello[version_end + 5..version_end + 13].to_vec();
        let rest = version_end + 13 + 1 + 2 + 1 + 2 + 2 + 1 + 10;
        scramble.extend_from_slice(&hello[rest..rest + 12]);
        let caps = capabilities | PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH;
        let mut p = caps.to_le_bytes().to_vec();
        p.extend_from_slice(&(1u32 << 24).to_le_bytes());
        p.push(45);
        p.extend_from_slice(&[0; 23]);
        p.extend_from_slice(b"root\0");
        let auth = native_scramble_response("pw", &scramble);
        p.push(auth.len() as u8);
        p.extend_from_slice(&auth);
        p.extend_from_slice(b"mysql_native_password\0");
        c.write(1, &p);
        let (seq, ok) = c.read().unwrap();
        assert_eq!((seq, ok[0]), (2, 0x00), "{ok:?}");
        c
    }

    /// Sends a command and returns the first reply packet.
    fn command(&mut self, payload: &[u8]) -> Vec<u8> {
        self.write(0, payload);
        self.payload()
    }

    /// The server closed the connection: end of stream, not a read timeout.
    fn at_eof(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(self.stream.read(&mut byte), Ok(0))
            || matches!(self.stream.read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset)
    }

    fn closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(self.stream.read(&mut byte), Ok(0) | Err(_))
    }
}

fn error_code(packet: &[u8]) -> u16 {
    assert_eq!(packet[0], 0xFF, "not an ERR packet: {packet:?}");
    u16::from_le_bytes([packet[1], packet[2]])
}

/// `COM_STMT_EXECUTE`'s body for `id` with one NULL bitmap byte and optional types.
fn execute(id: u32, bitmap: u8, types: Option<&[(u8, u8)]>, values: &[u8]) -> Vec<u8> {
    let mut p = vec![0x17];
    p.extend_from_slice(&id.to_le_bytes());
    p.push(0);
    p.extend_from_slice(&1u32.to_le_bytes());
    p.push(bitmap);
    if let Some(types) = types {
        p.push(1);
        for &(t, f) in types {
            p.extend_from_slice(&[t, f]);
        }
    } else {
        p.push(0);
    }
    p.extend_from_slice(values);
    p
}

#[test]
fn prepared_statements_round_trip_binary_values() {
    let addr = support::start(64 << 20);
    let mut c = Client::connect(addr, DEPRECATE_EOF | MULTI_RESULTS);
    let mut prepare = vec![0x16];
    prepare.extend_from_slice(b"select ?, ?, ?, ?");
    let ok = c.command(&prepare);
    assert_eq!(ok[0], 0);
    let id = u32::from_le_bytes([ok[1], ok[2], ok[3], ok[4]]);
    assert_eq!(u16::from_le_bytes([ok[5], ok[6]]), 4, "columns");
    assert_eq!(u16::from_le_bytes([ok[7], ok[8]]), 4, "params");
    // 4 parameter and 4 column definitions, no EOF packets under DEPRECATE_EOF.
    for _ in 0..8 {
        assert_eq!(&c.payload()[..4], b"\x03def");
    }

    let mut values = (-3i64).to_le_bytes().to_vec();
    values.extend_from_slice(b"\x03abc");
    values.extend_from_slice(&1.25f64.to_le_bytes());
    let types = [(8, 0), (253, 0), (5, 0), (253, 0)];
    let first = c.command(&execute(id, 0b1000, Some(&types), &values));
    assert_eq!(first, [4]);
    for _ in 0..4 {
        c.payload();
    }
    let row = c.payload();
    let mut expected = vec![0x00, 0b10_0000];
    expected.extend_from_slice(&values);
    assert_eq!(row, expected);
    let end = c.payload();
    assert_eq!(end[0], 0xFE, "OK packet ending the result set");

    // Types not sent again: the previous ones are reused. Long data replaces parameter 1.
    let mut long = vec![0x18];
    long.extend_from_slice(&id.to_le_bytes());
    long.extend_from_slice(&1u16.to_le_bytes());
    long.extend_from_slice(b"long");
    c.write(0, &long);
    let mut values = 7i64.to_le_bytes().to_vec();
    values.extend_from_slice(&2.0f64.to_le_bytes());
    values.extend_from_slice(b"\x01z");
    assert_eq!(c.command(&execute(id, 0, None, &values)), [4]);
    for _ in 0..4 {
        c.payload();
    }
    let mut expected = vec![0x00, 0];
    expected.extend_from_slice(&7i64.to_le_bytes());
    expected.extend_from_slice(b"\x04long");
    expected.extend_from_slice(&2.0f64.to_le_bytes());
    expected.extend_from_slice(b"\x01z");
    assert_eq!(c.payload(), expected);
    c.payload();

    // Statement -1 is the last prepared one; unknown ids and truncated bodies are errors
    // that leave the connection usable.
    assert_eq!(c.command(&execute(u32::MAX, 0b1111, None, &[]))[0], 4);
    for _ in 0..6 {
        c.payload();
    }
    assert_eq!(error_code(&c.command(&execute(99, 0, None, &[]))), 1243);
    let truncated = execute(id, 0, Some(&types), &[1, 2, 3]);
    assert_eq!(error_code(&c.command(&truncated)), 1835);
    let mut close = vec![0x19];
    close.extend_from_slice(&id.to_le_bytes());
    c.write(0, &close);
    assert_eq!(error_code(&c.command(&execute(id, 0, None, &[]))), 1243);
    assert_eq!(c.command(&[0x0E])[0], 0x00, "COM_PING");
}

#[test]
fn result_sets_use_eof_packets_for_old_clients_and_flag_more_results() {
    let addr = support::start(64 << 20);
    // Without CLIENT_MULTI_STATEMENTS a second statement is a syntax error and nothing runs.
    let mut c = Client::connect(addr, MULTI_RESULTS);
    assert_eq!(error_code(&c.command(b"\x03begin; select 1")), 1064);
    let ok = c.command(&[0x0E]);
    assert_eq!(
        u16::from_le_bytes([ok[3], ok[4]]) & 1,
        0,
        "no transaction began"
    );
    assert_eq!(c.command(b"\x03select 1; -- one statement"), [1]);
    for _ in 0..4 {
        c.payload();
    }

    let mut c = Client::connect(addr, MULTI_RESULTS | MULTI_STATEMENTS);
    assert_eq!(c.command(b"\x03select 1; begin; select 1"), [1]);
    c.payload();
    assert_eq!(c.payload()[0], 0xFE, "EOF after the column definitions");
    assert_eq!(c.payload(), b"\x011");
    let eof = c.payload();
    assert_eq!(eof.len(), 5);
    let status = u16::from_le_bytes([eof[3], eof[4]]);
    assert_eq!(status & 8, 8, "SERVER_MORE_RESULTS_EXISTS");
    let ok = c.payload();
    assert_eq!(ok[0], 0);
    let status = u16::from_le_bytes([ok[3], ok[4]]);
    assert_eq!(status & (8 | 1), 8 | 1, "MORE_RESULTS and IN_TRANS");
    assert_eq!(c.payload(), [1]);
    c.payload();
    c.payload();
    assert_eq!(c.payload(), b"\x011");
    let eof = c.payload();
    let status = u16::from_le_bytes([eof[3], eof[4]]);
    assert_eq!(
        status & (8 | 1 | 2),
        1 | 2,
        "last result: IN_TRANS | AUTOCOMMIT"
    );
}

#[test]
fn a_query_over_16_mib_is_joined() {
    let addr = support::start(64 << 20);
    let mut c = Client::connect(addr, DEPRECATE_EOF);
    let mut query = b"\x03select 1".to_vec();
    query.resize(0xFF_FFFF + 100, b' ');
    let mut out = 0xFF_FFFFu32.to_le_bytes()[..3].to_vec();
    out.push(0);
    out.extend_from_slice(&query[..0xFF_FFFF]);
    out.extend_from_slice(&100u32.to_le_bytes()[..3]);
    out.push(1);
    out.extend_from_slice(&query[0xFF_FFFF..]);
    c.stream.write_all(&out).unwrap();
    let (seq, count) = c.read().unwrap();
    assert_eq!((seq, count), (2, vec![1]));
}

#[test]
fn hostile_packets_cost_only_their_connection() {
    let addr = support::start(1 << 20);
    // Unknown command and empty COM_QUERY-less garbage: errors, connection stays.
    let mut c = Client::connect(addr, DEPRECATE_EOF);
    assert_eq!(error_code(&c.command(&[0x55, 1, 2])), 1047);
    assert_eq!(
        error_code(&c.command(&[0x1C, 0, 0])),
        1835,
        "a truncated COM_STMT_FETCH"
    );
    assert_eq!(c.command(&[0x0E])[0], 0);
    // Statement text that is not UTF-8 is refused, never silently altered.
    assert_eq!(error_code(&c.command(b"\x03select \xFF")), 1300);
    assert_eq!(error_code(&c.command(b"\x16select \xFF")), 1300);
    assert_eq!(c.command(b"\x03select 1"), [1]);
    for _ in 0..3 {
        c.payload();
    }

    // A sequence id out of order: 1156, then the server closes.
    let mut c = Client::connect(addr, DEPRECATE_EOF);
    c.write(5, b"\x0E");
    assert_eq!(error_code(&c.payload()), 1156);
    assert!(c.closed());

    // A packet above max_allowed_packet: 1153 before the body is read, then close.
    let mut c = Client::connect(addr, DEPRECATE_EOF);
    c.stream.write_all(&[0xFF, 0xFF, 0xFF, 0, 0x03]).unwrap();
    assert_eq!(error_code(&c.payload()), 1153);
    assert!(c.closed());

    // An empty command packet: malformed, close.
    let mut c = Client::connect(addr, DEPRECATE_EOF);
    assert_eq!(error_code(&c.command(&[])), 1835);
    assert!(c.closed());

    // A panic inside the SQL layer: 1105 on that connection only.
    let mut c = Client::connect(addr, DEPRECATE_EOF);
    assert_eq!(error_code(&c.command(b"\x03panic")), 1105);
    assert!(c.closed());

    // Garbage instead of a handshake response, and a truncated one.
    for garbage in [&b"GET / HTTP/1.1\r\n\r\n"[..], b"\x02\x00\x00\x01\x00\x02"] {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut c = Client { stream: s };
        c.payload();
        c.stream.write_all(garbage).unwrap();
        match c.read() {
            None => {}
            Some((_, p)) => {
                assert_eq!(error_code(&p), 1043);
                assert!(c.closed());
            }
        }
    }
    // Half a header, then the client goes away.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&[1, 0]).unwrap();
    drop(s);

    // Other connections never noticed.
    let mut c = Client::connect(addr, DEPRECATE_EOF);
    assert_eq!(c.command(b"\x03select 1"), [1]);
}

#[test]
fn idle_connections_close_after_wait_timeout() {
    let addr = support::start_with(shale_server::ServerOptions {
        wait_timeout: Duration::from_millis(300),
        ..shale_server::ServerOptions::default()
    });
    let mut c = Client::connect(addr, DEPRECATE_EOF);
    assert_eq!(c.command(&[0x0E])[0], 0);
    std::thread::sleep(Duration::from_millis(800));
    assert!(c.closed());
}

#[test]
fn interactive_clients_get_interactive_timeout() {
    let addr = support::start_with(shale_server::ServerOptions {
        wait_timeout: Duration::from_millis(300),
        interactive_timeout: Duration::from_secs(60),
        ..shale_server::ServerOptions::default()
    });
    let mut interactive = Client::connect(addr, DEPRECATE_EOF | INTERACTIVE);
    let mut batch = Client::connect(addr, DEPRECATE_EOF);
    std::thread::sleep(Duration::from_millis(800));
    assert!(batch.at_eof());
    assert_eq!(interactive.command(&[0x0E])[0], 0);
}

#[test]
fn connections_past_max_connections_get_1040_and_a_freed_slot_is_reused() {
    let addr = support::start_with(shale_server::ServerOptions {
        max_connections: 2,
        ..shale_server::ServerOptions::default()
    });
    let mut first = Client::connect(addr, DEPRECATE_EOF);
    let _second = Client::connect(addr, DEPRECATE_EOF);
    // One more is let in for an administrator's login (here nobody is one: the fake
    // backend's accounts hold no CONNECTION_ADMIN, and the check after login refuses them).
    let mut extra = Client {
        stream: TcpStream::connect(addr).unwrap(),
    };
    extra
        .stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(
        extra.payload()[0],
        10,
        "the extra connection gets a handshake"
    );
    let mut third = Client {
        stream: TcpStream::connect(addr).unwrap(),
    };
    third
        .stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let refused = third.payload();
    assert_eq!(error_code(&refused), 1040);
    // Before the handshake, without the `#08004` marker of protocol 4.1 (as MySQL).
    assert_eq!(&refused[3..], b"Too many connections");
    assert!(third.at_eof());
    // COM_QUIT frees a slot (once the server has seen it go; `extra` still holds the
    // administrator's).
    first.write(0, &[0x01]);
    assert!(first.at_eof());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let mut probe = Client {
            stream: TcpStream::connect(addr).unwrap(),
        };
        probe
            .stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        if probe.payload()[0] == 10 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the slot was never freed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_client_that_never_finishes_the_handshake_is_dropped_after_connect_timeout() {
    let addr = support::start_with(shale_server::ServerOptions {
        connect_timeout: Duration::from_millis(300),
        ..shale_server::ServerOptions::default()
    });
    let mut silent = Client {
        stream: TcpStream::connect(addr).unwrap(),
    };
    silent
        .stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(silent.payload()[0], 10);
    assert!(silent.at_eof());
}

#[test]
fn shutdown_lets_a_running_command_finish_and_closes_idle_connections() {
    let server = support::start_stoppable(shale_server::ServerOptions {
        shutdown_timeout: Duration::from_secs(10),
        ..shale_server::ServerOptions::default()
    });
    let mut busy = Client::connect(server.addr, DEPRECATE_EOF);
    let mut idle = Client::connect(server.addr, DEPRECATE_EOF);
    busy.write(0, b"\x03sleep 700");
    std::thread::sleep(Duration::from_millis(200));
    server.stop.send(()).unwrap();
    // The running command's whole reply arrives, then the connection closes.
    assert_eq!(busy.payload(), [1]);
    busy.payload();
    assert_eq!(busy.payload(), b"\x03700");
    assert_eq!(busy.payload()[0], 0xFE);
    assert!(busy.closed());
    assert!(idle.closed());
    let report = server.done.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(report.abandoned, 0);
    assert!(
        TcpStream::connect(server.addr).is_err(),
        "no longer listening"
    );
}

#[test]
fn a_client_that_stops_reading_is_closed_after_net_write_timeout_and_a_slow_reader_is_served() {
    let addr = support::start_with(shale_server::ServerOptions {
        net_write_timeout: Duration::from_millis(500),
        ..shale_server::ServerOptions::default()
    });
    // About 45 MB of rows: far more than the socket buffers hold.
    let rows = 2_000_000;
    let mut stalled = Client::connect(addr, DEPRECATE_EOF);
    stalled.write(0, format!("\x03select rows {rows}").as_bytes());
    std::thread::sleep(Duration::from_millis(2500));
    let mut received = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match stalled.stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => received += n,
            Err(e) => panic!("the stalled client's connection was not closed: {e}"),
        }
    }
    assert!(
        received < 30 << 20,
        "the whole result ({received} bytes) arrived: the stalled write was not given up"
    );

    // A client that reads slowly but steadily gets everything.
    let mut slow = Client::connect(addr, DEPRECATE_EOF);
    slow.write(0, b"\x03select rows 20000");
    let mut packets = 0;
    loop {
        let payload = slow.payload();
        packets += 1;
        if packets % 2000 == 0 {
            std::thread::sleep(Duration::from_millis(200));
        }
        if payload[0] == 0xFE && payload.len() < 9 {
            break;
        }
    }
    // The column count, two column definitions and 20,000 rows before the final OK.
    assert_eq!(packets, 1 + 2 + 20_000 + 1);
    assert_eq!(slow.command(b"\x03select 1"), [1]);
}
