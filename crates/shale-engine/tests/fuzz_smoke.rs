//! Runs every `shale_engine::testing::fuzz_*` entry point (the bodies of the cargo-fuzz
//! targets in fuzz/) on a fixed, seeded set of inputs: valid encodings taken from a real
//! database on `MemFs` (its WALs, MANIFESTs, CURRENT and OPTIONS files, the batches its WAL
//! records carry and the edits its MANIFEST records carry), those mutated by bit flips,
//! truncations and insertions, and random bytes. The assertion is that nothing panics (the
//! entry points also assert their round trips); inputs `cargo fuzz` found crashing are in
//! `tests/fuzz_regressions.rs`.
//!
//! The database's table files (blob references, range deletions, the engine's codecs) also go
//! to shale-sst's `table` entry point.
//!
//! `SHALE_FUZZ_SEEDS=<dir>` also writes the valid inputs to `<dir>/<target>/` as a seed
//! corpus for `cargo fuzz run <target>` (see fuzz/README.md, scripts/fuzz-seeds.sh).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::inspect::wal::format::parse_log_file_name;
use shale_engine::inspect::wal::{LogReader, RecoveryMode};
use shale_engine::inspect::{
    parse_manifest_file_name, parse_options_file_name, parse_table_file_name, VersionEdit,
    CURRENT_FILE_NAME,
};
use shale_engine::testing::{
    fuzz_blob_file, fuzz_current, fuzz_manifest, fuzz_manifest_edit, fuzz_manifest_records,
    fuzz_options, fuzz_wal, fuzz_write_batch, manifest_records_input,
};
use shale_engine::{Db, Durability, KeyspaceOptions, Options, WriteBatch, WriteOptions};
use shale_fs::{FileSystem, MemFs, OsFs};

/// The fuzz targets, by the name of their file in `fuzz/fuzz_targets`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    Wal,
    WriteBatch,
    ManifestEdit,
    Manifest,
    ManifestRecords,
    Current,
    Options,
    Blob,
    /// shale-sst's `table` target, given the engine's tables (blob references, range
    /// deletions, the engine's table properties).
    Table,
}

impl Target {
    const ALL: [Target; 9] = [
        Target::Wal,
        Target::WriteBatch,
        Target::ManifestEdit,
        Target::Manifest,
        Target::ManifestRecords,
        Target::Current,
        Target::Options,
        Target::Blob,
        Target::Table,
    ];

    fn name(self) -> &'static str {
        match self {
            Target::Wal => "wal",
            Target::WriteBatch => "write_batch",
            Target::ManifestEdit => "manifest_edit",
            Target::Manifest => "manifest",
            Target::ManifestRecords => "manifest_records",
            Target::Current => "current",
            Target::Options => "options",
            Target::Blob => "blob",
            Target::Table => "table",
        }
    }

    fn run(self, data: &[u8]) {
        match self {
            Target::Wal => fuzz_wal(data),
            Target::WriteBatch => fuzz_write_batch(data),
            Target::ManifestEdit => fuzz_manifest_edit(data),
            Target::Manifest => fuzz_manifest(data),
            Target::ManifestRecords => fuzz_manifest_records(data),
            Target::Current => fuzz_current(data),
            Target::Options => fuzz_options(data),
            Target::Blob => fuzz_blob_file(data),
            Target::Table => shale_sst::testing::fuzz_table(data),
        }
    }
}

/// Valid inputs for each target.
type Seeds = BTreeMap<Target, Vec<Vec<u8>>>;

/// A batch with every entry kind, in two keyspaces, with empty and long keys and values.
fn every_kind_batch(round: u32) -> WriteBatch {
    let mut batch = WriteBatch::new();
    batch
        .put(0, format!("key{round}").as_bytes(), b"value")
        .unwrap();
    batch.put(1, b"", b"").unwrap();
    batch.delete(0, b"gone").unwrap();
    batch.delete_range(0, b"a", b"c").unwrap();
    batch
        .put(0, &[0xff; 200], &vec![round as u8; 300 + round as usize])
        .unwrap();
    batch.delete_range(1, b"", b"\xff").unwrap();
    batch.set_first_seqno(u64::from(round) * 1000 + 1);
    batch
}

/// The logical records of a log file (a WAL or a MANIFEST) named `number`, read strictly,
/// and the format version the log names.
fn records(fs: &MemFs, path: &Path, number: u64) -> (Vec<Vec<u8>>, Option<u32>) {
    let file = fs.open_read(path).unwrap();
    let mut reader = LogReader::new(file, number, RecoveryMode::AbsoluteConsistency).unwrap();
    let mut out = Vec::new();
    while let Some((record, _)) = reader.read_record().unwrap() {
        out.push(record);
    }
    (out, reader.format_version())
}

/// Takes every database file of `/db` that a target reads, as it is now.
fn collect_files(fs: &MemFs, seeds: &mut Seeds) {
    for name in fs.list(Path::new("/db")).unwrap() {
        let path = Path::new("/db").join(&name);
        let bytes = fs.file_contents(&path).unwrap();
        if let Some(number) = parse_log_file_name(&name) {
            let (records, version) = records(fs, &path, number);
            for record in records {
                // `fuzz_write_batch` reads its input both ways: as the in-memory encoding
                // and as a version 4 WAL record payload.
                let batch = WriteBatch::from_wal_record(record.clone(), version, &path, 0).unwrap();
                let inputs = seeds.entry(Target::WriteBatch).or_default();
                inputs.push(batch.into_data());
                inputs.push(record);
            }
            seeds.entry(Target::Wal).or_default().push(bytes);
        } else if let Some(number) = parse_manifest_file_name(&name) {
            let (records, _) = records(fs, &path, number);
            seeds
                .entry(Target::ManifestRecords)
                .or_default()
                .push(manifest_records_input(&records));
            for record in records {
                VersionEdit::decode(&record).unwrap();
                seeds.entry(Target::ManifestEdit).or_default().push(record);
            }
            seeds.entry(Target::Manifest).or_default().push(bytes);
        } else if name == CURRENT_FILE_NAME {
            seeds.entry(Target::Current).or_default().push(bytes);
        } else if parse_options_file_name(&name).is_some() {
            seeds.entry(Target::Options).or_default().push(bytes);
        } else if shale_engine::inspect::blob::parse_blob_file_name(&name).is_some() {
            seeds.entry(Target::Blob).or_default().push(bytes);
        } else if parse_table_file_name(&name).is_some() {
            seeds.entry(Target::Table).or_default().push(bytes);
        }
    }
}

/// Valid encodings for every target, taken from a database written on `MemFs`: every write
/// kind, a second keyspace (created and dropped), records fragmented across WAL blocks,
/// flushes, reopens and a compaction. Files are taken at several points because a close or
/// reopen replaces the MANIFEST and WAL.
fn seeds() -> Seeds {
    let fs = MemFs::new();
    let options = || {
        let mut options = Options {
            file_system: Arc::new(fs.clone()),
            durability: Durability::Sync,
            ..Options::default()
        };
        options.default_keyspace.write_buffer_size = 64 << 10;
        options.default_keyspace.level0_compaction_trigger = 2;
        options
    };
    let mut seeds = Seeds::new();
    let db = Db::open("/db", options()).unwrap();
    db.wait_for_background_work().unwrap();
    collect_files(&fs, &mut seeds);
    // Its values of 100 bytes go to blob files (lz4-compressed, a run of one byte).
    let other = db
        .create_keyspace(
            "other",
            KeyspaceOptions {
                enable_blob_files: true,
                min_blob_size: 50,
                blob_compression: shale_sst::Compression::Lz4,
                ..KeyspaceOptions::default()
            },
        )
        .unwrap();
    for round in 0..4u32 {
        db.put(format!("k{round}").as_bytes(), b"v").unwrap();
        db.delete(b"k0").unwrap();
        db.delete_range(b"x", b"y").unwrap();
        other.put(b"other key", &[7; 100]).unwrap();
        // Kept: flushes leave out the overwritten "other key", so this one makes the blob.
        other
            .put(format!("kept {round}").as_bytes(), &[7; 100])
            .unwrap();
        // Batches may only name keyspaces that exist: 0 and `other`'s id.
        let mut batch = WriteBatch::new();
        batch.put(0, b"batched", b"1").unwrap();
        batch.delete(other.id(), b"other key").unwrap();
        batch.delete_range(other.id(), b"a", b"b").unwrap();
        db.write(batch, &WriteOptions::default()).unwrap();
        if round == 1 {
            // A record longer than a WAL block: FIRST, MIDDLE and LAST fragments.
            db.put(b"big", &vec![0x5a; 70_000]).unwrap();
        }
        // The big value fills the memtable and starts a flush: a table file half written
        // is not a valid seed (and the `/check.sst` check below would fail on it).
        db.wait_for_background_work().unwrap();
        collect_files(&fs, &mut seeds);
        db.flush().unwrap();
        db.wait_for_background_work().unwrap();
    }
    collect_files(&fs, &mut seeds);
    db.drop_keyspace("other").unwrap();
    db.put(b"after drop", b"1").unwrap();
    db.wait_for_background_work().unwrap();
    collect_files(&fs, &mut seeds);
    db.close().unwrap();
    collect_files(&fs, &mut seeds);
    let db = Db::open("/db", options()).unwrap();
    db.put(b"reopened", b"1").unwrap();
    db.wait_for_background_work().unwrap();
    collect_files(&fs, &mut seeds);
    db.close().unwrap();

    for round in 0..3 {
        let batch = every_kind_batch(round);
        seeds
            .entry(Target::WriteBatch)
            .or_default()
            .push(batch.into_data());
    }
    seeds
        .entry(Target::WriteBatch)
        .or_default()
        .push(WriteBatch::new().into_data());
    for seeds in seeds.values_mut() {
        seeds.sort();
        seeds.dedup();
    }
    // The engine's tables must open and verify as the `table` target opens them, so that
    // fuzzing from them starts past the footer.
    let check = MemFs::new();
    let path = Path::new("/check.sst");
    for table in seeds.get(&Target::Table).into_iter().flatten() {
        check.write_file_for_test(path, table).unwrap();
        let opened =
            shale_sst::Table::open(&check, path, &shale_sst::TableOpenOptions::default()).unwrap();
        opened.verify().unwrap();
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

/// Mutants per seed: whole files are slower to try than single records.
fn mutants_per_seed(target: Target) -> usize {
    match target {
        Target::Wal | Target::Manifest | Target::ManifestRecords => 150,
        Target::Table => 40,
        _ => 300,
    }
}

#[test]
fn valid_inputs_mutants_and_random_bytes_never_panic() {
    let seeds = seeds();
    if let Ok(dir) = std::env::var("SHALE_FUZZ_SEEDS") {
        write_seed_corpus(Path::new(&dir), &seeds);
    }
    let mut rng = SmallRng::seed_from_u64(0xe061);
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
        // Inputs for one target are often worth trying on the others (a WAL as a MANIFEST,
        // a batch as an edit).
        for input in seeds.values().flatten().take(200) {
            target.run(input);
            cases += 1;
        }
        for _ in 0..200 {
            let len = match rng.gen_range(0..3) {
                0 => rng.gen_range(0..16),
                _ => rng.gen_range(0..400),
            };
            let bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            target.run(&bytes);
            cases += 1;
        }
    }
    assert!(cases > 15_000, "{cases} cases");
}

fn write_seed_corpus(dir: &Path, seeds: &Seeds) {
    let fs = OsFs::new();
    for (target, inputs) in seeds {
        let target_dir = dir.join(target.name());
        fs.create_dir_all(&target_dir).unwrap();
        for (i, input) in inputs.iter().enumerate() {
            // `engine-`: the `table` directory also holds shale-sst's `seed-` files.
            let mut file = fs
                .create(&target_dir.join(format!("engine-{i:04}")))
                .unwrap();
            file.append(input).unwrap();
            file.sync_data().unwrap();
        }
    }
}
