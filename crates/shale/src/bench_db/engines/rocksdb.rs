//! `RocksDB` (through the `rocksdb` crate, which builds librocksdb-sys in release) behind the
//! [`Engine`] seam, with the options `db_bench` would set from the same flags: compression,
//! bloom bits per key, an LRU block cache of `--cache_size`, `--open_files`, block size, write buffer size,
//! `--sync` on every write, `--use_direct_reads` and `--use_direct_io_for_flush_and_compaction`,
//! two background jobs, and dynamic level bytes (`RocksDB`'s default
//! since 8.4). Statistics are on so that the bytes written by WAL, flush and compaction can be
//! counted (a few percent of CPU; `db_bench` pays it only under `--statistics`).

use std::path::Path;

use rocksdb::statistics::Ticker;
use rocksdb::{
    BlockBasedOptions, Cache, DBCompressionType, DBRawIterator, Options, WaitForCompactOptions,
    WriteOptions, DB,
};
use shale_sst::Compression;

use super::{Cursor, Engine, EngineBytes};
use crate::bench_db::flags::Config;
use crate::output::Failure;

fn failure(error: &rocksdb::Error) -> Failure {
    Failure::error(format!("rocksdb: {error}"))
}

pub struct RocksDbEngine {
    db: DB,
    options: Options,
    write_options: WriteOptions,
}

/// The options `db_bench` builds from `config`.
fn options(config: &Config) -> Result<Options, Failure> {
    let mut options = Options::default();
    options.create_if_missing(!config.use_existing_db);
    options.set_compression_type(match config.compression {
        Compression::None => DBCompressionType::None,
        Compression::Snappy => DBCompressionType::Snappy,
        Compression::Lz4 => DBCompressionType::Lz4,
        Compression::Zstd => DBCompressionType::Zstd,
        Compression::Zlib | Compression::ZstdDict => {
            return Err(Failure::error(format!(
                "--compression_type={}: the rocksdb peer is built with none, snappy, lz4 and \
                 zstd only",
                config.compression.name()
            )))
        }
    });
    options.set_write_buffer_size(config.write_buffer_size);
    options.set_max_background_jobs(i32::try_from(config.max_background_jobs).unwrap_or(2));
    // -1: no limit (table readers pinned), db_bench's default and `--open_files`'s.
    options.set_max_open_files(
        config
            .open_files
            .map_or(-1, |n| i32::try_from(n).unwrap_or(i32::MAX)),
    );
    options.set_level_compaction_dynamic_level_bytes(true);
    options.enable_statistics();
    options.set_use_direct_reads(config.use_direct_reads);
    options
        .set_use_direct_io_for_flush_and_compaction(config.use_direct_io_for_flush_and_compaction);
    let mut table = BlockBasedOptions::default();
    table.set_block_size(config.block_size);
    if config.cache_size > 0 {
        table.set_block_cache(&Cache::new_lru_cache(config.cache_size));
    } else {
        table.disable_cache();
    }
    if config.bloom_bits > 0 {
        table.set_bloom_filter(f64::from(config.bloom_bits), false);
    }
    options.set_block_based_table_factory(&table);
    Ok(options)
}

impl RocksDbEngine {
    pub fn open(dir: &Path, config: &Config) -> Result<Self, Failure> {
        let options = options(config)?;
        let db = DB::open(&options, dir)
            .map_err(|e| Failure::error(format!("opening --db={} failed: {e}", dir.display())))?;
        let mut write_options = WriteOptions::default();
        write_options.set_sync(config.sync);
        Ok(RocksDbEngine {
            db,
            options,
            write_options,
        })
    }
}

impl Engine for RocksDbEngine {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), Failure> {
        self.db
            .put_opt(key, value, &self.write_options)
            .map_err(|e| failure(&e))
    }

    fn delete(&self, key: &[u8]) -> Result<(), Failure> {
        self.db
            .delete_opt(key, &self.write_options)
            .map_err(|e| failure(&e))
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>, Failure> {
        let value = self.db.get_pinned(key).map_err(|e| failure(&e))?;
        Ok(value.map(|v| v.len()))
    }

    fn cursor(&self) -> Result<Box<dyn Cursor + '_>, Failure> {
        Ok(Box::new(self.db.raw_iterator()))
    }

    fn flush(&self) -> Result<(), Failure> {
        self.db.flush().map_err(|e| failure(&e))
    }

    fn wait_for_compaction(&self) -> Result<(), Failure> {
        self.db
            .wait_for_compact(&WaitForCompactOptions::default())
            .map_err(|e| failure(&e))
    }

    fn compact(&self) -> Result<(), Failure> {
        self.flush()?;
        self.db.compact_range(None::<&[u8]>, None::<&[u8]>);
        Ok(())
    }

    fn stats_text(&self) -> Result<String, Failure> {
        let text = self
            .db
            .property_value("rocksdb.stats")
            .map_err(|e| failure(&e))?;
        Ok(text.unwrap_or_default())
    }

    fn level_stats_text(&self) -> Result<Option<String>, Failure> {
        self.db
            .property_value("rocksdb.levelstats")
            .map_err(|e| failure(&e))
    }

    fn engine_bytes_written(&self) -> Option<EngineBytes> {
        let ticker = |t| self.options.get_ticker_count(t);
        Some(EngineBytes {
            wal: ticker(Ticker::WalFileBytes),
            flush: ticker(Ticker::FlushWriteBytes),
            compaction: ticker(Ticker::CompactWriteBytes),
        })
    }

    fn close(self: Box<Self>) -> Result<(), Failure> {
        // Dropping the DB flushes nothing and reports nothing; the WAL holds what the
        // memtables do, as with db_bench.
        drop(self.db);
        Ok(())
    }
}

impl Cursor for DBRawIterator<'_> {
    fn seek_to_first(&mut self) {
        DBRawIterator::seek_to_first(self);
    }

    fn seek_to_last(&mut self) {
        DBRawIterator::seek_to_last(self);
    }

    fn seek(&mut self, key: &[u8]) {
        DBRawIterator::seek(self, key);
    }

    fn next(&mut self) {
        DBRawIterator::next(self);
    }

    fn prev(&mut self) {
        DBRawIterator::prev(self);
    }

    fn valid(&self) -> bool {
        DBRawIterator::valid(self)
    }

    fn key(&self) -> &[u8] {
        DBRawIterator::key(self).unwrap_or_default()
    }

    fn value(&self) -> &[u8] {
        DBRawIterator::value(self).unwrap_or_default()
    }

    fn status(&self) -> Result<(), Failure> {
        DBRawIterator::status(self).map_err(|e| failure(&e))
    }
}

/// Deletes a `RocksDB` database in `dir` (`DB::destroy`, which removes only its own files).
pub fn destroy(dir: &Path) -> Result<(), Failure> {
    if !dir.exists() {
        return Ok(());
    }
    DB::destroy(&Options::default(), dir)
        .map_err(|e| Failure::error(format!("deleting --db={} failed: {e}", dir.display())))
}
