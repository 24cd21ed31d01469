//! Shale's sorted table (SST): one sorted, immutable file of internal keys and values.
//!
//! The format is specified in docs/format/sst.md; [`format`] holds its constants.
//! A [`TableWriter`] builds a file front to back over a [`shale_fs::FileSystem`]; a
//! [`Table`] opens one for point lookups ([`Table::get`]), iteration ([`TableIter`]) and
//! verification ([`Table::verify`]). Blocks are read through a shared [`BlockCache`].

mod block;
mod block_builder;
mod buffer_pool;
mod cache;
mod checksum;
mod coding;
mod comparator;
mod compression;
mod error;
mod filter;
pub mod format;
mod index;
mod index_block;
mod iter;
mod key;
mod layout;
mod prefetch;
mod properties;
mod readahead;
mod reader;
mod writer;

#[cfg(feature = "testing")]
pub mod testing;

pub use cache::{BlockCache, CacheKey, CacheStats, PinnedCharge, Priority, ShardedLru};
pub use comparator::{BytewiseComparator, Comparator};
pub use compression::{decompress_value, train_zstd_dictionary, Compression, ValueCompressor};
pub use error::{DecodeError, Error, Result};
pub use filter::{FixedPrefix, PrefixExtractor};
pub use format::{BlockHandle, ChecksumType, Footer, FORMAT_VERSION};
pub use iter::TableIter;
pub use key::{
    append_internal_key, InternalKey, InternalKeyComparator, ParsedInternalKey, SeqNo, ValueKind,
    MAX_SEQNO,
};
pub use layout::{describe_internal_key, printable, BlockInfo, BlockKind, TableLayout};
pub use prefetch::prefetch_read;
pub use properties::TableProperties;
pub use readahead::{
    DEFAULT_MAX_READAHEAD_SIZE, INITIAL_READAHEAD_SIZE, SEQUENTIAL_LOADS_BEFORE_READAHEAD,
};
pub use reader::{
    FilterStats, IndexEntry, LookupResult, RangeTombstone, ReadOptions, Table, TableOpenOptions,
};
pub use writer::{TableWriter, WriterOptions};
