//! The SHOW statements DBAs, GUI tools and mysqldump send that sqlparser has no form for (or
//! parses into nothing useful), recognized from the text before parsing, as `CHECK TABLE`
//! is: SHOW TABLE STATUS, SHOW CREATE DATABASE, SHOW COLLATION, SHOW CHARACTER SET, SHOW
//! ENGINE ... STATUS, SHOW TRIGGERS, and mysqldump's LOCK TABLES / UNLOCK TABLES.
//!
//! Rules:
//! 1. Only a text that is exactly one such statement is recognized (a trailing `;` and
//!    executable comments `/*!NNNNN ... */` allowed); anything else goes to the parser.
//! 2. SHOW TABLE STATUS, COLLATION and CHARACTER SET are SELECTs over the
//!    `information_schema` tables with MySQL's SHOW column names, so `LIKE` and `WHERE`
//!    (over those names) behave as for any query.
//! 3. LOCK TABLES and UNLOCK TABLES take and release the session's table locks
//!    (table_locks.rs).

use std::fmt::Write as _;

use super::text;
use crate::error::SqlError;
use crate::result::{ResultSink, StatementStatus};
use crate::session::{text_column, Session};

/// How a SHOW narrows its rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Filter {
    All,
    /// `LIKE 'pattern'` (the pattern as written, quotes removed).
    Like(String),
    /// `WHERE condition` (the text after WHERE).
    Where(String),
}

/// A recognized statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ShowCommand {
    TableStatus {
        database: Option<String>,
        filter: Filter,
    },
    CreateDatabase {
        name: String,
        if_not_exists: bool,
    },
    Collation(Filter),
    CharacterSet(Filter),
    EngineStatus(String),
    /// `SHOW ENGINE name TRANSACTION STATUS` (MyRocks' form).
    EngineTransactionStatus(String),
    Triggers {
        database: Option<String>,
    },
    /// `(database, table)` of each table named.
    LockTables(Vec<crate::table_locks::LockItem>),
    UnlockTables,
    /// `ALTER TABLE t {DISABLE|ENABLE} KEYS` (mysqldump wraps its INSERTs in them): nothing
    /// to do, MySQL's note 1031 as for InnoDB.
    AlterKeys(Option<String>, String),
}

/// A word of the statement: a bare or quoted identifier, or a string literal.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    /// `'...'` or `"..."` (MySQL's default mode reads both as strings).
    Str(String),
    Punct(char),
}

fn tokens(sql: &str) -> Option<Vec<Token>> {
    let mut out = Vec::new();
    let mut chars = sql.chars().peekable();
    while let Some(&ch) = chars.peek() {
        match ch {
            c if c.is_whitespace() => {
                chars.next();
            }
            '\'' | '"' | '`' => {
                chars.next();
                let mut s = String::new();
                loop {
                    match chars.next()? {
                        '\\' if ch != '`' => s.push(chars.next()?),
                        c if c == ch => {
                            if chars.peek() == Some(&ch) {
                                chars.next();
                                s.push(ch);
                            } else {
                                break;
                            }
                        }
                        c => s.push(c),
                    }
                }
                out.push(if ch == '`' {
                    Token::Word(s)
                } else {
                    Token::Str(s)
                });
            }
            c if c.is_alphanumeric() || c == '_' || c == '$' => {
                let mut s = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_alphanumeric() || c == '_' || c == '$' {
                        s.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push(Token::Word(s));
            }
            c => {
                chars.next();
                out.push(Token::Punct(c));
            }
        }
    }
    Some(out)
}

/// The text after the first `WHERE` word outside quotes.
fn where_text(sql: &str) -> Option<String> {
    let lower = sql.to_ascii_lowercase();
    let mut quote = None;
    let bytes = lower.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match (quote, b) {
            (None, b'\'' | b'"' | b'`') => quote = Some(b),
            (Some(q), c) if c == q => quote = None,
            (None, b'w')
                if lower[i..].starts_with("where")
                    && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
                    && bytes.get(i + 5).is_none_or(|c| !c.is_ascii_alphanumeric()) =>
            {
                return Some(sql[i + 5..].trim().to_string());
            }
            _ => {}
        }
    }
    None
}

/// `[LIKE 'p' | WHERE ...]` at `rest` (the tokens after the statement's fixed words).
fn filter(rest: &[Token], sql: &str) -> Option<Filter> {
    match rest {
        [] => Some(Filter::All),
        [Token::Word(w), Token::Str(p)] if w.eq_ignore_ascii_case("LIKE") => {
            Some(Filter::Like(p.clone()))
        }
        [Token::Word(w), ..] if w.eq_ignore_ascii_case("WHERE") => {
            where_text(sql).map(Filter::Where)
        }
        _ => None,
    }
}

/// `{FROM | IN} db` at the start of `rest`: the database and what follows.
fn from_db(rest: &[Token]) -> (Option<String>, &[Token]) {
    match rest {
        [Token::Word(kw), Token::Word(db), tail @ ..]
            if kw.eq_ignore_ascii_case("FROM") || kw.eq_ignore_ascii_case("IN") =>
        {
            (Some(db.clone()), tail)
        }
        _ => (None, rest),
    }
}

/// Recognizes one statement of this module (rule 1).
pub(crate) fn recognize(sql: &str) -> Option<ShowCommand> {
    const FIRST_WORDS: [&str; 4] = ["SHOW", "LOCK", "UNLOCK", "ALTER"];
    // mysqldump sends some of these inside an executable comment.
    let text = if sql.trim_start().starts_with("/*!") {
        crate::parse::preprocess(sql)
    } else if crate::parse::starts_with_any(sql, &FIRST_WORDS) {
        sql.to_string()
    } else {
        return None;
    };
    let first = text.split_whitespace().next()?;
    if !["SHOW", "LOCK", "UNLOCK", "ALTER"]
        .iter()
        .any(|w| first.eq_ignore_ascii_case(w))
    {
        return None;
    }
    let text = crate::parse::preprocess(&text);
    let text = text.trim().trim_end_matches(';').trim_end();
    let toks = tokens(text)?;
    if toks.contains(&Token::Punct(';')) {
        return None;
    }
    let words: Vec<String> = toks
        .iter()
        .take(3)
        .map(|t| match t {
            Token::Word(w) => w.to_ascii_uppercase(),
            _ => String::new(),
        })
        .collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["SHOW", "TABLE", "STATUS"] => {
            let (database, rest) = from_db(&toks[3..]);
            Some(ShowCommand::TableStatus {
                database,
                filter: filter(rest, text)?,
            })
        }
        ["SHOW", "CREATE", "DATABASE" | "SCHEMA"] => match &toks[3..] {
            [Token::Word(name)] => Some(ShowCommand::CreateDatabase {
                name: name.clone(),
                if_not_exists: false,
            }),
            [Token::Word(i), Token::Word(n), Token::Word(e), Token::Word(name)]
                if i.eq_ignore_ascii_case("IF")
                    && n.eq_ignore_ascii_case("NOT")
                    && e.eq_ignore_ascii_case("EXISTS") =>
            {
                Some(ShowCommand::CreateDatabase {
                    name: name.clone(),
                    if_not_exists: true,
                })
            }
            _ => None,
        },
        ["SHOW", "COLLATION", ..] => Some(ShowCommand::Collation(filter(&toks[2..], text)?)),
        ["SHOW", "CHARSET", ..] => Some(ShowCommand::CharacterSet(filter(&toks[2..], text)?)),
        ["SHOW", "CHARACTER", "SET"] => Some(ShowCommand::CharacterSet(filter(&toks[3..], text)?)),
        ["SHOW", "ENGINE", _] => match &toks[2..] {
            [Token::Word(engine), Token::Word(status)] if status.eq_ignore_ascii_case("STATUS") => {
                Some(ShowCommand::EngineStatus(engine.clone()))
            }
            [Token::Word(engine), Token::Word(transaction), Token::Word(status)]
                if transaction.eq_ignore_ascii_case("TRANSACTION")
                    && status.eq_ignore_ascii_case("STATUS") =>
            {
                Some(ShowCommand::EngineTransactionStatus(engine.clone()))
            }
            _ => None,
        },
        ["SHOW", "TRIGGERS", ..] => {
            let (database, rest) = from_db(&toks[2..]);
            filter(rest, text)?;
            Some(ShowCommand::Triggers { database })
        }
        ["UNLOCK", "TABLES" | "TABLE", ..] if toks.len() == 2 => Some(ShowCommand::UnlockTables),
        ["LOCK", "TABLES" | "TABLE", ..] => lock_tables(&toks[2..]).map(ShowCommand::LockTables),
        ["ALTER", "TABLE", _] => match &toks[2..] {
            [Token::Word(t), Token::Word(k), Token::Word(keys)]
                if (k.eq_ignore_ascii_case("DISABLE") || k.eq_ignore_ascii_case("ENABLE"))
                    && keys.eq_ignore_ascii_case("KEYS") =>
            {
                Some(ShowCommand::AlterKeys(None, t.clone()))
            }
            [Token::Word(d), Token::Punct('.'), Token::Word(t), Token::Word(k), Token::Word(keys)]
                if (k.eq_ignore_ascii_case("DISABLE") || k.eq_ignore_ascii_case("ENABLE"))
                    && keys.eq_ignore_ascii_case("KEYS") =>
            {
                Some(ShowCommand::AlterKeys(Some(d.clone()), t.clone()))
            }
            _ => None,
        },
        _ => None,
    }
}

/// `t [[AS] alias] {READ [LOCAL] | [LOW_PRIORITY] WRITE} [, ...]`.
fn lock_tables(toks: &[Token]) -> Option<Vec<crate::table_locks::LockItem>> {
    let mut out = Vec::new();
    for item in toks.split(|t| *t == Token::Punct(',')) {
        let (name, rest) = match item {
            [Token::Word(d), Token::Punct('.'), Token::Word(t), rest @ ..] => {
                ((Some(d.clone()), t.clone()), rest)
            }
            [Token::Word(t), rest @ ..] => ((None, t.clone()), rest),
            _ => return None,
        };
        let mode: Vec<String> = rest
            .iter()
            .map(|t| match t {
                Token::Word(w) => w.to_ascii_uppercase(),
                _ => String::new(),
            })
            .collect();
        let mode: Vec<&str> = mode.iter().map(String::as_str).collect();
        let mode = match mode.as_slice() {
            ["AS", _, tail @ ..] => tail,
            [first, tail @ ..] if !matches!(*first, "READ" | "WRITE" | "LOW_PRIORITY") => tail,
            all => all,
        };
        let mode = match mode {
            ["READ"] | ["READ", "LOCAL"] => shale_table::TableLockMode::Read,
            ["WRITE"] | ["LOW_PRIORITY", "WRITE"] => shale_table::TableLockMode::Write,
            _ => return None,
        };
        out.push((name.0, name.1, mode));
    }
    (!out.is_empty()).then_some(out)
}

fn quote_str(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// The SELECT a SHOW is (rule 2): `select` lists `column AS Name`, over `table`, with
/// `condition` always applied and the SHOW's filter over the SHOW's names.
fn show_query(
    select: &str,
    table: &str,
    condition: &str,
    like_column: &str,
    filter: &Filter,
    order: &str,
) -> String {
    let mut sql = format!("SELECT * FROM (SELECT {select} FROM information_schema.{table}");
    if !condition.is_empty() {
        let _ = write!(sql, " WHERE {condition}");
    }
    let _ = write!(sql, ") AS `show` ");
    match filter {
        Filter::All => {}
        Filter::Like(p) => {
            let _ = write!(sql, "WHERE `{like_column}` LIKE {} ", quote_str(p));
        }
        Filter::Where(w) => {
            let _ = write!(sql, "WHERE {w} ");
        }
    }
    let _ = write!(sql, "ORDER BY {order}");
    sql
}

const TABLE_STATUS: &str = "TABLE_NAME AS `Name`, ENGINE AS `Engine`, VERSION AS `Version`, \
     ROW_FORMAT AS `Row_format`, TABLE_ROWS AS `Rows`, AVG_ROW_LENGTH AS `Avg_row_length`, \
     DATA_LENGTH AS `Data_length`, MAX_DATA_LENGTH AS `Max_data_length`, \
     INDEX_LENGTH AS `Index_length`, DATA_FREE AS `Data_free`, \
     AUTO_INCREMENT AS `Auto_increment`, CREATE_TIME AS `Create_time`, \
     UPDATE_TIME AS `Update_time`, CHECK_TIME AS `Check_time`, \
     TABLE_COLLATION AS `Collation`, CHECKSUM AS `Checksum`, \
     CREATE_OPTIONS AS `Create_options`, TABLE_COMMENT AS `Comment`";

const COLLATION: &str = "COLLATION_NAME AS `Collation`, CHARACTER_SET_NAME AS `Charset`, \
     ID AS `Id`, IS_DEFAULT AS `Default`, IS_COMPILED AS `Compiled`, SORTLEN AS `Sortlen`, \
     PAD_ATTRIBUTE AS `Pad_attribute`";

const CHARSET: &str = "CHARACTER_SET_NAME AS `Charset`, DESCRIPTION AS `Description`, \
     DEFAULT_COLLATE_NAME AS `Default collation`, MAXLEN AS `Maxlen`";

impl ShowCommand {
    pub(crate) fn run(
        &self,
        session: &mut Session,
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError> {
        match self {
            ShowCommand::TableStatus { database, filter } => {
                let db = match database {
                    Some(d) => d.clone(),
                    None => session.current_db()?,
                };
                let known = super::is_database(&db)
                    || session
                        .instance()
                        .store
                        .catalog()
                        .databases
                        .contains_key(&db);
                if !known {
                    return Err(SqlError::unknown_database(&db));
                }
                let sql = show_query(
                    TABLE_STATUS,
                    "TABLES",
                    &format!("TABLE_SCHEMA = {}", quote_str(&db)),
                    "Name",
                    filter,
                    "`Name`",
                );
                session.execute(&sql, sink)
            }
            ShowCommand::Collation(filter) => session.execute(
                &show_query(
                    COLLATION,
                    "COLLATIONS",
                    "",
                    "Collation",
                    filter,
                    "`Collation`",
                ),
                sink,
            ),
            ShowCommand::CharacterSet(filter) => session.execute(
                &show_query(
                    CHARSET,
                    "CHARACTER_SETS",
                    "",
                    "Charset",
                    filter,
                    "`Charset`",
                ),
                sink,
            ),
            ShowCommand::CreateDatabase {
                name,
                if_not_exists,
            } => {
                let (name, charset, collation) = if super::is_database(name) {
                    (super::DATABASE.to_string(), "utf8mb3", "utf8mb3_general_ci")
                } else if session
                    .instance()
                    .store
                    .catalog()
                    .databases
                    .contains_key(name)
                {
                    (name.clone(), "utf8mb4", "utf8mb4_general_ci")
                } else {
                    return Err(SqlError::unknown_database(name));
                };
                let guard = if *if_not_exists {
                    "/*!32312 IF NOT EXISTS*/ "
                } else {
                    ""
                };
                let create = format!(
                    "CREATE DATABASE {guard}`{}` /*!40100 DEFAULT CHARACTER SET {charset} \
                     COLLATE {collation} */ /*!80016 DEFAULT ENCRYPTION='N' */",
                    name.replace('`', "``")
                );
                session.state_mut().warnings.clear();
                session.text_rows(
                    sink,
                    &[text_column("Database"), text_column("Create Database")],
                    &[vec![text(&name), text(&create)]],
                )
            }
            ShowCommand::EngineTransactionStatus(engine) => {
                if !engine.eq_ignore_ascii_case("SHALE") {
                    return Err(SqlError::new(
                        1286,
                        "42000",
                        format!("Unknown storage engine '{engine}'"),
                    ));
                }
                let view = crate::processlist::sessions_view(
                    session.instance(),
                    session.state().account.as_ref(),
                );
                let status = super::transaction_status(&session.instance().store, &view)?;
                let rows = vec![vec![text("SHALE"), text(""), text(&status)]];
                session.state_mut().warnings.clear();
                session.text_rows(
                    sink,
                    &[
                        text_column("Type"),
                        text_column("Name"),
                        text_column("Status"),
                    ],
                    &rows,
                )
            }
            ShowCommand::EngineStatus(engine) => {
                if !engine.eq_ignore_ascii_case("SHALE") {
                    return Err(SqlError::new(
                        1286,
                        "42000",
                        format!("Unknown storage engine '{engine}'"),
                    ));
                }
                let rows = super::engine_status::rows(&session.instance().store);
                session.state_mut().warnings.clear();
                session.text_rows(
                    sink,
                    &[
                        text_column("Type"),
                        text_column("Name"),
                        text_column("Status"),
                    ],
                    &rows,
                )
            }
            ShowCommand::Triggers { database } => {
                let db = match database {
                    Some(d) => d.clone(),
                    None => session.current_db()?,
                };
                if !super::is_database(&db)
                    && !session
                        .instance()
                        .store
                        .catalog()
                        .databases
                        .contains_key(&db)
                {
                    return Err(SqlError::unknown_database(&db));
                }
                let columns: Vec<_> = [
                    "Trigger",
                    "Event",
                    "Table",
                    "Statement",
                    "Timing",
                    "Created",
                    "sql_mode",
                    "Definer",
                    "character_set_client",
                    "collation_connection",
                    "Database Collation",
                ]
                .into_iter()
                .map(text_column)
                .collect();
                session.state_mut().warnings.clear();
                session.text_rows(sink, &columns, &[])
            }
            ShowCommand::LockTables(tables) => {
                session.lock_tables(tables)?;
                session.state_mut().warnings.clear();
                ok(session, sink)
            }
            ShowCommand::AlterKeys(db, t) => {
                let db = match db {
                    Some(d) => d.clone(),
                    None => session.current_db()?,
                };
                let catalog = session.instance().store.catalog();
                let Some(def) = crate::bind::lookup_table(&catalog, &db, t) else {
                    return Err(SqlError::no_such_table(&db, t));
                };
                let warnings = &mut session.state_mut().warnings;
                warnings.clear();
                warnings.push((
                    "Note",
                    1031,
                    format!(
                        "Table storage engine for '{}' doesn't have this option",
                        def.name
                    ),
                ));
                ok(session, sink)
            }
            ShowCommand::UnlockTables => {
                session.unlock_tables()?;
                session.state_mut().warnings.clear();
                ok(session, sink)
            }
        }
    }
}

/// An OK packet for a statement that changed nothing.
fn ok(session: &Session, sink: &mut dyn ResultSink) -> Result<(), SqlError> {
    sink.ok(&StatementStatus {
        warnings: session.warning_count(),
        in_transaction: session.in_transaction(),
        autocommit: session.autocommit(),
        ..StatementStatus::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_the_forms_tools_send() {
        assert_eq!(
            recognize("show table status like 't1'"),
            Some(ShowCommand::TableStatus {
                database: None,
                filter: Filter::Like("t1".into())
            })
        );
        assert_eq!(
            recognize("SHOW TABLE STATUS FROM `app` WHERE Rows > 2;"),
            Some(ShowCommand::TableStatus {
                database: Some("app".into()),
                filter: Filter::Where("Rows > 2".into())
            })
        );
        assert_eq!(
            recognize("SHOW CREATE DATABASE IF NOT EXISTS `a b`"),
            Some(ShowCommand::CreateDatabase {
                name: "a b".into(),
                if_not_exists: true
            })
        );
        assert_eq!(
            recognize("SHOW CHARACTER SET LIKE 'utf8%'"),
            Some(ShowCommand::CharacterSet(Filter::Like("utf8%".into())))
        );
        assert_eq!(
            recognize("show engine shale status"),
            Some(ShowCommand::EngineStatus("shale".into()))
        );
        assert_eq!(
            recognize("LOCK TABLES `t` READ /*!32311 LOCAL */, d.u AS x WRITE"),
            Some(ShowCommand::LockTables(vec![
                (None, "t".into(), shale_table::TableLockMode::Read),
                (
                    Some("d".into()),
                    "u".into(),
                    shale_table::TableLockMode::Write
                )
            ]))
        );
        assert_eq!(
            recognize("SHOW TRIGGERS LIKE 't'"),
            Some(ShowCommand::Triggers { database: None })
        );
        assert_eq!(recognize("UNLOCK TABLES"), Some(ShowCommand::UnlockTables));
        assert_eq!(
            recognize("/*!40000 ALTER TABLE `t` DISABLE KEYS */"),
            Some(ShowCommand::AlterKeys(None, "t".into()))
        );
        assert_eq!(recognize("ALTER TABLE t ADD INDEX (a)"), None);
        // Not ours: left to the parser.
        assert_eq!(recognize("SHOW TABLES"), None);
        assert_eq!(recognize("SHOW TABLE STATUS; SELECT 1"), None);
        assert_eq!(recognize("LOCK TABLES t"), None);
        assert_eq!(recognize("SELECT 'SHOW COLLATION'"), None);
    }

    #[test]
    fn where_is_found_outside_quotes_only() {
        assert_eq!(
            where_text("SHOW COLLATION WHERE `Collation` = 'where'"),
            Some("`Collation` = 'where'".into())
        );
        assert_eq!(where_text("SHOW COLLATION LIKE 'where'"), None);
    }
}
