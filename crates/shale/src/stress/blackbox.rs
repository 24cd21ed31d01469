//! Blackbox mode: the driver runs `shale stress --worker` processes on a real directory,
//! kills each with SIGKILL after a random delay, then reopens the database itself and checks
//! every key against the expected-state file the worker kept (ARCHITECTURE.md invariant 5:
//! under `Sync` and `Flush` a process kill loses no acknowledged write; under `Buffered` it
//! may lose the writes acknowledged since the killed thread's last `Sync` write).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{Db, Durability};
use shale_fs::OsFs;

use super::expected::{ExpectedState, Shape};
use super::keys::KEYSPACES;
use super::option_set::OptionSet;
use super::verify::{check, settle, Settled};
use super::workload::Workload;
use super::StressArgs;
use crate::output::Failure;

fn expected_path(args: &StressArgs, db: &Path) -> PathBuf {
    args.expected
        .clone()
        // `components` drops a trailing slash, so `DIR/` still puts the file beside DIR.
        .unwrap_or_else(|| {
            PathBuf::from(format!("{}.expected", db.components().as_path().display()))
        })
}

fn db_dir(args: &StressArgs) -> Result<&Path, String> {
    args.db
        .as_deref()
        .ok_or_else(|| "--db=DIR is required".to_owned())
}

/// Runs the driver: `args.kills` kill-and-verify cycles.
pub fn run_driver(
    args: &StressArgs,
    seed: u64,
    durability: Option<Durability>,
) -> Result<(), Failure> {
    let dir = db_dir(args).map_err(Failure::Error)?;
    let expected = expected_path(args, dir);
    let state = if expected.exists() {
        let state = ExpectedState::open(&expected).map_err(Failure::Corruption)?;
        if args.seed.is_some_and(|s| s != state.shape().seed) {
            return Err(Failure::error(format!(
                "{} belongs to seed {}, not --seed {seed}; remove the database and it to start over",
                expected.display(),
                state.shape().seed
            )));
        }
        eprintln!(
            "stress: resuming {} with {}",
            dir.display(),
            expected.display()
        );
        state
    } else {
        if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
            return Err(Failure::error(format!(
                "{} holds files but {} does not exist; give an empty directory (or --expected)",
                dir.display(),
                expected.display()
            )));
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::error(format!("creating {}: {e}", dir.display())))?;
        let shape = Shape {
            seed,
            threads: args.threads,
            keys_per_thread: args.keys_per_thread,
            keyspaces: KEYSPACES.len(),
            durability,
        };
        ExpectedState::create(&expected, shape).map_err(Failure::Error)?
    };
    let shape = state.shape();
    let options = OptionSet::from_seed(shape.seed, shape.durability);
    let describe = format!(
        "seed {} threads {} keys-per-thread {} options: {options}",
        shape.seed, shape.threads, shape.keys_per_thread
    );
    println!("stress blackbox: {describe}");
    let started = Instant::now();
    let mut total = verify_and_settle(dir, &expected, &options, "before the first worker")
        .map_err(|e| Failure::Error(format!("{e}\n  {describe}")))?;
    let mut rng = SmallRng::seed_from_u64(shape.seed ^ 0xD21_7E2);
    let mut exited = 0;
    for cycle in 0..args.kills {
        let delay = Duration::from_millis(rng.gen_range(args.min_delay_ms..=args.max_delay_ms));
        let killed = run_cycle(dir, &expected, cycle, delay)
            .map_err(|e| Failure::Error(format!("{e}\n  {describe}")))?;
        exited += u64::from(!killed);
        let settled = verify_and_settle(dir, &expected, &options, &format!("after kill {}", cycle + 1))
            .map_err(|e| Failure::Error(format!("{e}\n  {describe}\n  reproduce the option set with: shale stress --blackbox --db=NEW_DIR --seed={}", shape.seed)))?;
        total.pending_applied += settled.pending_applied;
        total.pending_lost += settled.pending_lost;
        total.suffix_lost += settled.suffix_lost;
    }
    println!(
        "stress blackbox: {} cycles ({} killed, {exited} ended on their own) verified in {:.1} s; \
         in-flight writes found applied {} / not applied {}; acknowledged writes lost within the \
         durability bound {} ({})",
        args.kills,
        args.kills - exited,
        started.elapsed().as_secs_f64(),
        total.pending_applied,
        total.pending_lost,
        total.suffix_lost,
        options.durability.name()
    );
    Ok(())
}

/// Runs one worker for `delay`, then SIGKILLs it. Returns whether it was killed (rather than
/// ending on its own, which is only fine with exit status 0).
fn run_cycle(dir: &Path, expected: &Path, cycle: u64, delay: Duration) -> Result<bool, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding the shale binary: {e}"))?;
    let mut child = Command::new(exe)
        .arg("stress")
        .arg("--worker")
        .arg(format!("--db={}", dir.display()))
        .arg(format!("--expected={}", expected.display()))
        .arg(format!("--cycle={cycle}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting worker {cycle}: {e}"))?;
    let deadline = Instant::now() + delay;
    let mut status = None;
    while Instant::now() < deadline {
        if let Some(s) = child
            .try_wait()
            .map_err(|e| format!("waiting for worker {cycle}: {e}"))?
        {
            status = Some(s);
            break;
        }
        thread::sleep(
            Duration::from_millis(2).min(deadline.saturating_duration_since(Instant::now())),
        );
    }
    let killed = status.is_none();
    if killed {
        // Child::kill sends SIGKILL on Unix.
        child
            .kill()
            .map_err(|e| format!("killing worker {cycle}: {e}"))?;
        status = Some(
            child
                .wait()
                .map_err(|e| format!("waiting for worker {cycle}: {e}"))?,
        );
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    match status {
        Some(s) if !killed && !s.success() => Err(format!(
            "stress: worker of cycle {cycle} failed ({s}):\n{}",
            stderr.trim_end()
        )),
        _ => Ok(killed),
    }
}

/// Rereads the expected-state file (the worker changed it), opens the database, checks every
/// key, settles the expected state, closes.
fn verify_and_settle(
    dir: &Path,
    expected: &Path,
    options: &OptionSet,
    when: &str,
) -> Result<Settled, String> {
    let state = ExpectedState::open(expected)?;
    let shape = state.shape();
    let db = Db::open(dir, options.options(Arc::new(OsFs::new())))
        .map_err(|e| format!("stress: violation {when}: the database does not open: {e}"))?;
    for name in &KEYSPACES[..shape.keyspaces] {
        if db.keyspace(name).is_none() {
            db.create_keyspace(name, options.keyspace_options())
                .map_err(|e| format!("creating keyspace {name}: {e}"))?;
        }
    }
    let mut slots = state.snapshot();
    let found = check(&db, &shape, &slots).map_err(|v| format!("stress: violation {when}: {v}"))?;
    let per_thread = shape.keyspaces * shape.keys_per_thread;
    let settled = settle(&db, &shape, &mut slots, &found, |index, slot, marker| {
        state.lock(index / per_thread).set(index, slot, marker)
    })?;
    db.close()
        .map_err(|e| format!("closing after verification: {e}"))?;
    Ok(settled)
}

/// Runs a worker process: the workload on every thread until killed (or `worker_seconds`).
pub fn run_worker(args: &StressArgs) -> Result<(), String> {
    let dir = db_dir(args)?;
    let mut state = ExpectedState::open(&expected_path(args, dir))?;
    let shape = state.shape();
    let options = OptionSet::from_seed(shape.seed, shape.durability);
    state.set_sync_pending(options.durability == Durability::Sync);
    let db = Db::open(dir, options.options(Arc::new(OsFs::new())))
        .map_err(|e| format!("opening {}: {e}", dir.display()))?;
    let stop = AtomicBool::new(false);
    let operations = AtomicU64::new(0);
    let workload = Workload {
        db: &db,
        state: &state,
        durability: options.durability,
        durable_at_ack: options.durability != Durability::Buffered,
        stop: &stop,
        operations: &operations,
    };
    let seed = shape.seed ^ args.cycle.wrapping_mul(0x2545_F491_4F6C_DD1D);
    let result = thread::scope(|scope| {
        let handles: Vec<_> = (0..shape.threads)
            .map(|t| {
                let workload = &workload;
                let stop = &stop;
                scope.spawn(move || {
                    let result = workload.run_thread(t, seed);
                    stop.store(true, Ordering::Relaxed);
                    result
                })
            })
            .collect();
        let end = Instant::now() + Duration::from_secs(args.worker_seconds);
        while !stop.load(Ordering::Relaxed) && Instant::now() < end {
            thread::sleep(Duration::from_millis(10));
        }
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a worker thread panicked".to_owned()))
            })
            .collect::<Result<Vec<()>, String>>()
    });
    result?;
    db.close().map_err(|e| format!("closing: {e}"))
}
