//! Walking bound expressions: which row columns an expression reads, renumbering them, and
//! whether it holds a correlated subquery. The join planner uses these to place each
//! condition at the first join step where every column it reads is present.

use crate::expr::Expr;
use crate::subquery::SubqueryKind;

/// Calls `f` with every expression directly inside `e` (not `e` itself), in the row `e` is
/// evaluated over (a subquery's own body is another row and is not visited; its correlation
/// arguments are).
pub(crate) fn children<'a>(e: &'a Expr, f: &mut dyn FnMut(&'a Expr)) {
    match e {
        Expr::Literal(_)
        | Expr::Param(_)
        | Expr::Column(_)
        | Expr::SysVar(_)
        | Expr::UserVar(_)
        | Expr::UserVarPerRow(_)
        | Expr::OuterRef(_) => {}
        Expr::Neg(a)
        | Expr::AssignUserVar(_, a)
        | Expr::Cast(a, _)
        | Expr::Not(a)
        | Expr::IsNull(a, _)
        | Expr::IsBool(a, _, _) => f(a),
        Expr::Arith(_, a, b)
        | Expr::Cmp(_, a, b, _)
        | Expr::And(a, b)
        | Expr::Or(a, b)
        | Expr::Xor(a, b) => {
            f(a);
            f(b);
        }
        Expr::InList { expr, list, .. } => {
            f(expr);
            list.iter().for_each(f);
        }
        Expr::Between {
            expr, low, high, ..
        } => {
            f(expr);
            f(low);
            f(high);
        }
        Expr::Like { expr, pattern, .. } => {
            f(expr);
            f(pattern);
        }
        Expr::Case {
            operand,
            whens,
            otherwise,
            ..
        } => {
            if let Some(o) = operand {
                f(o);
            }
            for (w, t) in whens {
                f(w);
                f(t);
            }
            if let Some(o) = otherwise {
                f(o);
            }
        }
        Expr::Func(_, args) => args.iter().for_each(f),
        Expr::Subquery(s) => {
            s.args.iter().for_each(&mut *f);
            match &s.kind {
                SubqueryKind::In { expr, .. } => f(expr),
                SubqueryKind::InRow { exprs, .. } => exprs.iter().for_each(&mut *f),
                SubqueryKind::Scalar | SubqueryKind::Exists { .. } => {}
            }
        }
    }
}

/// Whether `pred` holds for `e` or any expression inside it (in `e`'s row).
pub(crate) fn any(e: &Expr, pred: &dyn Fn(&Expr) -> bool) -> bool {
    if pred(e) {
        return true;
    }
    let mut found = false;
    children(e, &mut |c| found = found || any(c, pred));
    found
}

/// Every row column `e` reads, appended to `out`.
pub(crate) fn columns(e: &Expr, out: &mut Vec<usize>) {
    if let Expr::Column(c) = e {
        out.push(*c);
    }
    children(e, &mut |c| columns(c, out));
}

/// Whether `e` holds a subquery of any kind.
pub(crate) fn has_subquery(e: &Expr) -> bool {
    if matches!(e, Expr::Subquery(_)) {
        return true;
    }
    let mut found = false;
    children(e, &mut |c| found = found || has_subquery(c));
    found
}

/// Whether `e` holds a subquery that reads the row it is evaluated over (it must then be
/// evaluated with the transaction free, after rows are read).
pub(crate) fn has_correlated_subquery(e: &Expr) -> bool {
    if let Expr::Subquery(s) = e {
        if !s.args.is_empty() {
            return true;
        }
    }
    let mut found = false;
    children(e, &mut |c| found = found || has_correlated_subquery(c));
    found
}

/// `e` with every column `c` replaced by column `f(c)`.
pub(crate) fn map_columns(e: &Expr, f: &dyn Fn(usize) -> usize) -> Expr {
    replace_columns(e, &|c| Expr::Column(f(c)))
}

/// `e` with every column `c` replaced by the expression `f(c)`.
pub(crate) fn replace_columns(e: &Expr, f: &dyn Fn(usize) -> Expr) -> Expr {
    replace(e, &|x| match x {
        Expr::Column(c) => Some(f(*c)),
        _ => None,
    })
}

/// `e` with every outermost part `x` for which `f(x)` is `Some` replaced by it (in `e`'s row,
/// as [`children`] walks it).
pub(crate) fn replace(e: &Expr, f: &dyn Fn(&Expr) -> Option<Expr>) -> Expr {
    if let Some(x) = f(e) {
        return x;
    }
    let m = |x: &Expr| replace(x, f);
    let b = |x: &Expr| replace(x, f).boxed();
    match e {
        Expr::Column(_)
        | Expr::Literal(_)
        | Expr::Param(_)
        | Expr::SysVar(_)
        | Expr::UserVar(_)
        | Expr::UserVarPerRow(_)
        | Expr::OuterRef(_) => e.clone(),
        Expr::AssignUserVar(name, value) => Expr::AssignUserVar(name.clone(), b(value)),
        Expr::Neg(a) => Expr::Neg(b(a)),
        Expr::Cast(a, target) => Expr::Cast(b(a), *target),
        Expr::Not(a) => Expr::Not(b(a)),
        Expr::IsNull(a, n) => Expr::IsNull(b(a), *n),
        Expr::IsBool(a, n, w) => Expr::IsBool(b(a), *n, *w),
        Expr::Arith(op, x, y) => Expr::Arith(*op, b(x), b(y)),
        Expr::Cmp(op, x, y, c) => Expr::Cmp(*op, b(x), b(y), *c),
        Expr::And(x, y) => Expr::And(b(x), b(y)),
        Expr::Or(x, y) => Expr::Or(b(x), b(y)),
        Expr::Xor(x, y) => Expr::Xor(b(x), b(y)),
        Expr::InList {
            expr,
            list,
            negated,
            collation,
        } => Expr::InList {
            expr: b(expr),
            list: list.iter().map(m).collect(),
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
            expr: b(expr),
            low: b(low),
            high: b(high),
            negated: *negated,
            collation: *collation,
        },
        Expr::Like {
            expr,
            pattern,
            negated,
            escape,
            collation,
        } => Expr::Like {
            expr: b(expr),
            pattern: b(pattern),
            negated: *negated,
            escape: *escape,
            collation: *collation,
        },
        Expr::Case {
            operand,
            whens,
            otherwise,
            collation,
        } => Expr::Case {
            operand: operand.as_ref().map(|o| b(o)),
            whens: whens.iter().map(|(w, t)| (m(w), m(t))).collect(),
            otherwise: otherwise.as_ref().map(|o| b(o)),
            collation: *collation,
        },
        Expr::Func(func, args) => Expr::Func(*func, args.iter().map(m).collect()),
        Expr::Subquery(s) => {
            let mut s = s.clone();
            s.args = s.args.iter().map(m).collect();
            match &mut s.kind {
                SubqueryKind::In { expr, .. } => *expr = b(expr),
                SubqueryKind::InRow { exprs, .. } => {
                    *exprs = exprs.iter().map(m).collect();
                }
                SubqueryKind::Scalar | SubqueryKind::Exists { .. } => {}
            }
            Expr::Subquery(s)
        }
    }
}

/// The AND-ed parts of a condition.
pub(crate) fn conjuncts(e: &Expr, out: &mut Vec<Expr>) {
    if let Expr::And(a, b) = e {
        conjuncts(a, out);
        conjuncts(b, out);
    } else {
        out.push(e.clone());
    }
}

/// The AND of `parts` (None when empty).
pub(crate) fn and_all(parts: impl IntoIterator<Item = Expr>) -> Option<Expr> {
    parts
        .into_iter()
        .reduce(|a, b| Expr::And(a.boxed(), b.boxed()))
}
