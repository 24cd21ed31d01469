//! `SELECT ... INTO @a, @b`: a query whose one row goes into user variables, as MySQL's
//! SELECT ... INTO var_list.
//!
//! Rules:
//! 1. Only user variables are targets; `INTO OUTFILE`, `INTO DUMPFILE` and a table are
//!    refused (1235), and INTO is taken only from the statement's outermost SELECT.
//! 2. The query runs as any SELECT of the session (its transaction, locks and privileges);
//!    then a result of one row sets each variable to its column's value, in order.
//! 3. No row: nothing is set and warning 1329 says so; more than one row: error 1172 and
//!    nothing is set; a number of variables that is not the number of columns: 1222.
//! 4. The client gets an OK with one affected row (none for no row), as MySQL answers.

use sqlparser::ast::{self, Statement};

use crate::error::SqlError;
use crate::result::ResultSink;
use crate::session::Session;

/// Takes the INTO clause out of `stmt`'s outermost SELECT: the variables' names (lower
/// case, without `@`), or an error for a target that is not a user variable (rule 1);
/// `None` when the statement has no INTO.
pub(crate) fn take_targets(stmt: &mut Statement) -> Option<Result<Vec<String>, SqlError>> {
    let Statement::Query(q) = stmt else {
        return None;
    };
    let ast::SetExpr::Select(select) = q.body.as_mut() else {
        return None;
    };
    let into = select.into.take()?;
    if into.temporary || into.unlogged || into.table {
        return Some(Err(SqlError::unsupported(format!(
            "SELECT ... INTO {into}"
        ))));
    }
    Some(
        into.targets
            .iter()
            .map(|target| match target {
                ast::Expr::Identifier(id)
                    if id.value.starts_with('@') && !id.value.starts_with("@@") =>
                {
                    Ok(id.value[1..].to_ascii_lowercase())
                }
                other => Err(SqlError::unsupported(format!(
                    "SELECT ... INTO {other} (only user variables)"
                ))),
            })
            .collect(),
    )
}

/// Runs the planned query and sets `targets` from its row (rules 2 to 4).
pub(crate) fn run(
    session: &mut Session,
    planned: &crate::session::Planned,
    targets: &[String],
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    let mut result = crate::alter::Collected::default();
    session.run(planned, &[], &mut result)?;
    if result.columns.len() != targets.len() {
        return Err(SqlError::new(
            1222,
            "21000",
            "The used SELECT statements have a different number of columns",
        ));
    }
    match result.rows.as_slice() {
        [] => {
            session.state_mut().warnings.push((
                "Warning",
                1329,
                "No data - zero rows fetched, selected, or processed".into(),
            ));
            session.ok(sink, 0)
        }
        [row] => {
            for (name, value) in targets.iter().zip(row) {
                session
                    .state_mut()
                    .user_vars
                    .insert(name.clone(), value.clone());
            }
            session.ok(sink, 1)
        }
        _ => Err(SqlError::new(
            1172,
            "42000",
            "Result consisted of more than one row",
        )),
    }
}
