//! Corruption tests: every bit flip and every truncation of small tables holding every kind of
//! block (docs/format/sst.md, "Errors").
//!
//! Every byte of a table is inside a checksummed block (with its trailer) or the footer, and
//! the blocks tile the file, so with checksums on:
//! - a flip outside the data blocks makes `Table::open` fail, naming the damaged block;
//! - a flip inside a data block leaves `open` working, makes `verify` fail naming that block,
//!   and makes exactly the reads that touch that block fail; every other read is correct.
//!
//! With checksums off for data blocks, a flip may change answers but must never panic.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_fs::MemFs;
use shale_sst::format::FOOTER_SIZE;
use shale_sst::{
    train_zstd_dictionary, BlockKind, BytewiseComparator, ChecksumType, Comparator, Compression,
    Error, FixedPrefix, InternalKey, InternalKeyComparator, LookupResult, ParsedInternalKey,
    ReadOptions, Table, TableIter, TableOpenOptions, TableWriter, ValueKind, WriterOptions,
    MAX_SEQNO,
};

/// One point entry: encoded internal key and value.
type Entry = (Vec<u8>, Vec<u8>);

/// A contiguous part of the file: one block with its trailer, or the footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Region {
    start: u64,
    end: u64,
    /// `None` for the footer.
    kind: Option<BlockKind>,
    /// Index among the data blocks, for data blocks.
    data_index: usize,
}

impl Region {
    fn name(&self) -> &'static str {
        self.kind.map_or("footer", BlockKind::name)
    }
}

/// A small valid table and everything the checks need to know about it.
struct Fixture {
    path: PathBuf,
    bytes: Vec<u8>,
    /// The point entries in order, and the data block each one is in.
    entries: Vec<Entry>,
    block_of_entry: Vec<usize>,
    regions: Vec<Region>,
}

fn open_options(verify_checksums: bool) -> TableOpenOptions {
    TableOpenOptions {
        prefix_extractor: Some(Arc::new(FixedPrefix::new(5))),
        verify_checksums,
        ..TableOpenOptions::default()
    }
}

fn value_of(i: usize) -> Vec<u8> {
    format!("value of key{i:03}; ").repeat(2).into_bytes()
}

fn dictionary() -> Arc<[u8]> {
    let samples: Vec<Vec<u8>> = (0..600)
        .map(|i| {
            let mut s = format!("key{:03}", i % 97).into_bytes();
            s.extend(value_of(i));
            s
        })
        .collect();
    let refs: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
    train_zstd_dictionary(&refs, 1024).unwrap().into()
}

/// Writes a table of 40 entries in 10 data blocks with every meta block kind; returns the
/// entries.
fn write_fixture_table(
    fs: &MemFs,
    path: &Path,
    compression: Compression,
    checksum: ChecksumType,
) -> Vec<Entry> {
    let mut user_properties = std::collections::BTreeMap::new();
    user_properties.insert("schema".to_owned(), b"t(k, v)".to_vec());
    let options = WriterOptions {
        block_size: 150,
        block_restart_interval: 2,
        compression,
        compression_dictionary: (compression == Compression::ZstdDict).then(dictionary),
        checksum,
        prefix_extractor: Some(Arc::new(FixedPrefix::new(5))),
        user_properties,
        creation_time: Some(1_700_000_000),
        ..WriterOptions::default()
    };
    let mut entries = Vec::new();
    for i in 0..30 {
        let user_key = format!("key{i:03}").into_bytes();
        let newest = InternalKey::new(&user_key, 100 + i as u64, ValueKind::Value);
        entries.push((newest.into_encoded(), value_of(i)));
        if i % 3 == 0 {
            let older = InternalKey::new(&user_key, 10 + i as u64, ValueKind::Deletion);
            entries.push((older.into_encoded(), Vec::new()));
        }
    }
    let mut writer = TableWriter::create(fs, path, options).unwrap();
    writer.add_range_deletion(b"key020", b"key025", 60).unwrap();
    for (key, value) in &entries {
        writer.add(key, value).unwrap();
    }
    writer.add_range_deletion(b"key005", b"key009", 50).unwrap();
    writer.finish().unwrap();
    entries
}

fn build_fixture(
    fs: &MemFs,
    name: &'static str,
    compression: Compression,
    checksum: ChecksumType,
) -> Fixture {
    let path = PathBuf::from(format!("/{name}.sst"));
    let entries = write_fixture_table(fs, &path, compression, checksum);
    let bytes = fs.file_contents(&path).unwrap();

    let table = Table::open(fs, &path, &open_options(true)).unwrap();
    let layout = table.verify().unwrap();
    let mut regions = Vec::new();
    let mut data_blocks = Vec::new();
    for block in &layout.blocks {
        let data_index = data_blocks.len();
        if block.kind == BlockKind::Data {
            data_blocks.push(block.clone());
        }
        regions.push(Region {
            start: block.handle.offset,
            end: block.handle.end_with_trailer(),
            kind: Some(block.kind),
            data_index,
        });
    }
    let footer_start = bytes.len() as u64 - FOOTER_SIZE as u64;
    assert_eq!(regions.last().unwrap().end, footer_start);
    regions.push(Region {
        start: footer_start,
        end: bytes.len() as u64,
        kind: None,
        data_index: 0,
    });
    let mut expected_kinds = vec![
        BlockKind::Data,
        BlockKind::Filter,
        BlockKind::PrefixFilter,
        BlockKind::RangeDeletion,
        BlockKind::Properties,
        BlockKind::Index,
        BlockKind::Metaindex,
    ];
    if compression == Compression::ZstdDict {
        expected_kinds.push(BlockKind::CompressionDict);
    }
    for kind in expected_kinds {
        assert!(
            regions.iter().any(|r| r.kind == Some(kind)),
            "{name}: no {} block",
            kind.name()
        );
    }
    assert!(
        data_blocks.len() >= 3,
        "{name}: {} data blocks",
        data_blocks.len()
    );
    if compression != Compression::None {
        assert!(
            data_blocks
                .iter()
                .any(|b| b.compression == compression.tag()),
            "{name}: no data block is compressed"
        );
    }
    let icmp = InternalKeyComparator::new(Arc::new(BytewiseComparator));
    let block_of_entry = entries
        .iter()
        .map(|(key, _)| {
            data_blocks
                .iter()
                .rposition(|b| icmp.compare(b.first_key.as_deref().unwrap(), key).is_le())
                .unwrap()
        })
        .collect();
    Fixture {
        path,
        bytes,
        entries,
        block_of_entry,
        regions,
    }
}

impl Fixture {
    fn region_of(&self, offset: u64) -> Region {
        *self
            .regions
            .iter()
            .find(|r| r.start <= offset && offset < r.end)
            .unwrap()
    }

    /// Asserts `error` is a corruption naming this file and an offset inside it; returns the
    /// offset.
    fn corruption_offset(&self, error: &Error, what: &str) -> u64 {
        match error {
            Error::Corruption { file, offset, .. } => {
                assert_eq!(file, &self.path, "{what}: {error}");
                assert!(*offset < self.bytes.len() as u64, "{what}: {error}");
                *offset
            }
            other => panic!("{what}: expected corruption, got {other:?}"),
        }
    }

    fn expect_corruption_at(&self, error: &Error, region: &Region, what: &str) {
        let offset = self.corruption_offset(error, what);
        assert_eq!(
            offset,
            region.start,
            "{what}: error does not name the damaged {} block: {error}",
            region.name()
        );
    }
}

fn scan_forward(iter: &mut TableIter) -> Vec<Entry> {
    let mut out = Vec::new();
    iter.seek_to_first();
    while iter.valid() {
        out.push((iter.key().to_vec(), iter.value().to_vec()));
        iter.next();
    }
    out
}

fn scan_backward(iter: &mut TableIter) -> Vec<Entry> {
    let mut out = Vec::new();
    iter.seek_to_last();
    while iter.valid() {
        out.push((iter.key().to_vec(), iter.value().to_vec()));
        iter.prev();
    }
    out
}

fn lookup_of(entry: &Entry) -> (Vec<u8>, u64, LookupResult) {
    let parsed = ParsedInternalKey::parse(&entry.0).unwrap();
    (
        parsed.user_key.to_vec(),
        parsed.seqno,
        LookupResult {
            kind: parsed.kind,
            seqno: parsed.seqno,
            value: entry.1.clone(),
        },
    )
}

/// With checksums on: the damage is found exactly where it is, and nothing else changes.
fn check_flip_with_checksums(fixture: &Fixture, fs: &MemFs, region: &Region, what: &str) {
    let opened = Table::open(fs, &fixture.path, &open_options(true));
    if region.kind != Some(BlockKind::Data) {
        let error = opened.expect_err(&format!("{what}: damage not detected on open"));
        fixture.expect_corruption_at(&error, region, what);
        return;
    }
    let table = opened.unwrap_or_else(|e| panic!("{what}: open reads no data block: {e}"));
    let error = table
        .verify()
        .expect_err(&format!("{what}: verify missed the damage"));
    fixture.expect_corruption_at(&error, region, what);

    let damaged = region.data_index;
    let before: Vec<Entry> = fixture
        .entries
        .iter()
        .zip(&fixture.block_of_entry)
        .filter(|(_, &b)| b < damaged)
        .map(|(e, _)| e.clone())
        .collect();
    let after: Vec<Entry> = fixture
        .entries
        .iter()
        .zip(&fixture.block_of_entry)
        .filter(|(_, &b)| b > damaged)
        .rev()
        .map(|(e, _)| e.clone())
        .collect();
    let mut iter = table.iter(ReadOptions::default());
    assert!(
        scan_forward(&mut iter) == before,
        "{what}: forward scan before the damage"
    );
    fixture.expect_corruption_at(&iter.status().unwrap_err(), region, what);
    let mut iter = table.iter(ReadOptions::default());
    assert!(
        scan_backward(&mut iter) == after,
        "{what}: backward scan after the damage"
    );
    fixture.expect_corruption_at(&iter.status().unwrap_err(), region, what);

    for (entry, &block) in fixture.entries.iter().zip(&fixture.block_of_entry) {
        let (user_key, seqno, expected) = lookup_of(entry);
        match table.get(&user_key, seqno) {
            Ok(found) => {
                assert_ne!(block, damaged, "{what}: get read a damaged block");
                assert_eq!(found, Some(expected), "{what}");
            }
            Err(e) => {
                assert_eq!(block, damaged, "{what}: get failed on an intact block: {e}");
                fixture.expect_corruption_at(&e, region, what);
            }
        }
    }
}

/// With data-block checksums off: any answer may be wrong, but nothing panics, `verify` still
/// finds the damage, and errors name the file and an offset in it.
fn check_flip_without_checksums(fixture: &Fixture, fs: &MemFs, what: &str) {
    let table = Table::open(fs, &fixture.path, &open_options(false))
        .unwrap_or_else(|e| panic!("{what}: open reads no data block: {e}"));
    let error = table
        .verify()
        .expect_err(&format!("{what}: verify missed the damage"));
    fixture.corruption_offset(&error, what);
    let mut iter = table.iter(ReadOptions::default());
    scan_forward(&mut iter);
    if let Err(e) = iter.status() {
        fixture.corruption_offset(&e, what);
    }
    scan_backward(&mut iter);
    if let Err(e) = iter.status() {
        fixture.corruption_offset(&e, what);
    }
    for entry in &fixture.entries {
        let (user_key, seqno, _) = lookup_of(entry);
        for snapshot in [seqno, MAX_SEQNO, 0] {
            if let Err(e) = table.get(&user_key, snapshot) {
                fixture.corruption_offset(&e, what);
            }
        }
    }
}

/// Runs `check`, turning a panic into one that says which case it was.
fn with_context(what: &str, check: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(check)) {
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        if message.starts_with(what) {
            std::panic::resume_unwind(payload);
        }
        panic!("{what}: {message}");
    }
}

fn flip_every_bit(name: &'static str, compression: Compression, checksum: ChecksumType) {
    let fs = MemFs::new();
    let fixture = build_fixture(&fs, name, compression, checksum);
    let len = fixture.bytes.len() as u64;
    let mut data_flips = 0;
    for offset in 0..len {
        let region = fixture.region_of(offset);
        for mask in [0x01u8, 0x80] {
            let what = format!(
                "{name}: flip {mask:#04x} at {offset} of {len} ({} block at {})",
                region.name(),
                region.start
            );
            fs.corrupt_for_test(&fixture.path, offset, mask).unwrap();
            with_context(&what, || {
                check_flip_with_checksums(&fixture, &fs, &region, &what);
                if region.kind == Some(BlockKind::Data) {
                    data_flips += 1;
                    check_flip_without_checksums(&fixture, &fs, &what);
                }
            });
            fs.corrupt_for_test(&fixture.path, offset, mask).unwrap();
        }
    }
    assert!(data_flips > 0);
    // The file is intact again.
    assert_eq!(fs.file_contents(&fixture.path).unwrap(), fixture.bytes);
    Table::open(&fs, &fixture.path, &open_options(true))
        .unwrap()
        .verify()
        .unwrap();
}

#[test]
fn every_bit_flip_is_detected_uncompressed_crc32c() {
    flip_every_bit("none", Compression::None, ChecksumType::Crc32c);
}

#[test]
fn every_bit_flip_is_detected_lz4() {
    flip_every_bit("lz4", Compression::Lz4, ChecksumType::Xxh3);
}

#[test]
fn every_bit_flip_is_detected_zstd_with_dictionary() {
    flip_every_bit("zstd-dict", Compression::ZstdDict, ChecksumType::Xxh3);
}

#[test]
fn every_bit_flip_is_detected_snappy_zlib_zstd() {
    flip_every_bit("snappy", Compression::Snappy, ChecksumType::Crc32c);
    flip_every_bit("zlib", Compression::Zlib, ChecksumType::Xxh3);
    flip_every_bit("zstd", Compression::Zstd, ChecksumType::Crc32c);
}

#[test]
fn every_truncation_and_extension_is_a_clean_error() {
    let fs = MemFs::new();
    for (name, compression) in [
        ("trunc-none", Compression::None),
        ("trunc-lz4", Compression::Lz4),
        ("trunc-zstd-dict", Compression::ZstdDict),
    ] {
        let fixture = build_fixture(&fs, name, compression, ChecksumType::Xxh3);
        let copy = Path::new("/copy.sst");
        let mut lengths: Vec<usize> = (0..fixture.bytes.len()).collect();
        lengths.extend([1, 7, 52, 4096].map(|extra| fixture.bytes.len() + extra));
        for len in lengths {
            let what = format!("{name}: cut to {len} of {}", fixture.bytes.len());
            let mut bytes = fixture.bytes.clone();
            bytes.resize(len, 0);
            fs.write_file_for_test(copy, &bytes).unwrap();
            with_context(&what, || {
                match Table::open(&fs, copy, &open_options(true)) {
                    Err(Error::Corruption { file, offset, .. }) => {
                        assert_eq!(file, copy, "{what}");
                        assert!(offset <= len as u64, "{what}: offset {offset}");
                    }
                    Err(other) => panic!("{what}: expected corruption, got {other}"),
                    // Not expected (the footer moved), but then verify must catch it.
                    Ok(table) => assert!(table.verify().is_err(), "{what}: verify passed"),
                }
            });
        }
    }
}
