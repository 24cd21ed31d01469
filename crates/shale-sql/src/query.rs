//! Queries beyond one table: a SELECT over a multi-input FROM or with subqueries, and UNION.
//! Binding (`Binder::query`), planning (`plan_query`, pure) and running (`run_statement`).
//!
//! A statement whose query is one SELECT of one base table without subqueries never comes
//! here: it keeps the one-table plan and its streaming executor (session.rs). Everything
//! else runs with a [`QueryEnv`], which holds the transaction in a `RefCell` so that a
//! subquery can read through it while its enclosing query evaluates a row. Invariants:
//! 1. The transaction is borrowed for one read at a time (join_exec.rs); no borrow is held
//!    while an expression that may hold a correlated subquery is evaluated.
//! 2. Uncorrelated subqueries run before the statement reads anything (in id order, inner
//!    first), so evaluating them later never needs the transaction (subquery.rs rule 1).
//! 3. Each collection of rows held in memory (a derived table, a subquery's result, a
//!    join's hash table, intermediate or finished rows, a UNION's rows) is limited to
//!    `shale_query_memory` bytes (default 256 MiB, counted approximately); past it the
//!    statement fails with 3170. Nothing spills to disk.
//!
//! UNION: the parts' result columns are unified per position (names and metadata of the
//! first SELECT; integers with integers stay integers, anything with a string is a string,
//! other mixes are doubles); UNION [DISTINCT] removes duplicate rows of everything to its
//! left, UNION ALL keeps them; ORDER BY and LIMIT after the last part apply to the whole.

use std::cell::{RefCell, RefMut};
use std::collections::HashMap;
use std::rc::Rc;

use shale_table::{Collation, TableTxn, Value};
use sqlparser::ast;

use crate::bind::{unify, Binder, BoundSelect, SortKey};
use crate::error::SqlError;
use crate::exec::{self, count_value, group_key, Source};
use crate::expr::{Env, Expr};
use crate::from::{Scope, ScopeColumn, ScopeInput};
use crate::join::{self, JoinPlan};
use crate::result::{ColumnMeta, ResultSink, StatementStatus};
use crate::subquery::{SubqueryRows, CORRELATED_CACHE};
use crate::types::SqlType;

/// A bound query: one SELECT or a UNION.
#[derive(Debug, Clone)]
pub(crate) enum BoundQuery {
    Select(Box<BoundSelect>),
    Union(Box<BoundUnion>),
    /// A recursive CTE (recursive.rs), and the working table its recursive parts read.
    Recursive(Box<crate::recursive::BoundRecursive>),
    WorkingTable(Box<crate::recursive::WorkingTable>),
}

/// A bound UNION, INTERSECT or EXCEPT (set_ops.rs).
#[derive(Debug, Clone)]
pub(crate) struct BoundUnion {
    pub parts: Vec<BoundSelect>,
    /// How the parts combine; its leaves index `parts`.
    pub tree: crate::set_ops::SetTree,
    pub columns: Vec<ColumnMeta>,
    pub types: Vec<SqlType>,
    /// Over the union's result row.
    pub order_by: Vec<SortKey>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
}

/// A subquery of the statement, as bound.
#[derive(Debug, Clone)]
pub(crate) struct BoundSubquery {
    pub query: BoundQuery,
    pub correlated: bool,
    /// The most rows its use needs (EXISTS 1, a scalar 2).
    pub max_rows: Option<u64>,
}

impl BoundQuery {
    pub(crate) fn columns(&self) -> &[ColumnMeta] {
        match self {
            BoundQuery::Select(s) => &s.columns,
            BoundQuery::Union(u) => &u.columns,
            BoundQuery::Recursive(r) => &r.columns,
            BoundQuery::WorkingTable(w) => &w.columns,
        }
    }

    pub(crate) fn types(&self) -> &[SqlType] {
        match self {
            BoundQuery::Select(s) => &s.types,
            BoundQuery::Union(u) => &u.types,
            BoundQuery::Recursive(r) => &r.types,
            BoundQuery::WorkingTable(w) => &w.types,
        }
    }
}

pub(crate) fn flatten<'q>(
    e: &'q ast::SetExpr,
    out: &mut Vec<(bool, &'q ast::SetExpr)>,
) -> Result<(), SqlError> {
    match e {
        ast::SetExpr::SetOperation {
            left,
            op: ast::SetOperator::Union,
            set_quantifier,
            right,
        } => {
            flatten(left, out)?;
            let distinct = match set_quantifier {
                ast::SetQuantifier::All => false,
                ast::SetQuantifier::Distinct | ast::SetQuantifier::None => true,
                other => return Err(SqlError::unsupported(format!("UNION {other}"))),
            };
            out.push((distinct, right));
            Ok(())
        }
        ast::SetExpr::SetOperation { op, .. } => Err(SqlError::unsupported(op.to_string())),
        other => {
            out.push((false, other));
            Ok(())
        }
    }
}

/// The select-list expressions of a set operation's part, when it is a SELECT whose list
/// has `width` items and no `*`.
fn select_list(leaf: &ast::SetExpr, width: usize) -> Option<Vec<&ast::Expr>> {
    let ast::SetExpr::Select(s) = leaf else {
        return None;
    };
    let items: Vec<&ast::Expr> =
        s.projection
            .iter()
            .map(|item| match item {
                ast::SelectItem::UnnamedExpr(e)
                | ast::SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
                _ => None,
            })
            .collect::<Option<_>>()?;
    (items.len() == width).then_some(items)
}

impl Binder<'_> {
    /// Binds a query: one SELECT, or several combined by UNION, INTERSECT and EXCEPT.
    pub(crate) fn query(&mut self, q: &ast::Query) -> Result<BoundQuery, SqlError> {
        if !matches!(q.body.as_ref(), ast::SetExpr::SetOperation { .. }) {
            return Ok(BoundQuery::Select(Box::new(self.select(q)?)));
        }
        if q.fetch.is_some() || !q.pipe_operators.is_empty() || !q.locks.is_empty() {
            return Err(SqlError::unsupported(q.to_string()));
        }
        if let Some(with) = &q.with {
            self.push_ctes(with);
        }
        let mut leaves = Vec::new();
        let tree = crate::set_ops::tree(&q.body, &mut leaves)?;
        let mut parts = Vec::with_capacity(leaves.len());
        for body in leaves.iter().copied() {
            let mut sub = self.child(None);
            let bound = match body {
                ast::SetExpr::Select(s) => sub.select_body(s, None, None, &[]),
                ast::SetExpr::Query(inner) => sub.select(inner),
                other => Err(SqlError::unsupported(other.to_string())),
            };
            self.adopt(sub);
            parts.push(bound?);
        }
        let first = parts
            .first()
            .ok_or_else(|| SqlError::internal("empty UNION"))?;
        let n = first.columns.len();
        if parts.iter().any(|p| p.columns.len() != n) {
            return Err(SqlError::new(
                1222,
                "21000",
                "The used SELECT statements have a different number of columns",
            ));
        }
        let mut types = first.types.clone();
        for p in &parts[1..] {
            for (t, u) in types.iter_mut().zip(&p.types) {
                *t = unify(t, u);
            }
        }
        // Each string column's collation mixes the parts' (coercibility.rs).
        let described: Vec<Vec<(Option<&ast::Expr>, &SqlType)>> = leaves
            .iter()
            .zip(&parts)
            .map(|(leaf, part)| {
                let items = select_list(leaf, n);
                part.types
                    .iter()
                    .enumerate()
                    .map(|(i, t)| (items.as_ref().map(|items| items[i]), t))
                    .collect()
            })
            .collect();
        let mixed = crate::coercibility::for_union(self, &described, n)?;
        for (t, c) in types.iter_mut().zip(mixed) {
            *t = crate::coercibility::with_collation(t.clone(), c);
        }
        let columns: Vec<ColumnMeta> = (0..n)
            .map(|i| {
                let same = parts.iter().all(|p| p.types.get(i) == types.get(i));
                let name = &first.columns[i].name;
                if same {
                    first.columns[i].clone()
                } else {
                    types[i].meta(name, true)
                }
            })
            .collect();
        // ORDER BY and LIMIT see the result's columns.
        let mut outer = self.child(None);
        outer.scope = Some(Scope {
            inputs: vec![ScopeInput {
                alias: String::new(),
                database: String::new(),
                columns: columns
                    .iter()
                    .zip(&types)
                    .map(|(m, t)| ScopeColumn {
                        name: m.name.clone(),
                        ty: t.clone(),
                        meta: m.clone(),
                    })
                    .collect(),
                offset: 0,
            }],
            hidden: Vec::new(),
            star: (0..n).collect(),
        });
        let projection: Vec<Expr> = (0..n).map(Expr::Column).collect();
        let bound = (|| {
            let order_by = match &q.order_by {
                None => Vec::new(),
                Some(ob) => match &ob.kind {
                    ast::OrderByKind::Expressions(items) => {
                        outer.order_by(items, Some((&projection, &types)))?
                    }
                    ast::OrderByKind::All(_) => return Err(SqlError::unsupported("ORDER BY ALL")),
                },
            };
            let (limit, offset) = outer.limit_clause(q.limit_clause.as_ref())?;
            Ok((order_by, limit, offset))
        })();
        self.adopt(outer);
        let (order_by, limit, offset) = bound?;
        Ok(BoundQuery::Union(Box::new(BoundUnion {
            parts,
            tree,
            columns,
            types,
            order_by,
            limit,
            offset,
        })))
    }

    /// Makes WITH's CTEs visible to the rest of the query.
    pub(crate) fn push_ctes(&mut self, with: &ast::With) {
        for cte in &with.cte_tables {
            let cte = Rc::new(cte.clone());
            if with.recursive {
                self.recursive_ctes.push(Rc::clone(&cte));
            }
            self.ctes.push(cte);
        }
    }
}

/// A planned SELECT of the general path.
#[derive(Debug)]
pub(crate) struct PlannedSelect {
    pub select: BoundSelect,
    /// None: no FROM (one empty row, WHERE checked by the SELECT).
    pub join: Option<JoinPlan>,
}

/// A planned UNION.
#[derive(Debug)]
pub(crate) struct PlannedUnion {
    pub union: BoundUnion,
    pub parts: Vec<PlannedSelect>,
}

/// A planned query.
#[derive(Debug)]
pub(crate) enum PlannedQuery {
    Select(Box<PlannedSelect>),
    Union(Box<PlannedUnion>),
    Recursive(Box<crate::recursive::PlannedRecursive>),
    WorkingTable(Box<crate::recursive::WorkingTable>),
}

impl PlannedQuery {
    pub(crate) fn columns(&self) -> &[ColumnMeta] {
        match self {
            PlannedQuery::Select(s) => &s.select.columns,
            PlannedQuery::Union(u) => &u.union.columns,
            PlannedQuery::Recursive(r) => &r.columns,
            PlannedQuery::WorkingTable(w) => &w.columns,
        }
    }
}

/// A planned subquery.
#[derive(Debug)]
pub(crate) struct PlannedSubquery {
    pub query: PlannedQuery,
    pub correlated: bool,
    pub max_rows: Option<u64>,
}

/// A statement's query and its subqueries, planned.
#[derive(Debug)]
pub(crate) struct StatementQuery {
    pub query: PlannedQuery,
    pub subqueries: Vec<PlannedSubquery>,
    /// SELECT SQL_CALC_FOUND_ROWS: the outermost LIMIT and OFFSET, applied to the result
    /// (found_rows.rs).
    pub found_rows_window: Option<crate::found_rows::Window>,
}

pub(crate) fn plan_select(s: BoundSelect) -> PlannedSelect {
    // `s.from` stays: `BoundSelect::width` reads it, and aggregates sit past that width (an
    // aggregate over no rows reads its slot of an all-NULL row that wide).
    let from = match (s.from.clone(), &s.table) {
        (Some(f), _) => Some(*f),
        (None, Some(t)) => Some(crate::from::BoundFrom::single(t)),
        (None, None) => None,
    };
    let join = from.map(|f| join::plan_join(&f, s.filter.as_ref()));
    PlannedSelect { select: s, join }
}

/// Plans a bound query (join.rs and plan.rs choose each input's access).
pub(crate) fn plan_query(q: BoundQuery) -> PlannedQuery {
    match q {
        BoundQuery::Select(s) => PlannedQuery::Select(Box::new(plan_select(*s))),
        BoundQuery::Union(u) => {
            let mut u = *u;
            let parts = std::mem::take(&mut u.parts)
                .into_iter()
                .map(plan_select)
                .collect();
            PlannedQuery::Union(Box::new(PlannedUnion { union: u, parts }))
        }
        BoundQuery::Recursive(r) => PlannedQuery::Recursive(Box::new(r.plan())),
        BoundQuery::WorkingTable(w) => PlannedQuery::WorkingTable(w),
    }
}

/// Plans a statement's query and its subqueries.
pub(crate) fn plan_statement(q: BoundQuery, subqueries: Vec<BoundSubquery>) -> StatementQuery {
    StatementQuery {
        query: plan_query(q),
        subqueries: plan_subqueries(subqueries),
        found_rows_window: None,
    }
}

/// Plans a statement's subqueries.
pub(crate) fn plan_subqueries(subqueries: Vec<BoundSubquery>) -> Vec<PlannedSubquery> {
    subqueries
        .into_iter()
        .map(|s| PlannedSubquery {
            query: plan_query(s.query),
            correlated: s.correlated,
            max_rows: s.max_rows,
        })
        .collect()
}

/// EXPLAIN's lines for a planned query.
pub(crate) fn explain_query(q: &PlannedQuery, lines: &mut Vec<String>, indent: &str) {
    match q {
        PlannedQuery::Select(s) => match &s.join {
            Some(j) => join::explain(j, lines, indent),
            None => lines.push(format!("{indent}no table")),
        },
        PlannedQuery::WorkingTable(_) => lines.push(format!("{indent}working table")),
        PlannedQuery::Recursive(r) => {
            let parts = r.seeds.iter().map(|p| ("seed", p));
            for (kind, p) in parts.chain(r.recursive.iter().map(|p| ("recursive", p))) {
                lines.push(format!("{indent}{kind} part of {}", r.name));
                match &p.join {
                    Some(j) => join::explain(j, lines, &format!("{indent}  ")),
                    None => lines.push(format!("{indent}  no table")),
                }
            }
        }
        PlannedQuery::Union(u) => {
            let labels = crate::set_ops::labels(&u.union.tree, u.parts.len());
            for (i, p) in u.parts.iter().enumerate() {
                lines.push(format!("{indent}{} part {}", labels[i], i + 1));
                match &p.join {
                    Some(j) => join::explain(j, lines, &format!("{indent}  ")),
                    None => lines.push(format!("{indent}  no table")),
                }
            }
        }
    }
}

/// EXPLAIN's text for a statement's query.
pub(crate) fn explain_statement(sq: &StatementQuery) -> String {
    let mut lines = Vec::new();
    explain_query(&sq.query, &mut lines, "");
    for (id, s) in sq.subqueries.iter().enumerate() {
        lines.push(format!(
            "subquery#{id}{}",
            if s.correlated { " correlated" } else { "" }
        ));
        explain_query(&s.query, &mut lines, "  ");
    }
    lines.join("\n")
}

/// Counts the bytes a collection of rows holds (invariant 3).
#[derive(Debug, Clone)]
pub(crate) struct MemoryBudget {
    limit: usize,
    used: usize,
    what: &'static str,
}

impl MemoryBudget {
    /// A budget of `limit` bytes for the collection `what` (named by error 3170).
    pub(crate) fn new(limit: usize, what: &'static str) -> MemoryBudget {
        MemoryBudget {
            limit,
            used: 0,
            what,
        }
    }

    pub(crate) fn add(&mut self, row: &[Value]) -> Result<(), SqlError> {
        self.used += 24
            + row
                .iter()
                .map(|v| match v {
                    Value::Bytes(b) => 32 + b.len(),
                    _ => 32,
                })
                .sum::<usize>();
        if self.used > self.limit {
            return Err(SqlError::new(
                3170,
                "HY000",
                format!(
                    "Memory capacity of {} bytes for 'shale_query_memory' exceeded by the {}; \
                     Shale does not spill to disk: raise shale_query_memory or narrow the query",
                    self.limit, self.what
                ),
            ));
        }
        Ok(())
    }
}

type SubqueryCache = HashMap<(usize, String), Rc<SubqueryRows>>;

/// What every query of one statement shares.
pub(crate) struct Shared<'t> {
    txn: RefCell<&'t mut TableTxn>,
    subqueries: &'t [PlannedSubquery],
    cache: RefCell<SubqueryCache>,
    base: &'t dyn Env,
    memory: usize,
    /// Recursive CTEs' working tables by id (recursive.rs).
    working: RefCell<HashMap<u64, Rc<Vec<Vec<Value>>>>>,
}

/// The environment expressions of the general path are evaluated in: the session's, plus
/// subqueries and, inside a correlated subquery, the enclosing row's values.
pub(crate) struct QueryEnv<'s, 't> {
    shared: &'s Shared<'t>,
    outer: Vec<Value>,
}

impl<'t> QueryEnv<'_, 't> {
    /// The transaction, for one read (invariant 1).
    pub(crate) fn txn(&self) -> Result<RefMut<'_, &'t mut TableTxn>, SqlError> {
        self.shared
            .txn
            .try_borrow_mut()
            .map_err(|_| SqlError::internal("the transaction is already in use by a read"))
    }

    /// Sets what the working table `id` holds.
    pub(crate) fn set_working(&self, id: u64, rows: Rc<Vec<Vec<Value>>>) {
        self.shared.working.borrow_mut().insert(id, rows);
    }

    /// The rows the working table `id` holds (none before its first iteration).
    pub(crate) fn working(&self, id: u64) -> Rc<Vec<Vec<Value>>> {
        self.shared
            .working
            .borrow()
            .get(&id)
            .cloned()
            .unwrap_or_default()
    }

    pub(crate) fn budget(&self, what: &'static str) -> MemoryBudget {
        MemoryBudget {
            limit: self.shared.memory,
            used: 0,
            what,
        }
    }
}

impl Env for QueryEnv<'_, '_> {
    fn param(&self, n: usize) -> Value {
        self.shared.base.param(n)
    }
    fn database(&self) -> Option<&str> {
        self.shared.base.database()
    }
    fn connection_id(&self) -> u64 {
        self.shared.base.connection_id()
    }
    fn last_insert_id(&self) -> u64 {
        self.shared.base.last_insert_id()
    }
    fn user(&self) -> &str {
        self.shared.base.user()
    }
    fn current_user(&self) -> String {
        self.shared.base.current_user()
    }
    fn variable(&self, name: &str) -> Value {
        self.shared.base.variable(name)
    }
    fn user_variable(&self, name: &str) -> Value {
        self.shared.base.user_variable(name)
    }
    fn assign_user_variable(&self, name: &str, value: Value) -> Result<(), SqlError> {
        self.shared.base.assign_user_variable(name, value)
    }
    fn statement_time(&self) -> i64 {
        self.shared.base.statement_time()
    }
    fn row_counts(&self) -> (i64, u64) {
        self.shared.base.row_counts()
    }
    fn sessions_view(&self) -> Option<crate::info_schema::SessionsView> {
        self.shared.base.sessions_view()
    }
    fn outer(&self, n: usize) -> Value {
        self.outer.get(n).cloned().unwrap_or(Value::Null)
    }
    fn store_rules(&self) -> crate::lenient_store::StoreRules {
        self.shared.base.store_rules()
    }
    fn warn(&self, code: u16, message: String) {
        self.shared.base.warn(code, message);
    }
    fn division_by_zero(&self) -> Result<(), SqlError> {
        self.shared.base.division_by_zero()
    }
    fn subquery(&self, id: usize, outer: &[Value]) -> Result<Rc<SubqueryRows>, SqlError> {
        let sub = self
            .shared
            .subqueries
            .get(id)
            .ok_or_else(|| SqlError::internal(format!("no subquery {id}")))?;
        let mut key = String::new();
        group_key(outer, &[], &mut key);
        if let Some(r) = self.shared.cache.borrow().get(&(id, key.clone())) {
            return Ok(Rc::clone(r));
        }
        let env = QueryEnv {
            shared: self.shared,
            outer: outer.to_vec(),
        };
        let rows = query_rows(&env, &sub.query, sub.max_rows)?;
        let result = Rc::new(SubqueryRows { rows });
        let mut cache = self.shared.cache.borrow_mut();
        if sub.correlated && cache.len() >= CORRELATED_CACHE {
            let subqueries = self.shared.subqueries;
            cache.retain(|(i, _), _| subqueries.get(*i).is_some_and(|s| !s.correlated));
        }
        cache.insert((id, key), Rc::clone(&result));
        Ok(result)
    }
}

/// Collects a query's rows, within the memory limit.
struct Collect {
    rows: Vec<Vec<Value>>,
    budget: MemoryBudget,
    max_rows: usize,
}

impl ResultSink for Collect {
    fn ok(&mut self, _: &StatementStatus) -> Result<(), SqlError> {
        Ok(())
    }
    fn columns(&mut self, _: &[ColumnMeta]) -> Result<(), SqlError> {
        Ok(())
    }
    fn row(&mut self, row: &[Value]) -> Result<(), SqlError> {
        if self.rows.len() < self.max_rows {
            self.budget.add(row)?;
            self.rows.push(row.to_vec());
        }
        Ok(())
    }
    fn end(&mut self, _: &StatementStatus) -> Result<(), SqlError> {
        Ok(())
    }
}

/// The result rows of `q` (at most `max_rows`).
pub(crate) fn query_rows(
    env: &QueryEnv<'_, '_>,
    q: &PlannedQuery,
    max_rows: Option<u64>,
) -> Result<Vec<Vec<Value>>, SqlError> {
    let mut collect = Collect {
        rows: Vec::new(),
        budget: env.budget("materialized subquery"),
        max_rows: max_rows.map_or(usize::MAX, |m| usize::try_from(m).unwrap_or(usize::MAX)),
    };
    run_query(env, q, &mut collect, &StatementStatus::default(), max_rows)?;
    Ok(collect.rows)
}

/// Runs `f` in a statement's query environment (uncorrelated subqueries already run):
/// what UPDATE and DELETE over joins read through (multi_dml.rs).
pub(crate) fn with_query_env<R>(
    txn: &mut TableTxn,
    subqueries: &[PlannedSubquery],
    base: &dyn Env,
    f: impl FnOnce(&QueryEnv<'_, '_>) -> Result<R, SqlError>,
) -> Result<R, SqlError> {
    let memory = exec::count_value(
        Some(&Expr::SysVar("shale_query_memory".into())),
        base,
        268_435_456,
    )?;
    let shared = Shared {
        txn: RefCell::new(txn),
        subqueries,
        cache: RefCell::new(HashMap::new()),
        base,
        memory: usize::try_from(memory).unwrap_or(usize::MAX),
        working: RefCell::new(HashMap::new()),
    };
    let env = QueryEnv {
        shared: &shared,
        outer: Vec::new(),
    };
    // Invariant 2.
    for (id, s) in subqueries.iter().enumerate() {
        if !s.correlated {
            env.subquery(id, &[])?;
        }
    }
    f(&env)
}

/// Runs a statement's query into `sink`.
pub(crate) fn run_statement(
    txn: &mut TableTxn,
    sq: &StatementQuery,
    base: &dyn Env,
    sink: &mut dyn ResultSink,
    status: &StatementStatus,
) -> Result<(), SqlError> {
    let memory = exec::count_value(
        Some(&Expr::SysVar("shale_query_memory".into())),
        base,
        268_435_456,
    )?;
    let shared = Shared {
        txn: RefCell::new(txn),
        subqueries: &sq.subqueries,
        cache: RefCell::new(HashMap::new()),
        base,
        memory: usize::try_from(memory).unwrap_or(usize::MAX),
        working: RefCell::new(HashMap::new()),
    };
    let env = QueryEnv {
        shared: &shared,
        outer: Vec::new(),
    };
    // Invariant 2.
    for (id, s) in sq.subqueries.iter().enumerate() {
        if !s.correlated {
            env.subquery(id, &[])?;
        }
    }
    run_query(&env, &sq.query, sink, status, None)
}

fn run_query(
    env: &QueryEnv<'_, '_>,
    q: &PlannedQuery,
    sink: &mut dyn ResultSink,
    status: &StatementStatus,
    max_rows: Option<u64>,
) -> Result<(), SqlError> {
    match q {
        PlannedQuery::Select(s) => run_select(env, s, sink, status, max_rows),
        PlannedQuery::Union(u) => run_union(env, u, sink, status),
        PlannedQuery::Recursive(r) => crate::recursive::run_recursive(env, r, sink, status),
        PlannedQuery::WorkingTable(w) => crate::recursive::run_working_table(env, w, sink, status),
    }
}

fn run_select(
    env: &QueryEnv<'_, '_>,
    ps: &PlannedSelect,
    sink: &mut dyn ResultSink,
    status: &StatementStatus,
    max_rows: Option<u64>,
) -> Result<(), SqlError> {
    let s = &ps.select;
    let Some(join) = &ps.join else {
        return exec::select_rows(
            Source::One(Some(Vec::new())),
            s.filter.as_ref(),
            s,
            false,
            env,
            sink,
            status,
        );
    };
    // Without grouping, DISTINCT or ORDER BY, only the rows LIMIT keeps need joining.
    let streaming = !s.grouped
        && !s.distinct
        && s.order_by.is_empty()
        && s.having.is_none()
        && s.windows.is_empty();
    let hint = if streaming {
        let offset = count_value(s.offset.as_ref(), env, 0)?;
        let limit = count_value(s.limit.as_ref(), env, u64::MAX)?;
        let mut h = offset.saturating_add(limit);
        if let Some(m) = max_rows {
            h = h.min(offset.saturating_add(m));
        }
        Some(h)
    } else {
        None
    };
    let rows = crate::join_exec::run_join(env, join, s.lock, hint)?;
    exec::select_rows(
        Source::Many(rows.into_iter()),
        None,
        s,
        false,
        env,
        sink,
        status,
    )
}

/// Text of a value as a string column of a UNION shows it.
fn as_string(v: Value) -> Value {
    match v {
        Value::Null | Value::Bytes(_) => v,
        other => Value::Bytes(crate::value::display(&other).into_bytes()),
    }
}

fn run_union(
    env: &QueryEnv<'_, '_>,
    pu: &PlannedUnion,
    sink: &mut dyn ResultSink,
    status: &StatementStatus,
) -> Result<(), SqlError> {
    let u = &pu.union;
    let mut budget = env.budget("UNION result");
    let collations: Vec<Collation> = u.types.iter().map(SqlType::collation).collect();
    let mut leaves = Vec::with_capacity(pu.parts.len());
    for part in &pu.parts {
        let mut part_rows = Vec::new();
        for r in select_rows_of(env, part)? {
            let r: Vec<Value> = r
                .into_iter()
                .zip(&u.types)
                .map(|(v, t)| {
                    if matches!(t, SqlType::Str { .. }) {
                        as_string(v)
                    } else {
                        v
                    }
                })
                .collect();
            budget.add(&r)?;
            part_rows.push(r);
        }
        leaves.push(part_rows);
    }
    let rows = crate::set_ops::evaluate(&u.tree, &mut leaves, &collations);
    let mut keyed = Vec::with_capacity(rows.len());
    for r in rows {
        let mut keys = Vec::with_capacity(u.order_by.len());
        for k in &u.order_by {
            keys.push(k.expr.eval(&r, env)?);
        }
        keyed.push((keys, r));
    }
    if !u.order_by.is_empty() {
        exec::sort_rows(&mut keyed, &u.order_by);
    }
    let offset = count_value(u.offset.as_ref(), env, 0)?;
    let limit = count_value(u.limit.as_ref(), env, u64::MAX)?;
    sink.columns(&u.columns)?;
    for (_, r) in keyed
        .iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(usize::try_from(limit).unwrap_or(usize::MAX))
    {
        sink.row(r)?;
    }
    sink.end(status)
}

pub(crate) fn select_rows_of(
    env: &QueryEnv<'_, '_>,
    part: &PlannedSelect,
) -> Result<Vec<Vec<Value>>, SqlError> {
    let mut collect = Collect {
        rows: Vec::new(),
        budget: env.budget("UNION part"),
        max_rows: usize::MAX,
    };
    run_select(env, part, &mut collect, &StatementStatus::default(), None)?;
    Ok(collect.rows)
}
