//! Crash-image mode: the workload runs in this process on `MemFs`; at random sync points a
//! hook takes the image a power cut would leave (alternately dropping all unsynced bytes and
//! keeping a torn part of them), and the main thread reopens each image and checks every key.
//!
//! The hook runs on whichever thread synced, while other threads keep writing, so the
//! expected state is read twice: before the image (its floors: what was durable by then) and
//! after it (latest and pending ids: anything issued by then may be in the image). Per-key
//! ids only grow, so the union of the two windows is exact enough: nothing acknowledged as
//! durable before the cut may be missing, nothing not yet issued may be present.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use shale_engine::{Db, Durability};
use shale_fs::{CrashMode, FileSystem, MemFs};

use super::expected::{ExpectedState, Shape, Slot};
use super::keys::KEYSPACES;
use super::option_set::OptionSet;
use super::verify::{check, settle};
use super::workload::Workload;
use super::StressArgs;
use crate::output::Failure;

const DIR: &str = "/stress";

/// One image and the expected state it is checked against.
struct Image {
    sync_point: u64,
    torn: bool,
    fs: MemFs,
    slots: Vec<Slot>,
}

/// Runs the mode until `images` images have been verified.
pub fn run(
    args: &StressArgs,
    seed: u64,
    durability: Option<Durability>,
    images: u64,
) -> Result<(), Failure> {
    let shape = Shape {
        seed,
        threads: args.threads,
        keys_per_thread: args.keys_per_thread,
        keyspaces: KEYSPACES.len(),
        durability,
    };
    let options = OptionSet::from_seed(seed, durability);
    let describe = format!(
        "seed {seed} threads {} keys-per-thread {} options: {options}",
        shape.threads, shape.keys_per_thread
    );
    println!("stress crash images: {describe}");
    let report = |e: String| {
        Failure::Error(format!(
            "{e}\n  {describe}\n  reproduce the option set with: shale stress --crash-images={images} --seed={seed}"
        ))
    };
    let fs = MemFs::new();
    let state = ExpectedState::in_memory(shape);
    let db = Db::open(DIR, options.options(Arc::new(fs.clone())))
        .map_err(|e| report(format!("opening: {e}")))?;
    for name in &KEYSPACES[1..] {
        db.create_keyspace(name, options.keyspace_options())
            .map_err(|e| report(format!("creating keyspace {name}: {e}")))?;
    }
    let state = Arc::new(state);
    let (sender, receiver) = sync_channel::<Image>(1);
    install_hook(&fs, state.clone(), sender, seed, images);
    let stop = AtomicBool::new(false);
    let operations = AtomicU64::new(0);
    let workload = Workload {
        db: &db,
        state: &state,
        durability: options.durability,
        durable_at_ack: options.durability == Durability::Sync,
        stop: &stop,
        operations: &operations,
    };
    let started = Instant::now();
    let outcome = thread::scope(|scope| {
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
        let verified = verify_images(&receiver, &shape, &options, images, &stop);
        stop.store(true, Ordering::Relaxed);
        drop(receiver);
        let workers = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a worker thread panicked".to_owned()))
            })
            .collect::<Result<Vec<()>, String>>();
        workers.and(verified)
    });
    fs.set_sync_hook(None);
    let (verified, torn) = outcome.map_err(report)?;
    db.close().map_err(|e| report(format!("closing: {e}")))?;
    println!(
        "stress crash images: {verified} images verified ({torn} torn) after {} operations in {:.1} s",
        operations.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Sets the hook that images about one sync point in three (a seed-dependent pattern) until
/// `images` were taken, reading the expected state before and after each image.
fn install_hook(
    fs: &MemFs,
    state: Arc<ExpectedState>,
    sender: SyncSender<Image>,
    seed: u64,
    images: u64,
) {
    let origin = fs.clone();
    let taken = AtomicU64::new(0);
    let every = 3;
    fs.set_sync_hook(Some(Arc::new(move |point: u64| {
        let draw = (point ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 33;
        if !draw.is_multiple_of(every) || taken.load(Ordering::Relaxed) >= images {
            return;
        }
        let number = taken.fetch_add(1, Ordering::Relaxed);
        let torn = number % 2 == 1;
        let before = state.snapshot();
        let mode = if torn {
            CrashMode::Torn { seed: seed ^ point }
        } else {
            CrashMode::DropUnsynced
        };
        let image = origin.crash_image(mode);
        let after = state.snapshot();
        let slots = before
            .iter()
            .zip(after)
            .map(|(b, a)| Slot {
                floor: b.floor,
                ..a
            })
            .collect();
        // The receiver is gone once enough images are verified.
        let _ = sender.send(Image {
            sync_point: point,
            torn,
            fs: image,
            slots,
        });
    })));
}

fn verify_images(
    receiver: &std::sync::mpsc::Receiver<Image>,
    shape: &Shape,
    options: &OptionSet,
    images: u64,
    stop: &AtomicBool,
) -> Result<(u64, u64), String> {
    let mut verified = 0;
    let mut torn = 0;
    let mut last = Instant::now();
    while verified < images {
        let image = match receiver.recv_timeout(Duration::from_millis(100)) {
            Ok(image) => image,
            Err(RecvTimeoutError::Timeout) if stop.load(Ordering::Relaxed) => {
                return Err("the workload stopped before enough images were taken".into());
            }
            Err(RecvTimeoutError::Timeout) if last.elapsed() > Duration::from_secs(60) => {
                return Err("no sync point for 60 s".into());
            }
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        last = Instant::now();
        let what = format!(
            "image {} (sync point {}, {})",
            verified + 1,
            image.sync_point,
            if image.torn {
                "torn"
            } else {
                "unsynced dropped"
            }
        );
        let file_system: Arc<dyn FileSystem> = Arc::new(image.fs);
        let db = Db::open(DIR, options.options(file_system))
            .map_err(|e| format!("stress: violation in {what}: the database does not open: {e}"))?;
        let mut slots = image.slots;
        let found =
            check(&db, shape, &slots).map_err(|v| format!("stress: violation in {what}: {v}"))?;
        settle(&db, shape, &mut slots, &found, |_, _, _| Ok(()))
            .map_err(|e| format!("stress: {what}: the recovered database refused writes: {e}"))?;
        db.close()
            .map_err(|e| format!("stress: {what}: closing: {e}"))?;
        verified += 1;
        torn += u64::from(image.torn);
    }
    Ok((verified, torn))
}
