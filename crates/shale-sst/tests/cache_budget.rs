//! The block cache's strict budget: charges reserved before reads, index and filter blocks
//! cached at high priority and reloaded after eviction, usage never above capacity.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_fs::MemFs;
use shale_sst::{
    BlockCache, CacheKey, Priority, ReadOptions, Table, TableOpenOptions, TableWriter, ValueKind,
    WriterOptions, MAX_SEQNO,
};

fn write_table(fs: &MemFs, path: &Path, entries: u64) {
    let options = WriterOptions {
        block_size: 512,
        ..WriterOptions::default()
    };
    let mut writer = TableWriter::create(fs, path, options).unwrap();
    for i in 0..entries {
        let key = format!("key{i:08}");
        writer
            .add_entry(key.as_bytes(), i + 1, ValueKind::Value, &[b'v'; 100])
            .unwrap();
    }
    writer.finish().unwrap();
}

#[test]
fn reservations_count_against_the_budget_and_release_on_drop() {
    let cache = BlockCache::with_shards(10_000, 0);
    let key = |offset| CacheKey { file_id: 1, offset };
    let first = cache
        .reserve(key(0), 6_000)
        .expect("fits in an empty cache");
    assert!(
        cache.reserve(key(1), 6_000).is_none(),
        "two reservations would exceed the budget"
    );
    // An insert cannot use the reserved space either.
    cache.insert(
        key(2),
        Arc::new(vec![0u8; 5_000]) as Arc<dyn std::any::Any + Send + Sync>,
        5_000,
        Priority::Low,
    );
    assert!(
        cache.get(&key(2)).is_none(),
        "insert refused while the space is reserved"
    );
    drop(first);
    let second = cache.reserve(key(1), 6_000).expect("released by the drop");
    second.fill(Arc::new(vec![0u8; 7_000]), 7_000, Priority::Low);
    assert!(cache.get(&key(1)).is_some());
    assert!(cache.usage() <= cache.capacity());
}

#[test]
fn index_and_filters_live_in_the_cache_and_reload_after_eviction() {
    let fs = MemFs::new();
    let path = Path::new("/t.sst");
    write_table(&fs, path, 2_000);
    // Small enough that data blocks push the index and filter out.
    let cache = Arc::new(BlockCache::with_shards(64 << 10, 0));
    let options = TableOpenOptions {
        block_cache: Some(cache.clone()),
        cache_index_and_filter_blocks: true,
        ..TableOpenOptions::default()
    };
    let table = Table::open(&fs, path, &options).unwrap();
    assert_eq!(table.pinned_memory(), 0, "nothing pinned outside the cache");
    assert!(cache.usage() > 0, "index and filter were inserted at open");
    for round in 0..3 {
        for i in (0..2_000u64).step_by(7) {
            let key = format!("key{i:08}");
            let found = table
                .get(key.as_bytes(), MAX_SEQNO)
                .unwrap()
                .expect("present");
            assert_eq!(found.seqno, i + 1, "round {round}");
            assert!(
                cache.usage() <= cache.capacity(),
                "budget exceeded: {} > {}",
                cache.usage(),
                cache.capacity()
            );
        }
        assert_eq!(table.get(b"absent", MAX_SEQNO).unwrap(), None);
    }
    assert!(
        cache.stats().evictions > 0,
        "the test must evict to mean anything"
    );
    let mut iter = table.iter(ReadOptions::default());
    iter.seek_to_first();
    let mut count = 0;
    while iter.valid() {
        count += 1;
        iter.next();
    }
    iter.status().unwrap();
    assert_eq!(count, 2_000);
    assert!(
        table.filter_stats().0.is_some(),
        "the filter reloads for tools too"
    );
}

#[test]
fn without_the_option_meta_blocks_are_pinned() {
    let fs = MemFs::new();
    let path = Path::new("/t.sst");
    write_table(&fs, path, 500);
    let cache = Arc::new(BlockCache::with_shards(1 << 20, 0));
    let options = TableOpenOptions {
        block_cache: Some(cache.clone()),
        ..TableOpenOptions::default()
    };
    let table = Table::open(&fs, path, &options).unwrap();
    assert!(table.pinned_memory() > 0);
    assert_eq!(cache.usage(), 0, "nothing cached before the first read");
}

#[test]
fn meta_blocks_too_large_for_the_cache_are_read_again_not_pinned() {
    let fs = MemFs::new();
    let path = Path::new("/t.sst");
    // A 20,000-key filter (about 25 KB at 10 bits/key) against a 16 KiB cache of one shard.
    write_table(&fs, path, 20_000);
    let cache = Arc::new(BlockCache::with_shards(16 << 10, 0));
    let options = TableOpenOptions {
        block_cache: Some(cache.clone()),
        cache_index_and_filter_blocks: true,
        ..TableOpenOptions::default()
    };
    let table = Table::open(&fs, path, &options).unwrap();
    assert_eq!(
        table.pinned_memory(),
        0,
        "the strict budget: nothing kept outside the cache"
    );
    let before = cache.stats();
    for i in 0..1_000u64 {
        let key = format!("absent{i:08}");
        assert_eq!(table.get(key.as_bytes(), MAX_SEQNO).unwrap(), None);
        assert!(cache.usage() <= cache.capacity());
    }
    for i in (0..20_000u64).step_by(1_001) {
        let key = format!("key{i:08}");
        let found = table.get(key.as_bytes(), MAX_SEQNO).unwrap();
        assert_eq!(found.expect("present").seqno, i + 1);
    }
    let after = cache.stats();
    // The price of a cache smaller than one filter: it is read again for every lookup.
    assert!(
        after.misses - before.misses >= 1_000,
        "{} cache misses for 1,000 filtered lookups",
        after.misses - before.misses
    );
}

#[test]
fn charged_pins_count_in_the_budget_and_leave_lookups_one_cache_probe() {
    let fs = MemFs::new();
    let path = Path::new("/t.sst");
    write_table(&fs, path, 2_000);
    let cache = Arc::new(BlockCache::with_shards(256 << 10, 0));
    let options = TableOpenOptions {
        block_cache: Some(cache.clone()),
        cache_index_and_filter_blocks: true,
        charge_pinned_index_and_filter: true,
        ..TableOpenOptions::default()
    };
    let table = Table::open(&fs, path, &options).unwrap();
    let pinned = cache.stats().pinned;
    assert!(
        pinned > 2_000 * 10 / 8,
        "index and filter charged: {pinned}"
    );
    assert_eq!(cache.usage(), 0, "charged, not cached");
    assert_eq!(
        table.pinned_memory(),
        0,
        "nothing pinned outside the budget"
    );
    let before = cache.stats();
    for i in (0..2_000u64).step_by(7) {
        let key = format!("key{i:08}");
        let found = table.get(key.as_bytes(), MAX_SEQNO).unwrap();
        assert_eq!(found.expect("present").seqno, i + 1);
        let stats = cache.stats();
        assert!(stats.usage + stats.pinned <= stats.capacity, "{stats:?}");
    }
    assert_eq!(table.get(b"absent", MAX_SEQNO).unwrap(), None);
    let after = cache.stats();
    let probes = (after.hits + after.misses) - (before.hits + before.misses);
    assert_eq!(
        probes,
        2_000 / 7 + 1,
        "one probe per lookup: the data block"
    );
    drop(table);
    assert_eq!(cache.stats().pinned, 0, "released with the table");
}

#[test]
fn pins_the_cache_cannot_charge_go_into_the_cache() {
    let fs = MemFs::new();
    let path = Path::new("/t.sst");
    write_table(&fs, path, 2_000);
    let cache = Arc::new(BlockCache::with_shards(256 << 10, 0));
    // Another table's pins already take the shard's high-priority share.
    let full = cache
        .charge_pinned(
            CacheKey {
                file_id: 99,
                offset: 0,
            },
            128 << 10,
        )
        .expect("half the shard");
    let options = TableOpenOptions {
        block_cache: Some(cache.clone()),
        cache_index_and_filter_blocks: true,
        charge_pinned_index_and_filter: true,
        ..TableOpenOptions::default()
    };
    let table = Table::open(&fs, path, &options).unwrap();
    assert_eq!(cache.stats().pinned, 128 << 10);
    assert!(cache.usage() > 0, "index and filter cached instead");
    let found = table.get(b"key00000042", MAX_SEQNO).unwrap();
    assert_eq!(found.expect("present").seqno, 43);
    drop(full);
}

#[test]
fn pins_larger_than_one_shard_are_charged_across_the_shards() {
    let fs = MemFs::new();
    let path = Path::new("/t.sst");
    write_table(&fs, path, 20_000);
    // 8 shards of 128 KiB: 64 KiB of high-priority share each, 512 KiB in all.
    let cache = Arc::new(BlockCache::with_shards(1 << 20, 3));
    let options = TableOpenOptions {
        block_cache: Some(cache.clone()),
        cache_index_and_filter_blocks: true,
        charge_pinned_index_and_filter: true,
        ..TableOpenOptions::default()
    };
    let table = Table::open(&fs, path, &options).unwrap();
    let pinned = cache.stats().pinned;
    // The decoded index (about 4,500 blocks of 512 bytes) is larger than one shard's share:
    // charged to one shard it was refused and stayed pinned outside the budget, as a 64 MiB
    // table's filter (1.2 MB) in a 256 MiB cache of 4 MiB shards was refused once a shard
    // held another.
    assert!(pinned > 64 << 10, "index and filter charged: {pinned}");
    assert_eq!(
        table.pinned_memory(),
        0,
        "nothing pinned outside the budget"
    );
    assert_eq!(cache.usage(), 0, "charged, not cached");
    let found = table.get(b"key00012345", MAX_SEQNO).unwrap();
    assert_eq!(found.expect("present").seqno, 12_346);
    drop(table);
    assert_eq!(cache.stats().pinned, 0, "released with the table");
}

/// The block cache budget is strict (issue claim): with the options the engine opens tables
/// with (`cache_index_and_filter_blocks` and `charge_pinned_index_and_filter`), an index or
/// filter larger than a cache shard is charged to the budget, or else kept in the cache under
/// it (read again when evicted); never held by the table outside the budget. Here the
/// charges of earlier tables fill the cache's room for pins, so later tables cannot charge
/// theirs, and their blocks are larger than a shard's high-priority share.
#[test]
fn the_block_cache_budget_is_strict_for_index_and_filter_blocks_larger_than_a_shard() {
    let fs = MemFs::new();
    // 8 shards of 64 KiB: 32 KiB of high-priority share each, 256 KiB of room for pins.
    let cache = Arc::new(BlockCache::with_shards(512 << 10, 3));
    let options = TableOpenOptions {
        block_cache: Some(cache.clone()),
        cache_index_and_filter_blocks: true,
        charge_pinned_index_and_filter: true,
        ..TableOpenOptions::default()
    };
    let mut tables = Vec::new();
    for t in 0..6u64 {
        let path = PathBuf::from(format!("/t{t}.sst"));
        // About 4,500 index entries and a 25 KB filter: each larger than one shard's share.
        write_table(&fs, &path, 20_000);
        let table = Table::open(&fs, &path, &options).unwrap();
        tables.push(table);
        let stats = cache.stats();
        assert!(
            stats.usage + stats.pinned <= stats.capacity,
            "table {t}: over budget: {stats:?}"
        );
        for (n, table) in tables.iter().enumerate() {
            assert_eq!(
                table.pinned_memory(),
                0,
                "table {n} holds index or filter memory outside the budget (after opening {t})"
            );
        }
    }
    let stats = cache.stats();
    assert!(
        stats.pinned > 0,
        "the first tables charged theirs: {stats:?}"
    );
    // Every table still answers, its meta blocks coming from the cache or read again.
    for (t, table) in tables.iter().enumerate() {
        for i in (0..20_000u64).step_by(997) {
            let key = format!("key{i:08}");
            let found = table.get(key.as_bytes(), MAX_SEQNO).unwrap();
            assert_eq!(found.expect("present").seqno, i + 1, "table {t}");
        }
        assert_eq!(table.get(b"absent", MAX_SEQNO).unwrap(), None);
        let stats = cache.stats();
        assert!(stats.usage + stats.pinned <= stats.capacity, "{stats:?}");
    }
    drop(tables);
    assert_eq!(cache.stats().pinned, 0, "released with the tables");
}

#[test]
fn a_cache_of_zero_bytes_is_no_cache_and_index_and_filters_stay_pinned() {
    let fs = MemFs::new();
    let path = Path::new("/t.sst");
    write_table(&fs, path, 2_000);
    let cache = Arc::new(BlockCache::with_shards(0, 0));
    let options = TableOpenOptions {
        block_cache: Some(cache.clone()),
        cache_index_and_filter_blocks: true,
        charge_pinned_index_and_filter: true,
        ..TableOpenOptions::default()
    };
    let table = Table::open(&fs, path, &options).unwrap();
    assert!(
        table.pinned_memory() > 2_000 * 10 / 8,
        "index and filter pinned"
    );
    let before = cache.stats();
    for i in (0..2_000u64).step_by(7) {
        let key = format!("key{i:08}");
        let found = table.get(key.as_bytes(), MAX_SEQNO).unwrap();
        assert_eq!(found.expect("present").seqno, i + 1);
    }
    let after = cache.stats();
    assert_eq!(
        after.misses - before.misses,
        2_000 / 7 + 1,
        "one cache probe per lookup (its data block), not three"
    );
    assert_eq!((after.usage, after.pinned), (0, 0));
}
