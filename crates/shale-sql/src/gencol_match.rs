//! Generated-column index matching: a condition that compares a generated column's
//! expression (`WHERE j->>'$.name' = 'bob'`) is planned as the same condition on the
//! column (`WHERE name = 'bob'`), so an index on the column serves it, as MySQL 8's
//! optimizer does.
//!
//! Rules:
//! 1. Only an indexed generated column (any index, the primary key too) is matched, and only
//!    when its expression's type is the column's kind: an integer expression for an integer
//!    column, text of the column's collation for a CHAR/VARCHAR/TEXT column. Then every
//!    stored value equals the expression's value for its row (Shale is strict: a value that
//!    would not fit fails the write), so the substitution keeps the answer. A DOUBLE,
//!    DECIMAL, date or JSON expression is not matched (a conversion may round). As in
//!    MySQL, `->>` gives utf8mb4_bin text, so it matches a column declared with that
//!    collation only, and a column that is a plain copy of another (`g AS (a)`) is not
//!    matched.
//! 2. Matching is structural, on the bound expressions: the condition's operand must bind
//!    to exactly the expression the column binds to (same functions, arguments and column
//!    references), not merely an equal value.
//! 3. Only the operands the planner reads are replaced: the sides of a comparison, the
//!    tested value of IN and BETWEEN, under AND, OR and NOT. The rewritten condition is
//!    also the residual check (plan.rs rule 4), which reads the column's value.

use shale_table::{ColumnType, TableDef};

use crate::expr::Expr;
use crate::types::SqlType;

/// Rule 1: whether generated column `pos` of `def` may stand for an expression of type `ty`.
pub(crate) fn can_stand_for(def: &TableDef, pos: usize, expr: &Expr, ty: &SqlType) -> bool {
    let indexed = std::iter::once(&def.primary_key)
        .chain(&def.indexes)
        .any(|i| i.columns.contains(&pos));
    let Some(column) = def.columns.get(pos) else {
        return false;
    };
    indexed
        && !matches!(expr, Expr::Column(_))
        && match (&column.ty, ty) {
            (
                ColumnType::TinyInt { .. }
                | ColumnType::SmallInt { .. }
                | ColumnType::MediumInt { .. }
                | ColumnType::Int { .. }
                | ColumnType::BigInt { .. },
                SqlType::Int { .. },
            ) => true,
            (
                ColumnType::Char { collation, .. }
                | ColumnType::VarChar { collation, .. }
                | ColumnType::Text { collation },
                SqlType::Str { collation: c, .. },
            ) => collation == c,
            _ => false,
        }
}

/// `filter` with the operands that are an indexed generated column's expression replaced
/// by the column; None when nothing was replaced (or `table` has no such column).
pub(crate) fn substitute(table: &TableDef, filter: &Expr) -> Option<Expr> {
    let has_candidate = table.columns.iter().enumerate().any(|(pos, c)| {
        c.generated.is_some()
            && std::iter::once(&table.primary_key)
                .chain(&table.indexes)
                .any(|i| i.columns.contains(&pos))
    });
    if !has_candidate {
        return None;
    }
    let columns = crate::gencols::matchable(table);
    if columns.is_empty() {
        return None;
    }
    let mut changed = false;
    let out = rewrite(filter, &columns, &mut changed);
    changed.then_some(out)
}

/// Rule 2: the column an operand stands for, else the operand.
fn operand(e: &Expr, columns: &[(usize, Expr)], changed: &mut bool) -> Expr {
    match columns.iter().find(|(_, g)| g == e) {
        Some((pos, _)) => {
            *changed = true;
            Expr::Column(*pos)
        }
        None => e.clone(),
    }
}

/// Rule 3.
fn rewrite(e: &Expr, columns: &[(usize, Expr)], changed: &mut bool) -> Expr {
    match e {
        Expr::And(a, b) => Expr::And(
            Box::new(rewrite(a, columns, changed)),
            Box::new(rewrite(b, columns, changed)),
        ),
        Expr::Or(a, b) => Expr::Or(
            Box::new(rewrite(a, columns, changed)),
            Box::new(rewrite(b, columns, changed)),
        ),
        Expr::Not(a) => Expr::Not(Box::new(rewrite(a, columns, changed))),
        Expr::Cmp(op, a, b, collation) => Expr::Cmp(
            *op,
            operand(a, columns, changed).boxed(),
            operand(b, columns, changed).boxed(),
            *collation,
        ),
        Expr::InList {
            expr,
            list,
            negated,
            collation,
        } => Expr::InList {
            expr: operand(expr, columns, changed).boxed(),
            list: list.clone(),
            negated: *negated,
            collation: *collation,
        },
        Expr::Between {
            expr,
            low,
            high,
            negated,
            collation,
        } => Expr::Between {
            expr: operand(expr, columns, changed).boxed(),
            low: low.clone(),
            high: high.clone(),
            negated: *negated,
            collation: *collation,
        },
        other => other.clone(),
    }
}
