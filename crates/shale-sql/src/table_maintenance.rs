//! `OPTIMIZE [NO_WRITE_TO_BINLOG | LOCAL] TABLE t [, t ...]` and
//! `ANALYZE [NO_WRITE_TO_BINLOG | LOCAL] TABLE t [, t ...]` (issue 24), with MySQL's result
//! set (`Table`, `Op`, `Msg_type`, `Msg_text`), recognized from the text before parsing as
//! CHECK TABLE is (check_table.rs).
//!
//! - OPTIMIZE compacts the key range of each of the table's indexes, primary first, as
//!   `MyRocks`' OPTIMIZE TABLE does: the engine's `compact_range` drops deleted rows, old
//!   versions and tombstones and leaves the range at the bottom of the tree.
//! - ANALYZE measures each index's estimate now and estimates its cardinality again
//!   (`Store::analyze_index`), replacing the figures SHOW INDEX shows; reading each index
//!   also proves it readable.
//!
//! Rules:
//! 1. Like MySQL, each commits an open transaction first (a table maintenance statement).
//! 2. A missing table is a row (`Error`, then `status: Operation failed`), not a statement
//!    error, as in MySQL; so is an engine failure on one table.
//! 3. While it runs, SHOW PROCESSLIST's State says which index of which table it is at
//!    (`optimizing app.t: index 2 of 3 (k_1)`; ANALYZE: `Analyzing ...`, MySQL's state word);
//!    Info is the statement, as for every statement.
//! 4. Both need SELECT and INSERT on each table (MySQL's rule).

use shale_table::{IndexChoice, TableDef, TableLockMode};

use crate::check_table::{per_table, qualified_name, split_word};
use crate::error::SqlError;
use crate::result::ResultSink;
use crate::session::Session;

/// Which statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Maintenance {
    Optimize,
    Analyze,
}

impl Maintenance {
    /// The `Op` column.
    fn op(self) -> &'static str {
        match self {
            Maintenance::Optimize => "optimize",
            Maintenance::Analyze => "analyze",
        }
    }

    /// The processlist State prefix (rule 3).
    fn state(self) -> &'static str {
        match self {
            Maintenance::Optimize => "optimizing",
            Maintenance::Analyze => "Analyzing",
        }
    }
}

/// A recognized statement: which one, and the tables (database or `None` for the current
/// one, table).
pub(crate) type Parsed = (Maintenance, Vec<(Option<String>, String)>);

/// Recognizes one OPTIMIZE TABLE or ANALYZE TABLE statement (`;` optional); `None` for any
/// other text (ANALYZE TABLE ... UPDATE/DROP HISTOGRAM included, which is not supported and
/// falls through to the parser's error).
pub(crate) fn parse(sql: &str, ansi_quotes: bool) -> Option<Parsed> {
    let text = sql.trim().trim_end_matches(';').trim_end();
    let (head, mut rest) = split_word(text)?;
    let kind = if head.eq_ignore_ascii_case("OPTIMIZE") {
        Maintenance::Optimize
    } else if head.eq_ignore_ascii_case("ANALYZE") {
        Maintenance::Analyze
    } else {
        return None;
    };
    let (mut word, mut after) = split_word(rest)?;
    if word.eq_ignore_ascii_case("NO_WRITE_TO_BINLOG") || word.eq_ignore_ascii_case("LOCAL") {
        rest = after;
        (word, after) = split_word(rest)?;
    }
    if !word.eq_ignore_ascii_case("TABLE") && !word.eq_ignore_ascii_case("TABLES") {
        return None;
    }
    rest = after;
    let mut names = Vec::new();
    loop {
        let (name, after) = qualified_name(rest, ansi_quotes)?;
        names.push(name);
        let after = after.trim_start();
        if let Some(next) = after.strip_prefix(',') {
            rest = next;
            continue;
        }
        return after.is_empty().then_some((kind, names));
    }
}

/// The privileges rule 4 asks for.
pub(crate) fn needs(
    session: &Session,
    tables: &[(Option<String>, String)],
) -> Result<Vec<crate::privilege::Need>, SqlError> {
    let mut needs = Vec::new();
    for (db, table) in tables {
        let db = db.clone().map_or_else(|| session.current_db(), Ok)?;
        needs.push(crate::privilege::Need::Table {
            privs: crate::grants::SELECT | crate::grants::INSERT,
            db,
            table: table.clone(),
        });
    }
    Ok(needs)
}

/// Every index of `def`, primary first, with its name.
fn indexes(def: &TableDef) -> Vec<(IndexChoice, String)> {
    let mut out = vec![(IndexChoice::Primary, "PRIMARY".to_owned())];
    out.extend(
        def.indexes
            .iter()
            .enumerate()
            .map(|(i, index)| (IndexChoice::Secondary(i), index.name.clone())),
    );
    out
}

/// Runs the statement on `tables` (rules 1 to 3) and sends MySQL's result set.
pub(crate) fn run(
    session: &mut Session,
    kind: Maintenance,
    tables: &[(Option<String>, String)],
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    let need = match kind {
        Maintenance::Optimize => TableLockMode::Write,
        Maintenance::Analyze => TableLockMode::Read,
    };
    per_table(
        session,
        kind.op(),
        need,
        tables,
        sink,
        |session, def, label| {
            let indexes = indexes(def);
            for (n, (index, index_name)) in indexes.iter().enumerate() {
                if session.process().interrupt_requested() {
                    return Err(crate::interrupt::interrupted());
                }
                session.process().set_state(&format!(
                    "{} {label}: index {} of {} ({index_name})",
                    kind.state(),
                    n + 1,
                    indexes.len()
                ));
                let store = &session.instance().store;
                let outcome = match kind {
                    Maintenance::Optimize => store.compact_index(def, *index),
                    Maintenance::Analyze => store.analyze_index(def, *index).map(|_| ()),
                };
                if let Err(e) = outcome {
                    return Ok(vec![
                        ("Error", e.to_string()),
                        ("status", "Operation failed".to_owned()),
                    ]);
                }
            }
            Ok(vec![("status", "OK".to_owned())])
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(sql: &str) -> Option<Parsed> {
        parse(sql, false)
    }

    fn n(db: Option<&str>, table: &str) -> (Option<String>, String) {
        (db.map(str::to_string), table.to_string())
    }

    #[test]
    fn recognizes_optimize_and_analyze_forms() {
        assert_eq!(
            parse_text("OPTIMIZE TABLE t"),
            Some((Maintenance::Optimize, vec![n(None, "t")]))
        );
        assert_eq!(
            parse_text("analyze local table a, `b c`.`d`;"),
            Some((
                Maintenance::Analyze,
                vec![n(None, "a"), n(Some("b c"), "d")]
            ))
        );
        assert_eq!(
            parse_text("OPTIMIZE NO_WRITE_TO_BINLOG TABLES db.t"),
            Some((Maintenance::Optimize, vec![n(Some("db"), "t")]))
        );
        assert_eq!(parse_text("ANALYZE TABLE t UPDATE HISTOGRAM ON c"), None);
        assert_eq!(parse_text("OPTIMIZE TABLE"), None);
        assert_eq!(parse_text("OPTIMIZE TABLE t; SELECT 1"), None);
        assert_eq!(parse_text("SELECT 1"), None);
    }
}
