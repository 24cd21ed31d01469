//! ALTER TABLE with column operations, RENAME TABLE and CREATE TABLE ... LIKE: the
//! operations of one statement are applied, in order, to a copy of the definition and handed
//! to the table layer as one [`TableChange`] (one atomic DDL, instant or a rewrite; see
//! shale-table's alter.rs). A rewrite converts values as `MySQL`'s ALTER TABLE does in strict
//! mode: 1366 for a string that is not a number, 1264 out of range, 1265 for data that does
//! not fit (an INSERT's 1406 "Data too long" is 1265 here), 1138 for NULL into NOT NULL.
//!
//! ALTER TABLE statements made only of ADD INDEX / DROP INDEX stay on the CREATE INDEX path
//! (session.rs).

use shale_table::{
    ColumnDef, ColumnSource, ColumnType, IndexDef, TableChange, TableDef, TableLockMode, Value,
};
use sqlparser::ast::{self, AlterTableOperation as Op};

use crate::error::SqlError;
use crate::result::ResultSink;
use crate::session::Session;
use crate::types::store_value;

/// Whether this ALTER TABLE goes through [`alter_table`] (anything but index-only ALTERs).
pub(crate) fn handles(at: &ast::AlterTable) -> bool {
    at.operations.iter().any(|op| {
        !matches!(
            op,
            Op::DropIndex { .. }
                | Op::AddConstraint {
                    constraint: ast::TableConstraint::Index(_) | ast::TableConstraint::Unique(_),
                    ..
                }
        )
    })
}

/// A column of the definition being built: its definition, where existing rows get its value
/// and a stable id that indexes name it by (positions move as columns come and go).
struct Column {
    def: ColumnDef,
    source: ColumnSource,
    id: usize,
}

/// An index by column ids.
struct Index {
    def: IndexDef,
    columns: Vec<usize>,
}

/// The definition being altered.
struct Draft {
    database: String,
    name: String,
    columns: Vec<Column>,
    primary_key: Vec<usize>,
    indexes: Vec<Index>,
    next_id: usize,
}

impl Draft {
    fn new(def: &TableDef) -> Draft {
        Draft {
            database: def.database.clone(),
            name: def.name.clone(),
            columns: def
                .columns
                .iter()
                .enumerate()
                .map(|(i, c)| Column {
                    def: c.clone(),
                    source: ColumnSource::Stored(i),
                    id: i,
                })
                .collect(),
            primary_key: def.primary_key.columns.clone(),
            indexes: def
                .indexes
                .iter()
                .map(|i| Index {
                    def: i.clone(),
                    columns: i.columns.clone(),
                })
                .collect(),
            next_id: def.columns.len(),
        }
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.def.name.eq_ignore_ascii_case(name))
    }

    fn existing(&self, name: &str) -> Result<usize, SqlError> {
        self.position(name).ok_or_else(|| {
            SqlError::new(
                1054,
                "42S22",
                format!("Unknown column '{name}' in '{}'", self.name),
            )
        })
    }

    fn check_new_name(&self, name: &str, except: Option<usize>) -> Result<(), SqlError> {
        match self.position(name) {
            Some(p) if Some(p) != except => Err(SqlError::new(
                1060,
                "42S21",
                format!("Duplicate column name '{name}'"),
            )),
            _ => Ok(()),
        }
    }

    /// Where FIRST / AFTER x puts a column (`None`: at the end).
    fn place(&self, position: Option<&ast::MySQLColumnPosition>) -> Result<usize, SqlError> {
        Ok(match position {
            None => self.columns.len(),
            Some(ast::MySQLColumnPosition::First) => 0,
            Some(ast::MySQLColumnPosition::After(name)) => self.existing(&name.value)? + 1,
        })
    }

    fn index_named(&self, name: &str) -> Option<usize> {
        self.indexes
            .iter()
            .position(|i| i.def.name.eq_ignore_ascii_case(name))
    }

    fn add_index(&mut self, def: IndexDef, columns: Vec<usize>) -> Result<(), SqlError> {
        if self.index_named(&def.name).is_some() {
            return Err(SqlError::new(
                1061,
                "42000",
                format!("Duplicate key name '{}'", def.name),
            ));
        }
        self.indexes.push(Index { def, columns });
        Ok(())
    }

    /// Adds (at `at`) or replaces a column from its SQL definition.
    fn put_column(
        &mut self,
        c: &ast::ColumnDef,
        at: usize,
        source: ColumnSource,
        id: usize,
    ) -> Result<(), SqlError> {
        let (def, is_pk, is_unique) = crate::ddl::column_def(c)?;
        if is_pk {
            if !self.primary_key.is_empty() {
                return Err(SqlError::new(1068, "42000", "Multiple primary key defined"));
            }
            self.primary_key = vec![id];
        }
        if is_unique {
            let name = def.name.clone();
            self.add_index(
                IndexDef {
                    name,
                    columns: Vec::new(),
                    unique: true,
                    index_id: 0,
                },
                vec![id],
            )?;
        }
        self.columns.insert(at, Column { def, source, id });
        Ok(())
    }

    fn apply(&mut self, op: &Op, current_db: Option<&str>) -> Result<(), SqlError> {
        match op {
            Op::AddColumn {
                column_def,
                column_position,
                ..
            } => {
                self.check_new_name(&column_def.name.value, None)?;
                let at = self.place(column_position.as_ref())?;
                let id = self.next_id;
                self.next_id += 1;
                self.put_column(column_def, at, ColumnSource::Fill(Value::Null), id)?;
                let column = &mut self.columns[at];
                if column.def.auto_increment {
                    return Err(SqlError::unsupported(
                        "ALTER TABLE ADD COLUMN ... AUTO_INCREMENT",
                    ));
                }
                // A generated column's value in existing rows is computed (gencols.rs).
                column.source = ColumnSource::Fill(if column.def.generated.is_some() {
                    Value::Null
                } else {
                    fill_value(&column.def)?
                });
            }
            Op::DropColumn {
                column_names,
                if_exists,
                ..
            } => {
                for name in column_names {
                    let Some(at) = self.position(&name.value) else {
                        if *if_exists {
                            continue;
                        }
                        return Err(SqlError::new(
                            1091,
                            "42000",
                            format!("Can't DROP COLUMN `{}`; check that it exists", name.value),
                        ));
                    };
                    if self.columns.len() == 1 {
                        return Err(SqlError::new(
                            1090,
                            "42000",
                            "You can't delete all columns with ALTER TABLE; use DROP TABLE \
                             instead",
                        ));
                    }
                    let id = self.columns.remove(at).id;
                    // As MySQL: the column leaves every index; an index left empty goes.
                    self.primary_key.retain(|&c| c != id);
                    for index in &mut self.indexes {
                        index.columns.retain(|&c| c != id);
                    }
                    self.indexes.retain(|i| !i.columns.is_empty());
                }
            }
            Op::RenameColumn {
                old_column_name,
                new_column_name,
            } => {
                let at = self.existing(&old_column_name.value)?;
                self.check_new_name(&new_column_name.value, Some(at))?;
                self.columns[at].def.name.clone_from(&new_column_name.value);
            }
            Op::ChangeColumn {
                old_name,
                new_name,
                data_type,
                options,
                column_position,
            } => self.change(
                &old_name.value,
                new_name,
                data_type,
                options,
                column_position.as_ref(),
            )?,
            Op::ModifyColumn {
                col_name,
                data_type,
                options,
                column_position,
            } => self.change(
                &col_name.value,
                col_name,
                data_type,
                options,
                column_position.as_ref(),
            )?,
            Op::AlterColumn { column_name, op } => {
                let at = self.existing(&column_name.value)?;
                let column = &mut self.columns[at].def;
                match op {
                    ast::AlterColumnOperation::SetDefault { value } => {
                        let value = crate::ddl::default_value(value)?;
                        column.default = Some(store_value(column, value, 1).map_err(|_| {
                            SqlError::new(
                                1067,
                                "42000",
                                format!("Invalid default value for '{}'", column.name),
                            )
                        })?);
                    }
                    ast::AlterColumnOperation::DropDefault => column.default = None,
                    other => return Err(SqlError::unsupported(format!("ALTER COLUMN {other}"))),
                }
            }
            Op::AddConstraint { constraint, .. } => match constraint {
                ast::TableConstraint::PrimaryKey(pk) => {
                    if !self.primary_key.is_empty() {
                        return Err(SqlError::new(1068, "42000", "Multiple primary key defined"));
                    }
                    self.primary_key = self.index_columns(&pk.columns)?;
                }
                ast::TableConstraint::Unique(_) | ast::TableConstraint::Index(_) => {
                    let (def, positions) = self.as_def_and_positions();
                    let index = crate::ddl::constraint_index(&def, constraint)?;
                    let columns = index.columns.iter().map(|&p| positions[p]).collect();
                    self.add_index(index, columns)?;
                }
                other => return Err(SqlError::unsupported(format!("ALTER TABLE ADD {other}"))),
            },
            Op::DropIndex { name } => {
                let Some(at) = self.index_named(&name.value) else {
                    return Err(SqlError::new(
                        1091,
                        "42000",
                        format!("Can't DROP INDEX `{}`; check that it exists", name.value),
                    ));
                };
                self.indexes.remove(at);
            }
            Op::DropPrimaryKey { .. } => {
                if self.primary_key.is_empty() {
                    return Err(SqlError::new(
                        1091,
                        "42000",
                        "Can't DROP INDEX `PRIMARY`; check that it exists",
                    ));
                }
                self.primary_key.clear();
            }
            Op::RenameTable { table_name } => {
                let (ast::RenameTableNameKind::As(name) | ast::RenameTableNameKind::To(name)) =
                    table_name;
                let parts = crate::bind::ident_name(name);
                let (database, name) = match parts.as_slice() {
                    [t] => (
                        current_db.ok_or_else(SqlError::no_database)?.to_owned(),
                        t.clone(),
                    ),
                    [d, t] => (d.clone(), t.clone()),
                    _ => return Err(SqlError::unsupported(format!("name {name}"))),
                };
                self.database = database;
                self.name = name;
            }
            other => return Err(SqlError::unsupported(format!("ALTER TABLE {other}"))),
        }
        Ok(())
    }

    /// CHANGE old new type ... / MODIFY name type ...: a new definition for a column whose
    /// rows keep their values (converted when the type changes).
    fn change(
        &mut self,
        old: &str,
        new_name: &ast::Ident,
        data_type: &ast::DataType,
        options: &[ast::ColumnOption],
        position: Option<&ast::MySQLColumnPosition>,
    ) -> Result<(), SqlError> {
        let at = self.existing(old)?;
        self.check_new_name(&new_name.value, Some(at))?;
        let Column { source, id, .. } = self.columns.remove(at);
        let at = match position {
            None => at,
            Some(p) => self.place(Some(p))?,
        };
        let c = ast::ColumnDef {
            name: new_name.clone(),
            data_type: data_type.clone(),
            options: options
                .iter()
                .map(|option| ast::ColumnOptionDef {
                    name: None,
                    option: option.clone(),
                })
                .collect(),
        };
        self.put_column(&c, at, source, id)
    }

    fn index_columns(&self, cols: &[ast::IndexColumn]) -> Result<Vec<usize>, SqlError> {
        let (def, positions) = self.as_def_and_positions();
        let mut ids = Vec::new();
        for c in cols {
            let name = match &c.column.expr {
                ast::Expr::Identifier(id) => id.value.clone(),
                other => return Err(SqlError::unsupported(format!("index on {other}"))),
            };
            let p = def.column_position(&name).ok_or_else(|| {
                SqlError::new(
                    1072,
                    "42000",
                    format!("Key column '{name}' doesn't exist in table"),
                )
            })?;
            crate::json::check_key_column(&def.columns[p])?;
            ids.push(positions[p]);
        }
        Ok(ids)
    }

    /// The draft's columns as a definition (indexes left out) and the column id at each
    /// position, for the helpers of ddl.rs that work on positions.
    fn as_def_and_positions(&self) -> (TableDef, Vec<usize>) {
        let def = TableDef {
            database: self.database.clone(),
            name: self.name.clone(),
            columns: self.columns.iter().map(|c| c.def.clone()).collect(),
            primary_key: IndexDef {
                name: "PRIMARY".into(),
                columns: Vec::new(),
                unique: true,
                index_id: 0,
            },
            indexes: self
                .indexes
                .iter()
                .map(|i| IndexDef {
                    columns: Vec::new(),
                    ..i.def.clone()
                })
                .collect(),
            schema_version: 0,
            past_versions: Vec::new(),
        };
        (def, self.columns.iter().map(|c| c.id).collect())
    }

    /// The change for the table layer.
    fn into_change(self, old: &TableDef) -> TableChange {
        let position = |id: usize| self.columns.iter().position(|c| c.id == id);
        let positions = |ids: &[usize]| ids.iter().filter_map(|&id| position(id)).collect();
        let def = TableDef {
            database: self.database.clone(),
            name: self.name.clone(),
            columns: self.columns.iter().map(|c| c.def.clone()).collect(),
            primary_key: IndexDef {
                columns: positions(&self.primary_key),
                ..old.primary_key.clone()
            },
            indexes: self
                .indexes
                .iter()
                .map(|i| IndexDef {
                    columns: positions(&i.columns),
                    ..i.def.clone()
                })
                .collect(),
            schema_version: old.schema_version,
            past_versions: Vec::new(),
        };
        TableChange {
            def,
            sources: self.columns.into_iter().map(|c| c.source).collect(),
        }
    }
}

/// The value rows that exist when a column is added read: its DEFAULT, else NULL, else (NOT
/// NULL without DEFAULT) the type's implicit default, as `MySQL`.
fn fill_value(column: &ColumnDef) -> Result<Value, SqlError> {
    if column.auto_timestamp.on_insert {
        return crate::timestamp::fill_now(column);
    }
    if let Some(d) = &column.default {
        return Ok(d.clone());
    }
    if column.nullable {
        return Ok(Value::Null);
    }
    Ok(match &column.ty {
        ColumnType::TinyInt { unsigned }
        | ColumnType::SmallInt { unsigned }
        | ColumnType::MediumInt { unsigned }
        | ColumnType::Int { unsigned }
        | ColumnType::BigInt { unsigned } => {
            if *unsigned {
                Value::UInt(0)
            } else {
                Value::Int(0)
            }
        }
        ColumnType::Float | ColumnType::Double => Value::Double(0.0),
        // The zero year, which strict mode accepts (unlike the zero date).
        ColumnType::Year => Value::UInt(0),
        ColumnType::Decimal { .. } => store_value(column, Value::Int(0), 1)?,
        ColumnType::Char { .. } | ColumnType::VarChar { .. } | ColumnType::Text { .. } => {
            Value::Bytes(Vec::new())
        }
        // MySQL's implicit default of a NOT NULL JSON column: the JSON null literal.
        ColumnType::Json => Value::Bytes(b"null".to_vec()),
        ColumnType::Time { fsp } => crate::time_type::value_of(0, *fsp),
        // MySQL's implicit default of a NOT NULL ENUM: its first member.
        ColumnType::Enum { members, .. } => Value::Enum(1, members[0].clone()),
        // ... and of a NOT NULL SET: the empty set.
        ColumnType::Set { .. } => Value::Set(0, String::new()),
        ColumnType::Date | ColumnType::DateTime { .. } | ColumnType::Timestamp { .. } => {
            // MySQL's implicit default is the zero date, which strict mode refuses.
            return Err(SqlError::unsupported(format!(
                "ADD COLUMN `{}` of a date type NOT NULL without DEFAULT (the zero date)",
                column.name
            )));
        }
    })
}

/// A stored value converted for a column whose type changed, with ALTER TABLE's errors.
fn convert(new: &ColumnDef, value: Value, row: u64) -> Result<Value, SqlError> {
    let row = usize::try_from(row).unwrap_or(usize::MAX);
    if matches!(value, Value::Null) && !new.nullable {
        return Err(SqlError::new(1138, "22004", "Invalid use of NULL value"));
    }
    let given = crate::value::display(&value);
    let stored = store_value(new, value, row);
    if let (ColumnType::Timestamp { .. }, Ok(Value::DateTime(utc))) = (&new.ty, &stored) {
        // Rewrites see stored values: a TIMESTAMP's is UTC (timestamp.rs rule 1).
        if !utc.in_timestamp_range() {
            return Err(SqlError::new(
                1292,
                "22007",
                format!(
                    "Incorrect datetime value: '{given}' for column '{}' at row {row}",
                    new.name
                ),
            ));
        }
    }
    stored.map_err(|e| {
        if e.code == 1406 {
            SqlError::data_truncated(&new.name, row)
        } else {
            e
        }
    })
}

/// ALTER TABLE with column operations (and anything else but index-only ALTERs).
pub(crate) fn alter_table(
    session: &mut Session,
    at: &ast::AlterTable,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    session.ddl_prelude()?;
    let (db, name) = qualify(session, &at.name)?;
    let temporary = session.temp_tables().find(&db, &name);
    if temporary.is_none() {
        session.check_ddl_lock(&db, &name, TableLockMode::Write)?;
    }
    let instance = session.instance().clone();
    let catalog = instance.store.catalog();
    let old = match &temporary {
        Some(def) => def.clone(),
        None => crate::bind::lookup_table(&catalog, &db, &name)
            .ok_or_else(|| SqlError::no_such_table(&db, &name))?,
    };
    let mut draft = Draft::new(&old);
    let current = session.current_db().ok();
    for op in &at.operations {
        draft.apply(op, current.as_deref())?;
    }
    let change = draft.into_change(&old);
    if let Some(old) = temporary {
        crate::gencols::check_alter(&session.catalog(), &old, &change)?;
        let renames_only = at
            .operations
            .iter()
            .all(|op| matches!(op, Op::RenameTable { .. }));
        if renames_only {
            let pair = (db, name, change.def.database, change.def.name);
            let renames = crate::temp_tables::TempRenames::plan(session, vec![pair])?;
            renames.apply(session);
            return done(session, 0, sink);
        }
        let rows = crate::temp_tables::alter(session, &old, change, converter())?;
        return done(session, rows, sink);
    }
    crate::gencols::check_alter(&catalog, &old, &change)?;
    let (_, method) = instance
        .store
        .alter_table(&db, &old.name, change, converter())?;
    instance.bump_generation();
    let rows = match method {
        shale_table::AlterMethod::Instant => 0,
        shale_table::AlterMethod::Rewrite { rows } => rows,
    };
    done(session, rows, sink)
}

/// ALTER TABLE's conversion of a rewritten row's values ([`convert`]).
fn converter() -> shale_table::ConvertFn<SqlError> {
    std::sync::Arc::new(|_: &ColumnDef, new: &ColumnDef, value: Value, row: u64| {
        convert(new, value, row)
    })
}

/// ALTER TABLE's OK: the rows rewritten.
fn done(session: &Session, rows: u64, sink: &mut dyn ResultSink) -> Result<(), SqlError> {
    let mut st = session.status();
    st.affected_rows = rows;
    st.info = format!("Records: {rows}  Duplicates: 0  Warnings: 0");
    sink.ok(&st)
}

/// CREATE INDEX or DROP INDEX of the session's temporary table `old`: `new` is its definition
/// with the index added (id 0) or removed; the rows are copied under it (temp_tables.rs
/// rule 7).
pub(crate) fn alter_temporary(
    session: &mut Session,
    old: &std::sync::Arc<TableDef>,
    new: TableDef,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    let sources = (0..old.columns.len()).map(ColumnSource::Stored).collect();
    let change = TableChange { def: new, sources };
    let rows = crate::temp_tables::alter(session, old, change, converter())?;
    done(session, rows, sink)
}

fn qualify(session: &Session, name: &ast::ObjectName) -> Result<(String, String), SqlError> {
    let parts = crate::bind::ident_name(name);
    match parts.as_slice() {
        [t] => Ok((session.current_db()?, t.clone())),
        [d, t] => Ok((d.clone(), t.clone())),
        _ => Err(SqlError::unsupported(format!("name {name}"))),
    }
}

/// RENAME TABLE a TO b [, c TO d ...]: in order, all or none.
pub(crate) fn rename_tables(
    session: &mut Session,
    renames: &[ast::RenameTable],
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    session.ddl_prelude()?;
    let mut pairs = Vec::new();
    for r in renames {
        let (db, name) = qualify(session, &r.old_name)?;
        let (to_db, to_name) = qualify(session, &r.new_name)?;
        pairs.push((db, name, to_db, to_name));
    }
    // The session's temporary tables are renamed in the session (temp_tables.rs rule 7),
    // after the base tables (which may fail as a whole).
    let temporary = crate::temp_tables::TempRenames::plan(session, pairs)?;
    let mut names = Vec::new();
    for (db, name, to_db, to_name) in temporary.base.clone() {
        // A source renamed by an earlier pair keeps that table's lock (MySQL 8).
        let renamed_before = names
            .iter()
            .any(|(_, _, d, n): &(String, String, String, String)| *d == db && *n == name);
        if !renamed_before {
            session.check_ddl_lock(&db, &name, TableLockMode::Write)?;
        }
        names.push((db, name, to_db, to_name));
    }
    let both: Vec<(String, String)> = names
        .iter()
        .flat_map(|(a, b, c, d)| [(a.clone(), b.clone()), (c.clone(), d.clone())])
        .collect();
    let _names = session.lock_names(&both)?;
    if !crate::views::rename(session, &names)? && !names.is_empty() {
        let instance = session.instance().clone();
        let borrowed: Vec<(&str, &str, &str, &str)> = names
            .iter()
            .map(|(a, b, c, d)| (a.as_str(), b.as_str(), c.as_str(), d.as_str()))
            .collect();
        instance.store.rename_tables(&borrowed)?;
        instance.bump_generation();
    }
    if temporary.any {
        temporary.apply(session);
    }
    sink.ok(&session.status())
}

/// CREATE TABLE t2 LIKE t1: the same columns and indexes, no rows.
pub(crate) fn create_like(
    session: &mut Session,
    ct: &ast::CreateTable,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    session.ddl_prelude()?;
    let (db, name) = qualify(session, &ct.name)?;
    let source = match &ct.like {
        Some(
            ast::CreateTableLikeKind::Parenthesized(like) | ast::CreateTableLikeKind::Plain(like),
        ) => &like.name,
        None => return Err(SqlError::unsupported("CREATE TABLE without LIKE")),
    };
    let (from_db, from_name) = qualify(session, source)?;
    // The source's definition is copied from one catalog snapshot, whole.
    let _name = session.lock_names(&[(db.clone(), name.clone())])?;
    let instance = session.instance().clone();
    let catalog = instance.store.catalog();
    // The source may be the session's temporary table (temp_tables.rs rule 1).
    let from = crate::bind::lookup_table(&session.catalog(), &from_db, &from_name)
        .ok_or_else(|| SqlError::no_such_table(&from_db, &from_name))?;
    if !catalog.databases.contains_key(&db) {
        return Err(SqlError::unknown_database(&db));
    }
    if crate::bind::lookup_table(&catalog, &db, &name).is_some() {
        return session.table_already_exists(&name, ct.if_not_exists, sink);
    }
    session.check_ddl_lock(&db, &name, TableLockMode::Write)?;
    session.check_ddl_lock(&from_db, &from_name, TableLockMode::Read)?;
    let mut def = (*from).clone();
    def.database = db;
    def.name = name;
    def.past_versions = Vec::new();
    instance.store.create_table(def)?;
    instance.bump_generation();
    sink.ok(&session.status())
}

/// Collects a statement's result set (CREATE TABLE ... SELECT reads its query through it, and
/// SET a variable's value from a subquery).
#[derive(Default)]
pub(crate) struct Collected {
    pub(crate) columns: Vec<crate::result::ColumnMeta>,
    pub(crate) rows: Vec<Vec<Value>>,
}

impl ResultSink for Collected {
    fn ok(&mut self, _: &crate::result::StatementStatus) -> Result<(), SqlError> {
        Ok(())
    }
    fn columns(&mut self, columns: &[crate::result::ColumnMeta]) -> Result<(), SqlError> {
        self.columns = columns.to_vec();
        Ok(())
    }
    fn row(&mut self, row: &[Value]) -> Result<(), SqlError> {
        self.rows.push(row.to_vec());
        Ok(())
    }
    fn end(&mut self, _: &crate::result::StatementStatus) -> Result<(), SqlError> {
        Ok(())
    }
}

/// The column CREATE TABLE ... SELECT makes of a result column, as `MySQL` types it: integer
/// columns keep their width, integer expressions are BIGINT, strings VARCHAR of their
/// length (TEXT past 16,383 characters), NULL `binary(0)`.
pub(crate) fn column_of_result(meta: &crate::result::ColumnMeta) -> ColumnDef {
    use crate::result::ColumnTypeCode as C;
    let unsigned = meta.flags & crate::types::flags::UNSIGNED != 0;
    let collation = crate::types::collation_of_id(meta.charset);
    let chars = if collation == shale_table::Collation::Binary {
        meta.length
    } else {
        meta.length / 4
    };
    let ty = match meta.type_code {
        C::Tiny => ColumnType::TinyInt { unsigned },
        C::Short => ColumnType::SmallInt { unsigned },
        C::Int24 => ColumnType::MediumInt { unsigned },
        C::Long => ColumnType::Int { unsigned },
        C::LongLong => ColumnType::BigInt { unsigned },
        C::Float => ColumnType::Float,
        C::Double => ColumnType::Double,
        C::Decimal | C::NewDecimal => {
            let scale = meta.decimals.min(30);
            let fraction_point = u32::from(scale > 0);
            let digits = meta.length.saturating_sub(1 + fraction_point);
            ColumnType::Decimal {
                precision: u8::try_from(digits.clamp(u32::from(scale).max(1), 65)).unwrap_or(65),
                scale,
            }
        }
        C::Date => ColumnType::Date,
        C::DateTime => ColumnType::DateTime {
            fsp: meta.decimals.min(6),
        },
        C::Timestamp => ColumnType::Timestamp {
            fsp: meta.decimals.min(6),
        },
        C::String => ColumnType::Char {
            len: chars.min(255),
            collation,
        },
        C::Null => ColumnType::Char {
            len: 0,
            collation: shale_table::Collation::Binary,
        },
        C::VarChar | C::VarString | C::Time | C::Year if chars <= 16_383 => ColumnType::VarChar {
            len: chars,
            collation,
        },
        C::Blob | C::VarChar | C::VarString | C::Time | C::Year => ColumnType::Text { collation },
        C::Json => ColumnType::Json,
    };
    ColumnDef {
        name: meta.name.clone(),
        ty,
        nullable: meta.flags & crate::types::flags::NOT_NULL == 0,
        default: None,
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    }
}

/// CREATE TABLE t [AS] SELECT ...: a table without primary key typed from the query's result
/// columns, created with its rows in one DDL (shale-table's `create_table_with_rows`: whole or
/// not at all, across crashes too). The query's rows are held in memory first.
pub(crate) fn create_select(
    session: &mut Session,
    ct: &ast::CreateTable,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    session.ddl_prelude()?;
    let (db, name) = qualify(session, &ct.name)?;
    let Some(query) = &ct.query else {
        return Err(SqlError::unsupported("CREATE TABLE without SELECT"));
    };
    if !ct.columns.is_empty() || !ct.constraints.is_empty() {
        return Err(SqlError::unsupported(
            "CREATE TABLE with column definitions and a SELECT",
        ));
    }
    // Held across the SELECT too, as MySQL does: no other session creates or uses the name
    // meanwhile; the SELECT itself passes it (a view of that name, name_lock.rs rule 2).
    let _name = session.lock_names(&[(db.clone(), name.clone())])?;
    let instance = session.instance().clone();
    let catalog = instance.store.catalog();
    if !catalog.databases.contains_key(&db) {
        return Err(SqlError::unknown_database(&db));
    }
    if crate::bind::lookup_table(&catalog, &db, &name).is_some() {
        return session.table_already_exists(&name, ct.if_not_exists, sink);
    }
    session.check_ddl_lock(&db, &name, TableLockMode::Write)?;
    let mut result = Collected::default();
    session.run_query(query, &mut result)?;
    session.ddl_prelude()?;
    let def = select_table_def(db, name, &result.columns)?;
    let columns = def.columns.clone();
    let mut rows = result.rows.into_iter().enumerate().map(|(i, row)| {
        row.into_iter()
            .zip(&columns)
            .map(|(value, column)| store_value(column, value, i + 1))
            .collect::<Result<Vec<Value>, SqlError>>()
    });
    let (_, count) = instance.store.create_table_with_rows(def, &mut rows)?;
    instance.bump_generation();
    let mut st = session.status();
    st.affected_rows = count;
    st.info = format!("Records: {count}  Duplicates: 0  Warnings: 0");
    sink.ok(&st)
}

/// The table CREATE TABLE ... SELECT makes of the query's result columns: no primary key,
/// each column typed by [`column_of_result`] (1060 for a name twice).
pub(crate) fn select_table_def(
    db: String,
    name: String,
    columns: &[crate::result::ColumnMeta],
) -> Result<TableDef, SqlError> {
    let mut def = TableDef {
        database: db,
        name,
        columns: Vec::new(),
        primary_key: IndexDef {
            name: "PRIMARY".into(),
            columns: Vec::new(),
            unique: true,
            index_id: 0,
        },
        indexes: Vec::new(),
        schema_version: 1,
        past_versions: Vec::new(),
    };
    for meta in columns {
        let column = column_of_result(meta);
        if def.column_position(&column.name).is_some() {
            return Err(SqlError::new(
                1060,
                "42S21",
                format!("Duplicate column name '{}'", column.name),
            ));
        }
        def.columns.push(column);
    }
    Ok(def)
}
