//! Shale's sorted table (SST): one sorted, immutable file of internal keys and values.
//!
//! The format is specified in docs/format/sst.md; [`format`] holds its constants.
//! A [`TableWriter`] builds a file front to back over a [`shale_fs::FileSystem`]; a
//! [`Table`] opens one for point lookups ([`Table::get`]), iteration ([`TableIter`]) and
//! verification ([`Table::verify`]). Blocks are read through a shared [`BlockCache`].
//!
//! Entries are internal keys (a user key followed by an 8-byte trailer holding a sequence
//! number and a [`ValueKind`]) in ascending order; the engine (shale-engine) builds LSM levels
//! of these files. Used alone, a table is a compact, checksummed, compressed sorted file:
//!
//! ```
//! use std::path::Path;
//! use shale_fs::{FileSystem, MemFs};
//! use shale_sst::{Compression, ReadOptions, Table, TableOpenOptions, TableWriter, ValueKind, WriterOptions};
//!
//! # fn main() -> shale_sst::Result<()> {
//! let fs = MemFs::new(); // or shale_fs::OsFs for a real directory
//! let options = WriterOptions { compression: Compression::Lz4, ..WriterOptions::default() };
//! let mut writer = TableWriter::new(fs.create(Path::new("/t.sst"))?, "/t.sst".into(), options)?;
//! for i in 0..1000u32 {
//!     writer.add_entry(format!("key{i:04}").as_bytes(), 1, ValueKind::Value, b"value")?;
//! }
//! let (file_size, properties) = writer.finish()?;
//! assert_eq!(properties.num_entries, 1000);
//!
//! let table = Table::open(&fs, Path::new("/t.sst"), &TableOpenOptions::default())?;
//! let found = table.get(b"key0042", 1)?.expect("present"); // reads at sequence number 1
//! assert_eq!(found.value, b"value");
//! let mut iter = table.iter(ReadOptions::default());
//! iter.seek(shale_sst::InternalKey::for_seek(b"key0998", 1).encoded());
//! assert_eq!(iter.user_key(), b"key0998");
//! table.verify()?; // every block's checksum
//! # let _ = file_size;
//! # Ok(())
//! # }
//! ```

mod block;
mod block_builder;
mod buffer_pool;
mod cache;
mod checksum;
mod coding;
mod collector;
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
pub use collector::{TableFileContext, TablePropertiesCollector, TablePropertiesCollectorFactory};
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
