//! `shale tool stats DIR`: statistics of a database computed from its files, without opening
//! it (so it works beside a running writer and on a copy): per level, the entries, deletions
//! and raw key and value bytes the tables' properties record, the codecs and the compression
//! ratio they reached; for the directory, WAL bytes, bytes of files no version references, and
//! the space amplification of the tree.
//!
//! Counters of a running database (compactions per reason, stalls, bytes written) live in the
//! process: `Db::stats()` gives them, and `shale bench ... --benchmarks=...,stats` prints them.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use serde_json::{json, Value};
use shale_engine::inspect::wal::RecoveryMode;
use shale_engine::inspect::{live_manifest, parse_table_file_name, read_manifest};
use shale_engine::inspect::{FileMetaData, Version};
use shale_fs::{FileSystem, OsFs};
use shale_sst::{BytewiseComparator, Comparator, Table, TableOpenOptions};

use crate::output::{print_json, progress, Failure};
use crate::tool_manifest::{blob_files_text, blob_json, human_bytes, shown_levels};
use crate::tool_wal::log_files;

/// Flags of `shale tool stats`.
#[derive(Debug, Args)]
pub struct StatsToolArgs {
    /// The database directory.
    pub dir: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What the table properties of a set of files add up to.
#[derive(Debug, Default, Clone)]
struct LevelStats {
    files: u64,
    file_bytes: u64,
    entries: u64,
    deletions: u64,
    range_deletions: u64,
    raw_key_bytes: u64,
    raw_value_bytes: u64,
    /// Files per codec name.
    codecs: BTreeMap<String, u64>,
}

impl LevelStats {
    fn add_table(&mut self, size: u64, table: &Table) {
        let props = table.properties();
        self.files += 1;
        self.file_bytes += size;
        self.entries += props.num_entries;
        self.deletions += props.num_deletions;
        self.range_deletions += props.num_range_deletions;
        self.raw_key_bytes += props.raw_key_size;
        self.raw_value_bytes += props.raw_value_size;
        *self.codecs.entry(props.compression.clone()).or_default() += 1;
    }

    fn merge(&mut self, other: &LevelStats) {
        self.files += other.files;
        self.file_bytes += other.file_bytes;
        self.entries += other.entries;
        self.deletions += other.deletions;
        self.range_deletions += other.range_deletions;
        self.raw_key_bytes += other.raw_key_bytes;
        self.raw_value_bytes += other.raw_value_bytes;
        for (codec, n) in &other.codecs {
            *self.codecs.entry(codec.clone()).or_default() += n;
        }
    }

    fn raw_bytes(&self) -> u64 {
        self.raw_key_bytes + self.raw_value_bytes
    }

    /// Raw key and value bytes per file byte (what the codecs and prefix compression saved).
    fn compression_ratio(&self) -> f64 {
        if self.file_bytes == 0 {
            0.0
        } else {
            self.raw_bytes() as f64 / self.file_bytes as f64
        }
    }

    fn codecs_text(&self) -> String {
        if self.codecs.is_empty() {
            return "-".into();
        }
        self.codecs
            .iter()
            .map(|(codec, n)| format!("{codec}:{n}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn json(&self, level: Option<usize>) -> Value {
        json!({
            "level": level,
            "files": self.files,
            "file_bytes": self.file_bytes,
            "entries": self.entries,
            "deletions": self.deletions,
            "range_deletions": self.range_deletions,
            "raw_key_bytes": self.raw_key_bytes,
            "raw_value_bytes": self.raw_value_bytes,
            "compression_ratio": self.compression_ratio(),
            "codecs": self.codecs,
        })
    }
}

/// One keyspace: its levels (index = level) and their sum.
struct KeyspaceStats {
    id: u32,
    name: String,
    levels: Vec<LevelStats>,
    total: LevelStats,
}

impl KeyspaceStats {
    /// Bytes of all levels over the bytes of the deepest non-empty one: how much more space the
    /// tree takes than its last level (the fully compacted size, roughly), `RocksDB`'s estimate.
    fn space_amplification(&self) -> Option<f64> {
        let last = self.levels.iter().rev().find(|l| l.files > 0)?;
        Some(self.total.file_bytes as f64 / last.file_bytes.max(1) as f64)
    }
}

/// Runs `shale tool stats`.
pub fn run(args: &StatsToolArgs) -> Result<(), Failure> {
    let fs = OsFs::new();
    if !args.dir.is_dir() {
        return Err(Failure::error(format!(
            "{} is not a directory",
            args.dir.display()
        )));
    }
    let manifest = live_manifest(&fs, &args.dir)?;
    let comparator: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
    let state = read_manifest(
        &fs,
        &manifest,
        &comparator,
        RecoveryMode::TolerateCorruptedTailRecords,
        &mut |_, _| {},
    )?;
    let version = &state.version;
    let live: Vec<(u32, usize, Arc<FileMetaData>)> = version
        .keyspaces()
        .into_iter()
        .flat_map(|(id, _)| {
            (0..version.num_levels()).flat_map(move |level| {
                version
                    .files(id, level)
                    .iter()
                    .map(move |f| (id, level, f.clone()))
            })
        })
        .collect();
    let mut keyspaces = read_tables(&fs, args, version, &comparator, &live)?;
    let mut all = LevelStats::default();
    for keyspace in &mut keyspaces {
        for level in &keyspace.levels {
            keyspace.total.merge(level);
        }
        all.merge(&keyspace.total);
    }
    let numbers = live.iter().map(|(_, _, f)| f.number).collect();
    let files = DirFiles::read(&fs, args, &numbers)?;
    if args.json {
        return print_json(&json!({
            "manifest": manifest.display().to_string(),
            "last_sequence": state.last_sequence,
            "keyspaces": keyspaces.iter().map(|k| json!({
                "id": k.id,
                "name": k.name,
                "levels": k.levels.iter().enumerate().map(|(i, l)| l.json(Some(i))).collect::<Vec<_>>(),
                "total": k.total.json(None),
                "space_amplification": k.space_amplification(),
                "blob_files": version.keyspace_blob_files(k.id).map(|b| blob_json(b)).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "total": all.json(None),
            "wal_files": files.wal_files,
            "wal_bytes": files.wal_bytes,
            "unreferenced_tables": files.unreferenced_tables,
            "unreferenced_table_bytes": files.unreferenced_bytes,
        }));
    }
    let mut out = BufWriter::new(io::stdout().lock());
    for keyspace in &keyspaces {
        write_keyspace(&mut out, keyspace)?;
        blob_files_text(version, keyspace.id, true, &mut out)?;
    }
    writeln!(
        out,
        "all keyspaces: {} tables, {} ({} entries, {} raw, ratio {:.2}), last sequence {}",
        all.files,
        human_bytes(all.file_bytes),
        all.entries,
        human_bytes(all.raw_bytes()),
        all.compression_ratio(),
        state.last_sequence
    )?;
    writeln!(
        out,
        "WAL: {} files, {}; tables no version references: {}, {}",
        files.wal_files,
        human_bytes(files.wal_bytes),
        files.unreferenced_tables,
        human_bytes(files.unreferenced_bytes)
    )?;
    out.flush()?;
    Ok(())
}

/// Every keyspace's levels, summed from the properties of the live tables `live`.
/// The codecs the live tables of the database in `dir` use and the compression they reach,
/// e.g. `zstd:12,none:1 over 13 tables (4.1 MB), ratio 2.31 raw/file`; `None` without a
/// database or tables (`shale bench --use_existing_db` prints it in its header).
pub fn compression_summary(dir: &Path) -> Result<Option<String>, Failure> {
    let fs = OsFs::new();
    if !fs.exists(&dir.join(shale_engine::inspect::CURRENT_FILE_NAME))? {
        return Ok(None);
    }
    let manifest = live_manifest(&fs, dir)?;
    let comparator: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
    let state = read_manifest(
        &fs,
        &manifest,
        &comparator,
        RecoveryMode::TolerateCorruptedTailRecords,
        &mut |_, _| {},
    )?;
    let mut all = LevelStats::default();
    for (_, _, meta) in state.version.all_files() {
        let options = TableOpenOptions {
            comparator: comparator.clone(),
            global_seqno: meta.global_seqno,
            ..TableOpenOptions::default()
        };
        let table = Table::open(&fs, &dir.join(format!("{:06}.sst", meta.number)), &options)?;
        all.add_table(meta.size, &table);
    }
    if all.files == 0 {
        return Ok(None);
    }
    Ok(Some(format!(
        "{} over {} tables ({}), ratio {:.2} raw/file",
        all.codecs_text(),
        all.files,
        human_bytes(all.file_bytes),
        all.compression_ratio()
    )))
}

fn read_tables(
    fs: &OsFs,
    args: &StatsToolArgs,
    version: &Version,
    comparator: &Arc<dyn Comparator>,
    live: &[(u32, usize, Arc<FileMetaData>)],
) -> Result<Vec<KeyspaceStats>, Failure> {
    let bar = progress(live.len() as u64, "reading table properties");
    let mut keyspaces = Vec::new();
    for (id, name) in version.keyspaces() {
        let levels = vec![LevelStats::default(); shown_levels(version, id)];
        keyspaces.push(KeyspaceStats {
            id,
            name,
            levels,
            total: LevelStats::default(),
        });
    }
    for (id, level, meta) in live {
        let path = args.dir.join(format!("{:06}.sst", meta.number));
        let options = TableOpenOptions {
            comparator: comparator.clone(),
            global_seqno: meta.global_seqno,
            ..TableOpenOptions::default()
        };
        let table = Table::open(fs, &path, &options)?;
        let keyspace = keyspaces
            .iter_mut()
            .find(|k| k.id == *id)
            .expect("live files come from the version's keyspaces");
        if keyspace.levels.len() <= *level {
            keyspace.levels.resize(level + 1, LevelStats::default());
        }
        keyspace.levels[*level].add_table(meta.size, &table);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(keyspaces)
}

fn write_keyspace(out: &mut impl Write, keyspace: &KeyspaceStats) -> io::Result<()> {
    writeln!(
        out,
        "keyspace {} {}",
        keyspace.id,
        shale_sst::printable(keyspace.name.as_bytes())
    )?;
    writeln!(
        out,
        "  {:<6} {:>6} {:>10} {:>12} {:>10} {:>8} {:>10} {:>10} {:>6}  codecs",
        "level", "files", "size", "entries", "deletions", "rangedel", "keys", "values", "ratio"
    )?;
    let rows = keyspace
        .levels
        .iter()
        .enumerate()
        .map(|(i, l)| (format!("L{i}"), l))
        .chain([("total".to_owned(), &keyspace.total)]);
    for (label, l) in rows {
        writeln!(
            out,
            "  {label:<6} {:>6} {:>10} {:>12} {:>10} {:>8} {:>10} {:>10} {:>6.2}  {}",
            l.files,
            human_bytes(l.file_bytes),
            l.entries,
            l.deletions,
            l.range_deletions,
            human_bytes(l.raw_key_bytes),
            human_bytes(l.raw_value_bytes),
            l.compression_ratio(),
            l.codecs_text()
        )?;
    }
    if let Some(amp) = keyspace.space_amplification() {
        writeln!(
            out,
            "  space amplification (all levels / deepest level): {amp:.2}"
        )?;
    }
    Ok(())
}

/// Files of the directory beyond the live tables.
struct DirFiles {
    wal_files: u64,
    wal_bytes: u64,
    unreferenced_tables: u64,
    unreferenced_bytes: u64,
}

impl DirFiles {
    fn read(fs: &OsFs, args: &StatsToolArgs, live: &BTreeSet<u64>) -> Result<DirFiles, Failure> {
        let mut files = DirFiles {
            wal_files: 0,
            wal_bytes: 0,
            unreferenced_tables: 0,
            unreferenced_bytes: 0,
        };
        for (_, path) in log_files(fs, &args.dir)? {
            files.wal_files += 1;
            files.wal_bytes += fs.size(&path)?;
        }
        for name in fs.list(&args.dir)? {
            let Some(number) = parse_table_file_name(&name) else {
                continue;
            };
            if !live.contains(&number) {
                files.unreferenced_tables += 1;
                files.unreferenced_bytes += fs.size(&args.dir.join(&name))?;
            }
        }
        Ok(files)
    }
}
