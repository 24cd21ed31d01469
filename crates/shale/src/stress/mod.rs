//! `shale stress`: a randomized multi-threaded workload checked against an expected state
//! after every crash (docs/reliability.md). Two modes:
//! - blackbox ([`blackbox`]): a driver runs worker processes on a real directory and kills
//!   them with SIGKILL at random moments, verifying the whole database after every kill;
//! - crash images ([`crash_images`]): in one process on `MemFs`, images of what a power cut
//!   would leave are taken at random sync points and each one is reopened and verified.
//!
//! Each run draws its engine options from its seed ([`option_set`]) and prints both, so
//! `--seed` reproduces the option set (the interleaving of threads is not reproducible).

mod blackbox;
mod crash_images;
mod expected;
mod keys;
mod option_set;
mod sql;
mod verify;
mod workload;

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::{Args, Subcommand};
use shale_engine::Durability;

use crate::output::Failure;

/// Flags of `shale stress`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct StressArgs {
    /// `shale stress sql`: the server under SIGKILL instead of the engine.
    #[command(subcommand)]
    pub mode: Option<StressMode>,
    /// Blackbox mode: run worker processes on --db and SIGKILL them --kills times.
    #[arg(long, requires = "db", conflicts_with = "crash_images")]
    pub blackbox: bool,
    /// Blackbox mode: worker processes to kill.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub kills: u64,
    /// Blackbox mode: the database directory (created; an existing one is resumed only with
    /// its expected-state file).
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// Blackbox mode: the expected-state file (default: DIR.expected beside the database).
    #[arg(long, value_name = "FILE")]
    pub expected: Option<PathBuf>,
    /// Crash-image mode: verify N images of an in-memory file system cut at sync points.
    #[arg(long, value_name = "N")]
    pub crash_images: Option<u64>,
    /// Seed of the option set and the workload (default: from the clock; always printed).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Force a durability (sync, flush, buffered) instead of the seed's.
    #[arg(long, value_name = "MODE")]
    pub durability: Option<String>,
    /// Worker threads.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub threads: usize,
    /// Keys each thread owns in each keyspace.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub keys_per_thread: usize,
    /// Blackbox mode: shortest time a worker runs before it is killed.
    #[arg(long, value_name = "MS", default_value_t = 20)]
    pub min_delay_ms: u64,
    /// Blackbox mode: longest time a worker runs before it is killed.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub max_delay_ms: u64,
    /// Internal: run as the worker process of a blackbox driver.
    #[arg(long, hide = true, requires = "db")]
    pub worker: bool,
    /// Internal: the worker's cycle number (varies its workload seed).
    #[arg(long, hide = true, default_value_t = 0)]
    pub cycle: u64,
    /// Internal: a worker that is not killed stops after this many seconds.
    #[arg(long, hide = true, default_value_t = 60)]
    pub worker_seconds: u64,
}

/// Subcommands of `shale stress`.
#[derive(Debug, Subcommand)]
pub enum StressMode {
    /// Crash-test `shale serve`: a bank workload through the MySQL protocol, the server
    /// killed with SIGKILL and restarted, every acknowledged COMMIT checked (docs/reliability.md).
    Sql(sql::SqlStressArgs),
}

/// A seed from the clock, for runs given none.
fn clock_seed() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

/// Runs `shale stress`.
pub fn run(args: &StressArgs) -> Result<(), Failure> {
    if let Some(StressMode::Sql(sql_args)) = &args.mode {
        return sql::run(sql_args);
    }
    let durability = match &args.durability {
        None => None,
        Some(name) => Some(Durability::from_name(name).ok_or_else(|| {
            Failure::error(format!(
                "--durability {name:?} is not one of sync, flush, buffered"
            ))
        })?),
    };
    if args.threads == 0
        || args.threads > 64
        || args.keys_per_thread == 0
        || args.keys_per_thread > 100_000
    {
        return Err(Failure::error(
            "--threads must be 1 to 64 and --keys-per-thread 1 to 100000",
        ));
    }
    if args.min_delay_ms > args.max_delay_ms {
        return Err(Failure::error("--min-delay-ms is above --max-delay-ms"));
    }
    let seed = args.seed.unwrap_or_else(clock_seed);
    if args.worker {
        blackbox::run_worker(args).map_err(Failure::Error)
    } else if args.blackbox {
        blackbox::run_driver(args, seed, durability)
    } else if let Some(images) = args.crash_images {
        crash_images::run(args, seed, durability, images)
    } else {
        Err(Failure::error(
            "choose a mode: --blackbox --db=DIR [--kills=N], or --crash-images=N",
        ))
    }
}
