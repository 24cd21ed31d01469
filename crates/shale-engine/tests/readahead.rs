//! Iterators read ahead in sequential scans (shale-sst src/readahead.rs) through the
//! `FileSystem` seam: counted through `FaultFs`, a full scan makes far fewer reads than one per
//! data block, returns exactly what a scan without readahead returns, and point reads and
//! `max_readahead_size: 0` read block by block.

use std::path::Path;
use std::sync::Arc;

use shale_engine::{Db, Options, ReadOptions};
use shale_fs::{FaultFs, MemFs, OpKind};

fn scan(db: &Db, max_readahead_size: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut iter = db
        .iterator(ReadOptions {
            max_readahead_size,
            ..ReadOptions::default()
        })
        .unwrap();
    let mut out = Vec::new();
    iter.seek_to_first();
    while iter.valid() {
        out.push((iter.key().to_vec(), iter.value().to_vec()));
        iter.next();
    }
    iter.status().unwrap();
    out
}

#[test]
fn scans_read_ahead_and_return_the_same_entries() {
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let mut options = Options {
        file_system: Arc::new(fault.clone()),
        // No block cache: every block of every scan is read from the file.
        block_cache_capacity: 0,
        ..Options::default()
    };
    options.default_keyspace.write_buffer_size = 256 << 10;
    let db = Db::open(Path::new("/db"), options).unwrap();
    let n = 30_000u32;
    for i in 0..n {
        let value = format!("value {i} ").repeat(1 + i as usize % 7);
        db.put(
            format!("key{:08}", (i * 7919) % n).as_bytes(),
            value.as_bytes(),
        )
        .unwrap();
    }
    db.flush().unwrap();
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();

    let reads = || fault.op_count(OpKind::Read);
    let before = reads();
    let plain = scan(&db, 0);
    let plain_reads = reads() - before;
    assert_eq!(plain.len(), n as usize);

    let before = reads();
    let ahead = scan(&db, shale_sst::DEFAULT_MAX_READAHEAD_SIZE);
    let ahead_reads = reads() - before;
    assert!(ahead == plain, "readahead changes what a scan returns");
    assert!(
        ahead_reads * 10 < plain_reads,
        "{ahead_reads} reads with readahead, {plain_reads} without"
    );

    // Iterators of one Version share a level opener only when made for the same options:
    // the first scan's (no readahead) must not serve the second, nor the second's this one.
    let before = reads();
    assert!(scan(&db, 0) == plain);
    let again_reads = reads() - before;
    assert!(
        again_reads > ahead_reads * 10,
        "{again_reads} reads without readahead after a scan with it ({ahead_reads})"
    );

    let before = reads();
    for i in (0..n).step_by(1000) {
        assert!(db.get(format!("key{i:08}").as_bytes()).unwrap().is_some());
    }
    assert!(
        reads() - before <= 30,
        "{} reads for 30 lookups",
        reads() - before
    );
}
