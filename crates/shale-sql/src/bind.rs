//! Binding: a parsed statement becomes a bound one, every name resolved against one catalog
//! snapshot, every type fixed, every `?` numbered. Later phases never look at names or text.
//!
//! Rules:
//! 1. A statement sees one table (no joins yet); columns may be written `c`, `t.c` or
//!    `db.t.c`, where `t` is the table's name or alias. Unknown names fail with 1054.
//! 2. Aggregates (COUNT, SUM, AVG, MIN, MAX) are collected into [`AggSpec`]s; after grouping,
//!    a row is the group's first row followed by one value per aggregate, so a column outside
//!    GROUP BY reads the first row's value (MySQL without ONLY_FULL_GROUP_BY; with it,
//!    group_check.rs refuses such a SELECT). WITH ROLLUP puts its rollup columns between the
//!    first row and the aggregates (rollup.rs).
//! 3. ORDER BY names a select alias, a position (`ORDER BY 2`) or an expression over the row.
//! 4. `?` placeholders are numbered in text order.

use std::rc::Rc;
use std::sync::Arc;

use shale_table::{Catalog, Collation, LockMode, TableDef, Value};
use sqlparser::ast;

use crate::error::SqlError;
use crate::expr::{CmpOp, Expr, Func};
use crate::from::{BoundFrom, Scope};
use crate::query::BoundSubquery;
use crate::result::ColumnMeta;
use crate::subquery::SubqueryUse;
use crate::types::{column_meta, SqlType};
use crate::value::ArithOp;

/// The one table a statement reads or writes.
#[derive(Debug, Clone)]
pub(crate) struct TableRef {
    pub def: Arc<TableDef>,
    pub database: String,
    /// The name the statement calls it (alias or table name).
    pub alias: String,
    /// Where the planner reads the table's index statistics; only for a table with a
    /// secondary index, the only kind that offers a choice (plan.rs rule 8).
    pub stats: Option<crate::plan_stats::StatsProvider>,
}

/// Aggregate functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AggFunc {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    /// The collecting aggregates (agg_collect.rs).
    GroupConcat,
    JsonArrayAgg,
    JsonObjectAgg,
    /// The bit and statistical aggregates (stat_aggs.rs).
    BitAnd,
    BitOr,
    BitXor,
    StdPop,
    StdSamp,
    VarPop,
    VarSamp,
}

/// One aggregate of a grouped SELECT.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AggSpec {
    pub func: AggFunc,
    pub arg: Option<Expr>,
    pub distinct: bool,
    pub arg_type: SqlType,
    /// A collecting aggregate's other arguments and clauses (agg_collect.rs).
    pub collect: Option<Box<crate::agg_collect::Collect>>,
}

/// One ORDER BY key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SortKey {
    pub expr: Expr,
    pub desc: bool,
    pub collation: Collation,
}

/// A bound SELECT.
#[derive(Debug, Clone)]
pub(crate) struct BoundSelect {
    pub table: Option<TableRef>,
    /// FROM over several inputs, or a derived table (from.rs); `table` is then None.
    pub from: Option<Box<BoundFrom>>,
    pub filter: Option<Expr>,
    pub group_by: Vec<Expr>,
    /// The collation each GROUP BY key groups in.
    pub group_collations: Vec<Collation>,
    pub aggs: Vec<AggSpec>,
    /// Whether rows are grouped (aggregates or GROUP BY present).
    pub grouped: bool,
    /// GROUP BY ... WITH ROLLUP: super-aggregate rows follow the groups (rollup.rs).
    pub rollup: bool,
    pub having: Option<Expr>,
    pub projection: Vec<Expr>,
    pub columns: Vec<ColumnMeta>,
    /// The type of each result column.
    pub types: Vec<SqlType>,
    pub distinct: bool,
    pub order_by: Vec<SortKey>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    pub lock: LockMode,
    /// Window function calls, computed after HAVING into the columns after the aggregates
    /// (window.rs).
    pub windows: Vec<crate::window::WindowCall>,
}

impl BoundSelect {
    /// The width of the row its expressions read (before aggregates).
    pub(crate) fn width(&self) -> usize {
        match (&self.from, &self.table) {
            (Some(f), _) => f.width(),
            (None, Some(t)) => t.def.columns.len(),
            (None, None) => 0,
        }
    }
}

/// What an INSERT does with a row whose primary or unique key exists.
#[derive(Debug, Clone)]
pub(crate) enum OnDuplicate {
    /// 1062 (plain INSERT).
    Error,
    /// Skip the row with warning 1062 (INSERT IGNORE).
    Ignore,
    /// Delete the rows in the way, then insert (REPLACE).
    Replace,
    /// ON DUPLICATE KEY UPDATE: assignments evaluated over the existing row followed by the
    /// row that was to be inserted (`VALUES(c)` reads the latter).
    Update(Vec<(usize, Expr)>),
}

/// A bound INSERT: per row, one entry per table column (None: the column's default).
#[derive(Debug, Clone)]
pub(crate) struct BoundInsert {
    pub table: TableRef,
    pub rows: Vec<Vec<Option<Expr>>>,
    /// The VALUES columns in list order, when a value reads a column of the row being
    /// inserted: each row is then evaluated in this order over the row as built so far
    /// (exec.rs, `values_row`). None when no value reads one.
    pub value_order: Option<Vec<usize>>,
    /// INSERT ... SELECT from at most one table, without subqueries: the query, and the
    /// table column each of its columns fills.
    pub select: Option<(Box<BoundSelect>, Vec<usize>)>,
    /// INSERT ... SELECT of any other query (joins, derived tables, subqueries, UNION, WITH):
    /// the query planned, and the table column each of its columns fills.
    pub query: Option<(Arc<crate::query::StatementQuery>, Vec<usize>)>,
    pub on_duplicate: OnDuplicate,
    /// A view's CHECK OPTION each written row must meet (view_dml.rs).
    pub view_check: Option<crate::view_dml::ViewCheck>,
}

/// A bound UPDATE.
#[derive(Debug, Clone)]
pub(crate) struct BoundUpdate {
    pub table: TableRef,
    pub assignments: Vec<(usize, Expr)>,
    pub filter: Option<Expr>,
    pub order_by: Vec<SortKey>,
    pub limit: Option<Expr>,
    /// A view's CHECK OPTION each changed row must meet (view_dml.rs).
    pub view_check: Option<crate::view_dml::ViewCheck>,
    /// UPDATE IGNORE: a row a unique key or the CHECK OPTION refuses stays as it was, with a
    /// warning; values convert with warnings (lenient_store.rs).
    pub ignore: bool,
}

/// A bound DELETE.
#[derive(Debug, Clone)]
pub(crate) struct BoundDelete {
    pub table: TableRef,
    pub filter: Option<Expr>,
    pub order_by: Vec<SortKey>,
    pub limit: Option<Expr>,
    /// DELETE IGNORE: errors a write statement may downgrade warn instead (lenient_store.rs).
    pub ignore: bool,
}

/// What binding needs besides the statement.
pub(crate) struct BindContext<'a> {
    pub catalog: &'a Catalog,
    pub database: Option<&'a str>,
    /// A known system variable's default value (None: unknown variable).
    pub variable: &'a dyn Fn(&str) -> Option<Value>,
    /// The session's account (`user@host`), for errors that name it.
    pub user: &'a str,
    /// Every table name the binder resolved, found or not (privilege.rs checks them).
    pub touched: &'a std::cell::RefCell<Vec<(String, String)>>,
    /// The session's index statistics, for the planner (plan_stats.rs); None where a
    /// statement is bound only to be checked (views, generated columns).
    pub statistics: Option<&'a crate::plan_stats::StatsProvider>,
    /// The collation string literals take (coercibility.rs); empty for the server default.
    pub collation_connection: &'a str,
    /// Whether grouped SELECTs are checked for ONLY_FULL_GROUP_BY (group_check.rs).
    pub full_group_by: bool,
}

/// Binder state for one statement.
pub(crate) struct Binder<'a> {
    pub(crate) ctx: &'a BindContext<'a>,
    pub(crate) table: Option<TableRef>,
    /// Aggregates found so far, when aggregates are allowed.
    aggs: Option<Vec<AggSpec>>,
    pub params: usize,
    pub(crate) clause: &'static str,
    /// Select-list aliases, visible to HAVING and ORDER BY.
    aliases: Vec<(String, Expr, SqlType)>,
    /// Nesting depth of the expression being bound.
    pub(crate) depth: usize,
    /// Inside ON DUPLICATE KEY UPDATE: `VALUES(c)` is `Column(offset + c)`.
    values_offset: Option<usize>,
    /// The names of a multi-input FROM (from.rs), and the FROM itself.
    pub(crate) scope: Option<Scope>,
    pub(crate) from: Option<BoundFrom>,
    /// In a subquery: the enclosing query's names, and the enclosing-row expressions the
    /// subquery reads so far (`OuterRef(n)` is `outer_refs[n]`).
    pub(crate) outer: Option<Scope>,
    pub(crate) outer_refs: Vec<Expr>,
    /// Every subquery of the statement bound so far (subquery.rs).
    pub(crate) subqueries: Vec<BoundSubquery>,
    /// The CTEs in force (innermost last).
    pub(crate) ctes: Vec<Rc<ast::Cte>>,
    /// While a select list or ORDER BY is bound: its WINDOW clause and window calls.
    pub(crate) windows: Option<crate::window::WindowScope>,
    /// The CTEs of WITH RECURSIVE clauses in force, and inside a recursive CTE's part the
    /// working table it may read (recursive.rs).
    pub(crate) recursive_ctes: Vec<Rc<ast::Cte>>,
    pub(crate) working: Option<crate::recursive::WorkingRef>,
    /// The views being expanded around this query, outermost first (views.rs: recursion).
    pub(crate) views: Vec<(String, String)>,
    /// SELECTs bound so far that say SQL_CALC_FOUND_ROWS (found_rows.rs rule 1).
    pub(crate) calc_found_rows: usize,
    /// While the clauses after a GROUP BY ... WITH ROLLUP are bound: its keys (rollup.rs).
    pub(crate) rollup: Option<crate::rollup::RollupKeys>,
    /// The user variables the statement assigns with `:=`, whose reads are per row
    /// (user_vars.rs rule 3).
    pub(crate) assigned_vars: Rc<std::collections::HashSet<String>>,
    /// The collation derivations of the string results bound so far that mix their
    /// arguments' collations (coercibility.rs, [`crate::coercibility::Derivations`]).
    pub(crate) derivations: crate::coercibility::Derivations,
}

/// The deepest expression nesting a statement may have: bound expressions are evaluated
/// and dropped recursively on the session's own stack.
pub(crate) const MAX_DEPTH: usize = 1000;

pub(crate) fn ident_name(parts: &ast::ObjectName) -> Vec<String> {
    parts
        .0
        .iter()
        .map(|p| match p {
            ast::ObjectNamePart::Identifier(i) => i.value.clone(),
            ast::ObjectNamePart::Function(f) => f.name.value.clone(),
        })
        .collect()
}

impl<'a> Binder<'a> {
    pub(crate) fn new(ctx: &'a BindContext<'a>) -> Binder<'a> {
        Binder {
            ctx,
            table: None,
            aggs: None,
            params: 0,
            clause: "field list",
            aliases: Vec::new(),
            depth: 0,
            values_offset: None,
            scope: None,
            from: None,
            outer: None,
            outer_refs: Vec::new(),
            subqueries: Vec::new(),
            ctes: Vec::new(),
            windows: None,
            recursive_ctes: Vec::new(),
            working: None,
            views: Vec::new(),
            calc_found_rows: 0,
            rollup: None,
            assigned_vars: Rc::default(),
            derivations: crate::coercibility::Derivations::default(),
        }
    }

    /// A binder for a nested query: it shares the statement's parameters, subqueries and
    /// CTEs; `outer` is what a correlated subquery may read of the enclosing query.
    pub(crate) fn child(&mut self, outer: Option<Scope>) -> Binder<'a> {
        let mut sub = Binder::new(self.ctx);
        sub.params = self.params;
        sub.subqueries = std::mem::take(&mut self.subqueries);
        sub.ctes.clone_from(&self.ctes);
        sub.recursive_ctes.clone_from(&self.recursive_ctes);
        sub.outer = outer;
        sub.depth = self.depth;
        sub.views.clone_from(&self.views);
        sub.calc_found_rows = self.calc_found_rows;
        sub.assigned_vars = Rc::clone(&self.assigned_vars);
        sub.derivations = self.derivations.clone();
        sub
    }

    /// Takes back what a nested binder shares with this one.
    pub(crate) fn adopt(&mut self, sub: Binder<'a>) {
        self.params = sub.params;
        self.subqueries = sub.subqueries;
        self.calc_found_rows = sub.calc_found_rows;
    }

    /// The names this query's expressions see (for a subquery's outer references).
    pub(crate) fn current_scope(&self) -> Option<Scope> {
        match (&self.scope, &self.table) {
            (Some(s), _) => Some(s.clone()),
            (None, Some(t)) => Some(Scope::of_table(t)),
            (None, None) => None,
        }
    }

    /// The width of the row expressions are evaluated over (before aggregates).
    pub(crate) fn row_width(&self) -> usize {
        match (&self.scope, &self.table) {
            (Some(s), _) => s.width(),
            (None, Some(t)) => t.def.columns.len(),
            (None, None) => 0,
        }
    }

    /// `[db.]name` resolved to a database and table name.
    /// The statement's current database.
    pub(crate) fn database(&self) -> Option<&str> {
        self.ctx.database
    }

    pub(crate) fn qualify(&self, name: &ast::ObjectName) -> Result<(String, String), SqlError> {
        let parts = ident_name(name);
        match parts.as_slice() {
            [t] => {
                let db = self.ctx.database.ok_or_else(SqlError::no_database)?;
                Ok((db.to_string(), t.clone()))
            }
            [d, t] => Ok((d.clone(), t.clone())),
            _ => Err(SqlError::unsupported(format!("table name {name}"))),
        }
    }

    /// Resolves a table name against the catalog (1146 when missing).
    pub(crate) fn resolve_table(
        &self,
        name: &ast::ObjectName,
        alias: Option<&str>,
    ) -> Result<TableRef, SqlError> {
        let (db, t) = self.qualify(name)?;
        if crate::info_schema::is_database(&db) {
            // FROM binds its tables before this; what remains is a write (rule 3).
            return Err(crate::info_schema::access_denied(self.ctx.user));
        }
        self.ctx.touched.borrow_mut().push((db.clone(), t.clone()));
        let def = lookup_table(self.ctx.catalog, &db, &t)
            .ok_or_else(|| SqlError::no_such_table(&db, &t))?;
        let stats = if def.indexes.is_empty() {
            None
        } else {
            self.ctx.statistics.cloned()
        };
        Ok(TableRef {
            def,
            database: db,
            alias: alias.map_or(t, str::to_string),
            stats,
        })
    }

    pub(crate) fn table_from(&mut self, from: &[ast::TableWithJoins]) -> Result<(), SqlError> {
        match from {
            [] => Ok(()),
            [twj] if twj.joins.is_empty() => match &twj.relation {
                ast::TableFactor::Table {
                    name, alias, args, ..
                } if args.is_none() => {
                    let alias = alias.as_ref().map(|a| a.name.value.as_str());
                    self.table = Some(self.resolve_table(name, alias)?);
                    Ok(())
                }
                other => Err(SqlError::unsupported(format!("FROM {other}"))),
            },
            _ => Err(SqlError::unsupported("joins")),
        }
    }

    fn column(&mut self, parts: &[&str], text: &str) -> Result<(Expr, SqlType, bool), SqlError> {
        let local = self.local_column(parts, text);
        match (&local, &self.outer) {
            (Err(e), Some(outer)) if e.code == 1054 => {
                let Ok((outer_expr, t)) = outer.resolve(parts, text, self.clause) else {
                    return local;
                };
                let n = match self.outer_refs.iter().position(|e| *e == outer_expr) {
                    Some(n) => n,
                    None => {
                        self.outer_refs.push(outer_expr);
                        self.outer_refs.len() - 1
                    }
                };
                Ok((Expr::OuterRef(n), t, true))
            }
            _ => local,
        }
    }

    fn local_column(&self, parts: &[&str], text: &str) -> Result<(Expr, SqlType, bool), SqlError> {
        if let Some(scope) = &self.scope {
            let (e, t) = scope.resolve(parts, text, self.clause)?;
            return Ok((e, t, true));
        }
        let Some(t) = &self.table else {
            return Err(SqlError::unknown_column(text, self.clause));
        };
        let (qual_db, qual_t, col) = match parts {
            [c] => (None, None, *c),
            [t, c] => (None, Some(*t), *c),
            [d, t, c] => (Some(*d), Some(*t), *c),
            _ => return Err(SqlError::unknown_column(text, self.clause)),
        };
        let table_ok = qual_t.is_none_or(|q| q.eq_ignore_ascii_case(&t.alias))
            && qual_db.is_none_or(|d| d == t.database);
        let pos = table_ok
            .then(|| t.def.column_position(col))
            .flatten()
            .ok_or_else(|| SqlError::unknown_column(text, self.clause))?;
        let c = &t.def.columns[pos];
        Ok((Expr::Column(pos), SqlType::of_column(&c.ty), c.nullable))
    }

    /// Binds a scalar expression; returns it with its type.
    pub(crate) fn expr(&mut self, e: &ast::Expr) -> Result<(Expr, SqlType), SqlError> {
        if self.depth >= MAX_DEPTH {
            return Err(SqlError::new(
                1436,
                "HY000",
                format!("Thread stack overrun: expression nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.depth += 1;
        let r = self.expr_nested(e);
        self.depth -= 1;
        r
    }

    fn expr_nested(&mut self, e: &ast::Expr) -> Result<(Expr, SqlType), SqlError> {
        Ok(match e {
            ast::Expr::Identifier(id) => {
                if id.value.starts_with("@@") && id.quote_style.is_none() {
                    return self.variable(&[id.value.as_str()]);
                }
                if let (Some(name), None) = (id.value.strip_prefix('@'), id.quote_style) {
                    let name = name.trim_matches('`').to_ascii_lowercase();
                    let read = if self.assigned_vars.contains(&name) {
                        Expr::UserVarPerRow(name)
                    } else {
                        Expr::UserVar(name)
                    };
                    return Ok((
                        read,
                        SqlType::Str {
                            collation: Collation::Utf8mb4GeneralCi,
                            len: 255,
                        },
                    ));
                }
                if crate::insert_set::is_default_ident(id) {
                    return Err(SqlError::unsupported("DEFAULT here"));
                }
                match self.column(&[id.value.as_str()], &id.value) {
                    Ok((e, t, _)) => (e, t),
                    Err(err) => {
                        let alias = self
                            .aliases
                            .iter()
                            .find(|(a, _, _)| a.eq_ignore_ascii_case(&id.value));
                        match alias {
                            Some((_, e, t)) => (e.clone(), t.clone()),
                            None => return Err(err),
                        }
                    }
                }
            }
            ast::Expr::CompoundIdentifier(ids) => {
                let parts: Vec<&str> = ids.iter().map(|i| i.value.as_str()).collect();
                if parts.first().is_some_and(|p| p.starts_with("@@")) {
                    return self.variable(&parts);
                }
                let text = parts.join(".");
                let (e, t, _) = self.column(&parts, &text)?;
                (e, t)
            }
            ast::Expr::Value(v) => self.literal(&v.value)?,
            ast::Expr::Nested(inner) => self.expr(inner)?,
            ast::Expr::Cast {
                kind: ast::CastKind::Cast,
                expr,
                data_type,
                format: None,
            } => {
                if *data_type == ast::DataType::JSON {
                    return crate::json_bind::bind_cast(self, expr);
                }
                let target = crate::cast::CastTarget::of(data_type)?;
                let (e, _) = self.expr(expr)?;
                (Expr::Cast(e.boxed(), target), target.result_type())
            }
            ast::Expr::TypedString(typed) => {
                let text = match &typed.value.value {
                    ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s,
                    other => return Err(SqlError::unsupported(format!("literal {other}"))),
                };
                let (v, t) = crate::cast::typed_literal(&typed.data_type, text)?;
                (Expr::Literal(v), t)
            }
            ast::Expr::UnaryOp { op, expr } => {
                let (x, t) = self.expr(expr)?;
                match op {
                    ast::UnaryOperator::Minus => {
                        // `-t` of a TIME is a number (time_type.rs rule 4).
                        let t = if matches!(t, SqlType::Time { .. }) {
                            SqlType::Double
                        } else {
                            t
                        };
                        if let Expr::Literal(v) = &x {
                            (Expr::Literal(crate::value::negate(v)?), t)
                        } else {
                            (Expr::Neg(x.boxed()), t)
                        }
                    }
                    ast::UnaryOperator::Plus => (x, t),
                    ast::UnaryOperator::BitwiseNot => crate::bit_bytes::bind(
                        crate::bit_ops::BitOp::Not,
                        vec![(x, t, crate::bit_bytes::is_plain_literal(expr))],
                    ),
                    ast::UnaryOperator::Not | ast::UnaryOperator::BangNot => {
                        (Expr::Not(x.boxed()), bool_type())
                    }
                    other => return Err(SqlError::unsupported(format!("operator {other}"))),
                }
            }
            ast::Expr::BinaryOp {
                left,
                op: ast::BinaryOperator::Assignment,
                right,
            } => {
                let name = crate::user_vars::target(left)?;
                let (value, ty) = self.expr(right)?;
                (Expr::AssignUserVar(name, value.boxed()), ty)
            }
            ast::Expr::BinaryOp { left, op, right } => {
                if let Some(rewritten) = crate::row_compare::comparison(left, op, right) {
                    return self.expr(&rewritten?);
                }
                match crate::builtin::bind_interval_arith(self, left, op, right) {
                    Some(bound) => bound?,
                    None => self.binary(left, op, right)?,
                }
            }
            // A row constructor outside a comparison (row_compare.rs takes those).
            ast::Expr::Tuple(_) => return Err(crate::row_compare::operand_width(1)),
            ast::Expr::IsNull(x) => (Expr::IsNull(self.expr(x)?.0.boxed(), false), bool_type()),
            ast::Expr::IsNotNull(x) => (Expr::IsNull(self.expr(x)?.0.boxed(), true), bool_type()),
            ast::Expr::IsTrue(x) => (
                Expr::IsBool(self.expr(x)?.0.boxed(), false, true),
                bool_type(),
            ),
            ast::Expr::IsNotTrue(x) => (
                Expr::IsBool(self.expr(x)?.0.boxed(), true, true),
                bool_type(),
            ),
            ast::Expr::IsFalse(x) => (
                Expr::IsBool(self.expr(x)?.0.boxed(), false, false),
                bool_type(),
            ),
            ast::Expr::IsNotFalse(x) => (
                Expr::IsBool(self.expr(x)?.0.boxed(), true, false),
                bool_type(),
            ),
            ast::Expr::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let (x, tx) = self.expr(expr)?;
                let (lo, tl) = self.expr(low)?;
                let (hi, th) = self.expr(high)?;
                let collation = crate::coercibility::for_comparison(
                    self,
                    &[(expr, &tx), (low, &tl), (high, &th)],
                    "between",
                )?;
                (
                    Expr::Between {
                        expr: x.boxed(),
                        low: lo.boxed(),
                        high: hi.boxed(),
                        negated: *negated,
                        collation,
                    },
                    bool_type(),
                )
            }
            ast::Expr::In {
                expr,
                target: ast::InTarget::List(list),
                negated,
                ..
            } => {
                if let Some(rewritten) = crate::row_compare::in_list(expr, list, *negated) {
                    return self.expr(&rewritten?);
                }
                let (x, tx) = self.expr(expr)?;
                let mut items = Vec::with_capacity(list.len());
                let mut types = vec![tx];
                for item in list {
                    let (i, t) = self.expr(item)?;
                    items.push(i);
                    types.push(t);
                }
                let operands: Vec<(&ast::Expr, &SqlType)> = std::iter::once(expr.as_ref())
                    .chain(list.iter())
                    .zip(types.iter())
                    .collect();
                let collation = crate::coercibility::for_comparison(self, &operands, "in")?;
                (
                    Expr::InList {
                        expr: x.boxed(),
                        list: items,
                        negated: *negated,
                        collation,
                    },
                    bool_type(),
                )
            }
            ast::Expr::In {
                expr,
                target: ast::InTarget::Subquery(q),
                negated,
                ..
            } if matches!(expr.as_ref(), ast::Expr::Tuple(_)) => {
                let ast::Expr::Tuple(exprs) = expr.as_ref() else {
                    return Err(SqlError::internal("row constructor without its row"));
                };
                self.subquery_expr(
                    q,
                    SubqueryUse::InRow {
                        exprs,
                        negated: *negated,
                    },
                )?
            }
            ast::Expr::In {
                expr,
                target: ast::InTarget::Subquery(q),
                negated,
                ..
            } => self.subquery_expr(
                q,
                SubqueryUse::In {
                    expr,
                    negated: *negated,
                },
            )?,
            ast::Expr::Subquery(q) => self.subquery_expr(q, SubqueryUse::Scalar)?,
            ast::Expr::Exists { subquery, negated } => {
                self.subquery_expr(subquery, SubqueryUse::Exists { negated: *negated })?
            }
            ast::Expr::Like {
                negated,
                any,
                expr,
                pattern,
                escape_char,
            } if !*any => {
                let (x, tx) = self.expr(expr)?;
                let (p, tp) = self.expr(pattern)?;
                let escape = match escape_char.as_deref() {
                    None => '\\',
                    Some(ast::Expr::Value(v)) => match &v.value {
                        ast::Value::SingleQuotedString(s) if s.chars().count() == 1 => {
                            s.chars().next().unwrap_or('\\')
                        }
                        _ => return Err(SqlError::unsupported("this ESCAPE")),
                    },
                    Some(_) => return Err(SqlError::unsupported("this ESCAPE")),
                };
                (
                    Expr::Like {
                        expr: x.boxed(),
                        pattern: p.boxed(),
                        negated: *negated,
                        escape,
                        collation: crate::coercibility::for_comparison(
                            self,
                            &[(expr, &tx), (pattern, &tp)],
                            "like",
                        )?,
                    },
                    bool_type(),
                )
            }
            ast::Expr::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let mut types = Vec::new();
                let op = match operand {
                    Some(o) => {
                        let (x, t) = self.expr(o)?;
                        types.push(t);
                        Some(x.boxed())
                    }
                    None => None,
                };
                let mut whens = Vec::new();
                let mut result_type = SqlType::Null;
                let mut results = Vec::new();
                for cw in conditions {
                    let (w, tw) = self.expr(&cw.condition)?;
                    let (r, tr) = self.expr(&cw.result)?;
                    types.push(tw);
                    result_type = unify(&result_type, &tr);
                    results.push((&cw.result, tr));
                    whens.push((w, r));
                }
                let otherwise = match else_result {
                    Some(e) => {
                        let (x, t) = self.expr(e)?;
                        result_type = unify(&result_type, &t);
                        results.push((e.as_ref(), t));
                        Some(x.boxed())
                    }
                    None => None,
                };
                // `CASE x WHEN v ...` compares x with each v in one collation; the result
                // arms mix into the result's.
                let collation = match operand {
                    Some(o) => {
                        let mut compared = vec![(o.as_ref(), &types[0])];
                        compared.extend(conditions.iter().map(|cw| &cw.condition).zip(&types[1..]));
                        crate::coercibility::for_comparison(self, &compared, "case")?
                    }
                    None => {
                        let refs: Vec<&SqlType> = types.iter().collect();
                        pick_collation(&refs)
                    }
                };
                let arms: Vec<(&ast::Expr, &SqlType)> =
                    results.iter().map(|(e, t)| (*e, t)).collect();
                let mixed = crate::coercibility::for_result(
                    self,
                    crate::coercibility::Mixed::Case(e),
                    &arms,
                    "case",
                    false,
                )?;
                (
                    Expr::Case {
                        operand: op,
                        whens,
                        otherwise,
                        collation,
                    },
                    crate::coercibility::with_collation(result_type, mixed),
                )
            }
            ast::Expr::Function(f) => self.function(f)?,
            ast::Expr::Collate { expr, collation } => {
                crate::coercibility::bind_collate(self, expr, collation)?
            }
            ast::Expr::Prefixed { prefix, value } => {
                crate::coercibility::bind_introduced(prefix, value)?
            }
            other => return crate::builtin::bind_special(self, other),
        })
    }

    fn variable(&mut self, parts: &[&str]) -> Result<(Expr, SqlType), SqlError> {
        let joined = parts.join(".").to_ascii_lowercase();
        let name = joined.trim_start_matches('@');
        let global = name.starts_with("global.");
        let name = name
            .strip_prefix("session.")
            .or_else(|| name.strip_prefix("global."))
            .or_else(|| name.strip_prefix("local."))
            .unwrap_or(name)
            .to_string();
        let Some(default) = (self.ctx.variable)(&name) else {
            return Err(SqlError::unknown_system_variable(&name));
        };
        let name = if global {
            format!("global.{name}")
        } else {
            name
        };
        // The type follows the default's (MySQL reports integer variables as BIGINT).
        let t = match default {
            Value::Int(_) => SqlType::Int {
                unsigned: false,
                len: 21,
            },
            Value::UInt(_) => SqlType::Int {
                unsigned: true,
                len: 21,
            },
            _ => SqlType::Str {
                collation: Collation::Utf8mb4GeneralCi,
                len: 256,
            },
        };
        Ok((Expr::SysVar(name), t))
    }

    fn literal(&mut self, v: &ast::Value) -> Result<(Expr, SqlType), SqlError> {
        let str_type = |s: &str| SqlType::Str {
            collation: Collation::Utf8mb4GeneralCi,
            len: s.chars().count() as u32,
        };
        Ok(match v {
            ast::Value::Number(n, _) => number_literal(n)?,
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => (
                Expr::Literal(Value::Bytes(s.as_bytes().to_vec())),
                str_type(s),
            ),
            ast::Value::HexStringLiteral(h) => {
                let bytes = decode_hex(h).ok_or_else(|| SqlError::syntax(&format!("x'{h}'"), 1))?;
                let len = bytes.len() as u32;
                (
                    Expr::Literal(Value::Bytes(bytes)),
                    SqlType::Str {
                        collation: Collation::Binary,
                        len,
                    },
                )
            }
            ast::Value::Boolean(b) => (
                Expr::Literal(Value::Int(i64::from(*b))),
                SqlType::Int {
                    unsigned: false,
                    len: 1,
                },
            ),
            ast::Value::Null => (Expr::Literal(Value::Null), SqlType::Null),
            ast::Value::Placeholder(p) if p.starts_with('?') => {
                // A prepared statement's placeholders are numbered in text order
                // (placeholders.rs); a lone one is the next.
                let n = crate::placeholders::index(p).unwrap_or(self.params);
                self.params = self.params.max(n + 1);
                (
                    Expr::Param(n),
                    SqlType::Str {
                        collation: Collation::Utf8mb4GeneralCi,
                        len: 1024,
                    },
                )
            }
            other => return Err(SqlError::unsupported(format!("literal {other}"))),
        })
    }

    fn binary(
        &mut self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
    ) -> Result<(Expr, SqlType), SqlError> {
        use ast::BinaryOperator as B;
        if let Some(regrouped) = crate::json_bind::regroup_arrow(left, op, right) {
            return self.expr(&regrouped);
        }
        let (l, tl) = self.expr(left)?;
        let (r, tr) = self.expr(right)?;
        let cmp = |op: CmpOp| -> Result<(Expr, SqlType), SqlError> {
            if let Some(json) = crate::json_bind::bind_compare(op, (&l, &tl), (&r, &tr)) {
                return Ok(json);
            }
            let collation = crate::coercibility::for_comparison(
                self,
                &[(left, &tl), (right, &tr)],
                crate::coercibility::cmp_name(op),
            )?;
            Ok((
                Expr::Cmp(op, l.clone().boxed(), r.clone().boxed(), collation),
                bool_type(),
            ))
        };
        let arith = |op: ArithOp| {
            let (l, tl) = crate::json_bind::arith_operand(l.clone(), tl.clone());
            let (r, tr) = crate::json_bind::arith_operand(r.clone(), tr.clone());
            let t = match (&tl, &tr, op) {
                _ if crate::decimal::is_exact_arith(&tl, &tr, op) => {
                    crate::decimal::arith_type(op, &tl, &tr)
                }
                (_, _, ArithOp::Div) => SqlType::Double,
                (SqlType::Int { unsigned: a, .. }, SqlType::Int { unsigned: b, .. }, _) => {
                    SqlType::Int {
                        unsigned: *a || *b,
                        len: 21,
                    }
                }
                (SqlType::Null, _, _) | (_, SqlType::Null, _) => SqlType::Null,
                _ => SqlType::Double,
            };
            (Expr::Arith(op, l.clone().boxed(), r.clone().boxed()), t)
        };
        Ok(match op {
            B::Eq => cmp(CmpOp::Eq)?,
            B::Spaceship => cmp(CmpOp::NullSafeEq)?,
            B::NotEq => cmp(CmpOp::Ne)?,
            B::Lt => cmp(CmpOp::Lt)?,
            B::LtEq => cmp(CmpOp::Le)?,
            B::Gt => cmp(CmpOp::Gt)?,
            B::GtEq => cmp(CmpOp::Ge)?,
            B::And => (Expr::And(l.boxed(), r.boxed()), bool_type()),
            B::Or => (Expr::Or(l.boxed(), r.boxed()), bool_type()),
            B::Xor => (Expr::Xor(l.boxed(), r.boxed()), bool_type()),
            B::Plus => arith(ArithOp::Add),
            B::Minus => arith(ArithOp::Sub),
            B::Multiply => arith(ArithOp::Mul),
            B::Divide => arith(ArithOp::Div),
            B::MyIntegerDivide => arith(ArithOp::IntDiv),
            B::Modulo => arith(ArithOp::Mod),
            B::Arrow | B::LongArrow => {
                return crate::json_bind::bind_arrow(l, &tl, r, *op == B::LongArrow)
            }
            B::BitwiseAnd
            | B::BitwiseOr
            | B::BitwiseXor
            | B::PGBitwiseShiftLeft
            | B::PGBitwiseShiftRight => {
                use crate::bit_ops::BitOp;
                let bit_op = match op {
                    B::BitwiseAnd => BitOp::And,
                    B::BitwiseOr => BitOp::Or,
                    B::BitwiseXor => BitOp::Xor,
                    B::PGBitwiseShiftLeft => BitOp::ShiftLeft,
                    _ => BitOp::ShiftRight,
                };
                let literal = crate::bit_bytes::is_plain_literal;
                crate::bit_bytes::bind(
                    bit_op,
                    vec![
                        (l, tl.clone(), literal(left)),
                        (r, tr.clone(), literal(right)),
                    ],
                )
            }
            other => return Err(SqlError::unsupported(format!("operator {other}"))),
        })
    }

    fn function(&mut self, f: &ast::Function) -> Result<(Expr, SqlType), SqlError> {
        let name = ident_name(&f.name).join(".").to_ascii_uppercase();
        if let Some(over) = &f.over {
            return self.window_call(f, &name, over);
        }
        if name == "JSON_VALUE" {
            return crate::json_bind::bind_json_value(self, f);
        }
        if name == "GROUPING" {
            return self.grouping_call(f);
        }
        if let Some(func) = crate::agg_collect::func_of(&name) {
            if self.aggs.is_none() {
                return Err(SqlError::invalid_group());
            }
            return self.collecting_aggregate(f, func, &name);
        }
        let (args, distinct, star) = match &f.args {
            ast::FunctionArguments::None => (Vec::new(), false, false),
            ast::FunctionArguments::List(list) => {
                if !list.clauses.is_empty() {
                    return Err(SqlError::unsupported(f.to_string()));
                }
                let distinct = matches!(
                    list.duplicate_treatment,
                    Some(ast::DuplicateTreatment::Distinct)
                );
                let mut args = Vec::new();
                let mut star = false;
                for a in &list.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                            args.push(e);
                        }
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                        _ => return Err(SqlError::unsupported(f.to_string())),
                    }
                }
                (args, distinct, star)
            }
            ast::FunctionArguments::Subquery(_) => {
                return Err(SqlError::unsupported("a subquery as function arguments"))
            }
        };
        let agg = match name.as_str() {
            "COUNT" if star => Some(AggFunc::CountStar),
            "COUNT" => Some(AggFunc::Count),
            "SUM" => Some(AggFunc::Sum),
            "AVG" => Some(AggFunc::Avg),
            "MIN" => Some(AggFunc::Min),
            "MAX" => Some(AggFunc::Max),
            other => crate::stat_aggs::agg_of(other),
        };
        if let Some(func) = agg {
            return self.aggregate(func, &args, distinct, &f.to_string());
        }
        if star || distinct {
            return Err(SqlError::unsupported(f.to_string()));
        }
        if name == "VALUES" {
            let (Some(offset), [ast::Expr::Identifier(id)]) = (self.values_offset, args.as_slice())
            else {
                return Err(SqlError::unsupported(f.to_string()));
            };
            let (Expr::Column(c), t, _) = self.column(&[id.value.as_str()], &id.value)? else {
                return Err(SqlError::unsupported(f.to_string()));
            };
            return Ok((Expr::Column(offset + c), t));
        }
        let (func, min, max) = match name.as_str() {
            "DATABASE" | "SCHEMA" => (Func::Database, 0, 0),
            "VERSION" => (Func::Version, 0, 0),
            "CONNECTION_ID" => (Func::ConnectionId, 0, 0),
            "LAST_INSERT_ID" => (Func::LastInsertId, 0, 0),
            "USER" | "SESSION_USER" | "SYSTEM_USER" => (Func::User, 0, 0),
            "CURRENT_USER" => (Func::CurrentUser, 0, 0),
            "CONCAT" => (Func::Concat, 1, usize::MAX),
            "LENGTH" | "OCTET_LENGTH" => (Func::Length, 1, 1),
            "CHAR_LENGTH" | "CHARACTER_LENGTH" => (Func::CharLength, 1, 1),
            "UPPER" | "UCASE" => (Func::Upper, 1, 1),
            "LOWER" | "LCASE" => (Func::Lower, 1, 1),
            "ABS" => (Func::Abs, 1, 1),
            "IFNULL" => (Func::IfNull, 2, 2),
            "COALESCE" => (Func::Coalesce, 1, usize::MAX),
            "IF" => (Func::If, 3, 3),
            _ => return crate::builtin::bind_call(self, &name, &args),
        };
        if args.len() < min || args.len() > max {
            return Err(SqlError::new(
                1582,
                "42000",
                format!("Incorrect parameter count in the call to native function '{name}'"),
            ));
        }
        let mut bound = Vec::with_capacity(args.len());
        let mut types = Vec::new();
        for a in &args {
            let (e, t) = self.expr(a)?;
            bound.push(e);
            types.push(t);
        }
        let text = |len| SqlType::Str {
            collation: Collation::Utf8mb4GeneralCi,
            len,
        };
        let int = SqlType::Int {
            unsigned: false,
            len: 21,
        };
        let t = match func {
            Func::Database | Func::User | Func::CurrentUser => text(64),
            Func::Version => text(60),
            Func::ConnectionId | Func::LastInsertId => SqlType::Int {
                unsigned: true,
                len: 21,
            },
            Func::Concat | Func::Upper | Func::Lower => text(
                types
                    .iter()
                    .map(|t| match t {
                        SqlType::Str { len, .. } => *len,
                        _ => 21,
                    })
                    .sum(),
            ),
            Func::Length | Func::CharLength => int,
            Func::Abs => types.first().cloned().unwrap_or(SqlType::Null),
            Func::IfNull | Func::Coalesce => types.iter().fold(SqlType::Null, |a, b| unify(&a, b)),
            Func::If => unify(
                types.get(1).unwrap_or(&SqlType::Null),
                types.get(2).unwrap_or(&SqlType::Null),
            ),
            // Bound by builtin.rs, never by this table.
            Func::Builtin(_) => SqlType::Null,
        };
        // The result's collation mixes the arguments' it may come from (coercibility.rs).
        let (mixed_from, op) = match func {
            Func::Concat => (0, "concat"),
            Func::IfNull => (0, "ifnull"),
            Func::Coalesce => (0, "coalesce"),
            Func::If => (1, "if"),
            _ => return Ok((Expr::Func(func, bound), t)),
        };
        let operands: Vec<(&ast::Expr, &SqlType)> =
            args.iter().copied().zip(&types).skip(mixed_from).collect();
        let node = crate::coercibility::Mixed::Call(args[0]);
        let mixed = crate::coercibility::for_result(self, node, &operands, op, false)?;
        let t = crate::coercibility::with_collation(t, mixed);
        Ok((Expr::Func(func, bound), t))
    }

    fn aggregate(
        &mut self,
        func: AggFunc,
        args: &[&ast::Expr],
        distinct: bool,
        text: &str,
    ) -> Result<(Expr, SqlType), SqlError> {
        if self.aggs.is_none() {
            return Err(SqlError::invalid_group());
        }
        let (arg, arg_type) = match (func, args) {
            (AggFunc::CountStar, []) => (None, SqlType::Null),
            (_, [a]) => {
                let (e, t) = self.aggregate_argument(a)?;
                (Some(e), t)
            }
            _ => {
                return Err(SqlError::syntax(text, 1));
            }
        };
        let result_type = agg_result_type(func, &arg_type);
        let spec = AggSpec {
            func,
            arg,
            distinct,
            arg_type,
            collect: None,
        };
        self.register_aggregate(spec, result_type)
    }

    /// Binds an aggregate's argument: aggregates do not nest, nor hold window functions.
    pub(crate) fn aggregate_argument(
        &mut self,
        a: &ast::Expr,
    ) -> Result<(Expr, SqlType), SqlError> {
        let saved = self.aggs.take();
        let saved_windows = self.windows.take();
        let bound = self.expr(a);
        self.aggs = saved;
        self.windows = saved_windows;
        bound
    }

    /// Adds `spec` to the query's aggregates (once: an equal one is shared) and gives the
    /// expression reading its value.
    pub(crate) fn register_aggregate(
        &mut self,
        spec: AggSpec,
        result_type: SqlType,
    ) -> Result<(Expr, SqlType), SqlError> {
        let ncols = self.row_width()
            + self
                .rollup
                .as_ref()
                .map_or(0, crate::rollup::RollupKeys::width);
        let aggs = self.aggs.as_mut().ok_or_else(SqlError::invalid_group)?;
        let idx = match aggs.iter().position(|a| *a == spec) {
            Some(i) => i,
            None => {
                aggs.push(spec);
                aggs.len() - 1
            }
        };
        Ok((Expr::Column(ncols + idx), result_type))
    }

    /// `GROUPING(e, ..)` (rollup.rs rule 3).
    fn grouping_call(&mut self, f: &ast::Function) -> Result<(Expr, SqlType), SqlError> {
        if self.clause == "group statement" {
            return Err(SqlError::new(
                1056,
                "42000",
                "Can't group on 'GROUPING function'",
            ));
        }
        let ast::FunctionArguments::List(list) = &f.args else {
            return Err(SqlError::syntax(&f.to_string(), 1));
        };
        if self.aggs.is_none() || self.rollup.is_none() {
            return Err(SqlError::invalid_group());
        }
        let mut args = Vec::with_capacity(list.args.len());
        for (n, a) in list.args.iter().enumerate() {
            let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = a else {
                return Err(SqlError::syntax(&f.to_string(), 1));
            };
            let (x, _) = self.aggregate_argument(e).map_err(|error| {
                if error.code == 1111 {
                    SqlError::new(
                        3602,
                        "HY000",
                        format!(
                            "Argument #{} of GROUPING function is not in GROUP BY",
                            n + 1
                        ),
                    )
                } else {
                    error
                }
            })?;
            args.push(x);
        }
        let rollup = self.rollup.as_ref().ok_or_else(SqlError::invalid_group)?;
        let mask = rollup.grouping(&args)?;
        Ok((
            mask,
            SqlType::Int {
                unsigned: false,
                len: 21,
            },
        ))
    }

    /// A condition bound in `clause` (ON of a join).
    pub(crate) fn condition_in(
        &mut self,
        e: &ast::Expr,
        clause: &'static str,
    ) -> Result<Expr, SqlError> {
        let saved = self.aggs.take();
        let r = self.condition(e, clause);
        self.aggs = saved;
        r
    }

    /// A condition (WHERE, HAVING): no aggregates unless `allow_aggs`.
    fn condition(&mut self, e: &ast::Expr, clause: &'static str) -> Result<Expr, SqlError> {
        self.clause = clause;
        let r = self.expr(e).map(|(e, _)| e);
        self.clause = "field list";
        r
    }

    /// A LIMIT/OFFSET value: a number or a `?`.
    fn limit_value(&mut self, e: &ast::Expr) -> Result<Expr, SqlError> {
        let (x, _) = self.expr(e)?;
        if !x.is_row_independent() {
            return Err(SqlError::syntax(&e.to_string(), 1));
        }
        Ok(x)
    }

    /// One GROUP BY item, resolved as `MySQL` resolves it: a position in the select list
    /// (`GROUP BY 1`; a wildcard counts as the columns it stands for), else a column of the
    /// FROM clause, else a select alias (GROUP BY looks at the FROM clause first, ORDER BY at
    /// the aliases). An item that stands for an aggregate is 1056. Also gives the select
    /// item (its index in `projection`) the GROUP BY item names, if it names one.
    fn group_item(
        &mut self,
        e: &ast::Expr,
        projection: &[ast::SelectItem],
    ) -> Result<(Expr, SqlType, Option<usize>), SqlError> {
        if let ast::Expr::Value(v) = e {
            if let ast::Value::Number(n, _) = &v.value {
                if let Ok(pos) = n.parse::<usize>() {
                    return self.group_position(n, pos, projection);
                }
            }
        }
        let bound = self.expr(e);
        if let (Err(error), ast::Expr::Identifier(id)) = (&bound, e) {
            if error.code == 1054 {
                let aliased = projection
                    .iter()
                    .enumerate()
                    .find_map(|(i, item)| match item {
                        ast::SelectItem::ExprWithAlias { expr, alias }
                            if alias.value.eq_ignore_ascii_case(&id.value) =>
                        {
                            Some((i, expr))
                        }
                        _ => None,
                    });
                if let Some((i, expr)) = aliased {
                    let (x, t) = self.grouped_select_expr(expr, &id.value)?;
                    return Ok((x, t, Some(i)));
                }
            }
        }
        bound.map(|(x, t)| (x, t, None))
    }

    /// `GROUP BY n`: the select list's nth column (`text` is n as written).
    fn group_position(
        &mut self,
        text: &str,
        pos: usize,
        projection: &[ast::SelectItem],
    ) -> Result<(Expr, SqlType, Option<usize>), SqlError> {
        let mut seen = 0;
        for (i, item) in projection.iter().enumerate() {
            let columns = match item {
                ast::SelectItem::UnnamedExpr(expr) => {
                    seen += 1;
                    if seen == pos {
                        let (x, t) = self.grouped_select_expr(expr, &expr.to_string())?;
                        return Ok((x, t, Some(i)));
                    }
                    continue;
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    seen += 1;
                    if seen == pos {
                        let (x, t) = self.grouped_select_expr(expr, &alias.value)?;
                        return Ok((x, t, Some(i)));
                    }
                    continue;
                }
                ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                    self.wildcard_columns(item)?
                }
                ast::SelectItem::ExprWithAliases { .. } => {
                    return Err(SqlError::unsupported(item.to_string()))
                }
            };
            if pos > seen {
                if let Some((column, ty, _)) = columns.get(pos - seen - 1) {
                    return Ok((Expr::Column(*column), ty.clone(), None));
                }
            }
            seen += columns.len();
        }
        Err(SqlError::unknown_column(text, "group statement"))
    }

    /// The columns a wildcard of the select list stands for: position, type and result
    /// metadata.
    fn wildcard_columns(
        &self,
        item: &ast::SelectItem,
    ) -> Result<Vec<(usize, SqlType, crate::result::ColumnMeta)>, SqlError> {
        let unknown =
            |alias: &str| SqlError::new(1051, "42S02", format!("Unknown table '{alias}'"));
        if let Some(scope) = &self.scope {
            let positions = match item {
                ast::SelectItem::QualifiedWildcard(
                    ast::SelectItemQualifiedWildcardKind::ObjectName(name),
                    _,
                ) => {
                    let alias = ident_name(name).pop().unwrap_or_default();
                    scope.input_columns(&alias).ok_or_else(|| unknown(&alias))?
                }
                ast::SelectItem::QualifiedWildcard(..) => {
                    return Err(SqlError::unsupported(item.to_string()))
                }
                _ => scope.star.clone(),
            };
            return positions
                .into_iter()
                .map(|pos| {
                    scope
                        .column_at(pos)
                        .map(|c| (pos, c.ty.clone(), c.meta.clone()))
                        .ok_or_else(|| SqlError::internal("star"))
                })
                .collect();
        }
        if let ast::SelectItem::QualifiedWildcard(kind, _) = item {
            let qualifier = match kind {
                ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                    ident_name(n).pop().unwrap_or_default()
                }
                ast::SelectItemQualifiedWildcardKind::Expr(e) => e.to_string(),
            };
            if !self
                .table
                .as_ref()
                .is_some_and(|t| t.alias.eq_ignore_ascii_case(&qualifier))
            {
                return Err(unknown(&qualifier));
            }
        }
        let Some(t) = &self.table else {
            return Err(SqlError::new(1096, "HY000", "No tables used"));
        };
        Ok(t.def
            .columns
            .iter()
            .enumerate()
            .map(|(pos, c)| {
                let meta = column_meta(&t.database, &t.alias, &t.def, pos, &c.name);
                (pos, SqlType::of_column(&c.ty), meta)
            })
            .collect())
    }

    /// A select list expression that a GROUP BY item names (by alias or position).
    fn grouped_select_expr(
        &mut self,
        expr: &ast::Expr,
        name: &str,
    ) -> Result<(Expr, SqlType), SqlError> {
        self.expr(expr).map_err(|error| {
            if error.code == 1111 {
                SqlError::new(1056, "42000", format!("Can't group on '{name}'"))
            } else {
                error
            }
        })
    }

    pub(crate) fn order_by(
        &mut self,
        items: &[ast::OrderByExpr],
        select: Option<(&[Expr], &[SqlType])>,
    ) -> Result<Vec<SortKey>, SqlError> {
        let mut keys = Vec::with_capacity(items.len());
        for item in items {
            let desc = matches!(item.options.sort, Some(ast::OrderBySort::Desc));
            let mut bound: Option<(Expr, SqlType)> = None;
            if let Some((exprs, types)) = select {
                match &item.expr {
                    ast::Expr::Value(v) => {
                        if let ast::Value::Number(n, _) = &v.value {
                            let pos: usize = n.parse().unwrap_or(0);
                            if pos == 0 || pos > exprs.len() {
                                return Err(SqlError::unknown_column(n, "order clause"));
                            }
                            bound = Some((exprs[pos - 1].clone(), types[pos - 1].clone()));
                        }
                    }
                    ast::Expr::Identifier(id) => {
                        // A select alias wins over a column of the same name (MySQL).
                        let alias = self
                            .aliases
                            .iter()
                            .find(|(a, _, _)| a.eq_ignore_ascii_case(&id.value));
                        if let Some((_, e, t)) = alias {
                            bound = Some((e.clone(), t.clone()));
                        }
                    }
                    _ => {}
                }
            }
            let (expr, t) = match bound {
                Some(b) => b,
                None => {
                    self.clause = "order clause";
                    let r = self.expr(&item.expr);
                    self.clause = "field list";
                    r?
                }
            };
            let (expr, t) = crate::json_bind::sort_key(expr, t);
            keys.push(SortKey {
                expr,
                desc,
                collation: t.collation(),
            });
        }
        Ok(keys)
    }

    /// Binds a SELECT whose body is one SELECT (no UNION).
    pub(crate) fn select(&mut self, q: &ast::Query) -> Result<BoundSelect, SqlError> {
        if q.fetch.is_some() || !q.pipe_operators.is_empty() {
            return Err(SqlError::unsupported(q.to_string()));
        }
        if let Some(with) = &q.with {
            self.push_ctes(with);
        }
        let ast::SetExpr::Select(s) = q.body.as_ref() else {
            return match q.body.as_ref() {
                ast::SetExpr::Query(inner) if q.order_by.is_none() && q.limit_clause.is_none() => {
                    self.select(inner)
                }
                _ => Err(SqlError::unsupported(q.body.to_string())),
            };
        };
        self.select_body(s, q.order_by.as_ref(), q.limit_clause.as_ref(), &q.locks)
    }

    /// Binds one SELECT with the ORDER BY, LIMIT and locking clauses that follow it.
    pub(crate) fn select_body(
        &mut self,
        s: &ast::Select,
        order_by: Option<&ast::OrderBy>,
        limit_clause: Option<&ast::LimitClause>,
        locks: &[ast::LockClause],
    ) -> Result<BoundSelect, SqlError> {
        if crate::found_rows::has_modifier(s) {
            self.calc_found_rows += 1;
        }
        if s.into.is_some()
            || s.top.is_some()
            || !s.lateral_views.is_empty()
            || s.qualify.is_some()
            || !s.sort_by.is_empty()
            || !s.cluster_by.is_empty()
            || !s.distribute_by.is_empty()
            || s.prewhere.is_some()
            || !s.connect_by.is_empty()
        {
            return Err(SqlError::unsupported(s.to_string()));
        }
        self.bind_from(&s.from)?;
        let distinct = match &s.distinct {
            None | Some(ast::Distinct::All) => false,
            Some(ast::Distinct::Distinct) => true,
            Some(ast::Distinct::On(_)) => return Err(SqlError::unsupported("DISTINCT ON")),
        };
        let filter = match &s.selection {
            Some(w) => Some(self.condition(w, "where clause")?),
            None => None,
        };
        let mut group_collations = Vec::new();
        // For each GROUP BY key, the select item it names (rollup.rs rule 2).
        let mut group_sources = Vec::new();
        let (items, rollup) = crate::rollup::group_by_items(&s.group_by)?;
        let mut group_by = Vec::with_capacity(items.len());
        for e in items {
            self.clause = "group statement";
            let r = self.group_item(e, &s.projection);
            self.clause = "field list";
            let (x, t, source) = r?;
            group_by.push(x);
            group_collations.push(t.collation());
            group_sources.push(source);
        }
        let saved_rollup = self.rollup.take();
        if rollup {
            self.rollup = Some(crate::rollup::RollupKeys {
                keys: group_by.clone(),
                first: self.row_width(),
            });
        }
        let bound = self.select_after_grouping(
            s,
            filter,
            distinct,
            group_by,
            group_collations,
            &group_sources,
            order_by,
            limit_clause,
            locks,
        );
        self.rollup = saved_rollup;
        bound
    }

    /// The rest of [`Binder::select_body`]: the clauses after GROUP BY.
    #[allow(clippy::too_many_arguments)]
    fn select_after_grouping(
        &mut self,
        s: &ast::Select,
        filter: Option<Expr>,
        distinct: bool,
        group_by: Vec<Expr>,
        group_collations: Vec<Collation>,
        group_sources: &[Option<usize>],
        order_by: Option<&ast::OrderBy>,
        limit_clause: Option<&ast::LimitClause>,
        locks: &[ast::LockClause],
    ) -> Result<BoundSelect, SqlError> {
        // Projection, HAVING and ORDER BY may hold aggregates; projection and ORDER BY
        // window functions.
        self.aggs = Some(Vec::new());
        self.windows = Some(crate::window::WindowScope::new(&s.named_window)?);
        let mut projection = Vec::new();
        let mut types = Vec::new();
        let mut columns = Vec::new();
        // For each result column, the GROUP BY key that names its select item.
        let mut named_keys: Vec<Option<usize>> = Vec::new();
        for (item_index, item) in s.projection.iter().enumerate() {
            match item {
                ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(_, _) => {
                    for (pos, ty, meta) in self.wildcard_columns(item)? {
                        projection.push(Expr::Column(pos));
                        types.push(ty);
                        columns.push(meta);
                    }
                }
                ast::SelectItem::UnnamedExpr(e)
                | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                    let name = match item {
                        ast::SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
                        _ => match e {
                            ast::Expr::Identifier(id) => id.value.clone(),
                            ast::Expr::CompoundIdentifier(ids)
                                if !ids.first().is_some_and(|i| i.value.starts_with("@@")) =>
                            {
                                ids.last().map(|i| i.value.clone()).unwrap_or_default()
                            }
                            other => crate::placeholders::unnumber(crate::column_name::of(other)),
                        },
                    };
                    let (x, t) = self.expr(e)?;
                    if let ast::SelectItem::ExprWithAlias { alias, .. } = item {
                        self.aliases
                            .push((alias.value.clone(), x.clone(), t.clone()));
                    }
                    let scope_meta = match (&x, &self.scope) {
                        (Expr::Column(pos), Some(scope)) => scope.column_at(*pos).map(|c| {
                            let mut m = c.meta.clone();
                            m.name.clone_from(&name);
                            m
                        }),
                        _ => None,
                    };
                    let mut meta = match (&x, &self.table) {
                        _ if scope_meta.is_some() => {
                            scope_meta.unwrap_or_else(|| t.meta(&name, true))
                        }
                        (Expr::Column(pos), Some(tr)) if *pos < tr.def.columns.len() => {
                            column_meta(&tr.database, &tr.alias, &tr.def, *pos, &name)
                        }
                        _ => t.meta(
                            &name,
                            !matches!(x, Expr::Literal(ref v) if !matches!(v, Value::Null)),
                        ),
                    };
                    // `c COLLATE x` binds to the column with x in its type: the result column
                    // has x (what clients see, and what DISTINCT compares by). Binary
                    // columns stay binary.
                    if let (Expr::Column(_), SqlType::Str { collation, .. }) = (&x, &t) {
                        if meta.charset != 63 {
                            meta.charset = crate::types::collation_id(*collation);
                        }
                    }
                    projection.push(x);
                    types.push(t);
                    columns.push(meta);
                    named_keys.push(group_sources.iter().position(|&g| g == Some(item_index)));
                }
                ast::SelectItem::ExprWithAliases { .. } => {
                    return Err(SqlError::unsupported(item.to_string()))
                }
            }
            // Wildcard columns name no key.
            named_keys.resize(projection.len(), None);
        }
        let windows = self.windows.take();
        let having = match &s.having {
            Some(h) => Some(self.condition(h, "having clause")?),
            None => None,
        };
        self.windows = windows;
        let mut order_by = match order_by {
            None => Vec::new(),
            Some(ob) => match &ob.kind {
                ast::OrderByKind::Expressions(items) => {
                    self.order_by(items, Some((&projection, &types)))?
                }
                ast::OrderByKind::All(_) => return Err(SqlError::unsupported("ORDER BY ALL")),
            },
        };
        let aggs = self.aggs.take().unwrap_or_default();
        let mut windows = self.windows.take().map(|w| w.calls).unwrap_or_default();
        let rollup_width = self
            .rollup
            .as_ref()
            .map_or(0, crate::rollup::RollupKeys::width);
        if !windows.is_empty() {
            let first = self.row_width() + rollup_width + aggs.len();
            Binder::finish_windows(
                first,
                projection
                    .iter_mut()
                    .chain(order_by.iter_mut().map(|k| &mut k.expr)),
            );
        }
        let (limit, offset) = self.limit_clause(limit_clause)?;
        let lock = match locks.first().map(|l| &l.lock_type) {
            None => LockMode::None,
            Some(ast::LockType::Share) => LockMode::Shared,
            Some(ast::LockType::Update) => LockMode::Exclusive,
        };
        let grouped = !aggs.is_empty() || !group_by.is_empty();
        if grouped && self.ctx.full_group_by {
            self.check_full_group_by(&crate::group_check::GroupedSelect {
                group_by: &group_by,
                filter: filter.as_ref(),
                projection: &projection,
                having: having.as_ref(),
                order_by: &order_by,
                rollup: self.rollup.is_some(),
            })?;
        }
        if distinct && self.ctx.full_group_by {
            self.check_distinct_order(&projection, &order_by)?;
        }
        if !grouped && having.is_some() && self.table.is_none() && self.scope.is_none() {
            return Err(SqlError::unsupported("HAVING without a table"));
        }
        let mut having = having;
        if let Some(rollup) = &self.rollup {
            for ((e, meta), named) in projection.iter_mut().zip(&mut columns).zip(&named_keys) {
                let wrapped = rollup.wrap(e, *named);
                if wrapped != *e {
                    meta.flags &= !crate::types::flags::NOT_NULL;
                    *e = wrapped;
                }
            }
            having = having.map(|h| rollup.wrap(&h, None));
            for call in &mut windows {
                call.exprs_mut(&mut |e| *e = rollup.wrap(e, None));
            }
            for k in &mut order_by {
                k.expr = rollup.wrap(&k.expr, None);
            }
        }
        Ok(BoundSelect {
            table: self.table.clone(),
            from: self.from.take().map(Box::new),
            filter,
            group_by,
            group_collations,
            aggs,
            grouped,
            rollup: self.rollup.is_some(),
            having,
            projection,
            columns,
            types,
            distinct,
            order_by,
            limit,
            offset,
            lock,
            windows,
        })
    }

    pub(crate) fn limit_clause(
        &mut self,
        l: Option<&ast::LimitClause>,
    ) -> Result<(Option<Expr>, Option<Expr>), SqlError> {
        Ok(match l {
            None => (None, None),
            Some(ast::LimitClause::LimitOffset {
                limit,
                offset,
                limit_by,
            }) => {
                if !limit_by.is_empty() {
                    return Err(SqlError::unsupported("LIMIT BY"));
                }
                let limit = match limit {
                    Some(e) => Some(self.limit_value(e)?),
                    None => None,
                };
                let offset = match offset {
                    Some(o) => Some(self.limit_value(&o.value)?),
                    None => None,
                };
                (limit, offset)
            }
            Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => {
                let offset = self.limit_value(offset)?;
                let limit = self.limit_value(limit)?;
                (Some(limit), Some(offset))
            }
        })
    }

    /// Binds an INSERT ... VALUES.
    pub(crate) fn insert(&mut self, ins: &ast::Insert) -> Result<BoundInsert, SqlError> {
        if ins.returning.is_some()
            || ins.insert_alias.is_some()
            || !ins.assignments.is_empty()
            || ins.partitioned.is_some()
            || matches!(ins.on, Some(ast::OnInsert::OnConflict(_)))
        {
            return Err(SqlError::unsupported(ins.to_string()));
        }
        let ast::TableObject::TableName(name) = &ins.table else {
            return Err(SqlError::unsupported(ins.to_string()));
        };
        let table = self.resolve_table(name, None)?;
        self.table = Some(table.clone());
        let ncols = table.def.columns.len();
        let targets: Vec<usize> = if ins.columns.is_empty() {
            (0..ncols).collect()
        } else {
            let mut t = Vec::with_capacity(ins.columns.len());
            for c in &ins.columns {
                let parts = ident_name(c);
                let name = parts.last().cloned().unwrap_or_default();
                let pos = table
                    .def
                    .column_position(&name)
                    .ok_or_else(|| SqlError::unknown_column(&name, "field list"))?;
                t.push(pos);
            }
            if let Some(twice) = t.iter().enumerate().find(|(i, p)| t[..*i].contains(p)) {
                let name = &table.def.columns[*twice.1].name;
                return Err(SqlError::new(
                    1110,
                    "42000",
                    format!("Column '{name}' specified twice"),
                ));
            }
            t
        };
        let Some(source) = &ins.source else {
            return Err(SqlError::unsupported(ins.to_string()));
        };
        let ast::SetExpr::Values(values) = source.body.as_ref() else {
            let mut sub = Binder::new(self.ctx);
            sub.params = self.params;
            let query = sub.query(source)?;
            self.params = sub.params;
            if query.columns().len() != targets.len() {
                return Err(SqlError::column_count(1));
            }
            let subqueries = std::mem::take(&mut sub.subqueries);
            let on_duplicate = self.on_duplicate(ins, &table)?;
            let (select, query) = match query {
                crate::query::BoundQuery::Select(select)
                    if select.from.is_none() && subqueries.is_empty() =>
                {
                    (Some((select, targets)), None)
                }
                other => {
                    let planned = crate::query::plan_statement(other, subqueries);
                    (None, Some((Arc::new(planned), targets)))
                }
            };
            return Ok(BoundInsert {
                table,
                rows: Vec::new(),
                value_order: None,
                select,
                query,
                on_duplicate,
                view_check: None,
            });
        };
        // A value may read a column of the row being inserted: one listed before it has its
        // new value, any other its default (exec.rs, `values_row`), as in MySQL.
        let mut reads_row = false;
        let mut rows = Vec::with_capacity(values.rows.len());
        for (i, row) in values.rows.iter().enumerate() {
            if row.content.len() != targets.len() {
                return Err(SqlError::column_count(i + 1));
            }
            let mut out: Vec<Option<Expr>> = vec![None; ncols];
            for (e, &pos) in row.content.iter().zip(&targets) {
                if !crate::insert_set::is_default_keyword(e) {
                    let value = self.expr(e)?.0;
                    reads_row |= crate::walk::any(&value, &|x| matches!(x, Expr::Column(_)));
                    out[pos] = Some(value);
                }
            }
            rows.push(out);
        }
        let on_duplicate = self.on_duplicate(ins, &table)?;
        Ok(BoundInsert {
            table,
            rows,
            value_order: reads_row.then_some(targets),
            select: None,
            query: None,
            on_duplicate,
            view_check: None,
        })
    }

    fn on_duplicate(
        &mut self,
        ins: &ast::Insert,
        table: &TableRef,
    ) -> Result<OnDuplicate, SqlError> {
        self.table = Some(table.clone());
        Ok(match &ins.on {
            Some(ast::OnInsert::DuplicateKeyUpdate(assignments)) => {
                self.values_offset = Some(table.def.columns.len());
                let bound = self.assignments(assignments);
                self.values_offset = None;
                OnDuplicate::Update(bound?)
            }
            _ if ins.replace_into => OnDuplicate::Replace,
            _ if ins.ignore => OnDuplicate::Ignore,
            _ => OnDuplicate::Error,
        })
    }

    /// `col = expr, ...` of UPDATE and ON DUPLICATE KEY UPDATE.
    pub(crate) fn assignments(
        &mut self,
        list: &[ast::Assignment],
    ) -> Result<Vec<(usize, Expr)>, SqlError> {
        let mut out = Vec::with_capacity(list.len());
        for a in list {
            let ast::AssignmentTarget::ColumnName(name) = &a.target else {
                return Err(SqlError::unsupported(a.to_string()));
            };
            let parts = ident_name(name);
            let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
            let (Expr::Column(pos), _, _) = self.column(&refs, &parts.join("."))? else {
                return Err(SqlError::unsupported(a.to_string()));
            };
            if let Some(t) = &self.table {
                if crate::gencols::skip_assignment(&t.def, pos, &a.value)? {
                    continue;
                }
            }
            let (value, _) = self.expr(&a.value)?;
            out.push((pos, value));
        }
        Ok(out)
    }

    /// Binds an UPDATE.
    pub(crate) fn update(&mut self, u: &ast::Update) -> Result<BoundUpdate, SqlError> {
        if !u.table.joins.is_empty() || u.from.is_some() {
            return Err(SqlError::unsupported("multi-table UPDATE"));
        }
        if u.returning.is_some() {
            return Err(SqlError::unsupported(u.to_string()));
        }
        self.table_from(std::slice::from_ref(&u.table))?;
        let table = self
            .table
            .clone()
            .ok_or_else(|| SqlError::unsupported("UPDATE without a table"))?;
        let assignments = self.assignments(&u.assignments)?;
        let filter = match &u.selection {
            Some(w) => Some(self.condition(w, "where clause")?),
            None => None,
        };
        let order_by = self.order_by(&u.order_by, None)?;
        let limit = match &u.limit {
            Some(l) => Some(self.limit_value(l)?),
            None => None,
        };
        Ok(BoundUpdate {
            table,
            assignments,
            filter,
            order_by,
            limit,
            view_check: None,
            ignore: crate::dml_modifiers::has_ignore(&u.optimizer_hints),
        })
    }

    /// Binds a DELETE.
    pub(crate) fn delete(&mut self, d: &ast::Delete) -> Result<BoundDelete, SqlError> {
        if !d.tables.is_empty() || d.using.is_some() {
            return Err(SqlError::unsupported("multi-table DELETE"));
        }
        if d.returning.is_some() {
            return Err(SqlError::unsupported(d.to_string()));
        }
        let from = match &d.from {
            ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
        };
        self.table_from(from)?;
        let table = self
            .table
            .clone()
            .ok_or_else(|| SqlError::unsupported("DELETE without a table"))?;
        let filter = match &d.selection {
            Some(w) => Some(self.condition(w, "where clause")?),
            None => None,
        };
        let order_by = self.order_by(&d.order_by, None)?;
        let limit = match &d.limit {
            Some(l) => Some(self.limit_value(l)?),
            None => None,
        };
        Ok(BoundDelete {
            table,
            filter,
            order_by,
            limit,
            ignore: crate::dml_modifiers::has_ignore(&d.optimizer_hints),
        })
    }
}

/// The table `db.name`: database names match exactly, table names ASCII case-insensitively
/// when no exact match exists.
pub(crate) fn lookup_table(catalog: &Catalog, db: &str, name: &str) -> Option<Arc<TableDef>> {
    let tables = catalog.databases.get(db)?;
    if let Some(t) = tables.get(name) {
        return Some(t.clone());
    }
    tables
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, t)| t.clone())
}

/// The type an aggregate of an argument of type `arg_type` returns.
pub(crate) fn agg_result_type(func: AggFunc, arg_type: &SqlType) -> SqlType {
    match func {
        AggFunc::CountStar | AggFunc::Count => SqlType::Int {
            unsigned: false,
            len: 21,
        },
        AggFunc::Sum => match arg_type {
            SqlType::Int { .. } => SqlType::Decimal {
                precision: 32,
                scale: 0,
            },
            // MySQL widens SUM by 22 digits, AVG by div_precision_increment.
            SqlType::Decimal { precision, scale } => SqlType::Decimal {
                precision: precision.saturating_add(22).min(65),
                scale: *scale,
            },
            _ => SqlType::Double,
        },
        AggFunc::Avg => match arg_type {
            SqlType::Int { .. } => SqlType::Decimal {
                precision: 31,
                scale: 4,
            },
            SqlType::Decimal { precision, scale } => SqlType::Decimal {
                precision: precision.saturating_add(4).min(65),
                scale: (*scale + crate::decimal::DIV_PRECISION_INCREMENT).min(30),
            },
            _ => SqlType::Double,
        },
        AggFunc::Min | AggFunc::Max => arg_type.clone(),
        // Typed by agg_collect.rs when bound.
        AggFunc::GroupConcat => SqlType::Str {
            collation: arg_type.collation(),
            len: 1024,
        },
        AggFunc::JsonArrayAgg | AggFunc::JsonObjectAgg => SqlType::Json,
        other => crate::stat_aggs::result_type(other),
    }
}

fn bool_type() -> SqlType {
    SqlType::Int {
        unsigned: false,
        len: 1,
    }
}

/// The collation of a comparison: the first string operand's (a column's wins over a
/// literal's, as MySQL's coercibility rules have it).
pub(crate) fn pick_collation(types: &[&SqlType]) -> Collation {
    types
        .iter()
        .find_map(|t| match t {
            SqlType::Str { collation, .. } if *collation != Collation::Utf8mb4GeneralCi => {
                Some(*collation)
            }
            _ => None,
        })
        .unwrap_or(Collation::Utf8mb4GeneralCi)
}

/// The type of a value that may come from either of two expressions.
pub(crate) fn unify(a: &SqlType, b: &SqlType) -> SqlType {
    match (a, b) {
        (SqlType::Null, t) | (t, SqlType::Null) => t.clone(),
        (SqlType::Json, SqlType::Json) => SqlType::Json,
        (SqlType::Json, _) | (_, SqlType::Json) => SqlType::Str {
            collation: Collation::Utf8mb4Bin,
            len: 65_535,
        },
        (
            SqlType::Int {
                unsigned: x,
                len: l,
            },
            SqlType::Int {
                unsigned: y,
                len: m,
            },
        ) => SqlType::Int {
            unsigned: *x && *y,
            len: (*l).max(*m),
        },
        (SqlType::Str { .. }, _) | (_, SqlType::Str { .. }) => SqlType::Str {
            collation: a.collation(),
            len: 255,
        },
        // DATE with DATETIME is a DATETIME (IF(c, NOW(), d), COALESCE(d, CURDATE())).
        (SqlType::DateTime { fsp: x }, SqlType::DateTime { fsp: y }) => {
            SqlType::DateTime { fsp: (*x).max(*y) }
        }
        (SqlType::Decimal { .. } | SqlType::Int { .. }, SqlType::Decimal { .. })
        | (SqlType::Decimal { .. }, SqlType::Int { .. }) => {
            crate::decimal::arith_type(ArithOp::Add, a, b)
        }
        (SqlType::Float, SqlType::Float) => SqlType::Float,
        _ => SqlType::Double,
    }
}

/// A numeric literal's value: an integer, else a decimal (`1.5`, `99999999999999999999`),
/// else a double (`1e3`), as MySQL types literals.
pub(crate) fn number_value(n: &str) -> Result<Value, SqlError> {
    number_literal(n).map(|(e, _)| match e {
        Expr::Literal(v) => v,
        _ => Value::Null,
    })
}

/// A numeric literal: integers stay integers, numbers with a point are decimals, numbers
/// with an exponent are doubles (docs/sql.md).
fn number_literal(n: &str) -> Result<(Expr, SqlType), SqlError> {
    if let Ok(i) = n.parse::<i64>() {
        let len = n.len() as u32;
        return Ok((
            Expr::Literal(Value::Int(i)),
            SqlType::Int {
                unsigned: false,
                len,
            },
        ));
    }
    if let Ok(u) = n.parse::<u64>() {
        return Ok((
            Expr::Literal(Value::UInt(u)),
            SqlType::Int {
                unsigned: true,
                len: 20,
            },
        ));
    }
    if !n.contains(['e', 'E']) {
        if let Some(d) = shale_table::Decimal::parse(n)
            .filter(|d| d.digits() <= u32::from(shale_table::DECIMAL_MAX_PRECISION))
        {
            let t = SqlType::Decimal {
                precision: d.digits().max(u32::from(d.scale())) as u8,
                scale: d.scale(),
            };
            return Ok((Expr::Literal(Value::Decimal(d)), t));
        }
    }
    match n.parse::<f64>() {
        Ok(d) => Ok((Expr::Literal(Value::Double(d)), SqlType::Double)),
        Err(_) => Err(SqlError::syntax(n, 1)),
    }
}

pub(crate) fn decode_hex(h: &str) -> Option<Vec<u8>> {
    let h = if h.len() % 2 == 1 {
        format!("0{h}")
    } else {
        h.to_string()
    };
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
        .collect()
}
