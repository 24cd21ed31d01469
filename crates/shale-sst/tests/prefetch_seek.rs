//! `TableIter::prefetch_seek` is only a hint: an iterator prepared for a seek (or for another
//! target) and then seeked is positioned exactly like one seeked plainly, through bounds and a global seqno, and the
//! block cache it shares ends with the same counters and entries.

use std::path::Path;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shale_fs::MemFs;
use shale_sst::{
    BlockCache, InternalKey, ReadOptions, Table, TableIter, TableOpenOptions, TableWriter,
    ValueKind, WriterOptions, MAX_SEQNO,
};

const KEYS: u64 = 3_000;

/// Every even key `k0000..`, two versions each (or one at seqno 0 in an external table).
fn write_table(fs: &MemFs, path: &Path, external: bool) {
    let options = WriterOptions {
        block_size: 256,
        external_file: external,
        ..WriterOptions::default()
    };
    let mut writer = TableWriter::create(fs, path, options).unwrap();
    for i in (0..KEYS).step_by(2) {
        let key = format!("k{i:05}");
        if external {
            writer
                .add_entry(key.as_bytes(), 0, ValueKind::Value, key.as_bytes())
                .unwrap();
        } else {
            for seqno in [2 * i + 2, 2 * i + 1] {
                let value = format!("{key}@{seqno}");
                writer
                    .add_entry(key.as_bytes(), seqno, ValueKind::Value, value.as_bytes())
                    .unwrap();
            }
        }
    }
    writer.finish().unwrap();
}

/// The table on a cache of its own, small enough to evict (so recency decides what stays).
fn open(fs: &MemFs, path: &Path, global_seqno: Option<u64>) -> (Arc<Table>, Arc<BlockCache>) {
    let cache = Arc::new(BlockCache::with_shards(16 << 10, 1));
    let options = TableOpenOptions {
        block_cache: Some(cache.clone()),
        global_seqno,
        ..TableOpenOptions::default()
    };
    (Table::open(fs, path, &options).unwrap(), cache)
}

fn read_options(rng: &mut StdRng) -> ReadOptions {
    let bound = |rng: &mut StdRng| format!("k{:05}", rng.gen_range(0..KEYS + 10)).into_bytes();
    ReadOptions {
        lower_bound: rng.gen_bool(0.3).then(|| bound(rng)),
        upper_bound: rng.gen_bool(0.3).then(|| bound(rng)),
        ..ReadOptions::default()
    }
}

/// Up to four entries from the iterator's position.
fn entries_from(iter: &mut TableIter) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut entries = Vec::new();
    while iter.valid() && entries.len() < 4 {
        entries.push((iter.key().to_vec(), iter.value().to_vec()));
        iter.next();
    }
    iter.status().unwrap();
    entries
}

fn prepared_seeks_match_plain_ones(external: bool) {
    let fs = MemFs::new();
    let path = Path::new("/t.sst");
    write_table(&fs, path, external);
    let global_seqno = external.then_some(7);
    let (prepared_table, prepared_cache) = open(&fs, path, global_seqno);
    let (plain_table, plain_cache) = open(&fs, path, global_seqno);
    let mut rng = StdRng::seed_from_u64(11);
    let mut seen = 0;
    for round in 0..200 {
        let options = read_options(&mut rng);
        let copy = ReadOptions {
            lower_bound: options.lower_bound.clone(),
            upper_bound: options.upper_bound.clone(),
            ..ReadOptions::default()
        };
        let mut prepared = prepared_table.iter(options);
        let mut plain = plain_table.iter(copy);
        for _ in 0..10 {
            let user = format!("k{:05}", rng.gen_range(0..KEYS + 10));
            let seqno = if rng.gen_bool(0.5) {
                MAX_SEQNO
            } else {
                rng.gen_range(0..2 * KEYS)
            };
            let target = InternalKey::for_seek(user.as_bytes(), seqno);
            // Sometimes prepared for another target (or a neighbour in the index): the seek
            // must not trust a position found for it.
            let near = format!("k{:05}", rng.gen_range(0..KEYS + 10));
            let other = InternalKey::for_seek(near.as_bytes(), MAX_SEQNO);
            let prepared_for = if rng.gen_bool(0.3) { &other } else { &target };
            let before = prepared_cache.stats();
            prepared.prefetch_seek(prepared_for.encoded());
            assert_eq!(prepared_cache.stats(), before, "a prefetch counts nothing");
            prepared.seek(target.encoded());
            plain.seek(target.encoded());
            let entries = entries_from(&mut plain);
            seen += entries.len();
            assert_eq!(
                entries_from(&mut prepared),
                entries,
                "round {round}, {user}@{seqno}"
            );
        }
    }
    assert!(seen > 1_000, "the seeks must find entries to mean anything");
    let stats = plain_cache.stats();
    assert!(
        stats.evictions > 0,
        "the caches must evict to compare recency"
    );
    assert_eq!(prepared_cache.stats(), stats);
}

#[test]
fn prepared_seeks_match_plain_ones_in_a_table() {
    prepared_seeks_match_plain_ones(false);
}

#[test]
fn prepared_seeks_match_plain_ones_under_a_global_seqno() {
    prepared_seeks_match_plain_ones(true);
}
