//! SET PERSIST, SET PERSIST_ONLY and RESET PERSIST: settings kept in the data directory's
//! `shale-auto.cnf` (docs/format/persisted-settings.md) and applied by `shale serve` at its
//! next start, after `--config` and the command line, as MySQL applies `mysqld-auto.cnf`.
//!
//! `SET PERSIST x = v` is `SET GLOBAL x = v` (so only a live setting; 1238 for the others)
//! plus the file; `SET PERSIST_ONLY x = v` only writes the file, so it also takes the
//! settings only a restart would change. The engine's live options (engine_settings.rs)
//! persist as `shale serve` options of the same meaning (`shale_write_buffer_size` as
//! `write-buffer-size`, `shale_flush_log_at_trx_commit` as `durability = sync|flush|buffered`).
//! The file is written whole through `replace_file_durably` each time: a crash leaves the old
//! file or the new one.
//!
//! sqlparser has no PERSIST scope, so these statements are recognised from their text before
//! parsing (the way CHECK TABLE is).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use sqlparser::ast::Statement;

use crate::error::SqlError;
use crate::result::ResultSink;
use crate::session::Session;

/// The file's name in the data directory.
pub const PERSIST_FILE: &str = "shale-auto.cnf";

/// What may be persisted: the SQL variable, the `shale serve` option it becomes, and whether
/// it can change live (SET PERSIST) or only at the next start (SET PERSIST_ONLY).
const PERSISTABLE: [(&str, &str, bool); 14] = [
    ("max_connections", "max-connections", true),
    ("wait_timeout", "wait-timeout", true),
    ("interactive_timeout", "interactive-timeout", true),
    ("connect_timeout", "connect-timeout", true),
    ("shale_flush_log_at_trx_commit", "durability", true),
    ("shale_block_cache_size", "block-cache-size", true),
    (
        "shale_rate_limiter_bytes_per_sec",
        "rate-limiter-bytes-per-sec",
        true,
    ),
    ("shale_write_buffer_size", "write-buffer-size", true),
    (
        "shale_level0_slowdown_writes_trigger",
        "level0-slowdown-writes-trigger",
        true,
    ),
    (
        "shale_level0_stop_writes_trigger",
        "level0-stop-writes-trigger",
        true,
    ),
    (
        "shale_soft_pending_compaction_bytes_limit",
        "soft-pending-compaction-bytes-limit",
        true,
    ),
    (
        "shale_hard_pending_compaction_bytes_limit",
        "hard-pending-compaction-bytes-limit",
        true,
    ),
    ("shale_max_background_jobs", "max-background-jobs", true),
    ("shale_stats_auto_recalc", "stats-auto-recalc", true),
];

/// A recognised statement.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Persist {
    /// SET PERSIST (`only` false) or SET PERSIST_ONLY name = value text.
    Set {
        only: bool,
        name: String,
        value: String,
    },
    /// RESET PERSIST [[IF EXISTS] name].
    Reset {
        name: Option<String>,
        if_exists: bool,
    },
}

/// Recognises the statements (one statement, `;` optional); None for any other text.
pub(crate) fn parse(sql: &str) -> Option<Persist> {
    let text = sql.trim().trim_end_matches(';').trim();
    let mut words = text.splitn(3, char::is_whitespace);
    let first = words.next()?.to_ascii_uppercase();
    let second = words.next()?.to_ascii_uppercase();
    let rest = words.next().unwrap_or("").trim();
    match (first.as_str(), second.as_str()) {
        ("SET", scope @ ("PERSIST" | "PERSIST_ONLY")) => {
            let (name, value) = rest.split_once('=')?;
            Some(Persist::Set {
                only: scope == "PERSIST_ONLY",
                name: name.trim().trim_matches('`').to_ascii_lowercase(),
                value: value.trim().to_owned(),
            })
        }
        ("RESET", "PERSIST") => {
            let upper = rest.to_ascii_uppercase();
            let (if_exists, name) = match upper.strip_prefix("IF EXISTS") {
                Some(_) => (true, rest["IF EXISTS".len()..].trim()),
                None => (false, rest),
            };
            Some(Persist::Reset {
                name: (!name.is_empty()).then(|| name.trim_matches('`').to_ascii_lowercase()),
                if_exists,
            })
        }
        _ => None,
    }
}

fn file_path(session: &Session) -> PathBuf {
    session.instance().dir.join(PERSIST_FILE)
}

/// The persisted settings by `shale serve` option name (empty when there is no file).
fn read(session: &Session) -> Result<BTreeMap<String, String>, SqlError> {
    let fs = &session.instance().fs;
    let path = file_path(session);
    let io = |e: shale_fs::Error| {
        SqlError::new(
            1105,
            "HY000",
            format!("cannot read {}: {e}", path.display()),
        )
    };
    if !fs.exists(&path).map_err(io)? {
        return Ok(BTreeMap::new());
    }
    let file = fs.open_read(&path).map_err(io)?;
    let mut bytes = vec![0; file.size().map_err(io)? as usize];
    file.read_exact_at(0, &mut bytes).map_err(io)?;
    Ok(parse_file(&String::from_utf8_lossy(&bytes)))
}

/// The `name = value` lines of the file's `[shale]` section.
pub fn parse_file(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut in_section = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_section = line == "[shale]";
        } else if in_section && !line.starts_with('#') {
            if let Some((name, value)) = line.split_once('=') {
                out.insert(name.trim().to_owned(), value.trim().to_owned());
            }
        }
    }
    out
}

fn write(session: &Session, settings: &BTreeMap<String, String>) -> Result<(), SqlError> {
    let mut text = String::from(
        "# Written by SET PERSIST / RESET PERSIST; shale serve applies it at start, after\n\
         # --config and the command line. Edit with the server stopped, or use RESET PERSIST.\n\
         [shale]\n",
    );
    for (name, value) in settings {
        let _ = writeln!(text, "{name} = {value}");
    }
    let path = file_path(session);
    shale_fs::replace_file_durably(&*session.instance().fs, &path, text.as_bytes()).map_err(|e| {
        SqlError::new(
            1105,
            "HY000",
            format!("cannot write {}: {e}", path.display()),
        )
    })
}

/// A value's text for the file: a quoted string unquoted, a number or word as is.
fn literal(value: &str) -> String {
    for q in ['\'', '"'] {
        if let Some(inner) = value.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner.to_owned();
        }
    }
    value.to_owned()
}

const FLUSH_LOG: &str = "shale_flush_log_at_trx_commit";

/// A value of variable `name` as its `shale serve` option takes it: the durability names
/// for `shale_flush_log_at_trx_commit` (MySQL's meanings of innodb_flush_log_at_trx_commit),
/// ON or OFF for `shale_stats_auto_recalc`, a number for the others; `None` if it is none
/// of those.
fn file_value(name: &str, value: &str) -> Option<String> {
    let word = value.to_ascii_uppercase();
    let text = match (name, word.as_str()) {
        (FLUSH_LOG, "0") => "buffered",
        (FLUSH_LOG, "1") => "sync",
        (FLUSH_LOG, "2") => "flush",
        (crate::settings::STATS_AUTO_RECALC, "1" | "ON" | "TRUE") => "ON",
        (crate::settings::STATS_AUTO_RECALC, "0" | "OFF" | "FALSE") => "OFF",
        (FLUSH_LOG | crate::settings::STATS_AUTO_RECALC, _) => return None,
        _ => return value.parse::<u64>().ok().map(|n| n.to_string()),
    };
    Some(text.to_owned())
}

fn wrong_value(name: &str, value: &str) -> SqlError {
    SqlError::new(
        1231,
        "42000",
        format!("Variable '{name}' can't be set to the value of '{value}'"),
    )
}

/// Runs a recognised statement.
pub(crate) fn run(
    session: &mut Session,
    statement: Persist,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    session.state_mut().warnings.clear();
    let mut settings = read(session)?;
    match statement {
        Persist::Set { only, name, value } => {
            let Some(&(_, option, live)) = PERSISTABLE.iter().find(|(n, _, _)| *n == name) else {
                let names: Vec<&str> = PERSISTABLE.iter().map(|(n, _, _)| *n).collect();
                return Err(SqlError::unsupported(format!(
                    "SET PERSIST of '{name}' (persistable: {})",
                    names.join(", ")
                )));
            };
            let text = if only {
                let text = literal(&value);
                file_value(&name, &text).ok_or_else(|| {
                    if matches!(
                        name.as_str(),
                        FLUSH_LOG | crate::settings::STATS_AUTO_RECALC
                    ) {
                        wrong_value(&name, &text)
                    } else {
                        SqlError::new(
                            1232,
                            "42000",
                            format!("Incorrect argument type to variable '{name}'"),
                        )
                    }
                })?
            } else {
                if !live {
                    return Err(SqlError::new(
                        1238,
                        "HY000",
                        // SET PERSIST_ONLY keeps it for the next start.
                        format!("Variable '{name}' is a read only variable"),
                    ));
                }
                // SET GLOBAL first: it checks and clamps the value, then the file keeps what
                // was set.
                let statements = crate::parse::parse(&format!("SET GLOBAL {name} = {value}"))?;
                let [Statement::Set(set)] = statements.as_slice() else {
                    return Err(wrong_value(&name, &value));
                };
                session.set(set)?;
                let stored = session.instance().global_number(&name).unwrap_or_default();
                file_value(&name, &stored.to_string()).ok_or_else(|| wrong_value(&name, &value))?
            };
            settings.insert(option.to_owned(), text);
        }
        Persist::Reset { name, if_exists } => match name {
            None => settings.clear(),
            Some(name) => {
                let option = PERSISTABLE
                    .iter()
                    .find(|(n, _, _)| *n == name)
                    .map(|(_, o, _)| *o);
                if option.and_then(|o| settings.remove(o)).is_none() {
                    if !if_exists {
                        return Err(SqlError::new(
                            3615,
                            "HY000",
                            format!("Variable {name} does not exist in persisted config file"),
                        ));
                    }
                    session.state_mut().warnings.push((
                        "Warning",
                        3615,
                        format!("Variable {name} does not exist in persisted config file"),
                    ));
                }
            }
        },
    }
    write(session, &settings)?;
    session.ok(sink, 0)
}

#[cfg(test)]
mod tests {
    use super::{parse, parse_file, Persist};

    #[test]
    fn persist_statements_are_recognised_from_their_text() {
        assert_eq!(
            parse("SET PERSIST max_connections = 300;"),
            Some(Persist::Set {
                only: false,
                name: "max_connections".into(),
                value: "300".into()
            })
        );
        assert_eq!(
            parse("set persist_only `shale_flush_log_at_trx_commit`=2"),
            Some(Persist::Set {
                only: true,
                name: "shale_flush_log_at_trx_commit".into(),
                value: "2".into()
            })
        );
        assert_eq!(
            parse("RESET PERSIST IF EXISTS wait_timeout"),
            Some(Persist::Reset {
                name: Some("wait_timeout".into()),
                if_exists: true
            })
        );
        assert_eq!(
            parse("RESET PERSIST"),
            Some(Persist::Reset {
                name: None,
                if_exists: false
            })
        );
        assert_eq!(parse("SET GLOBAL max_connections = 3"), None);
        assert_eq!(parse("SELECT 1"), None);
    }

    #[test]
    fn the_file_reads_its_shale_section_only() {
        let text = "# c\n[shale]\nmax-connections = 300\ndurability = flush\n[other]\nx = 1\n";
        let settings = parse_file(text);
        assert_eq!(settings.len(), 2);
        assert_eq!(settings["durability"], "flush");
    }
}
