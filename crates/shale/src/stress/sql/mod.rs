//! `shale stress sql`: crash-tests `shale serve` through the MySQL protocol
//! (docs/reliability.md, "The server"). It starts the server on 127.0.0.1 (a free port, its
//! own data directory), runs the bank workload ([`bank`]) from several client threads,
//! SIGKILLs the server by its PID at a random moment of each round, restarts it and verifies
//! the bank against what the clients were told. With `--ddl`, each round also runs one DDL
//! statement on a table under writes and the kill lands while it runs ([`ddl`]).

mod bank;
mod ddl;
mod server;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use rand::rngs::SmallRng;
use rand::{Rng as _, SeedableRng as _};

use crate::output::Failure;
use bank::Bank;
use server::{ServerProcess, ServerSpec};

/// Flags of `shale stress sql`.
#[derive(Debug, Args)]
pub struct SqlStressArgs {
    /// How many times the server is killed with SIGKILL (and restarted and verified).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub kills: u64,
    /// Client threads making transfers.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub clients: u64,
    /// Longest time clients run before the kill (each round draws a moment up to this).
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
    pub seconds_per_round: f64,
    /// Seed of the kill moments and the transfers (default: from the clock; always printed).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// The server's durability: sync, flush or buffered (`shale serve --durability`).
    #[arg(long, value_name = "MODE", default_value = "sync")]
    pub durability: String,
    /// The server's isolation level (`shale serve --transaction-isolation`).
    #[arg(long, value_name = "LEVEL", default_value = "REPEATABLE-READ")]
    pub transaction_isolation: String,
    /// Accounts in the bank.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub accounts: i64,
    /// Percent of transfers rolled back on purpose instead of committed.
    #[arg(long, value_name = "PERCENT", default_value_t = 10)]
    pub rollback_percent: u32,
    /// Also run DDL (CREATE INDEX, DROP INDEX, TRUNCATE, DROP TABLE) on a table under writes
    /// and kill the server while it runs.
    #[arg(long)]
    pub ddl: bool,
    /// The data directory (must not exist; kept afterwards). Default: a fresh one under the
    /// temporary directory, removed after a run that passes.
    #[arg(long, value_name = "DIR")]
    pub datadir: Option<PathBuf>,
}

/// Runs `shale stress sql`.
pub fn run(args: &SqlStressArgs) -> Result<(), Failure> {
    if !["sync", "flush", "buffered"].contains(&args.durability.as_str()) {
        return Err(Failure::error(
            "--durability must be sync, flush or buffered",
        ));
    }
    if args.clients == 0 || args.clients > 256 || args.accounts < 2 || args.rollback_percent > 100 {
        return Err(Failure::error(
            "--clients must be 1 to 256, --accounts at least 2, --rollback-percent at most 100",
        ));
    }
    if !(args.seconds_per_round > 0.0 && args.seconds_per_round <= 3600.0) {
        return Err(Failure::error(
            "--seconds-per-round must be above 0 and at most 3600",
        ));
    }
    let seed = args.seed.unwrap_or_else(super::clock_seed);
    let keep_datadir = args.datadir.is_some();
    let datadir = args
        .datadir
        .clone()
        .unwrap_or_else(|| server::default_datadir(seed));
    if !server::is_fresh(&datadir) {
        return Err(Failure::error(format!(
            "{} exists; shale stress sql needs a fresh data directory",
            datadir.display()
        )));
    }
    println!(
        "shale stress sql: seed {seed}, {} kills, {} clients, durability {}, {}, datadir {}",
        args.kills,
        args.clients,
        args.durability,
        args.transaction_isolation,
        datadir.display()
    );
    let spec = ServerSpec {
        datadir: datadir.clone(),
        durability: args.durability.clone(),
        isolation: args.transaction_isolation.clone(),
    };
    let result = run_rounds(args, seed, &spec);
    match result {
        Ok(()) => {
            if !keep_datadir {
                let _ = std::fs::remove_dir_all(&datadir);
            }
            Ok(())
        }
        Err(e) => Err(Failure::error(format!(
            "shale stress sql FAILED (seed {seed}, datadir {} kept): {e}",
            datadir.display()
        ))),
    }
}

fn run_rounds(args: &SqlStressArgs, seed: u64, spec: &ServerSpec) -> Result<(), String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut bank = Bank::new(args.accounts, args.durability == "buffered");
    let mut ddl = args.ddl.then(ddl::DdlTable::new);
    let started = Instant::now();
    let mut server = ServerProcess::start(spec)?;
    {
        let mut conn = server.connect("").map_err(|e| format!("connecting: {e}"))?;
        bank.create(&mut conn)?;
        if let Some(ddl) = &mut ddl {
            ddl.create(&mut conn)?;
        }
    }
    let mut totals = bank::RoundCounts::default();
    let mut verified = bank::VerifyReport::default();
    let mut ddl_totals = ddl::DdlCounts::default();
    let mut killed_at = None;
    for round in 0..=args.kills {
        let mut conn = server
            .connect(bank::DATABASE)
            .map_err(|e| format!("round {round}: connecting after restart: {e}"))?;
        let report = bank
            .verify(&mut conn, killed_at)
            .map_err(|e| format!("round {round}: {e}"))?;
        if let Some(ddl) = &mut ddl {
            ddl.verify(&mut conn)
                .map_err(|e| format!("round {round}: DDL table: {e}"))?;
        }
        drop(conn);
        verified.unknown_present += report.unknown_present;
        verified.unknown_absent += report.unknown_absent;
        verified.lost += report.lost;
        verified.lost_window = verified.lost_window.max(report.lost_window);
        verified.ledger_rows = report.ledger_rows;
        if round == args.kills {
            break;
        }
        killed_at = Some(load_and_kill(
            args,
            round,
            &mut rng,
            server,
            &mut bank,
            ddl.as_mut(),
            &mut totals,
            &mut ddl_totals,
        )?);
        server = ServerProcess::start(spec)?;
        if (round + 1) % 10 == 0 || round + 1 == args.kills {
            println!(
                "  {} kills: {} committed, {} aborted ({} refused), {} unknown; ledger {} rows ({:.0}s)",
                round + 1,
                totals.committed,
                totals.aborted,
                totals.refused,
                totals.unknown,
                verified.ledger_rows,
                started.elapsed().as_secs_f64()
            );
        }
    }
    server.kill()?;
    println!(
        "shale stress sql: PASSED: {} kills survived; {} transfers acknowledged, {} aborted \
         ({} refused by the server), {} unknown at a kill ({} found committed, {} absent); \
         {} acknowledged lost (longest {} ms before the kill); {:.1}s",
        args.kills,
        totals.committed,
        totals.aborted,
        totals.refused,
        totals.unknown,
        verified.unknown_present,
        verified.unknown_absent,
        verified.lost,
        verified.lost_window.as_millis(),
        started.elapsed().as_secs_f64()
    );
    if ddl.is_some() {
        println!("shale stress sql: DDL: {ddl_totals}");
    }
    Ok(())
}

/// One round's load: the clients (and the DDL thread) run until a random moment up to
/// --seconds-per-round, when `server` is killed; their records are added to `bank`.
/// Returns the moment of the kill.
#[allow(clippy::too_many_arguments)]
fn load_and_kill(
    args: &SqlStressArgs,
    round: u64,
    rng: &mut SmallRng,
    server: ServerProcess,
    bank: &mut Bank,
    ddl: Option<&mut ddl::DdlTable>,
    totals: &mut bank::RoundCounts,
    ddl_totals: &mut ddl::DdlCounts,
) -> Result<Instant, String> {
    let run_for = Duration::from_secs_f64(rng.gen_range(0.0..args.seconds_per_round));
    let stop = AtomicBool::new(false);
    let port = server.port;
    let mut killed_at = Instant::now();
    let (transfers, ddl_counts) = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..args.clients)
            .map(|client| {
                let stop = &stop;
                let first_id = (round << 40) | (client << 30);
                let client_seed = rng.gen();
                scope.spawn(move || {
                    bank::run_client(
                        port,
                        args.accounts,
                        args.rollback_percent,
                        first_id,
                        client_seed,
                        stop,
                    )
                })
            })
            .collect();
        let ddl_worker = ddl.map(|d| {
            let stop = &stop;
            let ddl_seed = rng.gen();
            scope.spawn(move || d.run_round(port, ddl_seed, stop))
        });
        std::thread::sleep(run_for);
        killed_at = Instant::now();
        let kill_result = server.kill();
        stop.store(true, Ordering::Relaxed);
        let transfers: Vec<_> = clients
            .into_iter()
            .map(std::thread::ScopedJoinHandle::join)
            .collect();
        let ddl_counts = ddl_worker.map(std::thread::ScopedJoinHandle::join);
        (kill_result.map(|()| transfers), ddl_counts)
    });
    for (client_transfers, refused) in transfers?
        .into_iter()
        .map(|r| r.map_err(|_| "a client thread panicked".to_string()))
        .collect::<Result<Vec<_>, _>>()?
    {
        let counts = bank.record(client_transfers);
        totals.committed += counts.committed;
        totals.aborted += counts.aborted;
        totals.unknown += counts.unknown;
        totals.refused += refused;
    }
    if let Some(counts) = ddl_counts {
        let counts = counts.map_err(|_| "the DDL thread panicked".to_string())??;
        ddl_totals.add(&counts);
    }
    Ok(killed_at)
}
