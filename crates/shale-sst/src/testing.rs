//! Entry points for fuzz targets and fuzz smoke tests (feature `testing`).
//!
//! Each function feeds untrusted bytes to one decoder and exercises everything that decoder
//! feeds, returning normally whatever the input. A panic here is a bug.

use std::path::Path;
use std::sync::Arc;

use shale_fs::{FileSystem, MemFs};

use crate::block::Block;
use crate::comparator::{BytewiseComparator, Comparator};
use crate::compression::Decompressor;
use crate::filter::BloomFilter;
use crate::format::{BlockHandle, Footer};
use crate::index::Index;
use crate::index_block::{decode_v2, DataRegion};
use crate::key::InternalKeyComparator;
use crate::properties::TableProperties;
use crate::reader::{ReadOptions, Table, TableOpenOptions};

/// Decodes a data block and walks it forwards, backwards and by seeks.
pub fn fuzz_block(data: &[u8]) {
    let Ok(block) = Block::decode(data.to_vec()) else {
        return;
    };
    let block = Arc::new(block);
    for cmp in [
        Arc::new(BytewiseComparator) as Arc<dyn Comparator>,
        Arc::new(InternalKeyComparator::new(Arc::new(BytewiseComparator))),
    ] {
        let mut iter = block.iter(cmp);
        iter.seek_to_first();
        let mut steps = 0;
        while iter.valid() && steps < 100_000 {
            iter.next();
            steps += 1;
        }
        iter.seek_to_last();
        while iter.valid() && steps < 200_000 {
            iter.prev();
            steps += 1;
        }
        for target in [
            &data[..data.len().min(3)],
            b"m",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        ] {
            iter.seek(target);
            iter.seek_for_prev(target);
        }
        let _ = iter.status();
    }
}

/// Decodes an index block both ways: as version 2 (with the count it claims and an
/// unbounded data region, so that every entry is decoded), then as version 1, a block whose values are block handles, walked as a block and decoded into an
/// [`Index`] which is then searched.
pub fn fuzz_index(data: &[u8]) {
    let comparator = Arc::new(InternalKeyComparator::new(Arc::new(BytewiseComparator)));
    let claimed = data
        .get(1..)
        .and_then(|rest| crate::coding::get_varint64(rest).ok())
        .map_or(0, |(count, _)| count);
    let region = DataRegion {
        num_data_blocks: claimed,
        data_size: u64::MAX,
    };
    let _ = decode_v2(data, comparator.clone(), region);
    let Ok(block) = Block::decode(data.to_vec()) else {
        return;
    };
    let mut iter = Arc::new(block).iter(comparator.clone());
    iter.seek_to_first();
    let mut steps = 0;
    while iter.valid() && steps < 100_000 {
        let _ = BlockHandle::decode_exact(iter.value());
        iter.next();
        steps += 1;
    }
    let Ok(Ok(index)) = Block::decode(data.to_vec()).map(|b| Index::decode_v1(b, comparator))
    else {
        return;
    };
    let mut targets: Vec<Vec<u8>> = vec![Vec::new(), b"m".to_vec(), vec![0xff; 17]];
    for i in 0..index.len().min(64) {
        targets.push(index.key(i).to_vec());
        let _ = index.handle(i);
    }
    for target in &targets {
        let position = index.seek(target);
        assert!(position <= index.len(), "index seek past the end");
    }
}

/// Decodes a filter block and probes it.
pub fn fuzz_filter(data: &[u8]) {
    if let Ok(Some(filter)) = BloomFilter::decode(data.to_vec()) {
        for key in [&b""[..], b"a", b"key000001", data] {
            let _ = filter.may_contain(key);
        }
    }
}

/// Decodes a properties block.
pub fn fuzz_properties(data: &[u8]) {
    let _ = TableProperties::decode(data.to_vec());
}

/// Decodes a footer.
pub fn fuzz_footer(data: &[u8]) {
    let _ = Footer::decode(data);
}

/// Decompresses `data` with the codec named by its first byte.
pub fn fuzz_decompress(data: &[u8]) {
    if let Some((&tag, rest)) = data.split_first() {
        if let Ok(plain) = Decompressor::new(None) {
            let _ = plain.decompress(tag, rest);
        }
        if let Ok(with_dictionary) = Decompressor::new(Some(rest)) {
            let _ = with_dictionary.decompress(tag, rest);
        }
    }
}

/// Opens `data` as a whole table file, verifies it, and reads it every way.
pub fn fuzz_table(data: &[u8]) {
    let fs = MemFs::new();
    let path = Path::new("/fuzz.sst");
    if fs.write_file_for_test(path, data).is_err() {
        return;
    }
    let Ok(table) = Table::open(&fs as &dyn FileSystem, path, &TableOpenOptions::default()) else {
        return;
    };
    let _ = table.verify();
    let _ = table.get(b"a", crate::key::MAX_SEQNO);
    let mut iter = table.iter(ReadOptions::default());
    iter.seek_to_first();
    let mut steps = 0;
    while iter.valid() && steps < 100_000 {
        iter.next();
        steps += 1;
    }
    iter.seek_to_last();
    while iter.valid() && steps < 200_000 {
        iter.prev();
        steps += 1;
    }
    let _ = iter.status();
}
