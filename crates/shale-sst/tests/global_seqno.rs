//! An external table (`shale.external = 1`, every entry at seqno 0) opened with a global
//! seqno reads as if every entry had that seqno: keys, seeks, lookups and range tombstones
//! (docs/format/sst.md, "External files and the global seqno").

use std::path::Path;
use std::sync::Arc;

use shale_fs::MemFs;
use shale_sst::{
    InternalKey, ParsedInternalKey, ReadOptions, Table, TableOpenOptions, TableWriter, ValueKind,
    WriterOptions,
};

const GLOBAL: u64 = 10;

fn write_table(fs: &MemFs, path: &Path, external: bool) {
    let options = WriterOptions {
        block_size: 32,
        external_file: external,
        ..WriterOptions::default()
    };
    let mut writer = TableWriter::create(fs, path, options).unwrap();
    for key in [b"a", b"b", b"c", b"d"] {
        let kind = if key == b"c" {
            ValueKind::Deletion
        } else {
            ValueKind::Value
        };
        writer.add_entry(key, 0, kind, key).unwrap();
    }
    writer.add_range_deletion(b"x", b"z", 0).unwrap();
    writer.finish().unwrap();
}

fn open(fs: &MemFs, path: &Path, global_seqno: Option<u64>) -> shale_sst::Result<Arc<Table>> {
    let options = TableOpenOptions {
        global_seqno,
        ..TableOpenOptions::default()
    };
    Table::open(fs, path, &options)
}

fn describe(key: &[u8]) -> String {
    let parsed = ParsedInternalKey::parse(key).unwrap();
    format!(
        "{}@{}",
        String::from_utf8_lossy(parsed.user_key),
        parsed.seqno
    )
}

#[test]
fn every_entry_reads_at_the_global_seqno() {
    let fs = MemFs::new();
    let path = Path::new("/ext.sst");
    write_table(&fs, path, true);
    let table = open(&fs, path, Some(GLOBAL)).unwrap();
    assert!(table.properties().external);
    let mut iter = table.iter(ReadOptions::default());
    let mut forward = Vec::new();
    iter.seek_to_first();
    while iter.valid() {
        forward.push(describe(iter.key()));
        iter.next();
    }
    assert_eq!(forward, ["a@10", "b@10", "c@10", "d@10"]);
    let mut backward = Vec::new();
    iter.seek_to_last();
    while iter.valid() {
        backward.push(describe(iter.key()));
        iter.prev();
    }
    assert_eq!(backward, ["d@10", "c@10", "b@10", "a@10"]);
    assert_eq!(table.range_tombstones()[0].seqno, GLOBAL);
}

#[test]
fn seeks_position_by_the_global_seqno() {
    let fs = MemFs::new();
    let path = Path::new("/ext.sst");
    write_table(&fs, path, true);
    let table = open(&fs, path, Some(GLOBAL)).unwrap();
    let mut iter = table.iter(ReadOptions::default());
    let seek = |iter: &mut shale_sst::TableIter, seqno: u64| {
        iter.seek(InternalKey::for_seek(b"b", seqno).encoded());
        describe(iter.key())
    };
    // b@10 is invisible at a snapshot below 10: it sorts before the target.
    assert_eq!(seek(&mut iter, 5), "c@10");
    assert_eq!(seek(&mut iter, GLOBAL), "b@10");
    assert_eq!(seek(&mut iter, 20), "b@10");
    let seek_for_prev = |iter: &mut shale_sst::TableIter, seqno: u64| {
        iter.seek_for_prev(InternalKey::for_seek(b"b", seqno).encoded());
        describe(iter.key())
    };
    assert_eq!(seek_for_prev(&mut iter, 5), "b@10");
    assert_eq!(seek_for_prev(&mut iter, 20), "a@10");
}

#[test]
fn lookups_see_the_global_seqno() {
    let fs = MemFs::new();
    let path = Path::new("/ext.sst");
    write_table(&fs, path, true);
    let table = open(&fs, path, Some(GLOBAL)).unwrap();
    assert_eq!(table.get(b"b", GLOBAL - 1).unwrap(), None);
    let found = table.get(b"b", GLOBAL).unwrap().unwrap();
    assert_eq!((found.seqno, found.kind), (GLOBAL, ValueKind::Value));
    let deleted = table.get(b"c", u64::from(u32::MAX)).unwrap().unwrap();
    assert_eq!((deleted.seqno, deleted.kind), (GLOBAL, ValueKind::Deletion));
    assert_eq!(table.get(b"bb", GLOBAL).unwrap(), None);
    // Without a global seqno the stored 0 is what readers see.
    let plain = open(&fs, path, None).unwrap();
    assert_eq!(plain.get(b"b", 0).unwrap().unwrap().seqno, 0);
}

#[test]
fn a_global_seqno_is_refused_for_a_table_that_is_not_external() {
    let fs = MemFs::new();
    let path = Path::new("/plain.sst");
    write_table(&fs, path, false);
    let message = open(&fs, path, Some(GLOBAL)).unwrap_err().to_string();
    assert!(message.contains("not an external table"), "{message}");
}
