//! UNION, INTERSECT and EXCEPT of SELECTs, as a tree (MySQL 8.0.31's set operations).
//!
//! sqlparser parses the operators with MySQL's precedence (INTERSECT binds tighter than
//! UNION and EXCEPT, which go left to right), so the tree is kept as parsed. Each operator is
//! DISTINCT unless it says ALL:
//! - UNION: the rows of both sides; DISTINCT makes the whole result distinct (so in
//!   `a UNION ALL b UNION c` the last UNION also removes duplicates between a and b, as in
//!   MySQL).
//! - INTERSECT: rows of the left side found on the right; ALL keeps a row as many times as it
//!   is on both sides (the smaller count).
//! - EXCEPT: rows of the left side not on the right; ALL takes away one left row per right
//!   row.
//!
//! Rows are compared as GROUP BY compares them, in each column's collation (exec.rs,
//! `group_key`), so NULLs are equal to each other here.

use std::collections::{HashMap, HashSet};

use sqlparser::ast;

use crate::error::SqlError;
use crate::exec::group_key;
use shale_table::Collation;
use shale_table::Value;

/// A set operation's shape; leaves index the bound SELECTs.
#[derive(Debug, Clone)]
pub(crate) enum SetTree {
    Leaf(usize),
    Op {
        op: SetOp,
        all: bool,
        left: Box<SetTree>,
        right: Box<SetTree>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SetOp {
    Union,
    Intersect,
    Except,
}

/// The tree of `body`, pushing each SELECT it combines onto `leaves` in order.
pub(crate) fn tree<'q>(
    body: &'q ast::SetExpr,
    leaves: &mut Vec<&'q ast::SetExpr>,
) -> Result<SetTree, SqlError> {
    match body {
        ast::SetExpr::SetOperation {
            left,
            op,
            set_quantifier,
            right,
        } => {
            let op = match op {
                ast::SetOperator::Union => SetOp::Union,
                ast::SetOperator::Intersect => SetOp::Intersect,
                ast::SetOperator::Except => SetOp::Except,
                other @ ast::SetOperator::Minus => {
                    return Err(SqlError::unsupported(other.to_string()))
                }
            };
            let all = match set_quantifier {
                ast::SetQuantifier::All => true,
                ast::SetQuantifier::Distinct | ast::SetQuantifier::None => false,
                other => return Err(SqlError::unsupported(format!("{op:?} {other}"))),
            };
            let left = tree(left, leaves)?;
            let right = tree(right, leaves)?;
            Ok(SetTree::Op {
                op,
                all,
                left: Box::new(left),
                right: Box::new(right),
            })
        }
        // `(SELECT ... UNION SELECT ...)` as an operand: its operators join the tree.
        ast::SetExpr::Query(q)
            if matches!(q.body.as_ref(), ast::SetExpr::SetOperation { .. })
                && q.with.is_none()
                && q.order_by.is_none()
                && q.limit_clause.is_none()
                && q.fetch.is_none()
                && q.locks.is_empty() =>
        {
            tree(&q.body, leaves)
        }
        other => {
            leaves.push(other);
            Ok(SetTree::Leaf(leaves.len() - 1))
        }
    }
}

/// The rows of `tree`, where leaf `i`'s rows are `leaves[i]` (taken).
pub(crate) fn evaluate(
    tree: &SetTree,
    leaves: &mut [Vec<Vec<Value>>],
    collations: &[Collation],
) -> Vec<Vec<Value>> {
    match tree {
        SetTree::Leaf(i) => std::mem::take(&mut leaves[*i]),
        SetTree::Op {
            op,
            all,
            left,
            right,
        } => {
            let left = evaluate(left, leaves, collations);
            let right = evaluate(right, leaves, collations);
            combine(*op, *all, left, right, collations)
        }
    }
}

/// EXPLAIN's name for each of `n` leaves: the operator that brings it in (`union all`,
/// `intersect distinct`, ...); the first leaf is named by the outermost operator alone.
pub(crate) fn labels(tree: &SetTree, n: usize) -> Vec<String> {
    fn walk(tree: &SetTree, label: String, out: &mut [String]) {
        match tree {
            SetTree::Leaf(i) => {
                if let Some(slot) = out.get_mut(*i) {
                    *slot = label;
                }
            }
            SetTree::Op {
                op,
                all,
                left,
                right,
            } => {
                walk(left, label, out);
                let quantifier = if *all { "all" } else { "distinct" };
                walk(right, format!("{} {quantifier}", op.name()), out);
            }
        }
    }
    let mut out = vec![String::new(); n];
    let first = match tree {
        SetTree::Op { op, .. } => op.name().to_string(),
        SetTree::Leaf(_) => String::new(),
    };
    walk(tree, first, &mut out);
    out
}

impl SetOp {
    fn name(self) -> &'static str {
        match self {
            SetOp::Union => "union",
            SetOp::Intersect => "intersect",
            SetOp::Except => "except",
        }
    }
}

fn combine(
    op: SetOp,
    all: bool,
    left: Vec<Vec<Value>>,
    right: Vec<Vec<Value>>,
    collations: &[Collation],
) -> Vec<Vec<Value>> {
    let key = |row: &[Value]| {
        let mut k = String::new();
        group_key(row, collations, &mut k);
        k
    };
    match op {
        SetOp::Union => {
            let rows = left.into_iter().chain(right);
            if all {
                rows.collect()
            } else {
                distinct(rows, &key)
            }
        }
        SetOp::Intersect | SetOp::Except => {
            let mut counts: HashMap<String, usize> = HashMap::new();
            for row in &right {
                *counts.entry(key(row)).or_default() += 1;
            }
            let keep_found = op == SetOp::Intersect;
            let mut out = Vec::new();
            let mut emitted = HashSet::new();
            for row in left {
                let k = key(&row);
                let found = counts.get(&k).copied().unwrap_or(0) > 0;
                if all {
                    if found {
                        // One right row pairs with (INTERSECT) or cancels (EXCEPT) this one.
                        if let Some(n) = counts.get_mut(&k) {
                            *n -= 1;
                        }
                    }
                    if found == keep_found {
                        out.push(row);
                    }
                } else if found == keep_found && emitted.insert(k) {
                    out.push(row);
                }
            }
            out
        }
    }
}

fn distinct(
    rows: impl Iterator<Item = Vec<Value>>,
    key: &dyn Fn(&[Value]) -> String,
) -> Vec<Vec<Value>> {
    let mut seen = HashSet::new();
    rows.filter(|row| seen.insert(key(row))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(values: &[i64]) -> Vec<Vec<Value>> {
        values.iter().map(|v| vec![Value::Int(*v)]).collect()
    }

    fn ints(rows: &[Vec<Value>]) -> Vec<i64> {
        rows.iter()
            .map(|r| match r[0] {
                Value::Int(v) => v,
                _ => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn each_operator_with_and_without_all() {
        let c = [Collation::Binary];
        let (l, r) = (rows(&[1, 1, 1, 2, 3, 3]), rows(&[1, 1, 3, 4]));
        let run = |op, all| ints(&combine(op, all, l.clone(), r.clone(), &c));
        assert_eq!(run(SetOp::Union, true), [1, 1, 1, 2, 3, 3, 1, 1, 3, 4]);
        assert_eq!(run(SetOp::Union, false), [1, 2, 3, 4]);
        assert_eq!(run(SetOp::Intersect, true), [1, 1, 3]);
        assert_eq!(run(SetOp::Intersect, false), [1, 3]);
        assert_eq!(run(SetOp::Except, true), [1, 2, 3]);
        assert_eq!(run(SetOp::Except, false), [2]);
    }
}
