//! `JSON_TABLE(expr, path COLUMNS (...)) [AS] alias` in FROM (MySQL 8.0.4): a table whose
//! rows are the values `path` selects in the document `expr`, with columns extracted from
//! each. Binding turns the column list into a [`JsonTable`]; [`JsonTable::rows`] computes
//! the rows for one document. The join planner treats it as a lateral input (join.rs rule
//! 5): `expr` may read the columns of the inputs before it in FROM, and the table is
//! computed again for each of their rows.
//!
//! Rules (MySQL's, from its manual and its JSON_TABLE implementation):
//! 1. Rows: one per value the table's path selects, in document order; a NULL document
//!    gives no rows. `name FOR ORDINALITY` numbers the rows of its COLUMNS level from 1
//!    (per parent row for a NESTED level); its type is INT UNSIGNED.
//! 2. `name type PATH p`: the value `p` selects in the row's value, stored as a column of
//!    `type` would store it (types.rs `store_value`, strict). No value: ON EMPTY (NULL by
//!    default, DEFAULT json_string, or ERROR: 3665). A JSON null: NULL. An error (several
//!    values for a non-JSON column, an array or object for a non-JSON column, a value the
//!    type does not store): ON ERROR (NULL by default, DEFAULT json_string, or ERROR: 3666
//!    for an array or object or several values, 3669 out of range, 3156 another failed
//!    conversion). A JSON column takes several values as an array. No warnings are raised
//!    for values ON ERROR replaces.
//! 3. `name type EXISTS PATH p`: 1 when `p` selects anything, else 0.
//! 4. `NESTED [PATH] p COLUMNS (...)`: for each row of its level, the rows of `p` in that
//!    row's value joined to it; no value gives one row with the nested columns NULL (an
//!    outer join). Sibling NESTED clauses produce their rows one after the other, each with
//!    the other siblings' columns NULL; a row with only NULL nested columns appears only
//!    when every sibling is empty.
//! 5. Binding: the alias is required (3667), column names are unique across all levels
//!    (1060), the paths must parse (3143), a DEFAULT must be JSON text (1067), and the
//!    document is a JSON value or a string (3146); a string that is not JSON is 3141 when
//!    a row is computed.

use std::fmt::Write as _;

use shale_table::{ColumnDef, ColumnType, IndexDef, TableDef, Value};
use sqlparser::ast;

use crate::bind::Binder;
use crate::error::SqlError;
use crate::expr::Expr;
use crate::from::ScopeColumn;
use crate::json::{self, Json};
use crate::json_path::JsonPath;
use crate::types::{column_meta, SqlType};

/// What a column gets when its path finds nothing (ON EMPTY) or its value fails (ON ERROR).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Response {
    Null,
    Default(Json),
    Error,
}

/// One column of a COLUMNS level; `pos` is its place in the table's row.
#[derive(Debug, Clone)]
enum Column {
    Ordinality {
        pos: usize,
    },
    Path {
        pos: usize,
        path: JsonPath,
        on_empty: Response,
        on_error: Response,
    },
    Exists {
        pos: usize,
        path: JsonPath,
    },
}

/// One COLUMNS level: its path, its own columns and its NESTED levels.
#[derive(Debug, Clone)]
struct Level {
    path: JsonPath,
    path_text: String,
    columns: Vec<Column>,
    nested: Vec<Level>,
}

/// A bound JSON_TABLE.
#[derive(Debug, Clone)]
pub(crate) struct JsonTable {
    pub alias: String,
    /// The document, over the combined row of the inputs before the table.
    pub doc: Expr,
    /// The table's columns as a table definition (types and names; no keys).
    pub def: TableDef,
    root: Level,
}

impl JsonTable {
    pub(crate) fn width(&self) -> usize {
        self.def.columns.len()
    }

    /// The rows for the document `doc` (rule 1); its own `filter` is applied by the caller.
    pub(crate) fn rows(&self, doc: &Value) -> Result<Vec<Vec<Value>>, SqlError> {
        let text = match doc {
            Value::Null => return Ok(Vec::new()),
            Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            other => crate::value::display(other),
        };
        let doc = json::parse(&text).map_err(|e| json::bad_argument(&e, 1, "json_table"))?;
        let mut out = Vec::new();
        self.level_rows(&self.root, &doc, &mut out)?;
        Ok(out)
    }

    /// Appends to `out` the rows `level` gives for the value `context` (rules 1-4).
    fn level_rows(
        &self,
        level: &Level,
        context: &Json,
        out: &mut Vec<Vec<Value>>,
    ) -> Result<(), SqlError> {
        for (i, value) in level.path.find(context).into_iter().enumerate() {
            let mut row = vec![Value::Null; self.width()];
            for column in &level.columns {
                self.fill(column, i + 1, value, out.len() + 1, &mut row)?;
            }
            if level.nested.is_empty() {
                out.push(row);
                continue;
            }
            let before = out.len();
            for nested in &level.nested {
                let first = out.len();
                self.level_rows(nested, value, out)?;
                for sub in &mut out[first..] {
                    for column in &level.columns {
                        let pos = column.pos();
                        sub[pos] = row[pos].clone();
                    }
                }
            }
            if out.len() == before {
                out.push(row);
            }
        }
        Ok(())
    }

    /// Sets `column` of `row` for the level's value `value`, the `ordinal`-th of its level;
    /// `row_number` (1-based) is for messages.
    fn fill(
        &self,
        column: &Column,
        ordinal: usize,
        value: &Json,
        row_number: usize,
        row: &mut [Value],
    ) -> Result<(), SqlError> {
        match column {
            Column::Ordinality { pos } => {
                row[*pos] = Value::UInt(ordinal as u64);
            }
            Column::Exists { pos, path } => {
                let found = i64::from(!path.find(value).is_empty());
                let col = &self.def.columns[*pos];
                row[*pos] = crate::types::store_value(col, Value::Int(found), row_number)
                    .map_err(|_| out_of_range(&col.name))?;
            }
            Column::Path {
                pos,
                path,
                on_empty,
                on_error,
            } => {
                let col = &self.def.columns[*pos];
                let found = path.find(value);
                row[*pos] = match found.as_slice() {
                    [] => match on_empty {
                        Response::Null => Value::Null,
                        Response::Default(j) => self.store(col, j, row_number)?,
                        Response::Error => return Err(missing_value(&col.name)),
                    },
                    [Json::Null] => Value::Null,
                    [one] => match self.store(col, one, row_number) {
                        Ok(v) => v,
                        Err(e) => respond(col, on_error, e, row_number, self)?,
                    },
                    many if col.ty == ColumnType::Json => {
                        let array = Json::Array(many.iter().map(|j| (*j).clone()).collect());
                        Value::Bytes(array.to_text().into_bytes())
                    }
                    _ => respond(col, on_error, self.wrong_value(col), row_number, self)?,
                };
            }
        }
        Ok(())
    }

    /// `j` stored into `col` (rule 2's conversion), or the error ERROR ON ERROR raises.
    fn store(&self, col: &ColumnDef, j: &Json, row_number: usize) -> Result<Value, SqlError> {
        if col.ty == ColumnType::Json {
            return Ok(Value::Bytes(j.to_text().into_bytes()));
        }
        let v = match j {
            Json::Array(_) | Json::Object(_) => return Err(self.wrong_value(col)),
            Json::Null => return Ok(Value::Null),
            Json::Int(i) => Value::Int(*i),
            Json::UInt(u) => Value::UInt(*u),
            Json::Double(d) => Value::Double(*d),
            Json::Bool(b) if is_numeric(&col.ty) => Value::Int(i64::from(*b)),
            other => Value::Bytes(other.unquoted().into_bytes()),
        };
        crate::types::store_value(col, v, row_number).map_err(|e| match e.code {
            1264 => out_of_range(&col.name),
            // Too long for a string column, or an invalid date: the storing error as is.
            1406 | 1292 => e,
            _ => invalid_for_cast(col, row_number),
        })
    }

    /// 3666: an array or object (or several values) for a scalar column.
    fn wrong_value(&self, col: &ColumnDef) -> SqlError {
        SqlError::new(
            3666,
            "22036",
            format!(
                "Can't store an array or an object in the scalar column '{}' of JSON_TABLE '{}'.",
                col.name, self.alias
            ),
        )
    }

    /// EXPLAIN's description: `json_table jt ('$[*]' columns (...))`.
    pub(crate) fn describe(&self) -> String {
        let mut s = String::new();
        describe_level(&self.root, &self.def, &mut s);
        s
    }
}

/// The ON ERROR response to `err` for `col`.
fn respond(
    col: &ColumnDef,
    on_error: &Response,
    err: SqlError,
    row_number: usize,
    table: &JsonTable,
) -> Result<Value, SqlError> {
    match on_error {
        Response::Null => Ok(Value::Null),
        Response::Default(j) => table.store(col, j, row_number),
        Response::Error => Err(err),
    }
}

impl Column {
    fn pos(&self) -> usize {
        match self {
            Column::Ordinality { pos } | Column::Path { pos, .. } | Column::Exists { pos, .. } => {
                *pos
            }
        }
    }
}

fn describe_level(level: &Level, def: &TableDef, s: &mut String) {
    let _ = write!(s, "'{}' columns (", level.path_text);
    let mut parts = Vec::new();
    for c in &level.columns {
        let name = &def.columns[c.pos()].name;
        parts.push(match c {
            Column::Ordinality { .. } => format!("{name} for ordinality"),
            Column::Path { .. } => format!("{name} path"),
            Column::Exists { .. } => format!("{name} exists path"),
        });
    }
    for n in &level.nested {
        let mut inner = String::from("nested path ");
        describe_level(n, def, &mut inner);
        parts.push(inner);
    }
    s.push_str(&parts.join(", "));
    s.push(')');
}

fn is_numeric(ty: &ColumnType) -> bool {
    matches!(
        ty,
        ColumnType::TinyInt { .. }
            | ColumnType::SmallInt { .. }
            | ColumnType::MediumInt { .. }
            | ColumnType::Int { .. }
            | ColumnType::BigInt { .. }
            | ColumnType::Float
            | ColumnType::Double
            | ColumnType::Decimal { .. }
            | ColumnType::Year
    )
}

fn missing_value(column: &str) -> SqlError {
    SqlError::new(
        3665,
        "22035",
        format!("Missing value for JSON_TABLE column '{column}'"),
    )
}

fn out_of_range(column: &str) -> SqlError {
    SqlError::new(
        3669,
        "22003",
        format!("Value is out of range for JSON_TABLE's column '{column}'"),
    )
}

/// 3156, as MySQL names the target type of the failed conversion.
fn invalid_for_cast(col: &ColumnDef, row_number: usize) -> SqlError {
    let target = match col.ty {
        ColumnType::TinyInt { .. }
        | ColumnType::SmallInt { .. }
        | ColumnType::MediumInt { .. }
        | ColumnType::Int { .. }
        | ColumnType::BigInt { .. } => "INTEGER",
        ColumnType::Float | ColumnType::Double => "DOUBLE",
        ColumnType::Decimal { .. } => "DECIMAL",
        ColumnType::Date => "DATE",
        ColumnType::DateTime { .. } | ColumnType::Timestamp { .. } => "DATETIME",
        ColumnType::Time { .. } => "TIME",
        ColumnType::Year => "YEAR",
        _ => "STRING",
    };
    SqlError::new(
        3156,
        "22018",
        format!(
            "Invalid JSON value for CAST to {target} from column {} at row {row_number}",
            col.name
        ),
    )
}

/// 3667.
fn missing_alias() -> SqlError {
    SqlError::new(3667, "42000", "Every table function must have an alias.")
}

/// A path given as a string literal, parsed (3143).
fn literal_path(v: &ast::ValueWithSpan) -> Result<(JsonPath, String), SqlError> {
    let text = literal_text(v).ok_or_else(|| SqlError::syntax(&v.to_string(), 1))?;
    Ok((JsonPath::parse(&text)?, text))
}

fn literal_text(v: &ast::ValueWithSpan) -> Option<String> {
    match &v.value {
        ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => Some(s.clone()),
        _ => None,
    }
}

/// What binding collects while walking the column list.
struct Collector {
    columns: Vec<ColumnDef>,
}

impl Collector {
    /// Adds a column named `name` of `ty` (1060 for a name already used, rule 5).
    fn add(&mut self, name: &ast::Ident, ty: &ast::DataType) -> Result<usize, SqlError> {
        if self
            .columns
            .iter()
            .any(|c| c.name.eq_ignore_ascii_case(&name.value))
        {
            return Err(SqlError::new(
                1060,
                "42S21",
                format!("Duplicate column name '{}'", name.value),
            ));
        }
        let (col, _, _) = crate::ddl::column_def(&ast::ColumnDef {
            name: name.clone(),
            data_type: ty.clone(),
            options: Vec::new(),
        })?;
        self.columns.push(col);
        Ok(self.columns.len() - 1)
    }

    fn level(
        &mut self,
        path: &ast::ValueWithSpan,
        columns: &[ast::JsonTableColumn],
    ) -> Result<Level, SqlError> {
        let (path, path_text) = literal_path(path)?;
        let mut level = Level {
            path,
            path_text,
            columns: Vec::new(),
            nested: Vec::new(),
        };
        for c in columns {
            match c {
                ast::JsonTableColumn::ForOrdinality(name) => {
                    let ty = ast::DataType::IntUnsigned(None);
                    let pos = self.add(name, &ty)?;
                    level.columns.push(Column::Ordinality { pos });
                }
                ast::JsonTableColumn::Named(n) => {
                    let pos = self.add(&n.name, &n.r#type)?;
                    let (path, _) = literal_path(&n.path)?;
                    if n.exists {
                        level.columns.push(Column::Exists { pos, path });
                    } else {
                        let on_empty = response(n.on_empty.as_ref(), &n.name.value)?;
                        let on_error = response(n.on_error.as_ref(), &n.name.value)?;
                        level.columns.push(Column::Path {
                            pos,
                            path,
                            on_empty,
                            on_error,
                        });
                    }
                }
                ast::JsonTableColumn::Nested(n) => {
                    let nested = self.level(&n.path, &n.columns)?;
                    level.nested.push(nested);
                }
            }
        }
        Ok(level)
    }
}

/// An ON EMPTY / ON ERROR clause (1067 for a DEFAULT that is not JSON text).
fn response(
    clause: Option<&ast::JsonTableColumnErrorHandling>,
    column: &str,
) -> Result<Response, SqlError> {
    Ok(match clause {
        None | Some(ast::JsonTableColumnErrorHandling::Null) => Response::Null,
        Some(ast::JsonTableColumnErrorHandling::Error) => Response::Error,
        Some(ast::JsonTableColumnErrorHandling::Default(v)) => {
            let bad = || {
                SqlError::new(
                    1067,
                    "42000",
                    format!("Invalid default value for '{column}'"),
                )
            };
            let text = literal_text(v).ok_or_else(bad)?;
            Response::Default(json::parse(&text).map_err(|_| bad())?)
        }
    })
}

impl Binder<'_> {
    /// Binds a JSON_TABLE factor (rule 5): the table and the names of its columns. The
    /// document is bound over the scope as it is now, so it sees the inputs before it.
    pub(crate) fn bind_json_table(
        &mut self,
        json_expr: &ast::Expr,
        json_path: &ast::ValueWithSpan,
        columns: &[ast::JsonTableColumn],
        alias: Option<&ast::TableAlias>,
    ) -> Result<(JsonTable, Vec<ScopeColumn>), SqlError> {
        let alias = alias.ok_or_else(missing_alias)?.name.value.clone();
        let saved = std::mem::replace(&mut self.clause, "a table function argument");
        let doc = self.expr(json_expr);
        self.clause = saved;
        let (doc, doc_type) = doc?;
        crate::json_bind::check_document(&doc_type, 1, "json_table")?;
        let mut collector = Collector {
            columns: Vec::new(),
        };
        let root = collector.level(json_path, columns)?;
        let def = TableDef {
            database: String::new(),
            name: alias.clone(),
            columns: collector.columns,
            primary_key: IndexDef {
                name: "PRIMARY".into(),
                columns: Vec::new(),
                unique: true,
                index_id: 0,
            },
            indexes: Vec::new(),
            schema_version: 0,
            past_versions: Vec::new(),
        };
        let scope = def
            .columns
            .iter()
            .enumerate()
            .map(|(pos, c)| {
                let mut meta = column_meta("", &alias, &def, pos, &c.name);
                meta.org_table.clone_from(&alias);
                ScopeColumn {
                    name: c.name.clone(),
                    ty: SqlType::of_column(&c.ty),
                    meta,
                }
            })
            .collect();
        Ok((
            JsonTable {
                alias,
                doc,
                def,
                root,
            },
            scope,
        ))
    }
}
