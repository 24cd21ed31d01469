//! Subqueries in expressions: `(SELECT ...)` as a value, `EXISTS (SELECT ...)` and
//! `x [NOT] IN (SELECT ...)`.
//!
//! Every subquery of a statement is bound into one list (`Binder::subqueries`, planned into
//! `StatementQuery::subqueries`); an expression names it by position. A subquery that reads
//! columns of the enclosing query is correlated: those reads are bound as `OuterRef(n)`
//! inside it, and the expression carries `args`, the n-th of which computes that value from
//! the enclosing row. Inside the subquery an `OuterRef` is a constant, so the planner can use
//! it for a point get or an index range like a `?`.
//!
//! Rules:
//! 1. An uncorrelated subquery runs at most once per statement (before the statement reads
//!    any row, query.rs); a correlated one once per distinct set of `args` values (results
//!    are cached per statement, up to [`CORRELATED_CACHE`] entries).
//! 2. A scalar subquery gives NULL for no row, its value for one row, and fails with 1242
//!    for more (when the value is used). It must have one column (1241).
//! 3. `x IN (subquery)` over no rows is false (even for a NULL `x`); otherwise NULL `x` is
//!    NULL, a match is true, no match with a NULL among the rows is NULL, else false.
//!    NOT IN negates that three-valued result, as MySQL does.
//!    `(x, y) IN (subquery)` is the same over rows: a subquery row matches when every pair
//!    is equal, is unknown when no pair differs but one is NULL; the subquery must have as
//!    many columns as the row (1241).
//! 4. EXISTS is true when the subquery gives a row (it runs with LIMIT 1).

use std::cmp::Ordering;

use shale_table::{Collation, Value};

use crate::error::SqlError;
use crate::expr::{Env, Expr};
use crate::value;

/// The correlated results a statement keeps before it starts over (memory bound).
pub(crate) const CORRELATED_CACHE: usize = 4096;

/// What a subquery gives the expression it stands in.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SubqueryKind {
    /// Its one value (NULL for no row, 1242 for more).
    Scalar,
    Exists {
        negated: bool,
    },
    In {
        expr: Box<Expr>,
        negated: bool,
        collation: Collation,
    },
    /// `(x, y, ...) [NOT] IN (subquery)`: one expression and collation per column.
    InRow {
        exprs: Vec<Expr>,
        negated: bool,
        collations: Vec<Collation>,
    },
}

/// A subquery in an expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SubqueryExpr {
    /// Its position in the statement's subquery list.
    pub id: usize,
    pub kind: SubqueryKind,
    /// Correlation values, computed from the enclosing row (empty: uncorrelated).
    pub args: Vec<Expr>,
}

/// A subquery's result rows.
#[derive(Debug, Default)]
pub(crate) struct SubqueryRows {
    pub rows: Vec<Vec<Value>>,
}

pub(crate) fn too_many_rows() -> SqlError {
    SqlError::new(1242, "21000", "Subquery returns more than 1 row")
}

pub(crate) fn operand_columns(n: usize) -> SqlError {
    SqlError::new(
        1241,
        "21000",
        format!("Operand should contain {n} column(s)"),
    )
}

impl SubqueryExpr {
    /// Whether its value is the same for every row of the enclosing query.
    pub(crate) fn is_row_independent(&self) -> bool {
        self.args.is_empty()
            && match &self.kind {
                SubqueryKind::In { expr, .. } => expr.is_row_independent(),
                SubqueryKind::InRow { exprs, .. } => exprs.iter().all(Expr::is_row_independent),
                _ => true,
            }
    }

    pub(crate) fn eval(&self, row: &[Value], env: &dyn Env) -> Result<Value, SqlError> {
        let mut outer = Vec::with_capacity(self.args.len());
        for a in &self.args {
            outer.push(a.eval(row, env)?);
        }
        match &self.kind {
            SubqueryKind::Scalar => {
                let result = env.subquery(self.id, &outer)?;
                match result.rows.as_slice() {
                    [] => Ok(Value::Null),
                    [one] => Ok(one.first().cloned().unwrap_or(Value::Null)),
                    _ => Err(too_many_rows()),
                }
            }
            SubqueryKind::Exists { negated } => {
                let result = env.subquery(self.id, &outer)?;
                Ok(value::from_bool(Some(result.rows.is_empty() == *negated)))
            }
            SubqueryKind::In {
                expr,
                negated,
                collation,
            } => {
                let x = expr.eval(row, env)?;
                let result = env.subquery(self.id, &outer)?;
                if result.rows.is_empty() {
                    return Ok(value::from_bool(Some(*negated)));
                }
                if matches!(x, Value::Null) {
                    return Ok(Value::Null);
                }
                let mut saw_null = false;
                for r in &result.rows {
                    let v = r.first().unwrap_or(&Value::Null);
                    match value::compare(&x, v, *collation) {
                        Some(Ordering::Equal) => return Ok(value::from_bool(Some(!*negated))),
                        None => saw_null = true,
                        Some(_) => {}
                    }
                }
                Ok(if saw_null {
                    Value::Null
                } else {
                    value::from_bool(Some(*negated))
                })
            }
            SubqueryKind::InRow {
                exprs,
                negated,
                collations,
            } => {
                let mut left = Vec::with_capacity(exprs.len());
                for e in exprs {
                    left.push(e.eval(row, env)?);
                }
                let result = env.subquery(self.id, &outer)?;
                Ok(value::from_bool(
                    row_in(&left, &result.rows, collations).map(|found| found != *negated),
                ))
            }
        }
    }
}

/// Whether `left` equals one of `rows` (rule 3): Some(true) on a match, None when no row
/// differs from it in a known pair but some pair is NULL, Some(false) otherwise.
fn row_in(left: &[Value], rows: &[Vec<Value>], collations: &[Collation]) -> Option<bool> {
    let mut unknown = false;
    for r in rows {
        let mut all_equal = true;
        let mut differs = false;
        for ((x, v), collation) in left.iter().zip(r).zip(collations) {
            match value::compare(x, v, *collation) {
                Some(Ordering::Equal) => {}
                Some(_) => {
                    differs = true;
                    break;
                }
                None => all_equal = false,
            }
        }
        if differs {
            continue;
        }
        if all_equal {
            return Some(true);
        }
        unknown = true;
    }
    if unknown {
        None
    } else {
        Some(false)
    }
}

/// How a subquery is used, before binding.
pub(crate) enum SubqueryUse<'e> {
    Scalar,
    Exists {
        negated: bool,
    },
    In {
        expr: &'e sqlparser::ast::Expr,
        negated: bool,
    },
    /// `(x, y, ...) [NOT] IN (subquery)`.
    InRow {
        exprs: &'e [sqlparser::ast::Expr],
        negated: bool,
    },
}

impl crate::bind::Binder<'_> {
    /// Binds a subquery used as `how`: its query into the statement's list, and the
    /// expression that stands for it here.
    pub(crate) fn subquery_expr(
        &mut self,
        q: &sqlparser::ast::Query,
        how: SubqueryUse<'_>,
    ) -> Result<(Expr, crate::types::SqlType), SqlError> {
        let left = match &how {
            SubqueryUse::In { expr, .. } => Some(self.expr(expr)?),
            _ => None,
        };
        let mut row = Vec::new();
        if let SubqueryUse::InRow { exprs, .. } = &how {
            for e in *exprs {
                if matches!(e, sqlparser::ast::Expr::Tuple(_)) {
                    return Err(SqlError::unsupported(
                        "a nested row constructor before IN (SELECT ...)",
                    ));
                }
                row.push(self.expr(e)?);
            }
        }
        let outer = self.current_scope();
        let mut sub = self.child(outer);
        let bound = sub.query(q);
        let args = std::mem::take(&mut sub.outer_refs);
        self.adopt(sub);
        let bound = bound?;
        let types = bound.types().to_vec();
        let bool_type = crate::types::SqlType::Int {
            unsigned: false,
            len: 1,
        };
        let (kind, ty, max_rows) = match (how, left) {
            (SubqueryUse::Scalar, _) => {
                if types.len() != 1 {
                    return Err(operand_columns(1));
                }
                (SubqueryKind::Scalar, types[0].clone(), Some(2))
            }
            (SubqueryUse::Exists { negated }, _) => {
                (SubqueryKind::Exists { negated }, bool_type, Some(1))
            }
            (SubqueryUse::In { negated, .. }, Some((x, tx))) => {
                if types.len() != 1 {
                    return Err(operand_columns(1));
                }
                let collation = crate::bind::pick_collation(&[&tx, &types[0]]);
                (
                    SubqueryKind::In {
                        expr: x.boxed(),
                        negated,
                        collation,
                    },
                    bool_type,
                    None,
                )
            }
            (SubqueryUse::In { .. }, None) => return Err(SqlError::internal("IN without operand")),
            (SubqueryUse::InRow { negated, .. }, _) => {
                if types.len() != row.len() {
                    return Err(operand_columns(row.len()));
                }
                let collations = row
                    .iter()
                    .zip(&types)
                    .map(|((_, tx), t)| crate::bind::pick_collation(&[tx, t]))
                    .collect();
                (
                    SubqueryKind::InRow {
                        exprs: row.into_iter().map(|(e, _)| e).collect(),
                        negated,
                        collations,
                    },
                    bool_type,
                    None,
                )
            }
        };
        let id = self.subqueries.len();
        self.subqueries.push(crate::query::BoundSubquery {
            query: bound,
            correlated: !args.is_empty(),
            max_rows,
        });
        Ok((
            Expr::Subquery(Box::new(SubqueryExpr { id, kind, args })),
            ty,
        ))
    }
}
