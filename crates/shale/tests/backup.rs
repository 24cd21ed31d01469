//! Runs the built `shale` binary's `tool checkpoint` and `backup create | list | verify |
//! restore | purge` on small databases built with the engine, on the real file system.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use shale_engine::{Db, KeyspaceOptions, Options};

fn shale(args: &[&str]) -> (i32, String, String) {
    let out: Output = Command::new(env!("CARGO_BIN_EXE_shale"))
        .args(args)
        .output()
        .expect("run the shale binary");
    (
        out.status.code().expect("exited, not killed by a signal"),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("shale-backup-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Writes `k{first}..k{first+count}` as one flushed table plus `wal-{first}` left in the WAL.
///
/// Every open by the tool replays the WAL into a memtable that the background flushes, so
/// whether a backup or checkpoint holds that table or the WAL depends on timing. L0 compacts
/// only past 8 tables (persisted in OPTIONS, so the tool's opens keep it): no table a backup
/// took is compacted away before the next backup, which these tests count on.
fn write(dir: &Path, first: u32, count: u32) {
    let options = Options {
        default_keyspace: KeyspaceOptions {
            level0_compaction_trigger: 8,
            ..KeyspaceOptions::default()
        },
        ..Options::default()
    };
    let db = Db::open(dir, options).unwrap();
    for i in first..first + count {
        db.put(format!("k{i:04}").as_bytes(), format!("v{i}").as_bytes())
            .unwrap();
    }
    db.flush().unwrap();
    db.put(format!("wal-{first}").as_bytes(), b"unflushed")
        .unwrap();
    db.close().unwrap();
}

/// The table files in `dir`, by name.
fn tables(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "sst"))
        .map(|path| path.file_name().unwrap().to_str().unwrap().to_owned())
        .collect()
}

fn get(dir: &Path, key: &str) -> Option<String> {
    let (code, out, _) = shale(&["tool", "get", s(dir), key]);
    (code == 0).then(|| out.trim().to_owned())
}

#[test]
fn checkpoint_opens_and_refuses_a_non_empty_target() {
    let root = scratch("checkpoint");
    let db = root.join("db");
    write(&db, 0, 100);
    let written = tables(&db);
    assert_eq!(written.len(), 1, "{written:?}");
    let cp = root.join("cp");
    let (code, out, err) = shale(&["tool", "checkpoint", s(&db), s(&cp), "--json"]);
    assert_eq!(code, 0, "{err}");
    let report = json(&out);
    assert!(report["seqno"].as_u64().unwrap() >= 101, "{report}");
    // The written table, and the replayed WAL's if its flush beat the cut (see `write`).
    let linked = tables(&cp);
    assert!(linked.is_superset(&written), "{linked:?} {written:?}");
    assert_eq!(
        report["tables_linked"].as_u64(),
        Some(linked.len() as u64),
        "{report}"
    );
    assert_eq!(get(&cp, "k0099").as_deref(), Some("\"v99\""));
    assert_eq!(get(&cp, "wal-0").as_deref(), Some("\"unflushed\""));
    let (code, _, err) = shale(&["tool", "checkpoint", s(&db), s(&cp)]);
    assert_eq!(code, 1);
    assert!(err.contains("not empty"), "{err}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn backup_create_list_verify_restore_purge() {
    let root = scratch("cycle");
    let (db, backups) = (root.join("db"), root.join("backups"));
    write(&db, 0, 200);
    let (code, out, err) = shale(&["backup", "create", s(&db), s(&backups), "--json"]);
    assert_eq!(code, 0, "{err}");
    let first = json(&out);
    assert_eq!(first["id"].as_u64(), Some(1));
    assert_eq!(first["reused_tables"].as_u64(), Some(0));
    // The written table, and the replayed WAL's if its flush beat the cut (see `write`).
    let first_tables = tables(&backups.join("shared"));
    assert!((1..=2).contains(&first_tables.len()), "{first_tables:?}");
    write(&db, 200, 200);
    let (code, out, err) = shale(&[
        "backup",
        "create",
        s(&db),
        s(&backups),
        "--rate-limit-mb",
        "50",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let second = json(&out);
    assert_eq!(second["id"].as_u64(), Some(2));
    // Every table of the first backup is still live and reused; the new ones are copied.
    assert_eq!(
        second["reused_tables"].as_u64(),
        Some(first_tables.len() as u64),
        "{second} {first_tables:?}"
    );
    let second_tables = tables(&backups.join("shared"));
    assert!(
        second_tables.is_superset(&first_tables) && second_tables.len() > first_tables.len(),
        "{second_tables:?} {first_tables:?}"
    );

    let (code, out, _) = shale(&["backup", "list", s(&backups), "--json"]);
    assert_eq!(code, 0);
    assert_eq!(json(&out)["backups"].as_array().unwrap().len(), 2);
    let (code, out, err) = shale(&["backup", "verify", s(&backups)]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("backup 1: OK") && out.contains("backup 2: OK"),
        "{out}"
    );

    // A flipped byte in a shared table: verify exits 2 naming the file.
    let shared: Vec<PathBuf> = std::fs::read_dir(backups.join("shared"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let victim = shared.iter().min().unwrap().clone();
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[5] ^= 1;
    std::fs::write(&victim, &bytes).unwrap();
    let (code, _, err) = shale(&["backup", "verify", s(&backups), "--id", "2"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(s(&victim)), "{err}");
    bytes[5] ^= 1;
    std::fs::write(&victim, &bytes).unwrap();

    // Restore refuses a database and a non-empty directory, then restores the newest backup.
    let (code, _, err) = shale(&["backup", "restore", s(&backups), s(&db)]);
    assert_eq!(code, 1);
    assert!(err.contains("holds a database"), "{err}");
    let (code, _, err) = shale(&["backup", "restore", s(&backups), s(&backups)]);
    assert_eq!(code, 1);
    assert!(err.contains("not empty"), "{err}");
    let restored = root.join("restored");
    let (code, _, err) = shale(&["backup", "restore", s(&backups), s(&restored)]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(get(&restored, "k0399").as_deref(), Some("\"v399\""));
    assert_eq!(get(&restored, "wal-200").as_deref(), Some("\"unflushed\""));

    let (code, out, err) = shale(&["backup", "purge", s(&backups), "--keep", "1", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["purged"], serde_json::json!([1]));
    let (code, _, err) = shale(&["backup", "verify", s(&backups)]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = shale(&["backup", "--help"]);
    assert_eq!(code, 0);
    for sub in ["create", "list", "verify", "restore", "purge"] {
        assert!(out.contains(sub), "{out}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn compressed_backup_verifies_and_restores() {
    let root = scratch("compressed");
    let (db, backups) = (root.join("db"), root.join("backups"));
    write(&db, 0, 300);
    let (code, _, err) = shale(&[
        "backup",
        "create",
        s(&db),
        s(&backups),
        "--compress",
        "lzma",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("--compress"), "{err}");
    let (code, out, err) = shale(&[
        "backup",
        "create",
        s(&db),
        s(&backups),
        "--compress",
        "zstd:9",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let made = json(&out);
    // The table and the WAL copies; MANIFEST, OPTIONS and CURRENT stay plain.
    assert_eq!(
        made["compressed_files"].as_u64(),
        made["files"].as_u64().map(|n| n - 3),
        "{made}"
    );
    assert!(std::fs::read_dir(backups.join("shared")).unwrap().all(|e| e
        .unwrap()
        .path()
        .to_str()
        .unwrap()
        .ends_with(".sst.zst")));
    let (code, out, err) = shale(&["backup", "verify", s(&backups)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("backup 1: OK"), "{out}");
    // A flipped byte in the middle of the compressed table: verify exits 2 naming it.
    let victim = std::fs::read_dir(backups.join("shared"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .unwrap();
    let mut bytes = std::fs::read(&victim).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&victim, &bytes).unwrap();
    let (code, _, err) = shale(&["backup", "verify", s(&backups)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(s(&victim)), "{err}");
    bytes[middle] ^= 1;
    std::fs::write(&victim, &bytes).unwrap();
    let restored = root.join("restored");
    let (code, _, err) = shale(&["backup", "restore", s(&backups), s(&restored)]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(get(&restored, "k0299").as_deref(), Some("\"v299\""));
    assert_eq!(get(&restored, "wal-0").as_deref(), Some("\"unflushed\""));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn swapped_arguments_write_nothing_into_the_database() {
    let db = scratch("swapped-db");
    let backups = scratch("swapped-backups");
    write(&db, 0, 50);
    let before: BTreeSet<String> = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // `backup create BACKUPDIR DBDIR`: the first argument is not a database.
    let (code, _, err) = shale(&["backup", "create", s(&backups), s(&db)]);
    assert_ne!(code, 0, "{err}");
    let after: BTreeSet<String> = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(before, after, "no backup folders in the database: {err}");
    assert!(!backups.exists());
    // A backup directory that is a database is refused by name.
    let other = scratch("swapped-other");
    write(&other, 0, 10);
    let (code, _, err) = shale(&["backup", "create", s(&db), s(&other)]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("holds a database"), "{err}");
    assert!(!other.join("shared").exists() && !other.join("meta").exists());
}

/// Keys each batch of [`writer_child`] writes: batch `i` puts `b{i:08}-{j}` => `i` for `j` in
/// `0..BATCH_KEYS` and `last` => `i`, in one write.
const BATCH_KEYS: u32 = 20;

/// Not a test on its own: run by [`hot_backup_while_another_process_writes`] as a child
/// process (`SHALE_HOT_BACKUP_DB` set), it holds the database open and commits numbered
/// batches until the file `stop` appears next to the database. Small memtables keep
/// flushes, compactions and WAL deletions going all along.
#[test]
fn writer_child() {
    let Ok(dir) = std::env::var("SHALE_HOT_BACKUP_DB") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let stop = dir.with_file_name("stop");
    let options = Options {
        durability: shale_engine::Durability::Flush,
        default_keyspace: KeyspaceOptions {
            write_buffer_size: 64 << 10,
            level0_compaction_trigger: 2,
            ..KeyspaceOptions::default()
        },
        ..Options::default()
    };
    let db = Db::open(&dir, options).unwrap();
    let ks = db.default_keyspace().id();
    let mut i = 0u64;
    while !stop.exists() {
        i += 1;
        let mut batch = shale_engine::WriteBatch::new();
        let value = format!("{i:08}-{}", "x".repeat(100));
        for j in 0..BATCH_KEYS {
            batch
                .put(ks, format!("b{i:08}-{j:02}").as_bytes(), value.as_bytes())
                .unwrap();
        }
        batch.put(ks, b"last", i.to_string().as_bytes()).unwrap();
        db.write(batch, &shale_engine::WriteOptions::default())
            .unwrap();
    }
    db.close().unwrap();
}

/// Checks the database in `dir` holds exactly batches `1..=last` of [`writer_child`], each
/// whole, and returns `last`.
fn check_prefix(dir: &Path) -> u64 {
    let db = Db::open_read_only(dir, Options::default()).unwrap();
    let last: u64 = db
        .get(b"last")
        .unwrap()
        .map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap());
    let mut iter = db.iterator(shale_engine::ReadOptions::default()).unwrap();
    iter.seek_to_first();
    let mut count = 0u64;
    while iter.valid() {
        let key = String::from_utf8(iter.key().to_vec()).unwrap();
        if key != "last" {
            let batch: u64 = key[1..9].parse().unwrap();
            assert!(
                batch <= last,
                "{}: {key} of batch {batch} after last {last}",
                dir.display()
            );
            assert!(iter.value().starts_with(format!("{batch:08}-").as_bytes()));
            count += 1;
        }
        iter.next();
    }
    iter.status().unwrap();
    assert_eq!(
        count,
        last * u64::from(BATCH_KEYS),
        "{}: every batch up to {last} whole",
        dir.display()
    );
    drop(iter);
    db.close().unwrap();
    last
}

#[test]
fn hot_backup_while_another_process_writes() {
    let root = scratch("hot");
    let (db, backups) = (root.join("db"), root.join("backups"));
    std::fs::create_dir_all(&root).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "writer_child", "--nocapture", "--test-threads=1"])
        .env("SHALE_HOT_BACKUP_DB", &db)
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let progress = || get(&db, "last").map_or(0, |v| v.trim_matches('"').parse().unwrap_or(0));
    while progress() < 2000 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "the writer did not get going"
        );
        assert!(child.try_wait().unwrap().is_none(), "the writer exited");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Backups, a compressed one and a checkpoint, each while the writer commits, flushes
    // and compacts.
    let mut copies = Vec::new();
    for (n, extra) in [&[][..], &["--compress", "zstd"][..], &[][..]]
        .into_iter()
        .enumerate()
    {
        let mut args = vec!["backup", "create", s(&db), s(&backups), "--json"];
        args.extend_from_slice(extra);
        let (code, out, err) = shale(&args);
        assert_eq!(code, 0, "{err}");
        assert_eq!(json(&out)["id"].as_u64(), Some(n as u64 + 1));
        let checkpoint = root.join(format!("checkpoint-{n}"));
        let (code, _, err) = shale(&["tool", "checkpoint", s(&db), s(&checkpoint)]);
        assert_eq!(code, 0, "{err}");
        copies.push(checkpoint);
    }
    std::fs::write(root.join("stop"), b"").unwrap();
    assert!(child.wait().unwrap().success());
    let final_last = check_prefix(&db);
    let (code, _, err) = shale(&["backup", "verify", s(&backups)]);
    assert_eq!(code, 0, "{err}");
    for id in 1..=3 {
        let restored = root.join(format!("restored-{id}"));
        let (code, _, err) = shale(&[
            "backup",
            "restore",
            s(&backups),
            s(&restored),
            "--id",
            &id.to_string(),
        ]);
        assert_eq!(code, 0, "{err}");
        copies.push(restored);
    }
    for copy in &copies {
        let last = check_prefix(copy);
        assert!(
            (2000..=final_last).contains(&last),
            "{}: {last}",
            copy.display()
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// The database's files with their sizes.
fn files_and_sizes(dir: &Path) -> BTreeSet<(String, u64)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect()
}

#[test]
fn backup_and_checkpoint_change_nothing_in_the_database() {
    let root = scratch("unchanged");
    let (db, backups) = (root.join("db"), root.join("backups"));
    write(&db, 0, 300);
    let before = files_and_sizes(&db);
    let (code, _, err) = shale(&["backup", "create", s(&db), s(&backups)]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = shale(&["tool", "checkpoint", s(&db), s(&root.join("cp"))]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        files_and_sizes(&db),
        before,
        "no flush, no new WAL or MANIFEST"
    );
    assert_eq!(
        get(&root.join("cp"), "wal-0").as_deref(),
        Some("\"unflushed\"")
    );
    // A read-only directory (skipped where the permissions do not bind, e.g. as root).
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o555)).unwrap();
    if std::fs::write(db.join("probe"), b"").is_ok() {
        eprintln!("skipped the read-only directory: permissions do not bind for this user");
        let _ = std::fs::remove_file(db.join("probe"));
    } else {
        let (code, out, err) = shale(&["backup", "create", s(&db), s(&backups), "--json"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(json(&out)["id"].as_u64(), Some(2));
        let (code, _, err) = shale(&["tool", "checkpoint", s(&db), s(&root.join("cp2"))]);
        assert_eq!(code, 0, "{err}");
    }
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(files_and_sizes(&db), before);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn list_shows_dates_and_a_damaged_meta_and_verify_reports_every_bad_file() {
    let root = scratch("damaged");
    let (db, backups) = (root.join("db"), root.join("backups"));
    write(&db, 0, 100);
    for _ in 0..2 {
        let (code, _, err) = shale(&["backup", "create", s(&db), s(&backups)]);
        assert_eq!(code, 0, "{err}");
    }
    let (code, out, err) = shale(&["backup", "list", s(&backups)]);
    assert_eq!(code, 0, "{err}");
    let row = out
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap();
    let date = row.split_whitespace().nth(1).unwrap();
    assert!(
        date.len() == 20 && date.starts_with("20") && date.ends_with('Z') && &date[10..11] == "T",
        "{out}"
    );
    // Backup 1's meta is garbage: list still shows backup 2, and backup 1 as damaged.
    std::fs::write(backups.join("meta/1"), b"not a meta file").unwrap();
    let (code, out, err) = shale(&["backup", "list", s(&backups)]);
    assert_eq!(code, 2, "{err}");
    assert!(
        out.contains("DAMAGED") && out.lines().any(|l| l.trim_start().starts_with("2 ")),
        "{out}"
    );
    assert!(err.contains("backup 1"), "{err}");
    let (code, out, _) = shale(&["backup", "list", s(&backups), "--json"]);
    assert_eq!(code, 2);
    let list = json(&out);
    assert_eq!(
        list["backups"][0]["damaged"],
        serde_json::json!(true),
        "{list}"
    );
    assert_eq!(list["backups"][1]["id"].as_u64(), Some(2), "{list}");
    assert!(list["backups"][1]["created_utc"]
        .as_str()
        .unwrap()
        .ends_with('Z'));
    // Two bad files in backup 2: verify names both.
    let private: Vec<PathBuf> = std::fs::read_dir(backups.join("private/2"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let manifest = private
        .iter()
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("MANIFEST")
        })
        .unwrap();
    let options = private
        .iter()
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("OPTIONS")
        })
        .unwrap();
    let mut bytes = std::fs::read(manifest).unwrap();
    bytes[3] ^= 1;
    std::fs::write(manifest, &bytes).unwrap();
    std::fs::remove_file(options).unwrap();
    let (code, out, err) = shale(&["backup", "verify", s(&backups), "--id", "2"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.contains("2 bad files"), "{out}");
    assert!(
        out.contains(s(manifest)) && out.contains(s(options)),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&root);
}
