//! `shale bench sst`: writes one sorted table of `db_bench`-shaped data and measures it.
//!
//! Phases, each printed as one line as soon as it is measured (or all at the end as JSON):
//! 1. `write`: build `bench-<codec>.sst` (the speed table; kept) with `--num` sorted entries,
//!    seqno `index + 1`, kind value; the time includes `finish` and its fdatasync.
//! 2. `bloom_fp`: how many of `--absent` keys that are not in the table the bloom filter lets
//!    through: half are keys of indexes `>= --num` (same shape), half are existing keys with a
//!    `.` appended (`LevelDB`'s `readmissing` shape; `.1`, `.2`, ... once every key had its
//!    turn, so no absent key is checked twice). Printed beside the formula's estimate.
//! 3. `warm_cache`, then `readrandom`: random existing keys through `Table::get` on the cached
//!    table, each result checked against the generator (a wrong or missing value fails the
//!    run); p50/p99 time `get` alone, ops/sec covers the whole loop.
//! 4. `readseq` / `readreverse`: one full forward / backward iteration of the cached table.
//!    `MB` is 2^20 bytes of user key + value, as in `db_bench`.
//! 5. `readrandom_nocache`: as `readrandom` with no block cache (every lookup reads, checks
//!    and decompresses its block; the OS page cache is warm).
//! 6. `size_<codec>`: the same data written with none, lz4, snappy, zstd and, marked extra,
//!    zlib and zstd-dict (a 16 KiB dictionary trained on 100 data blocks sampled from the
//!    uncompressed table). Ratios are file size over raw user key + value bytes. Only the speed
//!    table is kept unless `--keep-tables`.
//!
//! Every figure is measured in this run; read phases stop at `--seconds` each.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use shale_fs::{FileSystem, OsFs};
use shale_sst::{
    BlockCache, BlockKind, Compression, ReadOptions, Table, TableOpenOptions, TableWriter,
    ValueKind, WriterOptions, MAX_SEQNO,
};

use crate::histogram::Histogram;
use crate::keygen::{KeyGenerator, ValueGenerator};
use crate::output::{progress, spinner, Failure, Report};
use crate::tool_sst::estimated_false_positive_rate;
use crate::SstBenchArgs;

/// Bytes in the `MB` of rates and sizes, as in `db_bench`.
const MB: f64 = 1_048_576.0;
/// Operations between progress-bar updates (and deadline checks in scans).
const PROGRESS_STEP: u64 = 1 << 14;
/// Size of the trained zstd dictionary.
const DICTIONARY_SIZE: usize = 16 << 10;
/// Data blocks sampled to train it.
const DICTIONARY_SAMPLES: usize = 100;

/// The validated settings of one run.
struct Bench {
    fs: OsFs,
    dir: PathBuf,
    num: u64,
    reads: u64,
    keys: KeyGenerator,
    values: ValueGenerator,
    value_size: usize,
    compression_ratio: f64,
    block_size: usize,
    bloom_bits: u32,
    compression: Compression,
    cache_size: usize,
    cap: Duration,
    absent: u64,
    seed: u64,
    keep_tables: bool,
}

/// A table written by the benchmark.
struct Written {
    path: PathBuf,
    file_size: u64,
    elapsed: Duration,
    num_data_blocks: u64,
}

/// The outcome of a timed read phase.
struct ReadPhase {
    ops: u64,
    elapsed: Duration,
    /// `get` latencies in nanoseconds (point lookups only).
    latency: Option<Histogram>,
    /// User key + value bytes returned (scans only).
    bytes: u64,
    mismatches: u64,
    first_mismatch: Option<String>,
    /// Whether the phase stopped at the time cap before its planned number of operations.
    capped: bool,
}

impl ReadPhase {
    fn micros_per_op(&self) -> f64 {
        per_op_micros(self.elapsed, self.ops)
    }

    fn ops_per_sec(&self) -> f64 {
        rate(self.ops as f64, self.elapsed)
    }
}

fn rate(amount: f64, elapsed: Duration) -> f64 {
    let seconds = elapsed.as_secs_f64();
    if seconds > 0.0 {
        amount / seconds
    } else {
        0.0
    }
}

fn per_op_micros(elapsed: Duration, ops: u64) -> f64 {
    if ops == 0 {
        0.0
    } else {
        elapsed.as_secs_f64() * 1e6 / ops as f64
    }
}

/// Runs the benchmark.
pub fn run(args: &SstBenchArgs) -> Result<(), Failure> {
    let bench = Bench::new(args)?;
    let mut report = Report::new(args.json);
    bench.header(&mut report)?;

    let speed = bench.write_table(bench.compression, None)?;
    bench.report_write(&mut report, &speed)?;

    let cache = Arc::new(BlockCache::new(bench.cache_size));
    let options = TableOpenOptions {
        block_cache: Some(cache.clone()),
        ..TableOpenOptions::default()
    };
    let table = Table::open(&bench.fs, &speed.path, &options)?;
    bench.bloom(&mut report, &table)?;

    let warm = bench.scan(&table, "warm_cache", true)?;
    bench.check_scan("warm_cache", &warm)?;
    let stats = cache.stats();
    report.measure(
        "warm_cache",
        &format!(
            "{} entries scanned in {:.3} s; cache holds {:.1} MB in {} blocks of {:.1} MB",
            warm.ops,
            warm.elapsed.as_secs_f64(),
            stats.usage as f64 / MB,
            stats.entries,
            stats.capacity as f64 / MB
        ),
    )?;
    report.set(
        "warm_cache",
        json!({
            "entries": warm.ops,
            "seconds": warm.elapsed.as_secs_f64(),
            "cache_usage_bytes": stats.usage,
            "cache_entries": stats.entries,
            "cache_capacity_bytes": stats.capacity,
        }),
    );

    let before = cache.stats();
    let lookups = bench.read_random(&table, "readrandom")?;
    let misses = cache.stats().misses - before.misses;
    report_lookups(&mut report, "readrandom", &lookups, Some(misses))?;

    for (name, forward) in [("readseq", true), ("readreverse", false)] {
        let phase = bench.scan(&table, name, forward)?;
        bench.check_scan(name, &phase)?;
        report_scan(&mut report, name, &phase)?;
    }

    let uncached = Table::open(&bench.fs, &speed.path, &TableOpenOptions::default())?;
    let lookups = bench.read_random(&uncached, "readrandom_nocache")?;
    report_lookups(&mut report, "readrandom_nocache", &lookups, None)?;
    drop((table, uncached));

    bench.sizes(&mut report, &speed)?;
    report.finish()
}

impl Bench {
    fn new(args: &SstBenchArgs) -> Result<Self, Failure> {
        let invalid = |m: String| Err(Failure::Error(m));
        if args.key_size == 0 {
            return invalid("--key-size must be at least 1".into());
        }
        if args.num == 0 {
            return invalid("--num must be at least 1".into());
        }
        if args.num > MAX_SEQNO {
            return invalid(format!("--num {} exceeds the largest seqno", args.num));
        }
        if !(0.0..=1.0).contains(&args.compression_ratio) {
            return invalid(format!(
                "--compression-ratio {} must be between 0 and 1",
                args.compression_ratio
            ));
        }
        if !(args.seconds.is_finite() && args.seconds > 0.0) {
            return invalid(format!("--seconds {} must be positive", args.seconds));
        }
        let compression = match Compression::from_name(&args.compression) {
            Some(Compression::ZstdDict) => {
                return invalid(
                    "--compression zstd-dict needs a dictionary trained on a written table; \
                     it is measured in the size phase (size_zstd_dict)"
                        .into(),
                )
            }
            Some(c) => c,
            None => {
                return invalid(format!(
                    "unknown --compression {:?}; use none, snappy, zlib, lz4 or zstd",
                    args.compression
                ))
            }
        };
        let keys = KeyGenerator::new(args.key_size);
        let beyond = args.absent - args.absent / 2;
        if args
            .num
            .checked_add(beyond)
            .is_none_or(|end| end > keys.capacity())
        {
            return invalid(format!(
                "{}-byte keys give {} distinct keys, fewer than --num {} plus {beyond} absent \
                 ones; use a larger --key-size",
                args.key_size,
                keys.capacity(),
                args.num
            ));
        }
        let fs = OsFs::new();
        fs.create_dir_all(&args.dir)?;
        Ok(Bench {
            fs,
            dir: args.dir.clone(),
            num: args.num,
            reads: args.reads.unwrap_or(args.num),
            keys,
            values: ValueGenerator::new(args.value_size, args.compression_ratio),
            value_size: args.value_size,
            compression_ratio: args.compression_ratio,
            block_size: args.block_size,
            bloom_bits: args.bloom_bits,
            compression,
            cache_size: args.cache_size,
            cap: Duration::from_secs_f64(args.seconds),
            absent: args.absent,
            seed: args.seed,
            keep_tables: args.keep_tables,
        })
    }

    /// User key + value bytes of the whole table.
    fn raw_bytes(&self) -> u64 {
        self.num * (self.keys.key_size() + self.value_size) as u64
    }

    fn header(&self, report: &mut Report) -> Result<(), Failure> {
        let (key_size, value_size) = (self.keys.key_size(), self.value_size);
        let compressed_value = self.values_compressed_size();
        report.line(&format!("Keys:        {key_size} bytes each"))?;
        report.line(&format!(
            "Values:      {value_size} bytes each ({compressed_value} bytes after compression)"
        ))?;
        report.line(&format!("Entries:     {}", self.num))?;
        report.line(&format!(
            "RawSize:     {:.1} MB (user keys + values; MB = 1048576 bytes)",
            self.raw_bytes() as f64 / MB
        ))?;
        report.line(&format!(
            "Table:       {} compression, {} byte blocks, bloom {} bits/key, {:.1} MB block cache",
            self.compression,
            self.block_size,
            self.bloom_bits,
            self.cache_size as f64 / MB
        ))?;
        report.line(&format!("Directory:   {}", self.dir.display()))?;
        report.line(&"-".repeat(48))?;
        report.set(
            "config",
            json!({
                "dir": self.dir.display().to_string(),
                "num": self.num,
                "reads": self.reads,
                "key_size": key_size,
                "value_size": value_size,
                "value_size_after_compression": compressed_value,
                "raw_bytes": self.raw_bytes(),
                "block_size": self.block_size,
                "bloom_bits": self.bloom_bits,
                "compression": self.compression.name(),
                "cache_size": self.cache_size,
                "seconds_cap": self.cap.as_secs_f64(),
                "absent": self.absent,
                "seed": self.seed,
                "mb_bytes": MB,
            }),
        );
        Ok(())
    }

    /// What `db_bench` prints as "bytes after compression": `value_size * ratio`, rounded.
    fn values_compressed_size(&self) -> u64 {
        // Rounding to the nearest byte is db_bench's `static_cast<int64_t>(x + 0.5)`.
        #[allow(clippy::cast_sign_loss)]
        let bytes = (self.value_size as f64 * self.compression_ratio + 0.5) as u64;
        bytes
    }

    fn path_for(&self, compression: Compression) -> PathBuf {
        self.dir.join(format!("bench-{}.sst", compression.name()))
    }

    fn writer_options(
        &self,
        compression: Compression,
        dictionary: Option<Arc<[u8]>>,
    ) -> WriterOptions {
        WriterOptions {
            block_size: self.block_size,
            compression,
            compression_dictionary: dictionary,
            filter_bits_per_key: self.bloom_bits,
            ..WriterOptions::default()
        }
    }

    /// Writes the benchmark data to `bench-<codec>.sst`.
    fn write_table(
        &self,
        compression: Compression,
        dictionary: Option<Arc<[u8]>>,
    ) -> Result<Written, Failure> {
        let path = self.path_for(compression);
        let bar = progress(self.num, &format!("write {}", compression.name()));
        let options = self.writer_options(compression, dictionary);
        let start = Instant::now();
        let mut writer = TableWriter::create(&self.fs, &path, options)?;
        let mut key = Vec::with_capacity(self.keys.key_size());
        for index in 0..self.num {
            self.keys.key_into(index, &mut key);
            writer.add_entry(&key, index + 1, ValueKind::Value, self.values.value(index))?;
            if index % PROGRESS_STEP == 0 {
                bar.set_position(index);
            }
        }
        let (file_size, properties) = writer.finish()?;
        let elapsed = start.elapsed();
        bar.finish_and_clear();
        Ok(Written {
            path,
            file_size,
            elapsed,
            num_data_blocks: properties.num_data_blocks,
        })
    }

    fn write_mb_per_sec(&self, written: &Written) -> f64 {
        rate(self.raw_bytes() as f64 / MB, written.elapsed)
    }

    fn report_write(&self, report: &mut Report, written: &Written) -> Result<(), Failure> {
        let micros = per_op_micros(written.elapsed, self.num);
        let ops = rate(self.num as f64, written.elapsed);
        let mbps = self.write_mb_per_sec(written);
        report.measure("write", &format!(
            "{micros:>11.3} micros/op {ops:.0} ops/sec; {mbps:>7.1} MB/s ({} entries, {}, fdatasync included)",
            self.num, self.compression
        ))?;
        report.measure(
            "file_size",
            &format!(
                "{} bytes, {:.3} of raw, {} data blocks ({})",
                written.file_size,
                written.file_size as f64 / self.raw_bytes() as f64,
                written.num_data_blocks,
                written.path.display()
            ),
        )?;
        report.set(
            "write",
            json!({
                "entries": self.num,
                "compression": self.compression.name(),
                "seconds": written.elapsed.as_secs_f64(),
                "micros_per_op": micros,
                "ops_per_sec": ops,
                "mb_per_sec": mbps,
                "file": written.path.display().to_string(),
                "file_size": written.file_size,
                "ratio": written.file_size as f64 / self.raw_bytes() as f64,
                "num_data_blocks": written.num_data_blocks,
            }),
        );
        Ok(())
    }

    /// Counts bloom filter false positives over keys that are certainly not in the table.
    fn bloom(&self, report: &mut Report, table: &Arc<Table>) -> Result<(), Failure> {
        let (filter, _) = table.filter_stats();
        let Some(filter) = filter else {
            report.measure("bloom_fp", "no filter in the table (--bloom-bits 0)")?;
            report.set("bloom", Value::Null);
            return Ok(());
        };
        let bar = progress(self.absent, "bloom filter");
        let beyond = self.absent - self.absent / 2;
        let dotted = self.absent / 2;
        let start = Instant::now();
        let mut key = Vec::with_capacity(self.keys.key_size() + 1);
        let mut beyond_fp = 0u64;
        for i in 0..beyond {
            self.keys.key_into(self.num + i, &mut key);
            beyond_fp += u64::from(table.may_contain(&key));
            if i % PROGRESS_STEP == 0 {
                bar.set_position(i);
            }
        }
        let mut dotted_fp = 0u64;
        for i in 0..dotted {
            // Every existing key + ".", then + ".1", ".2", ... so no key is checked twice.
            self.keys.key_into(i % self.num, &mut key);
            key.push(b'.');
            let pass = i / self.num;
            if pass > 0 {
                key.extend_from_slice(pass.to_string().as_bytes());
            }
            dotted_fp += u64::from(table.may_contain(&key));
            if i % PROGRESS_STEP == 0 {
                bar.set_position(beyond + i);
            }
        }
        let elapsed = start.elapsed();
        bar.finish_and_clear();
        let positives = beyond_fp + dotted_fp;
        let fraction = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 / of as f64 };
        let measured = fraction(positives, self.absent);
        let keys = table.properties().num_entries;
        let estimate = estimated_false_positive_rate(filter.num_bits, filter.num_probes, keys);
        report.measure(
            "bloom_fp",
            &format!(
                "{:.4}% ({positives} of {} absent keys)",
                measured * 100.0,
                self.absent
            ),
        )?;
        report.measure("bloom_fp_by_shape", &format!(
            "{:.4}% ({beyond_fp} of {beyond} keys past the end), {:.4}% ({dotted_fp} of {dotted} existing keys + \".\")",
            fraction(beyond_fp, beyond) * 100.0,
            fraction(dotted_fp, dotted) * 100.0,
        ))?;
        report.measure(
            "bloom_fp_estimate",
            &format!(
            "{:.4}% = (1-e^(-kn/m))^k with k={} probes, n={keys} keys, m={} bits ({:.2} bits/key)",
            estimate * 100.0,
            filter.num_probes,
            filter.num_bits,
            fraction(filter.num_bits, keys),
        ),
        )?;
        report.set(
            "bloom",
            json!({
                "absent": self.absent,
                "false_positives": positives,
                "rate": measured,
                "estimated_rate": estimate,
                "bits": filter.num_bits,
                "probes": filter.num_probes,
                "filter_bytes": filter.size_bytes,
                "keys": keys,
                "seconds": elapsed.as_secs_f64(),
                "by_shape": {
                    "past_end": { "absent": beyond, "false_positives": beyond_fp },
                    "dot_suffix": { "absent": dotted, "false_positives": dotted_fp },
                },
            }),
        );
        Ok(())
    }

    /// Random point lookups of existing keys, each checked, until `reads` or the time cap.
    fn read_random(&self, table: &Arc<Table>, name: &str) -> Result<ReadPhase, Failure> {
        let bar = progress(self.reads, name);
        let mut rng = SmallRng::seed_from_u64(self.seed);
        let mut latency = Histogram::new();
        let mut key = Vec::with_capacity(self.keys.key_size());
        let (mut ops, mut mismatches) = (0u64, 0u64);
        let mut first_mismatch = None;
        let mut capped = false;
        let start = Instant::now();
        while ops < self.reads {
            let index = rng.gen_range(0..self.num);
            self.keys.key_into(index, &mut key);
            let before = Instant::now();
            let found = table.get(&key, MAX_SEQNO)?;
            let after = Instant::now();
            latency.record(after.duration_since(before).as_nanos() as u64);
            let right = found.as_ref().is_some_and(|r| {
                r.kind == ValueKind::Value
                    && r.seqno == index + 1
                    && r.value == self.values.value(index)
            });
            if !right {
                mismatches += 1;
                if first_mismatch.is_none() {
                    first_mismatch = Some(format!(
                        "key {} (index {index}) gave {}",
                        shale_sst::printable(&key),
                        found.map_or("nothing".to_owned(), |r| format!(
                            "{} seqno {} value {}",
                            r.kind.name(),
                            r.seqno,
                            shale_sst::printable(&r.value)
                        ))
                    ));
                }
            }
            ops += 1;
            if ops % PROGRESS_STEP == 0 {
                bar.set_position(ops);
            }
            if after.duration_since(start) >= self.cap {
                capped = ops < self.reads;
                break;
            }
        }
        let elapsed = start.elapsed();
        bar.finish_and_clear();
        Ok(ReadPhase {
            ops,
            elapsed,
            latency: Some(latency),
            bytes: 0,
            mismatches,
            first_mismatch,
            capped,
        })
    }

    /// One full iteration of the table, forward or backward, stopping at the time cap.
    fn scan(&self, table: &Arc<Table>, name: &str, forward: bool) -> Result<ReadPhase, Failure> {
        let bar = progress(self.num, name);
        let mut iter = table.iter(ReadOptions::default());
        let (mut ops, mut bytes) = (0u64, 0u64);
        let mut capped = false;
        let start = Instant::now();
        if forward {
            iter.seek_to_first();
        } else {
            iter.seek_to_last();
        }
        while iter.valid() {
            bytes += (iter.user_key().len() + iter.value().len()) as u64;
            ops += 1;
            if ops % PROGRESS_STEP == 0 {
                bar.set_position(ops);
                if start.elapsed() >= self.cap {
                    capped = true;
                    break;
                }
            }
            if forward {
                iter.next();
            } else {
                iter.prev();
            }
        }
        let elapsed = start.elapsed();
        bar.finish_and_clear();
        iter.status()?;
        Ok(ReadPhase {
            ops,
            elapsed,
            latency: None,
            bytes,
            mismatches: 0,
            first_mismatch: None,
            capped,
        })
    }

    /// A scan that ran to the end must have seen every entry and every byte written.
    fn check_scan(&self, name: &str, phase: &ReadPhase) -> Result<(), Failure> {
        if !phase.capped && (phase.ops != self.num || phase.bytes != self.raw_bytes()) {
            return Err(Failure::error(format!(
                "{name}: iterated {} entries of {} bytes, but {} entries of {} bytes were written",
                phase.ops,
                phase.bytes,
                self.num,
                self.raw_bytes()
            )));
        }
        Ok(())
    }

    /// Writes the data with every codec and reports sizes; reuses the speed table for its own.
    fn sizes(&self, report: &mut Report, speed: &Written) -> Result<(), Failure> {
        let codecs = [
            (Compression::None, false),
            (Compression::Lz4, false),
            (Compression::Snappy, false),
            (Compression::Zstd, false),
            (Compression::Zlib, true),
            (Compression::ZstdDict, true),
        ];
        let mut results = Vec::new();
        let mut written_paths = Vec::new();
        let mut uncompressed: Option<PathBuf> = None;
        for (codec, extra) in codecs {
            let mut note = String::new();
            let mut dictionary_json = Value::Null;
            let written = if codec == self.compression {
                note.push_str(", the speed table");
                Written {
                    path: speed.path.clone(),
                    file_size: speed.file_size,
                    elapsed: speed.elapsed,
                    num_data_blocks: speed.num_data_blocks,
                }
            } else if codec == Compression::ZstdDict {
                let Some(source) = uncompressed.as_deref() else {
                    continue;
                };
                let bar = spinner("training zstd dictionary");
                let trained = self.train_dictionary(source);
                bar.finish_and_clear();
                let (dictionary, samples, elapsed) = match trained {
                    Ok(t) => t,
                    Err(reason) => {
                        report.measure("size_zstd_dict", &format!("skipped: {reason} (extra)"))?;
                        results.push(json!({
                            "compression": codec.name(),
                            "extra": true,
                            "skipped": reason,
                        }));
                        continue;
                    }
                };
                note = format!(
                    ", {}-byte dictionary from {samples} sampled blocks, trained in {:.3} s",
                    dictionary.len(),
                    elapsed.as_secs_f64()
                );
                dictionary_json = json!({
                    "bytes": dictionary.len(),
                    "samples": samples,
                    "train_seconds": elapsed.as_secs_f64(),
                });
                let written = self.write_table(codec, Some(dictionary.into()))?;
                written_paths.push(written.path.clone());
                written
            } else {
                let written = self.write_table(codec, None)?;
                written_paths.push(written.path.clone());
                written
            };
            if codec == Compression::None {
                uncompressed = Some(written.path.clone());
            }
            let ratio = written.file_size as f64 / self.raw_bytes() as f64;
            let mbps = self.write_mb_per_sec(&written);
            let name = format!("size_{}", codec.name().replace('-', "_"));
            let extra_mark = if extra { " (extra)" } else { "" };
            report.measure(
                &name,
                &format!(
                    "{:>11} bytes, {ratio:.3} of raw; write {mbps:>7.1} MB/s{note}{extra_mark}",
                    written.file_size
                ),
            )?;
            results.push(json!({
                "compression": codec.name(),
                "extra": extra,
                "file_size": written.file_size,
                "ratio": ratio,
                "write_seconds": written.elapsed.as_secs_f64(),
                "write_mb_per_sec": mbps,
                "num_data_blocks": written.num_data_blocks,
                "dictionary": dictionary_json,
                "kept": self.keep_tables || written.path == speed.path,
                "file": written.path.display().to_string(),
            }));
        }
        report.set("sizes", Value::Array(results));
        if !self.keep_tables {
            for path in written_paths {
                self.fs.remove(&path)?;
            }
        }
        Ok(())
    }

    /// Trains a dictionary on up to [`DICTIONARY_SAMPLES`] data blocks spread evenly over the
    /// uncompressed table at `path`. Returns the dictionary, the samples used and the time.
    fn train_dictionary(&self, path: &Path) -> Result<(Vec<u8>, usize, Duration), String> {
        let table =
            Table::open(&self.fs, path, &TableOpenOptions::default()).map_err(|e| e.to_string())?;
        let layout = table.layout().map_err(|e| e.to_string())?;
        let data: Vec<_> = layout
            .blocks
            .iter()
            .filter(|b| b.kind == BlockKind::Data && b.compression == Compression::None.tag())
            .collect();
        let count = data.len().min(DICTIONARY_SAMPLES);
        if count == 0 {
            return Err("the uncompressed table has no data blocks".into());
        }
        let file = self.fs.open_read(path).map_err(|e| e.to_string())?;
        let mut samples = Vec::with_capacity(count);
        for i in 0..count {
            let block = data[i * data.len() / count];
            let mut bytes = vec![0u8; block.handle.size as usize];
            file.read_exact_at(block.handle.offset, &mut bytes)
                .map_err(|e| e.to_string())?;
            samples.push(bytes);
        }
        let refs: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
        let start = Instant::now();
        let dictionary =
            shale_sst::train_zstd_dictionary(&refs, DICTIONARY_SIZE).map_err(|e| e.to_string())?;
        Ok((dictionary, count, start.elapsed()))
    }
}

fn report_lookups(
    report: &mut Report,
    name: &str,
    phase: &ReadPhase,
    cache_misses: Option<u64>,
) -> Result<(), Failure> {
    let latency = phase
        .latency
        .as_ref()
        .map_or_else(Histogram::new, Clone::clone);
    let (p50, p99) = (
        latency.percentile(50.0) / 1000.0,
        latency.percentile(99.0) / 1000.0,
    );
    let misses = cache_misses.map_or(String::new(), |m| format!(", {m} cache misses"));
    let capped = if phase.capped {
        ", time cap reached"
    } else {
        ""
    };
    report.measure(
        name,
        &format!(
            "{:>11.3} micros/op {:.0} ops/sec; get p50 {p50:.3} p99 {p99:.3} max {:.3} micros \
         ({} of {} found right{misses}{capped})",
            phase.micros_per_op(),
            phase.ops_per_sec(),
            latency.max() as f64 / 1000.0,
            phase.ops - phase.mismatches,
            phase.ops,
        ),
    )?;
    report.set(
        name,
        json!({
            "ops": phase.ops,
            "seconds": phase.elapsed.as_secs_f64(),
            "micros_per_op": phase.micros_per_op(),
            "ops_per_sec": phase.ops_per_sec(),
            "p50_micros": p50,
            "p99_micros": p99,
            "mean_micros": latency.mean() / 1000.0,
            "max_micros": latency.max() as f64 / 1000.0,
            "latency_samples": latency.count(),
            "found_right": phase.ops - phase.mismatches,
            "mismatches": phase.mismatches,
            "cache_misses": cache_misses,
            "capped": phase.capped,
        }),
    );
    if phase.mismatches > 0 {
        return Err(Failure::error(format!(
            "{name}: {} of {} lookups did not return the value written; first: {}",
            phase.mismatches,
            phase.ops,
            phase.first_mismatch.as_deref().unwrap_or("?")
        )));
    }
    Ok(())
}

fn report_scan(report: &mut Report, name: &str, phase: &ReadPhase) -> Result<(), Failure> {
    let mbps = rate(phase.bytes as f64 / MB, phase.elapsed);
    let capped = if phase.capped {
        " (time cap reached)"
    } else {
        ""
    };
    report.measure(
        name,
        &format!(
            "{:>11.3} micros/op {:.0} ops/sec; {mbps:>7.1} MB/s ({} entries{capped})",
            phase.micros_per_op(),
            phase.ops_per_sec(),
            phase.ops
        ),
    )?;
    report.set(
        name,
        json!({
            "entries": phase.ops,
            "bytes": phase.bytes,
            "seconds": phase.elapsed.as_secs_f64(),
            "micros_per_op": phase.micros_per_op(),
            "ops_per_sec": phase.ops_per_sec(),
            "mb_per_sec": mbps,
            "capped": phase.capped,
        }),
    );
    Ok(())
}
