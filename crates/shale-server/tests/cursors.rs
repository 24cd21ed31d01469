//! Server-side cursors byte by byte (cursor.rs): COM_STMT_EXECUTE with CURSOR_TYPE_READ_ONLY
//! answers with the column definitions and a terminator carrying SERVER_STATUS_CURSOR_EXISTS,
//! COM_STMT_FETCH sends the rows in pieces and SERVER_STATUS_LAST_ROW_SENT at the end, other
//! commands run while a cursor is open, and COM_STMT_RESET, COM_STMT_CLOSE and a new execution
//! close it (1421, 1243 afterwards). With and without CLIENT_DEPRECATE_EOF. A real client
//! (libmariadb's cursor API) is in crates/shale/tests/wire.rs.

// Packet and flag names as the protocol documentation spells them (lib.rs says why).
#![allow(clippy::doc_markdown)]

mod support;

mod wire_client;

use wire_client::{Client, DEPRECATE_EOF, MULTI_RESULTS};

const CURSOR_EXISTS: u16 = 64;
const LAST_ROW_SENT: u16 = 128;

fn error_code(packet: &[u8]) -> u16 {
    assert_eq!(packet[0], 0xFF, "not an ERR packet: {packet:?}");
    u16::from_le_bytes([packet[1], packet[2]])
}

/// The status flags of an EOF_Packet, or of an `0xFE` OK_Packet (one-byte affected rows and
/// last insert id, as these are 0).
fn end_status(packet: &[u8], deprecate_eof: bool) -> u16 {
    assert_eq!(packet[0], 0xFE, "not a terminator: {packet:?}");
    if deprecate_eof {
        u16::from_le_bytes([packet[3], packet[4]])
    } else {
        assert_eq!(packet.len(), 5, "EOF_Packet");
        u16::from_le_bytes([packet[3], packet[4]])
    }
}

fn prepare(c: &mut Client, sql: &str, deprecate_eof: bool) -> u32 {
    let mut p = vec![0x16];
    p.extend_from_slice(sql.as_bytes());
    c.command(&p);
    let ok = c.payload();
    assert_eq!(ok[0], 0, "{ok:?}");
    let columns = u16::from_le_bytes([ok[5], ok[6]]);
    let params = u16::from_le_bytes([ok[7], ok[8]]);
    for (n, _) in [(params, 0), (columns, 1)] {
        for _ in 0..n {
            c.payload();
        }
        if n > 0 && !deprecate_eof {
            assert_eq!(c.payload()[0], 0xFE);
        }
    }
    u32::from_le_bytes([ok[1], ok[2], ok[3], ok[4]])
}

fn execute(c: &mut Client, id: u32, flags: u8) {
    let mut p = vec![0x17];
    p.extend_from_slice(&id.to_le_bytes());
    p.push(flags);
    p.extend_from_slice(&1u32.to_le_bytes());
    c.command(&p);
}

fn fetch(c: &mut Client, id: u32, rows: u32) {
    let mut p = vec![0x1C];
    p.extend_from_slice(&id.to_le_bytes());
    p.extend_from_slice(&rows.to_le_bytes());
    c.command(&p);
}

/// Opens a cursor over `select rows N`; checks the reply has no rows.
fn open(c: &mut Client, id: u32, deprecate_eof: bool) {
    execute(c, id, 1);
    assert_eq!(c.payload(), [2], "column count");
    assert_eq!(&c.payload()[..4], b"\x03def");
    assert_eq!(&c.payload()[..4], b"\x03def");
    let status = end_status(&c.payload(), deprecate_eof);
    assert_ne!(status & CURSOR_EXISTS, 0);
    assert_eq!(status & LAST_ROW_SENT, 0);
    assert!(c.drained(), "no rows after the column definitions");
}

/// Fetches `n` and expects rows `from..to` (binary: 0x00, bitmap, u64, lenenc string), then
/// returns the terminator's status.
fn fetch_rows(
    c: &mut Client,
    id: u32,
    n: u32,
    rows: std::ops::Range<u64>,
    deprecate_eof: bool,
) -> u16 {
    fetch(c, id, n);
    for i in rows {
        let row = c.payload();
        assert_eq!(&row[..2], &[0, 0], "row {i}: {row:?}");
        assert_eq!(&row[2..10], &i.to_le_bytes(), "row {i}");
        assert_eq!(&row[11..], format!("row-{i}").as_bytes());
    }
    let status = end_status(&c.payload(), deprecate_eof);
    assert!(c.drained());
    assert_ne!(status & CURSOR_EXISTS, 0);
    status
}

fn cursor_session(deprecate_eof: bool) {
    let addr = support::start(64 << 20);
    let caps = MULTI_RESULTS | if deprecate_eof { DEPRECATE_EOF } else { 0 };
    let mut c = Client::connect(addr, caps);
    let id = prepare(&mut c, "select rows 5", deprecate_eof);
    // Nothing to fetch before an execution with a cursor.
    fetch(&mut c, id, 1);
    let err = c.payload();
    assert_eq!(error_code(&err), 1421);
    assert_eq!(
        String::from_utf8_lossy(&err[9..]),
        format!("The statement ({id}) has no open cursor.")
    );

    open(&mut c, id, deprecate_eof);
    assert_eq!(
        fetch_rows(&mut c, id, 2, 0..2, deprecate_eof) & LAST_ROW_SENT,
        0
    );
    // Another command while the cursor is open.
    c.command(b"\x03select 1");
    assert_eq!(c.payload(), [1]);
    while c.payload()[0] != 0xFE {}
    if !deprecate_eof {
        while c.payload()[0] != 0xFE {}
    }
    assert_eq!(
        fetch_rows(&mut c, id, 2, 2..4, deprecate_eof) & LAST_ROW_SENT,
        0
    );
    let last = fetch_rows(&mut c, id, 100, 4..5, deprecate_eof);
    assert_ne!(last & LAST_ROW_SENT, 0);
    // The cursor closed after its last row.
    fetch(&mut c, id, 1);
    assert_eq!(error_code(&c.payload()), 1421);

    // A new execution starts over; COM_STMT_RESET closes the cursor.
    open(&mut c, id, deprecate_eof);
    fetch_rows(&mut c, id, 1, 0..1, deprecate_eof);
    open(&mut c, id, deprecate_eof);
    fetch_rows(&mut c, id, 1, 0..1, deprecate_eof);
    let mut reset = vec![0x1A];
    reset.extend_from_slice(&id.to_le_bytes());
    c.command(&reset);
    assert_eq!(c.payload()[0], 0x00);
    fetch(&mut c, id, 1);
    assert_eq!(error_code(&c.payload()), 1421);

    // An execution without the flag sends the rows at once, and opens no cursor.
    execute(&mut c, id, 0);
    assert_eq!(c.payload(), [2]);
    // Two column definitions, an EOF without DEPRECATE_EOF, five rows, the end.
    let packets = 2 + usize::from(!deprecate_eof) + 5;
    for _ in 0..packets {
        c.payload();
    }
    let status = end_status(&c.payload(), deprecate_eof);
    assert_eq!(status & (CURSOR_EXISTS | LAST_ROW_SENT), 0);
    assert!(c.drained());
    fetch(&mut c, id, 1);
    assert_eq!(error_code(&c.payload()), 1421);

    // An empty result: the first fetch says it was the last.
    let empty = prepare(&mut c, "select rows 0", deprecate_eof);
    open(&mut c, empty, deprecate_eof);
    assert_ne!(
        fetch_rows(&mut c, empty, 10, 0..0, deprecate_eof) & LAST_ROW_SENT,
        0
    );

    // A statement without a result set answers OK and opens nothing.
    let insert = prepare(&mut c, "insert into t values (1)", deprecate_eof);
    execute(&mut c, insert, 1);
    assert_eq!(c.payload()[0], 0x00);
    fetch(&mut c, insert, 1);
    assert_eq!(error_code(&c.payload()), 1421);

    // COM_STMT_CLOSE drops the statement and its cursor; a short fetch is malformed.
    open(&mut c, id, deprecate_eof);
    let mut close = vec![0x19];
    close.extend_from_slice(&id.to_le_bytes());
    c.command(&close);
    fetch(&mut c, id, 1);
    assert_eq!(error_code(&c.payload()), 1243);
    c.command(&[0x1C, 1, 0]);
    assert_eq!(error_code(&c.payload()), 1835);
    c.command(b"\x0e");
    assert_eq!(c.payload()[0], 0x00);
}

#[test]
fn cursors_with_deprecate_eof() {
    cursor_session(true);
}

#[test]
fn cursors_with_eof_packets() {
    cursor_session(false);
}

/// `select rows 10` as binary rows: 0x00, a one-byte NULL bitmap, the u64, and `row-i` as a
/// lenenc string: 16 bytes a row, and a cursor counts 8 more for each (cursor.rs).
const TEN_ROWS_BYTES: u64 = 10 * (16 + 8);

/// A cursor's rows count against `shale_query_memory`: exactly at the limit the cursor
/// opens; one byte less and the execution fails with 3170, and the statement has no cursor.
#[test]
fn a_cursor_holds_at_most_shale_query_memory() {
    let addr = support::start(64 << 20);
    let mut c = Client::connect(addr, MULTI_RESULTS | DEPRECATE_EOF);
    let id = prepare(&mut c, "select rows 10", true);

    c.command(format!("\x03set shale_query_memory = {}", TEN_ROWS_BYTES - 1).as_bytes());
    assert_eq!(c.payload()[0], 0x00);
    execute(&mut c, id, 1);
    let err = c.payload();
    assert_eq!(error_code(&err), 3170);
    assert_eq!(&err[3..9], b"#HY000");
    assert_eq!(
        String::from_utf8_lossy(&err[9..]),
        format!(
            "Memory capacity of {} bytes for 'shale_query_memory' exceeded by the cursor's \
             rows; Shale does not spill to disk: raise shale_query_memory or fetch without a \
             cursor",
            TEN_ROWS_BYTES - 1
        )
    );
    assert!(c.drained(), "nothing after the ERR");
    fetch(&mut c, id, 1);
    assert_eq!(error_code(&c.payload()), 1421, "no cursor was opened");

    c.command(format!("\x03set shale_query_memory = {TEN_ROWS_BYTES}").as_bytes());
    assert_eq!(c.payload()[0], 0x00);
    open(&mut c, id, true);
    let last = fetch_rows(&mut c, id, 10, 0..10, true);
    assert_ne!(last & LAST_ROW_SENT, 0);

    // Without a cursor the rows stream, and the limit does not apply.
    c.command(b"\x03set shale_query_memory = 1");
    assert_eq!(c.payload()[0], 0x00);
    execute(&mut c, id, 0);
    assert_eq!(c.payload(), [2]);
    for _ in 0..2 + 10 {
        c.payload();
    }
    assert_eq!(c.payload()[0], 0xFE);
}
