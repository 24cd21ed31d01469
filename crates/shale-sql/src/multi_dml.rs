//! UPDATE and DELETE over joins (`UPDATE t1 JOIN t2 ON .. SET t1.a = t2.b`, `DELETE t1 FROM
//! t1 JOIN t2 ..`, `DELETE FROM t1 USING t1, t2 WHERE ..`) and UPDATE/DELETE whose WHERE or
//! SET holds a subquery. The FROM is bound and planned as a SELECT's (from.rs, join.rs) and
//! read completely with exclusive locks before the first write; then each target row is
//! written once. Rules:
//! 1. A target is a base table of the FROM, named by its alias; a derived table is 1288. A
//!    view the statement writes was merged into the FROM before binding (view_merge.rs).
//! 2. A row NULL-extended by a LEFT JOIN is not a target row; a target row met by several
//!    joined rows is updated (deleted) once, with the first joined row's values. Every SET
//!    expression reads the joined row as it was read, before any write.
//! 3. A subquery that reads a target table is 1093, as MySQL (which also allows some of
//!    these through a materialized derived table; Shale never does).
//! 4. ORDER BY and LIMIT with several tables are MySQL's 1221; with one table and a subquery
//!    they are 1235 (not done: such statements stay on the one-table path, which refuses
//!    subqueries).
//! 5. One base table may be a target under two aliases (a self-join): the rows to change
//!    are found, and every SET value computed, from the whole join before any is changed;
//!    then the targets' changes apply target by target in FROM order (as MySQL's
//!    multi-table UPDATE applies its per-table temporary tables), so a row met through both
//!    aliases gets both, the later alias's last, and is written once.
//!    Setting a primary key column through either alias is MySQL's 1706. A row deleted
//!    through both aliases is deleted once.
//! 6. UPDATE IGNORE: a target row the view's CHECK OPTION refuses keeps its values, and a
//!    row a unique key refuses when written is left as it was (exec.rs `update_row`); each
//!    with a warning and not counted as changed. Rows are written in the order the join
//!    first met them, so which of two rows wanting one key value gets it follows that order.

use std::collections::{HashMap, HashSet};

use shale_table::{LockMode, TableTxn, Value};
use sqlparser::ast;

use crate::bind::{Binder, TableRef};
use crate::error::SqlError;
use crate::exec::group_key;
use crate::expr::{Env, Expr};
use crate::from::{BoundFrom, InputSource};
use crate::join::{self, JoinPlan};
use crate::query::{BoundQuery, BoundSubquery, PlannedSubquery};

/// One table a statement writes: its place in the joined row.
#[derive(Debug)]
pub(crate) struct Target {
    pub table: TableRef,
    pub offset: usize,
}

/// A planned multi-table (or subquery-filtered) UPDATE or DELETE.
#[derive(Debug)]
pub(crate) struct PlannedDml {
    pub join: JoinPlan,
    pub targets: Vec<Target>,
    /// UPDATE: (target, column, value over the joined row); empty for DELETE.
    pub assignments: Vec<(usize, usize, Expr)>,
    pub delete: bool,
    pub subqueries: Vec<PlannedSubquery>,
    /// A view's CHECK OPTION each changed row must meet (view_dml.rs).
    pub view_check: Option<crate::view_dml::ViewCheck>,
    /// UPDATE IGNORE / DELETE IGNORE (rule 6).
    pub ignore: bool,
}

/// Whether `e` holds a subquery (a scalar one, EXISTS or IN): such an UPDATE or DELETE takes
/// this module's general path, and SET evaluates such a value through a SELECT.
pub(crate) fn holds_subquery(e: &ast::Expr) -> bool {
    ast::visit_expressions(e, |x| match x {
        ast::Expr::Subquery(_)
        | ast::Expr::Exists { .. }
        | ast::Expr::In {
            target: ast::InTarget::Subquery(_),
            ..
        } => std::ops::ControlFlow::Break(()),
        _ => std::ops::ControlFlow::Continue(()),
    })
    .is_break()
}

/// Whether `u` needs this module: joins, or a subquery in SET or WHERE of an UPDATE without
/// ORDER BY and LIMIT (with them, the one-table path answers 1235 for a subquery).
pub(crate) fn is_general_update(u: &ast::Update) -> bool {
    if !u.table.joins.is_empty() || u.from.is_some() {
        return true;
    }
    u.order_by.is_empty()
        && u.limit.is_none()
        && (u.selection.as_ref().is_some_and(holds_subquery)
            || u.assignments.iter().any(|a| holds_subquery(&a.value)))
}

/// The DELETE counterpart of `is_general_update`.
pub(crate) fn is_general_delete(d: &ast::Delete) -> bool {
    if !d.tables.is_empty() || d.using.is_some() {
        return true;
    }
    d.order_by.is_empty() && d.limit.is_none() && d.selection.as_ref().is_some_and(holds_subquery)
}

fn same_table(a: &TableRef, b: &TableRef) -> bool {
    a.database == b.database && a.def.name == b.def.name
}

/// Whether a bound query reads `t` (rule 3).
fn query_reads(q: &BoundQuery, t: &TableRef) -> bool {
    let select_reads = |s: &crate::bind::BoundSelect| {
        s.table.as_ref().is_some_and(|x| same_table(x, t))
            || s.from.as_ref().is_some_and(|f| {
                f.inputs.iter().any(|i| match &i.source {
                    InputSource::Table(x) => same_table(x, t),
                    InputSource::Derived(d) => query_reads(d, t),
                    // Its query is among the statement's subqueries, checked there.
                    InputSource::Virtual(_)
                    | InputSource::Lateral { .. }
                    | InputSource::JsonTable(_) => false,
                })
            })
    };
    match q {
        BoundQuery::Select(s) => select_reads(s),
        BoundQuery::Union(u) => u.parts.iter().any(select_reads),
        BoundQuery::Recursive(r) => r.seeds.iter().chain(&r.recursive).any(select_reads),
        BoundQuery::WorkingTable(_) => false,
    }
}

fn target_of(from: &BoundFrom, name: &str, user: &str) -> Result<Target, SqlError> {
    let input = from
        .inputs
        .iter()
        .find(|i| i.name.eq_ignore_ascii_case(name))
        .ok_or_else(|| {
            SqlError::new(
                1109,
                "42S02",
                format!("Unknown table '{name}' in MULTI DELETE"),
            )
        })?;
    match &input.source {
        InputSource::Table(t) => Ok(Target {
            table: t.clone(),
            offset: input.offset,
        }),
        InputSource::Derived(_) | InputSource::Lateral { .. } | InputSource::JsonTable(_) => {
            Err(SqlError::new(
                1288,
                "HY000",
                format!("The target table {name} of the UPDATE is not updatable"),
            ))
        }
        // Writes to information_schema are refused as MySQL does (1044).
        InputSource::Virtual(_) => Err(crate::info_schema::access_denied(user)),
    }
}

impl Binder<'_> {
    /// The FROM bound as a SELECT's, always as a `BoundFrom`.
    fn dml_from(&mut self, from: &[ast::TableWithJoins]) -> Result<BoundFrom, SqlError> {
        self.bind_from(from)?;
        match (self.from.clone(), &self.table) {
            (Some(f), _) => Ok(f),
            (None, Some(t)) => Ok(BoundFrom::single(t)),
            (None, None) => Err(SqlError::unsupported("UPDATE or DELETE without a table")),
        }
    }

    fn dml_filter(&mut self, selection: Option<&ast::Expr>) -> Result<Option<Expr>, SqlError> {
        selection
            .map(|w| self.condition_in(w, "where clause"))
            .transpose()
    }
}

fn finish(
    from: &BoundFrom,
    filter: Option<&Expr>,
    targets: Vec<Target>,
    assignments: Vec<(usize, usize, Expr)>,
    delete: bool,
    subqueries: Vec<BoundSubquery>,
    ignore: bool,
) -> Result<PlannedDml, SqlError> {
    for (i, a) in targets.iter().enumerate() {
        // Rule 5: a primary key column set through one of two aliases of a table.
        if let Some(b) = targets[..i]
            .iter()
            .position(|b| same_table(&a.table, &b.table))
        {
            let pk = &a.table.def.primary_key.columns;
            if assignments
                .iter()
                .any(|(t, c, _)| (*t == i || *t == b) && pk.contains(c))
            {
                return Err(SqlError::new(
                    1706,
                    "HY000",
                    format!(
                        "Primary key/partition key update is not allowed since the table is \
                         updated both as '{}' and '{}'.",
                        targets[b].table.alias, a.table.alias
                    ),
                ));
            }
        }
        if subqueries.iter().any(|s| query_reads(&s.query, &a.table)) {
            return Err(SqlError::new(
                1093,
                "HY000",
                format!(
                    "You can't specify target table '{}' for update in FROM clause",
                    a.table.alias
                ),
            ));
        }
    }
    Ok(PlannedDml {
        join: join::plan_join(from, filter),
        targets,
        assignments,
        delete,
        subqueries: crate::query::plan_subqueries(subqueries),
        view_check: None,
        ignore,
    })
}

/// Binds and plans an UPDATE that `is_general_update` chose.
pub(crate) fn plan_update(b: &mut Binder<'_>, u: &ast::Update) -> Result<PlannedDml, SqlError> {
    if u.returning.is_some() || u.from.is_some() {
        return Err(SqlError::unsupported(u.to_string()));
    }
    let several = !u.table.joins.is_empty();
    if several && (!u.order_by.is_empty() || u.limit.is_some()) {
        let what = if u.order_by.is_empty() {
            "LIMIT"
        } else {
            "ORDER BY"
        };
        return Err(SqlError::new(
            1221,
            "HY000",
            format!("Incorrect usage of UPDATE and {what}"),
        ));
    }
    if !u.order_by.is_empty() || u.limit.is_some() {
        return Err(SqlError::unsupported(
            "ORDER BY or LIMIT in an UPDATE with a subquery",
        ));
    }
    let from = b.dml_from(std::slice::from_ref(&u.table))?;
    let mut targets: Vec<Target> = Vec::new();
    let mut assignments = Vec::new();
    for (pos, value) in b.assignments(&u.assignments)? {
        let input = from
            .inputs
            .iter()
            .find(|i| pos >= i.offset && pos < i.offset + i.width)
            .ok_or_else(|| SqlError::internal("assignment outside the joined row"))?;
        let target = target_of(&from, &input.name, b.ctx.user)?;
        if let Some(column) = target.table.def.columns.get(pos - input.offset) {
            if column.generated.is_some() {
                let table = &target.table.def.name;
                return Err(crate::gencols::value_not_allowed(&column.name, table));
            }
        }
        let ti = match targets.iter().position(|t| t.offset == target.offset) {
            Some(i) => i,
            None => {
                targets.push(target);
                targets.len() - 1
            }
        };
        assignments.push((ti, pos - input.offset, value));
    }
    let filter = b.dml_filter(u.selection.as_ref())?;
    let subqueries = std::mem::take(&mut b.subqueries);
    finish(
        &from,
        filter.as_ref(),
        targets,
        assignments,
        false,
        subqueries,
        crate::dml_modifiers::has_ignore(&u.optimizer_hints),
    )
}

/// Binds and plans a DELETE that `is_general_delete` chose.
pub(crate) fn plan_delete(b: &mut Binder<'_>, d: &ast::Delete) -> Result<PlannedDml, SqlError> {
    if d.returning.is_some() {
        return Err(SqlError::unsupported(d.to_string()));
    }
    let from_list = match &d.from {
        ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
    };
    // DELETE t1 FROM <join>, or DELETE FROM t1 USING <join>.
    let (names, join_list): (Vec<String>, &[ast::TableWithJoins]) = match &d.using {
        Some(using) => (
            from_list.iter().map(|t| t.relation.to_string()).collect(),
            using,
        ),
        None => (
            d.tables
                .iter()
                .map(|n| crate::bind::ident_name(n).pop().unwrap_or_default())
                .collect(),
            from_list,
        ),
    };
    let several = join_list.len() > 1 || join_list.iter().any(|t| !t.joins.is_empty());
    if several && (!d.order_by.is_empty() || d.limit.is_some()) {
        let what = if d.order_by.is_empty() {
            "LIMIT"
        } else {
            "ORDER BY"
        };
        return Err(SqlError::new(
            1221,
            "HY000",
            format!("Incorrect usage of DELETE and {what}"),
        ));
    }
    if !d.order_by.is_empty() || d.limit.is_some() {
        return Err(SqlError::unsupported(
            "ORDER BY or LIMIT in a DELETE with a subquery",
        ));
    }
    let from = b.dml_from(join_list)?;
    let mut targets = Vec::new();
    if names.is_empty() {
        // DELETE FROM t WHERE <subquery>: the one table.
        targets.push(target_of(&from, &from.inputs[0].name.clone(), b.ctx.user)?);
    }
    for n in &names {
        let n = n.rsplit('.').next().unwrap_or(n).trim_matches('`');
        targets.push(target_of(&from, n, b.ctx.user)?);
    }
    let filter = b.dml_filter(d.selection.as_ref())?;
    let subqueries = std::mem::take(&mut b.subqueries);
    finish(
        &from,
        filter.as_ref(),
        targets,
        Vec::new(),
        true,
        subqueries,
        crate::dml_modifiers::has_ignore(&d.optimizer_hints),
    )
}

/// A base row the statement writes, as first read and as it will be written (None: deleted).
struct Pending {
    old: Vec<Value>,
    new: Option<Vec<Value>>,
    /// The changes counted for it, taken back if IGNORE skips its write (rule 6).
    changes: u64,
}

/// One target row met by the join: its slot in its table's pending rows, and the values its
/// target's assignments computed from the joined row (column, value).
struct TargetRow {
    slot: usize,
    /// The joined row it was met in, for a view's CHECK OPTION (view_dml.rs rule 6).
    joined: usize,
    values: Vec<(usize, Value)>,
}

/// Runs the statement; returns (matched, changed) target rows (rules 2 and 5).
pub(crate) fn run(
    txn: &mut TableTxn,
    p: &PlannedDml,
    base: &dyn Env,
) -> Result<(u64, u64), SqlError> {
    // Rule 5: targets naming the same base table share one set of pending rows.
    let group: Vec<usize> = p
        .targets
        .iter()
        .map(|t| {
            p.targets
                .iter()
                .position(|u| same_table(&u.table, &t.table))
                .unwrap_or(0)
        })
        .collect();
    crate::query::with_query_env(txn, &p.subqueries, base, |env| {
        let rows = crate::join_exec::run_join(env, &p.join, LockMode::Exclusive, None)?;
        let mut seen: Vec<HashSet<String>> = vec![HashSet::new(); p.targets.len()];
        let mut pending: Vec<Vec<Pending>> = p.targets.iter().map(|_| Vec::new()).collect();
        let mut index: Vec<HashMap<String, usize>> =
            p.targets.iter().map(|_| HashMap::new()).collect();
        let mut met: Vec<Vec<TargetRow>> = p.targets.iter().map(|_| Vec::new()).collect();
        let mut key = String::new();
        let mut row_number = 0usize;
        // Every value is computed from the joined rows as read, before any change.
        for (joined, row) in rows.iter().enumerate() {
            for (ti, t) in p.targets.iter().enumerate() {
                let def = &*t.table.def;
                let Some(old) = row.get(t.offset..t.offset + def.columns.len()) else {
                    return Err(SqlError::internal("joined row shorter than its inputs"));
                };
                let pk: Vec<Value> = def
                    .primary_key
                    .columns
                    .iter()
                    .map(|&c| old.get(c).cloned().unwrap_or(Value::Null))
                    .collect();
                if pk.iter().any(|v| matches!(v, Value::Null)) {
                    continue; // NULL-extended
                }
                group_key(&pk, &[], &mut key);
                if !seen[ti].insert(key.clone()) {
                    continue;
                }
                row_number += 1;
                let g = group[ti];
                let slot = match index[g].get(&key) {
                    Some(&i) => i,
                    None => {
                        pending[g].push(Pending {
                            old: old.to_vec(),
                            new: Some(old.to_vec()),
                            changes: 0,
                        });
                        index[g].insert(key.clone(), pending[g].len() - 1);
                        pending[g].len() - 1
                    }
                };
                let mut values = Vec::new();
                for (_, c, e) in p.assignments.iter().filter(|(i, _, _)| *i == ti) {
                    let v = e.eval(row, env)?;
                    let Some(col) = def.columns.get(*c) else {
                        return Err(SqlError::internal("assignment outside its table"));
                    };
                    values.push((*c, crate::timestamp::store(col, v, row_number, env)?));
                }
                met[ti].push(TargetRow {
                    slot,
                    joined,
                    values,
                });
            }
        }
        // Then each target's changes, target by target in FROM order (rule 5), on the row
        // as the targets before it left it.
        let (mut matched, mut changed) = (0u64, 0u64);
        let mut order: Vec<usize> = (0..p.targets.len()).collect();
        order.sort_by_key(|&ti| p.targets[ti].offset);
        for ti in order {
            let def = &*p.targets[ti].table.def;
            let offset = p.targets[ti].offset;
            for TargetRow {
                slot,
                joined,
                values,
            } in std::mem::take(&mut met[ti])
            {
                matched += 1;
                let entry = &mut pending[group[ti]][slot];
                let Some(current) = entry.new.take() else {
                    continue; // deleted through another alias
                };
                if p.delete {
                    changed += 1;
                    continue;
                }
                let mut new = current.clone();
                for (c, v) in values {
                    if let Some(slot) = new.get_mut(c) {
                        *slot = v;
                    }
                }
                let assigned =
                    |pos: usize| p.assignments.iter().any(|(i, c, _)| *i == ti && *c == pos);
                crate::timestamp::touch(def, &current, &mut new, assigned, env)?;
                crate::gencols::fill(def, &mut new, matched as usize)?;
                if new == current {
                    entry.new = Some(current);
                    continue;
                }
                if let Some(check) = &p.view_check {
                    // The check reads the joined row, with this target's part as written.
                    let mut row = rows.get(joined).cloned().unwrap_or_default();
                    if let Some(part) = row.get_mut(offset..offset + new.len()) {
                        part.clone_from_slice(&new);
                    }
                    match check.verify(&row, env) {
                        Ok(()) => {}
                        Err(e) if p.ignore => {
                            env.warn(e.code, e.message);
                            entry.new = Some(current);
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                }
                entry.new = Some(new);
                entry.changes += 1;
                changed += 1;
            }
        }
        for (g, rows) in pending.into_iter().enumerate() {
            let def = &*p.targets[g].table.def;
            for Pending { old, new, changes } in rows {
                match new {
                    None => env.txn()?.delete(def, &old)?,
                    Some(new) if new != old => {
                        let mut txn = env.txn()?;
                        let written =
                            crate::exec::update_row(&mut txn, def, &old, new, None, p.ignore, env)?;
                        if !written {
                            changed -= changes;
                        }
                    }
                    Some(_) => {}
                }
            }
        }
        Ok((matched, changed))
    })
}
