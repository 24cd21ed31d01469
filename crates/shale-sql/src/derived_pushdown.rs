//! Conditions on a derived table (a view, or a subquery in FROM) pushed into its SELECT.
//!
//! `SELECT * FROM v WHERE v.id = 1` over `CREATE VIEW v AS SELECT id, c FROM t` would read
//! the whole view and filter it after. When the derived SELECT only filters and projects its
//! rows (no grouping, DISTINCT, window function, LIMIT or OFFSET, which a filter does not pass
//! through), a condition on its output columns means the same as that condition on the
//! expressions those columns are, checked in its own WHERE. There the planner can use the
//! base table's indexes: MySQL's derived condition pushdown, which gives a MERGE view its
//! speed.
//!
//! Rules (each keeps a pushed condition's meaning):
//! 1. Only a plain SELECT takes conditions; a UNION or a recursive CTE takes none.
//! 2. A condition is pushed only when every output column it reads is an expression that
//!    evaluates the same however often and wherever it is evaluated: no subquery, no volatile
//!    function (RAND, UUID, ...), no `LAST_INSERT_ID()`, no user variable the statement
//!    assigns and no assignment (user_vars.rs rule 3: pushed, it would run twice).
//! 3. A condition holding a subquery stays outside (subqueries are numbered per statement and
//!    bound to where they appear).
//! 4. The derived table's own filter step keeps the condition too; pushing it only lets fewer
//!    rows out of the SELECT.

use crate::bind::BoundSelect;
use crate::expr::Expr;
use crate::query::BoundQuery;
use crate::walk::{and_all, columns, conjuncts, has_subquery, replace_columns};

/// `q` with the parts of `filter` (over `q`'s output columns) that may be pushed AND-ed into
/// its WHERE (see the module rules).
pub(crate) fn push_into(q: &BoundQuery, filter: Option<&Expr>) -> BoundQuery {
    let (BoundQuery::Select(select), Some(filter)) = (q, filter) else {
        return q.clone();
    };
    if !takes_conditions(select) {
        return q.clone();
    }
    let mut parts = Vec::new();
    conjuncts(filter, &mut parts);
    let pushed: Vec<Expr> = parts
        .iter()
        .filter(|part| !has_subquery(part))
        .filter(|part| {
            let mut read = Vec::new();
            columns(part, &mut read);
            read.iter()
                .all(|&c| select.projection.get(c).is_some_and(evaluates_alike))
        })
        .map(|part| replace_columns(part, &|c| select.projection[c].clone()))
        .collect();
    if pushed.is_empty() {
        return q.clone();
    }
    let mut select = select.clone();
    select.filter = and_all(select.filter.take().into_iter().chain(pushed));
    BoundQuery::Select(select)
}

/// Whether a filter on the SELECT's output may move into its WHERE.
fn takes_conditions(s: &BoundSelect) -> bool {
    !s.grouped
        && s.aggs.is_empty()
        && s.group_by.is_empty()
        && s.having.is_none()
        && !s.distinct
        && s.windows.is_empty()
        && s.limit.is_none()
        && s.offset.is_none()
}

/// Rule 2: the expression gives the same value for the same row each time.
fn evaluates_alike(e: &Expr) -> bool {
    !has_subquery(e) && volatile_free(e)
}

fn volatile_free(e: &Expr) -> bool {
    match e {
        Expr::UserVarPerRow(_) | Expr::AssignUserVar(..) => false,
        Expr::Func(f, args) => {
            *f != crate::expr::Func::LastInsertId
                && !matches!(f, crate::expr::Func::Builtin(b) if b.is_volatile())
                && args.iter().all(volatile_free)
        }
        other => {
            let mut ok = true;
            crate::walk::children(other, &mut |c| ok = ok && volatile_free(c));
            ok
        }
    }
}
