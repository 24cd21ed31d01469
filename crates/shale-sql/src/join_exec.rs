//! Running a join plan (join.rs): the first step's rows are read completely, then go
//! through the later steps in batches, each row meeting the inner rows its step's method
//! finds. The transaction is borrowed for each read only, never while a condition is
//! evaluated, so a correlated subquery in a condition can read through it.
//!
//! Memory: the first step's rows, each batch's rows, every hash table and inner input read
//! once, and the finished rows count against `shale_query_memory` (query.rs); past it the
//! statement fails with 3170. Nothing spills to disk.

use std::collections::HashMap;

use shale_table::{IndexChoice, KeyRange, LockMode, Value};

use crate::error::SqlError;
use crate::exec::{self, group_key, key_value, passes, KeyValue};
use crate::expr::Expr;
use crate::join::{JoinPlan, Method, Step, StepInput};
use crate::query::{MemoryBudget, QueryEnv};

type Row = Vec<Value>;

/// Rows of the first step processed through the later steps at a time.
const BATCH: usize = 1024;

/// What a step keeps between batches: its inner rows read once, and their hash table.
#[derive(Default)]
struct StepState {
    rows: Option<Vec<Row>>,
    hash: HashMap<String, Vec<usize>>,
}

/// The rows of `input` in its own column layout, passing its own filter.
fn read_input(
    env: &QueryEnv<'_, '_>,
    step: &Step,
    lock: LockMode,
    budget: &mut MemoryBudget,
) -> Result<Vec<Row>, SqlError> {
    let mut out = Vec::new();
    match &step.input {
        StepInput::Table {
            table,
            plan,
            filter,
        } => {
            let mut guard = env.txn()?;
            let (mut src, exact) =
                exec::open_source(&mut guard, Some(&table.def), &plan.access, env, lock, false)?;
            let f = if exact {
                plan.residual.as_ref()
            } else {
                filter.as_ref()
            };
            while let Some(r) = src.next_row()? {
                if passes(f, &r, env)? {
                    budget.add(&r)?;
                    out.push(r);
                }
            }
        }
        StepInput::Derived { query, filter } => {
            for r in crate::query::query_rows(env, query, None)? {
                if passes(filter.as_ref(), &r, env)? {
                    budget.add(&r)?;
                    out.push(r);
                }
            }
        }
        StepInput::Virtual { table, filter } => {
            let store = env.txn()?.store();
            let sessions = crate::expr::Env::sessions_view(env);
            for r in crate::info_schema::rows(*table, &store, sessions.as_ref())? {
                if passes(filter.as_ref(), &r, env)? {
                    budget.add(&r)?;
                    out.push(r);
                }
            }
        }
        StepInput::Lateral { id, args, filter } => {
            // The first input: nothing before it, so its outer values read no row.
            for r in lateral_rows(env, *id, args, filter.as_ref(), &[])? {
                budget.add(&r)?;
                out.push(r);
            }
        }
        StepInput::JsonTable { table, filter } => {
            // The first input: its document reads no row.
            for r in json_table_rows(env, table, filter.as_ref(), &[])? {
                budget.add(&r)?;
                out.push(r);
            }
        }
        StepInput::Nested(nested) => {
            for r in run_join(env, nested, lock, None)? {
                let part: Row = r
                    .get(step.offset..step.offset + step.width)
                    .map(<[Value]>::to_vec)
                    .unwrap_or_default();
                budget.add(&part)?;
                out.push(part);
            }
        }
    }
    Ok(out)
}

/// Runs `plan`: every finished row (in the combined layout), at most `limit` of them.
pub(crate) fn run_join(
    env: &QueryEnv<'_, '_>,
    plan: &JoinPlan,
    lock: LockMode,
    limit: Option<u64>,
) -> Result<Vec<Row>, SqlError> {
    let mut budget = env.budget("join result");
    let Some(first) = plan.steps.first() else {
        return Ok(Vec::new());
    };
    let mut first_budget = env.budget("first table of a join");
    let mut driving = Vec::new();
    for local in read_input(env, first, lock, &mut first_budget)? {
        let mut row = vec![Value::Null; plan.width];
        place(&mut row, first.offset, local);
        if passes(first.on.as_ref(), &row, env)? && passes(first.after.as_ref(), &row, env)? {
            driving.push(row);
        }
    }
    let mut states: Vec<StepState> = plan.steps.iter().map(|_| StepState::default()).collect();
    let mut out = Vec::new();
    let limit = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    let mut rest = driving.into_iter();
    while out.len() < limit {
        let mut rows: Vec<Row> = rest.by_ref().take(BATCH).collect();
        if rows.is_empty() {
            break;
        }
        for (step, state) in plan.steps.iter().zip(states.iter_mut()).skip(1) {
            rows = apply_step(env, step, state, rows, lock)?;
            if rows.is_empty() {
                break;
            }
        }
        for row in rows {
            if out.len() >= limit {
                break;
            }
            if passes(plan.residual.as_ref(), &row, env)? {
                budget.add(&row)?;
                out.push(row);
            }
        }
    }
    Ok(out)
}

fn place(row: &mut [Value], offset: usize, local: Row) {
    for (slot, v) in row.iter_mut().skip(offset).zip(local) {
        *slot = v;
    }
}

/// The inner rows of a lookup for one row (own filter applied).
fn lookup(
    env: &QueryEnv<'_, '_>,
    step: &Step,
    index: IndexChoice,
    keys: &[Expr],
    point: bool,
    row: &[Value],
    lock: LockMode,
) -> Result<Vec<Row>, SqlError> {
    let StepInput::Table { table, filter, .. } = &step.input else {
        return Err(SqlError::internal("index lookup on a derived table"));
    };
    let def = &table.def;
    let cols = exec::index_columns(def, index);
    let mut key = Vec::with_capacity(keys.len());
    let mut whole = false;
    for (e, &c) in keys.iter().zip(cols) {
        match key_value(&def.columns[c].ty, e.eval(row, env)?, None) {
            KeyValue::Exact(v) | KeyValue::Widened(v) => key.push(v),
            KeyValue::Nothing => return Ok(Vec::new()),
            // Cannot be encoded: read everything and let the conditions decide.
            KeyValue::Unbounded => {
                whole = true;
                break;
            }
        }
    }
    let mut found = Vec::new();
    {
        let mut guard = env.txn()?;
        if point && !whole {
            if let Some(r) = guard.get(def, &key, lock)? {
                found.push(r);
            }
        } else {
            let (index, range) = if whole {
                (IndexChoice::Primary, KeyRange::all())
            } else {
                (index, KeyRange::prefix(key))
            };
            let mut cursor = guard.scan(def, index, range, false, lock)?;
            while let Some(r) = cursor.next_row()? {
                crate::interrupt::row()?;
                found.push(r);
            }
        }
    }
    let mut out = Vec::with_capacity(found.len());
    for r in found {
        if passes(filter.as_ref(), &r, env)? {
            out.push(r);
        }
    }
    Ok(out)
}

/// A LATERAL derived table's rows for `row` (join.rs rule 5), its own filter applied.
fn lateral_rows(
    env: &QueryEnv<'_, '_>,
    id: usize,
    args: &[Expr],
    filter: Option<&Expr>,
    row: &[Value],
) -> Result<Vec<Row>, SqlError> {
    let mut outer = Vec::with_capacity(args.len());
    for a in args {
        outer.push(a.eval(row, env)?);
    }
    let rows = crate::expr::Env::subquery(env, id, &outer)?;
    let mut out = Vec::new();
    for r in &rows.rows {
        if passes(filter, r, env)? {
            out.push(r.clone());
        }
    }
    Ok(out)
}

/// A JSON_TABLE's rows for `row` (join.rs rule 5), its own filter applied.
fn json_table_rows(
    env: &QueryEnv<'_, '_>,
    table: &crate::json_table::JsonTable,
    filter: Option<&Expr>,
    row: &[Value],
) -> Result<Vec<Row>, SqlError> {
    let doc = table.doc.eval(row, env)?;
    let mut out = Vec::new();
    for r in table.rows(&doc)? {
        crate::interrupt::row()?;
        if passes(filter, &r, env)? {
            out.push(r);
        }
    }
    Ok(out)
}

/// One step over a batch of rows.
fn apply_step(
    env: &QueryEnv<'_, '_>,
    step: &Step,
    state: &mut StepState,
    rows: Vec<Row>,
    lock: LockMode,
) -> Result<Vec<Row>, SqlError> {
    if state.rows.is_none() && matches!(step.method, Method::Hash { .. } | Method::NestedLoop) {
        let mut budget = env.budget("hash join build side");
        let inner = read_input(env, step, lock, &mut budget)?;
        if let Method::Hash {
            inner_keys,
            collations,
            ..
        } = &step.method
        {
            let mut key = String::new();
            let mut vals = Vec::with_capacity(inner_keys.len());
            for (i, r) in inner.iter().enumerate() {
                vals.clear();
                for k in inner_keys {
                    vals.push(k.eval(r, env)?);
                }
                if vals.iter().any(|v| matches!(v, Value::Null)) {
                    continue;
                }
                group_key(&vals, collations, &mut key);
                state.hash.entry(key.clone()).or_default().push(i);
            }
        }
        state.rows = Some(inner);
    }
    // Point lookups: each distinct key of the batch is read once.
    let mut point_cache: HashMap<String, Vec<Row>> = HashMap::new();
    let mut budget = env.budget("join batch");
    let mut out = Vec::new();
    let mut key = String::new();
    let mut vals = Vec::new();
    for row in rows {
        let looked_up: Vec<Row>;
        let candidates: Vec<&Row> = match &step.method {
            Method::First => Vec::new(),
            Method::IndexLookup { index, keys, point } => {
                vals.clear();
                for k in keys {
                    vals.push(k.eval(&row, env)?);
                }
                if *point {
                    group_key(&vals, &[], &mut key);
                    if !point_cache.contains_key(&key) {
                        let found = lookup(env, step, *index, keys, true, &row, lock)?;
                        point_cache.insert(key.clone(), found);
                    }
                    looked_up = point_cache.get(&key).cloned().unwrap_or_default();
                } else {
                    looked_up = lookup(env, step, *index, keys, false, &row, lock)?;
                }
                looked_up.iter().collect()
            }
            Method::Hash {
                outer_keys,
                collations,
                ..
            } => {
                vals.clear();
                for k in outer_keys {
                    vals.push(k.eval(&row, env)?);
                }
                if vals.iter().any(|v| matches!(v, Value::Null)) {
                    Vec::new()
                } else {
                    group_key(&vals, collations, &mut key);
                    let inner = state.rows.as_deref().unwrap_or_default();
                    state
                        .hash
                        .get(&key)
                        .map(|ix| ix.iter().filter_map(|&i| inner.get(i)).collect())
                        .unwrap_or_default()
                }
            }
            Method::NestedLoop => state.rows.as_deref().unwrap_or_default().iter().collect(),
            Method::PerRow => {
                looked_up = match &step.input {
                    StepInput::Lateral { id, args, filter } => {
                        lateral_rows(env, *id, args, filter.as_ref(), &row)?
                    }
                    StepInput::JsonTable { table, filter } => {
                        json_table_rows(env, table, filter.as_ref(), &row)?
                    }
                    _ => return Err(SqlError::internal("per-row method without a lateral input")),
                };
                looked_up.iter().collect()
            }
        };
        let mut matched = false;
        for cand in candidates {
            let mut joined = row.clone();
            place(&mut joined, step.offset, cand.clone());
            if passes(step.on.as_ref(), &joined, env)? {
                matched = true;
                if passes(step.after.as_ref(), &joined, env)? {
                    budget.add(&joined)?;
                    out.push(joined);
                }
            }
        }
        if step.outer && !matched && passes(step.after.as_ref(), &row, env)? {
            budget.add(&row)?;
            out.push(row);
        }
    }
    Ok(out)
}
