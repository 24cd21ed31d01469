//! `INSERT ... SET col = expr, ...` and `REPLACE ... SET ...` (MySQL's SET form) as the one
//! row of `INSERT (col, ...) VALUES (expr, ...)`, so the SET form takes the VALUES path whole:
//! privileges, views, DEFAULT, ON DUPLICATE KEY UPDATE, placeholders, AUTO_INCREMENT.
//!
//! The rewrite keeps the SET list's order, which is also the order the VALUES row is
//! evaluated in: an expression reads the new value of a column set before it and the
//! default of one not yet set (exec.rs, `values_row`), as MySQL has it for both forms.

use sqlparser::ast::{self, Statement};

use crate::error::SqlError;

/// Rewrites an INSERT or REPLACE in the SET form into its VALUES form; any other statement
/// is left as it is.
pub(crate) fn to_values(stmt: &mut Statement) -> Result<(), SqlError> {
    match stmt {
        Statement::Insert(ins) => insert_to_values(ins),
        _ => Ok(()),
    }
}

/// The SET form of `ins` as its VALUES form; nothing changes when `ins` has no SET list.
pub(crate) fn insert_to_values(ins: &mut ast::Insert) -> Result<(), SqlError> {
    if ins.assignments.is_empty() {
        return Ok(());
    }
    // The parser takes SET only in place of a column list and a source.
    if !ins.columns.is_empty() || ins.source.is_some() {
        return Err(SqlError::unsupported(ins.to_string()));
    }
    let mut row = Vec::with_capacity(ins.assignments.len());
    for a in std::mem::take(&mut ins.assignments) {
        let ast::AssignmentTarget::ColumnName(name) = a.target else {
            // `SET (a, b) = ...` is not MySQL.
            return Err(SqlError::unsupported(format!(
                "INSERT ... SET {}",
                a.target
            )));
        };
        ins.columns.push(name);
        row.push(a.value);
    }
    let values = ast::Values {
        explicit_row: false,
        value_keyword: false,
        rows: vec![ast::Parens::with_empty_span(row)],
    };
    ins.source = Some(Box::new(ast::Query {
        with: None,
        body: Box::new(ast::SetExpr::Values(values)),
        order_by: None,
        limit_clause: None,
        fetch: None,
        locks: Vec::new(),
        for_clause: None,
        settings: None,
        format_clause: None,
        pipe_operators: Vec::new(),
    }));
    Ok(())
}

/// Whether a VALUES value is the keyword DEFAULT (the parser reads it as a name).
pub(crate) fn is_default_keyword(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(id) if is_default_ident(id))
}

/// Whether a name is the unquoted keyword DEFAULT.
pub(crate) fn is_default_ident(id: &ast::Ident) -> bool {
    id.quote_style.is_none() && id.value.eq_ignore_ascii_case("DEFAULT")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        let mut stmts =
            crate::parse::parse_as(sql, crate::syntax_mode::Syntax::DEFAULT).expect("parses");
        to_values(&mut stmts[0]).expect("rewrites");
        stmts[0].to_string()
    }

    #[test]
    fn set_list_becomes_one_values_row_in_order() {
        assert_eq!(
            rewritten("INSERT INTO t SET b = 1, a = b + 1"),
            "INSERT INTO t (b, a) VALUES (1, b + 1)"
        );
        assert_eq!(
            rewritten("REPLACE t SET a = DEFAULT, b = ?"),
            "REPLACE t (a, b) VALUES (DEFAULT, ?)"
        );
        assert_eq!(
            rewritten("INSERT IGNORE INTO t SET a = 1 ON DUPLICATE KEY UPDATE a = a + 1"),
            "INSERT IGNORE INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE a = a + 1"
        );
        // The VALUES form is left alone.
        assert_eq!(
            rewritten("INSERT INTO t (a) VALUES (1)"),
            "INSERT INTO t (a) VALUES (1)"
        );
    }
}
