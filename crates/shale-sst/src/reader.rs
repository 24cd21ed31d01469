//! Opens a table file for point lookups, iteration and verification.
//!
//! On open the footer, metaindex, properties, index, filters and range tombstones are read
//! and kept by the [`Table`] (pinned); data blocks are read on demand through the optional
//! [`BlockCache`]. Every block read checks the trailer's checksum unless the caller turned
//! that off, and every decoding failure becomes `Error::Corruption` naming file and offset.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_fs::{FileSystem, RandomAccessFile};

use crate::block::Block;
use crate::cache::{BlockCache, CacheKey, PinnedCharge, Priority};
use crate::checksum;
use crate::comparator::{BytewiseComparator, Comparator};
use crate::compression::{Compression, Decompressor};
use crate::error::{DecodeError, Error, Result};
use crate::filter::{BloomFilter, PrefixExtractor};
use crate::format::{
    BlockHandle, ChecksumType, Footer, BLOCK_TRAILER_SIZE, FOOTER_SIZE, FORMAT_VERSION,
    MAX_BLOCK_SIZE, META_COMPRESSION_DICT, META_FILTER, META_PREFIX_FILTER, META_PROPERTIES,
    META_RANGE_DEL,
};
use crate::index::Index;
use crate::index_block::{self, DataRegion};
use crate::iter::TableIter;
use crate::key::{InternalKey, InternalKeyComparator, ParsedInternalKey, SeqNo, ValueKind};
use crate::properties::TableProperties;
use crate::readahead::{Readahead, DEFAULT_MAX_READAHEAD_SIZE};

/// Seek keys up to this size are built on the stack by [`Table::get`].
const STACK_SEEK_KEY_BYTES: usize = 128;

/// Blocks up to this size are read through the per-thread [`READ_BUFFER`]; larger ones
/// (rare: blocks are 4 KiB by default) get their own buffer, so no thread keeps a large one.
const MAX_REUSED_READ_BUFFER: usize = 256 << 10;

/// A lookup's key scratch up to this capacity is kept for the thread's next lookup.
const MAX_REUSED_FOUND_KEY: usize = 4096;

thread_local! {
    /// The stored (compressed) bytes of the block being read, reused between reads.
    static READ_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    /// The keys a point lookup's block seek rebuilds, reused between lookups (taken out for
    /// the lookup, so a nested use would only allocate its own).
    static FOUND_KEY: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// How a table is opened.
#[derive(Debug, Clone)]
pub struct TableOpenOptions {
    /// Must have the name stored in the file.
    pub comparator: Arc<dyn Comparator>,
    /// Used for prefix-filter checks when its name matches the file's.
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    /// Shared cache of uncompressed data blocks.
    pub block_cache: Option<Arc<BlockCache>>,
    /// Check block checksums on every read (the default).
    pub verify_checksums: bool,
    /// Keep the index and filters in `block_cache` at high priority, charged to its budget,
    /// instead of pinning them in the open table (what an engine with a strict memory budget
    /// wants). Without a block cache they stay pinned.
    pub cache_index_and_filter_blocks: bool,
    /// With a block cache: keep the index and filters pinned in the open table, their memory
    /// charged to the cache's budget ([`BlockCache::charge_pinned`]) until the table is
    /// closed, so a lookup asks the cache for its data block only. One the cache cannot charge
    /// is handled as `cache_index_and_filter_blocks` says: with it, kept in the cache under the
    /// budget (read again when evicted); without it, pinned uncharged. What `db_bench`'s default
    /// (`cache_index_and_filter_blocks=false`) does, without leaving the memory uncounted.
    pub charge_pinned_index_and_filter: bool,
    /// The sequence number every entry of an ingested (external) table is read with, in
    /// place of the 0 stored in the file (docs/format/sst.md, "External files and the global
    /// seqno"). Refused for a table not marked `shale.external` or holding other seqnos.
    pub global_seqno: Option<SeqNo>,
}

impl Default for TableOpenOptions {
    fn default() -> Self {
        TableOpenOptions {
            comparator: Arc::new(BytewiseComparator),
            prefix_extractor: None,
            block_cache: None,
            verify_checksums: true,
            cache_index_and_filter_blocks: false,
            charge_pinned_index_and_filter: false,
            global_seqno: None,
        }
    }
}

/// Per-read choices for iterators.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Inclusive lower bound on user keys.
    pub lower_bound: Option<Vec<u8>>,
    /// Exclusive upper bound on user keys.
    pub upper_bound: Option<Vec<u8>>,
    /// Skip inserting blocks read by this iterator into the cache (scans).
    pub skip_cache_fill: bool,
    /// The largest automatic readahead window in bytes (`RocksDB`'s
    /// `max_auto_readahead_size`); 0 turns readahead off. After two sequential data block
    /// loads, a block missing from the cache is read with the file's next 8 KiB, then 16 KiB
    /// and so on up to this, from one buffer per iterator (src/readahead.rs). Default 256 KiB.
    pub max_readahead_size: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            lower_bound: None,
            upper_bound: None,
            skip_cache_fill: false,
            max_readahead_size: DEFAULT_MAX_READAHEAD_SIZE,
        }
    }
}

/// What a point lookup found: the newest entry for the key at or below the snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupResult {
    /// Value or deletion.
    pub kind: ValueKind,
    /// The entry's sequence number.
    pub seqno: SeqNo,
    /// The value (empty for deletions).
    pub value: Vec<u8>,
}

/// A range tombstone read from the table: user keys in `[start, end)` deleted at `seqno`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeTombstone {
    /// Inclusive start user key.
    pub start: Vec<u8>,
    /// Exclusive end user key.
    pub end: Vec<u8>,
    /// Sequence number of the deletion.
    pub seqno: SeqNo,
}

/// One entry of a table's index, as the file stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// Bounds the data block from above: `>=` its last key, `<` the next block's first.
    pub separator: Vec<u8>,
    /// The separator is a user key (format version 2, no user key spanning two blocks);
    /// otherwise it is an internal key.
    pub separator_is_user_key: bool,
    /// The data block.
    pub handle: BlockHandle,
}

/// A block as stored: possibly compressed bytes and its trailer's fields.
#[derive(Debug)]
pub(crate) struct StoredBlock {
    pub(crate) bytes: Vec<u8>,
    pub(crate) compression: u8,
    pub(crate) checksum: u32,
}

/// The shape of a bloom filter block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilterStats {
    /// Bits in the filter.
    pub num_bits: u64,
    /// Probes per key.
    pub num_probes: u32,
    /// Bytes of the filter block contents.
    pub size_bytes: u64,
}

/// An open table file.
#[derive(Debug)]
pub struct Table {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    file_size: u64,
    footer: Footer,
    comparator: Arc<InternalKeyComparator>,
    meta_handles: Vec<(String, BlockHandle)>,
    /// Pinned meta blocks; `None` when they live in the block cache instead
    /// (`cache_index_and_filter_blocks`) or the file has none.
    index: Option<Arc<Index>>,
    filter: Option<Arc<BloomFilter>>,
    prefix_filter: Option<Arc<BloomFilter>>,
    /// Where the filters are, for reloading them into the cache.
    filter_handle: Option<BlockHandle>,
    prefix_filter_handle: Option<BlockHandle>,
    cache_meta_blocks: bool,
    /// The block-cache charges for the pinned index and filters
    /// (`charge_pinned_index_and_filter`), released when the table is dropped.
    charged_pins: Vec<PinnedCharge<dyn std::any::Any + Send + Sync>>,
    prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    range_tombstones: Vec<RangeTombstone>,
    properties: TableProperties,
    decompressor: Decompressor,
    has_dictionary: bool,
    cache: Option<Arc<BlockCache>>,
    file_id: u64,
    verify_checksums: bool,
    global_seqno: Option<SeqNo>,
}

impl Table {
    /// The open file the table reads. It keeps the bytes readable after the file is deleted
    /// (POSIX), which is how a read-only view copies a table a writer has since compacted away.
    pub fn file(&self) -> &Arc<dyn RandomAccessFile> {
        &self.file
    }

    /// Opens the table at `path` on `fs`.
    pub fn open(
        fs: &dyn FileSystem,
        path: &Path,
        options: &TableOpenOptions,
    ) -> Result<Arc<Table>> {
        let file = fs.open_read(path)?;
        Self::open_file(file, options)
    }

    /// Opens a table from an already-open file.
    pub fn open_file(
        file: Arc<dyn RandomAccessFile>,
        options: &TableOpenOptions,
    ) -> Result<Arc<Table>> {
        let path = file.path().to_path_buf();
        let file_size = file.size()?;
        let corrupt = |offset: u64, detail: String| Error::Corruption {
            file: path.clone(),
            offset,
            detail,
        };
        if file_size < FOOTER_SIZE as u64 {
            return Err(corrupt(
                0,
                format!("file is {file_size} bytes, too short for the {FOOTER_SIZE}-byte footer"),
            ));
        }
        let footer_offset = file_size - FOOTER_SIZE as u64;
        let mut footer_bytes = [0u8; FOOTER_SIZE];
        file.read_exact_at(footer_offset, &mut footer_bytes)?;
        let footer = Footer::decode(&footer_bytes).map_err(|e| e.at(&path, footer_offset))?;
        if footer.format_version == 0 {
            return Err(corrupt(
                footer_offset,
                "footer has format version 0, which was never written".into(),
            ));
        }
        if footer.format_version > FORMAT_VERSION {
            return Err(Error::NotSupported(format!(
                "{} has table format version {}, this build reads 1..={FORMAT_VERSION} \
                 (written by a newer Shale?)",
                path.display(),
                footer.format_version
            )));
        }
        let mut table = Table {
            file,
            path: path.clone(),
            file_size,
            footer,
            comparator: Arc::new(InternalKeyComparator::new(options.comparator.clone())),
            meta_handles: Vec::new(),
            index: None,
            filter: None,
            prefix_filter: None,
            filter_handle: None,
            prefix_filter_handle: None,
            cache_meta_blocks: false,
            charged_pins: Vec::new(),
            prefix_extractor: None,
            range_tombstones: Vec::new(),
            properties: TableProperties::default(),
            decompressor: Decompressor::new(None).map_err(|e| e.at(&path, 0))?,
            has_dictionary: false,
            cache: options.block_cache.clone(),
            file_id: 0,
            verify_checksums: true,
            global_seqno: None,
        };
        table.load_meta_blocks(options)?;
        if let Some(seqno) = options.global_seqno {
            table.apply_global_seqno(seqno)?;
        }
        table.file_id = table.cache.as_ref().map_or(0, |c| c.new_file_id());
        if table.cache.is_some()
            && (options.cache_index_and_filter_blocks || options.charge_pinned_index_and_filter)
        {
            table.place_meta_blocks(options);
        }
        table.verify_checksums = options.verify_checksums;
        Ok(Arc::new(table))
    }

    /// Reads the metaindex and every meta block, and the index. They are always verified,
    /// whatever the caller chose for data blocks.
    fn load_meta_blocks(&mut self, options: &TableOpenOptions) -> Result<()> {
        let footer = self.footer;
        let metaindex = self.read_block_contents(footer.metaindex, true)?;
        self.meta_handles = self.decode_metaindex(metaindex, footer.metaindex.offset)?;
        if let Some(handle) = self.meta_handle(META_COMPRESSION_DICT) {
            let dictionary = self.read_block_contents(handle, true)?;
            self.decompressor = Decompressor::new(Some(&dictionary))
                .map_err(|e| e.at(&self.path, handle.offset))?;
            self.has_dictionary = true;
        }
        let props_handle = self.meta_handle(META_PROPERTIES).ok_or_else(|| {
            DecodeError::new("metaindex has no shale.properties")
                .at(&self.path, footer.metaindex.offset)
        })?;
        let props = self.read_block_contents(props_handle, true)?;
        self.properties =
            TableProperties::decode(props).map_err(|e| e.at(&self.path, props_handle.offset))?;
        if self.properties.comparator != options.comparator.name() {
            return Err(Error::InvalidArgument(format!(
                "{} was sorted by comparator {:?} but is being opened with {:?}",
                self.path.display(),
                self.properties.comparator,
                options.comparator.name()
            )));
        }
        self.index = Some(Arc::new(self.load_index()?));
        if let Some(handle) = self.meta_handle(META_FILTER) {
            self.filter = self.load_filter(handle)?.map(Arc::new);
            self.filter_handle = self.filter.is_some().then_some(handle);
        }
        if let (Some(handle), Some(extractor)) = (
            self.meta_handle(META_PREFIX_FILTER),
            options.prefix_extractor.as_ref(),
        ) {
            if self.properties.prefix_extractor.as_deref() == Some(extractor.name()) {
                self.prefix_filter = self.load_filter(handle)?.map(Arc::new);
                self.prefix_filter_handle = self.prefix_filter.is_some().then_some(handle);
                self.prefix_extractor = Some(extractor.clone());
            }
        }
        if let Some(handle) = self.meta_handle(META_RANGE_DEL) {
            let contents = self.read_block_contents(handle, true)?;
            self.range_tombstones = self
                .decode_range_tombstones(contents)
                .map_err(|e| e.at(&self.path, handle.offset))?;
        }
        Ok(())
    }

    /// Checks that a global seqno may replace the table's stored seqnos (an external table,
    /// every entry at seqno 0) and applies it to the range tombstones; point entries get it
    /// as they are read.
    fn apply_global_seqno(&mut self, seqno: SeqNo) -> Result<()> {
        if seqno > crate::key::MAX_SEQNO {
            return Err(Error::InvalidArgument(format!(
                "global seqno {seqno} of {} exceeds 56 bits",
                self.path.display()
            )));
        }
        if !self.properties.external || self.properties.largest_seqno != 0 {
            return Err(Error::InvalidArgument(format!(
                "{} is given global seqno {seqno} but is not an external table with only \
                 seqno 0 entries (shale.external = {}, largest seqno {})",
                self.path.display(),
                u8::from(self.properties.external),
                self.properties.largest_seqno
            )));
        }
        for tombstone in &mut self.range_tombstones {
            tombstone.seqno = seqno;
        }
        self.global_seqno = Some(seqno);
        Ok(())
    }

    /// The global seqno the table was opened with, if any.
    pub fn global_seqno(&self) -> Option<SeqNo> {
        self.global_seqno
    }

    fn decode_metaindex(
        &self,
        contents: Vec<u8>,
        offset: u64,
    ) -> Result<Vec<(String, BlockHandle)>> {
        let block = Arc::new(Block::decode(contents).map_err(|e| e.at(&self.path, offset))?);
        let mut iter = block.iter(Arc::new(BytewiseComparator));
        let mut handles = Vec::new();
        iter.seek_to_first();
        while iter.valid() {
            let name = String::from_utf8_lossy(iter.key()).into_owned();
            let handle = BlockHandle::decode_exact(iter.value()).map_err(|e| {
                DecodeError::new(format!("metaindex entry {name}: {e}")).at(&self.path, offset)
            })?;
            handles.push((name, handle));
            iter.next();
        }
        iter.status().map_err(|e| e.at(&self.path, offset))?;
        Ok(handles)
    }

    fn decode_range_tombstones(
        &self,
        contents: Vec<u8>,
    ) -> std::result::Result<Vec<RangeTombstone>, DecodeError> {
        let block = Arc::new(Block::decode(contents)?);
        let mut iter = block.iter(self.comparator.clone());
        let mut out = Vec::new();
        iter.seek_to_first();
        while iter.valid() {
            let key = ParsedInternalKey::parse(iter.key())?;
            if key.kind != ValueKind::RangeDeletion {
                return Err(DecodeError::new(format!(
                    "range deletion block holds a {} entry",
                    key.kind.name()
                )));
            }
            out.push(RangeTombstone {
                start: key.user_key.to_vec(),
                end: iter.value().to_vec(),
                seqno: key.seqno,
            });
            iter.next();
        }
        iter.status()?;
        Ok(out)
    }

    fn meta_handle(&self, name: &str) -> Option<BlockHandle> {
        self.meta_handles
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, h)| *h)
    }

    /// Reads a block and its trailer, checks the checksum (if `verify`) and decompresses it.
    /// A compressed block is read into a per-thread buffer that is reused, so a block-cache
    /// miss allocates only the decompressed contents (no zeroed read buffer per miss).
    pub(crate) fn read_block_contents(&self, handle: BlockHandle, verify: bool) -> Result<Vec<u8>> {
        let size = handle.size as usize;
        READ_BUFFER.with(|cell| {
            let mut reused = cell.try_borrow_mut().ok();
            let mut own = Vec::new();
            let buffer = match reused.as_deref_mut() {
                Some(buffer) if size <= MAX_REUSED_READ_BUFFER => buffer,
                _ => &mut own,
            };
            let (compression, _) = self.read_checked(handle, verify, buffer)?;
            let stored = buffer.get(..size).unwrap_or_default();
            self.contents_of(handle, compression, stored)
        })
    }

    /// The contents of a block stored as `stored` with compression tag `compression`.
    fn contents_of(&self, handle: BlockHandle, compression: u8, stored: &[u8]) -> Result<Vec<u8>> {
        if compression == Compression::None.tag() {
            return Ok(stored.to_vec());
        }
        self.decompressor
            .decompress(compression, stored)
            .map_err(|e| e.at(&self.path, handle.offset))
    }

    /// Turns a stored block into its contents.
    pub(crate) fn decompress(&self, handle: BlockHandle, stored: StoredBlock) -> Result<Vec<u8>> {
        if stored.compression == Compression::None.tag() {
            return Ok(stored.bytes);
        }
        self.decompressor
            .decompress(stored.compression, &stored.bytes)
            .map_err(|e| e.at(&self.path, handle.offset))
    }

    /// Reads a block's stored bytes and trailer, checking the checksum if `verify`.
    pub(crate) fn read_stored_block(
        &self,
        handle: BlockHandle,
        verify: bool,
    ) -> Result<StoredBlock> {
        let mut bytes = Vec::new();
        let (compression, checksum) = self.read_checked(handle, verify, &mut bytes)?;
        bytes.truncate(handle.size as usize);
        Ok(StoredBlock {
            bytes,
            compression,
            checksum,
        })
    }

    /// Reads block `handle` and its trailer into the front of `buffer` (grown as needed, never
    /// shrunk), checks the checksum if `verify`, and returns the compression tag and the stored
    /// checksum. The block is `buffer[..handle.size]`.
    fn read_checked(
        &self,
        handle: BlockHandle,
        verify: bool,
        buffer: &mut Vec<u8>,
    ) -> Result<(u8, u32)> {
        self.check_handle(handle)?;
        let size = handle.size as usize;
        if buffer.len() < size + BLOCK_TRAILER_SIZE {
            buffer.resize(size + BLOCK_TRAILER_SIZE, 0);
        }
        let bytes = &mut buffer[..size + BLOCK_TRAILER_SIZE];
        self.file.read_exact_at(handle.offset, bytes)?;
        self.check_block(handle, verify, bytes)
    }

    /// Checks that block `handle` and its trailer lie in the data area (before the footer) and
    /// that the block is not above the size limit; returns where the data area ends.
    fn check_handle(&self, handle: BlockHandle) -> Result<u64> {
        let data_end = self.file_size - FOOTER_SIZE as u64;
        if handle.size > MAX_BLOCK_SIZE as u64 || handle.end_with_trailer() > data_end {
            return Err(Error::Corruption {
                file: self.path.clone(),
                offset: handle.offset,
                detail: format!(
                    "block handle (offset {}, size {}) runs past the data area ({data_end} bytes)",
                    handle.offset, handle.size
                ),
            });
        }
        Ok(data_end)
    }

    /// Reads the trailer of block `handle` from `bytes` (the stored block and its trailer, as
    /// read from the file), checks the checksum if `verify`, and returns the compression tag
    /// and the stored checksum.
    fn check_block(&self, handle: BlockHandle, verify: bool, bytes: &[u8]) -> Result<(u8, u32)> {
        let size = handle.size as usize;
        let Some(&[compression, c0, c1, c2, c3]) = bytes.get(size..size + BLOCK_TRAILER_SIZE)
        else {
            return Err(Error::Corruption {
                file: self.path.clone(),
                offset: handle.offset,
                detail: format!(
                    "block of {size} bytes read as {} bytes, without its trailer",
                    bytes.len()
                ),
            });
        };
        let checksum = u32::from_le_bytes([c0, c1, c2, c3]);
        if verify {
            let covered = bytes.get(..=size).unwrap_or_default();
            let actual = checksum::block_checksum(self.footer.checksum_type, covered);
            if checksum != actual {
                return Err(Error::Corruption {
                    file: self.path.clone(),
                    offset: handle.offset,
                    detail: format!(
                        "block checksum mismatch: stored {checksum:#010x}, computed {actual:#010x} \
                         ({}, block of {size} bytes)",
                        self.footer.checksum_type.name()
                    ),
                });
            }
        }
        if compression == Compression::ZstdDict.tag() && !self.has_dictionary {
            return Err(Error::Corruption {
                file: self.path.clone(),
                offset: handle.offset,
                detail: "block compressed with a dictionary but the file has none".into(),
            });
        }
        Ok((compression, checksum))
    }

    /// Reads and decodes the index block in the encoding of the file's format version.
    fn load_index(&self) -> Result<Index> {
        let contents = self.read_block_contents(self.footer.index, true)?;
        self.decode_index(&contents)
    }

    /// Decodes the contents of the index block, as the file's format version encodes it.
    pub(crate) fn decode_index(&self, contents: &[u8]) -> Result<Index> {
        let handle = self.footer.index;
        let index = if self.footer.format_version >= 2 {
            let region = DataRegion {
                num_data_blocks: self.properties.num_data_blocks,
                data_size: self.properties.data_size,
            };
            index_block::decode_v2(contents, self.comparator.clone(), region)
        } else {
            Block::decode(contents.to_vec())
                .and_then(|b| Index::decode_v1(b, self.comparator.clone()))
        };
        index.map_err(|e| e.at(&self.path, handle.offset))
    }

    fn load_filter(&self, handle: BlockHandle) -> Result<Option<BloomFilter>> {
        let contents = self.read_block_contents(handle, true)?;
        BloomFilter::decode(contents).map_err(|e| e.at(&self.path, handle.offset))
    }

    /// Decides where the index and filters live: pinned with their memory charged to the
    /// block cache (`charge_pinned_index_and_filter`), else handed to the cache at high
    /// priority (`cache_index_and_filter_blocks`; reloaded and checked again when evicted and
    /// needed), else pinned uncharged (only without `cache_index_and_filter_blocks`).
    ///
    /// The budget is strict (docs/reliability.md, "Claims and their proofs"): with
    /// `cache_index_and_filter_blocks`, one the cache can neither charge nor hold (larger than
    /// a shard's share, or than a shard) is not kept by the table outside the budget; it goes
    /// into the cache, which demotes or refuses it, and is then read again when needed (a
    /// cache too small for its tables' filters costs reads, visible as cache misses, not
    /// memory). Uncharged pins count in [`Self::pinned_memory`].
    ///
    /// A cache of 0 bytes is no block cache (`RocksDB`'s `no_block_cache`): the index and
    /// filters stay pinned, as without a cache, rather than being read again on every lookup.
    fn place_meta_blocks(&mut self, options: &TableOpenOptions) {
        let Some(cache) = self.cache.clone().filter(|cache| cache.capacity() > 0) else {
            return;
        };
        let key = |offset| CacheKey {
            file_id: self.file_id,
            offset,
        };
        let mut pins = Vec::new();
        let mut charge = |offset, size| {
            let charged = options.charge_pinned_index_and_filter
                && cache
                    .charge_pinned(key(offset), size)
                    .map(|charge| pins.push(charge))
                    .is_some();
            // Not charged: into the cache when asked, whatever its size (the strict budget).
            !charged && options.cache_index_and_filter_blocks
        };
        if let Some(size) = self.index.as_ref().map(|index| index.memory_usage()) {
            if charge(self.footer.index.offset, size) {
                if let Some(index) = self.index.take() {
                    cache.insert(key(self.footer.index.offset), index, size, Priority::High);
                }
            }
        }
        for (slot, handle) in [
            (&mut self.filter, self.filter_handle),
            (&mut self.prefix_filter, self.prefix_filter_handle),
        ] {
            let (Some(size), Some(handle)) = (slot.as_ref().map(|f| f.size_bytes()), handle) else {
                continue;
            };
            if charge(handle.offset, size) {
                if let Some(filter) = slot.take() {
                    cache.insert(key(handle.offset), filter, size, Priority::High);
                }
            }
        }
        self.charged_pins = pins;
        self.cache_meta_blocks = options.cache_index_and_filter_blocks;
    }

    /// A value kept in the block cache under `offset`, loaded (and cached) on a miss. The
    /// charge is reserved before the load (the strict budget); when it cannot be, the value is
    /// used without being cached.
    fn cached<T: std::any::Any + Send + Sync>(
        &self,
        offset: u64,
        reserve: usize,
        priority: Priority,
        fill: bool,
        load: impl FnOnce() -> Result<T>,
        charge: impl FnOnce(&T) -> usize,
    ) -> Result<Arc<T>> {
        let Some(cache) = &self.cache else {
            return load().map(Arc::new);
        };
        let key = CacheKey {
            file_id: self.file_id,
            offset,
        };
        if let Some(value) = cache.get(&key).and_then(|v| v.downcast::<T>().ok()) {
            return Ok(value);
        }
        let reservation = if fill {
            cache.reserve(key, reserve)
        } else {
            None
        };
        let value = Arc::new(load()?);
        if let Some(reservation) = reservation {
            let charge = charge(&value);
            reservation.fill(value.clone(), charge, priority);
        }
        Ok(value)
    }

    /// A data block, from the cache or the file. Its stored size is charged to the cache
    /// before the read; the real (decompressed) size when it is inserted. A miss is served
    /// from `readahead` when it has the block or decides to read ahead now.
    pub(crate) fn data_block(
        &self,
        handle: BlockHandle,
        fill_cache: bool,
        readahead: Option<&mut Readahead>,
    ) -> Result<Arc<Block>> {
        self.cached(
            handle.offset,
            handle.size as usize,
            Priority::Low,
            fill_cache,
            || {
                let contents = match readahead {
                    Some(readahead) => self.read_block_ahead(handle, readahead)?,
                    None => self.read_block_contents(handle, self.verify_checksums)?,
                };
                Block::decode(contents).map_err(|e| e.at(&self.path, handle.offset))
            },
            Block::size,
        )
    }

    /// [`Self::read_block_contents`] of a data block through an iterator's readahead: the
    /// block's bytes come from its buffer when it holds them or reads ahead now, and are
    /// checked and decompressed there, with no copy into a read buffer.
    fn read_block_ahead(&self, handle: BlockHandle, readahead: &mut Readahead) -> Result<Vec<u8>> {
        let data_end = self.check_handle(handle)?;
        let Some(bytes) = readahead.block_bytes(&*self.file, handle, data_end)? else {
            return self.read_block_contents(handle, self.verify_checksums);
        };
        let (compression, _) = self.check_block(handle, self.verify_checksums, bytes)?;
        let stored = bytes.get(..handle.size as usize).unwrap_or_default();
        self.contents_of(handle, compression, stored)
    }

    /// The decoded index: pinned, or from the cache (reloaded on a miss).
    pub(crate) fn index(&self) -> Result<Arc<Index>> {
        if let Some(index) = &self.index {
            return Ok(index.clone());
        }
        let index_size = self.footer.index.size as usize;
        self.cached(
            self.footer.index.offset,
            index_size,
            Priority::High,
            true,
            || self.load_index(),
            Index::memory_usage,
        )
    }

    /// A filter: pinned, or from the cache. A filter that fails to reload is skipped (it can
    /// only make reads slower, never wrong), and the data read reports any damage.
    fn filter_for(
        &self,
        pinned: Option<&Arc<BloomFilter>>,
        handle: Option<BlockHandle>,
    ) -> Option<Arc<BloomFilter>> {
        if let Some(filter) = pinned {
            return Some(filter.clone());
        }
        let handle = handle.filter(|_| self.cache_meta_blocks)?;
        self.cached(
            handle.offset,
            handle.size as usize,
            Priority::High,
            true,
            || {
                self.load_filter(handle)?.ok_or_else(|| {
                    DecodeError::new("filter kind vanished").at(&self.path, handle.offset)
                })
            },
            BloomFilter::size_bytes,
        )
        .ok()
    }

    /// Whether the bloom filter allows `user_key` (true when there is no filter).
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        // A pinned filter is probed in place, without a reference count's round trip.
        if let Some(filter) = &self.filter {
            return filter.may_contain(user_key);
        }
        self.filter_for(None, self.filter_handle)
            .is_none_or(|f| f.may_contain(user_key))
    }

    /// Whether the prefix filter allows keys starting with `prefix` (true when there is no
    /// usable prefix filter or `prefix` is not in the extractor's domain).
    pub fn may_contain_prefix(&self, key_or_prefix: &[u8]) -> bool {
        let filter = self.filter_for(self.prefix_filter.as_ref(), self.prefix_filter_handle);
        match (filter, &self.prefix_extractor) {
            (Some(filter), Some(extractor)) => extractor
                .prefix(key_or_prefix)
                .is_none_or(|p| filter.may_contain(p)),
            _ => true,
        }
    }

    /// The newest point entry for `user_key` with seqno `<= seqno`, if this table has one.
    /// Range tombstones are not applied here; see [`Table::range_tombstones`].
    pub fn get(&self, user_key: &[u8], seqno: SeqNo) -> Result<Option<LookupResult>> {
        if !self.may_contain(user_key) {
            return Ok(None);
        }
        // An external table holds one entry per user key, all read at the global seqno.
        if self.global_seqno.is_some_and(|global| global > seqno) {
            return Ok(None);
        }
        let seek_seqno = if self.global_seqno.is_some() {
            0
        } else {
            seqno
        };
        // The seek key on the stack when it fits: a lookup allocates only its result.
        let mut stack = [0u8; STACK_SEEK_KEY_BYTES];
        let heap;
        let target: &[u8] =
            if let Some(buffer) = stack.get_mut(..user_key.len() + crate::key::TRAILER_SIZE) {
                crate::key::encode_seek_key(buffer, user_key, seek_seqno);
                buffer
            } else {
                heap = InternalKey::for_seek(user_key, seek_seqno);
                heap.encoded()
            };
        let mut key = FOUND_KEY.take();
        let found = self.lookup(user_key, target, &mut key);
        if key.capacity() <= MAX_REUSED_FOUND_KEY {
            FOUND_KEY.set(key);
        }
        found
    }

    /// [`Table::get`] after the filter: the first entry `>= target` (the seek key of
    /// `user_key`), if it holds `user_key`. `key` is scratch for the keys the block seek
    /// rebuilds.
    fn lookup(
        &self,
        user_key: &[u8],
        target: &[u8],
        key: &mut Vec<u8>,
    ) -> Result<Option<LookupResult>> {
        // A pinned index is used in place, without a reference count's round trip.
        let cached;
        let index: &Index = if let Some(index) = &self.index {
            index
        } else {
            cached = self.index()?;
            &cached
        };
        let mut position = index.seek(target);
        // The first entry >= target is in block `position`, or first in the next one when
        // every key of that block is below the target but its separator is not.
        while position < index.len() {
            let handle = index.handle(position);
            let block = self.data_block(handle, true, None)?;
            let found = block
                .seek_entry(&*self.comparator, target, key)
                .map_err(|e| e.at(&self.path, handle.offset))?;
            if let Some(value) = found {
                let found =
                    ParsedInternalKey::parse(key).map_err(|e| e.at(&self.path, handle.offset))?;
                if !self.comparator.user_keys_equal(found.user_key, user_key) {
                    return Ok(None);
                }
                return Ok(Some(LookupResult {
                    kind: found.kind,
                    seqno: self.global_seqno.unwrap_or(found.seqno),
                    value: block.contents().get(value).unwrap_or_default().to_vec(),
                }));
            }
            position += 1;
        }
        Ok(None)
    }

    /// About how many bytes of data blocks hold keys below `user_key`: the offset of the
    /// data block where `user_key` would be (the data size when it is past the last key). From
    /// the index alone, like `RocksDB`'s `ApproximateOffsetOf`; used to split work by key.
    pub fn approximate_offset_of(&self, user_key: &[u8]) -> Result<u64> {
        let index = self.index()?;
        let target = InternalKey::for_seek(user_key, crate::key::MAX_SEQNO);
        let position = index.seek(target.encoded());
        Ok(if position < index.len() {
            index.handle(position).offset
        } else {
            self.properties.data_size
        })
    }

    /// The user keys of up to `count` index separators spread evenly over the table, in
    /// order: keys that split the table's data into about equal parts.
    pub fn sample_index_keys(&self, count: usize) -> Result<Vec<Vec<u8>>> {
        let index = self.index()?;
        let len = index.len();
        if len == 0 || count == 0 {
            return Ok(Vec::new());
        }
        let step = len.div_ceil(count);
        (0..len)
            .step_by(step)
            .map(|i| {
                ParsedInternalKey::parse(index.key(i))
                    .map(|k| k.user_key.to_vec())
                    .map_err(|e| e.at(&self.path, self.footer.index.offset))
            })
            .collect()
    }

    /// The index entries as the file stores them, in order: each data block's separator (a
    /// user key when [`IndexEntry::separator_is_user_key`], else an internal key) and handle.
    pub fn index_entries(&self) -> Result<Vec<IndexEntry>> {
        let index = self.index()?;
        Ok((0..index.len())
            .map(|i| IndexEntry {
                separator: index.stored_separator(i).to_vec(),
                separator_is_user_key: index.user_key_separators(),
                handle: index.handle(i),
            })
            .collect())
    }

    /// Bytes of memory the open table pins outside the block cache and its budget: the decoded
    /// index and filters (unless charged to the cache, `charge_pinned_index_and_filter`) and
    /// the range tombstones.
    pub fn pinned_memory(&self) -> usize {
        let filters = [&self.filter, &self.prefix_filter]
            .iter()
            .filter_map(|f| f.as_ref().map(|f| f.size_bytes()))
            .sum::<usize>();
        let tombstones = self
            .range_tombstones
            .iter()
            .map(|t| t.start.len() + t.end.len() + std::mem::size_of::<RangeTombstone>())
            .sum::<usize>();
        let charged = self
            .charged_pins
            .iter()
            .map(PinnedCharge::charge)
            .sum::<usize>();
        (self.index.as_ref().map_or(0, |i| i.memory_usage()) + filters + tombstones)
            .saturating_sub(charged)
    }

    /// An iterator over the table's point entries.
    pub fn iter(self: &Arc<Self>, options: ReadOptions) -> TableIter {
        TableIter::new(self.clone(), options)
    }

    /// The properties block.
    pub fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// The range tombstones, sorted by start key.
    pub fn range_tombstones(&self) -> &[RangeTombstone] {
        &self.range_tombstones
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's size in bytes.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The decoded footer.
    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    /// The checksum type of the file's blocks.
    pub fn checksum_type(&self) -> ChecksumType {
        self.footer.checksum_type
    }

    /// Meta block names and handles, as listed in the metaindex.
    pub fn meta_handles(&self) -> &[(String, BlockHandle)] {
        &self.meta_handles
    }

    pub(crate) fn internal_comparator(&self) -> &Arc<InternalKeyComparator> {
        &self.comparator
    }

    /// Shape of the full-key and prefix bloom filters, when present.
    pub fn filter_stats(&self) -> (Option<FilterStats>, Option<FilterStats>) {
        let stats = |f: &BloomFilter| FilterStats {
            num_bits: u64::from(f.num_bits()),
            num_probes: u32::from(f.num_probes()),
            size_bytes: f.size_bytes() as u64,
        };
        (
            self.filter_for(self.filter.as_ref(), self.filter_handle)
                .as_deref()
                .map(stats),
            self.filter_for(self.prefix_filter.as_ref(), self.prefix_filter_handle)
                .as_deref()
                .map(stats),
        )
    }
}
