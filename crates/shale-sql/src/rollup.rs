//! `GROUP BY ... WITH ROLLUP` and `GROUPING()`, as MySQL 8 has them.
//!
//! With ROLLUP over keys `k0 .. k(n-1)`, a grouped SELECT returns, besides its groups, one
//! super-aggregate row per distinct prefix `k0 .. k(L-1)` for every level `L < n` (level 0 is
//! the grand total). Rules:
//! 1. Row layout: a grouped row is the group's first input row, then the rollup columns (one
//!    per key: the key's value, NULL where the row rolls the key up; then the row's level, the
//!    number of keys it keeps), then the aggregates, then the window calls. Without ROLLUP
//!    there are no rollup columns.
//! 2. After grouping (select list, HAVING, ORDER BY), an expression equal to a GROUP BY key
//!    reads that key's rollup column, so `a`, `a + 1` and `IFNULL(a, 'all')` see the NULL of
//!    a super-aggregate row; aggregate arguments still read the input rows. A select item a
//!    GROUP BY item names (by alias or position) reads that item's key, else the first equal
//!    key does.
//! 3. `GROUPING(e1, .., ek)` is a bit mask, `e1` the highest bit: 1 where the row rolls up the
//!    key `ej` equals. Only with ROLLUP and only after grouping (1111 elsewhere); an argument
//!    that equals no key is 3602, a constant is 1210, more than 64 arguments 3601; GROUP BY
//!    GROUPING(..) is 1056.
//! 4. Execution (exec.rs): every input row is aggregated into its group at each level (the
//!    groups of its key prefixes), so every aggregate, DISTINCT and GROUP_CONCAT ones too,
//!    sees exactly its rows. The groups come out sorted by their keys with a rolled-up key
//!    after every value, so each group's super-aggregate rows follow its last group (NULL
//!    keys of real groups sort first). HAVING, DISTINCT, ORDER BY and LIMIT then apply to all
//!    rows. No input rows give no rows at all, not a grand total.

use std::cmp::Ordering;

use shale_table::{Collation, Value};
use sqlparser::ast;

use crate::error::SqlError;
use crate::expr::Expr;

/// The GROUP BY items of a SELECT, and whether it rolls them up: `GROUP BY a, b WITH ROLLUP`
/// or the standard `GROUP BY ROLLUP (a, b)`. CUBE, GROUPING SETS, `GROUP BY ALL` and
/// `WITH TOTALS` are 1235.
pub(crate) fn group_by_items(g: &ast::GroupByExpr) -> Result<(Vec<&ast::Expr>, bool), SqlError> {
    let ast::GroupByExpr::Expressions(exprs, modifiers) = g else {
        return Err(SqlError::unsupported("GROUP BY ALL"));
    };
    let rollup = match modifiers.as_slice() {
        [] => false,
        [ast::GroupByWithModifier::Rollup] => true,
        [other, ..] => return Err(SqlError::unsupported(format!("GROUP BY ... {other}"))),
    };
    if let [ast::Expr::Function(f)] = exprs.as_slice() {
        if !rollup
            && crate::bind::ident_name(&f.name)
                .join(".")
                .eq_ignore_ascii_case("ROLLUP")
        {
            let ast::FunctionArguments::List(list) = &f.args else {
                return Err(SqlError::syntax(&f.to_string(), 1));
            };
            if list.duplicate_treatment.is_some()
                || !list.clauses.is_empty()
                || list.args.is_empty()
            {
                return Err(SqlError::syntax(&f.to_string(), 1));
            }
            let mut items = Vec::with_capacity(list.args.len());
            for a in &list.args {
                match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => items.push(e),
                    _ => return Err(SqlError::syntax(&f.to_string(), 1)),
                }
            }
            return Ok((items, true));
        }
    }
    Ok((exprs.iter().collect(), rollup))
}

/// How many arguments GROUPING takes at most (its result is a 64-bit mask).
const MAX_GROUPING_ARGS: usize = 64;

/// The rollup columns of a SELECT being bound: its GROUP BY keys, and where its rollup
/// columns start (the input row's width).
#[derive(Debug, Clone)]
pub(crate) struct RollupKeys {
    pub keys: Vec<Expr>,
    pub first: usize,
}

impl RollupKeys {
    /// How many columns rollup adds to the row (rule 1).
    pub(crate) fn width(&self) -> usize {
        self.keys.len() + 1
    }

    fn key_column(&self, i: usize) -> Expr {
        Expr::Column(self.first + i)
    }

    fn level_column(&self) -> Expr {
        Expr::Column(self.first + self.keys.len())
    }

    /// `e` with every part equal to a key reading the key's rollup column (rule 2); a whole
    /// `e` equal to key `preferred` reads that key.
    pub(crate) fn wrap(&self, e: &Expr, preferred: Option<usize>) -> Expr {
        if let Some(p) = preferred.filter(|&p| self.keys.get(p) == Some(e)) {
            return self.key_column(p);
        }
        crate::walk::replace(e, &|x| {
            self.keys
                .iter()
                .position(|k| k == x)
                .map(|i| self.key_column(i))
        })
    }

    /// `GROUPING(args)` over bound arguments (rule 3): the mask as an expression over the
    /// level column. Bit of key `i`: `level <= i`.
    pub(crate) fn grouping(&self, args: &[Expr]) -> Result<Expr, SqlError> {
        if args.len() > MAX_GROUPING_ARGS {
            return Err(SqlError::new(
                3601,
                "HY000",
                format!(
                    "Too many arguments for function GROUPING: {}; maximum allowed is \
                     {MAX_GROUPING_ARGS}.",
                    args.len()
                ),
            ));
        }
        let mut mask: Option<Expr> = None;
        for (n, a) in args.iter().enumerate() {
            if matches!(a, Expr::Literal(_) | Expr::Param(_)) {
                return Err(SqlError::new(
                    1210,
                    "HY000",
                    "Incorrect arguments to GROUPING function",
                ));
            }
            let Some(i) = self.keys.iter().position(|k| k == a) else {
                return Err(SqlError::new(
                    3602,
                    "HY000",
                    format!(
                        "Argument #{} of GROUPING function is not in GROUP BY",
                        n + 1
                    ),
                ));
            };
            let bit = Expr::Func(
                crate::expr::Func::If,
                vec![
                    Expr::Cmp(
                        crate::expr::CmpOp::Le,
                        self.level_column().boxed(),
                        Expr::Literal(Value::Int(i as i64)).boxed(),
                        Collation::Binary,
                    ),
                    Expr::Literal(Value::Int(1)),
                    Expr::Literal(Value::Int(0)),
                ],
            );
            mask = Some(match mask {
                None => bit,
                Some(m) => Expr::Arith(
                    crate::value::ArithOp::Add,
                    Expr::Arith(
                        crate::value::ArithOp::Mul,
                        m.boxed(),
                        Expr::Literal(Value::Int(2)).boxed(),
                    )
                    .boxed(),
                    bit.boxed(),
                ),
            });
        }
        mask.ok_or_else(|| SqlError::syntax("GROUPING()", 1))
    }
}

/// The rollup columns of a group at `level` whose keys are `keys` (rule 1).
pub(crate) fn columns(keys: &[Value], level: usize, out: &mut Vec<Value>) {
    for (i, k) in keys.iter().enumerate() {
        out.push(if i < level { k.clone() } else { Value::Null });
    }
    out.push(Value::Int(level as i64));
}

/// The output order of rollup groups (rule 4): by key, a rolled-up key (`i >= level`)
/// after every value of it.
pub(crate) fn compare(
    (a, a_level): (&[Value], usize),
    (b, b_level): (&[Value], usize),
    collations: &[Collation],
) -> Ordering {
    for i in 0..a.len().min(b.len()) {
        let o = match (i < a_level, i < b_level) {
            (true, true) => crate::value::sort_compare(
                &a[i],
                &b[i],
                collations.get(i).copied().unwrap_or(Collation::Binary),
            ),
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => Ordering::Equal,
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolled_up_keys_sort_after_every_value_of_their_prefix() {
        let coll = [Collation::Binary, Collation::Binary];
        let group = |a: i64, b: Option<i64>, level| {
            let b = b.map_or(Value::Null, Value::Int);
            (vec![Value::Int(a), b], level)
        };
        let mut rows = [
            (vec![Value::Null, Value::Null], 0),
            group(2, None, 1),
            group(1, Some(5), 2),
            group(2, Some(1), 2),
            group(1, None, 1),
            group(1, None, 2),
        ];
        rows.sort_by(|a, b| compare((&a.0, a.1), (&b.0, b.1), &coll));
        let levels: Vec<(Value, usize)> = rows.iter().map(|r| (r.0[0].clone(), r.1)).collect();
        assert_eq!(
            levels,
            vec![
                (Value::Int(1), 2), // (1, NULL): a real NULL key sorts first
                (Value::Int(1), 2),
                (Value::Int(1), 1),
                (Value::Int(2), 2),
                (Value::Int(2), 1),
                (Value::Null, 0),
            ]
        );
        assert_eq!(rows[0].0[1], Value::Null);
        assert_eq!(rows[1].0[1], Value::Int(5));
    }

    #[test]
    fn rollup_columns_null_the_keys_a_row_rolls_up() {
        let mut out = Vec::new();
        columns(&[Value::Int(7), Value::Int(8)], 1, &mut out);
        assert_eq!(out, vec![Value::Int(7), Value::Null, Value::Int(1)]);
    }
}
