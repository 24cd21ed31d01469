//! Runs `shale stress` at CI size in both modes and each durability, and shows that its
//! verifier catches writes made behind its back (an invented value, a lost write).
//!
//! Scale with environment variables: `SHALE_STRESS_KILLS` (SIGKILL cycles per durability,
//! default 7), `SHALE_STRESS_IMAGES` (crash images per durability, default 100),
//! `SHALE_STRESS_SEED` (default fixed; every run prints its seed and options).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use shale_engine::{Db, Options, ReadOptions};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn seed() -> u64 {
    env_u64("SHALE_STRESS_SEED", 20_250_101)
}

/// A value as the workload writes it (docs/reliability.md, "Values").
fn value(keyspace: usize, index: usize, id: u32) -> Vec<u8> {
    let mut value = format!("{keyspace}|{index:08}|{id:08x}|").into_bytes();
    let filler = (id as usize * 31) % 97;
    value.extend((0..filler).map(|i| b'a' + u8::try_from((id as usize + i) % 26).unwrap()));
    value
}

fn shale(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shale"))
        .args(args)
        .output()
        .expect("run the shale binary")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("shale-stress-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(expected_of(&dir));
    dir
}

fn expected_of(dir: &Path) -> PathBuf {
    PathBuf::from(format!("{}.expected", dir.display()))
}

fn clean(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_file(expected_of(dir));
}

fn assert_success(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "shale stress failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn blackbox(dir: &Path, kills: u64, extra: &[&str]) -> Output {
    let mut args = vec![
        "stress".to_owned(),
        "--blackbox".to_owned(),
        format!("--db={}", dir.display()),
        format!("--kills={kills}"),
        format!("--seed={}", seed()),
        "--threads=3".to_owned(),
        "--keys-per-thread=50".to_owned(),
        "--max-delay-ms=300".to_owned(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    shale(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn blackbox_kills_lose_nothing_acknowledged_beyond_each_durability() {
    let kills = env_u64("SHALE_STRESS_KILLS", 7);
    for durability in ["sync", "flush", "buffered"] {
        let dir = scratch(&format!("blackbox-{durability}"));
        let stdout = assert_success(&blackbox(
            &dir,
            kills,
            &[&format!("--durability={durability}")],
        ));
        assert!(
            stdout.contains(&format!("durability={durability}")),
            "{stdout}"
        );
        assert!(stdout.contains(&format!("{kills} cycles")), "{stdout}");
        if durability != "buffered" {
            assert!(
                stdout.contains("lost within the durability bound 0"),
                "{stdout}"
            );
        }
        clean(&dir);
    }
}

#[test]
fn crash_images_keep_every_durable_write() {
    let images = env_u64("SHALE_STRESS_IMAGES", 100);
    for durability in ["sync", "flush", "buffered"] {
        let out = shale(&[
            "stress",
            &format!("--crash-images={images}"),
            &format!("--seed={}", seed()),
            &format!("--durability={durability}"),
            "--threads=3",
            "--keys-per-thread=50",
        ]);
        let stdout = assert_success(&out);
        assert!(
            stdout.contains(&format!("{images} images verified")),
            "{stdout}"
        );
    }
}

/// Runs a short blackbox run, lets `plant` change the database behind the tool's back, and
/// returns the stderr of the next run, which must fail.
fn planted(name: &str, plant: impl FnOnce(&Db)) -> String {
    let dir = scratch(name);
    assert_success(&blackbox(&dir, 2, &["--durability=sync"]));
    let db = Db::open(&dir, Options::default()).unwrap();
    plant(&db);
    db.close().unwrap();
    let out = blackbox(&dir, 1, &[]);
    clean(&dir);
    assert!(!out.status.success(), "a planted violation went unnoticed");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn verifier_catches_an_invented_value() {
    let stderr = planted("invented", |db| {
        db.put(b"key00000007", &value(0, 7, 0x00ff_fff0)).unwrap();
    });
    assert!(
        stderr.contains("violation before the first worker"),
        "{stderr}"
    );
    assert!(stderr.contains("key \"key00000007\""), "{stderr}");
    assert!(
        stderr.contains("found the value of id 16777200"),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("seed {}", seed())), "{stderr}");
}

#[test]
fn verifier_catches_a_lost_write_and_a_misplaced_value() {
    let mut deleted = Vec::new();
    let stderr = planted("lost", |db| {
        let mut iter = db.iterator(ReadOptions::default()).unwrap();
        iter.seek_to_first();
        assert!(iter.valid(), "the workload wrote nothing");
        deleted = iter.key().to_vec();
        drop(iter);
        db.delete(&deleted).unwrap();
    });
    let key = String::from_utf8(deleted).unwrap();
    assert!(
        stderr.contains(&format!("key {key:?}: expected latest id")),
        "{stderr}"
    );
    assert!(stderr.contains("found no value"), "{stderr}");

    let stderr = planted("misplaced", |db| {
        db.put(b"key00000003", &value(0, 4, 1)).unwrap();
    });
    assert!(
        stderr.contains("belongs to keyspace 0 key 00000004"),
        "{stderr}"
    );
}

#[test]
fn the_expected_state_file_sits_beside_the_database_and_bad_flags_are_refused() {
    let dir = scratch("slash");
    let with_slash = format!("{}/", dir.display());
    let out = shale(&[
        "stress",
        "--blackbox",
        &format!("--db={with_slash}"),
        "--kills=1",
        "--max-delay-ms=50",
    ]);
    assert_success(&out);
    assert!(
        expected_of(&dir).is_file(),
        "no {}",
        expected_of(&dir).display()
    );
    // A database without its expected-state file is refused rather than trusted.
    std::fs::remove_file(expected_of(&dir)).unwrap();
    let out = shale(&[
        "stress",
        "--blackbox",
        &format!("--db={}", dir.display()),
        "--kills=1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    clean(&dir);
    let out = shale(&["stress", "--crash-images=1", "--durability=fast"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--durability \"fast\""));
    let out = shale(&["stress"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("choose a mode"));
}
