//! The name of a result column a select item without an alias gets from its expression.
//!
//! MySQL names such a column by the expression's text as the client wrote it. The parsed tree
//! keeps no text, so the name is printed from it (sqlparser's Display), with the forms where
//! that print differs from what clients write put back:
//! 1. A string literal is named by its value (`SELECT 'a'` is column `a`;
//!    adjacent literals `'x' 'y'`, which the parser joins, `xy`), as MySQL names it.
//! 2. `~x` is printed without the space sqlparser puts after `~` (`~0`, not `~ 0`).
//! 3. A rewritten `INTERVAL(...)` call is printed in its written form (func_syntax.rs).
//!
//! Other spacing is sqlparser's: `1+2` is named `1 + 2` (docs/sql.md, "Known differences").

use sqlparser::ast;

/// The column name of select item `e` (module doc).
pub(crate) fn of(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s)
            | ast::Value::DoubleQuotedString(s)
            | ast::Value::NationalStringLiteral(s) => s.clone(),
            _ => printed(e),
        },
        // `_latin1'abc'` is named `abc`, as in MySQL.
        ast::Expr::Prefixed { value, .. } if matches!(value.as_ref(), ast::Expr::Value(_)) => {
            of(value)
        }
        _ => printed(e),
    }
}

fn printed(e: &ast::Expr) -> String {
    match e {
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::BitwiseNot,
            expr,
        } => format!("~{}", printed(expr)),
        _ => crate::func_syntax::printed_name(e.to_string()),
    }
}
