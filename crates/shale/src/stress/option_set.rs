//! The random option set of a run, drawn from its seed so that `--seed` reproduces it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use shale_engine::{Durability, KeyspaceOptions, Options};
use shale_fs::FileSystem;
use shale_sst::Compression;

/// Engine options drawn for one run.
#[derive(Debug, Clone)]
pub struct OptionSet {
    pub durability: Durability,
    pub write_buffer_size: usize,
    pub block_size: usize,
    pub compression: Compression,
    pub bloom_bits_per_key: u32,
    pub level0_compaction_trigger: usize,
    pub sync_interval: Duration,
}

impl OptionSet {
    /// The option set of `seed`; `durability` overrides the drawn one.
    pub fn from_seed(seed: u64, durability: Option<Durability>) -> OptionSet {
        let mut rng = SmallRng::seed_from_u64(seed ^ 0x0097_0102_55E7);
        let drawn = *[Durability::Sync, Durability::Flush, Durability::Buffered]
            .choose(&mut rng)
            .unwrap_or(&Durability::Sync);
        OptionSet {
            durability: durability.unwrap_or(drawn),
            write_buffer_size: 4096 << rng.gen_range(0..7),
            block_size: 256 << rng.gen_range(0..7),
            compression: *[
                Compression::None,
                Compression::Snappy,
                Compression::Lz4,
                Compression::Zstd,
                Compression::Zlib,
            ]
            .choose(&mut rng)
            .unwrap_or(&Compression::None),
            bloom_bits_per_key: *[0, 4, 10].choose(&mut rng).unwrap_or(&10),
            level0_compaction_trigger: rng.gen_range(2..=6),
            sync_interval: Duration::from_millis(rng.gen_range(5..=200)),
        }
    }

    /// Engine options on `file_system`.
    pub fn options(&self, file_system: Arc<dyn FileSystem>) -> Options {
        Options {
            durability: self.durability,
            sync_interval: self.sync_interval,
            block_cache_capacity: 1 << 20,
            default_keyspace: self.keyspace_options(),
            file_system,
            ..Options::default()
        }
    }

    /// Options of every keyspace of the workload.
    pub fn keyspace_options(&self) -> KeyspaceOptions {
        KeyspaceOptions {
            write_buffer_size: self.write_buffer_size,
            compression: self.compression,
            block_size: self.block_size,
            bloom_bits_per_key: self.bloom_bits_per_key,
            level0_compaction_trigger: self.level0_compaction_trigger,
            target_file_size: 64 << 10,
            ..KeyspaceOptions::default()
        }
    }
}

impl fmt::Display for OptionSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "durability={} write_buffer_size={} block_size={} compression={} bloom_bits={} \
             l0_trigger={} sync_interval_ms={}",
            self.durability.name(),
            self.write_buffer_size,
            self.block_size,
            self.compression.name(),
            self.bloom_bits_per_key,
            self.level0_compaction_trigger,
            self.sync_interval.as_millis()
        )
    }
}
