//! The `shale` command: the MySQL-compatible server, inspection and DBA tools, benchmarks.
//!
//! This file holds the command-line definition and the dispatch only; each command lives in
//! its own module. Exit codes and output rules are in [`output`].

mod backup_cmd;
mod bench_db;
mod bench_report;
mod bench_sst;
mod histogram;
mod import;
mod keygen;
mod output;
mod serve;
mod sql;
mod stress;
mod tool_blob;
mod tool_checkpoint;
mod tool_db;
mod tool_ingest;
mod tool_manifest;
mod tool_ops;
mod tool_repair;
mod tool_sst;
mod tool_stats;
mod tool_verify;
mod tool_wal;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::output::Failure;

#[derive(Debug, Parser)]
#[command(
    name = "shale",
    version,
    about = "Shale LSM storage engine: MySQL-compatible server, tools and benchmarks"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process; boxing the large flag set would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect and check files.
    #[command(subcommand)]
    Tool(ToolCommand),
    /// Measure the engine with `db_bench`'s benchmarks and flags (`shale bench
    /// --benchmarks=fillseq,readrandom --num=1000000`), or a component (`shale bench sst`).
    Bench(BenchArgs),
    /// Randomized crash-and-verify stress test: worker processes killed with `SIGKILL` (`--blackbox
    /// --db=DIR --kills=N`) or in-memory crash images (`--crash-images=N`).
    Stress(stress::StressArgs),
    /// Incremental hot backups: create, list, verify, restore, purge.
    #[command(subcommand)]
    Backup(backup_cmd::BackupCommand),
    /// An in-process SQL shell over a data directory (like the mysql client, without a
    /// server): `shale sql -e "SHOW DATABASES"`, a pipe, or interactive.
    Sql(sql::SqlArgs),
    /// Load a mysqldump file or a CSV file into a data directory, bulk-loading empty
    /// tables: `shale import --datadir D dump.sql`, `shale import --datadir D --format csv
    /// --table db.t rows.csv`.
    Import(import::ImportArgs),
    // A later occurrence of an option wins: `--config FILE` options come first (serve::config).
    #[command(
        about = "Serve a data directory over the MySQL protocol (mariadb, PyMySQL, sysbench connect)",
        args_override_self = true
    )]
    Serve(serve::ServeArgs),
}

#[derive(Debug, Subcommand)]
enum ToolCommand {
    /// Show a sorted table file: properties, blocks, filter, entries; verify checksums.
    Sst(SstToolArgs),
    /// Print every record of write-ahead logs with the batch it carries; stop at damage.
    Wal(tool_wal::WalToolArgs),
    /// Show a blob file: header, records (key, offset, sizes, codec), footer; checks checksums.
    Blob(tool_blob::BlobToolArgs),
    /// Print the live MANIFEST's version edits and the shape they build.
    Manifest(tool_manifest::ManifestToolArgs),
    /// Print files and bytes per level per keyspace.
    Lsm(tool_manifest::LsmToolArgs),
    /// Read one key (opens the database).
    Get(tool_db::GetArgs),
    /// Write one key (opens the database).
    Put(tool_db::PutArgs),
    /// Delete one key (opens the database).
    Delete(tool_db::DeleteArgs),
    /// Print keys and values in order (opens the database).
    Scan(tool_db::ScanArgs),
    /// Check every checksum and structural invariant of a database directory.
    Verify(tool_verify::VerifyToolArgs),
    /// Make a consistent, openable copy of a database (hard links where possible).
    Checkpoint(tool_checkpoint::CheckpointArgs),
    /// Ingest external table files into a keyspace, atomically (opens the database).
    Ingest(tool_ingest::IngestToolArgs),
    /// Salvage a damaged database: rebuild the MANIFEST from readable tables and WALs, move
    /// unreadable files into lost/, report what was lost.
    Repair(tool_repair::RepairArgs),
    /// Per-level statistics from the tables' properties (entries, deletions, raw bytes,
    /// codecs, compression ratio), WAL and unreferenced bytes, space amplification.
    Stats(tool_stats::StatsToolArgs),
    #[command(flatten)]
    Ops(tool_ops::OpsCommand),
}

/// `shale bench`: `db_bench`'s flags, or a component subcommand.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
struct BenchArgs {
    #[command(subcommand)]
    command: Option<BenchCommand>,
    #[command(flatten)]
    db: bench_db::DbBenchArgs,
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Write a sorted table and measure writes, bloom filter, lookups, scans and compression.
    Sst(SstBenchArgs),
    /// Ratios of Shale to peer engines over result files (medians of repeated runs), and
    /// SVG charts of throughput per interval.
    Report(bench_report::BenchReportArgs),
}

/// Flags of `shale tool sst`.
// Each bool is an independent view flag on the command line; clap owns their meaning.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Args)]
pub struct SstToolArgs {
    /// The table file.
    pub file: PathBuf,
    /// Print the properties block (the default when no other view is asked for).
    #[arg(long)]
    pub properties: bool,
    /// Print every block: offset, size, raw size, kind, compression, checksum, entries, keys.
    /// Reads and checks the whole file.
    #[arg(long)]
    pub blocks: bool,
    /// Print entries in order (see --from, --to, --limit, --hex). Entries of tables the file
    /// describes (its `user.shale_table.*` properties) print as rows with named columns.
    #[arg(long)]
    pub scan: bool,
    /// With --scan: print every entry as key and value bytes, even where the file describes
    /// its table.
    #[arg(long, requires = "scan")]
    pub raw: bool,
    /// Show keys and values as hex, and read --from/--to as hex.
    #[arg(long)]
    pub hex: bool,
    /// Scan from this user key (inclusive); escaped like the output (`\xNN`), or hex with --hex.
    #[arg(long, value_name = "KEY", requires = "scan")]
    pub from: Option<String>,
    /// Scan up to this user key (exclusive); escaped like the output, or hex with --hex.
    #[arg(long, value_name = "KEY", requires = "scan")]
    pub to: Option<String>,
    /// Print at most N entries.
    #[arg(long, value_name = "N", requires = "scan")]
    pub limit: Option<u64>,
    /// Print the index: the table format version, whether separators are user keys, and each
    /// data block's separator, offset and size.
    #[arg(long)]
    pub index: bool,
    /// Print bloom filter statistics and the estimated false-positive rate.
    #[arg(long)]
    pub filter: bool,
    /// Check every block's checksum and the file's structure; exit 2 on corruption.
    #[arg(long)]
    pub verify: bool,
    /// Print what was asked for as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `shale bench sst`. Defaults follow `db_bench` (`RocksDB`) where it has the flag.
#[derive(Debug, Args)]
pub struct SstBenchArgs {
    /// Directory for the tables (created if missing).
    #[arg(long, value_name = "DIR", default_value = "shale-data")]
    pub dir: PathBuf,
    /// Entries in the table.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub num: u64,
    /// Random point lookups to run (default: --num), within --seconds.
    #[arg(long, value_name = "N")]
    pub reads: Option<u64>,
    /// Bytes per user key.
    #[arg(long, value_name = "BYTES", default_value_t = 16)]
    pub key_size: usize,
    /// Bytes per value.
    #[arg(long, value_name = "BYTES", default_value_t = 100)]
    pub value_size: usize,
    #[arg(
        long,
        value_name = "RATIO",
        default_value_t = 0.5,
        help = "How far generated values compress (db_bench's --compression_ratio)"
    )]
    pub compression_ratio: f64,
    /// Target uncompressed data block size.
    #[arg(long, value_name = "BYTES", default_value_t = 4096)]
    pub block_size: usize,
    /// Bloom filter bits per key (0: no filter).
    #[arg(long, value_name = "BITS", default_value_t = 10)]
    pub bloom_bits: u32,
    /// Compression of the table the speed phases read: none, snappy, zlib, lz4, zstd.
    #[arg(long, value_name = "CODEC", default_value = "lz4")]
    pub compression: String,
    /// Block cache capacity in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 256 << 20)]
    pub cache_size: usize,
    /// Time cap of each read phase, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    pub seconds: f64,
    /// Keys known to be absent to check against the bloom filter.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub absent: u64,
    /// Seed of the random key choice for lookups.
    #[arg(long, value_name = "N", default_value_t = 301)]
    pub seed: u64,
    /// Keep every table of the size phase, not only the speed table.
    #[arg(long)]
    pub keep_tables: bool,
    /// Print the results as one JSON object instead of text lines.
    #[arg(long)]
    pub json: bool,
}

fn main() -> ExitCode {
    let args = match serve::config::expand(std::env::args_os().collect()) {
        Ok(args) => args,
        Err(failure) => {
            let _ = writeln!(std::io::stderr(), "error: {failure}");
            return ExitCode::from(failure.exit_code());
        }
    };
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // Help and --version are not errors; bad usage exits 1 so that 2 means corruption.
            return ExitCode::from(u8::from(e.use_stderr()));
        }
    };
    let result = match &cli.command {
        Command::Tool(ToolCommand::Sst(args)) => tool_sst::run(args),
        Command::Tool(ToolCommand::Wal(args)) => tool_wal::run(args),
        Command::Tool(ToolCommand::Blob(args)) => tool_blob::run(args),
        Command::Tool(ToolCommand::Manifest(args)) => tool_manifest::run_manifest(args),
        Command::Tool(ToolCommand::Lsm(args)) => tool_manifest::run_lsm(args),
        Command::Tool(ToolCommand::Get(args)) => tool_db::run_get(args),
        Command::Tool(ToolCommand::Put(args)) => tool_db::run_put(args),
        Command::Tool(ToolCommand::Delete(args)) => tool_db::run_delete(args),
        Command::Tool(ToolCommand::Scan(args)) => tool_db::run_scan(args),
        Command::Tool(ToolCommand::Verify(args)) => tool_verify::run(args),
        Command::Tool(ToolCommand::Checkpoint(args)) => tool_checkpoint::run(args),
        Command::Tool(ToolCommand::Ingest(args)) => tool_ingest::run(args),
        Command::Tool(ToolCommand::Repair(args)) => tool_repair::run(args),
        Command::Tool(ToolCommand::Stats(args)) => tool_stats::run(args),
        Command::Tool(ToolCommand::Ops(command)) => tool_ops::run(command),
        Command::Backup(command) => backup_cmd::run(command),
        Command::Bench(BenchArgs {
            command: Some(BenchCommand::Sst(args)),
            ..
        }) => bench_sst::run(args),
        Command::Bench(BenchArgs {
            command: Some(BenchCommand::Report(args)),
            ..
        }) => bench_report::run(args),
        Command::Bench(BenchArgs { command: None, db }) => bench_db::run(db),
        Command::Stress(args) => stress::run(args),
        Command::Sql(args) => sql::run(args),
        Command::Import(args) => import::run(args),
        Command::Serve(args) => serve::run(args),
    };
    match result {
        Ok(()) | Err(Failure::BrokenPipe) => ExitCode::SUCCESS,
        Err(Failure::Reported) => ExitCode::from(Failure::Reported.exit_code()),
        Err(failure) => {
            let _ = std::io::stdout().flush();
            let _ = writeln!(std::io::stderr(), "error: {failure}");
            ExitCode::from(failure.exit_code())
        }
    }
}
