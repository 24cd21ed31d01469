//! `--max-open-files` (`MyRocks`' `rocksdb_max_open_files`): how many table files the engine
//! keeps open. -1 is the engine's `UNLIMITED_OPEN_FILES` (every table stays open, pinned in
//! its metadata, so point reads take no table-cache lock); -2 is half the process's soft
//! open-file limit, as `MyRocks` sizes it from `open_files_limit`, leaving the other half to
//! connections, logs and the WAL.

use shale_engine::UNLIMITED_OPEN_FILES;

/// The default: sized from the open-file limit.
pub const AUTO: i64 = -2;
/// No limit.
pub const UNLIMITED: i64 = -1;
/// The engine's least table cache.
const LEAST: i64 = 16;

/// The flag's value: -1, -2 or at least 16.
pub fn parse(text: &str) -> Result<i64, String> {
    let n: i64 = text
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a whole number"))?;
    if n == AUTO || n == UNLIMITED || n >= LEAST {
        Ok(n)
    } else {
        Err(format!(
            "{n}: -1 (no limit), -2 (half the open-file limit) or at least {LEAST}"
        ))
    }
}

/// The engine's `max_open_files` for the flag's value.
pub fn engine_limit(setting: i64) -> usize {
    match setting {
        UNLIMITED => UNLIMITED_OPEN_FILES,
        AUTO => from_process_limit(soft_open_file_limit()),
        n => usize::try_from(n).unwrap_or(UNLIMITED_OPEN_FILES),
    }
}

/// Half of `process_limit` (`None`: no limit, so none here either), at least 16.
fn from_process_limit(process_limit: Option<u64>) -> usize {
    match process_limit {
        None => UNLIMITED_OPEN_FILES,
        Some(n) => usize::try_from(n / 2)
            .unwrap_or(UNLIMITED_OPEN_FILES)
            .max(LEAST as usize),
    }
}

/// The soft `RLIMIT_NOFILE` (`ulimit -n`); `None` when unlimited.
fn soft_open_file_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) } != 0 {
        // Unknowable: the engine's own default bound.
        return Some(2000);
    }
    (limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_takes_minus_one_minus_two_or_at_least_sixteen() {
        assert_eq!(parse("-1"), Ok(-1));
        assert_eq!(parse("-2"), Ok(-2));
        assert_eq!(parse("5000"), Ok(5000));
        for bad in ["0", "15", "-3", "x"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn limits_follow_the_setting() {
        assert_eq!(engine_limit(-1), UNLIMITED_OPEN_FILES);
        assert_eq!(engine_limit(300), 300);
        assert_eq!(from_process_limit(Some(20_000)), 10_000);
        assert_eq!(from_process_limit(Some(20)), 16);
        assert_eq!(from_process_limit(None), UNLIMITED_OPEN_FILES);
        let auto = engine_limit(AUTO);
        assert!(auto >= 16);
    }
}
