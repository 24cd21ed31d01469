//! Window functions: `f(...) OVER (PARTITION BY .. ORDER BY .. frame)` and `WINDOW w AS (..)`.
//!
//! Binding (`Binder::window_call`) turns each call into a [`WindowCall`] and the call's place
//! in the SELECT into a column of the row the projection and ORDER BY read: after the input's
//! columns and the aggregates, window `i` is column `width + aggregates + i`. While the
//! projection is bound the number of aggregates is not known yet, so a call is first bound as
//! column `PLACEHOLDER + i` and renumbered once the SELECT is bound (`finish_windows`).
//!
//! Execution (`compute`) runs after WHERE, GROUP BY and HAVING and before DISTINCT, ORDER BY
//! and LIMIT, as MySQL's. Rules:
//! 1. Window functions appear only in the select list and ORDER BY (3593 elsewhere, also
//!    inside another window function's arguments or window).
//! 2. The rows are held in memory once, limited by `shale_query_memory` (3170 past it),
//!    and so are each window's computed partition and ORDER BY keys.
//! 3. Rows are sorted by partition keys, then the window's ORDER BY (stably, so peers keep
//!    their input order); a partition is a run of rows equal on the partition keys in their
//!    collations, peers are rows of a partition equal on every ORDER BY key.
//! 4. Default frame: with ORDER BY, RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW (the
//!    current row's peers included); without, the whole partition. ROW_NUMBER, RANK,
//!    DENSE_RANK, PERCENT_RANK, CUME_DIST, NTILE, LAG and LEAD ignore frames.
//! 5. An aggregate over a frame that starts at UNBOUNDED PRECEDING (or ends at UNBOUNDED
//!    FOLLOWING) is accumulated incrementally; other frames are re-aggregated per row, which
//!    costs rows times frame size.

use std::cmp::Ordering;

use shale_table::{Collation, Value};
use sqlparser::ast;

use crate::bind::{agg_result_type, AggFunc, AggSpec, Binder, SortKey};
use crate::error::SqlError;
use crate::exec::{accumulate, count_value, finish, new_state};
use crate::expr::{Env, Expr};
use crate::types::SqlType;
use crate::value::{self, sort_compare, ArithOp};

/// Window calls are bound as columns from here until the SELECT is bound.
pub(crate) const PLACEHOLDER: usize = 1 << 40;

/// What a window function computes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WindowFunc {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    Ntile(Expr),
    /// LAG (`lead` false) and LEAD: the value `offset` rows before/after, or `default`.
    Shift {
        expr: Expr,
        offset: Expr,
        default: Option<Expr>,
        lead: bool,
    },
    FirstValue(Expr),
    LastValue(Expr),
    NthValue(Expr, Expr),
    Aggregate(AggSpec),
}

/// A frame bound; offsets are constant expressions evaluated at execution.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FrameBound {
    UnboundedPreceding,
    Preceding(Expr),
    CurrentRow,
    Following(Expr),
    UnboundedFollowing,
}

/// A window frame.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Frame {
    /// RANGE (peers and value offsets) rather than ROWS.
    pub range: bool,
    pub start: FrameBound,
    pub end: FrameBound,
}

/// A window: partitioning, order and frame.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WindowDef {
    pub partition_by: Vec<Expr>,
    pub partition_collations: Vec<Collation>,
    pub order_by: Vec<SortKey>,
    pub frame: Frame,
}

/// One window function call of a SELECT.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WindowCall {
    pub func: WindowFunc,
    pub window: WindowDef,
    /// The function's name as MySQL's errors print it.
    pub name: String,
}

impl WindowCall {
    /// Calls `f` with every expression of the call that is evaluated over the grouped row:
    /// arguments, PARTITION BY and ORDER BY (frame offsets are constants).
    pub(crate) fn exprs_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        match &mut self.func {
            WindowFunc::RowNumber
            | WindowFunc::Rank
            | WindowFunc::DenseRank
            | WindowFunc::PercentRank
            | WindowFunc::CumeDist => {}
            WindowFunc::Ntile(e) | WindowFunc::FirstValue(e) | WindowFunc::LastValue(e) => f(e),
            WindowFunc::NthValue(e, n) => {
                f(e);
                f(n);
            }
            WindowFunc::Shift {
                expr,
                offset,
                default,
                ..
            } => {
                f(expr);
                f(offset);
                if let Some(d) = default {
                    f(d);
                }
            }
            WindowFunc::Aggregate(spec) => {
                if let Some(a) = &mut spec.arg {
                    f(a);
                }
            }
        }
        self.window.partition_by.iter_mut().for_each(&mut *f);
        for k in &mut self.window.order_by {
            f(&mut k.expr);
        }
    }
}

/// The windows of the SELECT being bound: the WINDOW clause and the calls found so far.
#[derive(Debug, Default)]
pub(crate) struct WindowScope {
    named: Vec<(String, ast::WindowSpec)>,
    pub(crate) calls: Vec<WindowCall>,
}

fn invalid_use(name: &str) -> SqlError {
    SqlError::new(
        3593,
        "HY000",
        format!("You cannot use the window function '{name}' in this context.'"),
    )
}

fn frame_illegal(window: &str) -> SqlError {
    SqlError::new(
        3586,
        "HY000",
        format!("Window '{window}': frame start or end is negative, NULL or of non-integral type"),
    )
}

fn wrong_arguments(name: &str) -> SqlError {
    SqlError::new(1210, "HY000", format!("Incorrect arguments to {name}"))
}

impl WindowScope {
    /// The scope of a SELECT with `WINDOW` clause `named`: 3591 for a name defined twice.
    pub(crate) fn new(named: &[ast::NamedWindowDefinition]) -> Result<WindowScope, SqlError> {
        let mut scope = WindowScope::default();
        for ast::NamedWindowDefinition(name, expr) in named {
            if scope
                .named
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(&name.value))
            {
                return Err(SqlError::new(
                    3591,
                    "HY000",
                    format!("Window '{}' is defined twice.", name.value),
                ));
            }
            let spec = match expr {
                ast::NamedWindowExpr::WindowSpec(s) => s.clone(),
                ast::NamedWindowExpr::NamedWindow(base) => ast::WindowSpec {
                    window_name: Some(base.clone()),
                    partition_by: Vec::new(),
                    order_by: Vec::new(),
                    window_frame: None,
                },
            };
            scope.named.push((name.value.clone(), spec));
        }
        // Every named window must resolve (MySQL checks unused ones too).
        for (name, spec) in &scope.named {
            scope.resolve(spec, name, &mut Vec::new())?;
        }
        Ok(scope)
    }

    /// `spec` with what it inherits from the window it names merged in.
    fn resolve(
        &self,
        spec: &ast::WindowSpec,
        display: &str,
        seen: &mut Vec<String>,
    ) -> Result<ast::WindowSpec, SqlError> {
        let Some(base_name) = &spec.window_name else {
            return Ok(spec.clone());
        };
        let key = base_name.value.to_ascii_lowercase();
        if seen.contains(&key) {
            return Err(SqlError::new(
                3580,
                "HY000",
                "There is a circularity in the window dependency graph.",
            ));
        }
        seen.push(key);
        let (_, base) = self
            .named
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(&base_name.value))
            .ok_or_else(|| {
                SqlError::new(
                    3579,
                    "HY000",
                    format!("Window name '{}' is not defined.", base_name.value),
                )
            })?;
        let base = self.resolve(base, &base_name.value, seen)?;
        if !spec.partition_by.is_empty() {
            return Err(SqlError::new(
                3581,
                "HY000",
                "A window which depends on another cannot define partitioning.",
            ));
        }
        if base.window_frame.is_some() {
            return Err(SqlError::new(
                3582,
                "HY000",
                format!(
                    "Window '{}' has a frame definition, so cannot be referenced by another window.",
                    base_name.value
                ),
            ));
        }
        if !base.order_by.is_empty() && !spec.order_by.is_empty() {
            return Err(SqlError::new(
                3583,
                "HY000",
                format!(
                    "Window '{display}' cannot inherit '{}' since both contain an ORDER BY clause.",
                    base_name.value
                ),
            ));
        }
        Ok(ast::WindowSpec {
            window_name: None,
            partition_by: base.partition_by,
            order_by: if spec.order_by.is_empty() {
                base.order_by
            } else {
                spec.order_by.clone()
            },
            window_frame: spec.window_frame.clone(),
        })
    }
}

impl Binder<'_> {
    /// Binds `f(...) OVER ...` (rule 1): a placeholder column, renumbered by
    /// `finish_windows`.
    pub(crate) fn window_call(
        &mut self,
        f: &ast::Function,
        name: &str,
        over: &ast::WindowType,
    ) -> Result<(Expr, SqlType), SqlError> {
        let lower = name.to_ascii_lowercase();
        let Some(mut scope) = self.windows.take() else {
            return Err(invalid_use(&lower));
        };
        // Nothing inside a window call may hold another one (rule 1).
        let bound = self.window_call_in(f, name, &lower, over, &scope);
        let (call, t) = match bound {
            Ok(b) => b,
            Err(e) => {
                self.windows = Some(scope);
                return Err(e);
            }
        };
        let idx = match scope.calls.iter().position(|c| *c == call) {
            Some(i) => i,
            None => {
                scope.calls.push(call);
                scope.calls.len() - 1
            }
        };
        self.windows = Some(scope);
        Ok((Expr::Column(PLACEHOLDER + idx), t))
    }

    fn window_call_in(
        &mut self,
        f: &ast::Function,
        name: &str,
        lower: &str,
        over: &ast::WindowType,
        scope: &WindowScope,
    ) -> Result<(WindowCall, SqlType), SqlError> {
        if f.filter.is_some() || f.null_treatment.is_some() || !f.within_group.is_empty() {
            return Err(SqlError::unsupported(f.to_string()));
        }
        let (args, distinct, star) = match &f.args {
            ast::FunctionArguments::None => (Vec::new(), false, false),
            ast::FunctionArguments::List(list) => {
                if !list.clauses.is_empty() {
                    return Err(SqlError::unsupported(f.to_string()));
                }
                let mut args = Vec::new();
                let mut star = false;
                for a in &list.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => args.push(e),
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                        _ => return Err(SqlError::unsupported(f.to_string())),
                    }
                }
                let distinct = matches!(
                    list.duplicate_treatment,
                    Some(ast::DuplicateTreatment::Distinct)
                );
                (args, distinct, star)
            }
            ast::FunctionArguments::Subquery(_) => {
                return Err(SqlError::unsupported("a subquery as function arguments"))
            }
        };
        if distinct {
            return Err(SqlError::unsupported(format!(
                "<window function>({name} DISTINCT ..)"
            )));
        }
        let count = |n: usize, m: usize| -> Result<(), SqlError> {
            // Window functions are keywords of MySQL's grammar: a wrong count is a syntax error.
            if args.len() < n || args.len() > m || star {
                return Err(SqlError::syntax(&f.to_string(), 1));
            }
            Ok(())
        };
        let bigint = SqlType::Int {
            unsigned: false,
            len: 21,
        };
        let (func, t) = match name {
            "ROW_NUMBER" | "RANK" | "DENSE_RANK" | "PERCENT_RANK" | "CUME_DIST" => {
                count(0, 0)?;
                let func = match name {
                    "ROW_NUMBER" => WindowFunc::RowNumber,
                    "RANK" => WindowFunc::Rank,
                    "DENSE_RANK" => WindowFunc::DenseRank,
                    "PERCENT_RANK" => WindowFunc::PercentRank,
                    _ => WindowFunc::CumeDist,
                };
                let t = if matches!(func, WindowFunc::PercentRank | WindowFunc::CumeDist) {
                    SqlType::Double
                } else {
                    bigint
                };
                (func, t)
            }
            "NTILE" => {
                count(1, 1)?;
                let n = self.window_constant(args[0], lower)?;
                (WindowFunc::Ntile(n), bigint)
            }
            "LAG" | "LEAD" => {
                count(1, 3)?;
                let (expr, t) = self.expr(args[0])?;
                let offset = match args.get(1) {
                    Some(a) => self.window_constant(a, lower)?,
                    None => Expr::Literal(Value::Int(1)),
                };
                let (default, t) = match args.get(2) {
                    Some(a) => {
                        let (d, dt) = self.expr(a)?;
                        (Some(d), crate::bind::unify(&t, &dt))
                    }
                    None => (None, t),
                };
                let func = WindowFunc::Shift {
                    expr,
                    offset,
                    default,
                    lead: name == "LEAD",
                };
                (func, t)
            }
            "FIRST_VALUE" | "LAST_VALUE" => {
                count(1, 1)?;
                let (expr, t) = self.expr(args[0])?;
                let func = if name == "FIRST_VALUE" {
                    WindowFunc::FirstValue(expr)
                } else {
                    WindowFunc::LastValue(expr)
                };
                (func, t)
            }
            "NTH_VALUE" => {
                count(2, 2)?;
                let (expr, t) = self.expr(args[0])?;
                let n = self.window_constant(args[1], lower)?;
                (WindowFunc::NthValue(expr, n), t)
            }
            "COUNT" | "SUM" | "AVG" | "MIN" | "MAX" => {
                let func = match name {
                    "COUNT" if star => AggFunc::CountStar,
                    "COUNT" => AggFunc::Count,
                    "SUM" => AggFunc::Sum,
                    "AVG" => AggFunc::Avg,
                    "MIN" => AggFunc::Min,
                    _ => AggFunc::Max,
                };
                let (arg, arg_type) = match (func, args.as_slice()) {
                    (AggFunc::CountStar, []) => (None, SqlType::Null),
                    (AggFunc::CountStar, _) | (_, []) => {
                        return Err(SqlError::syntax(&f.to_string(), 1))
                    }
                    (_, [a]) => {
                        let (e, t) = self.expr(a)?;
                        (Some(e), t)
                    }
                    _ => return Err(SqlError::syntax(&f.to_string(), 1)),
                };
                let t = agg_result_type(func, &arg_type);
                let spec = AggSpec {
                    func,
                    arg,
                    distinct: false,
                    arg_type,
                    collect: None,
                };
                (WindowFunc::Aggregate(spec), t)
            }
            _ => {
                return Err(SqlError::unsupported(format!(
                    "{name} as a window function"
                )))
            }
        };
        let (spec, display) = match over {
            ast::WindowType::WindowSpec(s) => (
                scope.resolve(s, "<unnamed window>", &mut Vec::new())?,
                "<unnamed window>".to_string(),
            ),
            ast::WindowType::NamedWindow(n) => {
                let (_, s) = scope
                    .named
                    .iter()
                    .find(|(x, _)| x.eq_ignore_ascii_case(&n.value))
                    .ok_or_else(|| {
                        SqlError::new(
                            3579,
                            "HY000",
                            format!("Window name '{}' is not defined.", n.value),
                        )
                    })?;
                (
                    scope.resolve(s, &n.value, &mut Vec::new())?,
                    n.value.clone(),
                )
            }
        };
        let window = self.window_def(&spec, &display)?;
        Ok((
            WindowCall {
                func,
                window,
                name: lower.to_string(),
            },
            t,
        ))
    }

    /// A constant argument (NTILE's buckets, LAG's offset): a literal or `?`.
    fn window_constant(&mut self, e: &ast::Expr, name: &str) -> Result<Expr, SqlError> {
        let (x, _) = self.expr(e)?;
        if !x.is_row_independent() {
            return Err(wrong_arguments(name));
        }
        Ok(x)
    }

    fn window_def(&mut self, spec: &ast::WindowSpec, display: &str) -> Result<WindowDef, SqlError> {
        let mut partition_by = Vec::with_capacity(spec.partition_by.len());
        let mut partition_collations = Vec::with_capacity(spec.partition_by.len());
        for p in &spec.partition_by {
            let (x, t) = self.expr(p)?;
            partition_by.push(x);
            partition_collations.push(t.collation());
        }
        let order_by = self.order_by(&spec.order_by, None)?;
        let frame = match &spec.window_frame {
            None if order_by.is_empty() => Frame {
                range: false,
                start: FrameBound::UnboundedPreceding,
                end: FrameBound::UnboundedFollowing,
            },
            None => Frame {
                range: true,
                start: FrameBound::UnboundedPreceding,
                end: FrameBound::CurrentRow,
            },
            Some(fr) => {
                let range = match fr.units {
                    ast::WindowFrameUnits::Rows => false,
                    ast::WindowFrameUnits::Range => true,
                    ast::WindowFrameUnits::Groups => {
                        return Err(SqlError::unsupported("GROUPS frames"))
                    }
                };
                let start = self.frame_bound(&fr.start_bound, display)?;
                let end = match &fr.end_bound {
                    Some(b) => self.frame_bound(b, display)?,
                    None => FrameBound::CurrentRow,
                };
                if start == FrameBound::UnboundedFollowing {
                    return Err(SqlError::new(
                        3584,
                        "HY000",
                        format!("Window '{display}': frame start cannot be UNBOUNDED FOLLOWING."),
                    ));
                }
                if end == FrameBound::UnboundedPreceding {
                    return Err(SqlError::new(
                        3585,
                        "HY000",
                        format!("Window '{display}': frame end cannot be UNBOUNDED PRECEDING."),
                    ));
                }
                let offsets = [&start, &end]
                    .iter()
                    .any(|b| matches!(b, FrameBound::Preceding(_) | FrameBound::Following(_)));
                if range && offsets {
                    // The key's type (bound again: SortKey keeps only its collation).
                    let numeric = match spec.order_by.as_slice() {
                        [o] => matches!(
                            self.expr(&o.expr)?.1,
                            SqlType::Int { .. }
                                | SqlType::Decimal { .. }
                                | SqlType::Double
                                | SqlType::Float
                        ),
                        _ => false,
                    };
                    if !numeric {
                        return Err(SqlError::new(
                            3587,
                            "HY000",
                            format!(
                                "Window '{display}' with RANGE N PRECEDING/FOLLOWING frame requires \
                                 exactly one ORDER BY expression, of numeric or temporal type"
                            ),
                        ));
                    }
                }
                Frame { range, start, end }
            }
        };
        Ok(WindowDef {
            partition_by,
            partition_collations,
            order_by,
            frame,
        })
    }

    fn frame_bound(
        &mut self,
        b: &ast::WindowFrameBound,
        display: &str,
    ) -> Result<FrameBound, SqlError> {
        let offset = |binder: &mut Self, e: &ast::Expr| -> Result<Expr, SqlError> {
            if matches!(e, ast::Expr::Interval(_)) {
                return Err(SqlError::unsupported("INTERVAL frame offsets"));
            }
            let (x, t) = binder.expr(e)?;
            if !x.is_row_independent()
                || !matches!(
                    t,
                    SqlType::Int { .. }
                        | SqlType::Decimal { .. }
                        | SqlType::Double
                        | SqlType::Float
                        | SqlType::Null
                )
            {
                return Err(frame_illegal(display));
            }
            Ok(x)
        };
        Ok(match b {
            ast::WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
            ast::WindowFrameBound::Preceding(None) => FrameBound::UnboundedPreceding,
            ast::WindowFrameBound::Following(None) => FrameBound::UnboundedFollowing,
            ast::WindowFrameBound::Preceding(Some(e)) => FrameBound::Preceding(offset(self, e)?),
            ast::WindowFrameBound::Following(Some(e)) => FrameBound::Following(offset(self, e)?),
        })
    }

    /// Renumbers the window calls' placeholder columns in `exprs` now that the SELECT's
    /// aggregates are known: call `i` becomes column `width + aggregates + i`.
    pub(crate) fn finish_windows<'e>(first: usize, exprs: impl Iterator<Item = &'e mut Expr>) {
        for e in exprs {
            *e = crate::walk::map_columns(e, &|c| {
                if c >= PLACEHOLDER {
                    first + (c - PLACEHOLDER)
                } else {
                    c
                }
            });
        }
    }
}

/// A frame offset's value: a non-negative number (3586 otherwise; ROWS needs an integer).
fn offset_value(e: &Expr, rows_frame: bool, env: &dyn Env) -> Result<Value, SqlError> {
    let v = e.eval(&[], env)?;
    let bad = match &v {
        Value::Null => true,
        Value::Int(i) => *i < 0,
        Value::UInt(_) => false,
        other => rows_frame || value::to_f64(other).is_none_or(|f| f < 0.0),
    };
    if bad {
        return Err(frame_illegal("<unnamed window>"));
    }
    Ok(v)
}

/// Each partition's row indexes in the window's order, and each row's ORDER BY key values.
type Partitions = (Vec<Vec<usize>>, Vec<Vec<Value>>);

/// A window's rows in order: the row indexes of each partition (rule 3).
/// The keys count against `budget` and each row is a unit of work for KILL and
/// `max_execution_time`: a key can be a large computed string.
fn partitions(
    rows: &[Vec<Value>],
    w: &WindowDef,
    env: &dyn Env,
    budget: &mut crate::query::MemoryBudget,
) -> Result<Partitions, SqlError> {
    let mut keys: Vec<(Vec<Value>, Vec<Value>)> = Vec::with_capacity(rows.len());
    for r in rows {
        crate::interrupt::tick()?;
        let mut p = Vec::with_capacity(w.partition_by.len());
        for e in &w.partition_by {
            p.push(e.eval(r, env)?);
        }
        let mut o = Vec::with_capacity(w.order_by.len());
        for k in &w.order_by {
            o.push(k.expr.eval(r, env)?);
        }
        budget.add(&p)?;
        budget.add(&o)?;
        keys.push((p, o));
    }
    let part_cmp = |a: &[Value], b: &[Value]| -> Ordering {
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            let c = w
                .partition_collations
                .get(i)
                .copied()
                .unwrap_or(Collation::Binary);
            let o = sort_compare(x, y, c);
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    };
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| {
        part_cmp(&keys[a].0, &keys[b].0).then_with(|| order_cmp(&keys[a].1, &keys[b].1, w))
    });
    let mut parts: Vec<Vec<usize>> = Vec::new();
    for i in order {
        match parts.last_mut() {
            Some(p)
                if p.first()
                    .is_some_and(|&f| part_cmp(&keys[f].0, &keys[i].0).is_eq()) =>
            {
                p.push(i);
            }
            _ => parts.push(vec![i]),
        }
    }
    let order_keys = keys.into_iter().map(|(_, o)| o).collect();
    Ok((parts, order_keys))
}

/// Compares two rows' ORDER BY keys in the window's order.
fn order_cmp(a: &[Value], b: &[Value], w: &WindowDef) -> Ordering {
    for (i, k) in w.order_by.iter().enumerate() {
        let o = sort_compare(&a[i], &b[i], k.collation);
        let o = if k.desc { o.reverse() } else { o };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// The frame of position `j` of a partition: a half-open range of positions.
fn frame_of(
    j: usize,
    part: &[usize],
    keys: &[Vec<Value>],
    peers: &[(usize, usize)],
    w: &WindowDef,
    offsets: (&Option<Value>, &Option<Value>),
) -> Result<(usize, usize), SqlError> {
    let n = part.len();
    let f = &w.frame;
    let bound = |b: &FrameBound, off: &Option<Value>, is_start: bool| -> Result<usize, SqlError> {
        Ok(match b {
            FrameBound::UnboundedPreceding => 0,
            FrameBound::UnboundedFollowing => n,
            FrameBound::CurrentRow if f.range => {
                if is_start {
                    peers[j].0
                } else {
                    peers[j].1
                }
            }
            FrameBound::CurrentRow => {
                if is_start {
                    j
                } else {
                    j + 1
                }
            }
            FrameBound::Preceding(_) | FrameBound::Following(_) => {
                let off = off.as_ref().unwrap_or(&Value::Int(0));
                let following = matches!(b, FrameBound::Following(_));
                if f.range {
                    range_offset_bound(j, part, keys, peers, w, off, following, is_start)?
                } else {
                    let k = usize::try_from(value::to_i128(off).unwrap_or(0)).unwrap_or(usize::MAX);
                    let pos = if following {
                        j.saturating_add(k)
                    } else if k > j {
                        // Before the partition: an empty start, or an end before everything.
                        return Ok(0);
                    } else {
                        j - k
                    };
                    let pos = if is_start { pos } else { pos.saturating_add(1) };
                    pos.min(n)
                }
            }
        })
    };
    let lo = bound(&f.start, offsets.0, true)?;
    let hi = bound(&f.end, offsets.1, false)?;
    Ok((lo, hi.max(lo)))
}

/// A RANGE frame's `off PRECEDING`/`FOLLOWING` bound for position `j`: the first position
/// whose key is at or past `key -/+ off` in the window's order (binary search: the
/// partition is sorted on that key).
#[allow(clippy::too_many_arguments)]
fn range_offset_bound(
    j: usize,
    part: &[usize],
    keys: &[Vec<Value>],
    peers: &[(usize, usize)],
    w: &WindowDef,
    off: &Value,
    following: bool,
    is_start: bool,
) -> Result<usize, SqlError> {
    let cur = &keys[part[j]][0];
    if matches!(cur, Value::Null) {
        // NULL's neighbours by value are its peers.
        return Ok(if is_start { peers[j].0 } else { peers[j].1 });
    }
    let desc = w.order_by.first().is_some_and(|k| k.desc);
    // Ascending, FOLLOWING adds; descending, PRECEDING does.
    let op = if following == desc {
        ArithOp::Sub
    } else {
        ArithOp::Add
    };
    let target = value::arith(op, cur, off)?;
    let coll = w
        .order_by
        .first()
        .map_or(Collation::Binary, |k| k.collation);
    let cmp = |r: &usize| {
        let o = sort_compare(&keys[*r][0], &target, coll);
        if desc {
            o.reverse()
        } else {
            o
        }
    };
    Ok(if is_start {
        part.partition_point(|r| cmp(r) == Ordering::Less)
    } else {
        part.partition_point(|r| cmp(r) != Ordering::Greater)
    })
}

/// The peer group (start, end) of each position of a partition.
fn peer_groups(part: &[usize], keys: &[Vec<Value>], w: &WindowDef) -> Vec<(usize, usize)> {
    let n = part.len();
    let mut out = vec![(0, 0); n];
    let mut start = 0;
    for j in 1..=n {
        if j == n || order_cmp(&keys[part[j]], &keys[part[start]], w) != Ordering::Equal {
            for slot in &mut out[start..j] {
                *slot = (start, j);
            }
            start = j;
        }
    }
    out
}

/// The positive integer a constant argument holds (1210 otherwise).
fn positive(e: &Expr, env: &dyn Env, name: &str, allow_zero: bool) -> Result<u64, SqlError> {
    let v = e.eval(&[], env)?;
    let n = match v {
        Value::Int(i) if i >= 0 => i as u64,
        Value::UInt(u) => u,
        _ => return Err(wrong_arguments(name)),
    };
    if n == 0 && !allow_zero {
        return Err(wrong_arguments(name));
    }
    Ok(n)
}

/// Appends one column per window call to every row (rules 2 to 5).
pub(crate) fn compute(
    rows: &mut [Vec<Value>],
    calls: &[WindowCall],
    env: &dyn Env,
) -> Result<(), SqlError> {
    if calls.is_empty() {
        return Ok(());
    }
    let memory = count_value(
        Some(&Expr::SysVar("shale_query_memory".into())),
        env,
        268_435_456,
    )?;
    let mut budget = crate::query::MemoryBudget::new(
        usize::try_from(memory).unwrap_or(usize::MAX),
        "window function input",
    );
    for r in rows.iter() {
        budget.add(r)?;
    }
    let mut results: Vec<Vec<Value>> = Vec::with_capacity(calls.len());
    for call in calls {
        let w = &call.window;
        let (parts, keys) = partitions(rows, w, env, &mut budget)?;
        let eval_offset = |b: &FrameBound| -> Result<Option<Value>, SqlError> {
            match b {
                FrameBound::Preceding(e) | FrameBound::Following(e) => {
                    Ok(Some(offset_value(e, !w.frame.range, env)?))
                }
                _ => Ok(None),
            }
        };
        let offsets = (eval_offset(&w.frame.start)?, eval_offset(&w.frame.end)?);
        let mut out = vec![Value::Null; rows.len()];
        for part in &parts {
            let peers = peer_groups(part, &keys, w);
            compute_partition(
                call,
                part,
                &peers,
                &keys,
                rows,
                (&offsets.0, &offsets.1),
                env,
                &mut out,
            )?;
        }
        results.push(out);
    }
    for (i, row) in rows.iter_mut().enumerate() {
        for r in &mut results {
            row.push(std::mem::replace(&mut r[i], Value::Null));
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn compute_partition(
    call: &WindowCall,
    part: &[usize],
    peers: &[(usize, usize)],
    keys: &[Vec<Value>],
    rows: &[Vec<Value>],
    offsets: (&Option<Value>, &Option<Value>),
    env: &dyn Env,
    out: &mut [Value],
) -> Result<(), SqlError> {
    let n = part.len();
    let w = &call.window;
    let frame = |j: usize| frame_of(j, part, keys, peers, w, offsets);
    match &call.func {
        WindowFunc::RowNumber => {
            for (j, &r) in part.iter().enumerate() {
                out[r] = Value::Int(j as i64 + 1);
            }
        }
        WindowFunc::Rank
        | WindowFunc::DenseRank
        | WindowFunc::PercentRank
        | WindowFunc::CumeDist => {
            let mut dense = 0i64;
            for (j, &r) in part.iter().enumerate() {
                let (start, end) = peers[j];
                if start == j {
                    dense += 1;
                }
                out[r] = match call.func {
                    WindowFunc::Rank => Value::Int(start as i64 + 1),
                    WindowFunc::DenseRank => Value::Int(dense),
                    WindowFunc::PercentRank if n > 1 => {
                        Value::Double(start as f64 / (n - 1) as f64)
                    }
                    WindowFunc::PercentRank => Value::Double(0.0),
                    _ => Value::Double(end as f64 / n as f64),
                };
            }
        }
        WindowFunc::Ntile(e) => {
            let buckets = usize::try_from(positive(e, env, "ntile", false)?).unwrap_or(usize::MAX);
            let (q, rem) = (n / buckets, n % buckets);
            for (j, &r) in part.iter().enumerate() {
                // The first `rem` buckets hold one row more.
                let bucket = if j < rem * (q + 1) {
                    j / (q + 1)
                } else {
                    rem + (j - rem * (q + 1)) / q.max(1)
                };
                out[r] = Value::Int(bucket as i64 + 1);
            }
        }
        WindowFunc::Shift {
            expr,
            offset,
            default,
            lead,
        } => {
            let name = if *lead { "lead" } else { "lag" };
            let k = usize::try_from(positive(offset, env, name, true)?).unwrap_or(usize::MAX);
            for (j, &r) in part.iter().enumerate() {
                let at = if *lead {
                    j.checked_add(k)
                } else {
                    j.checked_sub(k)
                };
                out[r] = match at.filter(|&p| p < n) {
                    Some(p) => expr.eval(&rows[part[p]], env)?,
                    None => match default {
                        Some(d) => d.eval(&rows[r], env)?,
                        None => Value::Null,
                    },
                };
            }
        }
        WindowFunc::FirstValue(e) | WindowFunc::LastValue(e) => {
            let first = matches!(call.func, WindowFunc::FirstValue(_));
            for (j, &r) in part.iter().enumerate() {
                let (lo, hi) = frame(j)?;
                out[r] = if lo >= hi {
                    Value::Null
                } else if first {
                    e.eval(&rows[part[lo]], env)?
                } else {
                    e.eval(&rows[part[hi - 1]], env)?
                };
            }
        }
        WindowFunc::NthValue(e, nth) => {
            let k = usize::try_from(positive(nth, env, "nth_value", false)?).unwrap_or(usize::MAX);
            for (j, &r) in part.iter().enumerate() {
                let (lo, hi) = frame(j)?;
                out[r] = match lo.checked_add(k - 1).filter(|&p| p < hi) {
                    Some(p) => e.eval(&rows[part[p]], env)?,
                    None => Value::Null,
                };
            }
        }
        WindowFunc::Aggregate(spec) => {
            let f = &w.frame;
            if f.start == FrameBound::UnboundedPreceding {
                // Rule 5: frame ends never move backwards.
                let mut state = new_state(spec);
                let mut added = 0;
                for (j, &r) in part.iter().enumerate() {
                    let (_, hi) = frame(j)?;
                    while added < hi {
                        accumulate(spec, &mut state, &mut None, &rows[part[added]], env)?;
                        added += 1;
                    }
                    out[r] = finish(spec, state.clone(), env)?;
                }
            } else if f.end == FrameBound::UnboundedFollowing {
                let mut state = new_state(spec);
                let mut from = n;
                for j in (0..n).rev() {
                    let (lo, _) = frame(j)?;
                    while from > lo {
                        from -= 1;
                        accumulate(spec, &mut state, &mut None, &rows[part[from]], env)?;
                    }
                    out[part[j]] = finish(spec, state.clone(), env)?;
                }
            } else {
                for (j, &r) in part.iter().enumerate() {
                    let (lo, hi) = frame(j)?;
                    let mut state = new_state(spec);
                    for &p in &part[lo..hi] {
                        accumulate(spec, &mut state, &mut None, &rows[p], env)?;
                    }
                    out[r] = finish(spec, state, env)?;
                }
            }
        }
    }
    Ok(())
}
