//! A merge prepares every child for a forward seek (`InternalIterator::prefetch_seek`) before
//! seeking them. That must be invisible: a merge of real tables and a level over a block cache
//! returns the same entries and errors as one whose children ignore the preparation, opens
//! each table as often, and leaves its cache with the same counters.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shale_engine::{
    Error, InternalIterator, LevelFile, LevelIter, LevelTable, MergingIter, Result, SourceIter,
    TableOpener, VecIterator,
};
use shale_fs::MemFs;
use shale_sst::{
    BlockCache, BytewiseComparator, CacheStats, InternalKey, InternalKeyComparator, ReadOptions,
    Table, TableOpenOptions, TableWriter, ValueKind, WriterOptions, MAX_SEQNO,
};

fn comparator() -> Arc<InternalKeyComparator> {
    Arc::new(InternalKeyComparator::new(Arc::new(BytewiseComparator)))
}

fn user_key(i: u64) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

/// Forwards everything but the preparation: the plain merge's children.
struct Unprepared<I>(I);

impl<I: InternalIterator> InternalIterator for Unprepared<I> {
    fn valid(&self) -> bool {
        self.0.valid()
    }
    fn seek_to_first(&mut self) {
        self.0.seek_to_first();
    }
    fn seek_to_last(&mut self) {
        self.0.seek_to_last();
    }
    fn seek(&mut self, target: &[u8]) {
        self.0.seek(target);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.0.seek_for_prev(target);
    }
    fn next(&mut self) {
        self.0.next();
    }
    fn prev(&mut self) {
        self.0.prev();
    }
    fn key(&self) -> &[u8] {
        self.0.key()
    }
    fn value(&self) -> &[u8] {
        self.0.value()
    }
    fn status(&self) -> Result<()> {
        self.0.status()
    }
}

/// Writes a table of `keys` at seqno `seqno` and returns its level metadata.
fn write_table(fs: &MemFs, number: u64, keys: &[u64], seqno: u64) -> LevelFile {
    let options = WriterOptions {
        block_size: 256,
        ..WriterOptions::default()
    };
    let path = format!("/{number:06}.sst");
    let mut writer = TableWriter::create(fs, Path::new(&path), options).unwrap();
    for &i in keys {
        let value = format!("{i}@{seqno}");
        writer
            .add_entry(&user_key(i), seqno, ValueKind::Value, value.as_bytes())
            .unwrap();
    }
    writer.finish().unwrap();
    LevelFile {
        smallest: InternalKey::new(&user_key(keys[0]), seqno, ValueKind::Value),
        largest: InternalKey::new(&user_key(keys[keys.len() - 1]), seqno, ValueKind::Value),
        file_number: number,
        global_seqno: None,
    }
}

/// The tables of one merge, on a cache of their own (small enough to evict).
struct Files {
    cache: Arc<BlockCache>,
    tables: Vec<Arc<Table>>,
    opens: Arc<AtomicUsize>,
}

impl Files {
    fn open(fs: &MemFs, files: u64) -> Self {
        let cache = Arc::new(BlockCache::with_shards(24 << 10, 2));
        let options = TableOpenOptions {
            block_cache: Some(cache.clone()),
            ..TableOpenOptions::default()
        };
        let tables = (0..files)
            .map(|n| Table::open(fs, Path::new(&format!("/{n:06}.sst")), &options).unwrap())
            .collect();
        Files {
            cache,
            tables,
            opens: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Opens a level's tables, failing for file `fail_open`.
    fn opener(&self, fail_open: Option<u64>) -> TableOpener {
        let tables = self.tables.clone();
        let opens = self.opens.clone();
        Arc::new(move |file: &LevelFile| {
            opens.fetch_add(1, Ordering::Relaxed);
            if Some(file.file_number) == fail_open {
                return Err(Error::Corruption {
                    file: format!("{:06}.sst", file.file_number).into(),
                    offset: 0,
                    detail: "injected open failure".into(),
                });
            }
            let table = &tables[file.file_number as usize];
            Ok(LevelTable::Table(table.iter(ReadOptions::default())))
        })
    }
}

/// A memtable stand-in, an L0 table (file 0) and a level of the other files.
fn merge(
    tables: &Files,
    memtable: &[(Vec<u8>, Vec<u8>)],
    level: &Arc<[LevelFile]>,
    fail_open: Option<u64>,
    prepared: bool,
) -> MergingIter {
    let memtable = VecIterator::new(memtable.to_vec(), comparator());
    let l0 = tables.tables[0].iter(ReadOptions::default());
    let level = LevelIter::new(comparator(), level.clone(), tables.opener(fail_open));
    let children: Vec<SourceIter> = if prepared {
        vec![
            SourceIter::Other(Box::new(memtable)),
            SourceIter::Table(l0),
            SourceIter::Level(level),
        ]
    } else {
        vec![
            SourceIter::Other(Box::new(memtable)),
            SourceIter::Other(Box::new(Unprepared(l0))),
            SourceIter::Other(Box::new(Unprepared(level))),
        ]
    };
    MergingIter::from_sources(comparator(), children)
}

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Up to ten entries from the merge's position, and its status.
fn entries_from(merge: &mut MergingIter) -> (Entries, Option<String>) {
    let mut entries = Vec::new();
    while merge.valid() && entries.len() < 10 {
        entries.push((merge.key().to_vec(), merge.value().to_vec()));
        merge.next();
    }
    (entries, merge.status().err().map(|e| e.to_string()))
}

#[test]
fn prepared_seeks_match_plain_ones_and_count_nothing() {
    let fs = MemFs::new();
    let mut rng = StdRng::seed_from_u64(5);
    // L0: every third key at seqno 2000; the level: four files of consecutive keys at seqno 1.
    let l0: Vec<u64> = (0..4_000).step_by(3).collect();
    write_table(&fs, 0, &l0, 2_000);
    let level: Arc<[LevelFile]> = (0..4u64)
        .map(|n| {
            let keys: Vec<u64> = (n * 1_000..n * 1_000 + 900).collect();
            write_table(&fs, n + 1, &keys, 1)
        })
        .collect();
    let memtable: Vec<(Vec<u8>, Vec<u8>)> = (0..4_000)
        .step_by(7)
        .map(|i| {
            let key = InternalKey::new(&user_key(i), 5_000, ValueKind::Value).into_encoded();
            (key, b"memtable".to_vec())
        })
        .collect();
    for fail_open in [None, Some(3)] {
        let prepared_tables = Files::open(&fs, 5);
        let plain_tables = Files::open(&fs, 5);
        let mut prepared = merge(&prepared_tables, &memtable, &level, fail_open, true);
        let mut plain = merge(&plain_tables, &memtable, &level, fail_open, false);
        let mut found = 0;
        for step in 0..2_000 {
            let user = user_key(rng.gen_range(0..4_100));
            let seqno = if rng.gen_bool(0.5) {
                MAX_SEQNO
            } else {
                rng.gen_range(0..6_000)
            };
            let target = InternalKey::for_seek(&user, seqno);
            prepared.seek(target.encoded());
            plain.seek(target.encoded());
            let expected = entries_from(&mut plain);
            found += expected.0.len();
            assert_eq!(entries_from(&mut prepared), expected, "step {step}");
        }
        // With a failing file the merge fails for good on the first seek into it.
        let enough = if fail_open.is_some() { 1 } else { 5_000 };
        assert!(
            found >= enough,
            "the seeks must find entries to mean anything"
        );
        let stats: CacheStats = plain_tables.cache.stats();
        assert!(
            fail_open.is_some() || stats.evictions > 0,
            "the caches must evict to compare recency"
        );
        assert_eq!(prepared_tables.cache.stats(), stats);
        assert_eq!(
            prepared_tables.opens.load(Ordering::Relaxed),
            plain_tables.opens.load(Ordering::Relaxed),
            "a table opened for the preparation is the one the seek uses"
        );
        if fail_open.is_some() {
            let error = prepared
                .status()
                .expect_err("file 3 was sought")
                .to_string();
            assert!(error.contains("injected open failure"), "{error}");
        }
    }
}
