//! Options: how a database and each keyspace behave, validated at open and persisted in an
//! `OPTIONS-NNNNNN` file (docs/format/options.md) so that a reopen with an incompatible
//! comparator is refused before anything is read.
//!
//! Durability modes mirror `MySQL`'s `innodb_flush_log_at_trx_commit` (see README, "Durability"):
//! [`Durability::Sync`] (=1), [`Durability::Flush`] (=2), [`Durability::Buffered`] (=0).

use std::sync::Arc;
use std::time::Duration;

use shale_fs::{FileSystem, OsFs};
use shale_sst::{
    BytewiseComparator, ChecksumType, Comparator, Compression, PrefixExtractor,
    TablePropertiesCollectorFactory,
};

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::options_file::OptionsFile;
use crate::wal::RecoveryMode;

/// When a write is acknowledged relative to the write-ahead log reaching the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// fdatasync the WAL before acknowledging (like `innodb_flush_log_at_trx_commit=1`).
    /// An acknowledged write survives any crash, the OS's included.
    #[default]
    Sync,
    /// Hand the WAL record to the OS before acknowledging; a background thread syncs about
    /// every `sync_interval` (=2). Survives a process crash; a power cut may lose up to about
    /// one interval of acknowledged writes.
    Flush,
    /// Keep the record in the process's WAL buffer; a background thread writes and syncs about
    /// every `sync_interval` (=0). A process crash or power cut may lose up to about one
    /// interval of acknowledged writes.
    Buffered,
}

impl Durability {
    /// The name used in OPTIONS files and tools.
    pub fn name(self) -> &'static str {
        match self {
            Durability::Sync => "sync",
            Durability::Flush => "flush",
            Durability::Buffered => "buffered",
        }
    }

    /// Parses [`Durability::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "sync" => Some(Durability::Sync),
            "flush" => Some(Durability::Flush),
            "buffered" => Some(Durability::Buffered),
            _ => None,
        }
    }
}

/// Per-write choices.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// Overrides [`Options::durability`] for this write.
    pub durability: Option<Durability>,
}

impl WriteOptions {
    /// A write acknowledged only once it is durable.
    pub fn sync() -> Self {
        WriteOptions {
            durability: Some(Durability::Sync),
        }
    }
}

/// Options of one keyspace (column family).
#[derive(Debug, Clone)]
pub struct KeyspaceOptions {
    /// Bytes a memtable may hold before it is frozen and flushed: what its entries use in
    /// memory (skiplist nodes with their padding, about 28 bytes beyond key and value for
    /// small entries), not the arena's free room, of which each writing thread's shard holds
    /// at most a small chunk more (docs/architecture.md, "Memory").
    pub write_buffer_size: usize,
    /// Memtables (active plus frozen) before writes wait for a flush.
    pub max_write_buffer_number: usize,
    /// Share of `write_buffer_size` each memtable spends on a bloom filter over its user keys,
    /// so a point lookup of a key a memtable does not hold skips searching it (`RocksDB`'s
    /// `memtable_prefix_bloom_size_ratio` with `memtable_whole_key_filtering`). The filter's
    /// bytes count toward `write_buffer_size`. 0 turns it off; at most 0.25. Default 0.01:
    /// 671 KB of a 64 MiB memtable, about 11 bits a key (1% false positives) for 16-byte keys
    /// and 100-byte values, fewer bits for smaller entries.
    pub memtable_bloom_size_ratio: f64,
    /// Compression of table data blocks at every level when `compression_per_level` is empty.
    pub compression: Compression,
    /// Compression by level (L0 first); a shorter list repeats its last entry for the deeper
    /// levels. Empty: `compression` everywhere. Default: none at L0 and L1, lz4 below (what
    /// `MyRocks` operators run: the top levels are rewritten soon, so compressing them costs
    /// CPU for little space).
    pub compression_per_level: Vec<Compression>,
    /// Compression of tables written to the bottommost level (the last level, or the deepest
    /// level holding data), overriding the per-level choice; `None` keeps it. Default zstd:
    /// about 90% of the data lives there and is rewritten least often.
    pub bottommost_compression: Option<Compression>,
    /// Codec level (the zstd level for zstd); `i32::MIN` picks the codec's default.
    pub compression_level: i32,
    /// Size of the zstd dictionary each table written with zstd to the bottommost level trains
    /// from its first data blocks and stores (docs/compaction.md, "Dictionary compression");
    /// 0 trains none. Default 16 KiB: the bottom holds most of the data and is rewritten least,
    /// so training there costs little per byte kept, and a 16 KiB dictionary is 0.025% of a
    /// 64 MiB table. At most 4 MiB.
    pub zstd_max_dict_bytes: usize,
    /// Uncompressed data-block bytes a table holds back as training samples; 0 (the default)
    /// means 100 × `zstd_max_dict_bytes`. At most 256 MiB.
    pub zstd_max_train_bytes: usize,
    /// Target uncompressed size of a data block.
    pub block_size: usize,
    /// Bloom filter bits per key; 0 disables the filter.
    pub bloom_bits_per_key: u32,
    /// When set, tables carry a prefix filter and prefix iteration can skip tables.
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    /// Number of L0 files that triggers an L0 -> base level compaction (docs/compaction.md).
    pub level0_compaction_trigger: usize,
    /// Number of L0 files at which each write group is delayed by a millisecond (a counted
    /// slowdown stall) so compaction can catch up.
    pub level0_slowdown_writes_trigger: usize,
    /// Number of L0 files at which writes wait for a compaction (a counted stop stall).
    pub level0_stop_writes_trigger: usize,
    /// Estimated compaction backlog in bytes at which each write group is delayed by a
    /// millisecond (docs/compaction.md); 0 disables.
    pub soft_pending_compaction_bytes_limit: u64,
    /// Estimated compaction backlog in bytes at which writes wait for compactions; 0 disables.
    pub hard_pending_compaction_bytes_limit: u64,
    /// Target size of the base level (where L0 is compacted to); deeper levels grow by
    /// `max_bytes_for_level_multiplier`. Levels are sized from the bottom up (dynamic level
    /// bytes), see docs/compaction.md.
    pub max_bytes_for_level_base: u64,
    /// Size ratio between adjacent levels.
    pub max_bytes_for_level_multiplier: u32,
    /// Target size of a table written by compaction.
    pub target_file_size: u64,
    /// Checksum of table blocks.
    pub checksum: ChecksumType,
    /// A file holding at least this percentage of deletions (point and range, of its entries)
    /// is compacted when no size trigger fires, so seeks stop skipping its tombstones; 0
    /// disables (docs/compaction.md, "Tombstone density").
    pub tombstone_density_percent: u32,
    /// ... and at least this many deletions (a few deletes in a small file are cheap to skip).
    pub tombstone_min_count: u64,
    /// When one iterator step skips at least this many deleted or shadowed entries and the
    /// active memtable holds at least as many deletions, that memtable is flushed at once, so
    /// the tombstone-density compaction can remove them instead of every seek stepping over
    /// them until the memtable fills; 0 disables (like `RocksDB`'s
    /// `memtable_op_scan_flush_trigger`).
    pub tombstone_scan_flush_trigger: u64,
    /// Entries older than this are invisible to reads at once and dropped by compaction; a
    /// file whose oldest entry is older is compacted without waiting for size triggers. Values
    /// then carry their write time (docs/format/ttl.md). Fixed when the keyspace is created:
    /// reopening with TTL turned on or off is refused.
    pub ttl: Option<Duration>,
    /// Key ranges a large compaction is split into, each merged on its own thread
    /// (docs/compaction.md, "Subcompactions"); 1 (the default) never splits. 1 to 64.
    pub max_subcompactions: usize,
    /// Key-value separation (docs/format/blob.md, docs/operations.md "Large values"): flushes
    /// and compactions write values of at least `min_blob_size` bytes to blob files and keep
    /// a reference in the table. Default false. Turning it off later leaves existing blob
    /// files readable; garbage collection then moves their values back into tables.
    pub enable_blob_files: bool,
    /// The smallest value (as stored, with a TTL's write time) written to a blob file.
    /// Default 4096.
    pub min_blob_size: u64,
    /// A blob file is finished once it holds this many bytes. Default 256 MiB.
    pub blob_file_size: u64,
    /// Codec of values in blob files (each value compressed on its own, kept raw unless that
    /// saves an eighth). Default none; zstd-dict is refused.
    pub blob_compression: Compression,
    /// Compactions relocate the values still referenced in the oldest blob files (see
    /// `blob_garbage_collection_age_cutoff`) into new ones, so the old files become all
    /// garbage and are deleted. Default true.
    pub enable_blob_garbage_collection: bool,
    /// The oldest fraction of a keyspace's blob files (by number) whose values compactions
    /// relocate. Default 0.25 (`RocksDB`'s). 0 to 1.
    pub blob_garbage_collection_age_cutoff: f64,
    /// When the blob files within the age cutoff hold at least this share of garbage (by
    /// bytes), the tables referencing the oldest of them are compacted even if no size
    /// trigger fires (compaction reason `blob-gc`). Default 1.0 (`RocksDB`'s), which never
    /// fires: a file all garbage is already deleted, and forced compactions are write
    /// amplification a workload should opt into (0.5 is a common choice). 0 to 1.
    pub blob_garbage_collection_force_threshold: f64,
    /// Makes a collector for every table file written for this keyspace (flushes,
    /// compactions, repair, and [`crate::TableFileWriter`] files built with these options): it
    /// sees each point entry in key order and adds `user.<name>` properties when the file is
    /// finished (`RocksDB`'s `table_properties_collector_factories`; docs/format/sst.md,
    /// "Properties block"). Like the prefix extractor it is code, not data: it is not read
    /// back from the OPTIONS file (only its name is written there). `None` (the default)
    /// costs one branch per entry written.
    pub table_properties_collector: Option<Arc<dyn TablePropertiesCollectorFactory>>,
}

impl Default for KeyspaceOptions {
    fn default() -> Self {
        KeyspaceOptions {
            write_buffer_size: 64 << 20,
            max_write_buffer_number: 2,
            memtable_bloom_size_ratio: 0.01,
            compression: Compression::Lz4,
            compression_per_level: vec![Compression::None, Compression::None, Compression::Lz4],
            bottommost_compression: Some(Compression::Zstd),
            compression_level: i32::MIN,
            zstd_max_dict_bytes: 16 << 10,
            zstd_max_train_bytes: 0,
            block_size: 4096,
            bloom_bits_per_key: 10,
            prefix_extractor: None,
            level0_compaction_trigger: 4,
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 36,
            soft_pending_compaction_bytes_limit: 64 << 30,
            hard_pending_compaction_bytes_limit: 256 << 30,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10,
            target_file_size: 64 << 20,
            checksum: ChecksumType::Xxh3,
            tombstone_density_percent: 50,
            tombstone_min_count: 1000,
            tombstone_scan_flush_trigger: 10_000,
            ttl: None,
            max_subcompactions: 1,
            enable_blob_files: false,
            min_blob_size: 4096,
            blob_file_size: 256 << 20,
            blob_compression: Compression::None,
            enable_blob_garbage_collection: true,
            blob_garbage_collection_age_cutoff: 0.25,
            blob_garbage_collection_force_threshold: 1.0,
            table_properties_collector: None,
        }
    }
}

impl KeyspaceOptions {
    /// Checks every value, naming the option that is wrong.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(Error::InvalidArgument(what));
        if self.write_buffer_size < 4096 || self.write_buffer_size > (4 << 30) {
            return bad(format!(
                "write_buffer_size {} must be between 4 KiB and 4 GiB",
                self.write_buffer_size
            ));
        }
        if !(0.0..=0.25).contains(&self.memtable_bloom_size_ratio) {
            return bad(format!(
                "memtable_bloom_size_ratio {} must be between 0 and 0.25",
                self.memtable_bloom_size_ratio
            ));
        }
        if self.max_write_buffer_number < 2 {
            return bad(format!(
                "max_write_buffer_number {} must be at least 2 (one active, one flushing)",
                self.max_write_buffer_number
            ));
        }
        if self.block_size < 256 || self.block_size > (64 << 20) {
            return bad(format!(
                "block_size {} must be between 256 B and 64 MiB",
                self.block_size
            ));
        }
        if self.bloom_bits_per_key > 100 {
            return bad(format!(
                "bloom_bits_per_key {} is above 100",
                self.bloom_bits_per_key
            ));
        }
        if self.level0_compaction_trigger < 2 {
            return bad(format!(
                "level0_compaction_trigger {} must be at least 2",
                self.level0_compaction_trigger
            ));
        }
        if self.level0_slowdown_writes_trigger < self.level0_compaction_trigger {
            return bad(format!(
                "level0_slowdown_writes_trigger {} is below level0_compaction_trigger {}",
                self.level0_slowdown_writes_trigger, self.level0_compaction_trigger
            ));
        }
        if self.level0_stop_writes_trigger < self.level0_slowdown_writes_trigger {
            return bad(format!(
                "level0_stop_writes_trigger {} is below level0_slowdown_writes_trigger {}",
                self.level0_stop_writes_trigger, self.level0_slowdown_writes_trigger
            ));
        }
        let (soft, hard) = (
            self.soft_pending_compaction_bytes_limit,
            self.hard_pending_compaction_bytes_limit,
        );
        if soft > 0 && hard > 0 && hard < soft {
            return bad(format!(
                "hard_pending_compaction_bytes_limit {hard} is below \
                 soft_pending_compaction_bytes_limit {soft}"
            ));
        }
        if self.target_file_size < 4 << 10 {
            return bad(format!(
                "target_file_size {} is below 4 KiB",
                self.target_file_size
            ));
        }
        if self.max_bytes_for_level_base < 4 << 10 {
            return bad(format!(
                "max_bytes_for_level_base {} is below 4 KiB",
                self.max_bytes_for_level_base
            ));
        }
        if !(2..=100).contains(&self.max_bytes_for_level_multiplier) {
            return bad(format!(
                "max_bytes_for_level_multiplier {} must be between 2 and 100",
                self.max_bytes_for_level_multiplier
            ));
        }
        if self.tombstone_density_percent > 100 {
            return bad(format!(
                "tombstone_density_percent {} is above 100",
                self.tombstone_density_percent
            ));
        }
        if self.ttl.is_some_and(|ttl| ttl.as_secs() == 0) {
            return bad(format!(
                "ttl {:?} must be at least one second (write times are in seconds)",
                self.ttl
            ));
        }
        if !(1..=64).contains(&self.max_subcompactions) {
            return bad(format!(
                "max_subcompactions {} must be between 1 and 64",
                self.max_subcompactions
            ));
        }
        self.validate_blob()?;
        self.validate_compression()
    }

    /// The blob-file checks of [`Self::validate`].
    fn validate_blob(&self) -> Result<()> {
        let bad = |what: String| Err(Error::InvalidArgument(what));
        if self.blob_file_size < 4 << 10 {
            return bad(format!(
                "blob_file_size {} is below 4 KiB",
                self.blob_file_size
            ));
        }
        if self.blob_compression == Compression::ZstdDict {
            return bad(
                "blob_compression zstd-dict is not supported: values are compressed one at a \
                 time; use zstd"
                    .to_owned(),
            );
        }
        for (name, value) in [
            (
                "blob_garbage_collection_age_cutoff",
                self.blob_garbage_collection_age_cutoff,
            ),
            (
                "blob_garbage_collection_force_threshold",
                self.blob_garbage_collection_force_threshold,
            ),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return bad(format!("{name} {value} must be between 0 and 1"));
            }
        }
        Ok(())
    }

    /// The compression checks of [`Self::validate`].
    fn validate_compression(&self) -> Result<()> {
        let bad = |what: String| Err(Error::InvalidArgument(what));
        if self.zstd_max_dict_bytes > 4 << 20 {
            return bad(format!(
                "zstd_max_dict_bytes {} is above 4 MiB",
                self.zstd_max_dict_bytes
            ));
        }
        if self.zstd_max_train_bytes > 256 << 20 {
            return bad(format!(
                "zstd_max_train_bytes {} is above 256 MiB",
                self.zstd_max_train_bytes
            ));
        }
        let dictionary = |what: &str| {
            bad(format!(
                "{what} zstd-dict needs a dictionary; use zstd with zstd_max_dict_bytes > 0 to \
                 train one per bottommost table"
            ))
        };
        if self.compression == Compression::ZstdDict {
            return dictionary("compression");
        }
        if self.compression_per_level.contains(&Compression::ZstdDict) {
            return dictionary("compression_per_level");
        }
        if self.bottommost_compression == Some(Compression::ZstdDict) {
            return dictionary("bottommost_compression");
        }
        Ok(())
    }

    /// Bytes of each memtable's bloom filter (0: none).
    #[allow(clippy::cast_sign_loss)] // `validate` keeps the ratio between 0 and 0.25
    pub(crate) fn memtable_bloom_bytes(&self) -> usize {
        (self.write_buffer_size as f64 * self.memtable_bloom_size_ratio) as usize
    }

    /// The codec of tables written to `level`; `bottommost` when the level is the last one or
    /// no deeper level holds data.
    pub(crate) fn compression_for_level(&self, level: usize, bottommost: bool) -> Compression {
        if bottommost {
            if let Some(compression) = self.bottommost_compression {
                return compression;
            }
        }
        match self.compression_per_level.as_slice() {
            [] => self.compression,
            list => list[level.min(list.len() - 1)],
        }
    }

    /// Reads the persisted form back; missing or unreadable values keep `fallback`'s. The
    /// prefix extractor is always `fallback`'s (extractors are code, not data); tables written
    /// with a differently named one are still read correctly, only without their prefix filter.
    pub(crate) fn from_pairs(
        pairs: &[(String, String)],
        fallback: &KeyspaceOptions,
    ) -> KeyspaceOptions {
        let mut options = fallback.clone();
        for (key, value) in pairs {
            match key.as_str() {
                "write_buffer_size" => set_parsed(&mut options.write_buffer_size, value),
                "max_write_buffer_number" => {
                    set_parsed(&mut options.max_write_buffer_number, value);
                }
                "memtable_bloom_size_ratio" => {
                    set_parsed(&mut options.memtable_bloom_size_ratio, value);
                }
                "compression" => {
                    if let Some(c) = Compression::from_name(value) {
                        options.compression = c;
                    }
                }
                "compression_level" => set_parsed(&mut options.compression_level, value),
                "zstd_max_dict_bytes" => set_parsed(&mut options.zstd_max_dict_bytes, value),
                "zstd_max_train_bytes" => set_parsed(&mut options.zstd_max_train_bytes, value),
                "block_size" => set_parsed(&mut options.block_size, value),
                "bloom_bits_per_key" => set_parsed(&mut options.bloom_bits_per_key, value),
                "level0_compaction_trigger" => {
                    set_parsed(&mut options.level0_compaction_trigger, value);
                }
                "level0_slowdown_writes_trigger" => {
                    set_parsed(&mut options.level0_slowdown_writes_trigger, value);
                }
                "level0_stop_writes_trigger" => {
                    set_parsed(&mut options.level0_stop_writes_trigger, value);
                }
                "soft_pending_compaction_bytes_limit" => {
                    set_parsed(&mut options.soft_pending_compaction_bytes_limit, value);
                }
                "hard_pending_compaction_bytes_limit" => {
                    set_parsed(&mut options.hard_pending_compaction_bytes_limit, value);
                }
                "max_bytes_for_level_base" => {
                    set_parsed(&mut options.max_bytes_for_level_base, value);
                }
                "max_bytes_for_level_multiplier" => {
                    set_parsed(&mut options.max_bytes_for_level_multiplier, value);
                }
                "compression_per_level" => {
                    if let Some(list) = parse_compression_list(value) {
                        options.compression_per_level = list;
                    }
                }
                "bottommost_compression" => {
                    if value == PER_LEVEL {
                        options.bottommost_compression = None;
                    } else if let Some(c) = Compression::from_name(value) {
                        options.bottommost_compression = Some(c);
                    }
                }
                "target_file_size" => set_parsed(&mut options.target_file_size, value),
                "tombstone_density_percent" => {
                    set_parsed(&mut options.tombstone_density_percent, value);
                }
                "tombstone_min_count" => set_parsed(&mut options.tombstone_min_count, value),
                "tombstone_scan_flush_trigger" => {
                    set_parsed(&mut options.tombstone_scan_flush_trigger, value);
                }
                "ttl_seconds" => {
                    if let Ok(seconds) = value.parse::<u64>() {
                        options.ttl = (seconds > 0).then(|| Duration::from_secs(seconds));
                    }
                }
                "max_subcompactions" => set_parsed(&mut options.max_subcompactions, value),
                "enable_blob_files" => set_parsed(&mut options.enable_blob_files, value),
                "min_blob_size" => set_parsed(&mut options.min_blob_size, value),
                "blob_file_size" => set_parsed(&mut options.blob_file_size, value),
                "blob_compression" => {
                    if let Some(c) = Compression::from_name(value) {
                        options.blob_compression = c;
                    }
                }
                "enable_blob_garbage_collection" => {
                    set_parsed(&mut options.enable_blob_garbage_collection, value);
                }
                "blob_garbage_collection_age_cutoff" => {
                    set_parsed(&mut options.blob_garbage_collection_age_cutoff, value);
                }
                "blob_garbage_collection_force_threshold" => {
                    set_parsed(&mut options.blob_garbage_collection_force_threshold, value);
                }
                "checksum" => {
                    options.checksum = match value.as_str() {
                        "crc32c" => ChecksumType::Crc32c,
                        _ => ChecksumType::Xxh3,
                    };
                }
                _ => {}
            }
        }
        if options.validate().is_err() {
            return fallback.clone();
        }
        options
    }

    /// The persisted form (names and values as in docs/format/options.md).
    #[allow(clippy::too_many_lines)] // one line pair per option
    pub(crate) fn to_pairs(&self) -> Vec<(String, String)> {
        let mut pairs = vec![
            (
                "write_buffer_size".to_owned(),
                self.write_buffer_size.to_string(),
            ),
            (
                "max_write_buffer_number".to_owned(),
                self.max_write_buffer_number.to_string(),
            ),
            (
                "memtable_bloom_size_ratio".to_owned(),
                self.memtable_bloom_size_ratio.to_string(),
            ),
            ("compression".to_owned(), self.compression.name().to_owned()),
            (
                "compression_level".to_owned(),
                self.compression_level.to_string(),
            ),
            (
                "zstd_max_dict_bytes".to_owned(),
                self.zstd_max_dict_bytes.to_string(),
            ),
            (
                "zstd_max_train_bytes".to_owned(),
                self.zstd_max_train_bytes.to_string(),
            ),
            ("block_size".to_owned(), self.block_size.to_string()),
            (
                "bloom_bits_per_key".to_owned(),
                self.bloom_bits_per_key.to_string(),
            ),
            (
                "level0_compaction_trigger".to_owned(),
                self.level0_compaction_trigger.to_string(),
            ),
            (
                "level0_slowdown_writes_trigger".to_owned(),
                self.level0_slowdown_writes_trigger.to_string(),
            ),
            (
                "level0_stop_writes_trigger".to_owned(),
                self.level0_stop_writes_trigger.to_string(),
            ),
            (
                "soft_pending_compaction_bytes_limit".to_owned(),
                self.soft_pending_compaction_bytes_limit.to_string(),
            ),
            (
                "hard_pending_compaction_bytes_limit".to_owned(),
                self.hard_pending_compaction_bytes_limit.to_string(),
            ),
            (
                "max_bytes_for_level_base".to_owned(),
                self.max_bytes_for_level_base.to_string(),
            ),
            (
                "max_bytes_for_level_multiplier".to_owned(),
                self.max_bytes_for_level_multiplier.to_string(),
            ),
            (
                "compression_per_level".to_owned(),
                self.compression_per_level
                    .iter()
                    .map(|c| c.name())
                    .collect::<Vec<_>>()
                    .join(":"),
            ),
            (
                "bottommost_compression".to_owned(),
                self.bottommost_compression
                    .map_or(PER_LEVEL, Compression::name)
                    .to_owned(),
            ),
            (
                "target_file_size".to_owned(),
                self.target_file_size.to_string(),
            ),
            ("checksum".to_owned(), self.checksum.name().to_owned()),
            (
                "tombstone_density_percent".to_owned(),
                self.tombstone_density_percent.to_string(),
            ),
            (
                "tombstone_min_count".to_owned(),
                self.tombstone_min_count.to_string(),
            ),
            (
                "tombstone_scan_flush_trigger".to_owned(),
                self.tombstone_scan_flush_trigger.to_string(),
            ),
            (
                "ttl_seconds".to_owned(),
                self.ttl.map_or(0, |ttl| ttl.as_secs()).to_string(),
            ),
            (
                "max_subcompactions".to_owned(),
                self.max_subcompactions.to_string(),
            ),
            (
                "enable_blob_files".to_owned(),
                self.enable_blob_files.to_string(),
            ),
            ("min_blob_size".to_owned(), self.min_blob_size.to_string()),
            ("blob_file_size".to_owned(), self.blob_file_size.to_string()),
            (
                "blob_compression".to_owned(),
                self.blob_compression.name().to_owned(),
            ),
            (
                "enable_blob_garbage_collection".to_owned(),
                self.enable_blob_garbage_collection.to_string(),
            ),
            (
                "blob_garbage_collection_age_cutoff".to_owned(),
                self.blob_garbage_collection_age_cutoff.to_string(),
            ),
            (
                "blob_garbage_collection_force_threshold".to_owned(),
                self.blob_garbage_collection_force_threshold.to_string(),
            ),
        ];
        if let Some(extractor) = &self.prefix_extractor {
            pairs.push(("prefix_extractor".to_owned(), extractor.name().to_owned()));
        }
        if let Some(factory) = &self.table_properties_collector {
            pairs.push((
                "table_properties_collector".to_owned(),
                factory.name().to_owned(),
            ));
        }
        pairs
    }
}

/// Options of a database. `Default` gives a database in `Sync` durability on the OS file
/// system with a 64 MiB block cache.
#[derive(Debug, Clone)]
#[allow(clippy::struct_excessive_bools)] // independent switches, as RocksDB's options are
pub struct Options {
    /// Create the database if the directory holds none.
    pub create_if_missing: bool,
    /// Refuse to open a database that already exists.
    pub error_if_exists: bool,
    /// Default durability of writes.
    pub durability: Durability,
    /// How often `Flush` and `Buffered` writes are synced in the background.
    pub sync_interval: Duration,
    /// What a damaged WAL means at open (docs/format/wal.md).
    pub wal_recovery_mode: RecoveryMode,
    /// How often the background records the live WAL's synced size in the MANIFEST when it
    /// grew (one small MANIFEST append and sync; every flush and compaction edit carries it
    /// too): a recovery refuses a WAL cut below its recorded size (docs/format/manifest.md,
    /// `WAL_SYNCED`). Zero turns the periodic record off. Default 10 s.
    pub wal_synced_record_interval: Duration,
    /// Write the info LOG (`LOG` in the database directory, docs/operations.md "The info
    /// LOG"). A read-only open never writes it. Default on.
    pub info_log: bool,
    /// The size at which `LOG` is rotated to `LOG.old.1`. Default 16 MiB.
    pub info_log_max_size: u64,
    /// Rotated LOGs kept (`LOG.old.1` .. `LOG.old.N`; 0 keeps none). Default 10.
    pub info_log_keep: usize,
    /// How often the compaction stats table is written to the LOG; zero turns it off.
    /// Default 10 minutes.
    pub stats_dump_period: Duration,
    /// User-key order; its name is persisted and checked on every open.
    pub comparator: Arc<dyn Comparator>,
    /// Bytes of uncompressed blocks kept in memory: data blocks, and the index and filter
    /// blocks of open tables (charged to it, or cached in it; never held outside it). 0 is no
    /// block cache: index and filters are then pinned by the open tables, uncounted.
    pub block_cache_capacity: usize,
    /// Table files kept open (at least 16). [`UNLIMITED_OPEN_FILES`] keeps every table open
    /// once read and pins it in its file's metadata, so a lookup reaches it without the table
    /// cache's lock (`RocksDB`'s `max_open_files = -1`). Default 1000.
    pub max_open_files: usize,
    /// Verify block checksums on every read.
    pub verify_checksums: bool,
    /// Options for keyspaces created without their own (including "default").
    pub default_keyspace: KeyspaceOptions,
    /// Where files live; the OS file system unless a test supplies `MemFs` or `FaultFs`.
    pub file_system: Arc<dyn FileSystem>,
    /// Wall-clock time for TTL write times and expiry; tests supply their own.
    pub clock: Arc<dyn Clock>,
    /// When writes stop and reads go on this long, memtables are flushed and L0 is compacted
    /// into the base level, so reads stop merging them (docs/compaction.md, "Idle
    /// compaction"); `None` disables.
    pub idle_compaction_after: Option<Duration>,
    /// Bytes per second that flushes and compactions together may write to table files,
    /// flushes first (docs/compaction.md, "Rate limiter"); 0 (the default) does not limit.
    pub rate_limit_bytes_per_sec: u64,
    /// Tune the rate between 1/20 of `rate_limit_bytes_per_sec` and all of it by the pending
    /// compaction bytes: up while they grow, down while they fall or are zero.
    pub rate_limiter_auto_tune: bool,
    /// Read table files with `O_DIRECT`, bypassing the OS page cache (`RocksDB`'s
    /// `use_direct_reads`): the block cache is then the only cache of table bytes, so size it
    /// for the working set. The open fails, naming the option, on a file system that refuses
    /// `O_DIRECT` (docs/operations.md, "Direct I/O"). Default off.
    pub use_direct_reads: bool,
    /// Write the table files of flushes and compactions with `O_DIRECT` (`RocksDB`'s
    /// `use_direct_io_for_flush_and_compaction`), so that background writes do not push
    /// cached pages out of the page cache. WAL, MANIFEST, OPTIONS, blob and ingested files stay
    /// buffered. Default off.
    pub use_direct_io_for_flush_and_compaction: bool,
    /// Background jobs that may run at once (`RocksDB`'s `max_background_jobs`): one is the
    /// flush thread, the rest compaction threads. Several compactions of one keyspace run at
    /// once when their files and output ranges are apart (one from L0 at a time, as in
    /// `RocksDB`), so more threads drain a compaction backlog faster even in a database with
    /// one keyspace (docs/compaction.md). 2 (the default) to
    /// [`MAX_BACKGROUND_JOBS`]; changed live by [`crate::Db::set_options`].
    pub max_background_jobs: usize,
}

/// The largest `max_background_jobs`.
pub const MAX_BACKGROUND_JOBS: usize = 64;

/// `Options::max_open_files` without a limit: every table stays open once read, pinned in its
/// file's metadata ([`crate::inspect::FileMetaData::pinned_table`]).
pub const UNLIMITED_OPEN_FILES: usize = usize::MAX;

/// Checks a `max_background_jobs` value, naming the option.
pub(crate) fn check_background_jobs(jobs: usize) -> Result<()> {
    if (2..=MAX_BACKGROUND_JOBS).contains(&jobs) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "max_background_jobs {jobs} must be between 2 (one flush, one compaction) and \
             {MAX_BACKGROUND_JOBS}"
        )))
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            durability: Durability::Sync,
            sync_interval: Duration::from_secs(1),
            wal_recovery_mode: RecoveryMode::default(),
            wal_synced_record_interval: Duration::from_secs(10),
            info_log: true,
            info_log_max_size: 16 << 20,
            info_log_keep: 10,
            stats_dump_period: Duration::from_secs(600),
            comparator: Arc::new(BytewiseComparator),
            block_cache_capacity: 64 << 20,
            max_open_files: 1000,
            verify_checksums: true,
            default_keyspace: KeyspaceOptions::default(),
            file_system: Arc::new(OsFs::new()),
            clock: Arc::new(SystemClock),
            idle_compaction_after: Some(Duration::from_secs(30)),
            rate_limit_bytes_per_sec: 0,
            rate_limiter_auto_tune: false,
            use_direct_reads: false,
            use_direct_io_for_flush_and_compaction: false,
            max_background_jobs: 2,
        }
    }
}

impl Options {
    /// Checks every value, naming the option that is wrong.
    pub fn validate(&self) -> Result<()> {
        if self.sync_interval.is_zero() || self.sync_interval > Duration::from_secs(3600) {
            return Err(Error::InvalidArgument(format!(
                "sync_interval {:?} must be between 1 ns and 1 hour",
                self.sync_interval
            )));
        }
        if self.wal_synced_record_interval > Duration::from_secs(24 * 3600) {
            return Err(Error::InvalidArgument(format!(
                "wal_synced_record_interval {:?} must be at most a day (zero turns it off)",
                self.wal_synced_record_interval
            )));
        }
        if self.idle_compaction_after.is_some_and(|d| d.is_zero()) {
            return Err(Error::InvalidArgument(
                "idle_compaction_after must be above zero (None disables it)".into(),
            ));
        }
        if self.rate_limiter_auto_tune && self.rate_limit_bytes_per_sec == 0 {
            return Err(Error::InvalidArgument(
                "rate_limiter_auto_tune needs rate_limit_bytes_per_sec above 0 (its ceiling)"
                    .into(),
            ));
        }
        check_background_jobs(self.max_background_jobs)?;
        if self.max_open_files < 16 {
            return Err(Error::InvalidArgument(format!(
                "max_open_files {} must be at least 16",
                self.max_open_files
            )));
        }
        self.default_keyspace.validate()
    }

    /// The OPTIONS file for this database and its keyspaces.
    pub(crate) fn to_file(&self, keyspaces: &[(String, KeyspaceOptions)]) -> OptionsFile {
        let db = vec![
            ("comparator".to_owned(), self.comparator.name().to_owned()),
            ("durability".to_owned(), self.durability.name().to_owned()),
            (
                "sync_interval_ms".to_owned(),
                self.sync_interval.as_millis().to_string(),
            ),
            (
                "wal_recovery_mode".to_owned(),
                self.wal_recovery_mode.name().to_owned(),
            ),
            (
                "wal_synced_record_interval_ms".to_owned(),
                self.wal_synced_record_interval.as_millis().to_string(),
            ),
            (
                "block_cache_capacity".to_owned(),
                self.block_cache_capacity.to_string(),
            ),
            ("max_open_files".to_owned(), self.max_open_files.to_string()),
            (
                "max_background_jobs".to_owned(),
                self.max_background_jobs.to_string(),
            ),
            (
                "idle_compaction_after_ms".to_owned(),
                self.idle_compaction_after
                    .map_or(0, |d| d.as_millis())
                    .to_string(),
            ),
            (
                "verify_checksums".to_owned(),
                self.verify_checksums.to_string(),
            ),
            (
                "rate_limit_bytes_per_sec".to_owned(),
                self.rate_limit_bytes_per_sec.to_string(),
            ),
            (
                "rate_limiter_auto_tune".to_owned(),
                self.rate_limiter_auto_tune.to_string(),
            ),
            (
                "use_direct_reads".to_owned(),
                self.use_direct_reads.to_string(),
            ),
            (
                "use_direct_io_for_flush_and_compaction".to_owned(),
                self.use_direct_io_for_flush_and_compaction.to_string(),
            ),
        ];
        let mut sections = vec![("db".to_owned(), db)];
        for (name, options) in keyspaces {
            sections.push((format!("keyspace \"{name}\""), options.to_pairs()));
        }
        OptionsFile { sections }
    }

    /// Refuses to open with options the persisted ones make unsafe.
    pub(crate) fn check_compatible(&self, persisted: &OptionsFile) -> Result<()> {
        if let Some(name) = persisted.get("db", "comparator") {
            if name != self.comparator.name() {
                return Err(Error::InvalidArgument(format!(
                    "the database was created with comparator {name:?} but is being opened \
                     with {:?}; keys would be read in the wrong order",
                    self.comparator.name()
                )));
            }
        }
        Ok(())
    }
}

/// The persisted `bottommost_compression` when the per-level choice applies at the bottom too.
const PER_LEVEL: &str = "per-level";

/// Parses a `:`-separated list of codec names (empty: the empty list).
fn parse_compression_list(value: &str) -> Option<Vec<Compression>> {
    if value.is_empty() {
        return Some(Vec::new());
    }
    value.split(':').map(Compression::from_name).collect()
}

fn set_parsed<T: std::str::FromStr>(target: &mut T, value: &str) {
    if let Ok(parsed) = value.parse() {
        *target = parsed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_options_file_records_the_direct_io_options() {
        let file = Options::default().to_file(&[]);
        assert_eq!(file.get("db", "use_direct_reads"), Some("false"));
        assert_eq!(
            file.get("db", "use_direct_io_for_flush_and_compaction"),
            Some("false")
        );
        let options = Options {
            use_direct_reads: true,
            use_direct_io_for_flush_and_compaction: true,
            ..Options::default()
        };
        let file = options.to_file(&[]);
        assert_eq!(file.get("db", "use_direct_reads"), Some("true"));
        assert_eq!(
            file.get("db", "use_direct_io_for_flush_and_compaction"),
            Some("true")
        );
    }

    #[test]
    fn the_options_file_spells_modes_by_their_names() {
        let options = Options {
            wal_recovery_mode: RecoveryMode::PointInTime,
            ..Options::default()
        };
        let file = options.to_file(&[]);
        assert_eq!(file.get("db", "wal_recovery_mode"), Some("point-in-time"));
        assert_eq!(
            file.get("db", "durability"),
            Some(options.durability.name())
        );
    }

    #[test]
    fn defaults_are_valid_and_bad_values_are_named() {
        Options::default().validate().unwrap();
        let mut options = Options::default();
        options.default_keyspace.write_buffer_size = 10;
        let message = options.validate().unwrap_err().to_string();
        assert!(message.contains("write_buffer_size"), "{message}");
        let mut options = Options::default();
        options.default_keyspace.max_write_buffer_number = 1;
        assert!(options
            .validate()
            .unwrap_err()
            .to_string()
            .contains("max_write_buffer_number"));
        let options = Options {
            sync_interval: Duration::ZERO,
            ..Options::default()
        };
        assert!(options
            .validate()
            .unwrap_err()
            .to_string()
            .contains("sync_interval"));
    }

    #[test]
    fn compression_by_level_repeats_the_last_entry_and_the_bottom_overrides() {
        let options = KeyspaceOptions::default();
        assert_eq!(options.compression_for_level(0, false), Compression::None);
        assert_eq!(options.compression_for_level(1, false), Compression::None);
        assert_eq!(options.compression_for_level(2, false), Compression::Lz4);
        assert_eq!(options.compression_for_level(5, false), Compression::Lz4);
        assert_eq!(options.compression_for_level(6, true), Compression::Zstd);
        let plain = KeyspaceOptions {
            compression: Compression::Snappy,
            compression_per_level: Vec::new(),
            bottommost_compression: None,
            ..KeyspaceOptions::default()
        };
        assert_eq!(plain.compression_for_level(6, true), Compression::Snappy);
    }

    #[test]
    fn compaction_options_round_trip_and_bad_ones_are_named() {
        let options = KeyspaceOptions {
            compression_per_level: vec![Compression::Zlib, Compression::Zstd],
            bottommost_compression: None,
            max_bytes_for_level_base: 1 << 20,
            max_bytes_for_level_multiplier: 8,
            level0_slowdown_writes_trigger: 10,
            level0_stop_writes_trigger: 12,
            soft_pending_compaction_bytes_limit: 0,
            hard_pending_compaction_bytes_limit: 1 << 20,
            tombstone_density_percent: 30,
            tombstone_min_count: 7,
            tombstone_scan_flush_trigger: 0,
            ttl: Some(Duration::from_secs(3600)),
            zstd_max_dict_bytes: 32 << 10,
            zstd_max_train_bytes: 1 << 20,
            max_subcompactions: 3,
            memtable_bloom_size_ratio: 0.05,
            ..KeyspaceOptions::default()
        };
        let back = KeyspaceOptions::from_pairs(&options.to_pairs(), &KeyspaceOptions::default());
        assert_eq!(back.to_pairs(), options.to_pairs());
        assert_eq!(back.ttl, Some(Duration::from_secs(3600)));
        assert!((back.memtable_bloom_size_ratio - 0.05).abs() < f64::EPSILON);
        for (options, name) in [
            (
                KeyspaceOptions {
                    level0_slowdown_writes_trigger: 3,
                    ..KeyspaceOptions::default()
                },
                "level0_slowdown_writes_trigger",
            ),
            (
                KeyspaceOptions {
                    level0_stop_writes_trigger: 19,
                    ..KeyspaceOptions::default()
                },
                "level0_stop_writes_trigger",
            ),
            (
                KeyspaceOptions {
                    soft_pending_compaction_bytes_limit: 10,
                    hard_pending_compaction_bytes_limit: 5,
                    ..KeyspaceOptions::default()
                },
                "hard_pending_compaction_bytes_limit",
            ),
            (
                KeyspaceOptions {
                    max_bytes_for_level_multiplier: 1,
                    ..KeyspaceOptions::default()
                },
                "max_bytes_for_level_multiplier",
            ),
            (
                KeyspaceOptions {
                    max_bytes_for_level_base: 10,
                    ..KeyspaceOptions::default()
                },
                "max_bytes_for_level_base",
            ),
            (
                KeyspaceOptions {
                    compression_per_level: vec![Compression::ZstdDict],
                    ..KeyspaceOptions::default()
                },
                "compression_per_level",
            ),
            (
                KeyspaceOptions {
                    tombstone_density_percent: 101,
                    ..KeyspaceOptions::default()
                },
                "tombstone_density_percent",
            ),
            (
                KeyspaceOptions {
                    ttl: Some(Duration::from_millis(500)),
                    ..KeyspaceOptions::default()
                },
                "ttl",
            ),
        ] {
            let message = options.validate().unwrap_err().to_string();
            assert!(message.contains(name), "{message}");
        }
    }

    #[test]
    fn durability_names_round_trip() {
        for d in [Durability::Sync, Durability::Flush, Durability::Buffered] {
            assert_eq!(Durability::from_name(d.name()), Some(d));
        }
        assert_eq!(Durability::from_name("fsync"), None);
    }
}
