//! `WITH RECURSIVE`: a CTE whose UNION reads itself.
//!
//! Binding (`Binder::bind_recursive_cte`, called for each reference to a CTE of a WITH
//! RECURSIVE whose query names itself): the UNION's parts are bound in order; the first is a
//! seed, each later one sees the CTE's own name as the *working table* (the rows the
//! previous iteration added) and is recursive when it reads it. Execution (`run_recursive`):
//! the seeds' rows are the first working table; each iteration runs the recursive parts
//! over it, and the rows they return (with UNION DISTINCT: those not seen before) are the
//! next one, until an iteration adds nothing. Rules (MySQL's):
//! 1. The query must be a UNION (3573) whose non-recursive parts come first (3574); a
//!    recursive part reads the CTE once, directly in its FROM (3577; a reference inside a
//!    subquery or derived table of the part is not the working table and fails as an
//!    unknown table), and has no aggregates, window functions, DISTINCT, ORDER BY or LIMIT
//!    (3575).
//! 2. Column names and types are the first seed's (or the CTE's column list); rows of
//!    recursive parts are not converted to them.
//! 3. An iteration that adds rows past `cte_max_recursion_depth` (default 1000) fails with
//!    3636; every row is held in memory, within `shale_query_memory` (3170).

use std::cell::Cell;
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use shale_table::{Collation, Value};
use sqlparser::ast;

use crate::bind::{Binder, BoundSelect};
use crate::error::SqlError;
use crate::exec::{count_value, group_key};
use crate::expr::Expr;
use crate::query::{BoundQuery, PlannedSelect, QueryEnv};
use crate::result::{ColumnMeta, ResultSink, StatementStatus};
use crate::types::SqlType;

/// Ids of working tables: unique within the process, so within every statement.
static NEXT_WORKING_TABLE: AtomicU64 = AtomicU64::new(1);

/// A recursive CTE's working table, as its recursive parts read it.
#[derive(Debug, Clone)]
pub(crate) struct WorkingTable {
    pub id: u64,
    pub columns: Vec<ColumnMeta>,
    pub types: Vec<SqlType>,
}

/// The working table a part being bound may read, and how often it does.
#[derive(Debug, Clone)]
pub(crate) struct WorkingRef {
    pub name: String,
    pub table: WorkingTable,
    /// The CTE's column names (its column list, else the first seed's).
    pub names: Vec<String>,
    pub uses: Rc<Cell<usize>>,
}

/// A bound recursive CTE.
#[derive(Debug, Clone)]
pub(crate) struct BoundRecursive {
    pub id: u64,
    pub name: String,
    pub seeds: Vec<BoundSelect>,
    pub recursive: Vec<BoundSelect>,
    pub distinct: bool,
    pub columns: Vec<ColumnMeta>,
    pub types: Vec<SqlType>,
}

/// A planned recursive CTE.
#[derive(Debug)]
pub(crate) struct PlannedRecursive {
    pub id: u64,
    pub name: String,
    pub seeds: Vec<PlannedSelect>,
    pub recursive: Vec<PlannedSelect>,
    pub distinct: bool,
    pub columns: Vec<ColumnMeta>,
    pub types: Vec<SqlType>,
}

impl BoundRecursive {
    pub(crate) fn plan(self) -> PlannedRecursive {
        PlannedRecursive {
            id: self.id,
            name: self.name,
            seeds: self
                .seeds
                .into_iter()
                .map(crate::query::plan_select)
                .collect(),
            recursive: self
                .recursive
                .into_iter()
                .map(crate::query::plan_select)
                .collect(),
            distinct: self.distinct,
            columns: self.columns,
            types: self.types,
        }
    }
}

fn shape_error(code: u16, name: &str) -> SqlError {
    let message = match code {
        3573 => format!("Recursive Common Table Expression '{name}' should contain a UNION"),
        3574 => format!(
            "Recursive Common Table Expression '{name}' should have one or more non-recursive \
             query blocks followed by one or more recursive ones"
        ),
        3575 => format!(
            "Recursive Common Table Expression '{name}' can contain neither aggregation nor \
             window functions in recursive query block"
        ),
        _ => format!(
            "In recursive query block of Recursive Common Table Expression '{name}', the \
             recursive table must be referenced only once, and not in any subquery"
        ),
    };
    SqlError::new(code, "HY000", message)
}

impl Binder<'_> {
    /// Binds a reference to the recursive CTE `cte`, whose own query sees the first
    /// `visible` CTEs (rule 1).
    pub(crate) fn bind_recursive_cte(
        &mut self,
        cte: &ast::Cte,
        visible: usize,
    ) -> Result<BoundQuery, SqlError> {
        let name = cte.alias.name.value.clone();
        let q = &cte.query;
        if !matches!(q.body.as_ref(), ast::SetExpr::SetOperation { .. }) {
            // A CTE of WITH RECURSIVE that does not name itself is an ordinary one.
            let text = q.to_string();
            let names_itself = text
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
                .any(|w| w.eq_ignore_ascii_case(&name));
            if names_itself {
                return Err(shape_error(3573, &name));
            }
            let mut sub = self.child(None);
            sub.ctes.truncate(visible);
            let r = sub.query(q);
            self.adopt(sub);
            return r;
        }
        if q.with.is_some() || q.order_by.is_some() || q.limit_clause.is_some() {
            return Err(SqlError::unsupported(
                "WITH, ORDER BY or LIMIT on a recursive common table expression's UNION",
            ));
        }
        let mut flat = Vec::new();
        crate::query::flatten(&q.body, &mut flat)?;
        let renames: Vec<String> = cte
            .alias
            .columns
            .iter()
            .map(|c| c.name.value.clone())
            .collect();
        let id = NEXT_WORKING_TABLE.fetch_add(1, Ordering::Relaxed);
        let mut working: Option<WorkingRef> = None;
        let (mut seeds, mut recursive) = (Vec::new(), Vec::new());
        for (_, body) in &flat {
            let mut sub = self.child(None);
            sub.ctes.truncate(visible);
            sub.working.clone_from(&working);
            let bound = match body {
                ast::SetExpr::Select(s) => sub.select_body(s, None, None, &[]),
                ast::SetExpr::Query(inner) => sub.select(inner),
                other => Err(SqlError::unsupported(other.to_string())),
            };
            self.adopt(sub);
            let bound = bound?;
            let uses = working.as_ref().map_or(0, |w| w.uses.replace(0));
            if uses > 1 {
                return Err(shape_error(3577, &name));
            }
            if uses == 1 {
                if bound.grouped
                    || !bound.windows.is_empty()
                    || bound.distinct
                    || !bound.order_by.is_empty()
                    || bound.limit.is_some()
                {
                    return Err(shape_error(3575, &name));
                }
                recursive.push(bound);
                continue;
            }
            if !recursive.is_empty() {
                return Err(shape_error(3574, &name));
            }
            if working.is_none() {
                let names: Vec<String> = if renames.is_empty() {
                    bound.columns.iter().map(|c| c.name.clone()).collect()
                } else {
                    renames.clone()
                };
                working = Some(WorkingRef {
                    name: name.clone(),
                    table: WorkingTable {
                        id,
                        columns: bound.columns.clone(),
                        types: bound.types.clone(),
                    },
                    names,
                    uses: Rc::new(Cell::new(0)),
                });
            }
            seeds.push(bound);
        }
        let Some(first) = seeds.first() else {
            return Err(shape_error(3574, &name));
        };
        let n = first.columns.len();
        if seeds.iter().chain(&recursive).any(|p| p.columns.len() != n) {
            return Err(SqlError::new(
                1222,
                "21000",
                "The used SELECT statements have a different number of columns",
            ));
        }
        let (columns, types) = (first.columns.clone(), first.types.clone());
        if recursive.is_empty() {
            // Names itself nowhere that matters: an ordinary UNION.
            let mut sub = self.child(None);
            sub.ctes.truncate(visible);
            let r = sub.query(q);
            self.adopt(sub);
            return r;
        }
        Ok(BoundQuery::Recursive(Box::new(BoundRecursive {
            id,
            name,
            seeds,
            recursive,
            distinct: flat.iter().skip(1).any(|(d, _)| *d),
            columns,
            types,
        })))
    }

    /// The working table named `name`, if a recursive part being bound may read it: its
    /// query, its column names, and the use is counted.
    pub(crate) fn working_table(&self, name: &str) -> Option<(BoundQuery, Vec<String>)> {
        let w = self.working.as_ref()?;
        if !w.name.eq_ignore_ascii_case(name) {
            return None;
        }
        w.uses.set(w.uses.get() + 1);
        Some((
            BoundQuery::WorkingTable(Box::new(w.table.clone())),
            w.names.clone(),
        ))
    }
}

/// Runs a recursive CTE into `sink` (rules 2 and 3).
pub(crate) fn run_recursive(
    env: &QueryEnv<'_, '_>,
    r: &PlannedRecursive,
    sink: &mut dyn ResultSink,
    status: &StatementStatus,
) -> Result<(), SqlError> {
    let max = count_value(
        Some(&Expr::SysVar("cte_max_recursion_depth".into())),
        env,
        1000,
    )?;
    let mut budget = env.budget("recursive common table expression");
    let collations: Vec<Collation> = r.types.iter().map(SqlType::collation).collect();
    let mut seen = HashSet::new();
    let mut key = String::new();
    let mut all: Vec<Vec<Value>> = Vec::new();
    let mut add = |rows: Vec<Vec<Value>>, all: &mut Vec<Vec<Value>>| -> Result<(), SqlError> {
        for row in rows {
            if r.distinct {
                group_key(&row, &collations, &mut key);
                if !seen.insert(key.clone()) {
                    continue;
                }
            }
            budget.add(&row)?;
            all.push(row);
        }
        Ok(())
    };
    for s in &r.seeds {
        add(crate::query::select_rows_of(env, s)?, &mut all)?;
    }
    let mut start = 0;
    let mut iteration = 0u64;
    while start < all.len() {
        iteration += 1;
        env.set_working(r.id, Rc::new(all[start..].to_vec()));
        let added_from = all.len();
        for part in &r.recursive {
            let rows = crate::query::select_rows_of(env, part);
            add(rows?, &mut all)?;
        }
        env.set_working(r.id, Rc::new(Vec::new()));
        if all.len() > added_from && iteration > max {
            return Err(SqlError::new(
                3636,
                "HY000",
                format!(
                    "Recursive query aborted after {iteration} iterations. Try increasing \
                     @@cte_max_recursion_depth to a larger value."
                ),
            ));
        }
        start = added_from;
    }
    sink.columns(&r.columns)?;
    for row in &all {
        sink.row(row)?;
    }
    sink.end(status)
}

/// Sends a working table's current rows.
pub(crate) fn run_working_table(
    env: &QueryEnv<'_, '_>,
    w: &WorkingTable,
    sink: &mut dyn ResultSink,
    status: &StatementStatus,
) -> Result<(), SqlError> {
    let rows = env.working(w.id);
    sink.columns(&w.columns)?;
    for row in rows.iter() {
        sink.row(row)?;
    }
    sink.end(status)
}
