//! Planning: choosing how a statement reads its table. A function of the table's
//! definition, the bound WHERE condition and, where two indexes compete, the kept index
//! statistics (rule 8); tested with text fixtures (testdata/plan.test:
//! statement in, EXPLAIN text out).
//!
//! Rules, applied to the AND-ed conjuncts of WHERE of the form `column op constant` (or
//! `column BETWEEN constant AND constant`), where constant means "reads no row column":
//! 1. Equality on every primary key column: a point get.
//! 2. Otherwise each index (primary first, then secondaries in definition order) scores its
//!    leading columns: equalities extend the prefix, then one column may add a range (`<`,
//!    `<=`, `>`, `>=`, BETWEEN). The longest equality prefix wins, then having a range; ties
//!    go to the earlier index (so the primary key).
//! 3. No usable conjunct: a full scan of the primary key. Before rule 2, `pk IN (constants)`
//!    on a one-column primary key (at most 1000 values) is one lookup per value.
//! 4. The WHERE condition is re-checked on every row read, so an access path only ever has to
//!    deliver a superset of the matching rows (this is what lets the executor widen a bound it
//!    cannot encode exactly, e.g. `id <= 2.5`). Conjuncts on integer columns that the access
//!    path enforces are left out of the `residual` check, which the executor uses only when
//!    every key value converted exactly (an integer in the column's range).
//! 5. ORDER BY needs no sort when its keys are the access index's next integer columns after
//!    the equality prefix (never NULL: primary key columns, or NOT NULL ones), all ASC or all
//!    DESC; DESC reads the index backwards. A point get is always in order.
//! 6. A conjunct that is an OR whose every branch compares the same column with a constant
//!    (`=`, `<`, `<=`, `>`, `>=`, BETWEEN, IN), or an IN list, gives a list of intervals on
//!    that column: a multi-range access on the primary key when it is the key's first
//!    column, else on the first secondary index led by it (`MySQL`'s "range" access over an
//!    OR). It is chosen when no index has an equality prefix (rule 2), and over a rule 2
//!    range only when every interval is closed; with no statistics in the planner the index
//!    is always preferred to a full scan, as `MySQL` does for small range sets. The whole
//!    WHERE stays the residual. The executor scans the merged intervals in index order (last
//!    first when reading backwards), so rule 5 applies with an empty equality prefix.
//! 7. An operand that is an indexed generated column's expression counts as that column
//!    (gencol_match.rs), before any rule above.
//! 8. When two or more indexes can serve rule 2 and every one of them has kept statistics
//!    (ANALYZE TABLE, SHOW INDEX: plan_stats.rs), the one with the lowest estimated cost wins
//!    instead of the longest equality prefix (equal costs go to rule 2's choice). Without statistics
//!    the plan is a pure function of the definition and the condition.
//! 9. A comparison in a case-insensitive collation of a column stored in a binary or `_bin`
//!    one (`b = 'A' COLLATE utf8mb4_general_ci`, coercibility.rs) bounds no access path: the
//!    index's order would miss the rows that differ in case. (The other way round the index
//!    gives a superset, which rule 4 filters.) A text column in any other collation
//!    (utf8mb4_0900_ai_ci, utf8mb4_unicode_ci, ...) bounds a path only for a comparison in
//!    its own collation.

use std::fmt::Write as _;

use shale_table::{Collation, ColumnType, IndexChoice, TableDef};

use crate::bind::SortKey;
use crate::expr::{CmpOp, Expr};
use crate::plan_stats::StatsProvider;

/// The longest IN list read as separate primary key lookups.
const MAX_MULTI_GET: usize = 1000;

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
    /// `pk IN (list)` on a one-column primary key: one lookup per value, in key order.
    MultiGet(Vec<Expr>),
    /// A scan of one index: equal values on the leading columns, then an optional range on
    /// the next one.
    Range {
        index: IndexChoice,
        eq: Vec<Expr>,
        lower: Option<RangeBound>,
        upper: Option<RangeBound>,
    },
    /// A scan of several ranges of one index's leading column, from an OR (or IN) of
    /// comparisons on it (rule 6). The executor evaluates the bounds, drops empty intervals,
    /// merges overlapping ones and scans them in index order.
    MultiRange {
        index: IndexChoice,
        ranges: Vec<Interval>,
    },
    /// Every row in primary key order.
    FullScan,
}

/// One interval of a multi-range access; None is an open end.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Interval {
    pub lower: Option<RangeBound>,
    pub upper: Option<RangeBound>,
}

/// A chosen access path and the part of WHERE it does not already guarantee.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    pub access: Access,
    /// WHERE without the conjuncts the access path enforces exactly (rule 4): what to check
    /// on each row when every key value converted exactly. Otherwise the whole WHERE is.
    pub residual: Option<Expr>,
    /// The access path already delivers ORDER BY's order (rule 5): `Some(reverse)`.
    pub ordered: Option<bool>,
}

/// A conjunct usable for access: column position, operator, constant side, and which
/// conjunct of WHERE it came from.
struct Sarg<'a> {
    column: usize,
    op: CmpOp,
    value: &'a Expr,
    conjunct: usize,
}

fn conjuncts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    if let Expr::And(a, b) = e {
        conjuncts(a, out);
        conjuncts(b, out);
    } else {
        out.push(e);
    }
}

fn sargs<'a>(parts: &[&'a Expr]) -> Vec<Sarg<'a>> {
    let mut out = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        match p {
            Expr::Cmp(op, a, b, _) if !matches!(op, CmpOp::Ne | CmpOp::NullSafeEq) => {
                match (a.as_ref(), b.as_ref()) {
                    (Expr::Column(c), v) if v.is_row_independent() => out.push(Sarg {
                        column: *c,
                        op: *op,
                        value: v,
                        conjunct: i,
                    }),
                    (v, Expr::Column(c)) if v.is_row_independent() => out.push(Sarg {
                        column: *c,
                        op: op.flip(),
                        value: v,
                        conjunct: i,
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
                            conjunct: i,
                        });
                        out.push(Sarg {
                            column: *c,
                            op: CmpOp::Le,
                            value: high,
                            conjunct: i,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The most intervals one multi-range access carries (beyond it, a full scan).
const MAX_INTERVALS: usize = 1000;

/// The intervals one branch of an OR allows on one column (rule 6), or None when the branch
/// is not such a comparison.
fn branch_intervals(e: &Expr, out: &mut Vec<(usize, Interval)>) -> Option<()> {
    let closed = |v: &Expr| {
        Some(RangeBound {
            value: v.clone(),
            inclusive: true,
        })
    };
    match e {
        Expr::Or(a, b) => {
            branch_intervals(a, out)?;
            branch_intervals(b, out)
        }
        Expr::Cmp(op, a, b, _) => {
            let (column, op, v) = match (a.as_ref(), b.as_ref()) {
                (Expr::Column(c), v) if v.is_row_independent() => (*c, *op, v),
                (v, Expr::Column(c)) if v.is_row_independent() => (*c, op.flip(), v),
                _ => return None,
            };
            let bound = |inclusive| {
                Some(RangeBound {
                    value: v.clone(),
                    inclusive,
                })
            };
            let interval = match op {
                CmpOp::Eq => Interval {
                    lower: closed(v),
                    upper: closed(v),
                },
                CmpOp::Lt | CmpOp::Le => Interval {
                    lower: None,
                    upper: bound(op == CmpOp::Le),
                },
                CmpOp::Gt | CmpOp::Ge => Interval {
                    lower: bound(op == CmpOp::Ge),
                    upper: None,
                },
                CmpOp::Ne | CmpOp::NullSafeEq => return None,
            };
            out.push((column, interval));
            Some(())
        }
        Expr::Between {
            expr,
            low,
            high,
            negated: false,
            ..
        } => match expr.as_ref() {
            Expr::Column(c) if low.is_row_independent() && high.is_row_independent() => {
                out.push((
                    *c,
                    Interval {
                        lower: closed(low),
                        upper: closed(high),
                    },
                ));
                Some(())
            }
            _ => None,
        },
        Expr::InList {
            expr,
            list,
            negated: false,
            ..
        } => match expr.as_ref() {
            Expr::Column(c) if !list.is_empty() && list.iter().all(Expr::is_row_independent) => {
                for v in list {
                    out.push((
                        *c,
                        Interval {
                            lower: closed(v),
                            upper: closed(v),
                        },
                    ));
                }
                Some(())
            }
            _ => None,
        },
        _ => None,
    }
}

/// Rule 9: false when `e` (or a branch of it) compares a column stored in a binary or `_bin`
/// collation under a case-insensitive one.
fn collations_fit(table: &TableDef, e: &Expr) -> bool {
    let fits = |column: &Expr, collation: Collation| match column {
        Expr::Column(c) if collation == Collation::Utf8mb4GeneralCi => table
            .columns
            .get(*c)
            .is_none_or(|col| crate::types::SqlType::of_column(&col.ty).collation() == collation),
        Expr::Column(c) => table.columns.get(*c).is_none_or(|col| {
            let stored = crate::types::SqlType::of_column(&col.ty).collation();
            let is_text = matches!(
                col.ty,
                ColumnType::Char { .. }
                    | ColumnType::VarChar { .. }
                    | ColumnType::Text { .. }
                    | ColumnType::Enum { .. }
                    | ColumnType::Set { .. }
            );
            // Only the three first collations order each other's supersets.
            let legacy = |c: Collation| {
                matches!(
                    c,
                    Collation::Binary | Collation::Utf8mb4Bin | Collation::Utf8mb4GeneralCi
                )
            };
            stored == collation || !is_text || (legacy(stored) && legacy(collation))
        }),
        _ => true,
    };
    match e {
        Expr::Or(a, b) | Expr::And(a, b) => collations_fit(table, a) && collations_fit(table, b),
        Expr::Cmp(_, a, b, collation) => fits(a, *collation) && fits(b, *collation),
        Expr::Between {
            expr, collation, ..
        }
        | Expr::InList {
            expr, collation, ..
        } => fits(expr, *collation),
        _ => true,
    }
}

/// Rule 6: the first conjunct that is an OR (or IN list) of intervals on the leading column
/// of an index, as that index and its intervals.
fn multi_range(table: &TableDef, parts: &[&Expr]) -> Option<(IndexChoice, Vec<Interval>)> {
    parts.iter().find_map(|p| {
        if !matches!(p, Expr::Or(..) | Expr::InList { .. }) || !collations_fit(table, p) {
            return None;
        }
        let mut found = Vec::new();
        branch_intervals(p, &mut found)?;
        let column = found.first()?.0;
        if found.len() > MAX_INTERVALS || found.iter().any(|(c, _)| *c != column) {
            return None;
        }
        let index = if table.primary_key.columns.first() == Some(&column) {
            IndexChoice::Primary
        } else {
            IndexChoice::Secondary(
                table
                    .indexes
                    .iter()
                    .position(|idx| idx.columns.first() == Some(&column))?,
            )
        };
        Some((index, found.into_iter().map(|(_, i)| i).collect()))
    })
}

fn is_integer_column(table: &TableDef, column: usize) -> bool {
    table
        .columns
        .get(column)
        .is_some_and(|c| crate::types::int_range(&c.ty).is_some())
}

/// The WHERE left after removing the conjuncts all of whose sargs were used, on integer
/// columns (whose key order is exactly their comparison order).
fn residual(table: &TableDef, parts: &[&Expr], sargs: &[Sarg<'_>], used: &[bool]) -> Option<Expr> {
    let removable = |i: usize| {
        let mine: Vec<usize> = (0..sargs.len())
            .filter(|&s| sargs[s].conjunct == i)
            .collect();
        !mine.is_empty()
            && mine
                .iter()
                .all(|&s| used[s] && is_integer_column(table, sargs[s].column))
    };
    parts
        .iter()
        .enumerate()
        .filter(|(i, _)| !removable(*i))
        .map(|(_, e)| (*e).clone())
        .reduce(|a, b| Expr::And(a.boxed(), b.boxed()))
}

/// Chooses the access path for reading `table` under `filter` (rules 1-4), with the table's
/// kept index statistics when there are any (rule 8).
pub(crate) fn plan(table: &TableDef, filter: Option<&Expr>, stats: Option<&StatsProvider>) -> Plan {
    // A condition on an indexed generated column's expression reads as one on the column.
    let matched = filter.and_then(|f| crate::gencol_match::substitute(table, f));
    let Some(filter) = matched.as_ref().or(filter) else {
        return Plan {
            access: Access::FullScan,
            residual: None,
            ordered: None,
        };
    };
    let mut parts = Vec::new();
    conjuncts(filter, &mut parts);
    let sargs: Vec<Sarg<'_>> = sargs(&parts)
        .into_iter()
        .filter(|s| collations_fit(table, parts[s.conjunct]))
        .collect();
    let full_scan = || Plan {
        access: Access::FullScan,
        residual: Some(filter.clone()),
        ordered: None,
    };
    let pk = &table.primary_key.columns;
    let point_get_possible = !pk.is_empty()
        && pk
            .iter()
            .all(|c| sargs.iter().any(|s| s.column == *c && s.op == CmpOp::Eq));
    if !point_get_possible {
        if let [pk_column] = pk.as_slice() {
            let in_list = parts.iter().find_map(|p| match p {
                Expr::InList {
                    expr,
                    list,
                    negated: false,
                    ..
                } if matches!(expr.as_ref(), Expr::Column(c) if c == pk_column)
                    && collations_fit(table, p)
                    && !list.is_empty()
                    && list.len() <= MAX_MULTI_GET
                    && list.iter().all(Expr::is_row_independent) =>
                {
                    Some(list.clone())
                }
                _ => None,
            });
            if let Some(list) = in_list {
                return Plan {
                    access: Access::MultiGet(list),
                    residual: Some(filter.clone()),
                    ordered: None,
                };
            }
        }
    }
    let multi = multi_range(table, &parts);
    let multi_plan = |(index, ranges): (IndexChoice, Vec<Interval>)| Plan {
        access: Access::MultiRange { index, ranges },
        residual: Some(filter.clone()),
        ordered: None,
    };
    if sargs.is_empty() {
        return multi.map_or_else(full_scan, multi_plan);
    }
    let eq_on = |col: usize| {
        sargs
            .iter()
            .position(|s| s.column == col && s.op == CmpOp::Eq)
    };
    if !pk.is_empty() {
        let positions: Option<Vec<usize>> = pk.iter().map(|&c| eq_on(c)).collect();
        if let Some(positions) = positions {
            let mut used = vec![false; sargs.len()];
            for &p in &positions {
                used[p] = true;
            }
            let values = positions.iter().map(|&p| sargs[p].value.clone()).collect();
            return Plan {
                access: Access::PointGet(values),
                residual: residual(table, &parts, &sargs, &used),
                ordered: None,
            };
        }
    }
    let mut candidates: Vec<(IndexChoice, &[usize])> = Vec::new();
    if !pk.is_empty() {
        candidates.push((IndexChoice::Primary, pk));
    }
    for (i, idx) in table.indexes.iter().enumerate() {
        candidates.push((IndexChoice::Secondary(i), &idx.columns));
    }
    // (score, access, used conjuncts, equality prefix length, has a range) per usable index.
    let mut usable: Vec<(usize, Access, Vec<bool>, usize, bool)> = Vec::new();
    for (choice, cols) in candidates {
        let mut used = vec![false; sargs.len()];
        let mut eq = Vec::new();
        let mut lower = None;
        let mut upper = None;
        for &c in cols {
            if let Some(p) = eq_on(c) {
                used[p] = true;
                eq.push(sargs[p].value.clone());
                continue;
            }
            for (p, s) in sargs.iter().enumerate().filter(|(_, s)| s.column == c) {
                let bound = RangeBound {
                    value: s.value.clone(),
                    inclusive: matches!(s.op, CmpOp::Ge | CmpOp::Le),
                };
                match s.op {
                    CmpOp::Gt | CmpOp::Ge if lower.is_none() => {
                        lower = Some(bound);
                        used[p] = true;
                    }
                    CmpOp::Lt | CmpOp::Le if upper.is_none() => {
                        upper = Some(bound);
                        used[p] = true;
                    }
                    _ => {}
                }
            }
            break;
        }
        let range = lower.is_some() || upper.is_some();
        let score = eq.len() * 2 + usize::from(range);
        if score > 0 {
            let eq_len = eq.len();
            usable.push((
                score,
                Access::Range {
                    index: choice,
                    eq,
                    lower,
                    upper,
                },
                used,
                eq_len,
                range,
            ));
        }
    }
    // Rule 2: the highest score, the earlier index on a tie.
    let by_rules =
        usable
            .iter()
            .enumerate()
            .fold(None::<(usize, usize)>, |best, (i, u)| match best {
                Some((_, score)) if score >= u.0 => best,
                _ => Some((i, u.0)),
            });
    let chosen = match (by_rules, stats) {
        (Some(_), Some(provider)) if usable.len() > 1 => {
            by_cost(table, &usable, provider).or(by_rules.map(|(i, _)| i))
        }
        _ => by_rules.map(|(i, _)| i),
    };
    let rule_score = by_rules.map(|(_, score)| score);
    let best = chosen.map(|i| {
        let (score, access, used, _, _) = usable.swap_remove(i);
        (score, access, used)
    });
    let all_closed = |(_, ranges): &(IndexChoice, Vec<Interval>)| {
        ranges
            .iter()
            .all(|r| r.lower.is_some() && r.upper.is_some())
    };
    if let Some(m) = multi {
        let take_multi = match rule_score {
            None => true,
            Some(score) => score < 2 && all_closed(&m),
        };
        if take_multi {
            return multi_plan(m);
        }
    }
    match best {
        Some((_, access, used)) => Plan {
            access,
            residual: residual(table, &parts, &sargs, &used),
            ordered: None,
        },
        None => full_scan(),
    }
}

/// Rule 8: the usable index of lowest cost, when every one has statistics.
fn by_cost(
    table: &TableDef,
    usable: &[(usize, Access, Vec<bool>, usize, bool)],
    stats: &StatsProvider,
) -> Option<usize> {
    let mut best: Option<(usize, f64, usize)> = None;
    for (i, (score, access, _, eq_len, range)) in usable.iter().enumerate() {
        let Access::Range { index, .. } = access else {
            return None;
        };
        let cost = stats.cost(table, *index, *eq_len, *range)?;
        // Equal costs go to rule 2's choice: the higher score, then the earlier index.
        if best.is_none_or(|(_, b, b_score)| cost < b || (cost <= b && *score > b_score)) {
            best = Some((i, cost, *score));
        }
    }
    best.map(|(i, _, _)| i)
}

/// Rule 5: whether `plan`'s access path delivers `order_by`'s order (and in which direction).
pub(crate) fn order(table: &TableDef, plan: &Plan, order_by: &[SortKey]) -> Option<bool> {
    let (cols, eq_len): (&[usize], usize) = match &plan.access {
        Access::NoTable | Access::PointGet(_) => return Some(false),
        Access::FullScan | Access::MultiGet(_) => (&table.primary_key.columns, 0),
        Access::MultiRange { index, .. } => match index {
            IndexChoice::Primary => (&table.primary_key.columns, 0),
            IndexChoice::Secondary(i) => (&table.indexes.get(*i)?.columns, 0),
        },
        Access::Range { index, eq, .. } => match index {
            IndexChoice::Primary => (&table.primary_key.columns, eq.len()),
            IndexChoice::Secondary(i) => (&table.indexes.get(*i)?.columns, eq.len()),
        },
    };
    let first = order_by.first()?;
    let never_null_int = |c: usize| {
        table.columns.get(c).is_some_and(|col| {
            crate::types::int_range(&col.ty).is_some()
                && (!col.nullable || table.primary_key.columns.contains(&c))
        })
    };
    for (j, key) in order_by.iter().enumerate() {
        let Expr::Column(c) = key.expr else {
            return None;
        };
        if key.desc != first.desc || cols.get(eq_len + j) != Some(&c) || !never_null_int(c) {
            return None;
        }
    }
    Some(first.desc)
}

/// A short text of an expression for EXPLAIN.
pub(crate) fn render(e: &Expr, table: Option<&TableDef>) -> String {
    let name = |c: usize| {
        table
            .and_then(|t| t.columns.get(c))
            .map_or_else(|| format!("#{c}"), |col| col.name.clone())
    };
    render_named(e, &name)
}

/// A short text of an expression for EXPLAIN, naming row column `c` `name(c)`.
pub(crate) fn render_named(e: &Expr, name: &dyn Fn(usize) -> String) -> String {
    let table = name;
    match e {
        Expr::Literal(v) => match v {
            shale_table::Value::Bytes(_) => format!("'{}'", crate::value::display(v)),
            _ => crate::value::display(v),
        },
        Expr::Param(n) => format!("?{n}"),
        Expr::Column(c) => name(*c),
        Expr::OuterRef(n) => format!("outer#{n}"),
        Expr::Subquery(s) => format!("subquery#{}", s.id),
        Expr::SysVar(v) => format!("@@{v}"),
        Expr::UserVar(v) | Expr::UserVarPerRow(v) => format!("@{v}"),
        Expr::AssignUserVar(v, value) => format!("(@{v} := {})", render_named(value, table)),
        Expr::Cmp(op, a, b, _) => {
            let sym = crate::coercibility::cmp_name(*op);
            format!(
                "{} {sym} {}",
                render_named(a, table),
                render_named(b, table)
            )
        }
        Expr::And(a, b) => format!("{} AND {}", render_named(a, table), render_named(b, table)),
        Expr::Or(a, b) => format!("({} OR {})", render_named(a, table), render_named(b, table)),
        Expr::Not(a) => format!("NOT ({})", render_named(a, table)),
        Expr::Arith(op, a, b) => {
            format!(
                "({} {} {})",
                render_named(a, table),
                op.symbol(),
                render_named(b, table)
            )
        }
        Expr::Between {
            expr,
            low,
            high,
            negated,
            ..
        } => format!(
            "{}{} BETWEEN {} AND {}",
            render_named(expr, table),
            if *negated { " NOT" } else { "" },
            render_named(low, table),
            render_named(high, table)
        ),
        Expr::IsNull(e, negated) => format!(
            "{} IS {}NULL",
            render_named(e, table),
            if *negated { "NOT " } else { "" }
        ),
        Expr::Like {
            expr,
            pattern,
            negated,
            ..
        } => format!(
            "{}{} LIKE {}",
            render_named(expr, table),
            if *negated { " NOT" } else { "" },
            render_named(pattern, table)
        ),
        Expr::InList {
            expr,
            list,
            negated,
            ..
        } => format!(
            "{}{} IN ({})",
            render_named(expr, table),
            if *negated { " NOT" } else { "" },
            list.iter()
                .map(|e| render_named(e, table))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => "<expr>".to_string(),
    }
}

/// EXPLAIN's text for a plan: the access path, then `filter` and the condition each row is
/// checked against when keys convert exactly.
pub(crate) fn explain(table: Option<&TableDef>, plan: &Plan) -> String {
    let mut text = explain_access(table, &plan.access);
    match plan.ordered {
        Some(true) => text.push_str(" ordered reverse"),
        Some(false) if !matches!(plan.access, Access::PointGet(_) | Access::NoTable) => {
            text.push_str(" ordered");
        }
        _ => {}
    }
    match &plan.residual {
        Some(r) => format!("{text} filter {}", render(r, table)),
        None => text,
    }
}

fn explain_access(table: Option<&TableDef>, access: &Access) -> String {
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
        Access::MultiGet(values) => {
            let list: Vec<String> = values.iter().map(|v| render(v, Some(t))).collect();
            let pk = t.primary_key.columns.first().map_or(0, |&c| c);
            format!(
                "multi get {}.PRIMARY ({} IN ({}))",
                t.name,
                col(pk),
                list.join(", ")
            )
        }
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
        Access::MultiRange { index, ranges } => {
            let (name, cols) = index_name(t, *index);
            let c = col(cols.first().copied().unwrap_or(0));
            let parts: Vec<String> = ranges
                .iter()
                .map(|r| match (&r.lower, &r.upper) {
                    (Some(l), Some(u)) if l.inclusive && u.inclusive && l.value == u.value => {
                        format!("{c} = {}", render(&l.value, Some(t)))
                    }
                    (Some(l), Some(u)) if l.inclusive && u.inclusive => format!(
                        "{c} BETWEEN {} AND {}",
                        render(&l.value, Some(t)),
                        render(&u.value, Some(t))
                    ),
                    (l, u) => {
                        let mut sides = Vec::new();
                        if let Some(l) = l {
                            let op = if l.inclusive { ">=" } else { ">" };
                            sides.push(format!("{c} {op} {}", render(&l.value, Some(t))));
                        }
                        if let Some(u) = u {
                            let op = if u.inclusive { "<=" } else { "<" };
                            sides.push(format!("{c} {op} {}", render(&u.value, Some(t))));
                        }
                        sides.join(" AND ")
                    }
                })
                .collect();
            format!("range {}.{name} ({})", t.name, parts.join(" OR "))
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

/// The name and columns of `index` of `t`.
fn index_name(t: &TableDef, index: IndexChoice) -> (&str, &[usize]) {
    match index {
        IndexChoice::Primary => ("PRIMARY", &t.primary_key.columns),
        IndexChoice::Secondary(i) => match t.indexes.get(i) {
            Some(idx) => (idx.name.as_str(), &idx.columns),
            None => ("?", &t.primary_key.columns),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale_table::{Collation, ColumnDef, ColumnType, IndexDef, Value};

    fn table() -> TableDef {
        let col = |name: &str, ty: ColumnType, nullable: bool| ColumnDef {
            name: name.into(),
            ty,
            nullable,
            default: None,
            auto_increment: false,
            auto_timestamp: shale_table::AutoTimestamp::default(),
            generated: None,
        };
        let int = ColumnType::Int { unsigned: false };
        TableDef {
            database: "d".into(),
            name: "t".into(),
            columns: vec![
                col("id", int.clone(), false),
                col("k", int.clone(), true),
                col(
                    "c",
                    ColumnType::Char {
                        len: 10,
                        collation: Collation::Utf8mb4GeneralCi,
                    },
                    false,
                ),
            ],
            primary_key: IndexDef {
                name: "PRIMARY".into(),
                columns: vec![0],
                unique: true,
                index_id: 1,
            },
            indexes: vec![IndexDef {
                name: "k_1".into(),
                columns: vec![1],
                unique: false,
                index_id: 2,
            }],
            schema_version: 1,
            past_versions: Vec::new(),
        }
    }

    fn cmp(op: CmpOp, col: usize, v: Expr) -> Expr {
        Expr::Cmp(op, Expr::Column(col).boxed(), v.boxed(), Collation::Binary)
    }

    fn and(a: Expr, b: Expr) -> Expr {
        Expr::And(a.boxed(), b.boxed())
    }

    /// Plans in, EXPLAIN text out: the same rules testdata/plan.test checks through SQL,
    /// without a store.
    #[test]
    fn plans_and_residuals() {
        let t = table();
        let lit = |i: i64| Expr::Literal(Value::Int(i));
        let cases: Vec<(Option<Expr>, &str)> = vec![
            (None, "full scan t"),
            (
                Some(cmp(CmpOp::Eq, 0, Expr::Param(0))),
                "point get t.PRIMARY (id = ?0)",
            ),
            (
                Some(and(cmp(CmpOp::Ge, 0, lit(1)), cmp(CmpOp::Lt, 0, lit(9)))),
                "range t.PRIMARY (id >= 1 AND id < 9)",
            ),
            (
                Some(and(cmp(CmpOp::Eq, 1, lit(3)), cmp(CmpOp::Gt, 0, lit(10)))),
                "range t.k_1 (k = 3) filter id > 10",
            ),
            (
                Some(cmp(
                    CmpOp::Eq,
                    2,
                    Expr::Literal(Value::Bytes(b"x".to_vec())),
                )),
                "full scan t filter c = 'x'",
            ),
            (
                Some(Expr::Cmp(
                    CmpOp::Eq,
                    Expr::Column(0).boxed(),
                    Expr::Column(1).boxed(),
                    Collation::Binary,
                )),
                "full scan t filter id = k",
            ),
            (
                Some(Expr::Or(
                    Expr::Between {
                        expr: Expr::Column(1).boxed(),
                        low: Expr::Param(0).boxed(),
                        high: Expr::Param(1).boxed(),
                        negated: false,
                        collation: Collation::Binary,
                    }
                    .boxed(),
                    cmp(CmpOp::Gt, 1, lit(9)).boxed(),
                )),
                "range t.k_1 (k BETWEEN ?0 AND ?1 OR k > 9) filter (k BETWEEN ?0 AND ?1 OR k > 9)",
            ),
            (
                Some(Expr::Or(
                    cmp(CmpOp::Eq, 1, lit(1)).boxed(),
                    cmp(CmpOp::Eq, 0, lit(2)).boxed(),
                )),
                "full scan t filter (k = 1 OR id = 2)",
            ),
        ];
        for (filter, want) in cases {
            let p = plan(&t, filter.as_ref(), None);
            assert_eq!(explain(Some(&t), &p), want, "{filter:?}");
        }
    }

    #[test]
    fn order_by_the_index_needs_no_sort() {
        let t = table();
        let key = |c: usize, desc: bool| SortKey {
            expr: Expr::Column(c),
            desc,
            collation: Collation::Binary,
        };
        let full = plan(&t, None, None);
        assert_eq!(order(&t, &full, &[key(0, false)]), Some(false));
        assert_eq!(order(&t, &full, &[key(0, true)]), Some(true));
        // A nullable secondary column, a string column, mixed directions: sorted.
        let by_k = plan(
            &t,
            Some(&cmp(CmpOp::Gt, 1, Expr::Literal(Value::Int(0)))),
            None,
        );
        assert_eq!(order(&t, &by_k, &[key(1, false)]), None);
        assert_eq!(order(&t, &full, &[key(2, false)]), None);
        assert_eq!(order(&t, &full, &[key(0, false), key(1, true)]), None);
    }
}
