//! redb, a copy-on-write B-tree, behind the [`Engine`] seam: one table `bench` of byte keys
//! and values in the file `bench.redb`, one write transaction per write.
//!
//! Flags that map: `--cache_size` (redb's page cache), `--sync=1` -> `Durability::Immediate`
//! (fsync per commit). `--sync=0` -> `Durability::None`: redb has no "hand each write to the
//! OS" level; such commits become durable with the next Immediate one, which `flush` and
//! `close` make. Flags with no redb equivalent (compression, bloom bits, block size, write
//! buffer size) are ignored; docs/benchmarks.md says so.

use std::ops::Bound;
use std::path::Path;

use redb::{
    AccessGuard, Database, Durability, ReadOnlyTable, ReadableDatabase, ReadableTableMetadata,
    TableDefinition,
};

use super::{destroy_own_files, Cursor, Engine, EngineBytes};
use crate::bench_db::flags::Config;
use crate::output::Failure;

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("bench");
const FILE_NAME: &str = "bench.redb";

fn failure(error: impl Into<redb::Error>) -> Failure {
    Failure::error(format!("redb: {}", error.into()))
}

pub struct RedbEngine {
    db: Database,
    durability: Durability,
}

impl RedbEngine {
    pub fn open(dir: &Path, config: &Config) -> Result<Self, Failure> {
        let path = dir.join(FILE_NAME);
        if config.use_existing_db && !path.is_file() {
            return Err(Failure::error(format!(
                "--use_existing_db: {} does not exist",
                path.display()
            )));
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::error(format!("creating --db={} failed: {e}", dir.display())))?;
        let db = redb::Builder::new()
            .set_cache_size(config.cache_size)
            .create(&path)
            .map_err(|e| Failure::error(format!("opening {} failed: {e}", path.display())))?;
        let engine = RedbEngine {
            db,
            durability: if config.sync {
                Durability::Immediate
            } else {
                Durability::None
            },
        };
        // Create the table, so reads of an empty database find an empty table.
        engine.write(Durability::Immediate, |_| Ok(()))?;
        Ok(engine)
    }

    /// Runs `change` on the table in one write transaction committed with `durability`.
    fn write(
        &self,
        durability: Durability,
        change: impl FnOnce(&mut redb::Table<'_, &[u8], &[u8]>) -> Result<(), redb::Error>,
    ) -> Result<(), Failure> {
        let mut txn = self.db.begin_write().map_err(failure)?;
        txn.set_durability(durability).map_err(failure)?;
        {
            let mut table = txn.open_table(TABLE).map_err(failure)?;
            change(&mut table).map_err(failure)?;
        }
        txn.commit().map_err(failure)
    }

    fn table(&self) -> Result<ReadOnlyTable<&'static [u8], &'static [u8]>, Failure> {
        let txn = self.db.begin_read().map_err(failure)?;
        txn.open_table(TABLE).map_err(failure)
    }
}

impl Engine for RedbEngine {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), Failure> {
        self.write(self.durability, |table| {
            table.insert(key, value)?;
            Ok(())
        })
    }

    fn delete(&self, key: &[u8]) -> Result<(), Failure> {
        self.write(self.durability, |table| {
            table.remove(key)?;
            Ok(())
        })
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>, Failure> {
        let table = self.table()?;
        let found = table.get(key).map_err(failure)?;
        Ok(found.map(|value| value.value().len()))
    }

    fn cursor(&self) -> Result<Box<dyn Cursor + '_>, Failure> {
        Ok(Box::new(RedbCursor {
            table: self.table()?,
            range: None,
            forward: true,
            current: None,
            error: None,
        }))
    }

    fn flush(&self) -> Result<(), Failure> {
        self.write(Durability::Immediate, |_| Ok(()))
    }

    fn wait_for_compaction(&self) -> Result<(), Failure> {
        Ok(())
    }

    fn compact(&self) -> Result<(), Failure> {
        self.flush()
    }

    fn stats_text(&self) -> Result<String, Failure> {
        let txn = self.db.begin_write().map_err(failure)?;
        let stats = txn.stats().map_err(failure)?;
        let entries = txn
            .open_table(TABLE)
            .map_err(failure)?
            .len()
            .map_err(failure)?;
        txn.abort().map_err(failure)?;
        Ok(format!(
            "** redb stats **\nEntries: {entries}\nTree height: {}\nAllocated pages: {} \
             (leaf {}, branch {}, page size {})\nStored bytes: {}  Metadata bytes: {}  \
             Fragmented bytes: {}\n",
            stats.tree_height(),
            stats.allocated_pages(),
            stats.leaf_pages(),
            stats.branch_pages(),
            stats.page_size(),
            stats.stored_bytes(),
            stats.metadata_bytes(),
            stats.fragmented_bytes(),
        ))
    }

    fn level_stats_text(&self) -> Result<Option<String>, Failure> {
        Ok(None)
    }

    fn engine_bytes_written(&self) -> Option<EngineBytes> {
        None
    }

    fn close(self: Box<Self>) -> Result<(), Failure> {
        // Commits under Durability::None are only durable once an Immediate one follows.
        self.flush()
    }
}

type Guard = AccessGuard<'static, &'static [u8]>;

/// A redb range walked in one direction at a time; turning around opens a new range from
/// the current key (redb ranges do not reposition).
struct RedbCursor {
    table: ReadOnlyTable<&'static [u8], &'static [u8]>,
    range: Option<redb::Range<'static, &'static [u8], &'static [u8]>>,
    forward: bool,
    current: Option<(Guard, Guard)>,
    error: Option<String>,
}

impl RedbCursor {
    fn open(&mut self, start: Bound<&[u8]>, end: Bound<&[u8]>, forward: bool) {
        self.forward = forward;
        self.current = None;
        match self.table.range::<&[u8]>((start, end)) {
            Ok(range) => self.range = Some(range),
            Err(e) => {
                self.range = None;
                self.error = Some(e.to_string());
            }
        }
        self.step();
    }

    /// Moves one entry on in the range's direction.
    fn step(&mut self) {
        let Some(range) = &mut self.range else {
            self.current = None;
            return;
        };
        let item = if self.forward {
            range.next()
        } else {
            range.next_back()
        };
        self.current = match item {
            Some(Ok(entry)) => Some(entry),
            Some(Err(e)) => {
                self.error = Some(e.to_string());
                None
            }
            None => None,
        };
    }
}

impl Cursor for RedbCursor {
    fn seek_to_first(&mut self) {
        self.open(Bound::Unbounded, Bound::Unbounded, true);
    }

    fn seek_to_last(&mut self) {
        self.open(Bound::Unbounded, Bound::Unbounded, false);
    }

    fn seek(&mut self, key: &[u8]) {
        self.open(Bound::Included(key), Bound::Unbounded, true);
    }

    fn next(&mut self) {
        if self.forward {
            self.step();
        } else if self.valid() {
            let key = self.key().to_vec();
            self.open(Bound::Excluded(&key), Bound::Unbounded, true);
        }
    }

    fn prev(&mut self) {
        if !self.forward {
            self.step();
        } else if self.valid() {
            let key = self.key().to_vec();
            self.open(Bound::Unbounded, Bound::Excluded(&key), false);
        }
    }

    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn key(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |(key, _)| key.value())
    }

    fn value(&self) -> &[u8] {
        self.current
            .as_ref()
            .map_or(&[], |(_, value)| value.value())
    }

    fn status(&self) -> Result<(), Failure> {
        match &self.error {
            Some(e) => Err(Failure::error(format!("redb: {e}"))),
            None => Ok(()),
        }
    }
}

/// Deletes a redb database in `dir`: only its file.
pub fn destroy(dir: &Path) -> Result<(), Failure> {
    destroy_own_files(dir, "redb", |name| name == FILE_NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench_db::flags::default_config;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("shale-bench-redb-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn cursor_turns_around_and_reads_survive_reopen() {
        let dir = scratch("cursor");
        let config = default_config(&dir);
        let engine = RedbEngine::open(&dir, &config).unwrap();
        for key in [b"a", b"b", b"c", b"d"] {
            engine.put(key, b"value").unwrap();
        }
        engine.delete(b"d").unwrap();
        assert_eq!(engine.get(b"a").unwrap(), Some(5));
        assert_eq!(engine.get(b"d").unwrap(), None);
        let mut cursor = engine.cursor().unwrap();
        let mut seen = Vec::new();
        cursor.seek(b"b");
        seen.push(cursor.key().to_vec());
        cursor.next();
        seen.push(cursor.key().to_vec());
        cursor.prev();
        seen.push(cursor.key().to_vec());
        cursor.prev();
        seen.push(cursor.key().to_vec());
        cursor.next();
        seen.push(cursor.key().to_vec());
        assert_eq!(seen, [b"b", b"c", b"b", b"a", b"b"]);
        assert_eq!(cursor.value(), b"value");
        cursor.seek_to_last();
        assert_eq!(cursor.key(), b"c");
        cursor.next();
        assert!(!cursor.valid());
        cursor.status().unwrap();
        drop(cursor);
        Box::new(engine).close().unwrap();

        // A --sync=0 (Durability::None) write is durable after close's Immediate commit.
        let config = Config {
            use_existing_db: true,
            ..config
        };
        let engine = RedbEngine::open(&dir, &config).unwrap();
        assert_eq!(engine.get(b"c").unwrap(), Some(5));
        drop(engine);
        destroy(&dir).unwrap();
        assert!(!dir.join(FILE_NAME).exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
