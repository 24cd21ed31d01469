//! Runs every `shale_sst::testing::fuzz_*` entry point (the bodies of the cargo-fuzz targets
//! in fuzz/) on a fixed, seeded set of inputs: valid encodings taken from real tables (whole
//! files, every block as stored, footers), those mutated by bit flips, truncations and
//! insertions, and random bytes. The assertion is that nothing panics; an input `cargo fuzz`
//! finds crashing becomes a named case in `fuzz_regressions`.
//!
//! `SHALE_FUZZ_SEEDS=<dir>` also writes the valid inputs to `<dir>/<target>/` as a seed
//! corpus for `cargo fuzz run <target> <dir>/<target>` (see fuzz/README.md).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_fs::{FileSystem, MemFs, OsFs};
use shale_sst::format::FOOTER_SIZE;
use shale_sst::testing::{
    fuzz_block, fuzz_decompress, fuzz_filter, fuzz_footer, fuzz_index, fuzz_properties, fuzz_table,
};
use shale_sst::{
    train_zstd_dictionary, BlockKind, ChecksumType, Compression, FixedPrefix, Footer, ReadOptions,
    Table, TableOpenOptions, TableWriter, ValueKind, WriterOptions,
};

/// The fuzz targets, by the name of their file in `fuzz/fuzz_targets`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    Block,
    Index,
    Filter,
    Properties,
    Footer,
    Decompress,
    Table,
}

impl Target {
    const ALL: [Target; 7] = [
        Target::Block,
        Target::Index,
        Target::Filter,
        Target::Properties,
        Target::Footer,
        Target::Decompress,
        Target::Table,
    ];

    fn name(self) -> &'static str {
        match self {
            Target::Block => "block",
            Target::Index => "index",
            Target::Filter => "filter",
            Target::Properties => "properties",
            Target::Footer => "footer",
            Target::Decompress => "decompress",
            Target::Table => "table",
        }
    }

    fn run(self, data: &[u8]) {
        match self {
            Target::Block => fuzz_block(data),
            Target::Index => fuzz_index(data),
            Target::Filter => fuzz_filter(data),
            Target::Properties => fuzz_properties(data),
            Target::Footer => fuzz_footer(data),
            Target::Decompress => fuzz_decompress(data),
            Target::Table => fuzz_table(data),
        }
    }
}

/// Valid inputs for each target.
type Seeds = BTreeMap<Target, Vec<Vec<u8>>>;

fn dictionary() -> Arc<[u8]> {
    let mut rng = SmallRng::seed_from_u64(11);
    let samples: Vec<Vec<u8>> = (0..500).map(|i| value(&mut rng, i)).collect();
    let refs: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
    train_zstd_dictionary(&refs, 1024).unwrap().into()
}

fn value(rng: &mut SmallRng, i: u32) -> Vec<u8> {
    let mut v = format!("row {i} of the smoke table, ").repeat(rng.gen_range(0..3));
    v.push_str(&"x".repeat(rng.gen_range(0..20)));
    v.into_bytes()
}

/// Writes a table with `compression`, every meta block kind, and small blocks; returns the
/// file.
fn valid_table(fs: &MemFs, path: &Path, compression: Compression, entries: u32) -> Vec<u8> {
    let mut rng = SmallRng::seed_from_u64(u64::from(entries));
    let options = WriterOptions {
        block_size: 200,
        block_restart_interval: 3,
        compression,
        compression_dictionary: (compression == Compression::ZstdDict).then(dictionary),
        checksum: if entries.is_multiple_of(2) {
            ChecksumType::Crc32c
        } else {
            ChecksumType::Xxh3
        },
        prefix_extractor: Some(Arc::new(FixedPrefix::new(4))),
        creation_time: Some(1_700_000_000),
        // Both index encodings among the seeds.
        format_version: if entries.is_multiple_of(3) { 1 } else { 2 },
        ..WriterOptions::default()
    };
    let mut writer = TableWriter::create(fs, path, options).unwrap();
    for i in 0..entries {
        let key = format!("k{:03}{}", i / 3, ["", "-x", "-yy"][i as usize % 3]);
        let kind = if i % 7 == 3 {
            ValueKind::Deletion
        } else {
            ValueKind::Value
        };
        writer
            .add_entry(
                key.as_bytes(),
                u64::from(1000 - i),
                kind,
                &value(&mut rng, i),
            )
            .unwrap();
    }
    writer.add_range_deletion(b"k005", b"k010", 7).unwrap();
    writer.add_range_deletion(b"a", b"b", 3).unwrap();
    writer.finish().unwrap();
    fs.file_contents(path).unwrap()
}

/// Valid encodings for every target, taken from tables with every codec. Also checks that each
/// valid table opens and verifies, so the seeds really are valid.
fn seeds() -> Seeds {
    let fs = MemFs::new();
    let mut seeds = Seeds::new();
    let codecs = [
        Compression::None,
        Compression::Snappy,
        Compression::Zlib,
        Compression::Lz4,
        Compression::Zstd,
        Compression::ZstdDict,
    ];
    for (n, compression) in codecs.into_iter().enumerate() {
        for entries in [0, 1, 40 + n as u32] {
            let path = PathBuf::from(format!("/{compression}-{entries}.sst"));
            let file = valid_table(&fs, &path, compression, entries);
            let table = Table::open(&fs, &path, &TableOpenOptions::default()).unwrap();
            let layout = table.verify().unwrap();
            let mut iter = table.iter(ReadOptions::default());
            iter.seek_to_first();
            let mut read = 0;
            while iter.valid() {
                read += 1;
                iter.next();
            }
            iter.status().unwrap();
            assert_eq!(read, entries);
            if entries > 0 {
                assert!(layout.blocks.iter().any(|b| b.kind == BlockKind::Data));
            }

            let footer = &file[file.len() - FOOTER_SIZE..];
            assert_eq!(&Footer::decode(footer).unwrap(), table.footer());
            seeds
                .entry(Target::Footer)
                .or_default()
                .push(footer.to_vec());
            for block in &layout.blocks {
                let start = block.handle.offset as usize;
                let stored = &file[start..start + block.handle.size as usize];
                let tag = file[start + block.handle.size as usize];
                let mut tagged = vec![tag];
                tagged.extend_from_slice(stored);
                seeds.entry(Target::Decompress).or_default().push(tagged);
                // Meta blocks are stored uncompressed, and so are data blocks that did not
                // shrink: their stored bytes are the contents the decoders read.
                if tag != 0 {
                    continue;
                }
                let targets: &[Target] = match block.kind {
                    BlockKind::Data | BlockKind::RangeDeletion | BlockKind::Metaindex => {
                        &[Target::Block]
                    }
                    BlockKind::Index => &[Target::Index, Target::Block],
                    BlockKind::Properties => &[Target::Properties, Target::Block],
                    BlockKind::Filter | BlockKind::PrefixFilter => &[Target::Filter],
                    BlockKind::CompressionDict => &[Target::Decompress],
                };
                for &target in targets {
                    seeds.entry(target).or_default().push(stored.to_vec());
                }
            }
            seeds.entry(Target::Table).or_default().push(file);
        }
    }
    for target in Target::ALL {
        let n = seeds.get(&target).map_or(0, Vec::len);
        assert!(n > 0, "no seed for {}", target.name());
    }
    seeds
}

/// A copy of `input` with a few random edits: bit flips, byte overwrites, truncation,
/// insertion of random or duplicated bytes, or removal of a range.
fn mutate(rng: &mut SmallRng, input: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..rng.gen_range(1..=3) {
        let len = out.len();
        match rng.gen_range(0..6) {
            0 if len > 0 => {
                let at = rng.gen_range(0..len);
                out[at] ^= 1 << rng.gen_range(0..8);
            }
            1 if len > 0 => {
                let at = rng.gen_range(0..len);
                out[at] = [0, 0xff, 0x7f, 0x80, rng.gen()][rng.gen_range(0..5)];
            }
            2 => out.truncate(rng.gen_range(0..=len)),
            3 => {
                let at = rng.gen_range(0..=len);
                let count = rng.gen_range(1..16);
                let inserted: Vec<u8> = (0..count).map(|_| rng.gen()).collect();
                out.splice(at..at, inserted);
            }
            4 if len > 0 => {
                let from = rng.gen_range(0..len);
                let to = rng.gen_range(from..=len.min(from + 32));
                let copy = out[from..to].to_vec();
                let at = rng.gen_range(0..=len);
                out.splice(at..at, copy);
            }
            _ if len > 0 => {
                let from = rng.gen_range(0..len);
                let to = rng.gen_range(from..=len.min(from + 32));
                out.drain(from..to);
            }
            _ => out.push(rng.gen()),
        }
    }
    out
}

/// Mutants per seed: whole tables are the slowest input, footers the cheapest.
fn mutants_per_seed(target: Target) -> usize {
    match target {
        Target::Table => 40,
        Target::Footer => 60,
        _ => 25,
    }
}

#[test]
fn valid_inputs_mutants_and_random_bytes_never_panic() {
    let seeds = seeds();
    if let Ok(dir) = std::env::var("SHALE_FUZZ_SEEDS") {
        write_seed_corpus(Path::new(&dir), &seeds);
    }
    let mut rng = SmallRng::seed_from_u64(0xf022);
    let mut cases = 0;
    for (&target, inputs) in &seeds {
        for input in inputs {
            target.run(input);
            cases += 1;
            for _ in 0..mutants_per_seed(target) {
                target.run(&mutate(&mut rng, input));
                cases += 1;
            }
        }
        // Inputs for one target are often worth trying on the others.
        for input in seeds.values().flatten().take(200) {
            target.run(input);
            cases += 1;
        }
        for _ in 0..300 {
            let len = match rng.gen_range(0..4) {
                0 => rng.gen_range(0..16),
                1 => FOOTER_SIZE,
                _ => rng.gen_range(0..600),
            };
            let bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            target.run(&bytes);
            cases += 1;
        }
    }
    assert!(cases > 5000, "{cases} cases");
}

/// The trailer checksum of a stored block (docs/format/sst.md, "Block trailer"), so that
/// mutated blocks get past the checksum to the decoders behind it.
fn block_checksum(checksum: ChecksumType, stored: &[u8], tag: u8) -> u32 {
    let mut bytes = stored.to_vec();
    bytes.push(tag);
    match checksum {
        ChecksumType::Crc32c => crc32c::crc32c(&bytes)
            .rotate_right(15)
            .wrapping_add(0xa282_ead8),
        ChecksumType::Xxh3 => xxhash_rust::xxh3::xxh3_64(&bytes) as u32,
    }
}

/// Whole tables with one block edited in place and its checksum recomputed: open, verify and
/// the iterators must cope with damage no checksum catches (a buggy writer, or a collision).
#[test]
fn resealed_block_mutants_never_panic() {
    let fs = MemFs::new();
    let mut rng = SmallRng::seed_from_u64(0x5ea1);
    let mut opened = 0;
    for compression in [Compression::None, Compression::Lz4, Compression::ZstdDict] {
        for entries in [41, 60] {
            let path = PathBuf::from(format!("/reseal-{compression}-{entries}.sst"));
            let file = valid_table(&fs, &path, compression, entries);
            let table = Table::open(&fs, &path, &TableOpenOptions::default()).unwrap();
            let checksum = table.checksum_type();
            let layout = table.verify().unwrap();
            for block in &layout.blocks {
                let start = block.handle.offset as usize;
                let end = start + block.handle.size as usize;
                let tag = file[end];
                assert_eq!(
                    block_checksum(checksum, &file[start..end], tag),
                    block.checksum,
                    "the test's checksum disagrees with the file's"
                );
                for _ in 0..12 {
                    let mut bad = file.clone();
                    for _ in 0..rng.gen_range(1..=3) {
                        // An empty stored block leaves only its compression tag to edit.
                        let at = if end > start {
                            rng.gen_range(start..end)
                        } else {
                            end
                        };
                        match rng.gen_range(0..3) {
                            0 => bad[at] ^= 1 << rng.gen_range(0..8),
                            1 => bad[at] = rng.gen(),
                            _ => bad[end] = rng.gen_range(0..7), // the compression tag
                        }
                    }
                    let sum = block_checksum(checksum, &bad[start..end], bad[end]);
                    bad[end + 1..end + 5].copy_from_slice(&sum.to_le_bytes());
                    fuzz_table(&bad);
                    let copy = Path::new("/resealed.sst");
                    fs.write_file_for_test(copy, &bad).unwrap();
                    if let Ok(table) = Table::open(&fs, copy, &TableOpenOptions::default()) {
                        opened += 1;
                        let _ = table.verify();
                        for user_key in [&b"k003"[..], b"k010-x", b"zzz"] {
                            let _ = table.get(user_key, u64::MAX >> 8);
                        }
                    }
                }
            }
        }
    }
    // Damaged data blocks do not stop a table from opening, so many mutants get deep.
    assert!(opened > 200, "only {opened} mutants opened");
}

/// Inputs that crashed a `cargo fuzz` target, each named after what it exercised (none so
/// far), and edge inputs every decoder must refuse or accept without panicking.
#[test]
fn fuzz_regressions() {
    let cases: &[(Target, &[u8])] = &[
        (Target::Block, b""),
        (Target::Block, &[0, 0, 0, 0]),
        (Target::Block, &[1, 0, 0, 0]),
        (Target::Footer, &[0; FOOTER_SIZE]),
        (Target::Decompress, &[5]),
        (Target::Table, b"SHALESST"),
    ];
    for &(target, input) in cases {
        target.run(input);
    }
}

fn write_seed_corpus(dir: &Path, seeds: &Seeds) {
    let fs = OsFs::new();
    for (target, inputs) in seeds {
        let target_dir = dir.join(target.name());
        fs.create_dir_all(&target_dir).unwrap();
        for (i, input) in inputs.iter().enumerate() {
            let mut file = fs.create(&target_dir.join(format!("seed-{i:04}"))).unwrap();
            file.append(input).unwrap();
            file.sync_data().unwrap();
        }
    }
}
