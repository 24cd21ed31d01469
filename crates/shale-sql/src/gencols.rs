//! Generated columns: `c TYPE [GENERATED ALWAYS] AS (expr) [VIRTUAL | STORED]` (docs/sql.md,
//! "Generated columns"; the catalog keeps the expression as text, docs/format/catalog.md).
//!
//! Rules (MySQL 8's):
//! 1. The expression reads only columns of its own row: base columns anywhere, generated
//!    columns defined before it (3107 for itself or a later one), never the
//!    `AUTO_INCREMENT` column (3109). Functions whose value is not fixed by the row (NOW(),
//!    RAND(), CONNECTION_ID(), ...), variables, parameters and subqueries are 3102.
//!    Shale also refuses a TIMESTAMP column as input or as a generated column (1235): rows
//!    keep TIMESTAMPs in UTC and the table layer recomputes virtual columns from stored rows,
//!    where the session's time zone is unknown.
//! 2. A VIRTUAL column cannot be in the primary key (3106).
//! 3. INSERT, REPLACE, LOAD DATA and UPDATE give a generated column no value but DEFAULT
//!    (3105); every write computes all generated columns, in column order, after the other
//!    values are final ([`fill`]), and converts each result to its column's type as an
//!    INSERT of that value would (strict).
//! 4. STORED values are stored in the row; VIRTUAL ones are computed again whenever the
//!    table layer decodes a row ([`Evaluator`], installed at [`crate::Instance::open`]), so
//!    indexes on them are maintained and checked like any other (shale-table generated.rs).
//! 5. A column a generated column reads cannot be dropped or renamed (3108).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use shale_table::{Catalog, ColumnDef, ColumnSource, ColumnType, Generated, TableDef, Value};
use sqlparser::ast;
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::Parser;

use crate::bind::{BindContext, Binder, TableRef};
use crate::builtin::Builtin;
use crate::error::SqlError;
use crate::expr::{Env, Expr, Func};
use crate::types::SqlType;

/// The generated-column declaration of a column option, or None for other options.
pub(crate) fn declared(option: &ast::ColumnOption) -> Result<Option<Generated>, SqlError> {
    let ast::ColumnOption::Generated {
        generation_expr,
        generation_expr_mode,
        sequence_options,
        ..
    } = option
    else {
        return Ok(None);
    };
    let (Some(expr), None) = (generation_expr, sequence_options) else {
        return Err(SqlError::unsupported("GENERATED ... AS IDENTITY"));
    };
    Ok(Some(Generated {
        expression: crate::syntax_mode::stored_text(expr),
        stored: matches!(
            generation_expr_mode,
            Some(ast::GeneratedExpressionMode::Stored)
        ),
    }))
}

fn disallowed_function(column: &str) -> SqlError {
    SqlError::new(
        3102,
        "HY000",
        format!("Expression of generated column '{column}' contains a disallowed function."),
    )
}

fn non_prior() -> SqlError {
    SqlError::new(
        3107,
        "HY000",
        "Generated column can refer only to generated columns defined prior to it.",
    )
}

/// 3105: a statement gave generated column `column` a value other than DEFAULT.
pub(crate) fn value_not_allowed(column: &str, table: &str) -> SqlError {
    SqlError::new(
        3105,
        "HY000",
        format!(
            "The value specified for generated column '{column}' in table '{table}' is not \
             allowed."
        ),
    )
}

/// 3106: `what` is not possible on a generated column.
pub(crate) fn unsupported_action(what: &str) -> SqlError {
    SqlError::new(
        3106,
        "HY000",
        format!("'{what}' is not supported for generated columns."),
    )
}

/// 3108: `column` is read by a generated column.
pub(crate) fn dependency(column: &str) -> SqlError {
    SqlError::new(
        3108,
        "HY000",
        format!("Column '{column}' has a generated column dependency."),
    )
}

/// Whether evaluating `e` can give different values for the same row (rule 1).
fn row_independent_value(e: &Expr) -> bool {
    match e {
        Expr::Param(_)
        | Expr::SysVar(_)
        | Expr::UserVar(_)
        | Expr::UserVarPerRow(_)
        | Expr::AssignUserVar(..)
        | Expr::Subquery(_)
        | Expr::OuterRef(_) => true,
        Expr::Func(func, _) => match func {
            Func::Database
            | Func::Version
            | Func::ConnectionId
            | Func::LastInsertId
            | Func::User
            | Func::CurrentUser => true,
            // FROM_UNIXTIME and UNIX_TIMESTAMP read the session's time zone.
            Func::Builtin(b) => {
                b.is_volatile()
                    || matches!(
                        b,
                        Builtin::Now { .. }
                            | Builtin::CurDate { .. }
                            | Builtin::CurTime { .. }
                            | Builtin::UnixTimestamp { .. }
                            | Builtin::FromUnixtime { .. }
                            | Builtin::Rand
                            | Builtin::Sleep
                            | Builtin::Benchmark
                            | Builtin::RowCount
                            | Builtin::FoundRows
                    )
            }
            _ => false,
        },
        _ => false,
    }
}

fn parse_expression(text: &str) -> Result<ast::Expr, SqlError> {
    Parser::new(&MySqlDialect {})
        .with_recursion_limit(200)
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| SqlError::internal(format!("generated column expression '{text}': {e}")))
}

/// Binds generated column `pos` of `def` over its row, checking rule 1. `catalog` is only
/// there so that a subquery binds (and is then refused) rather than failing on its names.
fn bind_expression(
    catalog: &Catalog,
    def: &Arc<TableDef>,
    pos: usize,
) -> Result<(Expr, SqlType), SqlError> {
    let column = &def.columns[pos];
    let Some(generated) = &column.generated else {
        return Err(SqlError::internal("not a generated column"));
    };
    let parsed = parse_expression(&generated.expression)?;
    // Every variable binds (to be refused below as 3102, not 1193 for an unknown one).
    let variable = |_: &str| Some(Value::Null);
    let touched = RefCell::new(Vec::new());
    let ctx = BindContext {
        catalog,
        database: Some(&def.database),
        variable: &variable,
        user: "",
        touched: &touched,
        statistics: None,
        collation_connection: "",
        full_group_by: false,
    };
    let mut binder = Binder::new(&ctx);
    binder.clause = "generated column function";
    binder.table = Some(TableRef {
        def: def.clone(),
        database: def.database.clone(),
        alias: def.name.clone(),
        stats: None,
    });
    let (expr, ty) = binder.expr(&parsed)?;
    if !binder.subqueries.is_empty() || crate::walk::any(&expr, &row_independent_value) {
        return Err(disallowed_function(&column.name));
    }
    let mut read = Vec::new();
    crate::walk::columns(&expr, &mut read);
    for c in read {
        let Some(input) = def.columns.get(c) else {
            return Err(SqlError::internal("column past the row"));
        };
        if c == pos || (c > pos && input.generated.is_some()) {
            return Err(non_prior());
        }
        if input.auto_increment {
            return Err(SqlError::new(
                3109,
                "HY000",
                format!(
                    "Generated column '{}' cannot refer to auto-increment column.",
                    column.name
                ),
            ));
        }
        if matches!(input.ty, ColumnType::Timestamp { .. }) {
            return Err(SqlError::unsupported(format!(
                "a generated column ('{}') that reads a TIMESTAMP column ('{}')",
                column.name, input.name
            )));
        }
    }
    Ok((expr, ty))
}

/// Checks every generated column of a new or altered table definition (rules 1 and 2).
pub(crate) fn check_table(catalog: &Catalog, def: &TableDef) -> Result<(), SqlError> {
    if !def.columns.iter().any(|c| c.generated.is_some()) {
        return Ok(());
    }
    if def
        .primary_key
        .columns
        .iter()
        .any(|&c| def.columns.get(c).is_some_and(ColumnDef::is_virtual))
    {
        return Err(unsupported_action(
            "Defining a virtual generated column as primary key",
        ));
    }
    let shared = Arc::new(def.clone());
    for (pos, column) in def.columns.iter().enumerate() {
        if column.generated.is_none() {
            continue;
        }
        if column.auto_increment {
            return Err(unsupported_action("AUTO_INCREMENT"));
        }
        if column.default.is_some() || column.auto_timestamp.on_insert {
            return Err(unsupported_action("DEFAULT"));
        }
        if column.auto_timestamp.on_update {
            return Err(unsupported_action("ON UPDATE"));
        }
        if matches!(column.ty, ColumnType::Timestamp { .. }) {
            // Its value would be computed in the session's zone on write and in UTC when a
            // row is decoded (rule 1).
            return Err(SqlError::unsupported(format!(
                "a generated TIMESTAMP column ('{}')",
                column.name
            )));
        }
        bind_expression(catalog, &shared, pos)?;
    }
    Ok(())
}

/// A table's generated columns bound over its rows, in column order.
struct Compiled {
    /// The expressions as the definition spells them, to recognise a stale entry.
    texts: Vec<String>,
    exprs: Vec<(usize, Expr)>,
    /// The indexed ones whose expression's type is the column's (gencol_match.rs).
    matchable: Vec<(usize, Expr)>,
}

thread_local! {
    /// Bound expressions by (table id, schema version); an entry whose texts differ from
    /// the definition's (an instant ALTER that kept the version) is replaced.
    static COMPILED: RefCell<HashMap<(u32, u32), Rc<Compiled>>> = RefCell::new(HashMap::new());
}

/// Entries kept per thread before the cache starts over.
const MAX_COMPILED: usize = 1024;

fn compiled(def: &TableDef) -> Result<Rc<Compiled>, SqlError> {
    let key = (def.primary_key.index_id, def.schema_version);
    let texts: Vec<&str> = def
        .columns
        .iter()
        .filter_map(|c| c.generated.as_ref().map(|g| g.expression.as_str()))
        .collect();
    let hit = COMPILED.with(|cache| cache.borrow().get(&key).cloned());
    if let Some(hit) = hit.filter(|h| h.texts.iter().map(String::as_str).eq(texts.iter().copied()))
    {
        return Ok(hit);
    }
    let shared = Arc::new(def.clone());
    let catalog = Catalog::default();
    let mut exprs = Vec::new();
    let mut matchable = Vec::new();
    for (pos, column) in def.columns.iter().enumerate() {
        if column.generated.is_some() {
            let (expr, ty) = bind_expression(&catalog, &shared, pos)?;
            if crate::gencol_match::can_stand_for(def, pos, &expr, &ty) {
                matchable.push((pos, expr.clone()));
            }
            exprs.push((pos, expr));
        }
    }
    let compiled = Rc::new(Compiled {
        texts: texts.into_iter().map(str::to_owned).collect(),
        exprs,
        matchable,
    });
    COMPILED.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() >= MAX_COMPILED {
            cache.clear();
        }
        cache.insert(key, compiled.clone());
    });
    Ok(compiled)
}

/// The indexed generated columns of `def` whose expression a condition may name instead
/// of the column (gencol_match.rs); empty when the expressions do not bind.
pub(crate) fn matchable(def: &TableDef) -> Vec<(usize, Expr)> {
    compiled(def).map_or_else(|_| Vec::new(), |c| c.matchable.clone())
}

/// What a generated column's expression may read besides its row: nothing (rule 1), so
/// every session value is empty.
struct RowOnly;

impl Env for RowOnly {
    fn param(&self, _: usize) -> Value {
        Value::Null
    }
    fn database(&self) -> Option<&str> {
        None
    }
    fn connection_id(&self) -> u64 {
        0
    }
    fn last_insert_id(&self) -> u64 {
        0
    }
    fn user(&self) -> &'static str {
        ""
    }
    fn variable(&self, name: &str) -> Value {
        match name {
            "default_week_format" => Value::Int(0),
            _ => Value::Null,
        }
    }
    fn user_variable(&self, _: &str) -> Value {
        Value::Null
    }
    fn statement_time(&self) -> i64 {
        0
    }
    fn row_counts(&self) -> (i64, u64) {
        (0, 0)
    }
}

fn compute(
    def: &TableDef,
    row: &mut [Value],
    row_number: usize,
    which: impl Fn(&Generated) -> bool,
) -> Result<(), SqlError> {
    let compiled = compiled(def)?;
    for (pos, expr) in &compiled.exprs {
        let column = &def.columns[*pos];
        if !column.generated.as_ref().is_some_and(&which) {
            continue;
        }
        let value = expr.eval(row, &RowOnly)?;
        let stored = crate::types::store_value(column, value, row_number)?;
        let Some(slot) = row.get_mut(*pos) else {
            return Err(SqlError::internal("row shorter than its table definition"));
        };
        *slot = stored;
    }
    Ok(())
}

/// Computes every generated column of `row` (a full row about to be written; rule 3).
pub(crate) fn fill(def: &TableDef, row: &mut [Value], row_number: usize) -> Result<(), SqlError> {
    if def.columns.iter().any(|c| c.generated.is_some()) {
        compute(def, row, row_number, |_| true)?;
    }
    Ok(())
}

/// The table layer's evaluator of VIRTUAL columns (rule 4).
pub(crate) struct Evaluator;

impl shale_table::VirtualColumns for Evaluator {
    fn compute(
        &self,
        table: &TableDef,
        row: &mut [Value],
        stored: bool,
    ) -> shale_table::Result<()> {
        compute(table, row, 1, |g| stored || !g.stored).map_err(|e| {
            shale_table::Error::InvalidArgument(format!(
                "generated column of '{}.{}': {}",
                table.database, table.name, e.message
            ))
        })
    }
}

/// SHOW COLUMNS' and information_schema.COLUMNS' EXTRA.
pub(crate) fn extra_text(column: &ColumnDef) -> String {
    match &column.generated {
        Some(g) if g.stored => "STORED GENERATED".into(),
        Some(_) => "VIRTUAL GENERATED".into(),
        None => crate::timestamp::extra_text(column),
    }
}

/// information_schema.COLUMNS.GENERATION_EXPRESSION: the expression, or empty.
pub(crate) fn expression_text(column: &ColumnDef) -> &str {
    column
        .generated
        .as_ref()
        .map_or("", |g| g.expression.as_str())
}

/// SHOW CREATE TABLE's clause for a generated column (with a leading space).
pub(crate) fn show_clause(column: &ColumnDef) -> Option<String> {
    let g = column.generated.as_ref()?;
    let kind = if g.stored { "STORED" } else { "VIRTUAL" };
    Some(format!(" GENERATED ALWAYS AS ({}) {kind}", g.expression))
}

/// Whether `SET column = value` of UPDATE or ON DUPLICATE KEY UPDATE is to be skipped: a
/// generated column accepts only DEFAULT (it is computed anyway; rule 3).
pub(crate) fn skip_assignment(
    def: &TableDef,
    pos: usize,
    value: &ast::Expr,
) -> Result<bool, SqlError> {
    let Some(column) = def.columns.get(pos).filter(|c| c.generated.is_some()) else {
        return Ok(false);
    };
    if crate::insert_set::is_default_keyword(value) {
        Ok(true)
    } else {
        Err(value_not_allowed(&column.name, &def.name))
    }
}

/// Checks an ALTER TABLE's new definition: rule 5 for the columns generated columns read,
/// the changes to generated columns this version makes, then rules 1 and 2.
pub(crate) fn check_alter(
    catalog: &Catalog,
    old: &TableDef,
    change: &shale_table::TableChange,
) -> Result<(), SqlError> {
    let kept_as = |p: usize| {
        change
            .sources
            .iter()
            .zip(&change.def.columns)
            .find(|(s, _)| matches!(s, ColumnSource::Stored(x) if *x == p))
            .map(|(_, c)| c)
    };
    if old.columns.iter().any(|c| c.generated.is_some()) {
        for (q, expr) in &compiled(old)?.exprs {
            if kept_as(*q).is_none_or(|c| c.generated.is_none()) {
                continue; // dropped (or no longer generated: refused below)
            }
            let mut read = Vec::new();
            crate::walk::columns(expr, &mut read);
            for p in read {
                let name = &old.columns[p].name;
                if !kept_as(p).is_some_and(|c| c.name.eq_ignore_ascii_case(name)) {
                    return Err(dependency(name));
                }
            }
        }
    }
    for (source, column) in change.sources.iter().zip(&change.def.columns) {
        let ColumnSource::Stored(p) = source else {
            continue;
        };
        let was = &old.columns[*p];
        match (&was.generated, &column.generated) {
            (a, b) if a == b => {}
            (Some(a), Some(b)) if a.stored != b.stored => {
                return Err(unsupported_action("Changing the STORED status"));
            }
            (Some(_), Some(_)) => {
                return Err(SqlError::unsupported(
                    "ALTER TABLE changing a generated column's expression (drop and add it)",
                ));
            }
            _ => {
                return Err(SqlError::unsupported(
                    "ALTER TABLE turning a column into a generated one or back",
                ));
            }
        }
    }
    check_table(catalog, &change.def)
}
