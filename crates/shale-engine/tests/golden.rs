//! Golden test: writes a small write batch and a small log, decodes the log with this file's
//! own reading of docs/format/wal.md (not the crate's reader), and compares the printout with
//! `tests/testdata/golden_wal.txt`; and checks that the format pages name every constant the
//! code writes. Regenerate the fixture with `SHALE_REGENERATE_GOLDEN=1` after a deliberate
//! format change, and update docs/format/ in the same commit.

mod common;

use std::fmt::Write as _;
use std::path::Path;

use common::{
    batch_in_version_2_encoding, log_path, payload, write_log, write_log_v1, write_log_version,
};
use shale_engine::inspect::wal::format::{
    RecordType, BLOCK_SIZE, FILE_HEADER_PAYLOAD_SIZE, FORMAT_VERSION, HEADER_SIZE, MAGIC,
    MAX_FRAGMENT_SIZE, V1_HEADER_SIZE,
};
use shale_engine::WriteBatch;
use shale_fs::MemFs;
use shale_sst::printable;

fn hex_dump(out: &mut String, bytes: &[u8]) {
    for (i, chunk) in bytes.chunks(16).enumerate() {
        let hex: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
        writeln!(out, "{:06x}  {}", i * 16, hex.join(" ")).unwrap();
    }
}

fn golden_batch() -> WriteBatch {
    let mut batch = WriteBatch::new();
    batch.put(0, b"apple", b"red").unwrap();
    batch.delete(1, b"pear").unwrap();
    batch.delete_range(300, b"a", b"c").unwrap();
    batch.delete(0, b"plum").unwrap();
    batch.set_first_seqno(100);
    batch
}

/// The golden batch as WAL format versions 1 and 2 encoded it, decoded by this build.
fn old_golden_batch() -> WriteBatch {
    let mut batch = WriteBatch::new();
    batch.put(0, b"apple", b"red").unwrap();
    batch.delete(1, b"pear").unwrap();
    batch.delete_range(300, b"a", b"c").unwrap();
    batch.set_first_seqno(100);
    let old = batch_in_version_2_encoding(&batch);
    let decoded = WriteBatch::from_data(old.clone()).unwrap();
    assert_eq!(decoded.data(), &old[..]);
    assert!(
        decoded.iter().eq(batch.iter()),
        "old encoding decodes to other entries"
    );
    decoded
}

fn describe_batch(out: &mut String, title: &str, batch: &WriteBatch) {
    writeln!(
        out,
        "\n## {title}: first seqno {}, {} entries, {} bytes",
        batch.first_seqno(),
        batch.count(),
        batch.data().len()
    )
    .unwrap();
    hex_dump(out, batch.data());
    for e in batch.iter() {
        writeln!(
            out,
            "seqno {}  {:<8}  keyspace {:<3}  {}  {}",
            e.seqno,
            e.kind.name(),
            e.keyspace,
            printable(e.key),
            printable(e.value)
        )
        .unwrap();
    }
}

/// Decodes the physical records of a log as the spec describes them: the file header at
/// offset 0 in the version 1 layout, the records after it in the layout of the version it
/// names (version 1: with the log number; versions 2 to 4: without).
fn describe_log(out: &mut String, bytes: &[u8]) {
    // The file header's layout, until it names the version.
    let mut header_size = V1_HEADER_SIZE;
    writeln!(
        out,
        "{:>7}  {:>5}  {:<11}  {:>6}  {:>4}  {:<10}  note",
        "offset", "block", "type", "length", "log", "checksum"
    )
    .unwrap();
    let mut pos = 0;
    while pos < bytes.len() {
        let left_in_block = BLOCK_SIZE - pos % BLOCK_SIZE;
        if left_in_block < header_size {
            let end = (pos + left_in_block).min(bytes.len());
            assert!(bytes[pos..end].iter().all(|&b| b == 0), "padding at {pos}");
            writeln!(
                out,
                "{pos:>7}  {:>5}  padding, {} zero bytes",
                pos / BLOCK_SIZE,
                end - pos
            )
            .unwrap();
            pos = end;
            continue;
        }
        let h = &bytes[pos..pos + header_size];
        let checksum = u32::from_le_bytes(h[0..4].try_into().unwrap());
        let length = u16::from_le_bytes(h[4..6].try_into().unwrap()) as usize;
        let log = match h.get(7..11) {
            Some(log) => u32::from_le_bytes(log.try_into().unwrap()).to_string(),
            None => "-".to_owned(),
        };
        let body = &bytes[pos + header_size..pos + header_size + length];
        let crc = crc32c::crc32c_append(crc32c::crc32c(&h[4..]), body);
        assert_eq!(
            checksum,
            crc.rotate_right(15).wrapping_add(0xa282_ead8),
            "checksum at {pos}"
        );
        let name = match h[6] {
            1 => "FULL",
            2 => "FIRST",
            3 => "MIDDLE",
            4 => "LAST",
            5 => "FILE_HEADER",
            t => panic!("type {t} at {pos}"),
        };
        let note = if h[6] == 5 {
            assert_eq!(pos, 0, "a file header after offset 0");
            let version = u32::from_le_bytes(body[8..12].try_into().unwrap());
            if version >= 2 {
                header_size = 7;
            }
            format!(
                "magic={} version={version} log={}",
                String::from_utf8_lossy(&body[0..8]),
                u64::from_le_bytes(body[12..20].try_into().unwrap())
            )
        } else if length <= 24 {
            printable(body)
        } else {
            String::new()
        };
        let line = format!(
            "{pos:>7}  {:>5}  {name:<11}  {length:>6}  {log:>4}  {checksum:#010x}  {note}",
            pos / BLOCK_SIZE
        );
        writeln!(out, "{}", line.trim_end()).unwrap();
        pos += h.len() + length;
    }
    writeln!(out, "{pos:>7}  end of file").unwrap();
}

/// A LEB128 varint at `bytes[*at..]`, read as `docs/format/write_batch.md` spells it (low group
/// first, high bit "more"), checked to be minimal; advances `*at`.
fn read_varint(bytes: &[u8], at: &mut usize) -> u64 {
    let start = *at;
    let mut value = 0u64;
    loop {
        let byte = bytes[*at];
        value |= u64::from(byte & 0x7f) << (7 * (*at - start));
        *at += 1;
        if byte & 0x80 == 0 {
            assert!(byte != 0 || *at - start == 1, "over-long varint at {start}");
            return value;
        }
    }
}

/// Decodes a WAL record's payload with this file's reading of docs/format/wal.md ("Logical
/// records"): version 4's varint first seqno and count, or versions 1 to 3's fixed u64 and
/// u32, then the entries, which must be `batch`'s bytes as they are in memory.
fn describe_batch_record(out: &mut String, version: u32, payload: &[u8], batch: &WriteBatch) {
    let (first_seqno, count, header) = if version >= 4 {
        let mut at = 0;
        let first_seqno = read_varint(payload, &mut at);
        let seqno_bytes = at;
        let count = read_varint(payload, &mut at);
        writeln!(
            out,
            "\n## version {version} record payload: header {at} bytes (first seqno varint64, \
             {seqno_bytes} bytes; count varint32, {} bytes)",
            at - seqno_bytes
        )
        .unwrap();
        (first_seqno, count, at)
    } else {
        let first_seqno = u64::from_le_bytes(payload[0..8].try_into().unwrap());
        let count = u32::from_le_bytes(payload[8..12].try_into().unwrap());
        writeln!(
            out,
            "\n## version {version} record payload: header 12 bytes (first seqno u64, count u32)"
        )
        .unwrap();
        (first_seqno, u64::from(count), 12)
    };
    writeln!(
        out,
        "first seqno {first_seqno}, count {count}, entries {} bytes",
        payload.len() - header
    )
    .unwrap();
    assert_eq!(first_seqno, batch.first_seqno());
    assert_eq!(count, u64::from(batch.count()));
    assert_eq!(
        &payload[header..],
        &batch.data()[12..],
        "the entries are the in-memory bytes"
    );
}

fn golden_printout() -> String {
    let mut out = String::new();
    writeln!(
        out,
        "# docs/format/write_batch.md and docs/format/wal.md, written by \
         crates/shale-engine/tests/golden.rs"
    )
    .unwrap();

    let batch = golden_batch();
    describe_batch(&mut out, "write batch", &batch);

    // The batch as a version 4 record, an empty record, one that leaves 5 bytes of padding at
    // the end of block 0, a small one at the start of block 1, and one of 70000 bytes (FIRST,
    // MIDDLE, LAST).
    let fs = MemFs::new();
    let path = log_path("/db", 7);
    let record = batch.to_wal_record(FORMAT_VERSION).unwrap();
    let used = 31 + (HEADER_SIZE + record.len()) + HEADER_SIZE;
    let filler = BLOCK_SIZE - used - HEADER_SIZE - 5;
    let records = vec![
        record.clone(),
        Vec::new(),
        payload(2, filler),
        b"tail".to_vec(),
        payload(4, 70_000),
    ];
    write_log(&fs, &path, 7, &records);
    let bytes = fs.file_contents(&path).unwrap();
    writeln!(out, "\n## log 000007.wal: {} bytes", bytes.len()).unwrap();
    describe_log(&mut out, &bytes);
    let first = 31 + HEADER_SIZE + record.len();
    writeln!(out, "\n## its first {first} bytes").unwrap();
    hex_dump(&mut out, &bytes[..first]);
    let payload_at = 31 + HEADER_SIZE;
    describe_batch_record(&mut out, FORMAT_VERSION, &bytes[payload_at..first], &batch);

    // A log of version 3, as Shale wrote it before version 4 (it must still replay): the
    // batch's in-memory encoding, fixed 12-byte header included. These bytes are frozen.
    let path = log_path("/v3", 7);
    let v3_record = batch.to_wal_record(3).unwrap();
    write_log_version(
        &fs,
        &path,
        7,
        &[v3_record.clone(), Vec::new()],
        usize::MAX,
        3,
    );
    let bytes = fs.file_contents(&path).unwrap();
    writeln!(out, "\n## version 3 log 000007.wal: {} bytes", bytes.len()).unwrap();
    describe_log(&mut out, &bytes);
    hex_dump(&mut out, &bytes);
    let payload_at = 31 + HEADER_SIZE;
    describe_batch_record(
        &mut out,
        3,
        &bytes[payload_at..payload_at + v3_record.len()],
        &batch,
    );

    // Logs of versions 2 and 1, as Shale wrote them before version 3 and 2 (they must still
    // replay): their batches spend a keyspace byte on the default keyspace. These bytes are
    // frozen: the sections below must never change.
    let old = old_golden_batch();
    describe_batch(&mut out, "version 1 and 2 write batch", &old);
    let path = log_path("/v2", 7);
    write_log_version(
        &fs,
        &path,
        7,
        &[old.data().to_vec(), Vec::new()],
        usize::MAX,
        2,
    );
    let bytes = fs.file_contents(&path).unwrap();
    writeln!(out, "\n## version 2 log 000007.wal: {} bytes", bytes.len()).unwrap();
    describe_log(&mut out, &bytes);
    hex_dump(&mut out, &bytes);

    let path = log_path("/v1", 7);
    write_log_v1(&fs, &path, 7, &[old.data().to_vec(), Vec::new()]);
    let bytes = fs.file_contents(&path).unwrap();
    writeln!(out, "\n## version 1 log 000007.wal: {} bytes", bytes.len()).unwrap();
    describe_log(&mut out, &bytes);
    hex_dump(&mut out, &bytes);
    out
}

#[test]
fn layout_matches_fixture() {
    let printout = golden_printout();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testdata/golden_wal.txt");
    if std::env::var_os("SHALE_REGENERATE_GOLDEN").is_some() {
        std::fs::create_dir_all(fixture.parent().unwrap()).unwrap();
        std::fs::write(&fixture, &printout).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&fixture).unwrap();
    assert_eq!(
        printout, expected,
        "WAL or write batch layout changed; if deliberate, update docs/format/ and regenerate \
         with SHALE_REGENERATE_GOLDEN=1 cargo test -p shale-engine --test golden"
    );
}

#[test]
fn specs_name_every_constant() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/format");
    let wal = std::fs::read_to_string(docs.join("wal.md")).unwrap();
    let must_appear = [
        String::from_utf8(MAGIC.to_vec()).unwrap(),
        format!("format version {FORMAT_VERSION}"),
        format!("{BLOCK_SIZE}-byte blocks"),
        format!("fewer than {HEADER_SIZE} bytes"),
        format!("at most {MAX_FRAGMENT_SIZE}"),
        format!("a {FILE_HEADER_PAYLOAD_SIZE}-byte payload"),
        "0xa282ead8".to_owned(),
    ];
    for needle in &must_appear {
        assert!(
            wal.contains(needle.as_str()),
            "wal.md does not mention {needle:?}"
        );
    }
    for kind in [
        RecordType::Full,
        RecordType::First,
        RecordType::Middle,
        RecordType::Last,
        RecordType::FileHeader,
    ] {
        let row = format!("| {} | {} |", kind as u8, kind.name());
        assert!(wal.contains(&row), "wal.md lacks the row {row:?}");
    }
    let batch = std::fs::read_to_string(docs.join("write_batch.md")).unwrap();
    for row in [
        "| 0 | deletion |",
        "| 1 | value |",
        "| 2 | range deletion |",
        "| 3..=127 |",
        "| 128 | deletion in the default keyspace",
        "| 129 | value in the default keyspace",
        "| 130 | range deletion in the default keyspace",
        "| 131..=255 |",
    ] {
        assert!(batch.contains(row), "write_batch.md lacks the row {row:?}");
    }
}
