//! A checked walk over every block of a table: the layout that tools print, the golden test
//! compares with docs/format/sst.md, and [`Table::verify`] checks.
//!
//! The walk verifies every checksum whatever the table was opened with, decodes every block,
//! and checks the structural invariants of docs/format/sst.md: blocks tile the file with no
//! gap or overlap, point keys strictly increase across data blocks, each index key is `>=`
//! its block's last key and `<` the next block's first key, and the entry counts match the
//! properties.

use std::cmp::Ordering;
use std::fmt::{self, Write as _};
use std::sync::Arc;

use crate::block::Block;
use crate::comparator::{BytewiseComparator, Comparator};
use crate::compression::Compression;
use crate::error::{DecodeError, Error, Result};
use crate::format::{BlockHandle, Footer, FOOTER_SIZE};
use crate::key::{ParsedInternalKey, ValueKind};
use crate::properties::TableProperties;
use crate::reader::Table;

/// What a block holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// Sorted entries.
    Data,
    /// The zstd dictionary.
    CompressionDict,
    /// Bloom filter over user keys.
    Filter,
    /// Bloom filter over prefixes.
    PrefixFilter,
    /// Range tombstones.
    RangeDeletion,
    /// Table properties.
    Properties,
    /// Separators and data block handles.
    Index,
    /// Meta block names and handles.
    Metaindex,
}

impl BlockKind {
    /// The name tools print.
    pub fn name(self) -> &'static str {
        match self {
            Self::Data => "data",
            Self::CompressionDict => "compression-dict",
            Self::Filter => "filter",
            Self::PrefixFilter => "prefix-filter",
            Self::RangeDeletion => "range-del",
            Self::Properties => "properties",
            Self::Index => "index",
            Self::Metaindex => "metaindex",
        }
    }

    fn from_meta_name(name: &str) -> Option<Self> {
        match name {
            crate::format::META_COMPRESSION_DICT => Some(Self::CompressionDict),
            crate::format::META_FILTER => Some(Self::Filter),
            crate::format::META_PREFIX_FILTER => Some(Self::PrefixFilter),
            crate::format::META_RANGE_DEL => Some(Self::RangeDeletion),
            crate::format::META_PROPERTIES => Some(Self::Properties),
            _ => None,
        }
    }
}

/// One block as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockInfo {
    /// What the block holds.
    pub kind: BlockKind,
    /// Where it is (size excludes the trailer).
    pub handle: BlockHandle,
    /// The compression tag in its trailer.
    pub compression: u8,
    /// The checksum in its trailer.
    pub checksum: u32,
    /// Size after decompression.
    pub uncompressed_size: u64,
    /// Entries (for block-format blocks; 0 for filters and dictionaries).
    pub entries: u64,
    /// First key (data, index, range-del, properties and metaindex blocks).
    pub first_key: Option<Vec<u8>>,
    /// Last key.
    pub last_key: Option<Vec<u8>>,
}

/// Every block of a table, in file order, and the footer.
#[derive(Debug, Clone)]
pub struct TableLayout {
    /// File size in bytes.
    pub file_size: u64,
    /// The footer.
    pub footer: Footer,
    /// The blocks in file order.
    pub blocks: Vec<BlockInfo>,
    /// The index stores its separators as user keys (format version 2), so the index block's
    /// first and last keys are user keys.
    pub index_user_keys: bool,
}

impl Table {
    /// Reads and checks every block of the file; see the module docs for what is checked.
    pub fn layout(self: &Arc<Self>) -> Result<TableLayout> {
        let icmp: Arc<dyn Comparator> = self.internal_comparator().clone();
        let bytewise: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
        let mut blocks = self.walk_data_blocks(&icmp)?;
        for (name, handle) in self.meta_handles() {
            let Some(kind) = BlockKind::from_meta_name(name) else {
                continue;
            };
            let cmp = if kind == BlockKind::RangeDeletion {
                &icmp
            } else {
                &bytewise
            };
            blocks.push(self.read_block_info(kind, *handle, cmp)?.0);
        }
        let (index_info, index_user_keys) = self.read_index_info(&icmp)?;
        blocks.push(index_info);
        blocks.push(
            self.read_block_info(BlockKind::Metaindex, self.footer().metaindex, &bytewise)?
                .0,
        );
        blocks.sort_by_key(|b| b.handle.offset);
        let mut expected = 0;
        for block in &blocks {
            if block.handle.offset != expected {
                return Err(self.corrupt(
                    block.handle.offset,
                    format!(
                        "{} block starts at {} but the previous block ends at {expected}",
                        block.kind.name(),
                        block.handle.offset
                    ),
                ));
            }
            expected = block.handle.end_with_trailer();
        }
        if expected + FOOTER_SIZE as u64 != self.file_size() {
            return Err(self.corrupt(
                expected,
                "bytes between the last block and the footer".into(),
            ));
        }
        Ok(TableLayout {
            file_size: self.file_size(),
            footer: *self.footer(),
            blocks,
            index_user_keys,
        })
    }

    /// Reads the index block in its version's encoding; also returns whether its separators
    /// are user keys. A version-2 block is decoded (and so checked) again here, and its first
    /// and last keys are the separators as stored.
    fn read_index_info(&self, icmp: &Arc<dyn Comparator>) -> Result<(BlockInfo, bool)> {
        let handle = self.footer().index;
        if self.footer().format_version < 2 {
            return Ok((
                self.read_block_info(BlockKind::Index, handle, icmp)?.0,
                false,
            ));
        }
        let stored = self.read_stored_block(handle, true)?;
        let (compression, checksum) = (stored.compression, stored.checksum);
        let contents = self.decompress(handle, stored)?;
        let index = self.decode_index(&contents)?;
        let last = index.len().checked_sub(1);
        let info = BlockInfo {
            kind: BlockKind::Index,
            handle,
            compression,
            checksum,
            uncompressed_size: contents.len() as u64,
            entries: index.len() as u64,
            first_key: last.map(|_| index.stored_separator(0).to_vec()),
            last_key: last.map(|i| index.stored_separator(i).to_vec()),
        };
        Ok((info, index.user_key_separators()))
    }

    /// Reads every data block through the index, checking key order within and across blocks,
    /// index separators, entry kinds and the entry counts of the properties.
    fn walk_data_blocks(&self, icmp: &Arc<dyn Comparator>) -> Result<Vec<BlockInfo>> {
        let mut blocks = Vec::new();
        let index = self.index()?;
        let mut previous_key: Option<Vec<u8>> = None;
        let mut previous_separator: Option<Vec<u8>> = None;
        let (mut entries, mut deletions) = (0u64, 0u64);
        // The index was decoded and its order checked at open; here each block is checked
        // against its separators.
        for position in 0..index.len() {
            let separator = index.key(position).to_vec();
            let handle = index.handle(position);
            let (info, block) = self.read_block_info(BlockKind::Data, handle, icmp)?;
            let (Some(first), Some(last), Some(block)) = (&info.first_key, &info.last_key, block)
            else {
                return Err(self.corrupt(handle.offset, "data block has no entries".into()));
            };
            let out_of_order = |earlier: &Option<Vec<u8>>| {
                earlier
                    .as_ref()
                    .is_some_and(|e| icmp.compare(e, first) != Ordering::Less)
            };
            if out_of_order(&previous_key) {
                return Err(
                    self.corrupt(handle.offset, "keys out of order across data blocks".into())
                );
            }
            if out_of_order(&previous_separator) {
                return Err(self.corrupt(
                    handle.offset,
                    "previous index key is not below this block".into(),
                ));
            }
            if icmp.compare(last, &separator) == Ordering::Greater {
                return Err(self.corrupt(
                    handle.offset,
                    "index key is below the block's last key".into(),
                ));
            }
            let mut iter = block.iter(icmp.clone());
            iter.seek_to_first();
            while iter.valid() {
                let key = ParsedInternalKey::parse(iter.key())
                    .map_err(|e| e.at(self.path(), handle.offset))?;
                match key.kind {
                    ValueKind::Deletion => deletions += 1,
                    ValueKind::Value | ValueKind::BlobIndex => {}
                    ValueKind::RangeDeletion => {
                        return Err(
                            self.corrupt(handle.offset, "range deletion in a data block".into())
                        )
                    }
                }
                entries += 1;
                iter.next();
            }
            previous_key.clone_from(&info.last_key);
            previous_separator = Some(separator);
            blocks.push(info);
        }
        let props = self.properties();
        if entries != props.num_entries || deletions != props.num_deletions {
            return Err(self.corrupt(
                0,
                format!(
                    "data blocks hold {entries} entries ({deletions} deletions) but the properties \
                     say {} ({})",
                    props.num_entries, props.num_deletions
                ),
            ));
        }
        Ok(blocks)
    }

    /// Checks every checksum and structural invariant of the file (see the module docs).
    pub fn verify(self: &Arc<Self>) -> Result<TableLayout> {
        self.layout()
    }

    fn corrupt(&self, offset: u64, detail: String) -> Error {
        DecodeError::new(detail).at(self.path(), offset)
    }

    fn read_block_info(
        &self,
        kind: BlockKind,
        handle: BlockHandle,
        cmp: &Arc<dyn Comparator>,
    ) -> Result<(BlockInfo, Option<Arc<Block>>)> {
        let stored = self.read_stored_block(handle, true)?;
        let (compression, checksum) = (stored.compression, stored.checksum);
        let contents = self.decompress(handle, stored)?;
        let mut info = BlockInfo {
            kind,
            handle,
            compression,
            checksum,
            uncompressed_size: contents.len() as u64,
            entries: 0,
            first_key: None,
            last_key: None,
        };
        if matches!(
            kind,
            BlockKind::Filter | BlockKind::PrefixFilter | BlockKind::CompressionDict
        ) {
            return Ok((info, None));
        }
        let block =
            Arc::new(Block::decode(contents).map_err(|e| e.at(self.path(), handle.offset))?);
        let mut iter = block.iter(cmp.clone());
        iter.seek_to_first();
        let mut last: Option<Vec<u8>> = None;
        while iter.valid() {
            if let Some(prev) = &last {
                if cmp.compare(prev, iter.key()) != Ordering::Less {
                    return Err(self.corrupt(
                        handle.offset,
                        format!("{} block keys out of order", kind.name()),
                    ));
                }
            }
            if info.first_key.is_none() {
                info.first_key = Some(iter.key().to_vec());
            }
            last = Some(iter.key().to_vec());
            info.entries += 1;
            iter.next();
        }
        iter.status()
            .map_err(|e| e.at(self.path(), handle.offset))?;
        info.last_key = last;
        Ok((info, Some(block)))
    }
}

impl fmt::Display for TableLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "table: {} bytes, format version {}, checksum {}",
            self.file_size,
            self.footer.format_version,
            self.footer.checksum_type.name()
        )?;
        writeln!(
            f,
            "{:>8} {:>6} {:>6}  {:<16} {:<9} {:<10} {:>7}  keys",
            "offset", "size", "raw", "block", "compress", "checksum", "entries"
        )?;
        for block in &self.blocks {
            let compression =
                Compression::from_tag(block.compression).map_or("?", Compression::name);
            let mut keys = String::new();
            let is_internal = match block.kind {
                BlockKind::Data | BlockKind::RangeDeletion => true,
                BlockKind::Index => !self.index_user_keys,
                _ => false,
            };
            let show = |k: &Vec<u8>| {
                if is_internal {
                    describe_internal_key(k)
                } else {
                    printable(k)
                }
            };
            if let (Some(first), Some(last)) = (&block.first_key, &block.last_key) {
                let _ = write!(keys, "{} .. {}", show(first), show(last));
            }
            let line = format!(
                "{:>8} {:>6} {:>6}  {:<16} {:<9} {:#010x} {:>7}  {}",
                block.handle.offset,
                block.handle.size,
                block.uncompressed_size,
                block.kind.name(),
                compression,
                block.checksum,
                block.entries,
                keys
            );
            writeln!(f, "{}", line.trim_end())?;
        }
        writeln!(
            f,
            "{:>8} {:>6} {:>6}  {:<16} metaindex={}+{} index={}+{} magic=SHALESST{}",
            self.file_size - FOOTER_SIZE as u64,
            FOOTER_SIZE,
            FOOTER_SIZE,
            "footer",
            self.footer.metaindex.offset,
            self.footer.metaindex.size,
            self.footer.index.offset,
            self.footer.index.size,
            if self.index_user_keys {
                " (index separators are user keys)"
            } else {
                ""
            }
        )
    }
}

impl TableProperties {
    /// One `name = value` line per property, in the order they are stored.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let mut line = |name: &str, value: String| {
            let _ = writeln!(out, "{name} = {value}");
        };
        line("shale.comparator", self.comparator.clone());
        line("shale.compression", self.compression.clone());
        line(
            "shale.compression_level",
            self.compression_level.to_string(),
        );
        line("shale.creation_time", self.creation_time.to_string());
        line("shale.data_size", self.data_size.to_string());
        if self.external {
            line("shale.external", "1".to_owned());
        }
        line(
            "shale.filter_bits_per_key",
            self.filter_bits_per_key.to_string(),
        );
        line("shale.filter_size", self.filter_size.to_string());
        line("shale.format_version", self.format_version.to_string());
        line("shale.index_size", self.index_size.to_string());
        line(
            "shale.largest_key",
            describe_internal_key(&self.largest_key),
        );
        line("shale.largest_seqno", self.largest_seqno.to_string());
        line("shale.num_data_blocks", self.num_data_blocks.to_string());
        line("shale.num_deletions", self.num_deletions.to_string());
        line("shale.num_entries", self.num_entries.to_string());
        line(
            "shale.num_range_deletions",
            self.num_range_deletions.to_string(),
        );
        line(
            "shale.oldest_entry_time",
            self.oldest_entry_time.to_string(),
        );
        if let Some(p) = &self.prefix_extractor {
            line("shale.prefix_extractor", p.clone());
        }
        line("shale.raw_key_size", self.raw_key_size.to_string());
        line("shale.raw_value_size", self.raw_value_size.to_string());
        line(
            "shale.smallest_key",
            describe_internal_key(&self.smallest_key),
        );
        line("shale.smallest_seqno", self.smallest_seqno.to_string());
        for (name, value) in &self.user {
            line(&format!("user.{name}"), printable(value));
        }
        out
    }
}

/// Quotes bytes for display: printable ASCII as is, everything else as `\xNN`.
pub fn printable(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for &b in bytes {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push('"');
    out
}

/// Shows an internal key as `"user"@seqno:kind`, or its raw bytes if it does not parse.
pub fn describe_internal_key(key: &[u8]) -> String {
    match ParsedInternalKey::parse(key) {
        Ok(p) => format!("{p:?}"),
        Err(_) if key.is_empty() => "(none)".to_owned(),
        Err(_) => format!("(raw {})", printable(key)),
    }
}
