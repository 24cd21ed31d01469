//! The write batch header inside WAL records (docs/format/wal.md, "Logical records";
//! `docs/format/write_batch.md`, "The header in a WAL record"): versions 1 to 3 carry the
//! in-memory 12-byte header, version 4 a varint first seqno and count. Every rejection the
//! spec lists, the seqno range edges, empty and multi-batch groups, and a version that is not
//! known.

use std::path::Path;

use shale_engine::inspect::wal::format::{COMPACT_BATCH_HEADER_VERSION, FORMAT_VERSION};
use shale_engine::{Error, WriteBatch};
use shale_sst::MAX_SEQNO;

const V4: Option<u32> = Some(COMPACT_BATCH_HEADER_VERSION);
const WAL: &str = "/db/000012.wal";

fn decode(payload: &[u8], version: Option<u32>) -> Result<WriteBatch, Error> {
    WriteBatch::from_wal_record(payload.to_vec(), version, Path::new(WAL), 4242)
}

/// The detail of a corruption error, which must name the file and the record.
fn corruption(result: Result<WriteBatch, Error>) -> String {
    match result {
        Err(Error::Corruption {
            file,
            offset,
            detail,
        }) => {
            assert_eq!(file, Path::new(WAL));
            assert_eq!(offset, 4242);
            detail
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

fn varint(mut value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
    out
}

/// A version 4 payload spelled out: header fields as given, then `entries`.
fn v4_payload(seqno: &[u8], count: &[u8], entries: &[u8]) -> Vec<u8> {
    [seqno, count, entries].concat()
}

fn one_put(seqno: u64) -> WriteBatch {
    let mut batch = WriteBatch::new();
    batch.put(0, &[b'k'; 16], &[b'v'; 100]).unwrap();
    batch.set_first_seqno(seqno);
    batch
}

fn puts(count: u32, seqno: u64) -> WriteBatch {
    let mut batch = WriteBatch::new();
    for i in 0..count {
        batch
            .put(i % 3, format!("key{i}").as_bytes(), b"v")
            .unwrap();
    }
    batch.set_first_seqno(seqno);
    batch
}

#[test]
fn version_4_header_is_varint_seqno_and_count_then_the_entries() {
    assert_eq!(FORMAT_VERSION, 4);
    let put = one_put(1);
    let entries = &put.data()[12..];
    // The single put: a seqno below 2^28 takes at most 4 bytes, a count of 1 one byte,
    // 5 at most instead of 12.
    for (seqno, header) in [
        (1u64, vec![1u8, 1]),
        (300, vec![0xac, 0x02, 1]),
        ((1 << 28) - 1, vec![0xff, 0xff, 0xff, 0x7f, 1]),
        (1 << 28, vec![0x80, 0x80, 0x80, 0x80, 0x01, 1]),
        (MAX_SEQNO, [vec![0xff; 7], vec![0x7f, 1]].concat()),
    ] {
        let batch = one_put(seqno);
        let payload = batch.to_wal_record(4).unwrap();
        assert_eq!(payload, [&header[..], entries].concat(), "seqno {seqno}");
        assert_eq!(decode(&payload, V4).unwrap(), batch, "seqno {seqno}");
    }
    assert_eq!(
        one_put((1 << 28) - 1).to_wal_record(4).unwrap().len(),
        5 + entries.len()
    );
}

#[test]
fn every_version_round_trips_and_versions_1_to_3_carry_the_in_memory_encoding() {
    let group = puts(200, 77_777);
    for version in 1..=FORMAT_VERSION {
        let payload = group.to_wal_record(version).unwrap();
        if version < COMPACT_BATCH_HEADER_VERSION {
            assert_eq!(payload, group.data(), "version {version}");
        } else {
            // 3-byte seqno, 2-byte count.
            assert_eq!(payload.len(), group.data().len() - 12 + 5);
        }
        let decoded = decode(&payload, Some(version)).unwrap();
        assert_eq!(decoded, group, "version {version}");
        assert_eq!(decoded.iter().last().unwrap().seqno, 77_777 + 199);
    }
    for version in [0, FORMAT_VERSION + 1] {
        assert!(matches!(
            group.to_wal_record(version),
            Err(Error::InvalidArgument(_))
        ));
        let detail = corruption(decode(group.data(), Some(version)));
        assert!(detail.contains("not one this build reads"), "{detail}");
    }
}

/// A commit group is its members' entries, in order, under one header.
#[test]
fn a_multi_batch_group_has_one_header_and_consecutive_seqnos() {
    let members = [puts(1, 0), puts(3, 0), one_put(0)];
    let mut group = WriteBatch::new();
    for member in &members {
        group.append(member).unwrap();
    }
    group.set_first_seqno(1000);
    let payload = group.to_wal_record(4).unwrap();
    let entries: Vec<u8> = members
        .iter()
        .flat_map(|m| m.data()[12..].to_vec())
        .collect();
    assert_eq!(payload, [&[0xe8, 0x07, 5][..], &entries].concat());
    let decoded = decode(&payload, V4).unwrap();
    let seqnos: Vec<u64> = decoded.iter().map(|e| e.seqno).collect();
    assert_eq!(seqnos, (1000..1005).collect::<Vec<_>>());
    assert_eq!(decoded, group);
}

#[test]
fn truncated_headers_are_corruption() {
    for (payload, at) in [
        (&[][..], 0),
        (&[0x80][..], 0),
        (&[0xff, 0xff][..], 0),
        (&[0x05][..], 1),
        (&[0x05, 0x80][..], 1),
    ] {
        let detail = corruption(decode(payload, V4));
        assert!(
            detail.contains("truncated varint"),
            "{payload:02x?}: {detail}"
        );
        assert!(
            detail.contains(&format!("at payload byte {at}:")),
            "{payload:02x?}: {detail}"
        );
    }
}

#[test]
fn non_minimal_varints_are_corruption() {
    let put = one_put(0);
    let entries = &put.data()[12..];
    assert!(decode(&v4_payload(&[0x05], &[0x01], entries), V4).is_ok());
    for (seqno, count, what) in [
        (&[0x85, 0x00][..], &[0x01][..], "first seqno: over-long"),
        (
            &[0x80, 0x80, 0x00][..],
            &[0x01][..],
            "first seqno: over-long",
        ),
        (&[0x05][..], &[0x81, 0x00][..], "entry count: over-long"),
        (
            &[0x05][..],
            &[0x81, 0x80, 0x00][..],
            "entry count: over-long",
        ),
    ] {
        let detail = corruption(decode(&v4_payload(seqno, count, entries), V4));
        assert!(detail.contains(what), "{seqno:02x?} {count:02x?}: {detail}");
    }
}

#[test]
fn varints_wider_than_their_field_are_corruption() {
    let put = one_put(0);
    let entries = &put.data()[12..];
    let too_long = [0x80u8; 10];
    let detail = corruption(decode(&v4_payload(&too_long, &[1], entries), V4));
    assert!(detail.contains("first seqno"), "{detail}");
    let above_u64 = [&[0xff; 9][..], &[0x02]].concat();
    let detail = corruption(decode(&v4_payload(&above_u64, &[1], entries), V4));
    assert!(detail.contains("overflows"), "{detail}");
    let above_u32 = [0xff, 0xff, 0xff, 0xff, 0x10];
    let detail = corruption(decode(&v4_payload(&[5], &above_u32, entries), V4));
    assert!(
        detail.contains("entry count: varint32 overflows"),
        "{detail}"
    );
}

#[test]
fn a_count_that_does_not_match_the_entries_is_corruption() {
    let group = puts(3, 10);
    let entries = &group.data()[12..];
    let detail = corruption(decode(&v4_payload(&[10], &[4], entries), V4));
    assert!(
        detail.contains("counts 4 entries but the batch holds 3"),
        "{detail}"
    );
    // Named at the count, payload byte 1.
    assert!(detail.contains("at payload byte 1:"), "{detail}");
    let detail = corruption(decode(&v4_payload(&[10], &[2], entries), V4));
    assert!(
        detail.contains("follow the last of the 2 entries"),
        "{detail}"
    );
    // Trailing bytes after the last entry start at payload byte 2 + the entries' length.
    let mut trailing = v4_payload(&[10], &[3], entries);
    trailing.push(0x81);
    let detail = corruption(decode(&trailing, V4));
    assert!(
        detail.contains(&format!("at payload byte {}:", 2 + entries.len())),
        "{detail}"
    );
}

#[test]
fn seqnos_above_56_bits_are_corruption() {
    let six = puts(6, MAX_SEQNO - 5); // the last entry gets MAX_SEQNO
    let payload = six.to_wal_record(4).unwrap();
    assert_eq!(
        decode(&payload, V4).unwrap().iter().last().unwrap().seqno,
        MAX_SEQNO
    );
    let entries = &six.data()[12..];
    for seqno in [MAX_SEQNO - 4, MAX_SEQNO, 1 << 56, u64::MAX] {
        let detail = corruption(decode(&v4_payload(&varint(seqno), &[6], entries), V4));
        assert!(detail.contains("56-bit"), "{seqno}: {detail}");
    }
}

/// The engine never writes an empty group, but the encoding has one and it decodes like an
/// empty batch of versions 1 to 3: no entries, nothing after the header.
#[test]
fn an_empty_group_decodes_and_nothing_may_follow_it() {
    let empty = decode(&[42, 0], V4).unwrap();
    assert_eq!((empty.count(), empty.first_seqno()), (0, 42));
    assert_eq!(empty.iter().count(), 0);
    let mut batch = WriteBatch::new();
    batch.set_first_seqno(42);
    assert_eq!(batch.to_wal_record(4).unwrap(), [42, 0]);
    let detail = corruption(decode(&[42, 0, 0x81, 0, 0], V4));
    assert!(
        detail.contains("follow the last of the 0 entries"),
        "{detail}"
    );
}

/// A log whose file header is damaged has no known version; a payload is taken under the
/// header it decodes with, and refused when it decodes under both.
#[test]
fn an_unknown_version_accepts_exactly_one_decoding() {
    let group = puts(4, 5000);
    for version in [3, 4] {
        let payload = group.to_wal_record(version).unwrap();
        assert_eq!(decode(&payload, None).unwrap(), group, "version {version}");
    }
    // As versions 1-3: seqno 0x0003_0201_0781_0105 (below 2^56), count 0, no entries. As
    // version 4: seqno 5, count 1, a put of a 7-byte key and an empty value.
    let both = [5, 1, 0x81, 7, 1, 2, 3, 0, 0, 0, 0, 0];
    assert_eq!(decode(&both, Some(3)).unwrap().count(), 0);
    assert_eq!(decode(&both, V4).unwrap().count(), 1);
    let detail = corruption(decode(&both, None));
    assert!(detail.contains("under both"), "{detail}");
    let detail = corruption(decode(&[0xff, 0x00], None));
    assert!(detail.contains("decodes under neither"), "{detail}");
}

/// Every single-byte change and every truncation of a version 4 payload either fails to
/// decode or decodes to a batch that re-encodes to exactly the changed bytes.
#[test]
fn damage_at_every_byte_is_detected_or_reencodes_exactly() {
    let mut group = puts(5, 130);
    group.delete_range(9, b"a", b"zz").unwrap();
    let good = group.to_wal_record(4).unwrap();
    for at in 0..good.len() {
        for mask in [0x01u8, 0x02, 0x10, 0x40, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[at] ^= mask;
            if let Ok(batch) = decode(&bad, V4) {
                // The entries are kept as they are and the header has one encoding.
                let again = batch.to_wal_record(4).unwrap();
                assert_eq!(again, bad, "byte {at} ^ {mask:#x}");
            }
        }
    }
    for len in 0..good.len() {
        assert!(decode(&good[..len], V4).is_err(), "truncated to {len}");
    }
}
