//! `shale serve --max-open-files` (`MyRocks`' `rocksdb_max_open_files`) through a real client:
//! -1 (no limit, every table pinned), a number, and the default -2 (half the open-file limit)
//! reach the engine (its OPTIONS file says what it runs with), `shale_max_open_files` shows
//! them and is read-only, and a value the engine cannot take stops the start with an error
//! that names the option.
//!
//! A test whose client is missing prints SKIPPED and passes, except under CI=true, where it
//! fails. Servers run on free ports with their own data directories, stopped by PID.

mod support;

use std::path::Path;
use std::process::Command;

use support::{have, scratch, start_shale_with};

/// `max_open_files` in the newest OPTIONS file of `datadir`.
fn engine_setting(datadir: &Path) -> String {
    let newest = std::fs::read_dir(datadir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("OPTIONS-"))
        .max()
        .expect("an OPTIONS file");
    let text = std::fs::read_to_string(datadir.join(newest)).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("max_open_files="))
        .expect("max_open_files in OPTIONS")
        .to_owned()
}

/// The soft open-file limit this process (and so the server it starts) runs with.
fn soft_open_file_limit() -> u64 {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    line.split_whitespace().nth(3).unwrap().parse().unwrap()
}

#[test]
fn the_open_file_limit_reaches_the_engine_and_shows_read_only() {
    if !have("mariadb", &["--version"]) {
        return;
    }
    let half = (soft_open_file_limit() / 2).max(16);
    for (flag, shown, in_options) in [
        (None, half.to_string(), half.to_string()),
        (Some("-1"), "-1".to_owned(), usize::MAX.to_string()),
        (Some("40"), "40".to_owned(), "40".to_owned()),
    ] {
        let dir = scratch(&format!("max-open-files{}", flag.unwrap_or("")));
        let extra: Vec<String> = flag
            .map(|f| vec!["--max-open-files".to_owned(), f.to_owned()])
            .unwrap_or_default();
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let server = start_shale_with(&dir, &extra);
        let value = server
            .query(None, "SELECT @@global.shale_max_open_files")
            .unwrap();
        assert_eq!(value.trim(), shown, "{flag:?}");
        let error = server
            .query(None, "SET GLOBAL shale_max_open_files = 100")
            .unwrap_err();
        assert!(
            error.contains("ERROR 1238") && error.contains("shale_max_open_files"),
            "{error}"
        );
        server
            .query(
                None,
                "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY); \
                 INSERT INTO d.t VALUES (1), (2); SELECT COUNT(*) FROM d.t",
            )
            .unwrap();
        assert_eq!(
            engine_setting(&dir.join("shale-data")),
            in_options,
            "{flag:?}"
        );
    }
}

#[test]
fn a_value_the_engine_cannot_take_stops_the_start() {
    let dir = scratch("max-open-files-bad");
    for bad in ["5", "-3", "many"] {
        let output = Command::new(env!("CARGO_BIN_EXE_shale"))
            .args([
                "serve",
                &format!("--datadir={}", dir.join("shale-data").display()),
                "--port=0",
                "--max-open-files",
                bad,
            ])
            .output()
            .unwrap();
        assert!(!output.status.success(), "{bad}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("--max-open-files"), "{bad}: {stderr}");
        assert!(
            !dir.join("shale-data").exists(),
            "{bad}: nothing is created"
        );
    }
}
