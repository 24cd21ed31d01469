//! Random-key fill with default options: throughput, write stalls by reason (with the longest
//! stop), compaction bytes and the final shape of the tree. A measurement, never a test.
//!
//! `cargo run --release -p shale-engine --example fill_stalls -- DIR [MIB] [VALUE_BYTES]`
//!
//! `DIR` must not hold a database yet (the run refuses to reuse one); `MIB` (default 1024) is
//! the user data written, as 16-byte keys drawn from twice as many keys as written (so about a
//! third of writes overwrite) with `VALUE_BYTES` (default 400) values of half-compressible
//! bytes. Durability is `Buffered` so the WAL's fsyncs do not hide the compaction stalls.

use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{Db, Durability, Options};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .ok_or("usage: fill_stalls DIR [MIB] [VALUE_BYTES]")?;
    let mib: u64 = args.next().map_or(Ok(1024), |a| a.parse())?;
    let value_bytes: usize = args.next().map_or(Ok(400), |a| a.parse())?;
    let options = Options {
        error_if_exists: true,
        durability: Durability::Buffered,
        ..Options::default()
    };
    let db = Db::open(&dir, options)?;
    let entry_bytes = 16 + value_bytes as u64;
    let writes = (mib << 20) / entry_bytes;
    let mut rng = SmallRng::seed_from_u64(42);
    let mut value = vec![0u8; value_bytes];
    let started = Instant::now();
    for _ in 0..writes {
        let key = format!("{:016}", rng.gen_range(0..writes * 2));
        // Half random bytes, half a repeated byte: compressible about 2:1.
        rng.fill(&mut value[..value_bytes / 2]);
        db.put(key.as_bytes(), &value)?;
    }
    let written = started.elapsed();
    db.wait_for_background_work()?;
    let settled = started.elapsed();
    let stats = db.stats();
    let ks = db.default_keyspace();
    let (base, targets) = db.level_targets(&ks)?;
    let version = db.current_version();
    #[allow(clippy::cast_precision_loss)]
    let mib_per_sec = mib as f64 / written.as_secs_f64();
    println!("fill {mib} MiB ({writes} writes of {entry_bytes} B) into {dir}");
    println!(
        "  writes done in {:.1} s ({mib_per_sec:.1} MiB/s), compactions settled at {:.1} s",
        written.as_secs_f64(),
        settled.as_secs_f64()
    );
    println!(
        "  stalls: L0 slowdowns {} stops {}; pending-bytes slowdowns {} stops {}; memtable stops {}",
        stats.stall_level0_slowdowns,
        stats.stall_level0_stops,
        stats.stall_pending_bytes_slowdowns,
        stats.stall_pending_bytes_stops,
        stats.stall_memtable_stops
    );
    println!(
        "  stalled {:.3} s in all, longest stop {:.3} s",
        stats.stall_micros as f64 / 1e6,
        stats.longest_stop_micros as f64 / 1e6
    );
    println!(
        "  compactions {} (trivial moves {}), read {} MiB, wrote {} MiB",
        stats.compactions,
        stats.trivial_moves,
        stats.compaction_bytes_read >> 20,
        stats.compaction_bytes_written >> 20
    );
    println!("  base level L{base}");
    for (level, &target) in targets.iter().enumerate() {
        let files = version.num_files(ks.id(), level);
        if files > 0 {
            let target = if target == u64::MAX {
                "-".to_owned()
            } else {
                format!("{} MiB", target >> 20)
            };
            println!(
                "  L{level}: {files} tables, {} MiB (target {target})",
                version.level_size(ks.id(), level) >> 20
            );
        }
    }
    db.close()?;
    Ok(())
}
