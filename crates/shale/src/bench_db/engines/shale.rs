//! Shale behind the [`Engine`] seam. `--sync=1` maps to `Durability::Sync` (fdatasync per
//! commit group) and `--sync=0` to `Durability::Flush` (each write handed to the OS, as
//! `db_bench`'s default write with the WAL on).

use std::fmt::Write as _;
use std::path::Path;

use shale_engine::{
    Db, DbIterator, Durability, Keyspace, Options, ReadOptions, WriteBatch, WriteOptions,
    UNLIMITED_OPEN_FILES,
};

use super::{destroy_own_files, Cursor, Engine, EngineBytes};
use crate::bench_db::db_bench_defaults::apply_db_bench_defaults;
use crate::bench_db::flags::Config;
use crate::output::Failure;

/// Bytes in the `MB` of sizes, as in `db_bench`.
const MB: f64 = 1_048_576.0;

pub struct ShaleEngine {
    db: Db,
    keyspace: Keyspace,
    write_options: WriteOptions,
    max_readahead_size: usize,
}

impl ShaleEngine {
    pub fn open(dir: &Path, config: &Config) -> Result<Self, Failure> {
        let durability = if config.sync {
            Durability::Sync
        } else {
            Durability::Flush
        };
        let mut options = Options {
            create_if_missing: !config.use_existing_db,
            durability,
            block_cache_capacity: config.cache_size,
            max_open_files: config.open_files.unwrap_or(UNLIMITED_OPEN_FILES),
            max_background_jobs: config.max_background_jobs,
            use_direct_reads: config.use_direct_reads,
            use_direct_io_for_flush_and_compaction: config.use_direct_io_for_flush_and_compaction,
            ..Options::default()
        };
        let keyspace = &mut options.default_keyspace;
        keyspace.write_buffer_size = config.write_buffer_size;
        // As `db_bench`'s --compression_type: one codec at every level, bottom included.
        keyspace.compression = config.compression;
        keyspace.compression_per_level = Vec::new();
        keyspace.bottommost_compression = None;
        keyspace.block_size = config.block_size;
        keyspace.bloom_bits_per_key = config.bloom_bits;
        if config.like_db_bench {
            apply_db_bench_defaults(&mut options);
        }
        let db = Db::open(dir, options)
            .map_err(|e| Failure::error(format!("opening --db={} failed: {e}", dir.display())))?;
        Ok(ShaleEngine {
            keyspace: db.default_keyspace(),
            db,
            write_options: WriteOptions {
                durability: Some(durability),
            },
            max_readahead_size: config.max_auto_readahead_size,
        })
    }

    fn write(&self, batch: WriteBatch) -> Result<(), Failure> {
        Ok(self.db.write(batch, &self.write_options)?)
    }
}

impl Engine for ShaleEngine {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), Failure> {
        // Sized once: no reallocation while the entry is appended.
        let mut batch = WriteBatch::with_capacity(WriteBatch::put_size(key, value));
        batch.put(self.keyspace.id(), key, value)?;
        self.write(batch)
    }

    fn delete(&self, key: &[u8]) -> Result<(), Failure> {
        let mut batch = WriteBatch::new();
        batch.delete(self.keyspace.id(), key)?;
        self.write(batch)
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>, Failure> {
        Ok(self.keyspace.get(key)?.map(|value| value.len()))
    }

    fn cursor(&self) -> Result<Box<dyn Cursor + '_>, Failure> {
        Ok(Box::new(self.keyspace.iterator(ReadOptions {
            max_readahead_size: self.max_readahead_size,
            ..ReadOptions::default()
        })?))
    }

    fn flush(&self) -> Result<(), Failure> {
        Ok(self.db.flush()?)
    }

    fn wait_for_compaction(&self) -> Result<(), Failure> {
        Ok(self.db.wait_for_background_work()?)
    }

    fn compact(&self) -> Result<(), Failure> {
        self.db.flush()?;
        Ok(self.db.compact_range(&self.keyspace, None, None)?)
    }

    fn stats_text(&self) -> Result<String, Failure> {
        let counts = self.db.level_file_counts(&self.keyspace)?;
        let bytes = self.db.level_bytes(&self.keyspace)?;
        let mut text = format!(
            "** DB Stats [{}] **\nLatest sequence number: {}\nTable files: {}  Table bytes: {}\n",
            self.keyspace.name(),
            self.db.latest_seqno(),
            counts.iter().sum::<usize>(),
            bytes.iter().sum::<u64>()
        );
        let _ = writeln!(text, "{}", self.db.compaction_stats());
        Ok(text)
    }

    fn level_stats_text(&self) -> Result<Option<String>, Failure> {
        let counts = self.db.level_file_counts(&self.keyspace)?;
        let bytes = self.db.level_bytes(&self.keyspace)?;
        let mut text = String::from("Level Files Size(MB)\n--------------------\n");
        for (level, (files, size)) in counts.iter().zip(&bytes).enumerate() {
            let _ = writeln!(text, "{level:3} {files:8} {:8.0}", *size as f64 / MB);
        }
        Ok(Some(text))
    }

    fn engine_bytes_written(&self) -> Option<EngineBytes> {
        let stats = self.db.stats();
        Some(EngineBytes {
            wal: stats.wal_bytes_written,
            flush: stats.flush_bytes_written,
            compaction: stats.compaction_bytes_written,
        })
    }

    fn close(self: Box<Self>) -> Result<(), Failure> {
        Ok(self.db.close()?)
    }
}

impl Cursor for DbIterator {
    fn seek_to_first(&mut self) {
        DbIterator::seek_to_first(self);
    }

    fn seek_to_last(&mut self) {
        DbIterator::seek_to_last(self);
    }

    fn seek(&mut self, key: &[u8]) {
        DbIterator::seek(self, key);
    }

    fn next(&mut self) {
        DbIterator::next(self);
    }

    fn prev(&mut self) {
        DbIterator::prev(self);
    }

    fn valid(&self) -> bool {
        DbIterator::valid(self)
    }

    fn key(&self) -> &[u8] {
        DbIterator::key(self)
    }

    fn value(&self) -> &[u8] {
        DbIterator::value(self)
    }

    fn status(&self) -> Result<(), Failure> {
        Ok(DbIterator::status(self)?)
    }
}

/// Deletes a Shale database in `dir`: only Shale's own files.
pub fn destroy(dir: &Path) -> Result<(), Failure> {
    destroy_own_files(dir, "Shale", is_database_file)
}

/// Whether `name` is a file a Shale database directory holds.
fn is_database_file(name: &str) -> bool {
    let base = name.strip_suffix(".tmp").unwrap_or(name);
    matches!(base, "CURRENT" | "LOCK" | "LOG")
        || base.starts_with("MANIFEST-")
        || base.starts_with("OPTIONS-")
        || base
            .strip_prefix("LOG.old.")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        || Path::new(base)
            .extension()
            .is_some_and(|ext| ext == "sst" || ext == "wal" || ext == "blob")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_database_files_are_recognised() {
        for name in [
            "CURRENT",
            "CURRENT.tmp",
            "LOCK",
            "MANIFEST-000003",
            "OPTIONS-000005",
            "OPTIONS-000005.tmp",
            "000012.sst",
            "000007.wal",
            "000009.blob",
            "LOG",
            "LOG.old.2",
        ] {
            assert!(is_database_file(name), "{name}");
        }
        for name in ["notes.txt", "data", ".bashrc", "sst", "LOG.old.", "LOGS"] {
            assert!(!is_database_file(name), "{name}");
        }
    }
}
