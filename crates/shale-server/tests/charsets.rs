//! Character set conversion byte by byte (shale-sql's charset.rs, statement_text.rs,
//! results_charset.rs), over the fake SQL layer: statement text and string parameters in
//! `character_set_client` reach the SQL layer as UTF-8, `_binary'...'` literals with any bytes
//! arrive as `X'..'`, and text results, column definitions and error messages go out in
//! `character_set_results`, binary columns untouched. Real clients (PyMySQL, the mariadb
//! client) against the real server are in crates/shale/tests/charsets.rs.

// Packet and flag names as the protocol documentation spells them (lib.rs says why).
#![allow(clippy::doc_markdown)]

mod support;

mod wire_client;

use wire_client::{Client, DEPRECATE_EOF, MULTI_RESULTS};

fn connect() -> Client {
    let addr = support::start(64 << 20);
    Client::connect(addr, MULTI_RESULTS | DEPRECATE_EOF)
}

fn query(c: &mut Client, sql: &[u8]) {
    let mut p = vec![0x03];
    p.extend_from_slice(sql);
    c.command(&p);
}

fn ok(c: &mut Client, sql: &[u8]) {
    query(c, sql);
    let reply = c.payload();
    assert_eq!(reply[0], 0x00, "{reply:?}");
}

/// One lenenc string (short ones only) and what follows it.
fn lenenc(bytes: &[u8]) -> (&[u8], &[u8]) {
    let n = usize::from(bytes[0]);
    assert!(n < 251, "a short string");
    (&bytes[1..=n], &bytes[1 + n..])
}

/// A ColumnDefinition41's name, collation id and length.
type Column = (Vec<u8>, u16, u32);

fn column_definition(packet: &[u8]) -> Column {
    let mut rest = packet;
    let mut strings = Vec::new();
    for _ in 0..6 {
        let (s, r) = lenenc(rest);
        strings.push(s.to_vec());
        rest = r;
    }
    assert_eq!(rest[0], 0x0C);
    let charset = u16::from_le_bytes([rest[1], rest[2]]);
    let length = u32::from_le_bytes([rest[3], rest[4], rest[5], rest[6]]);
    (strings.swap_remove(4), charset, length)
}

/// A one-row text result: its column definitions and values.
fn one_row(c: &mut Client, sql: &[u8]) -> (Vec<Column>, Vec<Vec<u8>>) {
    query(c, sql);
    let count = c.payload();
    assert!(count[0] != 0xFF, "{}", String::from_utf8_lossy(&count));
    let columns: Vec<_> = (0..count[0])
        .map(|_| column_definition(&c.payload()))
        .collect();
    let row = c.payload();
    let mut values = Vec::new();
    let mut rest = &row[..];
    for _ in 0..columns.len() {
        let (v, r) = lenenc(rest);
        values.push(v.to_vec());
        rest = r;
    }
    assert_eq!(c.payload()[0], 0xFE);
    assert!(c.drained());
    (columns, values)
}

fn error(c: &mut Client) -> (u16, Vec<u8>) {
    let err = c.payload();
    assert_eq!(err[0], 0xFF, "{err:?}");
    (u16::from_le_bytes([err[1], err[2]]), err[9..].to_vec())
}

#[test]
fn text_results_go_out_in_character_set_results() {
    let mut c = connect();
    let text = "café €😀".as_bytes();
    // utf8mb4 (or unset): nothing changes.
    let (columns, values) = one_row(&mut c, b"select text");
    assert_eq!(columns[0], ("café".into(), 45, 80));
    assert_eq!(values, [text, text]);

    ok(&mut c, b"set character_set_results = latin1");
    let (columns, values) = one_row(&mut c, b"select text");
    // The text column: latin1's collation, 80 / 4 characters of 1 byte, its name in latin1.
    assert_eq!(columns[0], (b"caf\xE9".to_vec(), 8, 20));
    // The BLOB column keeps its binary collation.
    assert_eq!((columns[1].1, columns[1].2), (63, 65_535));
    assert_eq!(values[0], b"caf\xE9 \x80?");
    assert_eq!(values[1], text, "binary values are never converted");

    ok(&mut c, b"set character_set_results = utf8mb3");
    let (columns, values) = one_row(&mut c, b"select text");
    assert_eq!((columns[0].1, columns[0].2), (33, 60));
    assert_eq!(values[0], "café €?".as_bytes());

    ok(&mut c, b"set character_set_results = null");
    let (columns, values) = one_row(&mut c, b"select text");
    assert_eq!(columns[0].1, 45);
    assert_eq!(values[0], text);
}

#[test]
fn error_messages_go_out_in_character_set_results() {
    let mut c = connect();
    query(&mut c, "fail café€".as_bytes());
    assert_eq!(
        error(&mut c),
        (1146, "Table 'db.café€' doesn't exist".into())
    );
    ok(&mut c, b"set character_set_results = latin1");
    query(&mut c, "fail café€".as_bytes());
    assert_eq!(
        error(&mut c),
        (1146, b"Table 'db.caf\xE9\x80' doesn't exist".to_vec())
    );
}

#[test]
fn statement_text_arrives_as_utf8() {
    let mut c = connect();
    // A utf8mb4 client's raw bytes in a _binary literal, with PyMySQL's escapes.
    let (_, values) = one_row(&mut c, b"echo _binary'\xFF\\0\xE9\\''''");
    assert_eq!(values[0], b"X'FF00E92727'");
    // So does a plain literal that is not UTF-8 (PyMySQL's `bytes` without `_binary`).
    let (_, values) = one_row(&mut c, b"echo '\xE9'");
    assert_eq!(values[0], b"X'E9'");
    // Invalid UTF-8 outside literals is MySQL's 1300.
    query(&mut c, b"echo \xE9");
    assert_eq!(
        error(&mut c),
        (1300, b"Invalid utf8mb4 character string: 'E9'".to_vec())
    );

    ok(&mut c, b"set character_set_client = latin1");
    let (_, values) = one_row(
        &mut c,
        b"echo 'caf\xE9 \x80', _binary'\xE9', _utf8mb4'\xC3\xA9'",
    );
    assert_eq!(values[0], "'café €', X'E9', _utf8mb4'é'".as_bytes());
}

/// COM_STMT_EXECUTE of statement `id` with new-params-bound types and string values.
fn execute(c: &mut Client, id: u32, params: &[(u8, &[u8])]) {
    let mut p = vec![0x17];
    p.extend_from_slice(&id.to_le_bytes());
    p.push(0);
    p.extend_from_slice(&1u32.to_le_bytes());
    p.push(0); // NULL bitmap (at most 8 parameters here).
    p.push(1);
    for (type_code, _) in params {
        p.extend_from_slice(&[*type_code, 0]);
    }
    for (_, value) in params {
        p.push(u8::try_from(value.len()).unwrap());
        p.extend_from_slice(value);
    }
    c.command(&p);
}

#[test]
fn string_parameters_arrive_in_character_set_client() {
    let mut c = connect();
    ok(&mut c, b"set character_set_client = latin1");
    c.command(b"\x16select ?, ?");
    let prepared = c.payload();
    let id = u32::from_le_bytes([prepared[1], prepared[2], prepared[3], prepared[4]]);
    for _ in 0..4 {
        c.payload();
    }
    // VAR_STRING is converted; a BLOB-typed parameter is binary, as MySQL takes it.
    execute(&mut c, id, &[(253, b"caf\xE9"), (252, b"caf\xE9")]);
    assert_eq!(c.payload(), [2]);
    c.payload();
    c.payload();
    let row = c.payload();
    assert_eq!(&row[..2], [0, 0]);
    let (first, rest) = lenenc(&row[2..]);
    assert_eq!(first, "café".as_bytes());
    assert_eq!(lenenc(rest).0, b"caf\xE9");
}
