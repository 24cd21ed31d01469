//! `CHECK TABLE t [, t ...] [QUICK | FAST | MEDIUM | EXTENDED | CHANGED | FOR UPGRADE]`:
//! the table layer's index check (`TableTxn::check_table`, ARCHITECTURE.md invariant 6) as
//! MySQL's statement, with MySQL's result set (`Table`, `Op`, `Msg_type`, `Msg_text`).
//!
//! sqlparser has no CHECK TABLE, so a statement text that is exactly one CHECK TABLE is
//! recognized here before parsing (docs/sql.md lists it). Rules:
//! 1. Like MySQL, it commits an open transaction first (a table maintenance statement), then
//!    checks each table in a fresh transaction of its own, which takes no lock and writes
//!    nothing.
//! 2. A missing table is a row (`Error`, then `status: Operation failed`), not a statement
//!    error, as in MySQL; so is a table whose rows and indexes disagree (`error: Corrupt`).
//!    Every option is accepted and the check is always the full one.

use shale_table::{TableDef, TableLockMode, Value};

use crate::error::SqlError;
use crate::result::ResultSink;
use crate::session::{text_column, Session};

/// The tables named by `sql` if it is a single CHECK TABLE statement: (database or `None`
/// for the current one, table), unquoted.
pub(crate) fn parse_check_table(
    sql: &str,
    ansi_quotes: bool,
) -> Option<Vec<(Option<String>, String)>> {
    let text = sql.trim().trim_end_matches(';').trim_end();
    let (head, rest) = split_word(text)?;
    if !head.eq_ignore_ascii_case("CHECK") {
        return None;
    }
    let (table_word, mut rest) = split_word(rest)?;
    if !table_word.eq_ignore_ascii_case("TABLE") && !table_word.eq_ignore_ascii_case("TABLES") {
        return None;
    }
    let mut names = Vec::new();
    loop {
        let (name, after) = qualified_name(rest, ansi_quotes)?;
        names.push(name);
        let after = after.trim_start();
        if let Some(next) = after.strip_prefix(',') {
            rest = next;
            continue;
        }
        // Options: words only (QUICK, FAST, MEDIUM, EXTENDED, CHANGED, FOR UPGRADE).
        let options_ok = after.split_whitespace().all(|w| {
            [
                "QUICK", "FAST", "MEDIUM", "EXTENDED", "CHANGED", "FOR", "UPGRADE",
            ]
            .iter()
            .any(|o| o.eq_ignore_ascii_case(w))
        });
        return options_ok.then_some(names);
    }
}

/// The first whitespace-separated word and the rest.
pub(crate) fn split_word(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start();
    let end = text
        .find(|c: char| c.is_whitespace() || c == ',')
        .unwrap_or(text.len());
    (end > 0).then(|| (&text[..end], &text[end..]))
}

/// `name`, `` `name` ``, `db.name` with either part quoted (also `"name"` under
/// ANSI_QUOTES, `ansi_quotes`); returns the rest of the text.
pub(crate) fn qualified_name(
    text: &str,
    ansi_quotes: bool,
) -> Option<((Option<String>, String), &str)> {
    let (first, rest) = identifier(text.trim_start(), ansi_quotes)?;
    if let Some(after_dot) = rest.strip_prefix('.') {
        let (second, rest) = identifier(after_dot, ansi_quotes)?;
        return Some(((Some(first), second), rest));
    }
    Some(((None, first), rest))
}

fn identifier(text: &str, ansi_quotes: bool) -> Option<(String, &str)> {
    let quote = match text.chars().next() {
        Some('`') => Some('`'),
        Some('"') if ansi_quotes => Some('"'),
        _ => None,
    };
    if let Some(quote) = quote {
        let quoted = &text[1..];
        let mut name = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            if c == quote {
                if quoted[i + 1..].starts_with(quote) {
                    name.push(quote);
                    chars.next();
                } else {
                    return Some((name, &quoted[i + 1..]));
                }
            } else {
                name.push(c);
            }
        }
        return None;
    }
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(text.len());
    (end > 0).then(|| (text[..end].to_string(), &text[end..]))
}

/// What a table maintenance statement reports for one table: (`Msg_type`, `Msg_text`) rows.
pub(crate) type Messages = Vec<(&'static str, String)>;

/// The loop of every table maintenance statement (CHECK, OPTIMIZE, ANALYZE) and MySQL's result
/// set (`Table`, `Op`, `Msg_type`, `Msg_text`): an open transaction commits first, a missing
/// table is an `Error` row and `status: Operation failed`, and `each` reports on a table that
/// exists (given its definition and its `db.name` label).
pub(crate) fn per_table(
    session: &mut Session,
    op: &str,
    need: TableLockMode,
    tables: &[(Option<String>, String)],
    sink: &mut dyn ResultSink,
    mut each: impl FnMut(&mut Session, &TableDef, &str) -> Result<Messages, SqlError>,
) -> Result<(), SqlError> {
    session.ddl_prelude()?;
    let mut rows = Vec::new();
    for (db, name) in tables {
        let db = match db {
            Some(db) => db.clone(),
            None => session.current_db()?,
        };
        let label = format!("{db}.{name}");
        // The session's temporary tables over the catalog (temp_tables.rs).
        let catalog = session.catalog();
        // table_locks.rs rule 4: under LOCK TABLES, a row for a table not locked for `need`
        // (a temporary table needs no lock, as in MySQL).
        let lock = if session.temp_tables().find(&db, name).is_some() {
            Ok(())
        } else {
            session.check_ddl_lock(&db, name, need)
        };
        let messages = match lock {
            Err(e) => vec![
                ("Error", e.message),
                ("status", "Operation failed".to_owned()),
            ],
            Ok(()) => match crate::bind::lookup_table(&catalog, &db, name) {
                None => vec![
                    ("Error", format!("Table '{db}.{name}' doesn't exist")),
                    ("status", "Operation failed".to_owned()),
                ],
                Some(def) => each(session, &def, &label)?,
            },
        };
        for (kind, text) in messages {
            rows.push(vec![
                Value::Bytes(label.as_bytes().to_vec()),
                Value::Bytes(op.as_bytes().to_vec()),
                Value::Bytes(kind.as_bytes().to_vec()),
                Value::Bytes(text.into_bytes()),
            ]);
        }
    }
    let columns = ["Table", "Op", "Msg_type", "Msg_text"].map(text_column);
    session.text_rows(sink, &columns, &rows)
}

/// Runs CHECK TABLE on `tables` (rule 1) and sends MySQL's result set (rule 2).
pub(crate) fn check_tables(
    session: &mut Session,
    tables: &[(Option<String>, String)],
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    per_table(
        session,
        "check",
        TableLockMode::Read,
        tables,
        sink,
        |session, def, _label| {
            let mut txn = session.begin_txn()?;
            let outcome = txn.check_table(def);
            txn.rollback();
            Ok(match outcome {
                Ok(check) if check.is_ok() => vec![("status", "OK".to_owned())],
                Ok(check) => vec![
                    (
                        "error",
                        format!(
                            "{} rows; index entries {:?}; {} entries without their row; \
                         {} rows without their entry",
                            check.rows,
                            check.index_entries,
                            check.entries_without_rows.len(),
                            check.rows_without_entries.len()
                        ),
                    ),
                    ("error", "Corrupt".to_owned()),
                ],
                Err(e) => vec![("error", e.to_string()), ("error", "Corrupt".to_owned())],
            })
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(sql: &str) -> Option<Vec<(Option<String>, String)>> {
        parse_check_table(sql, false)
    }

    fn n(db: Option<&str>, table: &str) -> (Option<String>, String) {
        (db.map(str::to_string), table.to_string())
    }

    #[test]
    fn recognizes_check_table_forms() {
        assert_eq!(names("CHECK TABLE t"), Some(vec![n(None, "t")]));
        assert_eq!(
            names("check table a, `b c`.`d``e` extended;"),
            Some(vec![n(None, "a"), n(Some("b c"), "d`e")])
        );
        assert_eq!(
            names("CHECK TABLE db.t FOR UPGRADE"),
            Some(vec![n(Some("db"), "t")])
        );
        assert_eq!(names("CHECK TABLE"), None);
        assert_eq!(names("CHECK TABLE t; SELECT 1"), None);
        assert_eq!(names("CHECKSUM TABLE t"), None);
        assert_eq!(names("SELECT 1"), None);
    }

    #[test]
    fn double_quotes_name_a_table_only_under_ansi_quotes() {
        assert_eq!(
            parse_check_table("CHECK TABLE \"d\".\"t\"\"x\", `u`", true),
            Some(vec![n(Some("d"), "t\"x"), n(None, "u")])
        );
        assert_eq!(names("CHECK TABLE \"t\""), None);
    }
}
