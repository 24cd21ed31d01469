//! Row constructors in comparisons: `(a, b) = (1, 2)`, `(a, b) > (?, ?)`, `(a, b) IN ((1, 2),
//! (3, 4))`, rewritten before binding into the scalar comparisons MySQL defines them by.
//!
//! - `=`: every pair equal (AND); `<>`: some pair different (OR); `<=>`: every pair `<=>`.
//! - `<`, `<=`, `>`, `>=`: the first pair that differs decides:
//!   `(a, b) > (x, y)` is `a > x OR (a = x AND b > y)`. The rewrite also adds `a >= x` in
//!   front, which holds whenever the comparison does (three-valued logic included), so the
//!   planner can scan a range of the leading column (keyset pagination's
//!   `WHERE (created, id) > (?, ?)`).
//! - `IN (row, ...)`: OR of the row equalities, with `a IN (first values)` in front for the
//!   planner (a composite key looked up by an ORM); `NOT IN`: the negation of the OR.
//!
//! Both sides must have the same number of columns (1241 otherwise). Each side's expressions
//! appear in the rewrite more than once; they are evaluated each time (a prepared statement's
//! `?` keep their number: placeholders.rs).

use sqlparser::ast::{self, BinaryOperator as B, Expr};

use crate::error::SqlError;

/// `left op right` rewritten when either side is a row constructor; None otherwise.
pub(crate) fn comparison(left: &Expr, op: &B, right: &Expr) -> Option<Result<Expr, SqlError>> {
    if !is_row(left) && !is_row(right) {
        return None;
    }
    if !matches!(
        op,
        B::Eq | B::NotEq | B::Spaceship | B::Lt | B::LtEq | B::Gt | B::GtEq
    ) {
        return Some(Err(operand_width(1)));
    }
    Some(compare(left, op, right))
}

/// `expr [NOT] IN (list)` rewritten when `expr` is a row constructor; None otherwise.
pub(crate) fn in_list(expr: &Expr, list: &[Expr], negated: bool) -> Option<Result<Expr, SqlError>> {
    if !is_row(expr) {
        return None;
    }
    let mut any: Option<Expr> = None;
    for item in list {
        let equal = match compare(expr, &B::Eq, item) {
            Ok(e) => e,
            Err(e) => return Some(Err(e)),
        };
        any = Some(match any {
            None => equal,
            Some(prev) => binary(prev, B::Or, equal),
        });
    }
    let any = any?;
    if negated {
        return Some(Ok(Expr::UnaryOp {
            op: ast::UnaryOperator::Not,
            expr: Box::new(nested(any)),
        }));
    }
    let leading = &elements(expr)[0];
    if is_row(leading) {
        return Some(Ok(any));
    }
    let firsts: Vec<Expr> = list.iter().map(|item| elements(item)[0].clone()).collect();
    if firsts.iter().any(is_row) {
        return Some(Ok(any));
    }
    let bound = Expr::In {
        expr: Box::new(leading.clone()),
        target: ast::InTarget::List(firsts),
        negated: false,
        global: false,
    };
    Some(Ok(binary(bound, B::And, nested(any))))
}

fn is_row(e: &Expr) -> bool {
    matches!(e, Expr::Tuple(_))
}

fn elements(e: &Expr) -> &[Expr] {
    match e {
        Expr::Tuple(items) => items,
        other => std::slice::from_ref(other),
    }
}

/// 1241 `Operand should contain N column(s)`.
pub(crate) fn operand_width(n: usize) -> SqlError {
    SqlError::new(
        1241,
        "21000",
        format!("Operand should contain {n} column(s)"),
    )
}

fn compare(left: &Expr, op: &B, right: &Expr) -> Result<Expr, SqlError> {
    let (l, r) = (elements(left), elements(right));
    if l.len() != r.len() {
        return Err(operand_width(l.len()));
    }
    if !is_row(left) && !is_row(right) {
        return Ok(binary(left.clone(), op.clone(), right.clone()));
    }
    let pairs: Vec<Expr> = match op {
        B::Eq | B::NotEq | B::Spaceship => l
            .iter()
            .zip(r)
            .map(|(a, b)| compare(a, op, b))
            .collect::<Result<_, _>>()?,
        _ => return ordered(l, op, r),
    };
    let join = if *op == B::NotEq { B::Or } else { B::And };
    Ok(pairs
        .into_iter()
        .reduce(|a, b| binary(a, join.clone(), b))
        .unwrap_or_else(|| Expr::Value(ast::Value::Boolean(*op != B::NotEq).into())))
}

/// `<`, `<=`, `>`, `>=` over rows of equal width (module doc).
fn ordered(l: &[Expr], op: &B, r: &[Expr]) -> Result<Expr, SqlError> {
    let strict = match op {
        B::Lt | B::LtEq => B::Lt,
        _ => B::Gt,
    };
    let loose = match op {
        B::Lt | B::LtEq => B::LtEq,
        _ => B::GtEq,
    };
    // From the last pair back: rest = a_i strict b_i OR (a_i = b_i AND rest).
    let mut rest: Option<Expr> = None;
    for (i, (a, b)) in l.iter().zip(r).enumerate().rev() {
        let last_op = if i + 1 == l.len() { op } else { &strict };
        rest = Some(match rest {
            None => compare(a, last_op, b)?,
            Some(rest) => {
                let decided = compare(a, &strict, b)?;
                let tied = compare(a, &B::Eq, b)?;
                binary(decided, B::Or, nested(binary(tied, B::And, nested(rest))))
            }
        });
    }
    let Some(rest) = rest else {
        return Err(operand_width(0));
    };
    if l.len() < 2 || is_row(&l[0]) || is_row(&r[0]) {
        return Ok(rest);
    }
    let bound = binary(l[0].clone(), loose, r[0].clone());
    Ok(binary(bound, B::And, nested(rest)))
}

fn binary(left: Expr, op: B, right: Expr) -> Expr {
    Expr::BinaryOp {
        left: Box::new(left),
        op,
        right: Box::new(right),
    }
}

fn nested(e: Expr) -> Expr {
    Expr::Nested(Box::new(e))
}
