//! A writer asked for zstd with `zstd_max_dict_bytes > 0` trains a dictionary on its first
//! data blocks, stores it, and compresses every data block with it (docs/format/sst.md,
//! "Compression"); with too few samples it falls back to plain zstd.

use std::path::Path;
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_fs::{FileSystem, MemFs};
use shale_sst::{
    BlockKind, Compression, LookupResult, ReadOptions, Table, TableLayout, TableOpenOptions,
    TableWriter, ValueKind, WriterOptions,
};

/// A JSON document: the same field names in every row, varied values.
fn json_row(rng: &mut SmallRng, id: u32) -> Vec<u8> {
    const NAMES: [&str; 8] = [
        "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi",
    ];
    const CITIES: [&str; 6] = ["Lisbon", "Oslo", "Quito", "Hanoi", "Perth", "Accra"];
    format!(
        r#"{{"id":{id},"name":"{}","email":"{}{}@example.com","address":{{"city":"{}","zip":"{:05}"}},"active":{},"balance":{}.{:02},"tags":["t{}","t{}"],"created_at":"2024-{:02}-{:02}T{:02}:{:02}:00Z"}}"#,
        NAMES[rng.gen_range(0..NAMES.len())],
        NAMES[rng.gen_range(0..NAMES.len())],
        rng.gen_range(0..10_000),
        CITIES[rng.gen_range(0..CITIES.len())],
        rng.gen_range(0..100_000),
        rng.gen_bool(0.5),
        rng.gen_range(0..1_000_000),
        rng.gen_range(0..100),
        rng.gen_range(0..50),
        rng.gen_range(0..50),
        rng.gen_range(1..=12),
        rng.gen_range(1..=28),
        rng.gen_range(0..24),
        rng.gen_range(0..60),
    )
    .into_bytes()
}

fn rows(n: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut rng = SmallRng::seed_from_u64(u64::from(n));
    (0..n)
        .map(|i| (format!("user{i:08}").into_bytes(), json_row(&mut rng, i)))
        .collect()
}

/// Writes the rows; returns the largest `estimated_file_size` seen on the way.
fn write(
    fs: &dyn FileSystem,
    path: &Path,
    options: WriterOptions,
    rows: &[(Vec<u8>, Vec<u8>)],
) -> u64 {
    let mut writer = TableWriter::create(fs, path, options).unwrap();
    let mut largest_estimate = 0;
    for (i, (key, value)) in rows.iter().enumerate() {
        writer
            .add_entry(key, i as u64 + 1, ValueKind::Value, value)
            .unwrap();
        largest_estimate = largest_estimate.max(writer.estimated_file_size());
    }
    writer.finish().unwrap();
    largest_estimate
}

fn raw_bytes(rows: &[(Vec<u8>, Vec<u8>)]) -> u64 {
    rows.iter()
        .map(|(k, v)| (k.len() + 8 + v.len()) as u64)
        .sum()
}

fn options(max_dict_bytes: usize, max_train_bytes: usize) -> WriterOptions {
    WriterOptions {
        compression: Compression::Zstd,
        zstd_max_dict_bytes: max_dict_bytes,
        zstd_max_train_bytes: max_train_bytes,
        ..WriterOptions::default()
    }
}

/// Opens the table, checks every row by scan and by `get`, and returns its verified layout.
fn check(
    fs: &dyn FileSystem,
    path: &Path,
    rows: &[(Vec<u8>, Vec<u8>)],
) -> (Arc<Table>, TableLayout) {
    let table = Table::open(fs, path, &TableOpenOptions::default()).unwrap();
    let layout = table.verify().unwrap();
    let mut iter = table.iter(ReadOptions::default());
    iter.seek_to_first();
    for (key, value) in rows {
        assert!(iter.valid(), "scan ended early");
        assert_eq!(&iter.key()[..iter.key().len() - 8], key.as_slice());
        assert_eq!(iter.value(), value.as_slice());
        iter.next();
    }
    assert!(!iter.valid());
    iter.status().unwrap();
    for (i, (key, value)) in rows.iter().enumerate().step_by(37) {
        assert_eq!(
            table.get(key, u64::MAX >> 8).unwrap(),
            Some(LookupResult {
                kind: ValueKind::Value,
                seqno: i as u64 + 1,
                value: value.clone()
            }),
            "get row {i}"
        );
    }
    (table, layout)
}

fn data_tags(layout: &TableLayout) -> Vec<u8> {
    layout
        .blocks
        .iter()
        .filter(|b| b.kind == BlockKind::Data)
        .map(|b| b.compression)
        .collect()
}

fn has_dictionary(layout: &TableLayout) -> bool {
    layout
        .blocks
        .iter()
        .any(|b| b.kind == BlockKind::CompressionDict)
}

#[test]
fn trained_dictionary_round_trips_and_shrinks_json_rows() {
    let fs = MemFs::new();
    let rows = rows(20_000);
    let (plain, dict) = (Path::new("/plain.sst"), Path::new("/dict.sst"));
    write(&fs, plain, options(0, 0), &rows);
    write(&fs, dict, options(16 << 10, 0), &rows);

    let (plain_table, plain_layout) = check(&fs, plain, &rows);
    assert!(!has_dictionary(&plain_layout));
    assert_eq!(plain_table.properties().compression, "zstd");

    let (dict_table, dict_layout) = check(&fs, dict, &rows);
    assert!(has_dictionary(&dict_layout));
    assert_eq!(dict_table.properties().compression, "zstd-dict");
    // Every data block is compressed with the dictionary: the held-back training blocks
    // (the first 1.6 MB) and the ones after them.
    let tags = data_tags(&dict_layout);
    assert!(tags.len() > 500, "{} data blocks", tags.len());
    assert!(tags.iter().all(|&t| t == 5), "tags {tags:?}");

    let (plain_size, dict_size) = (plain_table.file_size(), dict_table.file_size());
    println!("json rows: zstd {plain_size} B, zstd + trained dictionary {dict_size} B");
    assert!(
        dict_size * 10 < plain_size * 9,
        "the dictionary saved under 10%: {dict_size} vs {plain_size}"
    );
}

#[test]
fn training_budget_reached_mid_file_and_at_finish() {
    let fs = MemFs::new();
    let rows = rows(3_000);
    // A 64 KiB budget is reached after about 16 of ~150 blocks; a 4 MiB one only at finish.
    for (name, train_bytes) in [("mid", 64 << 10), ("finish", 4 << 20)] {
        let path = format!("/{name}.sst");
        let path = Path::new(&path);
        let estimate = write(&fs, path, options(4 << 10, train_bytes), &rows);
        if name == "finish" {
            // Held-back blocks count towards the size compaction cuts outputs at.
            assert!(estimate > raw_bytes(&rows) * 9 / 10, "estimate {estimate}");
        }
        let (table, layout) = check(&fs, path, &rows);
        assert!(has_dictionary(&layout), "{name}");
        assert_eq!(table.properties().compression, "zstd-dict");
        assert!(data_tags(&layout).iter().all(|&t| t == 5), "{name}");
    }
}

#[test]
fn too_few_samples_fall_back_to_plain_zstd() {
    let fs = MemFs::new();
    // About 8 KiB of rows: below 8 dictionary sizes of samples, so no dictionary is trained.
    let rows = rows(40);
    let path = Path::new("/small.sst");
    write(&fs, path, options(16 << 10, 0), &rows);
    let (table, layout) = check(&fs, path, &rows);
    assert!(!has_dictionary(&layout));
    assert_eq!(table.properties().compression, "zstd");
    assert!(data_tags(&layout).iter().all(|&t| t == 4 || t == 0));

    // Samples zstd's trainer cannot use (identical blocks) also leave plain zstd, not an error.
    let same: Vec<(Vec<u8>, Vec<u8>)> = (0..4000u32)
        .map(|i| (format!("k{i:08}").into_bytes(), vec![b'x'; 100]))
        .collect();
    let path = Path::new("/uniform.sst");
    write(&fs, path, options(1 << 10, 0), &same);
    let (table, _) = check(&fs, path, &same);
    assert!(["zstd", "zstd-dict"].contains(&table.properties().compression.as_str()));
}

#[test]
fn training_is_only_for_zstd_and_bounded() {
    let fs = MemFs::new();
    let rows = rows(2_000);
    let path = Path::new("/lz4.sst");
    let lz4 = WriterOptions {
        compression: Compression::Lz4,
        ..options(4 << 10, 0)
    };
    write(&fs, path, lz4, &rows);
    let (table, layout) = check(&fs, path, &rows);
    assert!(!has_dictionary(&layout));
    assert_eq!(table.properties().compression, "lz4");

    let too_big = options(64 << 20, 0);
    assert!(TableWriter::create(&fs, Path::new("/big.sst"), too_big).is_err());
    let too_much = options(16 << 10, 1 << 30);
    assert!(TableWriter::create(&fs, Path::new("/much.sst"), too_much).is_err());
}
