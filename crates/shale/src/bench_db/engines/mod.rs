//! The seam between `shale bench`'s workload driver and the engine under test, so the same
//! benchmarks, keys, values and timing run against Shale and against peers in one process:
//!
//! - [`shale`]: this repository's engine (`shale_engine::Db`).
//! - [`redb`]: redb, a copy-on-write B-tree (pure Rust, always built).
//! - [`rocksdb`]: `RocksDB` through the `rocksdb` crate, only with the `rocksdb-peer` feature
//!   (it compiles `RocksDB`'s C++ sources, which takes many minutes).
//!
//! Every engine opens from the same [`Config`] and maps the flags it has an equivalent for;
//! docs/benchmarks.md lists what does not map. Writes are one entry per write (batch), as
//! `db_bench` writes them with `--batch_size=1`.

mod redb;
#[cfg(feature = "rocksdb-peer")]
mod rocksdb;
mod shale;

use std::path::Path;

use super::flags::Config;
use crate::output::Failure;

/// Bytes an engine counted as written, by source: where write-amp comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineBytes {
    /// The write-ahead log.
    pub wal: u64,
    /// Tables written by flushes.
    pub flush: u64,
    /// Tables written by compactions.
    pub compaction: u64,
}

impl EngineBytes {
    pub fn total(&self) -> u64 {
        self.wal + self.flush + self.compaction
    }

    /// What was written between `earlier` and `self` (counters only grow; saturating all the
    /// same, so a reset counter reads as zero rather than wrapping).
    pub fn since(&self, earlier: &EngineBytes) -> EngineBytes {
        EngineBytes {
            wal: self.wal.saturating_sub(earlier.wal),
            flush: self.flush.saturating_sub(earlier.flush),
            compaction: self.compaction.saturating_sub(earlier.compaction),
        }
    }
}

/// An engine the workload driver can run against. Shared by every benchmark thread.
pub trait Engine: Sync {
    /// Writes `key` = `value` as one write.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), Failure>;

    /// Deletes `key` as one write.
    fn delete(&self, key: &[u8]) -> Result<(), Failure>;

    /// Looks `key` up; the length of its value when found (the workloads only count bytes,
    /// so no engine has to copy the value out).
    fn get(&self, key: &[u8]) -> Result<Option<usize>, Failure>;

    /// An iterator over a consistent view of the whole key space, not yet positioned.
    fn cursor(&self) -> Result<Box<dyn Cursor + '_>, Failure>;

    /// Makes everything written so far durable and, for an LSM, moves the memtable to a table.
    fn flush(&self) -> Result<(), Failure>;

    /// Waits until no flush or compaction is pending (nothing for engines without any).
    fn wait_for_compaction(&self) -> Result<(), Failure>;

    /// `compact`: flushes, then compacts the whole key space down to the last level
    /// (`db_bench`'s `CompactRange`). A B-tree has no levels to merge: it only flushes.
    fn compact(&self) -> Result<(), Failure>;

    /// What the engine reports about itself, for `stats` and `--statistics`.
    fn stats_text(&self) -> Result<String, Failure>;

    /// Files and bytes per level, for `levelstats`; `None` for engines without levels.
    fn level_stats_text(&self) -> Result<Option<String>, Failure>;

    /// Bytes the engine itself counted as written to its files (log, flush and compaction)
    /// since it was opened, when it counts them.
    fn engine_bytes_written(&self) -> Option<EngineBytes>;

    /// Closes the database, reporting any error a drop would hide.
    fn close(self: Box<Self>) -> Result<(), Failure>;
}

/// An iterator positioned by seeks and moved by steps, like `RocksDB`'s `Iterator`.
pub trait Cursor {
    fn seek_to_first(&mut self);
    fn seek_to_last(&mut self);
    /// Positions at the first key at or after `key`.
    fn seek(&mut self, key: &[u8]);
    fn next(&mut self);
    fn prev(&mut self);
    fn valid(&self) -> bool;
    /// The current key; only while [`Cursor::valid`].
    fn key(&self) -> &[u8];
    /// The current value; only while [`Cursor::valid`].
    fn value(&self) -> &[u8];
    /// The error that ended the iteration, if one did.
    fn status(&self) -> Result<(), Failure>;
}

/// The engines `--engine` and `--engines` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    Shale,
    Redb,
    RocksDb,
}

impl EngineKind {
    const ALL: [(&'static str, EngineKind); 3] = [
        ("shale", EngineKind::Shale),
        ("redb", EngineKind::Redb),
        ("rocksdb", EngineKind::RocksDb),
    ];

    /// The name on the command line and in results.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, kind)| *kind == self)
            .map_or("?", |(name, _)| name)
    }

    /// The engine called `name`; an error names the known ones.
    pub fn from_name(name: &str) -> Result<Self, String> {
        let kind = Self::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, kind)| *kind)
            .ok_or_else(|| format!("unknown engine {name:?} (known: shale, redb, rocksdb)"))?;
        if kind == EngineKind::RocksDb && !cfg!(feature = "rocksdb-peer") {
            return Err("engine \"rocksdb\" is not built in: build with \
                 `cargo build --release -p shale --features rocksdb-peer`"
                .into());
        }
        Ok(kind)
    }

    /// The engine and version for the header line.
    pub fn version(self) -> String {
        match self {
            EngineKind::Shale => format!("Shale {}", env!("CARGO_PKG_VERSION")),
            // The crates' major versions as Cargo.toml pins them (neither crate exports one).
            EngineKind::Redb => "redb 4".into(),
            EngineKind::RocksDb => rocksdb_version(),
        }
    }

    /// Opens (creating unless `--use_existing_db`) this engine's database in `dir`.
    pub fn open(self, dir: &Path, config: &Config) -> Result<Box<dyn Engine>, Failure> {
        let engine: Box<dyn Engine> = match self {
            EngineKind::Shale => Box::new(shale::ShaleEngine::open(dir, config)?),
            EngineKind::Redb => Box::new(redb::RedbEngine::open(dir, config)?),
            EngineKind::RocksDb => open_rocksdb(dir, config)?,
        };
        Ok(engine)
    }

    /// Deletes this engine's database in `dir` (as `db_bench`'s `DestroyDB`): only the
    /// engine's own files, and nothing at all when the directory holds anything else.
    pub fn destroy(self, dir: &Path) -> Result<(), Failure> {
        match self {
            EngineKind::Shale => shale::destroy(dir),
            EngineKind::Redb => redb::destroy(dir),
            EngineKind::RocksDb => destroy_rocksdb(dir),
        }
    }
}

#[cfg(feature = "rocksdb-peer")]
fn rocksdb_version() -> String {
    "RocksDB 11 (rocksdb crate 0.25)".into()
}

#[cfg(not(feature = "rocksdb-peer"))]
fn rocksdb_version() -> String {
    "RocksDB (not built in)".into()
}

#[cfg(feature = "rocksdb-peer")]
fn open_rocksdb(dir: &Path, config: &Config) -> Result<Box<dyn Engine>, Failure> {
    Ok(Box::new(rocksdb::RocksDbEngine::open(dir, config)?))
}

#[cfg(not(feature = "rocksdb-peer"))]
fn open_rocksdb(_dir: &Path, _config: &Config) -> Result<Box<dyn Engine>, Failure> {
    Err(Failure::error(
        "engine \"rocksdb\" is not built in (feature rocksdb-peer)",
    ))
}

#[cfg(feature = "rocksdb-peer")]
fn destroy_rocksdb(dir: &Path) -> Result<(), Failure> {
    rocksdb::destroy(dir)
}

#[cfg(not(feature = "rocksdb-peer"))]
fn destroy_rocksdb(_dir: &Path) -> Result<(), Failure> {
    Err(Failure::error(
        "engine \"rocksdb\" is not built in (feature rocksdb-peer)",
    ))
}

/// Deletes the files of `dir` that `is_own` recognises, or none when `dir` holds anything
/// else (a mistyped `--db` must never cost someone their files).
fn destroy_own_files(
    dir: &Path,
    engine: &str,
    is_own: impl Fn(&str) -> bool,
) -> Result<(), Failure> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(Failure::error(format!(
                "reading --db={} failed: {e}",
                dir.display()
            )))
        }
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry
            .map_err(|e| Failure::error(format!("reading --db={} failed: {e}", dir.display())))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !is_own(&name) || !entry.path().is_file() {
            return Err(Failure::error(format!(
                "--db={} holds {name:?}, which is not a {engine} database file; not deleting \
                 anything (use an empty directory, or --use_existing_db)",
                dir.display()
            )));
        }
        files.push(entry.path());
    }
    for file in files {
        std::fs::remove_file(&file)
            .map_err(|e| Failure::error(format!("deleting {} failed: {e}", file.display())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_bytes_since_subtracts_each_source() {
        let before = EngineBytes {
            wal: 100,
            flush: 50,
            compaction: 10,
        };
        let after = EngineBytes {
            wal: 400,
            flush: 250,
            compaction: 1010,
        };
        let written = after.since(&before);
        assert_eq!(
            (written.wal, written.flush, written.compaction),
            (300, 200, 1000)
        );
        assert_eq!(written.total(), 1500);
        assert_eq!(before.since(&after), EngineBytes::default());
    }

    #[test]
    fn engine_names_round_trip() {
        for (name, kind) in EngineKind::ALL {
            assert_eq!(kind.name(), name);
            if kind != EngineKind::RocksDb || cfg!(feature = "rocksdb-peer") {
                assert_eq!(EngineKind::from_name(name), Ok(kind));
            }
        }
        assert!(EngineKind::from_name("lmdb")
            .unwrap_err()
            .contains("unknown engine \"lmdb\""));
        if !cfg!(feature = "rocksdb-peer") {
            assert!(EngineKind::from_name("rocksdb")
                .unwrap_err()
                .contains("rocksdb-peer"));
        }
    }
}
