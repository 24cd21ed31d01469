//! Aggregates that collect their group's values: GROUP_CONCAT, JSON_ARRAYAGG and
//! JSON_OBJECTAGG. Binding (names, the GROUP_CONCAT clauses, result types) and the running
//! state; exec.rs's grouping calls [`accumulate`] and [`finish`] for them.
//!
//! Rules (MySQL 8's):
//! 1. `GROUP_CONCAT([DISTINCT] e1 [, e2 ...] [ORDER BY k [ASC|DESC], ...] [SEPARATOR 's'])`
//!    joins, per row, the text of `e1 e2 ...` (no separator between them), skipping rows
//!    where any of them is NULL; rows are joined with the separator (default `,`) in ORDER
//!    BY order (else in the order they came). DISTINCT drops repeated tuples (compared in
//!    each expression's collation). NULL when no row is left.
//! 2. The result is cut to `group_concat_max_len` bytes (default 1024), at a character
//!    boundary for text, with warning 1260 `Row N was cut by GROUP_CONCAT()`, N the
//!    position in its group of the row whose value crossed the limit.
//! 3. JSON_ARRAYAGG(e) is a JSON array of every row's value, SQL NULL as JSON null, NULL for
//!    no row. JSON_OBJECTAGG(k, v) is an object of every row's pair, the last value of a
//!    repeated key winning; a NULL key is 3158.
//! 4. What a group collects counts against `shale_query_memory` (3170 past it), as every
//!    collection of rows does (query.rs invariant 3).
//! 5. None of them works as a window function yet (1235).

use std::cmp::Ordering;
use std::collections::HashSet;

use shale_table::{Collation, Value};
use sqlparser::ast;

use crate::bind::{pick_collation, AggFunc, AggSpec, Binder};
use crate::error::SqlError;
use crate::expr::{Env, Expr};
use crate::json_funcs::JsonFunc;
use crate::query::MemoryBudget;
use crate::types::SqlType;
use crate::value;

/// What a collecting aggregate has besides its first argument.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Collect {
    /// GROUP_CONCAT's expressions after the first; JSON_OBJECTAGG's value.
    pub more: Vec<Expr>,
    /// The collation of each argument (the first one included), for DISTINCT.
    pub collations: Vec<Collation>,
    /// GROUP_CONCAT's ORDER BY: the key, descending, its collation.
    pub order: Vec<(Expr, bool, Collation)>,
    pub separator: Vec<u8>,
}

/// A group's collected rows.
#[derive(Debug, Clone)]
pub(crate) struct Collected {
    /// Each row's sort keys and values.
    rows: Vec<(Vec<Value>, Vec<Value>)>,
    /// DISTINCT: the tuples seen.
    seen: HashSet<String>,
    /// Rule 4's budget and rule 2's limit, read from the session when the first row arrives.
    limits: Option<(MemoryBudget, usize)>,
}

impl Collected {
    pub(crate) fn new() -> Collected {
        Collected {
            rows: Vec::new(),
            seen: HashSet::new(),
            limits: None,
        }
    }
}

/// The aggregate `name` names, if it is one of this module's.
pub(crate) fn func_of(name: &str) -> Option<AggFunc> {
    match name {
        "GROUP_CONCAT" => Some(AggFunc::GroupConcat),
        "JSON_ARRAYAGG" => Some(AggFunc::JsonArrayAgg),
        "JSON_OBJECTAGG" => Some(AggFunc::JsonObjectAgg),
        _ => None,
    }
}

fn wrong_count(name: &str) -> SqlError {
    SqlError::new(
        1582,
        "42000",
        format!("Incorrect parameter count in the call to native function '{name}'"),
    )
}

impl Binder<'_> {
    /// Binds a call of GROUP_CONCAT, JSON_ARRAYAGG or JSON_OBJECTAGG.
    pub(crate) fn collecting_aggregate(
        &mut self,
        f: &ast::Function,
        func: AggFunc,
        name: &str,
    ) -> Result<(Expr, SqlType), SqlError> {
        let ast::FunctionArguments::List(list) = &f.args else {
            return Err(wrong_count(name));
        };
        let distinct = matches!(
            list.duplicate_treatment,
            Some(ast::DuplicateTreatment::Distinct)
        );
        let mut args = Vec::with_capacity(list.args.len());
        for a in &list.args {
            match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => args.push(e),
                _ => return Err(SqlError::syntax(&f.to_string(), 1)),
            }
        }
        let mut order_by: &[ast::OrderByExpr] = &[];
        let mut separator = b",".to_vec();
        for clause in &list.clauses {
            match clause {
                ast::FunctionArgumentClause::OrderBy(keys) if func == AggFunc::GroupConcat => {
                    order_by = keys;
                }
                ast::FunctionArgumentClause::Separator(s) if func == AggFunc::GroupConcat => {
                    separator = match &s.value {
                        ast::Value::SingleQuotedString(t) | ast::Value::DoubleQuotedString(t) => {
                            t.as_bytes().to_vec()
                        }
                        _ => return Err(SqlError::syntax(&s.to_string(), 1)),
                    };
                }
                _ => return Err(SqlError::syntax(&f.to_string(), 1)),
            }
        }
        let arity_ok = match func {
            AggFunc::GroupConcat => !args.is_empty(),
            AggFunc::JsonArrayAgg => args.len() == 1 && !distinct,
            _ => args.len() == 2 && !distinct,
        };
        if !arity_ok {
            return Err(if distinct {
                SqlError::syntax(&f.to_string(), 1)
            } else {
                wrong_count(name)
            });
        }
        let mut bound = Vec::with_capacity(args.len());
        for a in &args {
            bound.push(self.aggregate_argument(a)?);
        }
        let mut order = Vec::with_capacity(order_by.len());
        for key in order_by {
            let (e, t) = self.aggregate_argument(&key.expr)?;
            order.push((
                e,
                matches!(key.options.sort, Some(ast::OrderBySort::Desc)),
                t.collation(),
            ));
        }
        let collations: Vec<Collation> = bound.iter().map(|(_, t)| t.collation()).collect();
        let result_type = match func {
            AggFunc::GroupConcat => {
                let types: Vec<&SqlType> = bound.iter().map(|(_, t)| t).collect();
                let collation = if types.iter().any(|t| t.collation() == Collation::Binary) {
                    Collation::Binary
                } else {
                    pick_collation(&types)
                };
                SqlType::Str {
                    collation,
                    len: 1024,
                }
            }
            _ => SqlType::Json,
        };
        let mut exprs = bound
            .into_iter()
            .zip(&args)
            .enumerate()
            .map(|(i, ((e, t), arg))| match (func, i) {
                // Rule 3: the values as JSON; JSON_OBJECTAGG's key as text.
                (AggFunc::JsonArrayAgg, 0) | (AggFunc::JsonObjectAgg, 1) => {
                    crate::json_bind::as_json_argument(arg, e, &t)
                }
                _ => e,
            });
        let first = exprs.next();
        let more: Vec<Expr> = exprs.collect();
        let spec = AggSpec {
            func,
            arg: first,
            distinct,
            arg_type: SqlType::Null,
            collect: Some(Box::new(Collect {
                more,
                collations,
                order,
                separator,
            })),
        };
        self.register_aggregate(spec, result_type)
    }
}

/// Adds one row to a group's state (rules 1, 3 and 4).
pub(crate) fn accumulate(
    spec: &AggSpec,
    collect: &Collect,
    state: &mut Collected,
    row: &[Value],
    env: &dyn Env,
) -> Result<(), SqlError> {
    let mut values = Vec::with_capacity(1 + collect.more.len());
    if let Some(first) = &spec.arg {
        values.push(first.eval(row, env)?);
    }
    for e in &collect.more {
        values.push(e.eval(row, env)?);
    }
    match spec.func {
        AggFunc::GroupConcat => {
            if values.iter().any(|v| matches!(v, Value::Null)) {
                return Ok(());
            }
            if spec.distinct {
                let mut key = String::new();
                crate::exec::group_key(&values, &collect.collations, &mut key);
                if !state.seen.insert(key) {
                    return Ok(());
                }
            }
        }
        AggFunc::JsonObjectAgg if matches!(values.first(), Some(Value::Null)) => {
            return Err(SqlError::new(
                3158,
                "22032",
                "JSON documents may not contain NULL member names.",
            ));
        }
        _ => {}
    }
    let mut keys = Vec::with_capacity(collect.order.len());
    for (e, _, _) in &collect.order {
        keys.push(e.eval(row, env)?);
    }
    let (budget, _) = match &mut state.limits {
        Some(limits) => limits,
        None => {
            let setting = |name: &str, default: u64| {
                crate::exec::count_value(Some(&Expr::SysVar(name.into())), env, default)
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
            };
            let memory =
                MemoryBudget::new(setting("shale_query_memory", 268_435_456)?, what(spec.func));
            state
                .limits
                .insert((memory, setting("group_concat_max_len", 1024)?))
        }
    };
    budget.add(&values)?;
    budget.add(&keys)?;
    state.rows.push((keys, values));
    Ok(())
}

fn what(func: AggFunc) -> &'static str {
    match func {
        AggFunc::GroupConcat => "GROUP_CONCAT's rows",
        AggFunc::JsonArrayAgg => "JSON_ARRAYAGG's values",
        _ => "JSON_OBJECTAGG's members",
    }
}

/// The group's value (rules 1 to 3).
pub(crate) fn finish(
    spec: &AggSpec,
    collect: &Collect,
    mut state: Collected,
    env: &dyn Env,
) -> Result<Value, SqlError> {
    let Some((_, max_len)) = state.limits else {
        return Ok(Value::Null);
    };
    if state.rows.is_empty() {
        return Ok(Value::Null);
    }
    match spec.func {
        AggFunc::GroupConcat => {
            if !collect.order.is_empty() {
                state.rows.sort_by(|a, b| {
                    for (i, (_, desc, collation)) in collect.order.iter().enumerate() {
                        let o = crate::value::sort_compare(&a.0[i], &b.0[i], *collation);
                        let o = if *desc { o.reverse() } else { o };
                        if o != Ordering::Equal {
                            return o;
                        }
                    }
                    Ordering::Equal
                });
            }
            let mut out = Vec::new();
            for (i, (_, values)) in state.rows.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(&collect.separator);
                }
                for v in values {
                    match v {
                        Value::Bytes(b) => out.extend_from_slice(b),
                        v => out.extend_from_slice(value::display(v).as_bytes()),
                    }
                }
                if out.len() > max_len {
                    env.warn(1260, format!("Row {} was cut by GROUP_CONCAT()", i + 1));
                    break;
                }
            }
            Ok(Value::Bytes(cut(out, max_len)))
        }
        AggFunc::JsonArrayAgg => {
            let values: Vec<Value> = state.rows.into_iter().flat_map(|(_, v)| v).collect();
            crate::json_funcs::eval(JsonFunc::Array, &values)
        }
        _ => {
            let pairs: Vec<Value> = state.rows.into_iter().flat_map(|(_, v)| v).collect();
            crate::json_funcs::eval(JsonFunc::Object, &pairs)
        }
    }
}

/// `out` cut to `max_len` bytes, backing off to a UTF-8 character boundary when it is text.
fn cut(mut out: Vec<u8>, max_len: usize) -> Vec<u8> {
    if out.len() <= max_len {
        return out;
    }
    let mut end = max_len;
    if std::str::from_utf8(&out).is_ok() {
        while end > 0 && (out[end] & 0b1100_0000) == 0b1000_0000 {
            end -= 1;
        }
    }
    out.truncate(end);
    out
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn cutting_keeps_whole_characters() {
        assert_eq!(cut(b"abcdef".to_vec(), 4), b"abcd");
        assert_eq!(cut("aé".as_bytes().to_vec(), 2), b"a");
        assert_eq!(cut("aé".as_bytes().to_vec(), 3), "aé".as_bytes());
        assert_eq!(cut(vec![0x61, 0xC3, 0xA9, 0xFF], 2), vec![0x61, 0xC3]);
    }
}
