//! Behaviour tests of the sorted table on `MemFs`: every codec, checksum, block size and
//! restart interval round-trips against a `BTreeMap` oracle; bounded iteration, the block
//! cache, the bloom and prefix filters, range deletions, refusals, `verify` and injected I/O
//! failures (docs/format/sst.md).

use std::cmp::{Ordering, Reverse};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_fs::{FaultError, FaultFs, FaultRule, FaultTrigger, FileSystem, MemFs, OpKind};
use shale_sst::format::{BLOCK_TRAILER_SIZE, FOOTER_SIZE};
use shale_sst::{
    train_zstd_dictionary, BlockCache, BlockKind, BytewiseComparator, ChecksumType, Comparator,
    Compression, Error, FixedPrefix, Footer, InternalKey, LookupResult, PrefixExtractor,
    ReadOptions, Table, TableIter, TableLayout, TableOpenOptions, TableProperties, TableWriter,
    ValueKind, WriterOptions, FORMAT_VERSION, MAX_SEQNO,
};

const CREATION_TIME: u64 = 1_700_000_000;

/// Internal-key order as a tuple: user key ascending, then trailer `(seqno << 8) | kind`
/// descending.
type OracleKey = (Vec<u8>, Reverse<u64>);

fn trailer(seqno: u64, kind: ValueKind) -> u64 {
    (seqno << 8) | u64::from(kind.tag())
}

fn oracle_key(user_key: &[u8], seqno: u64, kind: ValueKind) -> OracleKey {
    (user_key.to_vec(), Reverse(trailer(seqno, kind)))
}

/// Splits an encoded internal key into its oracle form.
fn oracle_key_of(encoded: &[u8]) -> OracleKey {
    let (user_key, raw) = encoded.split_at(encoded.len() - 8);
    let raw = u64::from_le_bytes(raw.try_into().unwrap());
    (user_key.to_vec(), Reverse(raw))
}

fn encode(key: &OracleKey) -> Vec<u8> {
    let mut out = key.0.clone();
    out.extend_from_slice(&key.1 .0.to_le_bytes());
    out
}

fn kind_of(key: &OracleKey) -> ValueKind {
    ValueKind::from_tag(key.1 .0 as u8).unwrap()
}

fn seqno_of(key: &OracleKey) -> u64 {
    key.1 .0 >> 8
}

/// The expected contents of a table's point entries.
#[derive(Debug, Clone, Default)]
struct Model {
    map: BTreeMap<OracleKey, Vec<u8>>,
}

impl Model {
    fn insert(&mut self, user_key: &[u8], seqno: u64, kind: ValueKind, value: &[u8]) {
        self.map
            .insert(oracle_key(user_key, seqno, kind), value.to_vec());
    }

    fn entries(&self) -> Vec<(OracleKey, Vec<u8>)> {
        self.map
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    fn user_keys(&self) -> Vec<Vec<u8>> {
        let mut keys: Vec<Vec<u8>> = self.map.keys().map(|k| k.0.clone()).collect();
        keys.dedup();
        keys
    }

    fn contains_user_key(&self, user_key: &[u8]) -> bool {
        self.map
            .range((user_key.to_vec(), Reverse(u64::MAX))..)
            .next()
            .is_some_and(|(k, _)| k.0 == user_key)
    }

    /// The newest entry of `user_key` with seqno `<= snapshot`, as `Table::get` answers.
    fn get(&self, user_key: &[u8], snapshot: u64) -> Option<LookupResult> {
        let start = (user_key.to_vec(), Reverse((snapshot << 8) | 0xff));
        let (key, value) = self.map.range(start..).next()?;
        (key.0 == user_key).then(|| LookupResult {
            kind: kind_of(key),
            seqno: seqno_of(key),
            value: value.clone(),
        })
    }

    fn write(&self, writer: &mut TableWriter) {
        for (key, value) in &self.map {
            writer
                .add_entry(&key.0, seqno_of(key), kind_of(key), value)
                .unwrap();
        }
    }
}

/// A value that compresses: repeated words around some random bytes, sometimes empty,
/// occasionally larger than a block.
fn random_value(rng: &mut SmallRng, big_values: bool) -> Vec<u8> {
    const WORDS: [&str; 6] = ["alpha ", "beta ", "gamma ", "delta ", "epsilon ", "zeta "];
    match rng.gen_range(0..100) {
        0..=9 => Vec::new(),
        10..=11 if big_values => {
            let len = rng.gen_range(4200..6000);
            (0..len).map(|i| b"lorem ipsum "[i % 12]).collect()
        }
        _ => {
            let mut value = Vec::new();
            for _ in 0..rng.gen_range(1..8) {
                value.extend_from_slice(WORDS[rng.gen_range(0..WORDS.len())].as_bytes());
            }
            value.extend((0..rng.gen_range(0..4)).map(|_| rng.gen::<u8>()));
            value
        }
    }
}

/// `n` distinct user keys with shared prefixes and 1 to 3 versions each (distinct seqnos,
/// about one in five a deletion).
fn random_model(rng: &mut SmallRng, n: usize, big_values: bool) -> Model {
    const PREFIXES: [&[u8]; 6] = [b"app", b"apx", b"ban", b"b", b"cherry", b"\xff\x00"];
    let mut user_keys = std::collections::BTreeSet::new();
    while user_keys.len() < n {
        let mut key = PREFIXES[rng.gen_range(0..PREFIXES.len())].to_vec();
        key.extend((0..rng.gen_range(0..8)).map(|_| rng.gen_range(b'a'..=b'f')));
        if rng.gen_range(0..20) == 0 {
            key.push(rng.gen());
        }
        // Some keys too long for `Table::get`'s stack seek key (the heap path).
        if rng.gen_range(0..10) == 0 {
            key.extend((0..rng.gen_range(100..200)).map(|_| rng.gen_range(b'a'..=b'f')));
        }
        user_keys.insert(key);
    }
    let mut model = Model::default();
    for key in user_keys {
        let mut seqnos: Vec<u64> = (0..rng.gen_range(1..=3))
            .map(|_| rng.gen_range(1..10_000))
            .collect();
        seqnos.sort_unstable();
        seqnos.dedup();
        for seqno in seqnos {
            if rng.gen_range(0..5) == 0 {
                model.insert(&key, seqno, ValueKind::Deletion, b"");
            } else {
                model.insert(
                    &key,
                    seqno,
                    ValueKind::Value,
                    &random_value(rng, big_values),
                );
            }
        }
    }
    model
}

/// A dictionary trained once on values like the ones the tests write.
fn dictionary() -> Arc<[u8]> {
    static DICTIONARY: OnceLock<Arc<[u8]>> = OnceLock::new();
    DICTIONARY
        .get_or_init(|| {
            let mut rng = SmallRng::seed_from_u64(0xd1c7);
            let samples: Vec<Vec<u8>> = (0..2000)
                .map(|i| {
                    let mut s = format!("app{i:04}").into_bytes();
                    s.extend(random_value(&mut rng, false));
                    s
                })
                .collect();
            let refs: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
            train_zstd_dictionary(&refs, 4 << 10).unwrap().into()
        })
        .clone()
}

fn options_for(compression: Compression) -> WriterOptions {
    WriterOptions {
        compression,
        compression_dictionary: (compression == Compression::ZstdDict).then(dictionary),
        creation_time: Some(CREATION_TIME),
        ..WriterOptions::default()
    }
}

fn write_model(
    fs: &dyn FileSystem,
    path: &Path,
    options: WriterOptions,
    model: &Model,
) -> (u64, TableProperties) {
    let mut writer = TableWriter::create(fs, path, options).unwrap();
    model.write(&mut writer);
    assert_eq!(writer.num_entries(), model.map.len() as u64);
    writer.finish().unwrap()
}

fn open(fs: &dyn FileSystem, path: &Path) -> Arc<Table> {
    Table::open(fs, path, &TableOpenOptions::default()).unwrap()
}

fn collect_forward(iter: &mut TableIter) -> Vec<(OracleKey, Vec<u8>)> {
    let mut out = Vec::new();
    iter.seek_to_first();
    while iter.valid() {
        out.push((oracle_key_of(iter.key()), iter.value().to_vec()));
        iter.next();
    }
    out
}

fn collect_backward(iter: &mut TableIter) -> Vec<(OracleKey, Vec<u8>)> {
    let mut out = Vec::new();
    iter.seek_to_last();
    while iter.valid() {
        out.push((oracle_key_of(iter.key()), iter.value().to_vec()));
        iter.prev();
    }
    out.reverse();
    out
}

/// `verify` passes, and its blocks tile the file from offset 0 to the footer.
fn check_layout(table: &Arc<Table>) -> TableLayout {
    let layout = table.verify().unwrap();
    assert_eq!(layout.file_size, table.file_size());
    let mut offset = 0;
    for block in &layout.blocks {
        assert_eq!(
            block.handle.offset, offset,
            "gap or overlap before {block:?}"
        );
        offset = block.handle.end_with_trailer();
    }
    assert_eq!(offset + FOOTER_SIZE as u64, table.file_size());
    let of_kind = |kind| layout.blocks.iter().filter(move |b| b.kind == kind);
    let index: Vec<_> = of_kind(BlockKind::Index).collect();
    let metaindex: Vec<_> = of_kind(BlockKind::Metaindex).collect();
    assert_eq!((index.len(), metaindex.len()), (1, 1));
    assert_eq!(index[0].handle, table.footer().index);
    assert_eq!(metaindex[0].handle, table.footer().metaindex);
    assert_eq!(of_kind(BlockKind::Properties).count(), 1);
    layout
}

fn block_bytes(layout: &TableLayout, kind: BlockKind) -> u64 {
    layout
        .blocks
        .iter()
        .filter(|b| b.kind == kind)
        .map(|b| b.handle.size + BLOCK_TRAILER_SIZE as u64)
        .sum()
}

fn check_properties(
    table: &Arc<Table>,
    written: &TableProperties,
    options: &WriterOptions,
    model: &Model,
    layout: &TableLayout,
) {
    let p = table.properties();
    assert_eq!(p, written, "properties read back differ from those written");
    let entries = model.entries();
    assert_eq!(p.comparator, BytewiseComparator::NAME);
    assert_eq!(p.compression, options.compression.name());
    assert_eq!(p.format_version, u64::from(options.format_version));
    assert_eq!(p.creation_time, CREATION_TIME);
    assert_eq!(p.num_entries, entries.len() as u64);
    let deletions = entries
        .iter()
        .filter(|(k, _)| kind_of(k) == ValueKind::Deletion)
        .count();
    assert_eq!(p.num_deletions, deletions as u64);
    assert_eq!(p.num_range_deletions, 0);
    let raw_keys: usize = entries.iter().map(|(k, _)| k.0.len() + 8).sum();
    let raw_values: usize = entries.iter().map(|(_, v)| v.len()).sum();
    assert_eq!(p.raw_key_size, raw_keys as u64);
    assert_eq!(p.raw_value_size, raw_values as u64);
    assert_eq!(p.smallest_key, encode(&entries[0].0));
    assert_eq!(p.largest_key, encode(&entries[entries.len() - 1].0));
    let seqnos = entries.iter().map(|(k, _)| seqno_of(k));
    assert_eq!(p.smallest_seqno, seqnos.clone().min().unwrap());
    assert_eq!(p.largest_seqno, seqnos.max().unwrap());
    let data_blocks = layout
        .blocks
        .iter()
        .filter(|b| b.kind == BlockKind::Data)
        .count();
    assert_eq!(p.num_data_blocks, data_blocks as u64);
    assert_eq!(p.data_size, block_bytes(layout, BlockKind::Data));
    assert_eq!(p.index_size, block_bytes(layout, BlockKind::Index));
    assert_eq!(
        p.filter_size,
        block_bytes(layout, BlockKind::Filter) + block_bytes(layout, BlockKind::PrefixFilter)
    );
    assert_eq!(
        p.filter_bits_per_key,
        u64::from(options.filter_bits_per_key)
    );
    assert_eq!(p.user, options.user_properties);
    assert_eq!(
        p.prefix_extractor.as_deref(),
        options.prefix_extractor.as_ref().map(|e| e.name())
    );
    assert_eq!(
        layout
            .blocks
            .iter()
            .any(|b| b.kind == BlockKind::CompressionDict),
        options.compression == Compression::ZstdDict
    );
}

/// Full scans both ways, and `get` of every key at snapshots around each of its versions.
fn check_reads(table: &Arc<Table>, model: &Model) {
    let expected = model.entries();
    let mut iter = table.iter(ReadOptions::default());
    assert!(
        collect_forward(&mut iter) == expected,
        "forward scan differs"
    );
    iter.status().unwrap();
    assert!(
        collect_backward(&mut iter) == expected,
        "backward scan differs"
    );
    iter.status().unwrap();

    let user_keys = model.user_keys();
    for user_key in &user_keys {
        assert!(table.may_contain(user_key));
        let mut snapshots = vec![0, 1, MAX_SEQNO];
        for (key, _) in model.map.range((user_key.clone(), Reverse(u64::MAX))..) {
            if key.0 != *user_key {
                break;
            }
            let seqno = seqno_of(key);
            snapshots.extend([seqno - 1, seqno, seqno + 1]);
        }
        for snapshot in snapshots {
            assert_eq!(
                table.get(user_key, snapshot).unwrap(),
                model.get(user_key, snapshot),
                "get({user_key:?}, {snapshot})"
            );
        }
    }
    // Absent keys: before the first, between neighbours, after the last.
    let mut absent = vec![Vec::new(), b"\x00".to_vec(), b"a".to_vec(), vec![0xff; 12]];
    for pair in user_keys.windows(2) {
        let mut between = pair[0].clone();
        between.push(0);
        absent.push(between);
        absent.push(pair[1][..pair[1].len() - 1].to_vec());
    }
    for key in absent.iter().filter(|k| !model.contains_user_key(k)) {
        for snapshot in [0, 5000, MAX_SEQNO] {
            assert_eq!(table.get(key, snapshot).unwrap(), None, "get({key:?})");
        }
    }
}

fn round_trip(compression: Compression, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let mut case = 0;
    for checksum in [ChecksumType::Crc32c, ChecksumType::Xxh3] {
        for block_size in [64, 4096] {
            for restart_interval in [1, 16] {
                case += 1;
                let model = random_model(&mut rng, 250, true);
                let mut user_properties = BTreeMap::new();
                user_properties.insert("schema".to_owned(), b"t(k BLOB, v BLOB)".to_vec());
                user_properties.insert(format!("case{case}"), vec![0, 0xff, case]);
                let options = WriterOptions {
                    checksum,
                    block_size,
                    block_restart_interval: restart_interval,
                    user_properties,
                    oldest_entry_time: 77,
                    // Both table formats are written and read: version 1 with crc32c.
                    format_version: if checksum == ChecksumType::Crc32c {
                        1
                    } else {
                        2
                    },
                    ..options_for(compression)
                };
                let path = format!("/db/{compression}-{case}.sst");
                let path = Path::new(&path);
                let (size, written) = write_model(&fs, path, options.clone(), &model);
                assert_eq!(fs.file_contents(path).unwrap().len() as u64, size);
                let table = open(&fs, path);
                assert_eq!(table.checksum_type(), checksum);
                assert_eq!(table.file_size(), size);
                let layout = check_layout(&table);
                check_properties(&table, &written, &options, &model, &layout);
                assert_eq!(table.properties().oldest_entry_time, 77);
                let data: Vec<_> = layout
                    .blocks
                    .iter()
                    .filter(|b| b.kind == BlockKind::Data)
                    .collect();
                if block_size == 64 {
                    // Nearly one block per entry; the large values make blocks of their own.
                    assert!(data.len() as u64 > table.properties().num_entries / 4);
                }
                let compressed = data.iter().filter(|b| b.compression != 0).count();
                if compression == Compression::None {
                    assert_eq!(compressed, 0);
                } else if block_size == 4096 {
                    assert!(compressed > 0, "{compression}: no data block compressed");
                    assert!(data
                        .iter()
                        .all(|b| b.compression == 0 || b.compression == compression.tag()));
                }
                check_reads(&table, &model);
            }
        }
    }
}

#[test]
fn round_trip_none() {
    round_trip(Compression::None, 1);
}

#[test]
fn round_trip_snappy() {
    round_trip(Compression::Snappy, 2);
}

#[test]
fn round_trip_zlib() {
    round_trip(Compression::Zlib, 3);
}

#[test]
fn round_trip_lz4() {
    round_trip(Compression::Lz4, 4);
}

#[test]
fn round_trip_zstd() {
    round_trip(Compression::Zstd, 5);
}

#[test]
fn round_trip_zstd_with_dictionary() {
    round_trip(Compression::ZstdDict, 6);
}

#[test]
fn empty_table_round_trips() {
    let fs = MemFs::new();
    let path = Path::new("/empty.sst");
    let options = options_for(Compression::Lz4);
    let (size, written) = write_model(&fs, path, options, &Model::default());
    let table = open(&fs, path);
    assert_eq!(table.file_size(), size);
    assert_eq!(table.properties(), &written);
    assert_eq!(written.num_entries, 0);
    assert_eq!(written.num_data_blocks, 0);
    assert!(written.smallest_key.is_empty() && written.largest_key.is_empty());
    let layout = check_layout(&table);
    assert!(layout.blocks.iter().all(|b| b.kind != BlockKind::Data));
    let mut iter = table.iter(ReadOptions::default());
    assert!(collect_forward(&mut iter).is_empty());
    assert!(collect_backward(&mut iter).is_empty());
    iter.seek(InternalKey::for_seek(b"a", MAX_SEQNO).encoded());
    assert!(!iter.valid());
    iter.seek_for_prev(InternalKey::for_seek(b"a", MAX_SEQNO).encoded());
    assert!(!iter.valid());
    iter.status().unwrap();
    assert_eq!(table.get(b"a", MAX_SEQNO).unwrap(), None);
    assert!(table.range_tombstones().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Bounded iteration and mixed stepping.

/// A position in the oracle's bounded entries, stepped the way a `TableIter` is.
struct ModelIter<'a> {
    entries: &'a [(OracleKey, Vec<u8>)],
    position: Option<usize>,
}

impl ModelIter<'_> {
    fn seek(&mut self, target: &OracleKey) {
        let i = self.entries.partition_point(|(k, _)| k < target);
        self.position = (i < self.entries.len()).then_some(i);
    }

    fn seek_for_prev(&mut self, target: &OracleKey) {
        let i = self.entries.partition_point(|(k, _)| k <= target);
        self.position = i.checked_sub(1);
    }

    fn next(&mut self) {
        self.position = self
            .position
            .map(|i| i + 1)
            .filter(|&i| i < self.entries.len());
    }

    fn prev(&mut self) {
        self.position = self.position.and_then(|i| i.checked_sub(1));
    }

    fn current(&self) -> Option<&(OracleKey, Vec<u8>)> {
        self.position.map(|i| &self.entries[i])
    }
}

fn random_bound(rng: &mut SmallRng, candidates: &[Vec<u8>]) -> Option<Vec<u8>> {
    (rng.gen_range(0..5) != 0).then(|| candidates[rng.gen_range(0..candidates.len())].clone())
}

fn random_target(rng: &mut SmallRng, candidates: &[Vec<u8>]) -> OracleKey {
    let user_key = &candidates[rng.gen_range(0..candidates.len())];
    let seqno = match rng.gen_range(0..4) {
        0 => MAX_SEQNO,
        1 => 0,
        _ => rng.gen_range(0..10_001),
    };
    let kind = [ValueKind::Deletion, ValueKind::Value, ValueKind::MAX][rng.gen_range(0..3)];
    oracle_key(user_key, seqno, kind)
}

/// The model with only the newest version of each user key.
fn newest_versions_only(model: &Model) -> Model {
    let mut newest = Model::default();
    for (key, value) in &model.map {
        if !newest.contains_user_key(&key.0) {
            newest.map.insert(key.clone(), value.clone());
        }
    }
    newest
}

/// Whether some user key has entries in two data blocks (then a version-2 index must keep
/// internal-key separators).
fn some_user_key_spans_blocks(layout: &TableLayout) -> bool {
    let data: Vec<_> = layout
        .blocks
        .iter()
        .filter(|b| b.kind == BlockKind::Data)
        .collect();
    data.windows(2).any(|pair| {
        let (last, first) = (pair[0].last_key.as_ref(), pair[1].first_key.as_ref());
        let user = |k: &Vec<u8>| k[..k.len() - 8].to_vec();
        last.map(user) == first.map(user)
    })
}

#[test]
fn bounded_iteration_and_stepping_match_the_oracle() {
    let mut rng = SmallRng::seed_from_u64(0xb0_0d);
    let fs = MemFs::new();
    let configs = [
        (64, 1, Compression::None),
        (256, 4, Compression::Lz4),
        (4096, 16, Compression::Snappy),
    ];
    // Several versions per user key (which span blocks in the small-block tables) or one;
    // the newest table format and version 1.
    let forms = [(false, 2), (true, 2), (true, 1)];
    let cases = configs
        .into_iter()
        .flat_map(|config| forms.into_iter().map(move |form| (config, form)));
    for (n, ((block_size, restart_interval, compression), (single, format_version))) in
        cases.enumerate()
    {
        let mut model = random_model(&mut rng, 120, false);
        if single {
            model = newest_versions_only(&model);
        }
        let path = format!("/bounds-{n}.sst");
        let path = Path::new(&path);
        let options = WriterOptions {
            block_size,
            block_restart_interval: restart_interval,
            format_version,
            ..options_for(compression)
        };
        write_model(&fs, path, options, &model);
        let table = open(&fs, path);
        let layout = check_layout(&table);
        let spans = some_user_key_spans_blocks(&layout);
        if block_size == 64 {
            assert_eq!(
                spans, !single,
                "table {n}: expected user keys spanning blocks"
            );
        }
        let entries = table.index_entries().unwrap();
        let user_keys = format_version == 2 && !spans;
        assert!(
            entries.iter().all(|e| e.separator_is_user_key == user_keys),
            "table {n}: index separators should be user keys: {user_keys}"
        );
        assert_eq!(layout.index_user_keys, user_keys);
        assert_eq!(entries.len() as u64, table.properties().num_data_blocks);
        let all = model.entries();
        // Bound and seek candidates: every user key, keys between and around them.
        let user_keys = model.user_keys();
        let mut candidates = user_keys.clone();
        candidates.extend([Vec::new(), b"a".to_vec(), b"bz".to_vec(), vec![0xff; 4]]);
        for key in &user_keys {
            let mut after = key.clone();
            after.push(0);
            candidates.push(after);
            candidates.push(key[..key.len() / 2].to_vec());
        }
        for round in 0..150 {
            let lower = random_bound(&mut rng, &candidates);
            let mut upper = random_bound(&mut rng, &candidates);
            if round % 10 == 0 {
                upper.clone_from(&lower); // empty range
            }
            let in_bounds = |k: &OracleKey| {
                lower.as_ref().is_none_or(|l| k.0 >= *l) && upper.as_ref().is_none_or(|u| k.0 < *u)
            };
            let expected: Vec<_> = all.iter().filter(|(k, _)| in_bounds(k)).cloned().collect();
            let read_options = ReadOptions {
                lower_bound: lower.clone(),
                upper_bound: upper.clone(),
                ..ReadOptions::default()
            };
            let what = format!("table {n}, bounds {lower:?}..{upper:?}");
            let mut iter = table.iter(read_options);
            assert!(collect_forward(&mut iter) == expected, "forward, {what}");
            assert!(collect_backward(&mut iter) == expected, "backward, {what}");
            iter.status().unwrap();

            random_steps(&mut rng, &mut iter, &expected, &candidates, &what);
        }
    }
}

/// Applies 60 random positioning and stepping calls to `iter` and to the oracle over the same
/// bounded `expected` entries, checking they agree after each.
fn random_steps(
    rng: &mut SmallRng,
    iter: &mut TableIter,
    expected: &[(OracleKey, Vec<u8>)],
    candidates: &[Vec<u8>],
    what: &str,
) {
    let mut model_iter = ModelIter {
        entries: expected,
        position: None,
    };
    let mut ops = Vec::new();
    for _ in 0..60 {
        match rng.gen_range(0..10) {
            0 => {
                ops.push("seek_to_first".to_owned());
                iter.seek_to_first();
                model_iter.position = (!expected.is_empty()).then_some(0);
            }
            1 => {
                ops.push("seek_to_last".to_owned());
                iter.seek_to_last();
                model_iter.position = expected.len().checked_sub(1);
            }
            2 => {
                let target = random_target(rng, candidates);
                ops.push(format!("seek {target:?}"));
                iter.seek(&encode(&target));
                model_iter.seek(&target);
            }
            3 => {
                let target = random_target(rng, candidates);
                ops.push(format!("seek_for_prev {target:?}"));
                iter.seek_for_prev(&encode(&target));
                model_iter.seek_for_prev(&target);
            }
            4..=6 => {
                ops.push("next".to_owned());
                iter.next();
                model_iter.next();
            }
            _ => {
                ops.push("prev".to_owned());
                iter.prev();
                model_iter.prev();
            }
        }
        match model_iter.current() {
            Some((key, value)) => {
                assert!(iter.valid(), "{what}: after {ops:?} expected {key:?}");
                assert_eq!(&oracle_key_of(iter.key()), key, "{what}: after {ops:?}");
                assert_eq!(iter.user_key(), key.0.as_slice());
                assert_eq!(iter.value(), value.as_slice(), "{what}: after {ops:?}");
            }
            None => assert!(!iter.valid(), "{what}: after {ops:?} expected the end"),
        }
        iter.status().unwrap();
    }
}

#[test]
fn direction_switches_across_block_boundaries() {
    let fs = MemFs::new();
    let path = Path::new("/switch.sst");
    let mut model = Model::default();
    for i in 0..40u32 {
        let key = format!("key{i:03}");
        model.insert(key.as_bytes(), 100, ValueKind::Value, &[b'v'; 30]);
        model.insert(key.as_bytes(), 50, ValueKind::Deletion, b"");
    }
    let options = WriterOptions {
        block_size: 100,
        block_restart_interval: 3,
        ..options_for(Compression::None)
    };
    write_model(&fs, path, options, &model);
    let table = open(&fs, path);
    check_layout(&table);
    assert!(table.properties().num_data_blocks >= 10);
    let all = model.entries();
    let mut iter = table.iter(ReadOptions::default());
    // Walk to every position, then step back and forth across it.
    for i in 0..all.len() {
        iter.seek(&encode(&all[i].0));
        assert_eq!(oracle_key_of(iter.key()), all[i].0);
        if i > 0 {
            iter.prev();
            assert_eq!(oracle_key_of(iter.key()), all[i - 1].0);
            iter.next();
        }
        if i + 1 < all.len() {
            iter.next();
            assert_eq!(oracle_key_of(iter.key()), all[i + 1].0);
            iter.prev();
        }
        assert_eq!(oracle_key_of(iter.key()), all[i].0);
    }
    // Past either end the iterator stays invalid until repositioned.
    iter.seek_to_last();
    iter.next();
    assert!(!iter.valid());
    iter.prev();
    assert!(!iter.valid());
    iter.seek_to_first();
    iter.prev();
    assert!(!iter.valid());
    iter.next();
    assert!(!iter.valid());
    iter.status().unwrap();
}

// ---------------------------------------------------------------------------------------------
// Block cache.

fn scan_count(table: &Arc<Table>, options: ReadOptions) -> usize {
    let mut iter = table.iter(options);
    let n = collect_forward(&mut iter).len();
    iter.status().unwrap();
    n
}

fn small_blocks_model(n: u32, value_len: usize) -> Model {
    let mut model = Model::default();
    for i in 0..n {
        let value = format!("{i:06}").repeat(value_len / 6);
        model.insert(
            format!("k{i:05}").as_bytes(),
            7,
            ValueKind::Value,
            value.as_bytes(),
        );
    }
    model
}

#[test]
fn block_cache_is_shared_and_hit_on_second_read() {
    let fs = MemFs::new();
    let model = small_blocks_model(200, 60);
    let options = WriterOptions {
        block_size: 512,
        ..options_for(Compression::Lz4)
    };
    write_model(&fs, Path::new("/a.sst"), options.clone(), &model);
    write_model(&fs, Path::new("/b.sst"), options, &model);
    let cache = Arc::new(BlockCache::new(8 << 20));
    let open_options = TableOpenOptions {
        block_cache: Some(cache.clone()),
        ..TableOpenOptions::default()
    };
    let a = Table::open(&fs, Path::new("/a.sst"), &open_options).unwrap();
    let b = Table::open(&fs, Path::new("/b.sst"), &open_options).unwrap();
    let blocks = a.properties().num_data_blocks;
    assert!(blocks >= 10, "{blocks} blocks");
    assert_eq!(cache.stats().entries, 0, "open caches no data block");

    assert_eq!(scan_count(&a, ReadOptions::default()), 200);
    let first = cache.stats();
    assert_eq!(
        (first.hits, first.misses, first.inserts),
        (0, blocks, blocks)
    );
    assert_eq!(first.entries, blocks);

    assert_eq!(scan_count(&a, ReadOptions::default()), 200);
    let second = cache.stats();
    assert_eq!(
        second.hits, blocks,
        "the second scan reads every block from the cache"
    );
    assert_eq!((second.misses, second.inserts), (blocks, blocks));

    // Table b shares the cache but not its entries (each open table has its own file id).
    assert_eq!(scan_count(&b, ReadOptions::default()), 200);
    let third = cache.stats();
    assert_eq!((third.hits, third.misses), (blocks, 2 * blocks));
    assert_eq!(third.entries, 2 * blocks);
    assert_eq!(scan_count(&b, ReadOptions::default()), 200);
    assert_eq!(cache.stats().hits, 2 * blocks);

    // Point lookups hit the cache too, and return what the oracle says.
    for user_key in model.user_keys() {
        assert_eq!(
            b.get(&user_key, MAX_SEQNO).unwrap(),
            model.get(&user_key, MAX_SEQNO)
        );
    }
    let after_gets = cache.stats();
    assert_eq!(after_gets.hits, 2 * blocks + 200);
    assert_eq!(after_gets.misses, 2 * blocks);
    assert!(after_gets.usage <= after_gets.capacity);
    check_layout(&a);
    check_layout(&b);
}

#[test]
fn block_cache_capacity_is_respected() {
    let fs = MemFs::new();
    let model = small_blocks_model(600, 90);
    let options = WriterOptions {
        block_size: 1024,
        ..options_for(Compression::None)
    };
    write_model(&fs, Path::new("/big.sst"), options, &model);
    let cache = Arc::new(BlockCache::with_shards(8 << 10, 1));
    let open_options = TableOpenOptions {
        block_cache: Some(cache.clone()),
        ..TableOpenOptions::default()
    };
    let table = Table::open(&fs, Path::new("/big.sst"), &open_options).unwrap();
    let blocks = table.properties().num_data_blocks;
    assert!(blocks >= 40, "{blocks} blocks");
    for _ in 0..2 {
        let mut iter = table.iter(ReadOptions::default());
        assert!(collect_forward(&mut iter) == model.entries());
        assert!(collect_backward(&mut iter) == model.entries());
        iter.status().unwrap();
        let stats = cache.stats();
        assert!(stats.usage <= 8 << 10, "{stats:?}");
        assert!(stats.entries < blocks, "{stats:?}");
    }
    let stats = cache.stats();
    assert!(stats.evictions > 0, "{stats:?}");
    assert_eq!(stats.capacity, 8 << 10);
    check_layout(&table);
}

#[test]
fn skip_cache_fill_does_not_insert() {
    let fs = MemFs::new();
    let model = small_blocks_model(200, 60);
    let options = WriterOptions {
        block_size: 512,
        ..options_for(Compression::Zstd)
    };
    write_model(&fs, Path::new("/scan.sst"), options, &model);
    let cache = Arc::new(BlockCache::new(8 << 20));
    let open_options = TableOpenOptions {
        block_cache: Some(cache.clone()),
        ..TableOpenOptions::default()
    };
    let table = Table::open(&fs, Path::new("/scan.sst"), &open_options).unwrap();
    let blocks = table.properties().num_data_blocks;
    let scan = ReadOptions {
        skip_cache_fill: true,
        ..ReadOptions::default()
    };
    assert_eq!(scan_count(&table, scan.clone()), 200);
    assert_eq!(scan_count(&table, scan.clone()), 200);
    let stats = cache.stats();
    assert_eq!((stats.inserts, stats.entries, stats.usage), (0, 0, 0));
    assert_eq!((stats.hits, stats.misses), (0, 2 * blocks));
    // A filling read caches its block, and a skipping scan still uses what is cached.
    table.get(b"k00000", MAX_SEQNO).unwrap().unwrap();
    assert_eq!(cache.stats().inserts, 1);
    assert_eq!(scan_count(&table, scan), 200);
    let stats = cache.stats();
    assert_eq!(stats.hits, 1);
    assert_eq!(stats.inserts, 1);
    check_layout(&table);
}

// ---------------------------------------------------------------------------------------------
// Filters.

/// Same prefixes as `FixedPrefix::new(3)` under another name: a table written with one must
/// not use its prefix filter for the other.
#[derive(Debug)]
struct RenamedPrefix;

impl PrefixExtractor for RenamedPrefix {
    fn name(&self) -> &'static str {
        "test.RenamedPrefix"
    }

    fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]> {
        key.get(..3)
    }
}

fn prefixed_model(prefixes: u32, keys_per_prefix: u32) -> Model {
    let mut model = Model::default();
    for p in 0..prefixes {
        for k in 0..keys_per_prefix {
            let key = format!("p{p:02}-{k:04}");
            model.insert(key.as_bytes(), 3, ValueKind::Value, b"v");
        }
    }
    model
}

#[test]
fn bloom_filter_passes_present_keys_and_rejects_most_absent_ones() {
    let fs = MemFs::new();
    let model = prefixed_model(50, 20);
    write_model(
        &fs,
        Path::new("/f.sst"),
        options_for(Compression::None),
        &model,
    );
    let table = open(&fs, Path::new("/f.sst"));
    check_layout(&table);
    let (filter, prefix_filter) = table.filter_stats();
    let filter = filter.unwrap();
    assert_eq!(filter.num_bits, 1000 * 10);
    assert_eq!(filter.num_probes, 7);
    assert!(prefix_filter.is_none());
    for key in model.user_keys() {
        assert!(table.may_contain(&key));
        assert!(table.get(&key, MAX_SEQNO).unwrap().is_some());
    }
    let false_positives = (0..2000)
        .filter(|i| table.may_contain(format!("q{i:06}").as_bytes()))
        .count();
    assert!(false_positives < 60, "{false_positives} of 2000");
    // No prefix filter without an extractor.
    assert!(table.may_contain_prefix(b"zzz"));
}

#[test]
fn prefix_filter_is_used_only_with_the_same_extractor_name() {
    let fs = MemFs::new();
    let path = Path::new("/prefix.sst");
    let model = prefixed_model(40, 10);
    let options = WriterOptions {
        prefix_extractor: Some(Arc::new(FixedPrefix::new(3))),
        ..options_for(Compression::Zlib)
    };
    let (_, written) = write_model(&fs, path, options, &model);
    assert_eq!(
        written.prefix_extractor.as_deref(),
        Some("shale.FixedPrefix.3")
    );
    let absent: Vec<Vec<u8>> = (0..300).map(|i| format!("{i:03}").into_bytes()).collect();

    let same = TableOpenOptions {
        prefix_extractor: Some(Arc::new(FixedPrefix::new(3))),
        ..TableOpenOptions::default()
    };
    let table = Table::open(&fs, path, &same).unwrap();
    check_layout(&table);
    assert!(table.filter_stats().1.is_some());
    for key in model.user_keys() {
        assert!(table.may_contain_prefix(&key), "full key {key:?}");
        assert!(table.may_contain_prefix(&key[..3]), "prefix of {key:?}");
    }
    let passed = absent
        .iter()
        .filter(|p| table.may_contain_prefix(p))
        .count();
    assert!(passed < 30, "{passed} of 300 absent prefixes pass");
    // Keys outside the extractor's domain cannot use the filter.
    assert!(table.may_contain_prefix(b"p"));

    for other in [
        Some(Arc::new(RenamedPrefix) as Arc<dyn PrefixExtractor>),
        Some(Arc::new(FixedPrefix::new(4))),
        None,
    ] {
        let options = TableOpenOptions {
            prefix_extractor: other,
            ..TableOpenOptions::default()
        };
        let table = Table::open(&fs, path, &options).unwrap();
        assert!(table.filter_stats().1.is_none());
        assert!(absent.iter().all(|p| table.may_contain_prefix(p)));
        // The whole-key filter does not depend on the extractor.
        assert!(table.filter_stats().0.is_some());
    }
}

#[test]
fn zero_bits_per_key_writes_no_filter() {
    let fs = MemFs::new();
    let path = Path::new("/nofilter.sst");
    let model = prefixed_model(10, 10);
    let options = WriterOptions {
        filter_bits_per_key: 0,
        prefix_extractor: Some(Arc::new(FixedPrefix::new(3))),
        ..options_for(Compression::None)
    };
    let (_, written) = write_model(&fs, path, options, &model);
    assert_eq!(written.filter_bits_per_key, 0);
    assert_eq!(written.filter_size, 0);
    assert_eq!(written.prefix_extractor, None);
    let open_options = TableOpenOptions {
        prefix_extractor: Some(Arc::new(FixedPrefix::new(3))),
        ..TableOpenOptions::default()
    };
    let table = Table::open(&fs, path, &open_options).unwrap();
    assert_eq!(table.filter_stats(), (None, None));
    assert!(table
        .meta_handles()
        .iter()
        .all(|(name, _)| !name.contains("filter")));
    let layout = check_layout(&table);
    assert!(layout
        .blocks
        .iter()
        .all(|b| !matches!(b.kind, BlockKind::Filter | BlockKind::PrefixFilter)));
    assert!(table.may_contain(b"absent") && table.may_contain_prefix(b"zzz"));
    check_reads(&table, &model);
}

// ---------------------------------------------------------------------------------------------
// Range deletions.

#[test]
fn range_deletions_are_stored_sorted_and_widen_the_key_range() {
    let fs = MemFs::new();
    let path = Path::new("/rd.sst");
    let mut model = Model::default();
    for key in ["b", "e", "g", "n", "w"] {
        model.insert(key.as_bytes(), 20, ValueKind::Value, b"x");
    }
    let mut writer = TableWriter::create(&fs, path, options_for(Compression::Snappy)).unwrap();
    // Interleaved with point entries and out of order.
    writer.add_range_deletion(b"m", b"p", 5).unwrap();
    writer.add_entry(b"b", 20, ValueKind::Value, b"x").unwrap();
    writer.add_range_deletion(b"a", b"c", 30).unwrap();
    writer.add_entry(b"e", 20, ValueKind::Value, b"x").unwrap();
    writer.add_entry(b"g", 20, ValueKind::Value, b"x").unwrap();
    // Through the internal-key entry point too: kind 2, value = end key.
    let key = InternalKey::new(b"x", 3, ValueKind::RangeDeletion);
    writer.add(key.encoded(), b"zz").unwrap();
    writer.add_entry(b"n", 20, ValueKind::Value, b"x").unwrap();
    writer.add_range_deletion(b"d", b"f", 7).unwrap();
    writer.add_entry(b"w", 20, ValueKind::Value, b"x").unwrap();
    writer.add_range_deletion(b"d", b"e", 8).unwrap();
    let (_, props) = writer.finish().unwrap();

    let table = open(&fs, path);
    let layout = check_layout(&table);
    assert_eq!(
        layout
            .blocks
            .iter()
            .filter(|b| b.kind == BlockKind::RangeDeletion)
            .count(),
        1
    );
    let tombstones: Vec<(&[u8], &[u8], u64)> = table
        .range_tombstones()
        .iter()
        .map(|t| (t.start.as_slice(), t.end.as_slice(), t.seqno))
        .collect();
    let expected: Vec<(&[u8], &[u8], u64)> = vec![
        (b"a", b"c", 30),
        (b"d", b"e", 8),
        (b"d", b"f", 7),
        (b"m", b"p", 5),
        (b"x", b"zz", 3),
    ];
    assert_eq!(tombstones, expected);
    assert_eq!(props.num_range_deletions, 5);
    assert_eq!(props.num_entries, 5);
    assert_eq!(
        props.smallest_key,
        InternalKey::new(b"a", 30, ValueKind::RangeDeletion).into_encoded()
    );
    let largest = InternalKey::from_encoded(props.largest_key.clone()).unwrap();
    assert_eq!(largest.user_key(), b"zz");
    assert_eq!((props.smallest_seqno, props.largest_seqno), (3, 30));
    // Point reads are unaffected: tombstones are the caller's to apply.
    check_reads(&table, &model);
}

#[test]
fn range_deletions_with_the_same_start_and_seqno_keep_the_widest() {
    let fs = MemFs::new();
    let path = Path::new("/rd-same.sst");
    let mut writer = TableWriter::create(&fs, path, options_for(Compression::None)).unwrap();
    writer.add_range_deletion(b"a", b"c", 5).unwrap();
    writer.add_range_deletion(b"a", b"z", 5).unwrap();
    writer.add_range_deletion(b"a", b"b", 5).unwrap();
    let (_, props) = writer.finish().unwrap();
    let table = open(&fs, path);
    check_layout(&table);
    let tombstones = table.range_tombstones();
    assert_eq!(tombstones.len(), 1, "{tombstones:?}");
    assert_eq!(
        (tombstones[0].start.as_slice(), tombstones[0].end.as_slice()),
        (&b"a"[..], &b"z"[..]),
        "a merged tombstone must delete everything any of its parts deleted"
    );
    assert_eq!(props.num_range_deletions, 1);
    assert_eq!(
        InternalKey::from_encoded(props.largest_key)
            .unwrap()
            .user_key(),
        b"z"
    );
}

#[test]
fn table_of_only_range_deletions_opens_and_iterates_empty() {
    let fs = MemFs::new();
    let path = Path::new("/only-rd.sst");
    let mut writer = TableWriter::create(&fs, path, options_for(Compression::Lz4)).unwrap();
    writer.add_range_deletion(b"k", b"q", 9).unwrap();
    writer.add_range_deletion(b"c", b"e", 4).unwrap();
    let (_, props) = writer.finish().unwrap();
    assert_eq!((props.num_entries, props.num_data_blocks), (0, 0));
    assert_eq!(props.num_range_deletions, 2);
    assert_eq!(
        props.smallest_key,
        InternalKey::new(b"c", 4, ValueKind::RangeDeletion).into_encoded()
    );
    assert_eq!(
        InternalKey::from_encoded(props.largest_key.clone())
            .unwrap()
            .user_key(),
        b"q"
    );
    assert_eq!((props.smallest_seqno, props.largest_seqno), (4, 9));
    let table = open(&fs, path);
    assert_eq!(table.properties(), &props);
    check_layout(&table);
    assert_eq!(table.range_tombstones().len(), 2);
    let mut iter = table.iter(ReadOptions::default());
    assert!(collect_forward(&mut iter).is_empty());
    assert!(collect_backward(&mut iter).is_empty());
    iter.status().unwrap();
    assert_eq!(table.get(b"m", MAX_SEQNO).unwrap(), None);
}

// ---------------------------------------------------------------------------------------------
// Refusals.

fn invalid_argument(result: Result<impl std::fmt::Debug, Error>) -> String {
    match result {
        Err(Error::InvalidArgument(message)) => message,
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

#[test]
fn keys_out_of_order_are_refused_and_the_writer_goes_on() {
    let fs = MemFs::new();
    let path = Path::new("/order.sst");
    let mut writer = TableWriter::create(&fs, path, options_for(Compression::None)).unwrap();
    writer.add_entry(b"b", 5, ValueKind::Value, b"1").unwrap();
    let message = invalid_argument(writer.add_entry(b"a", 9, ValueKind::Value, b"2"));
    assert!(message.contains("out of order"), "{message}");
    // A newer version of the same key sorts before the older one.
    invalid_argument(writer.add_entry(b"b", 6, ValueKind::Value, b"3"));
    // An exact duplicate is not increasing either.
    invalid_argument(writer.add_entry(b"b", 5, ValueKind::Value, b"4"));
    // Seqnos are 56 bits.
    invalid_argument(writer.add_entry(b"c", MAX_SEQNO + 1, ValueKind::Value, b"5"));
    invalid_argument(writer.add_range_deletion(b"c", b"d", MAX_SEQNO + 1));
    invalid_argument(writer.add_range_deletion(b"d", b"c", 1));
    invalid_argument(writer.add_range_deletion(b"d", b"d", 1));
    invalid_argument(writer.add(b"short", b""));
    writer.add_entry(b"b", 4, ValueKind::Deletion, b"").unwrap();
    writer
        .add_entry(b"c", MAX_SEQNO, ValueKind::Value, b"6")
        .unwrap();
    assert_eq!(writer.num_entries(), 3);
    writer.finish().unwrap();
    let table = open(&fs, path);
    check_layout(&table);
    let mut iter = table.iter(ReadOptions::default());
    let keys: Vec<OracleKey> = collect_forward(&mut iter)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        keys,
        vec![
            oracle_key(b"b", 5, ValueKind::Value),
            oracle_key(b"b", 4, ValueKind::Deletion),
            oracle_key(b"c", MAX_SEQNO, ValueKind::Value),
        ]
    );
    assert_eq!(table.properties().largest_seqno, MAX_SEQNO);
}

#[test]
fn bad_writer_options_are_refused() {
    let fs = MemFs::new();
    let path = Path::new("/bad.sst");
    let create = |options| TableWriter::create(&fs, path, options).map(|_| ());
    invalid_argument(create(WriterOptions {
        block_size: 0,
        ..WriterOptions::default()
    }));
    invalid_argument(create(WriterOptions {
        block_restart_interval: 0,
        ..WriterOptions::default()
    }));
    invalid_argument(create(WriterOptions {
        filter_bits_per_key: 101,
        ..WriterOptions::default()
    }));
    invalid_argument(create(WriterOptions {
        compression: Compression::ZstdDict,
        ..WriterOptions::default()
    }));
    invalid_argument(create(WriterOptions {
        compression: Compression::Zstd,
        compression_dictionary: Some(dictionary()),
        ..WriterOptions::default()
    }));
}

/// Reverse bytewise order, for a comparator-name mismatch and a non-default order.
#[derive(Debug)]
struct ReverseComparator;

impl Comparator for ReverseComparator {
    fn name(&self) -> &'static str {
        "test.ReverseBytewise"
    }

    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        b.cmp(a)
    }

    fn find_shortest_separator(&self, _start: &mut Vec<u8>, _limit: &[u8]) {}

    fn find_short_successor(&self, _key: &mut Vec<u8>) {}
}

#[test]
fn comparator_mismatch_is_refused_naming_both() {
    let fs = MemFs::new();
    let path = Path::new("/reverse.sst");
    let options = WriterOptions {
        comparator: Arc::new(ReverseComparator),
        block_size: 64,
        ..options_for(Compression::None)
    };
    let mut writer = TableWriter::create(&fs, path, options).unwrap();
    for key in ["z", "m", "c", "a"] {
        writer
            .add_entry(key.as_bytes(), 1, ValueKind::Value, key.as_bytes())
            .unwrap();
    }
    invalid_argument(writer.add_entry(b"b", 1, ValueKind::Value, b""));
    writer.finish().unwrap();

    let message = invalid_argument(Table::open(&fs, path, &TableOpenOptions::default()));
    assert!(message.contains("test.ReverseBytewise"), "{message}");
    assert!(message.contains(BytewiseComparator::NAME), "{message}");
    assert!(message.contains("/reverse.sst"), "{message}");

    let reverse = TableOpenOptions {
        comparator: Arc::new(ReverseComparator),
        ..TableOpenOptions::default()
    };
    let table = Table::open(&fs, path, &reverse).unwrap();
    check_layout(&table);
    let mut iter = table.iter(ReadOptions::default());
    let keys: Vec<Vec<u8>> = collect_forward(&mut iter)
        .into_iter()
        .map(|(k, _)| k.0)
        .collect();
    assert_eq!(keys, [b"z", b"m", b"c", b"a"]);
    assert_eq!(table.get(b"c", 1).unwrap().unwrap().value, b"c");
    assert_eq!(table.get(b"b", 1).unwrap(), None);
}

#[test]
fn newer_format_version_is_not_supported() {
    let fs = MemFs::new();
    let path = Path::new("/v2.sst");
    write_model(
        &fs,
        path,
        options_for(Compression::None),
        &prefixed_model(3, 3),
    );
    let mut bytes = fs.file_contents(path).unwrap();
    let at = bytes.len() - FOOTER_SIZE;
    let footer = Footer::decode(&bytes[at..]).unwrap();
    assert_eq!(footer.format_version, FORMAT_VERSION);
    for version in [FORMAT_VERSION + 1, u32::MAX] {
        let patched = Footer {
            format_version: version,
            ..footer
        };
        bytes.truncate(at);
        bytes.extend(patched.encode());
        fs.write_file_for_test(path, &bytes).unwrap();
        match Table::open(&fs, path, &TableOpenOptions::default()) {
            Err(Error::NotSupported(message)) => {
                assert!(message.contains("newer"), "{message}");
                assert!(message.contains(&format!("version {version}")), "{message}");
                assert!(message.contains("/v2.sst"), "{message}");
            }
            other => panic!("version {version}: expected NotSupported, got {other:?}"),
        }
    }
    let zero = Footer {
        format_version: 0,
        ..footer
    };
    bytes.truncate(at);
    bytes.extend(zero.encode());
    fs.write_file_for_test(path, &bytes).unwrap();
    let (offset, detail) =
        expect_corruption(Table::open(&fs, path, &TableOpenOptions::default()), path);
    assert_eq!(offset, at as u64);
    assert!(detail.contains("version 0"), "{detail}");
}

fn expect_corruption(result: Result<Arc<Table>, Error>, path: &Path) -> (u64, String) {
    match result {
        Err(Error::Corruption {
            file,
            offset,
            detail,
        }) => {
            assert_eq!(file, path);
            (offset, detail)
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn unfinished_writer_leaves_a_file_that_does_not_open() {
    let fs = MemFs::new();
    let path = Path::new("/unfinished.sst");
    let mut writer = TableWriter::create(&fs, path, options_for(Compression::None)).unwrap();
    let model = small_blocks_model(300, 60);
    model.write(&mut writer);
    drop(writer);
    let written = fs.file_contents(path).unwrap();
    assert!(
        written.len() > 4096,
        "data blocks were written before the drop"
    );
    expect_corruption(Table::open(&fs, path, &TableOpenOptions::default()), path);

    let empty = Path::new("/never-written.sst");
    drop(TableWriter::create(&fs, empty, WriterOptions::default()).unwrap());
    let (offset, detail) =
        expect_corruption(Table::open(&fs, empty, &TableOpenOptions::default()), empty);
    assert_eq!(offset, 0);
    assert!(detail.contains("too short"), "{detail}");
}

// ---------------------------------------------------------------------------------------------
// Injected I/O failures.

fn expect_injected(error: &Error) {
    match error {
        Error::Io(e) => assert!(e.is_injected(), "{e}"),
        other => panic!("expected an injected I/O error, got {other:?}"),
    }
}

/// Writes `model`, returning the first error from `add_entry` or `finish`.
fn try_write(
    fs: &dyn FileSystem,
    path: &Path,
    options: WriterOptions,
    model: &Model,
) -> Option<Error> {
    let mut writer = match TableWriter::create(fs, path, options) {
        Ok(w) => w,
        Err(e) => return Some(e),
    };
    for (key, value) in &model.map {
        if let Err(e) = writer.add_entry(&key.0, seqno_of(key), kind_of(key), value) {
            return Some(e);
        }
    }
    writer.finish().err()
}

#[test]
fn failed_appends_and_syncs_surface_as_io_errors() {
    let model = small_blocks_model(60, 40);
    let options = WriterOptions {
        block_size: 256,
        ..options_for(Compression::Lz4)
    };
    let path = Path::new("/w.sst");
    let clean = FaultFs::new(Arc::new(MemFs::new()));
    assert!(try_write(&clean, path, options.clone(), &model).is_none());
    check_layout(&open(&clean, path));
    let appends = clean.op_count(OpKind::Append);
    assert!(appends > 10, "{appends} appends");
    for n in 1..=appends {
        let fs = FaultFs::new(Arc::new(MemFs::new()));
        fs.add_rule(FaultRule::new(
            OpKind::Append,
            FaultTrigger::Nth(n),
            FaultError::Eio,
        ));
        let error = try_write(&fs, path, options.clone(), &model)
            .unwrap_or_else(|| panic!("append {n} of {appends} failed silently"));
        expect_injected(&error);
        assert_eq!(fs.injected_count(), 1);
    }
    for fault in [FaultError::FailedSync, FaultError::Eio] {
        let fs = FaultFs::new(Arc::new(MemFs::new()));
        fs.add_rule(FaultRule::new(
            OpKind::SyncData,
            FaultTrigger::Always,
            fault,
        ));
        expect_injected(&try_write(&fs, path, options.clone(), &model).unwrap());
    }
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    fs.add_rule(FaultRule::new(
        OpKind::Append,
        FaultTrigger::Nth(3),
        FaultError::ShortWrite,
    ));
    expect_injected(&try_write(&fs, path, options, &model).unwrap());
}

/// Opens, scans both ways and gets every key through `fs`; every answer is the oracle's or an
/// injected error, and an injected error is reported somewhere. Returns the errors seen.
fn read_everything(fs: &FaultFs, path: &Path, model: &Model) -> usize {
    let table = match Table::open(fs, path, &TableOpenOptions::default()) {
        Ok(t) => t,
        Err(e) => {
            expect_injected(&e);
            return 1;
        }
    };
    let mut errors = 0;
    let expected = model.entries();
    let mut iter = table.iter(ReadOptions::default());
    let forward = collect_forward(&mut iter);
    match iter.status() {
        Ok(()) => assert!(forward == expected, "forward scan without error differs"),
        Err(e) => {
            expect_injected(&e);
            errors += 1;
            assert!(forward.len() < expected.len());
            assert!(
                forward[..] == expected[..forward.len()],
                "forward prefix differs"
            );
        }
    }
    let mut iter = table.iter(ReadOptions::default());
    let mut backward = Vec::new();
    iter.seek_to_last();
    while iter.valid() {
        backward.push((oracle_key_of(iter.key()), iter.value().to_vec()));
        iter.prev();
    }
    match iter.status() {
        Ok(()) => {
            backward.reverse();
            assert!(backward == expected, "backward scan without error differs");
        }
        Err(e) => {
            expect_injected(&e);
            errors += 1;
            let tail = &expected[expected.len() - backward.len()..];
            assert!(
                backward.iter().eq(tail.iter().rev()),
                "backward suffix differs"
            );
        }
    }
    for user_key in model.user_keys() {
        for snapshot in [MAX_SEQNO, 6] {
            match table.get(&user_key, snapshot) {
                Ok(found) => assert_eq!(found, model.get(&user_key, snapshot)),
                Err(e) => {
                    expect_injected(&e);
                    errors += 1;
                }
            }
        }
    }
    errors
}

#[test]
fn failed_reads_surface_as_errors_never_wrong_answers() {
    let mut model = small_blocks_model(50, 40);
    model.insert(b"k00010", 5, ValueKind::Deletion, b"");
    let options = WriterOptions {
        block_size: 256,
        ..options_for(Compression::Zstd)
    };
    let path = Path::new("/r.sst");
    let mem = Arc::new(MemFs::new());
    write_model(&*mem, path, options, &model);
    check_layout(&open(&*mem, path));
    let clean = FaultFs::new(mem.clone());
    assert_eq!(read_everything(&clean, path, &model), 0);
    let reads = clean.op_count(OpKind::Read);
    assert!(reads > 50, "{reads} reads");
    for n in 1..=reads {
        let fs = FaultFs::new(mem.clone());
        fs.add_rule(FaultRule::new(
            OpKind::Read,
            FaultTrigger::Nth(n),
            FaultError::Eio,
        ));
        let errors = read_everything(&fs, path, &model);
        assert_eq!(fs.injected_count(), 1);
        assert_eq!(errors, 1, "read {n}: the injected failure was not reported");
    }
    for seed in 0..20 {
        let fs = FaultFs::new(mem.clone());
        fs.add_rule(FaultRule::new(
            OpKind::Read,
            FaultTrigger::Probability { p: 0.05, seed },
            FaultError::Eio,
        ));
        let errors = read_everything(&fs, path, &model);
        assert!(errors as u64 <= fs.injected_count());
        assert_eq!(errors > 0, fs.injected_count() > 0);
    }
    // The size query on open fails too.
    let fs = FaultFs::new(mem.clone());
    fs.add_rule(FaultRule::new(
        OpKind::Size,
        FaultTrigger::Always,
        FaultError::Eio,
    ));
    expect_injected(&Table::open(&fs, path, &TableOpenOptions::default()).unwrap_err());
}

/// `approximate_offset_of` grows with the key from 0 to the data size, and
/// `sample_index_keys` spreads sorted keys over the table (they split compactions).
#[test]
fn approximate_offsets_and_index_samples_follow_the_data() {
    let fs = MemFs::new();
    let path = Path::new("/offsets.sst");
    let mut writer = TableWriter::create(
        &fs,
        path,
        WriterOptions {
            block_size: 256,
            ..options_for(Compression::None)
        },
    )
    .unwrap();
    let key = |i: u32| format!("key{i:05}").into_bytes();
    for i in 0..2000 {
        writer
            .add_entry(&key(i), 1, ValueKind::Value, &[b'v'; 40])
            .unwrap();
    }
    writer.finish().unwrap();
    let table = open(&fs, path);
    let data_size = table.properties().data_size;
    assert_eq!(table.approximate_offset_of(b"").unwrap(), 0);
    assert_eq!(table.approximate_offset_of(&key(0)).unwrap(), 0);
    assert_eq!(table.approximate_offset_of(b"zzz").unwrap(), data_size);
    let middle = table.approximate_offset_of(&key(1000)).unwrap();
    assert!(
        middle.abs_diff(data_size / 2) < data_size / 50,
        "{middle} of {data_size}"
    );
    let mut last = 0;
    for i in (0..2000).step_by(7) {
        let offset = table.approximate_offset_of(&key(i)).unwrap();
        assert!(offset >= last && offset <= data_size);
        last = offset;
    }
    let samples = table.sample_index_keys(10).unwrap();
    assert!((5..=10).contains(&samples.len()), "{}", samples.len());
    assert!(samples.windows(2).all(|w| w[0] < w[1]));
    let offsets: Vec<u64> = samples
        .iter()
        .map(|k| table.approximate_offset_of(k).unwrap())
        .collect();
    // Evenly spread: consecutive samples about a tenth of the data apart.
    for pair in offsets.windows(2) {
        assert!(pair[1] - pair[0] > data_size / 20, "{offsets:?}");
    }
    assert!(table.sample_index_keys(0).unwrap().is_empty());
}

/// A file that records where each `start_writeback` was asked for.
#[derive(Debug)]
struct WritebackLog {
    inner: Box<dyn shale_fs::WritableFile>,
    requests: Arc<std::sync::Mutex<Vec<u64>>>,
}

impl shale_fs::WritableFile for WritebackLog {
    fn append(&mut self, data: &[u8]) -> shale_fs::Result<()> {
        self.inner.append(data)
    }
    fn flush(&mut self) -> shale_fs::Result<()> {
        self.inner.flush()
    }
    fn start_writeback(&mut self) -> shale_fs::Result<()> {
        self.requests.lock().unwrap().push(self.inner.len());
        self.inner.start_writeback()
    }
    fn sync_data(&mut self) -> shale_fs::Result<()> {
        self.inner.sync_data()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

#[test]
fn bytes_per_sync_asks_for_writeback_about_every_so_many_bytes() {
    for bytes_per_sync in [0u64, 16 << 10] {
        let fs = MemFs::new();
        let requests = Arc::new(std::sync::Mutex::new(Vec::new()));
        let file = WritebackLog {
            inner: fs.create(Path::new("/t.sst")).unwrap(),
            requests: requests.clone(),
        };
        let options = WriterOptions {
            bytes_per_sync,
            ..WriterOptions::default()
        };
        let mut writer = TableWriter::new(Box::new(file), "/t.sst".into(), options).unwrap();
        for i in 0..2000u32 {
            writer
                .add_entry(
                    format!("key{i:06}").as_bytes(),
                    1,
                    ValueKind::Value,
                    &[7; 100],
                )
                .unwrap();
        }
        let (size, _) = writer.finish().unwrap();
        let requests = requests.lock().unwrap().clone();
        if bytes_per_sync == 0 {
            assert!(requests.is_empty(), "{requests:?}");
            continue;
        }
        // ~230 KB of data blocks: a request after each 16 KiB and at most a block beyond.
        assert!(requests.len() >= 10, "{requests:?}");
        let mut previous = 0;
        for &at in &requests {
            assert!(at - previous >= bytes_per_sync, "{requests:?}");
            assert!(at - previous < bytes_per_sync + 8192, "{requests:?}");
            previous = at;
        }
        assert!(previous < size);
        // The table reads back whole.
        let table = Table::open(&fs, Path::new("/t.sst"), &TableOpenOptions::default()).unwrap();
        assert_eq!(table.properties().num_entries, 2000);
    }
}

/// Rewrites the index block of the table at `path` with `edit` applied to its contents, and
/// a checksum that matches (xxh3, the default), so that only the decoder can notice. Returns
/// the index block's offset.
fn rewrite_index_block(fs: &MemFs, path: &Path, edit: impl FnOnce(&mut Vec<u8>)) -> u64 {
    let bytes = fs.file_contents(path).unwrap();
    let at = bytes.len() - FOOTER_SIZE;
    let footer = Footer::decode(&bytes[at..]).unwrap();
    let start = footer.index.offset as usize;
    let end = start + footer.index.size as usize;
    assert_eq!(bytes[end], 0, "the index block is stored uncompressed");
    let mut contents = bytes[start..end].to_vec();
    edit(&mut contents);
    let mut block = contents.clone();
    block.push(0);
    let checksum = xxhash_rust::xxh3::xxh3_64(&block) as u32;
    block.extend_from_slice(&checksum.to_le_bytes());
    // The index is followed by the metaindex and the footer, which keep their bytes; the
    // footer's index handle gets the new size (and the metaindex moves with it).
    let mut out = bytes[..start].to_vec();
    out.extend_from_slice(&block);
    let metaindex_offset = out.len() as u64;
    let metaindex = &bytes[end + BLOCK_TRAILER_SIZE..at];
    out.extend_from_slice(metaindex);
    let patched = Footer {
        index: shale_sst::BlockHandle {
            offset: footer.index.offset,
            size: contents.len() as u64,
        },
        metaindex: shale_sst::BlockHandle {
            offset: metaindex_offset,
            size: footer.metaindex.size,
        },
        ..footer
    };
    out.extend(patched.encode());
    fs.write_file_for_test(path, &out).unwrap();
    footer.index.offset
}

/// A change to an index block's contents.
type IndexEdit = Box<dyn FnOnce(&mut Vec<u8>)>;

#[test]
fn corrupt_version_2_index_is_corruption_naming_file_and_offset() {
    let fs = MemFs::new();
    let path = Path::new("/index2.sst");
    let options = WriterOptions {
        block_size: 256,
        ..options_for(Compression::Lz4)
    };
    let model = prefixed_model(20, 20);
    write_model(&fs, path, options, &model);
    let original = fs.file_contents(path).unwrap();
    let table = open(&fs, path);
    assert_eq!(table.footer().format_version, 2);
    let entries = table.index_entries().unwrap();
    assert!(entries.len() > 3);
    assert!(entries.iter().all(|e| e.separator_is_user_key));
    // The unchanged block round-trips through the rewrite.
    rewrite_index_block(&fs, path, |_| {});
    check_reads(&open(&fs, path), &model);

    let edits: Vec<(&str, IndexEdit, &str)> = vec![
        (
            "a size grown",
            Box::new(|c: &mut Vec<u8>| *c.last_mut().unwrap() += 1),
            "data region",
        ),
        (
            "a size shrunk",
            Box::new(|c: &mut Vec<u8>| *c.last_mut().unwrap() -= 1),
            "data region",
        ),
        (
            "truncated",
            Box::new(|c: &mut Vec<u8>| c.truncate(c.len() / 2)),
            "index entry",
        ),
        (
            "an extra byte",
            Box::new(|c: &mut Vec<u8>| c.push(7)),
            "after its",
        ),
        (
            "unknown flags",
            Box::new(|c: &mut Vec<u8>| c[0] = 0x41),
            "flags",
        ),
        (
            "a wrong count",
            Box::new(|c: &mut Vec<u8>| c[1] ^= 1),
            "data blocks",
        ),
        ("empty", Box::new(|c: &mut Vec<u8>| c.clear()), "empty"),
    ];
    for (what, edit, expected) in edits {
        fs.write_file_for_test(path, &original).unwrap();
        let offset = rewrite_index_block(&fs, path, edit);
        let (at, detail) =
            expect_corruption(Table::open(&fs, path, &TableOpenOptions::default()), path);
        assert_eq!(at, offset, "{what}: {detail}");
        assert!(detail.contains(expected), "{what}: {detail}");
    }
}

#[test]
fn version_1_index_read_as_version_2_is_corruption() {
    let fs = MemFs::new();
    let path = Path::new("/v1.sst");
    let options = WriterOptions {
        format_version: 1,
        ..options_for(Compression::None)
    };
    write_model(&fs, path, options, &prefixed_model(5, 5));
    let table = open(&fs, path);
    assert_eq!(table.properties().format_version, 1);
    assert!(table
        .index_entries()
        .unwrap()
        .iter()
        .all(|e| !e.separator_is_user_key));
    let mut bytes = fs.file_contents(path).unwrap();
    let at = bytes.len() - FOOTER_SIZE;
    let footer = Footer::decode(&bytes[at..]).unwrap();
    assert_eq!(footer.format_version, 1);
    bytes.truncate(at);
    bytes.extend(
        Footer {
            format_version: 2,
            ..footer
        }
        .encode(),
    );
    fs.write_file_for_test(path, &bytes).unwrap();
    let (offset, _) = expect_corruption(Table::open(&fs, path, &TableOpenOptions::default()), path);
    assert_eq!(offset, footer.index.offset);
}

#[test]
fn format_version_outside_the_known_ones_is_refused_by_the_writer() {
    let fs = MemFs::new();
    for version in [0, FORMAT_VERSION + 1] {
        let options = WriterOptions {
            format_version: version,
            ..WriterOptions::default()
        };
        match TableWriter::create(&fs, Path::new("/x.sst"), options) {
            Err(Error::InvalidArgument(message)) => assert!(message.contains("format_version")),
            other => panic!("version {version}: {other:?}"),
        }
    }
}
