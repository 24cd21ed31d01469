//! Builds a table file front to back (docs/format/sst.md, "File layout").
//!
//! Invariants kept here:
//! 1. Point keys are added in strictly increasing internal-key order; a violation is refused
//!    with `InvalidArgument` before anything is written for it.
//! 2. An index entry for a data block is emitted only when the next key (or the end) is known,
//!    so its separator is `>=` every key of the block and `<` every key after it; the
//!    [`IndexBuilder`] also learns the next key, to decide whether user-key separators are
//!    exact (format version 2).
//! 3. Nothing but [`TableWriter::finish`] writes the meta blocks and footer; a writer dropped
//!    without finishing leaves a file without a footer, which no reader accepts.
//! 4. While a zstd dictionary is being trained (`zstd_max_dict_bytes > 0` with
//!    [`Compression::Zstd`]), finished data blocks are held uncompressed, in order, and
//!    nothing is written; once the training budget is reached (or at `finish`) they are all
//!    written, compressed with the trained dictionary or, if training failed, plainly. So the
//!    file's bytes are still written front to back, and every data block of a file is
//!    compressed the same way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use shale_fs::{FileSystem, WritableFile};

use crate::block_builder::BlockBuilder;
use crate::checksum;
use crate::collector::{
    TableFileContext, TablePropertiesCollector, TablePropertiesCollectorFactory,
};
use crate::comparator::{BytewiseComparator, Comparator};
use crate::compression::{Compression, Compressor};
use crate::error::{Error, Result};
use crate::filter::{BloomBuilder, PrefixExtractor};
use crate::format::{
    BlockHandle, ChecksumType, Footer, FORMAT_VERSION, META_COMPRESSION_DICT, META_FILTER,
    META_PREFIX_FILTER, META_PROPERTIES, META_RANGE_DEL,
};
use crate::index_block::IndexBuilder;
use crate::key::{append_internal_key, InternalKeyComparator, ParsedInternalKey, SeqNo, ValueKind};
use crate::properties::TableProperties;

/// How a table is written. `Default` gives 4 KiB blocks, no compression, xxh3 checksums and a
/// 10 bits/key bloom filter.
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// Target uncompressed size of a data block.
    pub block_size: usize,
    /// Entries between restart points in data blocks.
    pub block_restart_interval: usize,
    /// Compression of data blocks.
    pub compression: Compression,
    /// Codec level; `i32::MIN` picks the codec's default.
    pub compression_level: i32,
    /// The zstd dictionary, required with [`Compression::ZstdDict`], stored once in the file.
    pub compression_dictionary: Option<Arc<[u8]>>,
    /// Checksum of every block.
    pub checksum: ChecksumType,
    /// Bloom filter bits per key; 0 writes no filter.
    pub filter_bits_per_key: u32,
    /// When set, a second bloom filter over key prefixes is written.
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    /// User-key order.
    pub comparator: Arc<dyn Comparator>,
    /// The open map stored as `user.<name>` properties.
    pub user_properties: BTreeMap<String, Vec<u8>>,
    /// Seconds since the epoch stored as the creation time; `None` uses the clock.
    pub creation_time: Option<u64>,
    /// Seconds since the epoch of the oldest entry (0 = unknown).
    pub oldest_entry_time: u64,
    /// Whether [`TableWriter::finish`] syncs the file (fdatasync).
    pub sync_on_finish: bool,
    /// Every this many bytes written, ask the OS to start writing them to the device
    /// ([`WritableFile::start_writeback`]), so that the sync at `finish` waits for the last
    /// stretch only instead of the whole file; 0 never asks.
    pub bytes_per_sync: u64,
    /// Marks the table as written for ingestion (`shale.external = 1`); such a table must
    /// hold only seqno 0 entries with unique user keys, which the caller guarantees.
    pub external_file: bool,
    /// With [`Compression::Zstd`]: the size of a zstd dictionary to train from this file's
    /// first data blocks and store in it (the file then reads as `zstd-dict`); 0 trains none.
    pub zstd_max_dict_bytes: usize,
    /// Uncompressed data-block bytes held back as training samples; 0 means 100 times
    /// `zstd_max_dict_bytes` (zstd's advice for its trainer).
    pub zstd_max_train_bytes: usize,
    /// The table format version to write, 1 to [`FORMAT_VERSION`] (the default). Version 1
    /// (internal-key separators and full handles in the index) is kept for tests and for
    /// files an older Shale must read.
    pub format_version: u32,
    /// Makes a collector that sees every point entry and adds `user.<name>` properties at
    /// finish (collector.rs); `None` (the default) collects nothing.
    pub properties_collector: Option<Arc<dyn TablePropertiesCollectorFactory>>,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            block_size: 4096,
            block_restart_interval: 16,
            compression: Compression::None,
            compression_level: i32::MIN,
            compression_dictionary: None,
            checksum: ChecksumType::Xxh3,
            filter_bits_per_key: 10,
            prefix_extractor: None,
            comparator: Arc::new(BytewiseComparator),
            user_properties: BTreeMap::new(),
            creation_time: None,
            oldest_entry_time: 0,
            sync_on_finish: true,
            bytes_per_sync: 0,
            external_file: false,
            zstd_max_dict_bytes: 0,
            zstd_max_train_bytes: 0,
            format_version: FORMAT_VERSION,
            properties_collector: None,
        }
    }
}

impl WriterOptions {
    fn validate(&self) -> Result<()> {
        if self.block_size == 0 || self.block_size > (1 << 26) {
            return Err(Error::InvalidArgument(format!(
                "block_size {} must be between 1 and 64 MiB",
                self.block_size
            )));
        }
        if self.block_restart_interval == 0 {
            return Err(Error::InvalidArgument(
                "block_restart_interval must be at least 1".into(),
            ));
        }
        if self.zstd_max_dict_bytes > MAX_DICTIONARY_BYTES {
            return Err(Error::InvalidArgument(format!(
                "zstd_max_dict_bytes {} is above {} MiB",
                self.zstd_max_dict_bytes,
                MAX_DICTIONARY_BYTES >> 20
            )));
        }
        if self.zstd_max_train_bytes > MAX_TRAIN_BYTES {
            return Err(Error::InvalidArgument(format!(
                "zstd_max_train_bytes {} is above {} MiB",
                self.zstd_max_train_bytes,
                MAX_TRAIN_BYTES >> 20
            )));
        }
        if !(1..=FORMAT_VERSION).contains(&self.format_version) {
            return Err(Error::InvalidArgument(format!(
                "format_version {} is not one this build writes (1..={FORMAT_VERSION})",
                self.format_version
            )));
        }
        if self.filter_bits_per_key > 100 {
            return Err(Error::InvalidArgument(format!(
                "filter_bits_per_key {} is above 100",
                self.filter_bits_per_key
            )));
        }
        Ok(())
    }
}

/// The largest dictionary a writer trains: zstd handles more, but a dictionary is stored in
/// every file and loaded by every reader of it.
const MAX_DICTIONARY_BYTES: usize = 4 << 20;
/// The most sample bytes a writer holds back for training (they sit in memory).
const MAX_TRAIN_BYTES: usize = 256 << 20;
/// Sample bytes per dictionary byte when `zstd_max_train_bytes` is 0.
const DEFAULT_TRAIN_FACTOR: usize = 100;
/// Fewer sample bytes than this many dictionary sizes train no dictionary: the dictionary,
/// stored in the file, would cost about as much as it could save.
const MIN_TRAIN_FACTOR: usize = 8;

/// Data blocks held back while a dictionary is trained (invariant 4).
#[derive(Debug)]
struct DictionaryTraining {
    max_dict_bytes: usize,
    max_train_bytes: usize,
    /// Finished data blocks, uncompressed, in order, each with its index separator once the
    /// next key is known (only the last one may lack it).
    blocks: Vec<HeldBlock>,
    held_bytes: usize,
}

#[derive(Debug)]
struct HeldBlock {
    contents: Vec<u8>,
    /// The separator and the next block's first key.
    separator: Option<(Vec<u8>, Vec<u8>)>,
}

/// Writes one table file. Add entries in order, then [`finish`](Self::finish).
#[derive(Debug)]
pub struct TableWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    options: WriterOptions,
    comparator: InternalKeyComparator,
    compressor: Compressor,
    data_block: BlockBuilder,
    index_block: IndexBuilder,
    /// The handle of the last finished data block, waiting for the next key (invariant 2).
    pending_index_entry: Option<BlockHandle>,
    filter: Option<BloomBuilder>,
    prefix_filter: Option<BloomBuilder>,
    range_deletions: Vec<(Vec<u8>, Vec<u8>)>,
    last_key: Vec<u8>,
    offset: u64,
    /// Where the last writeback request ended (`bytes_per_sync`).
    writeback_requested: u64,
    props: TableProperties,
    compressed: Vec<u8>,
    separator: Vec<u8>,
    training: Option<DictionaryTraining>,
    /// Made from [`WriterOptions::properties_collector`] for this file.
    collector: Option<Box<dyn TablePropertiesCollector>>,
}

impl TableWriter {
    /// Creates `path` on `fs` and starts a table in it.
    pub fn create(fs: &dyn FileSystem, path: &Path, options: WriterOptions) -> Result<Self> {
        options.validate()?;
        let file = fs.create(path)?;
        Self::new(file, path.to_path_buf(), options)
    }

    /// Starts a table in an already-created, empty file.
    pub fn new(file: Box<dyn WritableFile>, path: PathBuf, options: WriterOptions) -> Result<Self> {
        options.validate()?;
        let dictionary = options.compression_dictionary.as_deref();
        if dictionary.is_some() && options.compression != Compression::ZstdDict {
            return Err(Error::InvalidArgument(
                "a compression dictionary needs compression zstd-dict".into(),
            ));
        }
        let compressor =
            Compressor::new(options.compression, options.compression_level, dictionary)?;
        let filter = (options.filter_bits_per_key > 0)
            .then(|| BloomBuilder::new(options.filter_bits_per_key));
        let prefix_filter = match (&options.prefix_extractor, options.filter_bits_per_key) {
            (Some(_), bits) if bits > 0 => Some(BloomBuilder::new(bits)),
            _ => None,
        };
        let training = (options.compression == Compression::Zstd
            && options.zstd_max_dict_bytes > 0)
            .then(|| DictionaryTraining {
                max_dict_bytes: options.zstd_max_dict_bytes,
                max_train_bytes: match options.zstd_max_train_bytes {
                    0 => options
                        .zstd_max_dict_bytes
                        .saturating_mul(DEFAULT_TRAIN_FACTOR)
                        .min(MAX_TRAIN_BYTES),
                    bytes => bytes,
                },
                blocks: Vec::new(),
                held_bytes: 0,
            });
        let props = TableProperties {
            comparator: options.comparator.name().to_owned(),
            compression: options.compression.name().to_owned(),
            compression_level: i64::from(compressor.level()),
            filter_bits_per_key: if filter.is_some() {
                u64::from(options.filter_bits_per_key)
            } else {
                0
            },
            format_version: u64::from(options.format_version),
            prefix_extractor: prefix_filter
                .as_ref()
                .and(options.prefix_extractor.as_ref())
                .map(|p| p.name().to_owned()),
            oldest_entry_time: options.oldest_entry_time,
            user: options.user_properties.clone(),
            smallest_seqno: SeqNo::MAX,
            external: options.external_file,
            ..TableProperties::default()
        };
        let collector = options.properties_collector.as_ref().map(|factory| {
            factory.create_collector(TableFileContext {
                path: &path,
                external_file: options.external_file,
            })
        });
        Ok(TableWriter {
            collector,
            file,
            path,
            comparator: InternalKeyComparator::new(options.comparator.clone()),
            compressor,
            data_block: BlockBuilder::new(options.block_restart_interval),
            index_block: IndexBuilder::new(options.format_version),
            pending_index_entry: None,
            filter,
            prefix_filter,
            range_deletions: Vec::new(),
            last_key: Vec::new(),
            offset: 0,
            writeback_requested: 0,
            props,
            compressed: Vec::new(),
            separator: Vec::new(),
            training,
            options,
        })
    }

    /// Adds a point entry (value or deletion) by its parts.
    pub fn add_entry(
        &mut self,
        user_key: &[u8],
        seqno: SeqNo,
        kind: ValueKind,
        value: &[u8],
    ) -> Result<()> {
        check_seqno(seqno)?;
        let mut key = Vec::with_capacity(user_key.len() + 8);
        append_internal_key(&mut key, user_key, seqno, kind);
        self.add(&key, value)
    }

    /// Adds an entry given its encoded internal key. Range deletions (kind 2, value = end
    /// key) may come in any order; point entries must be strictly increasing.
    pub fn add(&mut self, internal_key: &[u8], value: &[u8]) -> Result<()> {
        let parsed = ParsedInternalKey::parse(internal_key)
            .map_err(|e| Error::InvalidArgument(format!("bad internal key: {e}")))?;
        if parsed.kind == ValueKind::RangeDeletion {
            return self.add_range_deletion(parsed.user_key, value, parsed.seqno);
        }
        if self.props.num_entries > 0
            && self.comparator.compare(&self.last_key, internal_key) != std::cmp::Ordering::Less
        {
            return Err(Error::InvalidArgument(format!(
                "keys out of order writing {}: {:?} after {:?}",
                self.path.display(),
                parsed,
                ParsedInternalKey::parse(&self.last_key).ok()
            )));
        }
        if let Some(handle) = self.pending_index_entry.take() {
            self.separator.clear();
            self.separator.extend_from_slice(&self.last_key);
            self.comparator
                .find_shortest_separator(&mut self.separator, internal_key);
            self.index_block.add(
                &self.separator,
                handle,
                internal_key,
                &*self.options.comparator,
            );
        } else if let Some(held) = self
            .training
            .as_mut()
            .and_then(|t| t.blocks.last_mut())
            .filter(|b| b.separator.is_none())
        {
            let mut separator = self.last_key.clone();
            self.comparator
                .find_shortest_separator(&mut separator, internal_key);
            held.separator = Some((separator, internal_key.to_vec()));
        }
        if let Some(filter) = &mut self.filter {
            filter.add_key(parsed.user_key);
        }
        if let (Some(filter), Some(extractor)) =
            (&mut self.prefix_filter, &self.options.prefix_extractor)
        {
            if let Some(prefix) = extractor.prefix(parsed.user_key) {
                filter.add_key(prefix);
            }
        }
        if self.props.num_entries == 0 {
            self.props.smallest_key = internal_key.to_vec();
        }
        self.note_seqno(parsed.seqno);
        self.props.num_entries += 1;
        if parsed.kind == ValueKind::Deletion {
            self.props.num_deletions += 1;
        }
        if let Some(collector) = &mut self.collector {
            collector.add(parsed.user_key, parsed.kind, value);
        }
        self.props.raw_key_size += internal_key.len() as u64;
        self.props.raw_value_size += value.len() as u64;
        self.last_key.clear();
        self.last_key.extend_from_slice(internal_key);
        self.data_block.add(internal_key, value);
        if self.data_block.estimated_size() >= self.options.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Adds a range tombstone deleting user keys in `[start, end)` at `seqno`.
    pub fn add_range_deletion(&mut self, start: &[u8], end: &[u8], seqno: SeqNo) -> Result<()> {
        check_seqno(seqno)?;
        if self.options.comparator.compare(start, end) != std::cmp::Ordering::Less {
            return Err(Error::InvalidArgument(
                "range deletion start must be below its end".into(),
            ));
        }
        let mut key = Vec::with_capacity(start.len() + 8);
        append_internal_key(&mut key, start, seqno, ValueKind::RangeDeletion);
        self.note_seqno(seqno);
        self.props.num_range_deletions += 1;
        self.range_deletions.push((key, end.to_vec()));
        Ok(())
    }

    fn note_seqno(&mut self, seqno: SeqNo) {
        self.props.smallest_seqno = self.props.smallest_seqno.min(seqno);
        self.props.largest_seqno = self.props.largest_seqno.max(seqno);
    }

    /// Point entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// The encoded internal key of the last point entry added, if any.
    pub fn last_key(&self) -> Option<&[u8]> {
        (self.props.num_entries > 0).then_some(self.last_key.as_slice())
    }

    /// Bytes the file would have if finished now, roughly (for cutting output files).
    pub fn estimated_file_size(&self) -> u64 {
        let held = self.training.as_ref().map_or(0, |t| t.held_bytes);
        self.offset + held as u64 + self.data_block.estimated_size() as u64
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        if let Some(training) = &mut self.training {
            let contents = self.data_block.finish().to_vec();
            training.held_bytes += contents.len();
            training.blocks.push(HeldBlock {
                contents,
                separator: None,
            });
            self.data_block.reset();
            self.props.num_data_blocks += 1;
            if training.held_bytes >= training.max_train_bytes {
                self.finish_training()?;
            }
            return Ok(());
        }
        let contents = self.data_block.finish();
        let handle = write_block(
            &mut *self.file,
            &mut self.offset,
            &mut self.compressor,
            &mut self.compressed,
            self.options.checksum,
            contents,
            true,
        )?;
        self.data_block.reset();
        self.props.num_data_blocks += 1;
        self.props.data_size = self.offset;
        self.pending_index_entry = Some(handle);
        self.start_writeback_if_due()
    }

    /// Asks for the writeback of what was written since the last request once it reaches
    /// `bytes_per_sync`.
    fn start_writeback_if_due(&mut self) -> Result<()> {
        let due = self.options.bytes_per_sync;
        if due > 0 && self.offset - self.writeback_requested >= due {
            self.file.start_writeback()?;
            self.writeback_requested = self.offset;
        }
        Ok(())
    }

    /// Trains the dictionary on the held blocks (or gives up on one), then writes them and
    /// leaves the writer compressing later blocks the same way (invariant 4).
    fn finish_training(&mut self) -> Result<()> {
        let Some(training) = self.training.take() else {
            return Ok(());
        };
        if let Some(dictionary) = train_dictionary(&training) {
            // zstd may still refuse what its trainer produced; plain zstd is then kept.
            if let Ok(compressor) = Compressor::new(
                Compression::ZstdDict,
                self.options.compression_level,
                Some(&dictionary),
            ) {
                self.compressor = compressor;
                self.options.compression = Compression::ZstdDict;
                self.options.compression_dictionary = Some(dictionary.into());
                Compression::ZstdDict
                    .name()
                    .clone_into(&mut self.props.compression);
            }
        }
        for held in training.blocks {
            let handle = write_block(
                &mut *self.file,
                &mut self.offset,
                &mut self.compressor,
                &mut self.compressed,
                self.options.checksum,
                &held.contents,
                true,
            )?;
            match held.separator {
                Some((separator, next_key)) => {
                    self.index_block
                        .add(&separator, handle, &next_key, &*self.options.comparator);
                }
                // The last held block: its separator waits for the next key (invariant 2).
                None => self.pending_index_entry = Some(handle),
            }
            self.start_writeback_if_due()?;
        }
        self.props.data_size = self.offset;
        Ok(())
    }

    fn write_meta_block(&mut self, contents: &[u8]) -> Result<BlockHandle> {
        write_block(
            &mut *self.file,
            &mut self.offset,
            &mut self.compressor,
            &mut self.compressed,
            self.options.checksum,
            contents,
            false,
        )
    }

    /// Writes the meta blocks, index, metaindex and footer, syncs the file if
    /// `sync_on_finish`, and returns the file size and the properties written.
    pub fn finish(mut self) -> Result<(u64, TableProperties)> {
        self.flush_data_block()?;
        self.finish_training()?;
        if let Some(handle) = self.pending_index_entry.take() {
            self.separator.clear();
            self.separator.extend_from_slice(&self.last_key);
            self.comparator.find_short_successor(&mut self.separator);
            self.index_block.add_last(&self.separator, handle);
        }
        let mut meta: Vec<(&'static str, BlockHandle)> = Vec::new();
        if let Some(dictionary) = self.options.compression_dictionary.clone() {
            meta.push((META_COMPRESSION_DICT, self.write_meta_block(&dictionary)?));
        }
        let filter_start = self.offset;
        if let Some(mut filter) = self.filter.take() {
            let contents = filter.finish();
            meta.push((META_FILTER, self.write_meta_block(&contents)?));
        }
        if let Some(mut filter) = self.prefix_filter.take() {
            let contents = filter.finish();
            meta.push((META_PREFIX_FILTER, self.write_meta_block(&contents)?));
        }
        self.props.filter_size = self.offset - filter_start;
        if self.props.num_entries > 0 {
            self.props.largest_key.clone_from(&self.last_key);
        }
        if !self.range_deletions.is_empty() {
            let mut tombstones = std::mem::take(&mut self.range_deletions);
            tombstones.sort_by(|a, b| self.comparator.compare(&a.0, &b.0));
            // Equal (start, seqno) keys cannot both be stored; their union is the widest end.
            let user = self.options.comparator.clone();
            tombstones.dedup_by(|later, kept| {
                let same = later.0 == kept.0;
                if same && user.compare(&later.1, &kept.1) == std::cmp::Ordering::Greater {
                    std::mem::swap(&mut kept.1, &mut later.1);
                }
                same
            });
            self.props.num_range_deletions = tombstones.len() as u64;
            let mut block = BlockBuilder::new(1);
            for (key, end) in &tombstones {
                block.add(key, end);
            }
            let contents = block.finish().to_vec();
            meta.push((META_RANGE_DEL, self.write_meta_block(&contents)?));
            self.extend_key_range_with(&tombstones);
        }
        if self.props.smallest_seqno == SeqNo::MAX {
            self.props.smallest_seqno = 0;
        }
        let index_contents = self.index_block.finish();
        // The index size is known before it is written: its stored form is uncompressed.
        self.props.index_size =
            index_contents.len() as u64 + crate::format::BLOCK_TRAILER_SIZE as u64;
        self.props.creation_time = self.options.creation_time.unwrap_or_else(now_seconds);
        if let Some(mut collector) = self.collector.take() {
            for (name, value) in collector.finish() {
                // collector.rs invariant 1: the writer's own names win.
                self.props.user.entry(name).or_insert(value);
            }
        }
        let properties = self.props.encode();
        meta.push((META_PROPERTIES, self.write_meta_block(&properties)?));
        let index = self.write_meta_block(&index_contents)?;
        meta.sort_by_key(|(name, _)| *name);
        let mut metaindex = BlockBuilder::new(1);
        for (name, handle) in &meta {
            let mut encoded = Vec::with_capacity(20);
            handle.encode_to(&mut encoded);
            metaindex.add(name.as_bytes(), &encoded);
        }
        let metaindex_contents = metaindex.finish().to_vec();
        let metaindex = self.write_meta_block(&metaindex_contents)?;
        let footer = Footer {
            metaindex,
            index,
            checksum_type: self.options.checksum,
            format_version: self.options.format_version,
        };
        self.file.append(&footer.encode())?;
        self.offset += crate::format::FOOTER_SIZE as u64;
        if self.options.sync_on_finish {
            self.file.sync_data()?;
        } else {
            self.file.flush()?;
        }
        Ok((self.offset, self.props))
    }

    /// Widens the smallest/largest keys to cover range tombstones (sorted by start key).
    fn extend_key_range_with(&mut self, tombstones: &[(Vec<u8>, Vec<u8>)]) {
        let has_points = self.props.num_entries > 0;
        if let Some((first, _)) = tombstones.first() {
            if !has_points
                || self.comparator.compare(first, &self.props.smallest_key)
                    == std::cmp::Ordering::Less
            {
                self.props.smallest_key.clone_from(first);
            }
        }
        let user = &self.options.comparator;
        let Some(max_end) = tombstones
            .iter()
            .map(|(_, end)| end)
            .max_by(|a, b| user.compare(a, b))
        else {
            return;
        };
        // The end is exclusive; as an internal key with the largest trailer it sorts before
        // every real entry of that user key, so it bounds the tombstone without covering them.
        let mut end_key = Vec::with_capacity(max_end.len() + 8);
        // The range-deletion sentinel (`FileMetaData::largest_is_exclusive` recognises it).
        append_internal_key(
            &mut end_key,
            max_end,
            crate::key::MAX_SEQNO,
            ValueKind::RangeDeletion,
        );
        if !has_points
            || self.comparator.compare(&end_key, &self.props.largest_key)
                == std::cmp::Ordering::Greater
        {
            self.props.largest_key = end_key;
        }
    }
}

/// A dictionary trained on the held blocks, or `None` when there are too few sample bytes to
/// pay for one or zstd's trainer gives up (too few or too uniform samples).
fn train_dictionary(training: &DictionaryTraining) -> Option<Vec<u8>> {
    let max_dict_bytes = training.max_dict_bytes;
    if training.held_bytes < max_dict_bytes.saturating_mul(MIN_TRAIN_FACTOR) {
        return None;
    }
    let samples: Vec<&[u8]> = training
        .blocks
        .iter()
        .map(|b| b.contents.as_slice())
        .collect();
    crate::compression::train_zstd_dictionary(&samples, max_dict_bytes)
        .ok()
        .filter(|d| !d.is_empty())
}

/// Refuses a seqno that does not fit the 56 bits of an internal key's trailer (it would be
/// silently truncated by the encoding).
fn check_seqno(seqno: SeqNo) -> Result<()> {
    if seqno > crate::key::MAX_SEQNO {
        return Err(Error::InvalidArgument(format!(
            "seqno {seqno} exceeds 56 bits (max {})",
            crate::key::MAX_SEQNO
        )));
    }
    Ok(())
}

fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Writes one block and its trailer at `*offset`, compressing it if `compress`. The stored
/// bytes, tag and checksum are assembled in `scratch` and appended at once.
fn write_block(
    file: &mut dyn WritableFile,
    offset: &mut u64,
    compressor: &mut Compressor,
    scratch: &mut Vec<u8>,
    checksum_type: ChecksumType,
    contents: &[u8],
    compress: bool,
) -> Result<BlockHandle> {
    let tag = if compress {
        compressor.compress(contents, scratch)?
    } else {
        scratch.clear();
        scratch.extend_from_slice(contents);
        Compression::None.tag()
    };
    let stored_len = scratch.len();
    scratch.push(tag);
    let checksum = checksum::block_checksum(checksum_type, scratch);
    scratch.extend_from_slice(&checksum.to_le_bytes());
    debug_assert_eq!(
        scratch.len(),
        stored_len + crate::format::BLOCK_TRAILER_SIZE
    );
    file.append(scratch)?;
    let handle = BlockHandle {
        offset: *offset,
        size: stored_len as u64,
    };
    *offset += scratch.len() as u64;
    Ok(handle)
}
