//! The privilege check every statement passes before it runs (docs/server.md "Accounts and
//! privileges").
//!
//! What a statement needs comes from two sources, joined in `Session::plan_with_needs`, the one
//! function every parsed statement goes through:
//! - the binder records every table it resolves (`BindContext::touched`), subqueries, joins
//!   and INSERT ... SELECT sources included, so a table cannot be read unchecked;
//! - [`needs_of`] reads the statement's kind from the AST: the write target of INSERT, UPDATE
//!   and DELETE, and what each DDL or session command requires.
//!
//! Rules:
//! 1. A session without an account (an embedded `Session`, `shale sql`) is not checked; the
//!    server gives every connection its account.
//! 2. A statement kind [`needs_of`] does not list needs the SUPER privilege: a new kind of
//!    statement is closed to ordinary accounts until someone decides what it needs.
//! 3. A table the account may not touch gets 1142 whether or not it exists, so privileges do
//!    not reveal which tables exist.
//! 4. Privileges are read from the instance's grant cache at every check, so a GRANT or REVOKE
//!    applies to open sessions at their next statement (prepared ones included).

use sqlparser::ast::{self, Statement};

use crate::error::SqlError;
use crate::grants::{
    Account, Grants, ALTER, CREATE, CREATE_TEMPORARY_TABLES, DELETE, DROP, INDEX, INSERT,
    PRIVILEGES, SELECT, SUPER, SYSTEM_VARIABLES_ADMIN, UPDATE,
};

/// One thing a statement needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Need {
    /// Every privilege in `privs` on `db`.`table` (1142 names the first one missing).
    Table {
        privs: u32,
        db: String,
        table: String,
    },
    /// Some privilege on the table (DESCRIBE, SHOW CREATE TABLE, SHOW INDEX, CHECK TABLE).
    AnyOnTable { db: String, table: String },
    /// Every privilege in `privs` on `db`.* (CREATE and DROP DATABASE; 1044).
    Db { privs: u32, db: String },
    /// Something in the database (USE, SHOW TABLES; 1044).
    SeeDb { db: String },
    /// One of these global privileges (1227).
    Global { any_of: u32 },
}

/// What a statement needs, in the order MySQL checks it.
pub(crate) type Needs = Vec<Need>;

/// Who is asking: the account its privileges belong to and the user and host the client
/// connected as (what error messages name, `USER()`).
pub(crate) struct Asker<'a> {
    pub account: &'a Account,
    pub user: &'a str,
    pub client_host: &'a str,
}

fn privilege_name(bit: u32) -> &'static str {
    PRIVILEGES
        .iter()
        .find(|p| p.bit == bit)
        .map_or("UNKNOWN", |p| p.name)
}

/// MySQL's "(at least one of) the X or Y privilege(s)" wording.
fn names_of(any_of: u32) -> String {
    let names: Vec<&str> = PRIVILEGES
        .iter()
        .filter(|p| any_of & p.bit != 0)
        .map(|p| p.name)
        .collect();
    names.join(" or ")
}

pub(crate) fn table_denied(command: &str, asker: &Asker<'_>, table: &str) -> SqlError {
    SqlError::new(
        1142,
        "42000",
        format!(
            "{command} command denied to user '{}'@'{}' for table '{table}'",
            asker.user, asker.client_host
        ),
    )
}

pub(crate) fn db_denied(asker: &Asker<'_>, db: &str) -> SqlError {
    SqlError::new(
        1044,
        "42000",
        format!(
            "Access denied for user '{}'@'{}' to database '{db}'",
            asker.user, asker.client_host
        ),
    )
}

pub(crate) fn global_denied(any_of: u32) -> SqlError {
    SqlError::new(
        1227,
        "42000",
        format!(
            "Access denied; you need (at least one of) the {} privilege(s) for this operation",
            names_of(any_of)
        ),
    )
}

/// Checks every need in order; the first unmet one is the error.
pub(crate) fn check(grants: &Grants, asker: &Asker<'_>, needs: &[Need]) -> Result<(), SqlError> {
    let account = asker.account;
    // Global privileges need no per-database or per-table lookup (the hot path of an
    // administrator's prepared statements).
    let global = grants.global(account);
    for need in needs {
        let covered = match need {
            Need::Table { privs, .. } | Need::Db { privs, .. } => global.has(*privs),
            Need::AnyOnTable { .. } => global.any(crate::grants::ALL_TABLE),
            Need::SeeDb { .. } => global.any(!crate::grants::GRANT_OPTION),
            Need::Global { any_of } => global.any(*any_of),
        };
        if covered {
            continue;
        }
        match need {
            Need::Table { privs, db, table } => {
                let held = grants.on_table(account, db, table);
                if !held.has(*privs) {
                    // The statement's own privilege (DELETE) is named before the SELECT its
                    // WHERE needs, as MySQL names it.
                    let missing = (1..32)
                        .map(|i| 1u32 << i)
                        .chain([SELECT])
                        .find(|bit| privs & bit != 0 && !held.has(*bit))
                        .unwrap_or(SELECT);
                    return Err(table_denied(privilege_name(missing), asker, table));
                }
            }
            Need::AnyOnTable { db, table } => {
                if !grants
                    .on_table(account, db, table)
                    .any(crate::grants::ALL_TABLE)
                {
                    return Err(table_denied("SELECT", asker, table));
                }
            }
            Need::Db { privs, db } => {
                if !grants.on_db(account, db).has(*privs) {
                    return Err(db_denied(asker, db));
                }
            }
            Need::SeeDb { db } => {
                if !grants.sees_db(account, db) {
                    return Err(db_denied(asker, db));
                }
            }
            Need::Global { any_of } => {
                if !grants.global(account).any(*any_of) {
                    return Err(global_denied(*any_of));
                }
            }
        }
    }
    Ok(())
}

/// Whether SHOW DATABASES lists `db` for the session's account (everything without one).
pub(crate) fn shows_db(session: &crate::session::Session, db: &str) -> bool {
    session.state().account.as_ref().is_none_or(|account| {
        let grants = session.instance().grants();
        grants.global(account).any(crate::grants::SHOW_DATABASES) || grants.sees_db(account, db)
    })
}

/// Whether SHOW TABLES lists `db`.`table` for the session's account.
pub(crate) fn shows_table(session: &crate::session::Session, db: &str, table: &str) -> bool {
    session.state().account.as_ref().is_none_or(|account| {
        session
            .instance()
            .grants()
            .on_table(account, db, table)
            .any(crate::grants::ALL_TABLE)
    })
}

/// A table name as `(db, table)`, against the current database.
fn qualify(current: Option<&str>, name: &ast::ObjectName) -> Result<(String, String), SqlError> {
    let parts = crate::bind::ident_name(name);
    match parts.as_slice() {
        [t] => Ok((
            current.ok_or_else(SqlError::no_database)?.to_owned(),
            t.clone(),
        )),
        [d, t] => Ok((d.clone(), t.clone())),
        _ => Err(SqlError::unsupported(format!("name {name}"))),
    }
}

fn table_need(current: Option<&str>, name: &ast::ObjectName, privs: u32) -> Result<Need, SqlError> {
    let (db, table) = qualify(current, name)?;
    Ok(Need::Table { privs, db, table })
}

/// The tables of a FROM list's first relation (UPDATE's and DELETE's targets).
fn relation_names(from: &[ast::TableWithJoins]) -> Vec<&ast::ObjectName> {
    let mut out = Vec::new();
    for twj in from {
        if let ast::TableFactor::Table { name, .. } = &twj.relation {
            out.push(name);
        }
    }
    out
}

/// What `stmt` needs by its kind (the tables its binder resolves come on top, as SELECT,
/// in `Session::plan_with_needs`). `current` is the session's database.
pub(crate) fn needs_of(current: Option<&str>, stmt: &Statement) -> Result<Needs, SqlError> {
    let mut needs = Vec::new();
    match stmt {
        // Reads (every table comes from the binder), transaction control, session
        // variables, EXPLAIN (which plans its statement, checked as itself), and the SHOW
        // forms that list only what the account may see (show.rs) need nothing here.
        Statement::Query(_)
        | Statement::StartTransaction { .. }
        | Statement::Commit { .. }
        | Statement::Rollback { .. }
        | Statement::Savepoint { .. }
        | Statement::ReleaseSavepoint { .. }
        | Statement::ShowDatabases { .. }
        | Statement::ShowVariables { .. }
        | Statement::ShowStatus { .. }
        | Statement::Explain { .. }
        // Anyone may KILL their own sessions and list them: processlist.rs checks SUPER,
        // CONNECTION_ADMIN and PROCESS per session.
        | Statement::Kill { .. }
        | Statement::ShowProcessList { .. } => {}
        Statement::Insert(insert) => {
            let ast::TableObject::TableName(name) = &insert.table else {
                return Err(SqlError::unsupported("INSERT INTO a table function"));
            };
            let mut privs = INSERT;
            if insert.on.is_some() {
                privs |= UPDATE;
            }
            if insert.replace_into {
                privs |= DELETE;
            }
            needs.push(table_need(current, name, privs)?);
        }
        Statement::Update(update) => {
            // Columns read by WHERE need SELECT, as in MySQL.
            let read = if update.selection.is_some() {
                SELECT
            } else {
                0
            };
            for name in relation_names(std::slice::from_ref(&update.table)) {
                needs.push(table_need(current, name, UPDATE | read)?);
            }
        }
        Statement::Delete(delete) => {
            let read = if delete.selection.is_some() {
                SELECT
            } else {
                0
            };
            let from = match &delete.from {
                ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
            };
            for name in relation_names(from) {
                needs.push(table_need(current, name, DELETE | read)?);
            }
        }
        // MySQL: CREATE TEMPORARY TABLE needs only the CREATE TEMPORARY TABLES privilege on
        // its database (1044 without it), and then none on the table (temp_tables.rs rule 5).
        Statement::CreateTable(ct) if ct.temporary => {
            let (db, _) = qualify(current, &ct.name)?;
            needs.push(Need::Db {
                privs: CREATE_TEMPORARY_TABLES,
                db,
            });
        }
        Statement::CreateTable(ct) => {
            needs.push(table_need(current, &ct.name, CREATE)?);
        }
        // Views (views.rs rule 2): CREATE stands for MySQL's CREATE VIEW privilege, which
        // Shale's grants do not have; OR REPLACE and ALTER also drop the old view.
        Statement::CreateView(cv) => {
            let privs = if cv.or_replace { CREATE | DROP } else { CREATE };
            needs.push(table_need(current, &cv.name, privs)?);
        }
        Statement::AlterView(av) => needs.push(table_need(current, &av.name, CREATE | DROP)?),
        Statement::CreateIndex(ci) => needs.push(table_need(current, &ci.table_name, INDEX)?),
        // MySQL: ALTER TABLE needs ALTER, CREATE and INSERT on the table.
        Statement::AlterTable(at) => {
            needs.push(table_need(current, &at.name, ALTER | CREATE | INSERT)?);
        }
        // MySQL: RENAME TABLE needs ALTER and DROP on each source, CREATE and INSERT on each
        // new name (a session's temporary source needs none, Session::authorize).
        Statement::RenameTable(renames) => {
            for r in renames {
                needs.push(table_need(current, &r.old_name, ALTER | DROP)?);
                needs.push(table_need(current, &r.new_name, CREATE | INSERT)?);
            }
        }
        Statement::Truncate(t) => {
            for target in &t.table_names {
                needs.push(table_need(current, &target.name, DROP)?);
            }
        }
        Statement::Drop {
            object_type,
            names,
            table,
            ..
        } => match object_type {
            ast::ObjectType::Table | ast::ObjectType::View => {
                for name in names {
                    needs.push(table_need(current, name, DROP)?);
                }
            }
            ast::ObjectType::Database | ast::ObjectType::Schema => {
                for name in names {
                    let db = crate::bind::ident_name(name).join(".");
                    needs.push(Need::Db { privs: DROP, db });
                }
            }
            ast::ObjectType::Index => {
                if let Some(table) = table {
                    needs.push(table_need(current, table, INDEX)?);
                }
            }
            _ => needs.push(Need::Global { any_of: SUPER }),
        },
        Statement::CreateDatabase { db_name, .. }
        | Statement::CreateSchema {
            schema_name: ast::SchemaName::Simple(db_name),
            ..
        } => {
            let db = crate::bind::ident_name(db_name).join(".");
            needs.push(Need::Db { privs: CREATE, db });
        }
        Statement::Use(u) => {
            if let ast::Use::Object(n) | ast::Use::Database(n) | ast::Use::Schema(n) = u {
                let db = crate::bind::ident_name(n).join(".");
                needs.push(Need::SeeDb { db });
            }
        }
        // SET GLOBAL needs SUPER or SYSTEM_VARIABLES_ADMIN (MySQL 8's dynamic privilege).
        Statement::Set(set) => {
            if sets_global(set) {
                needs.push(Need::Global {
                    any_of: SUPER | SYSTEM_VARIABLES_ADMIN,
                });
            }
        }
        // SHOW TABLES of a database the account sees nothing in is 1044.
        Statement::ShowTables { show_options, .. } => {
            let db = match show_options
                .show_in
                .as_ref()
                .and_then(|i| i.parent_name.as_ref())
            {
                Some(name) => Some(crate::bind::ident_name(name).join(".")),
                None => current.map(str::to_owned),
            };
            if let Some(db) = db {
                needs.push(Need::SeeDb { db });
            }
        }
        Statement::ShowCreate { obj_name, .. } => {
            let (db, table) = qualify(current, obj_name)?;
            needs.push(Need::AnyOnTable { db, table });
        }
        Statement::ShowColumns { show_options, .. } => {
            if let Some(name) = show_options
                .show_in
                .as_ref()
                .and_then(|i| i.parent_name.as_ref())
            {
                let (db, table) = qualify(current, name)?;
                needs.push(Need::AnyOnTable { db, table });
            }
        }
        Statement::ExplainTable { table_name, .. } => {
            let (db, table) = qualify(current, table_name)?;
            needs.push(Need::AnyOnTable { db, table });
        }
        Statement::ShowVariable { variable } => {
            let words: Vec<String> = variable
                .iter()
                .map(|i| i.value.to_ascii_uppercase())
                .collect();
            match words.first().map(String::as_str) {
                Some("WARNINGS" | "ERRORS" | "ENGINES") => {}
                Some("INDEX" | "INDEXES" | "KEYS") if variable.len() >= 3 => {
                    let table = variable[2].value.clone();
                    let db = match variable.get(4) {
                        Some(db) => db.value.clone(),
                        None => current.ok_or_else(SqlError::no_database)?.to_owned(),
                    };
                    needs.push(Need::AnyOnTable { db, table });
                }
                _ => needs.push(Need::Global { any_of: SUPER }),
            }
        }
        // Rule 2: every other kind of statement.
        _ => needs.push(Need::Global { any_of: SUPER }),
    }
    Ok(needs)
}

fn sets_global(set: &ast::Set) -> bool {
    let global_name = |name: &ast::ObjectName| {
        let n = crate::bind::ident_name(name).join(".").to_ascii_lowercase();
        n.starts_with("@@global.") || n.starts_with("global.")
    };
    match set {
        ast::Set::SingleAssignment {
            variable, scope, ..
        } => matches!(scope, Some(ast::ContextModifier::Global)) || global_name(variable),
        ast::Set::MultipleAssignments { assignments } => assignments
            .iter()
            .any(|a| matches!(a.scope, Some(ast::ContextModifier::Global)) || global_name(&a.name)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(sql: &str) -> Needs {
        let stmt = crate::parse::parse(sql).unwrap().remove(0);
        needs_of(Some("d"), &stmt).unwrap()
    }

    fn table(privs: u32, table: &str) -> Need {
        Need::Table {
            privs,
            db: "d".into(),
            table: table.into(),
        }
    }

    /// Every statement kind the session runs, with what it needs: a new kind must be added
    /// here (or it needs SUPER, rule 2).
    #[test]
    fn each_statement_kind_needs_its_privileges() {
        let global = |any_of| vec![Need::Global { any_of }];
        let cases: Vec<(&str, Needs)> = vec![
            ("SELECT * FROM t", vec![]),
            ("INSERT INTO t VALUES (1)", vec![table(INSERT, "t")]),
            (
                "INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = 1",
                vec![table(INSERT | UPDATE, "t")],
            ),
            (
                "REPLACE INTO t VALUES (1)",
                vec![table(INSERT | DELETE, "t")],
            ),
            ("UPDATE t SET a = 1", vec![table(UPDATE, "t")]),
            (
                "UPDATE t SET a = 1 WHERE id = 2",
                vec![table(UPDATE | SELECT, "t")],
            ),
            ("DELETE FROM t", vec![table(DELETE, "t")]),
            (
                "DELETE FROM t WHERE id = 1",
                vec![table(DELETE | SELECT, "t")],
            ),
            (
                "CREATE TABLE t (id INT PRIMARY KEY)",
                vec![table(CREATE, "t")],
            ),
            ("CREATE INDEX i ON t (a)", vec![table(INDEX, "t")]),
            ("DROP INDEX i ON t", vec![table(INDEX, "t")]),
            (
                "ALTER TABLE t ADD INDEX i (a)",
                vec![table(ALTER | CREATE | INSERT, "t")],
            ),
            ("TRUNCATE TABLE t", vec![table(DROP, "t")]),
            (
                "DROP TABLE t, e.u",
                vec![
                    table(DROP, "t"),
                    Need::Table {
                        privs: DROP,
                        db: "e".into(),
                        table: "u".into(),
                    },
                ],
            ),
            (
                "CREATE DATABASE e",
                vec![Need::Db {
                    privs: CREATE,
                    db: "e".into(),
                }],
            ),
            (
                "DROP DATABASE e",
                vec![Need::Db {
                    privs: DROP,
                    db: "e".into(),
                }],
            ),
            ("USE e", vec![Need::SeeDb { db: "e".into() }]),
            ("SHOW TABLES", vec![Need::SeeDb { db: "d".into() }]),
            ("SHOW TABLES FROM e", vec![Need::SeeDb { db: "e".into() }]),
            ("SHOW DATABASES", vec![]),
            (
                "SHOW CREATE TABLE t",
                vec![Need::AnyOnTable {
                    db: "d".into(),
                    table: "t".into(),
                }],
            ),
            (
                "DESCRIBE t",
                vec![Need::AnyOnTable {
                    db: "d".into(),
                    table: "t".into(),
                }],
            ),
            (
                "SHOW COLUMNS FROM t",
                vec![Need::AnyOnTable {
                    db: "d".into(),
                    table: "t".into(),
                }],
            ),
            (
                "SHOW INDEX FROM t",
                vec![Need::AnyOnTable {
                    db: "d".into(),
                    table: "t".into(),
                }],
            ),
            ("SHOW WARNINGS", vec![]),
            ("SHOW VARIABLES", vec![]),
            ("BEGIN", vec![]),
            ("COMMIT", vec![]),
            ("ROLLBACK", vec![]),
            ("SAVEPOINT s", vec![]),
            ("SET autocommit = 0", vec![]),
            ("SET @x = 1", vec![]),
            (
                "SET GLOBAL autocommit = 0",
                global(SUPER | SYSTEM_VARIABLES_ADMIN),
            ),
            (
                "SET @@global.autocommit = 0",
                global(SUPER | SYSTEM_VARIABLES_ADMIN),
            ),
            ("KILL 7", vec![]),
            ("SHOW PROCESSLIST", vec![]),
            ("CREATE VIEW v AS SELECT 1", vec![table(CREATE, "v")]),
            (
                "CREATE OR REPLACE VIEW v AS SELECT 1",
                vec![table(CREATE | DROP, "v")],
            ),
            ("ALTER VIEW v AS SELECT 1", vec![table(CREATE | DROP, "v")]),
            ("DROP VIEW v, w", vec![table(DROP, "v"), table(DROP, "w")]),
            ("DROP TRIGGER tr", global(SUPER)),
        ];
        for (sql, expected) in cases {
            assert_eq!(needs(sql), expected, "{sql}");
        }
    }
}
