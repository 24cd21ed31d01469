//! `SHOW ... WHERE condition` for the SHOW statements show.rs builds (DATABASES, TABLES,
//! COLUMNS, VARIABLES, STATUS): the condition filters the SHOW's own output rows, as
//! MySQL's does (Connector/J sends `SHOW VARIABLES WHERE Variable_name = 'a' OR
//! Variable_name = 'b'`).
//!
//! Rules:
//! 1. The condition reads the SHOW's output columns by name (`Variable_name`, `Value`,
//!    `Database`, `Tables_in_db`, `Field`, ...), case-insensitively; any other name is 1054
//!    `Unknown column 'x' in 'where clause'`.
//! 2. The columns are text in `utf8mb4_general_ci`, so `Variable_name = 'AUTOCOMMIT'`
//!    matches `autocommit`, as in MySQL; a number compares as text against a number.
//! 3. A row is kept when the condition is true (not false, not NULL), in the SHOW's order.
//! 4. Subqueries and aggregates are refused (1235 and 1111), as no query runs here.
//!    SHOW TABLE STATUS, COLLATION and CHARACTER SET take WHERE as the SELECTs they are
//!    (info_schema/show.rs rule 2), subqueries included.

use shale_table::{Collation, Value};
use sqlparser::ast;

use crate::error::SqlError;
use crate::from::{Scope, ScopeColumn, ScopeInput};
use crate::result::ColumnMeta;
use crate::session::{RunEnv, Session};
use crate::types::SqlType;

/// `rows` (with `columns`) without the rows `condition` is not true for (rules 1 to 4).
pub(crate) fn retain(
    session: &Session,
    columns: &[ColumnMeta],
    mut rows: Vec<Vec<Value>>,
    condition: Option<&ast::Expr>,
) -> Result<Vec<Vec<Value>>, SqlError> {
    let Some(condition) = condition else {
        return Ok(rows);
    };
    let scope_columns: Vec<ScopeColumn> = columns
        .iter()
        .map(|c| ScopeColumn {
            name: c.name.clone(),
            ty: SqlType::Str {
                collation: Collation::Utf8mb4GeneralCi,
                len: 255,
            },
            meta: c.clone(),
        })
        .collect();
    let scope = Scope {
        star: (0..scope_columns.len()).collect(),
        inputs: vec![ScopeInput {
            alias: String::new(),
            database: String::new(),
            columns: scope_columns,
            offset: 0,
        }],
        hidden: Vec::new(),
    };
    let touched = std::cell::RefCell::default();
    let condition = session.bind_touching(&touched, |binder| {
        binder.scope = Some(scope);
        binder.clause = "where clause";
        let (condition, _) = binder.expr(condition)?;
        if binder.subqueries.is_empty() {
            Ok(condition)
        } else {
            Err(SqlError::unsupported("a subquery in SHOW ... WHERE"))
        }
    })?;
    let env = RunEnv {
        state: session.state(),
        params: &[],
        conversions: crate::lenient_store::Conversions::default(),
    };
    let mut kept = Vec::with_capacity(rows.len());
    for row in rows.drain(..) {
        if crate::exec::passes(Some(&condition), &row, &env)? {
            kept.push(row);
        }
    }
    Ok(kept)
}
