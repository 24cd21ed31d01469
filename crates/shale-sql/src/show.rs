//! SHOW statements, DESCRIBE and EXPLAIN: result sets built from the catalog and the
//! session, with MySQL's column names.

use shale_table::{Collation, IndexChoice, Value};
use sqlparser::ast::{self, Statement};

use crate::error::SqlError;
use crate::result::ResultSink;
use crate::session::{text_column, Session};

fn text(s: &str) -> Value {
    Value::Bytes(s.as_bytes().to_vec())
}

/// A LIKE filter on names (None: every name, or a WHERE, which [`where_condition`] gives).
fn like_filter(filter: Option<&ast::ShowStatementFilter>) -> Option<String> {
    match filter {
        Some(
            ast::ShowStatementFilter::Like(p)
            | ast::ShowStatementFilter::ILike(p)
            | ast::ShowStatementFilter::NoKeyword(p),
        ) => Some(p.clone()),
        Some(ast::ShowStatementFilter::Where(_)) | None => None,
    }
}

/// A `WHERE condition` over the SHOW's output columns (show_where.rs).
fn where_condition(filter: Option<&ast::ShowStatementFilter>) -> Option<&ast::Expr> {
    match filter {
        Some(ast::ShowStatementFilter::Where(condition)) => Some(condition),
        _ => None,
    }
}

fn matches(name: &str, pattern: Option<&String>) -> bool {
    pattern.is_none_or(|p| {
        crate::value::like(&text(name), &text(p), '\\', Collation::Utf8mb4GeneralCi)
            == Value::Int(1)
    })
}

fn show_in_db(session: &Session, opts: &ast::ShowStatementOptions) -> Result<String, SqlError> {
    match opts.show_in.as_ref().and_then(|i| i.parent_name.as_ref()) {
        Some(n) => Ok(crate::bind::ident_name(n).join(".")),
        None => session
            .current_database()
            .map(str::to_string)
            .ok_or_else(SqlError::no_database),
    }
}

fn options_filter(opts: &ast::ShowStatementOptions) -> Option<ast::ShowStatementFilter> {
    match &opts.filter_position {
        Some(
            ast::ShowStatementFilterPosition::Infix(f)
            | ast::ShowStatementFilterPosition::Suffix(f),
        ) => Some(f.clone()),
        None => None,
    }
}

/// Runs a SHOW, DESCRIBE or EXPLAIN statement (1235 for anything else).
pub(crate) fn show(
    session: &mut Session,
    stmt: &Statement,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    match stmt {
        Statement::ShowDatabases { show_options, .. } => {
            let filter = options_filter(show_options);
            let pattern = like_filter(filter.as_ref());
            let catalog = session.instance().store.catalog();
            let mut names: Vec<String> = catalog.databases.keys().cloned().collect();
            names.push(crate::info_schema::DATABASE.to_string());
            names.sort();
            let rows: Vec<Vec<Value>> = names
                .iter()
                .filter(|n| matches(n, pattern.as_ref()))
                .filter(|n| crate::privilege::shows_db(session, n))
                .map(|n| vec![text(n)])
                .collect();
            let cols = [text_column("Database")];
            let rows =
                crate::show_where::retain(session, &cols, rows, where_condition(filter.as_ref()))?;
            session.state_mut().warnings.clear();
            session.text_rows(sink, &cols, &rows)
        }
        Statement::ShowTables {
            show_options, full, ..
        } => {
            let db = show_in_db(session, show_options)?;
            let filter = options_filter(show_options);
            let pattern = like_filter(filter.as_ref());
            let catalog = session.instance().store.catalog();
            let virtual_tables =
                crate::info_schema::is_database(&db).then(crate::info_schema::table_names);
            let mut names: Vec<(String, &str)> = match (&virtual_tables, catalog.databases.get(&db))
            {
                (Some(v), _) => v.iter().map(|n| (n.clone(), "SYSTEM VIEW")).collect(),
                (None, Some(tables)) => tables.keys().map(|n| (n.clone(), "BASE TABLE")).collect(),
                (None, None) => return Err(SqlError::unknown_database(&db)),
            };
            names.extend(
                crate::views::names(&catalog, &db)
                    .into_iter()
                    .map(|n| (n, "VIEW")),
            );
            names.sort();
            let rows: Vec<Vec<Value>> = names
                .iter()
                .filter(|(n, _)| matches(n, pattern.as_ref()))
                .filter(|(n, _)| crate::privilege::shows_table(session, &db, n))
                .map(|(n, table_type)| {
                    let mut r = vec![text(n)];
                    if *full {
                        r.push(text(table_type));
                    }
                    r
                })
                .collect();
            let mut cols = vec![text_column(&format!("Tables_in_{db}"))];
            if *full {
                cols.push(text_column("Table_type"));
            }
            let rows =
                crate::show_where::retain(session, &cols, rows, where_condition(filter.as_ref()))?;
            session.state_mut().warnings.clear();
            session.text_rows(sink, &cols, &rows)
        }
        Statement::ShowVariables { filter, global, .. } => {
            let pattern = like_filter(filter.as_ref());
            let state = session.state();
            let prefix = if *global { "global." } else { "" };
            let mut names: Vec<String> = state.defaults.keys().map(|k| (*k).to_string()).collect();
            names.extend(state.vars.keys().cloned());
            names.sort();
            names.dedup();
            let rows: Vec<Vec<Value>> = names
                .iter()
                .filter(|n| matches(n, pattern.as_ref()))
                .map(|n| {
                    let v = state.variable(&format!("{prefix}{n}"));
                    vec![
                        text(n),
                        text(&crate::value::as_text(&v).unwrap_or_default()),
                    ]
                })
                .collect();
            let cols = [text_column("Variable_name"), text_column("Value")];
            let rows =
                crate::show_where::retain(session, &cols, rows, where_condition(filter.as_ref()))?;
            session.text_rows(sink, &cols, &rows)
        }
        Statement::ShowVariable { variable } => {
            let words: Vec<String> = variable
                .iter()
                .map(|i| i.value.to_ascii_uppercase())
                .collect();
            match words
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .as_slice()
            {
                ["WARNINGS" | "ERRORS"] => {
                    let errors_only = words[0] == "ERRORS";
                    let rows: Vec<Vec<Value>> = session
                        .state()
                        .warnings
                        .iter()
                        .filter(|w| !errors_only || w.0 == "Error")
                        .map(|(level, code, msg)| {
                            vec![text(level), Value::UInt(u64::from(*code)), text(msg)]
                        })
                        .collect();
                    let mut code = crate::types::SqlType::Int {
                        unsigned: true,
                        len: 4,
                    }
                    .meta("Code", false);
                    code.type_code = crate::result::ColumnTypeCode::Long;
                    session.text_rows(
                        sink,
                        &[text_column("Level"), code, text_column("Message")],
                        &rows,
                    )
                }
                ["ENGINES"] => session.text_rows(
                    sink,
                    &[
                        text_column("Engine"),
                        text_column("Support"),
                        text_column("Comment"),
                    ],
                    &[vec![
                        text("Shale"),
                        text("DEFAULT"),
                        text("LSM-tree storage, MyRocks' data model"),
                    ]],
                ),
                ["INDEX" | "INDEXES" | "KEYS", "FROM" | "IN", rest @ ..] if !rest.is_empty() => {
                    let names: Vec<&str> =
                        variable.iter().skip(2).map(|i| i.value.as_str()).collect();
                    show_index(session, &names, sink)
                }
                _ => Err(SqlError::unsupported(stmt.to_string())),
            }
        }
        Statement::ShowCreate {
            obj_type: ast::ShowCreateObject::View,
            obj_name,
        } => crate::views::show_create(session, obj_name, sink),
        Statement::ShowCreate {
            obj_type: ast::ShowCreateObject::Table,
            obj_name,
        } => {
            let (db, name) = qualify(session, obj_name)?;
            let catalog = session.catalog();
            let temporary = session.temp_tables().find(&db, &name).is_some();
            if !temporary && catalog.view(&db, &name).is_some() {
                return crate::views::show_create(session, obj_name, sink);
            }
            let def = crate::bind::lookup_table(&catalog, &db, &name)
                .ok_or_else(|| SqlError::no_such_table(&db, &name))?;
            let mut create = crate::ddl::show_create(&def);
            if temporary {
                create = crate::temp_tables::show_create(create);
            }
            session.state_mut().warnings.clear();
            session.text_rows(
                sink,
                &[text_column("Table"), text_column("Create Table")],
                &[vec![text(&def.name), text(&create)]],
            )
        }
        Statement::ShowColumns {
            show_options, full, ..
        } => {
            let Some(name) = show_options
                .show_in
                .as_ref()
                .and_then(|i| i.parent_name.as_ref())
            else {
                return Err(SqlError::syntax("", 1));
            };
            describe(
                session,
                name,
                *full,
                options_filter(show_options).as_ref(),
                sink,
            )
        }
        Statement::ExplainTable { table_name, .. } => {
            describe(session, table_name, false, None, sink)
        }
        Statement::Explain {
            statement,
            analyze: false,
            ..
        } => {
            let plan = session.explain(statement)?;
            let rows: Vec<Vec<Value>> = plan.lines().map(|l| vec![text(l)]).collect();
            session.text_rows(sink, &[text_column("plan")], &rows)
        }
        other => Err(SqlError::unsupported(first_words(&other.to_string()))),
    }
}

/// The statement's first words, for 1235's message.
fn first_words(s: &str) -> String {
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

fn qualify(session: &Session, name: &ast::ObjectName) -> Result<(String, String), SqlError> {
    let parts = crate::bind::ident_name(name);
    match parts.as_slice() {
        [t] => Ok((
            session
                .current_database()
                .ok_or_else(SqlError::no_database)?
                .to_string(),
            t.clone(),
        )),
        [d, t] => Ok((d.clone(), t.clone())),
        _ => Err(SqlError::unsupported(format!("name {name}"))),
    }
}

/// SHOW INDEX FROM t [FROM db] (also `db.t`).
fn show_index(
    session: &mut Session,
    names: &[&str],
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    let (db, t) = match names {
        [t] => match t.split_once('.') {
            Some((d, t)) => (d.to_string(), t.to_string()),
            None => (
                session
                    .current_database()
                    .ok_or_else(SqlError::no_database)?
                    .to_string(),
                (*t).to_string(),
            ),
        },
        [t, kw, d] if kw.eq_ignore_ascii_case("FROM") || kw.eq_ignore_ascii_case("IN") => {
            ((*d).to_string(), (*t).to_string())
        }
        _ => return Err(SqlError::syntax(&names.join(" "), 1)),
    };
    let catalog = session.catalog();
    // A view has no indexes: an empty result, as MySQL's.
    let def = match crate::bind::lookup_table(&catalog, &db, &t) {
        Some(def) => def,
        None => crate::views::shape(session, &db, &t)?
            .ok_or_else(|| SqlError::no_such_table(&db, &t))?,
    };
    let mut rows = Vec::new();
    let store = &session.instance().store;
    // One row estimate for all the table's indexes; a failed estimate shows NULL.
    let table_rows = store.table_stats(&def).map(|s| s.rows).ok();
    let mut add = |name: &str, unique: bool, columns: &[usize], index: IndexChoice| {
        let cardinality =
            table_rows.and_then(|n| store.cached_index_cardinality(&def, index, n).ok());
        for (seq, &c) in columns.iter().enumerate() {
            let col = &def.columns[c];
            rows.push(vec![
                text(&def.name),
                Value::Int(i64::from(!unique)),
                text(name),
                Value::Int(seq as i64 + 1),
                text(&col.name),
                text("A"),
                cardinality_value(cardinality.as_deref(), seq),
                Value::Null,
                Value::Null,
                text(if col.nullable { "YES" } else { "" }),
                text("LSM"),
                text(""),
                text(""),
            ]);
        }
    };
    if !def.primary_key.columns.is_empty() {
        add(
            "PRIMARY",
            true,
            &def.primary_key.columns,
            IndexChoice::Primary,
        );
    }
    for (i, ix) in def.indexes.iter().enumerate() {
        add(&ix.name, ix.unique, &ix.columns, IndexChoice::Secondary(i));
    }
    let int = |name: &str| {
        crate::types::SqlType::Int {
            unsigned: false,
            len: 21,
        }
        .meta(name, true)
    };
    let columns = [
        text_column("Table"),
        int("Non_unique"),
        text_column("Key_name"),
        int("Seq_in_index"),
        text_column("Column_name"),
        text_column("Collation"),
        int("Cardinality"),
        int("Sub_part"),
        text_column("Packed"),
        text_column("Null"),
        text_column("Index_type"),
        text_column("Comment"),
        text_column("Index_comment"),
    ];
    session.state_mut().warnings.clear();
    session.text_rows(sink, &columns, &rows)
}

/// SHOW INDEX's `Cardinality` (and STATISTICS'): the estimate for the first `seq + 1`
/// columns, NULL when there is none.
pub(crate) fn cardinality_value(figures: Option<&[u64]>, seq: usize) -> Value {
    figures
        .and_then(|f| f.get(seq))
        .and_then(|&n| i64::try_from(n).ok())
        .map_or(Value::Null, Value::Int)
}

/// DESCRIBE / SHOW COLUMNS [LIKE 'pattern' | WHERE condition] (LIKE on `Field`).
fn describe(
    session: &mut Session,
    name: &ast::ObjectName,
    full: bool,
    filter: Option<&ast::ShowStatementFilter>,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    let pattern = like_filter(filter);
    let (db, t) = qualify(session, name)?;
    let catalog = session.catalog();
    let def = match crate::bind::lookup_table(&catalog, &db, &t) {
        Some(def) => def,
        None => crate::views::shape(session, &db, &t)?
            .ok_or_else(|| SqlError::no_such_table(&db, &t))?,
    };
    let mut rows = Vec::new();
    for (pos, c) in def.columns.iter().enumerate() {
        if !matches(&c.name, pattern.as_ref()) {
            continue;
        }
        let key = if def.primary_key.columns.contains(&pos) {
            "PRI"
        } else if def
            .indexes
            .iter()
            .any(|i| i.unique && i.columns.first() == Some(&pos))
        {
            "UNI"
        } else if def.indexes.iter().any(|i| i.columns.first() == Some(&pos)) {
            "MUL"
        } else {
            ""
        };
        let default = crate::timestamp::default_text(c)
            .or_else(|| c.default.as_ref().and_then(crate::value::as_text))
            .map_or(Value::Null, |d| text(&d));
        let mut row = vec![text(&c.name), text(&crate::ddl::type_text(&c.ty))];
        if full {
            row.push(match c.ty {
                shale_table::ColumnType::Char { collation, .. }
                | shale_table::ColumnType::VarChar { collation, .. }
                | shale_table::ColumnType::Text { collation }
                | shale_table::ColumnType::Enum { collation, .. }
                | shale_table::ColumnType::Set { collation, .. }
                    if collation != Collation::Binary =>
                {
                    text(if collation == Collation::Utf8mb4Bin {
                        "utf8mb4_bin"
                    } else {
                        "utf8mb4_general_ci"
                    })
                }
                _ => Value::Null,
            });
        }
        row.extend([
            text(if c.nullable { "YES" } else { "NO" }),
            text(key),
            default,
            if c.auto_increment {
                text("auto_increment")
            } else {
                text(&crate::gencols::extra_text(c))
            },
        ]);
        if full {
            row.extend([text("select,insert,update,references"), text("")]);
        }
        rows.push(row);
    }
    let mut cols = vec![text_column("Field"), text_column("Type")];
    if full {
        cols.push(text_column("Collation"));
    }
    cols.extend([
        text_column("Null"),
        text_column("Key"),
        text_column("Default"),
        text_column("Extra"),
    ]);
    if full {
        cols.extend([text_column("Privileges"), text_column("Comment")]);
    }
    let rows = crate::show_where::retain(session, &cols, rows, where_condition(filter))?;
    session.state_mut().warnings.clear();
    session.text_rows(sink, &cols, &rows)
}
