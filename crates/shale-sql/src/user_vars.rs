//! User variables (`@x`): the session's values, and `@x := expr` inside a statement.
//!
//! Rules (MariaDB 10.11's behaviour; MySQL 8 runs the same but warns 1287 that the
//! assignment is deprecated, which Shale does not):
//! 1. `@x := expr` may stand wherever an expression may (select list, WHERE, HAVING, ORDER
//!    BY, UPDATE's SET, SET's value, VALUES of an INSERT). It evaluates `expr`, sets `@x` to
//!    that value at once, and is that value, with `expr`'s type. `:=` binds weaker than any
//!    other operator and to the right: `@a := @b := 1` sets both, `@y := 2 = 2` is 1.
//! 2. It is evaluated once per row where it stands, in the order the rows are produced, left
//!    to right within a row. With ORDER BY, a select list that assigns is evaluated after
//!    the sort, in the order the rows are sent (exec.rs), so `SELECT @n := @n + 1, t.* FROM
//!    t ORDER BY c` numbers the rows as sent; a sort key that names such a column
//!    (`ORDER BY n`) takes the value the select list computed instead of evaluating again.
//! 3. A read of a variable the statement itself assigns (`SELECT @r, @r := @r + 1`) is read
//!    afresh each time ([`Expr::UserVarPerRow`](crate::expr::Expr)), never taken as a
//!    constant of the statement: no index range, folding or condition pushdown uses it.
//!    An assignment is never a constant either, and a condition that holds one is never
//!    pushed into a derived table (which would evaluate it twice).
//! 4. What a statement assigned stays assigned when the statement fails later.
//!    A subquery runs once per statement, or once per distinct outer values when correlated
//!    (subquery.rs rule 1), and an assignment inside it as often (MariaDB: once per row).
//! 5. Only user variables are targets: `@@x := 1` and `c := 1` are error 1064.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;

use shale_table::Value;
use sqlparser::ast;

use crate::error::SqlError;
use crate::expr::Expr;

/// A session's user variables by lower-case name. Expressions assign them while they are
/// evaluated through a shared reference (rule 1), hence the cell; it is never borrowed
/// across an evaluation.
#[derive(Debug, Default)]
pub(crate) struct UserVars(RefCell<HashMap<String, Value>>);

impl UserVars {
    /// `name`'s value (NULL when never set).
    pub(crate) fn get(&self, name: &str) -> Value {
        self.0.borrow().get(name).cloned().unwrap_or(Value::Null)
    }

    pub(crate) fn set(&self, name: String, value: Value) {
        self.0.borrow_mut().insert(name, value);
    }

    pub(crate) fn clear(&self) {
        self.0.borrow_mut().clear();
    }
}

/// The variable an assignment's left side names (lower case, without `@`), or 1064 (rule 5).
pub(crate) fn target(left: &ast::Expr) -> Result<String, SqlError> {
    match left {
        ast::Expr::Identifier(id) if id.quote_style.is_none() => match id.value.strip_prefix('@') {
            Some(name) if !name.starts_with('@') && !name.is_empty() => {
                Ok(name.trim_matches('`').to_ascii_lowercase())
            }
            _ => Err(SqlError::syntax(":=", 1)),
        },
        _ => Err(SqlError::syntax(":=", 1)),
    }
}

/// The user variables `stmt` assigns with `:=` anywhere in it (rule 3).
pub(crate) fn assigned_in<V: ast::Visit>(stmt: &V) -> HashSet<String> {
    let mut names = HashSet::new();
    let _ = ast::visit_expressions(stmt, |e| {
        if let ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::Assignment,
            ..
        } = e
        {
            if let Ok(name) = target(left) {
                names.insert(name);
            }
        }
        ControlFlow::<()>::Continue(())
    });
    names
}

/// Whether evaluating `e` assigns a user variable (in its own row; a subquery's body is
/// not looked into).
pub(crate) fn assigns(e: &Expr) -> bool {
    if matches!(e, Expr::AssignUserVar(..)) {
        return true;
    }
    let mut found = false;
    crate::walk::children(e, &mut |c| found = found || assigns(c));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_assigned_names_are_found_anywhere_in_the_statement() {
        let stmt = crate::parse::parse(
            "SELECT @A := 1, (SELECT @b := 2) FROM t WHERE (@c := c) > 0 AND @d = 1",
        )
        .unwrap()
        .remove(0);
        let mut names: Vec<String> = assigned_in(&stmt).into_iter().collect();
        names.sort();
        assert_eq!(names, ["a", "b", "c"]);
    }
}
