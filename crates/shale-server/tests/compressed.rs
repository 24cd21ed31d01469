//! The compressed protocol (CLIENT_COMPRESS) byte by byte, with a minimal client written
//! here: the login's OK plain and everything after it compressed, several packets in one
//! compressed packet, a result set of many compressed packets whose sequence ids wrap, a
//! 16 MiB - 1 packet each way (split into a full chunk and an empty one, spanning compressed
//! packets), prepared statements, and a compressed packet out of order closing the
//! connection. Real clients (mariadb --compress, MySQLdb, sysbench) are in
//! crates/shale/tests/wire.rs.

// Packet and flag names as the protocol documentation spells them (lib.rs says why).
#![allow(clippy::doc_markdown)]

mod support;

mod wire_client;

use std::io::Write as _;

use shale_server::native_scramble_response;
use wire_client::{Client, COMPRESS, DEPRECATE_EOF, MAX_CHUNK, MULTI_RESULTS, ZSTD};

#[test]
fn a_small_reply_shares_one_compressed_packet_and_ids_restart_per_command() {
    let addr = support::start(64 << 20);
    let mut c = Client::connect(addr, COMPRESS | DEPRECATE_EOF | MULTI_RESULTS);
    for _ in 0..3 {
        c.headers.clear();
        c.command(b"\x03select 1");
        assert_eq!(c.payload(), [1], "one column");
        assert_eq!(&c.payload()[..4], b"\x03def");
        assert_eq!(c.payload(), b"\x011");
        assert_eq!(c.payload()[0], 0xFE, "the OK that ends the result set");
        assert!(c.drained());
        // The command went as compressed packet 0; four packets came back in packet 1 (54
        // bytes, sent as they are: zlib does not shrink them).
        assert_eq!(c.headers, [(54, 1, 0)]);
    }
    // A short reply goes uncompressed (inflated length 0).
    c.headers.clear();
    c.command(b"\x0e");
    assert_eq!(c.payload()[0], 0x00);
    assert_eq!(c.headers, [(11, 1, 0)]);
}

#[test]
fn a_large_result_spans_compressed_packets_whose_ids_wrap() {
    let addr = support::start(64 << 20);
    let mut c = Client::connect(addr, COMPRESS | DEPRECATE_EOF | MULTI_RESULTS);
    let rows = 400_000u64;
    c.command(format!("\x03select rows {rows}").as_bytes());
    assert_eq!(c.payload(), [2]);
    c.payload();
    c.payload();
    let mut inner_seq = 4u8;
    for i in 0..rows {
        let (seq, row) = c.packet();
        assert_eq!(seq, inner_seq, "inner ids continue under compression");
        inner_seq = inner_seq.wrapping_add(1);
        let n = i.to_string();
        let s = format!("row-{i}");
        let mut expected = vec![n.len() as u8];
        expected.extend_from_slice(n.as_bytes());
        expected.push(s.len() as u8);
        expected.extend_from_slice(s.as_bytes());
        assert_eq!(row, expected, "row {i}");
    }
    assert_eq!(c.payload()[0], 0xFE);
    assert!(c.drained());
    let sent: usize = c.headers.iter().map(|h| h.0).sum();
    let inflated: usize = c.headers.iter().map(|h| h.2.max(h.0)).sum();
    assert!(
        c.headers.len() > 256,
        "{} compressed packets",
        c.headers.len()
    );
    assert!(sent * 2 < inflated, "{sent} bytes sent for {inflated}");
    // The connection goes on, numbering from 0 again.
    c.headers.clear();
    c.command(b"\x0e");
    assert_eq!(c.payload()[0], 0x00);
    assert_eq!(c.headers[0].1, 1);
}

/// A prepared `select ?` echoes its parameter as one binary row: a parameter sized so that
/// the row's payload is exactly 16 MiB - 1 bytes makes the server split it into a full chunk
/// and an empty one, and the client's execute (over 16 MiB) spans two compressed packets.
#[test]
fn packets_of_16_mib_minus_1_each_way_and_prepared_statements() {
    let addr = support::start(64 << 20);
    let mut c = Client::connect(addr, COMPRESS | DEPRECATE_EOF | MULTI_RESULTS);
    // A command of exactly 16 MiB - 1 bytes: a full inner chunk, an empty one, and two
    // compressed packets (0 and 1); the reply is packet 2.
    let mut query = vec![0x03];
    query.resize(MAX_CHUNK, b'x');
    c.command(&query);
    assert_eq!(c.seq, 2);
    c.headers.clear();
    let (seq, ok) = c.packet();
    assert_eq!((seq, ok[0], ok[1]), (2, 0x00, 1), "OK, 1 row affected");
    assert_eq!(c.headers[0].1, 2);

    c.command(b"\x16select ?");
    let prepared = c.payload();
    assert_eq!(prepared[0], 0);
    let id = u32::from_le_bytes([prepared[1], prepared[2], prepared[3], prepared[4]]);
    c.payload();
    c.payload();
    // Row payload: 0x00, NULL bitmap, 0xFD + int<3> length, the bytes.
    let len = MAX_CHUNK - 6;
    let value: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
    let mut execute = vec![0x17];
    execute.extend_from_slice(&id.to_le_bytes());
    execute.push(0);
    execute.extend_from_slice(&1u32.to_le_bytes());
    execute.extend_from_slice(&[0, 1, 253, 0, 0xFD]);
    execute.extend_from_slice(&(len as u32).to_le_bytes()[..3]);
    execute.extend_from_slice(&value);
    c.command(&execute);
    assert_eq!(c.payload(), [1]);
    c.payload();
    let row = c.payload();
    assert_eq!(row.len(), MAX_CHUNK);
    assert_eq!(&row[..6], &[0, 0, 0xFD, 0xF9, 0xFF, 0xFF]);
    assert!(row[6..] == value[..]);
    assert_eq!(c.payload()[0], 0xFE);
    assert!(c.drained());
    c.command(b"\x0e");
    assert_eq!(c.payload()[0], 0x00);
}

#[test]
fn a_compressed_packet_out_of_order_closes_the_connection() {
    let addr = support::start(64 << 20);
    let mut c = Client::connect(addr, COMPRESS);
    c.seq = 5;
    c.send_compressed(b"\x0f\x00\x00\x00\x03select rows 1");
    c.seq = 6;
    assert!(!c.fill(), "closed");
    // Another connection is served.
    let mut d = Client::connect(addr, COMPRESS);
    d.command(b"\x0e");
    assert_eq!(d.payload()[0], 0x00);
}

#[test]
fn a_client_without_compress_gets_plain_packets() {
    let addr = support::start(64 << 20);
    let mut c = Client::connect(addr, 0);
    c.stream.write_all(&[1, 0, 0, 0, 0x0e]).unwrap();
    let (seq, ok) = c.plain_packet();
    assert_eq!((seq, ok[0]), (1, 0));
}

/// COM_CHANGE_USER under compression, with an auth switch: the server's AuthSwitchRequest
/// and the client's answer are compressed packets 1 and 2 of the command, the OK is 3.
#[test]
fn change_user_with_an_auth_switch_inside_compressed_packets() {
    let addr = support::start(64 << 20);
    let mut c = Client::connect(addr, COMPRESS | DEPRECATE_EOF);
    let mut p = vec![0x11];
    p.extend_from_slice(b"root\0");
    // A caching_sha2_password claim for a mysql_native_password account: the server switches.
    p.push(32);
    p.extend_from_slice(&[1u8; 32]);
    p.push(0);
    p.extend_from_slice(&45u16.to_le_bytes());
    p.extend_from_slice(b"caching_sha2_password\0");
    c.command(&p);
    c.headers.clear();
    let (seq, switch) = c.packet();
    assert_eq!((seq, switch[0]), (1, 0xFE), "{switch:?}");
    let name_end = switch.iter().position(|&b| b == 0).unwrap();
    assert_eq!(&switch[1..name_end], b"mysql_native_password");
    let nonce = &switch[name_end + 1..name_end + 21];
    assert_eq!(nonce, &c.scramble[..], "the handshake's nonce again");
    assert_eq!(c.headers[0].1, 1);
    c.reply(2, &native_scramble_response("pw", nonce));
    c.headers.clear();
    let (_, ok) = c.packet();
    assert_eq!(ok[0], 0x00, "{ok:?}");
    assert_eq!(c.headers[0].1, 3);
    c.command(b"\x03select 1");
    assert_eq!(c.payload(), [1]);
    c.payload();
    assert_eq!(c.payload(), b"\x011");
    assert_eq!(c.payload()[0], 0xFE);
}

/// CLIENT_ZSTD_COMPRESSION_ALGORITHM with level 3 at the end of the handshake response: the
/// same framing with zstd frames, a large result and a command over 16 MiB.
#[test]
fn zstd_compression_carries_large_results_and_commands() {
    let addr = support::start(64 << 20);
    let mut c = Client::connect(addr, ZSTD | DEPRECATE_EOF | MULTI_RESULTS);
    c.command(b"\x03select rows 100000");
    assert_eq!(c.payload(), [2]);
    c.payload();
    c.payload();
    for i in 0..100_000u64 {
        let row = c.payload();
        let n = i.to_string();
        assert_eq!(&row[1..=n.len()], n.as_bytes(), "row {i}");
    }
    assert_eq!(c.payload()[0], 0xFE);
    assert!(c.drained());
    assert!(c.headers.iter().any(|h| h.2 > 0), "zstd-compressed packets");
    let mut query = vec![0x03];
    query.resize(MAX_CHUNK + 100, b'y');
    c.command(&query);
    let (_, ok) = c.packet();
    assert_eq!((ok[0], ok[1]), (0x00, 1));
}
