//! Planning: choosing how a statement reads its table. A pure function of the table's
//! definition and the bound WHERE condition; tested with text fixtures (testdata/plan.test:
//! statement in, EXPLAIN text out).
//!
//! Rules, applied to the AND-ed conjuncts of WHERE of the form `column op constant` (or
//! `column BETWEEN constant AND constant`), where constant means "reads no row column":
//! 1. Equality on every primary key column: a point get.
//! 2. Otherwise each index (primary first, then secondaries in definition order) scores its
//!    leading columns: equalities extend the prefix, then one column may add a range (`<`,
//!    `<=`, `>`, `>=`, BETWEEN). The longest equality prefix wins, then having a range; ties
//!    go to the earlier index (so the primary key).
//! 3. No usable conjunct: a full scan of the primary key.
//!
//! The WHERE condition is always re-checked on every row read, so an access path only ever
//! has to deliver a superset of the matching rows (this is what lets the executor widen a
//! bound it cannot encode exactly, e.g. `id < 2.5`).

use std::fmt::Write as _;

use shale_table::{IndexChoice, TableDef};

use crate::expr::{CmpOp, Expr};

/// One end of a range on an index column.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RangeBound {
    pub value: Expr,
    pub inclusive: bool,
}

/// How rows are read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Access {
    /// No FROM: one empty row.
    NoTable,
    /// One primary key lookup; one value per primary key column.
    PointGet(Vec<Expr>),
    /// A scan of one index: equal values on the leading columns, then an optional range on
    /// the next one.
    Range {
        index: IndexChoice,
        eq: Vec<Expr>,
        lower: Option<RangeBound>,
        upper: Option<RangeBound>,
    },
    /// Every row in primary key order.
    FullScan,
}

/// A conjunct usable for access: column position, operator, constant side.
struct Sarg<'a> {
    column: usize,
    op: CmpOp,
    value: &'a Expr,
}

fn conjuncts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    if let Expr::And(a, b) = e {
        conjuncts(a, out);
        conjuncts(b, out);
    } else {
        out.push(e);
    }
}

fn sargs(filter: &Expr) -> Vec<Sarg<'_>> {
    let mut parts = Vec::new();
    conjuncts(filter, &mut parts);
    let mut out = Vec::new();
    for p in parts {
        match p {
            Expr::Cmp(op, a, b, _) if !matches!(op, CmpOp::Ne | CmpOp::NullSafeEq) => {
                match (a.as_ref(), b.as_ref()) {
                    (Expr::Column(c), v) if v.is_row_independent() => out.push(Sarg {
                        column: *c,
                        op: *op,
                        value: v,
                    }),
                    (v, Expr::Column(c)) if v.is_row_independent() => out.push(Sarg {
                        column: *c,
                        op: op.flip(),
                        value: v,
                    }),
                    _ => {}
                }
            }
            Expr::Between {
                expr,
                low,
                high,
                negated: false,
                ..
            } => {
                if let Expr::Column(c) = expr.as_ref() {
                    if low.is_row_independent() && high.is_row_independent() {
                        out.push(Sarg {
                            column: *c,
                            op: CmpOp::Ge,
                            value: low,
                        });
                        out.push(Sarg {
                            column: *c,
                            op: CmpOp::Le,
                            value: high,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Chooses the access path for reading `table` under `filter` (rules 1-3).
pub(crate) fn plan_access(table: &TableDef, filter: Option<&Expr>) -> Access {
    let Some(filter) = filter else {
        return Access::FullScan;
    };
    let sargs = sargs(filter);
    if sargs.is_empty() {
        return Access::FullScan;
    }
    let eq_on = |col: usize| sargs.iter().find(|s| s.column == col && s.op == CmpOp::Eq);
    let pk = &table.primary_key.columns;
    if !pk.is_empty() {
        let values: Option<Vec<Expr>> = pk
            .iter()
            .map(|&c| eq_on(c).map(|s| s.value.clone()))
            .collect();
        if let Some(values) = values {
            return Access::PointGet(values);
        }
    }
    let mut candidates: Vec<(IndexChoice, &[usize])> = Vec::new();
    if !pk.is_empty() {
        candidates.push((IndexChoice::Primary, pk));
    }
    for (i, idx) in table.indexes.iter().enumerate() {
        candidates.push((IndexChoice::Secondary(i), &idx.columns));
    }
    let mut best: Option<(usize, Access)> = None;
    for (choice, cols) in candidates {
        let mut eq = Vec::new();
        let mut lower = None;
        let mut upper = None;
        for &c in cols {
            if let Some(s) = eq_on(c) {
                eq.push(s.value.clone());
                continue;
            }
            for s in sargs.iter().filter(|s| s.column == c) {
                let bound = RangeBound {
                    value: s.value.clone(),
                    inclusive: matches!(s.op, CmpOp::Ge | CmpOp::Le),
                };
                match s.op {
                    CmpOp::Gt | CmpOp::Ge if lower.is_none() => lower = Some(bound),
                    CmpOp::Lt | CmpOp::Le if upper.is_none() => upper = Some(bound),
                    _ => {}
                }
            }
            break;
        }
        let score = eq.len() * 2 + usize::from(lower.is_some() || upper.is_some());
        if score > 0 && best.as_ref().is_none_or(|(b, _)| score > *b) {
            best = Some((
                score,
                Access::Range {
                    index: choice,
                    eq,
                    lower,
                    upper,
                },
            ));
        }
    }
    best.map_or(Access::FullScan, |(_, a)| a)
}

/// A short text of an expression for EXPLAIN.
pub(crate) fn render(e: &Expr, table: Option<&TableDef>) -> String {
    match e {
        Expr::Literal(v) => match v {
            shale_table::Value::Bytes(_) => format!("'{}'", crate::value::display(v)),
            _ => crate::value::display(v),
        },
        Expr::Param(n) => format!("?{n}"),
        Expr::Column(c) => table
            .and_then(|t| t.columns.get(*c))
            .map_or_else(|| format!("#{c}"), |col| col.name.clone()),
        Expr::SysVar(v) => format!("@@{v}"),
        _ => "<expr>".to_string(),
    }
}

/// EXPLAIN's text for an access path.
pub(crate) fn explain(table: Option<&TableDef>, access: &Access) -> String {
    let Some(t) = table else {
        return "no table".to_string();
    };
    let col = |i: usize| {
        t.columns
            .get(i)
            .map_or("?", |c| c.name.as_str())
            .to_string()
    };
    match access {
        Access::NoTable => "no table".to_string(),
        Access::FullScan => format!("full scan {}", t.name),
        Access::PointGet(values) => {
            let parts: Vec<String> = t
                .primary_key
                .columns
                .iter()
                .zip(values)
                .map(|(&c, v)| format!("{} = {}", col(c), render(v, Some(t))))
                .collect();
            format!("point get {}.PRIMARY ({})", t.name, parts.join(", "))
        }
        Access::Range {
            index,
            eq,
            lower,
            upper,
        } => {
            let (name, cols) = match index {
                IndexChoice::Primary => ("PRIMARY", &t.primary_key.columns),
                IndexChoice::Secondary(i) => match t.indexes.get(*i) {
                    Some(idx) => (idx.name.as_str(), &idx.columns),
                    None => ("?", &t.primary_key.columns),
                },
            };
            let mut s = format!("range {}.{name}", t.name);
            let mut parts: Vec<String> = cols
                .iter()
                .zip(eq)
                .map(|(&c, v)| format!("{} = {}", col(c), render(v, Some(t))))
                .collect();
            if let Some(&next) = cols.get(eq.len()) {
                if let Some(l) = lower {
                    let op = if l.inclusive { ">=" } else { ">" };
                    parts.push(format!("{} {op} {}", col(next), render(&l.value, Some(t))));
                }
                if let Some(u) = upper {
                    let op = if u.inclusive { "<=" } else { "<" };
                    parts.push(format!("{} {op} {}", col(next), render(&u.value, Some(t))));
                }
            }
            let _ = write!(s, " ({})", parts.join(" AND "));
            s
        }
    }
}
