//! Behaviour of `WriteBatch` (`docs/format/write_batch.md`): building, encoding, validation of
//! untrusted bytes, and commit groups formed by `append`.

use std::path::Path;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{BatchEntry, Error, WriteBatch};
use shale_sst::{ValueKind, MAX_SEQNO};

/// An owned copy of a batch entry, for comparing with expectations.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    kind: ValueKind,
    keyspace: u32,
    key: Vec<u8>,
    value: Vec<u8>,
    seqno: u64,
}

impl From<BatchEntry<'_>> for Entry {
    fn from(e: BatchEntry<'_>) -> Self {
        Entry {
            kind: e.kind,
            keyspace: e.keyspace,
            key: e.key.to_vec(),
            value: e.value.to_vec(),
            seqno: e.seqno,
        }
    }
}

fn entries(batch: &WriteBatch) -> Vec<Entry> {
    batch.iter().map(Entry::from).collect()
}

/// Rebuilds a batch from its entries through the public builders.
fn rebuild(batch: &WriteBatch) -> WriteBatch {
    let mut out = WriteBatch::new();
    for e in batch.iter() {
        match e.kind {
            ValueKind::Value => out.put(e.keyspace, e.key, e.value).unwrap(),
            ValueKind::Deletion => out.delete(e.keyspace, e.key).unwrap(),
            ValueKind::RangeDeletion => out.delete_range(e.keyspace, e.key, e.value).unwrap(),
            ValueKind::BlobIndex => panic!("a batch never holds a blob reference"),
        }
    }
    out.set_first_seqno(batch.first_seqno());
    out
}

/// Checks that `batch`, decoded from `bytes`, holds what `bytes` encode: re-encoding its
/// entries gives `bytes`, except that an entry of the default keyspace in the version 2 form
/// (tag 0..=2 and an explicit keyspace 0) re-encodes one byte shorter.
fn assert_reencodes(batch: &WriteBatch, bytes: &[u8], context: &str) {
    let rebuilt = rebuild(batch);
    assert!(rebuilt.iter().eq(batch.iter()), "{context}");
    if rebuilt.data() != bytes {
        let explicit_default = batch.iter().filter(|e| e.keyspace == 0).count();
        let shorter = bytes.len() - rebuilt.data().len();
        assert!(
            shorter > 0 && shorter <= explicit_default,
            "{context}: {shorter} bytes shorter, {explicit_default} default-keyspace entries"
        );
    }
}

fn sample_batch() -> WriteBatch {
    let mut batch = WriteBatch::new();
    batch.put(0, b"apple", b"red").unwrap();
    batch.delete(3, b"banana").unwrap();
    batch.delete_range(200, b"c", b"f").unwrap();
    batch.put(u32::MAX, b"", b"").unwrap();
    batch.put(1, &[0xff; 300], &vec![7; 20_000]).unwrap();
    batch.delete(0, b"").unwrap();
    batch
}

#[test]
fn entries_round_trip_with_consecutive_seqnos() {
    let mut batch = sample_batch();
    batch.set_first_seqno(1000);
    assert_eq!(batch.count(), 6);
    assert!(!batch.is_empty());
    assert_eq!(batch.first_seqno(), 1000);
    assert_eq!(batch.approximate_size(), batch.data().len());
    let got = entries(&batch);
    let kinds: Vec<_> = got.iter().map(|e| (e.kind, e.keyspace, e.seqno)).collect();
    assert_eq!(
        kinds,
        [
            (ValueKind::Value, 0, 1000),
            (ValueKind::Deletion, 3, 1001),
            (ValueKind::RangeDeletion, 200, 1002),
            (ValueKind::Value, u32::MAX, 1003),
            (ValueKind::Value, 1, 1004),
            (ValueKind::Deletion, 0, 1005),
        ]
    );
    assert_eq!(
        (&got[0].key[..], &got[0].value[..]),
        (&b"apple"[..], &b"red"[..])
    );
    assert_eq!(got[1].value, b"");
    assert_eq!((&got[2].key[..], &got[2].value[..]), (&b"c"[..], &b"f"[..]));
    assert_eq!(got[4].value.len(), 20_000);

    let decoded = WriteBatch::from_data(batch.data().to_vec()).unwrap();
    assert_eq!(decoded, batch);
    assert_eq!(entries(&decoded), got);
    assert_eq!(rebuild(&decoded).data(), batch.data());
}

#[test]
fn encoding_is_the_documented_bytes() {
    let mut batch = WriteBatch::new();
    assert_eq!(batch.data(), [0u8; 12]);
    batch.put(2, b"k", b"vv").unwrap();
    batch.delete(300, b"").unwrap();
    batch.set_first_seqno(0x0102);
    #[rustfmt::skip]
    let expected: &[u8] = &[
        0x02, 0x01, 0, 0, 0, 0, 0, 0,   // first seqno 0x0102
        2, 0, 0, 0,                     // count 2
        1, 2, 1, b'k', 2, b'v', b'v',   // value, keyspace 2, "k", "vv"
        0, 0xac, 0x02, 0,               // deletion, keyspace 300 (varint), ""
    ];
    assert_eq!(batch.data(), expected);
    assert_eq!(batch.approximate_size(), expected.len());
}

#[test]
fn append_forms_a_commit_group() {
    let mut group = WriteBatch::new();
    group.put(0, b"a", b"1").unwrap();
    let mut second = sample_batch();
    second.set_first_seqno(77); // ignored: the group keeps its own
    group.append(&second).unwrap();
    group.append(&WriteBatch::new()).unwrap();
    group.set_first_seqno(10);
    assert_eq!(group.count(), 7);
    let got = entries(&group);
    assert_eq!(got.len(), 7);
    assert_eq!(got[0].key, b"a");
    assert_eq!(
        got.iter().map(|e| e.seqno).collect::<Vec<_>>(),
        (10..17).collect::<Vec<_>>()
    );
    let tail: Vec<_> = got[1..]
        .iter()
        .map(|e| (e.kind, e.keyspace, e.key.clone(), e.value.clone()))
        .collect();
    let expected: Vec<_> = entries(&second)
        .into_iter()
        .map(|e| (e.kind, e.keyspace, e.key, e.value))
        .collect();
    assert_eq!(tail, expected);
    assert_eq!(WriteBatch::from_data(group.data().to_vec()).unwrap(), group);
}

#[test]
fn clear_resets_everything() {
    let mut batch = sample_batch();
    batch.set_first_seqno(5);
    batch.clear();
    assert!(batch.is_empty());
    assert_eq!(batch.count(), 0);
    assert_eq!(batch.first_seqno(), 0);
    assert_eq!(batch.data(), WriteBatch::new().data());
    assert_eq!(batch.iter().count(), 0);
}

#[test]
fn random_batches_round_trip() {
    let mut rng = SmallRng::seed_from_u64(7);
    for _ in 0..200 {
        let mut batch = WriteBatch::new();
        let mut expected = Vec::new();
        for _ in 0..rng.gen_range(0..40) {
            let keyspace = if rng.gen_bool(0.5) { 0 } else { rng.gen() };
            let key: Vec<u8> = (0..rng.gen_range(0..40)).map(|_| rng.gen()).collect();
            let value: Vec<u8> = (0..rng.gen_range(0..300)).map(|_| rng.gen()).collect();
            let kind = match rng.gen_range(0..3) {
                0 => {
                    batch.delete(keyspace, &key).unwrap();
                    ValueKind::Deletion
                }
                1 => {
                    batch.put(keyspace, &key, &value).unwrap();
                    ValueKind::Value
                }
                _ => {
                    batch.delete_range(keyspace, &key, &value).unwrap();
                    ValueKind::RangeDeletion
                }
            };
            let value = if kind == ValueKind::Deletion {
                Vec::new()
            } else {
                value
            };
            expected.push((kind, keyspace, key, value));
        }
        let first = rng.gen_range(0..=MAX_SEQNO - 100);
        batch.set_first_seqno(first);
        let decoded = WriteBatch::from_data(batch.data().to_vec()).unwrap();
        let got: Vec<_> = entries(&decoded)
            .into_iter()
            .enumerate()
            .map(|(i, e)| {
                assert_eq!(e.seqno, first + i as u64);
                (e.kind, e.keyspace, e.key, e.value)
            })
            .collect();
        assert_eq!(got, expected);
    }
}

fn corruption_detail(result: Result<WriteBatch, Error>) -> (u64, String) {
    match result {
        Err(Error::Corruption { offset, detail, .. }) => (offset, detail),
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn count_mismatch_and_trailing_bytes_are_detected() {
    let batch = sample_batch();
    let mut more = batch.data().to_vec();
    more[8] += 1;
    let (offset, detail) = corruption_detail(WriteBatch::from_data(more));
    assert_eq!(offset, 8);
    assert!(
        detail.contains("counts 7 entries but the batch holds 6"),
        "{detail}"
    );

    let mut fewer = batch.data().to_vec();
    fewer[8] -= 1;
    let (_, detail) = corruption_detail(WriteBatch::from_data(fewer));
    assert!(
        detail.contains("follow the last of the 5 entries"),
        "{detail}"
    );

    let mut trailing = batch.data().to_vec();
    trailing.push(0);
    let (offset, detail) = corruption_detail(WriteBatch::from_data(trailing));
    assert_eq!(offset, batch.data().len() as u64);
    assert!(detail.contains("1 bytes follow"), "{detail}");
}

#[test]
fn default_keyspace_entries_carry_no_keyspace_field() {
    let mut batch = WriteBatch::new();
    batch.put(0, b"k", b"v").unwrap();
    assert_eq!(&batch.data()[12..], &[0x81, 1, b'k', 1, b'v']);
    let mut other = WriteBatch::new();
    other.put(1, b"k", b"v").unwrap();
    assert_eq!(&other.data()[12..], &[0x01, 1, 1, b'k', 1, b'v']);
    batch.delete(0, b"d").unwrap();
    batch.delete_range(0, b"a", b"b").unwrap();
    assert_eq!(
        &batch.data()[17..],
        &[0x80, 1, b'd', 0x82, 1, b'a', 1, b'b']
    );

    // The version 2 form (explicit keyspace 0) still decodes, to the same entries.
    let mut old = WriteBatch::new().data().to_vec();
    old[8] = 3;
    old.extend_from_slice(&[
        1, 0, 1, b'k', 1, b'v', 0, 0, 1, b'd', 2, 0, 1, b'a', 1, b'b',
    ]);
    let decoded = WriteBatch::from_data(old).unwrap();
    assert!(decoded.iter().eq(batch.iter()));
}

#[test]
fn unknown_tags_short_headers_and_seqno_overflow_are_corruption() {
    let mut reserved = WriteBatch::new().data().to_vec();
    reserved[8] = 1;
    reserved.extend_from_slice(&[3, 0, 0]);
    let (offset, detail) = corruption_detail(WriteBatch::from_data(reserved.clone()));
    assert_eq!(offset, 12);
    assert!(detail.contains("entry tag 3 is reserved"), "{detail}");
    reserved[12] = 200;
    let (_, detail) = corruption_detail(WriteBatch::from_data(reserved));
    assert!(detail.contains("entry tag 200 is reserved"), "{detail}");

    for len in 0..12 {
        let (offset, detail) = corruption_detail(WriteBatch::from_data(vec![0; len]));
        assert_eq!(offset, 0);
        assert!(
            detail.contains("shorter than its 12-byte header"),
            "{detail}"
        );
    }

    let mut batch = sample_batch();
    batch.set_first_seqno(MAX_SEQNO - 5); // 6 entries: the last gets MAX_SEQNO
    assert!(WriteBatch::from_data(batch.data().to_vec()).is_ok());
    let mut over = batch.data().to_vec();
    over[..8].copy_from_slice(&(MAX_SEQNO - 4).to_le_bytes());
    let (_, detail) = corruption_detail(WriteBatch::from_data(over));
    assert!(detail.contains("56-bit"), "{detail}");
}

#[test]
fn from_wal_record_names_the_log_file_and_record() {
    let mut data = sample_batch().into_data();
    data.truncate(data.len() - 1);
    let err =
        WriteBatch::from_wal_record(data, Some(3), Path::new("/db/000012.wal"), 4242).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("corruption in /db/000012.wal at offset 4242: write batch"),
        "{text}"
    );
    assert!(err.is_corruption());
}

/// Every single-byte change and every truncation of an encoding either fails to decode or
/// decodes to entries that re-encode to exactly the changed bytes; nothing panics.
#[test]
fn damage_at_every_byte_is_detected_or_decodes_consistently() {
    let mut small = WriteBatch::new();
    small.put(0, b"key", b"value").unwrap();
    small.delete(129, b"gone").unwrap();
    small.delete_range(7, b"a", b"zz").unwrap();
    small.put(1, &[0x80; 130], b"").unwrap();
    small.set_first_seqno(99);
    let good = small.data().to_vec();
    let mut decoded_ok = 0;
    for at in 0..good.len() {
        for mask in [0x01u8, 0x02, 0x10, 0x40, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[at] ^= mask;
            if let Ok(batch) = WriteBatch::from_data(bad.clone()) {
                decoded_ok += 1;
                assert_reencodes(&batch, &bad, &format!("byte {at} ^ {mask:#x}"));
                assert_eq!(batch.iter().count(), batch.count() as usize);
            }
        }
    }
    // Key and value bytes carry no checksum (the WAL record does), so some flips decode.
    assert!(decoded_ok > 0);
    for len in 0..good.len() {
        assert!(
            WriteBatch::from_data(good[..len].to_vec()).is_err(),
            "truncated to {len}"
        );
    }
}

#[test]
fn random_garbage_never_panics() {
    let mut rng = SmallRng::seed_from_u64(3);
    for _ in 0..20_000 {
        let len = rng.gen_range(0..64);
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        if bytes.len() >= 12 {
            // Plausible headers reach the entry decoder more often.
            bytes[8..12].copy_from_slice(&rng.gen_range(0u32..4).to_le_bytes());
            bytes[..8].copy_from_slice(&0u64.to_le_bytes());
        }
        if let Ok(batch) = WriteBatch::from_data(bytes.clone()) {
            assert_reencodes(&batch, &bytes, &format!("{bytes:02x?}"));
        }
    }
}
