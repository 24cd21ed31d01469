//! Planning a multi-input FROM (from.rs): the order inputs are read in, how each later
//! input finds its rows for a row of the ones before it, and where each condition is
//! checked. A function of the bound FROM and WHERE (and plan.rs's statistics rule), tested with EXPLAIN fixtures
//! (testdata/join.test and the unit tests below).
//!
//! Rules:
//! 1. Order. With any LEFT (or RIGHT) JOIN the inputs are read in FROM order. With inner
//!    joins only, the first input is the one whose own conditions give the best access path
//!    (point get, then an index range, then any condition, then none); among equals, one
//!    that has no index on a join column goes first (so the indexed one is the inner side),
//!    then FROM order. Each next input is the first in FROM order that can be read by an
//!    index lookup from the inputs already read, else one joined to them by any condition,
//!    else the next in FROM order.
//! 2. Conditions. WHERE (and with inner joins only, ON) is split into its AND-ed parts. A
//!    part is checked at the first step where every input it reads is present. A part
//!    reading one input only becomes that input's own filter, so the input's access path
//!    (plan.rs) uses it, unless the input is the inner side of a LEFT JOIN (WHERE applies
//!    after NULL-extension: `after`). A LEFT JOIN's ON parts reading only its inner input
//!    filter that input's rows; its other ON parts decide which rows match (`on`). Parts
//!    holding a correlated subquery are checked on the finished rows (`residual`), when no
//!    cursor holds the transaction.
//! 3. Method, for each input after the first, from its equalities `inner.column =
//!    outer-column` (both integers, or strings compared in the inner column's collation):
//!    an index lookup when such equalities bind the leading columns of the inner table's
//!    primary key or a secondary index (the longest prefix wins, ties go to the primary key;
//!    a full primary key is a point get per row, done in batches), unless its own
//!    conditions already give a point get; else a hash join on all such equalities (the
//!    inner input read once, through its own access path); else a nested loop over the
//!    inner input read once.
//! 4. A parenthesized join on the inner side of a LEFT JOIN is planned on its own and read
//!    completely (`Nested`), as are derived tables.
//! 5. A FROM with a LATERAL derived table or a JSON_TABLE is read in FROM order (its outer
//!    values or its document come from the inputs before it), and that input is run for
//!    each row (`PerRow`).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use shale_table::{Collation, IndexChoice};

use crate::bind::TableRef;
use crate::expr::{CmpOp, Expr};
use crate::from::{BoundFrom, InputSource, JoinTree};
use crate::plan::{self, Access, Plan};
use crate::query::{plan_query, PlannedQuery};
use crate::types::SqlType;
use crate::walk::{and_all, columns, conjuncts, has_correlated_subquery, map_columns};

/// Where one step's rows come from.
#[derive(Debug)]
pub(crate) enum StepInput {
    /// A base table; `plan` reads it under `filter` (both in the table's own column numbers).
    Table {
        table: TableRef,
        plan: Box<Plan>,
        filter: Option<Expr>,
    },
    /// A derived table, read completely; `filter` in its own column numbers.
    Derived {
        query: Box<PlannedQuery>,
        filter: Option<Expr>,
    },
    /// A parenthesized join (rule 4), whose rows are in the combined layout.
    Nested(Box<JoinPlan>),
    /// An `information_schema` table, computed when read; `filter` in its own columns.
    Virtual {
        table: crate::info_schema::InfoTable,
        filter: Option<Expr>,
    },
    /// A LATERAL derived table (from.rs rule 7): the statement's subquery `id` with outer
    /// values `args` (over the combined row); `filter` in its own columns.
    Lateral {
        id: usize,
        args: Vec<Expr>,
        filter: Option<Expr>,
    },
    /// A JSON_TABLE (json_table.rs), computed per row from its document (over the combined
    /// row); `filter` in its own columns.
    JsonTable {
        table: Box<crate::json_table::JsonTable>,
        filter: Option<Expr>,
    },
}

/// How a step finds its rows for a row of the steps before (rule 3).
#[derive(Debug)]
pub(crate) enum Method {
    /// The first step: its rows as read.
    First,
    /// One lookup per row: `keys` (over the combined row) are equal values for the leading
    /// columns of `index`; `point`: they are the whole primary key.
    IndexLookup {
        index: IndexChoice,
        keys: Vec<Expr>,
        point: bool,
    },
    /// The inner rows are read once into a hash table on `inner_keys` (over the inner row);
    /// a row probes it with `outer_keys` (over the combined row).
    Hash {
        outer_keys: Vec<Expr>,
        inner_keys: Vec<Expr>,
        collations: Vec<Collation>,
    },
    /// The inner rows are read once; every row meets every one.
    NestedLoop,
    /// A LATERAL derived table's rows for each row (rule 5).
    PerRow,
}

/// One input of the join order.
#[derive(Debug)]
pub(crate) struct Step {
    pub name: String,
    /// Its slots in the combined row.
    pub offset: usize,
    pub width: usize,
    pub input: StepInput,
    /// LEFT JOIN: a row with no match gets NULLs here.
    pub outer: bool,
    pub method: Method,
    /// Checked on each combination of a row and an inner row (over the combined row).
    pub on: Option<Expr>,
    /// Checked on the rows this step produces, NULL-extended ones included.
    pub after: Option<Expr>,
}

/// A planned join.
#[derive(Debug)]
pub(crate) struct JoinPlan {
    pub width: usize,
    pub steps: Vec<Step>,
    /// Checked on finished rows (rule 2: correlated subqueries).
    pub residual: Option<Expr>,
    /// `alias.column` for each combined position (EXPLAIN).
    pub names: Vec<String>,
}

/// A unit of the join order before methods are chosen.
enum Unit<'a> {
    Input(usize),
    Nested(&'a JoinTree),
}

struct Item<'a> {
    unit: Unit<'a>,
    outer: bool,
    on: Vec<Expr>,
}

struct Planner<'a> {
    from: &'a BoundFrom,
}

impl Planner<'_> {
    fn input_of(&self, pos: usize) -> Option<usize> {
        self.from
            .inputs
            .iter()
            .position(|i| pos >= i.offset && pos < i.offset + i.width)
    }

    fn inputs_of(&self, e: &Expr) -> BTreeSet<usize> {
        let mut cols = Vec::new();
        columns(e, &mut cols);
        cols.into_iter().filter_map(|c| self.input_of(c)).collect()
    }

    fn unit_inputs(unit: &Unit<'_>) -> BTreeSet<usize> {
        match unit {
            Unit::Input(i) => BTreeSet::from([*i]),
            Unit::Nested(tree) => {
                let mut v = Vec::new();
                tree.inputs(&mut v);
                v.into_iter().collect()
            }
        }
    }

    /// `e` in input `i`'s own column numbers.
    fn local(&self, i: usize, e: &Expr) -> Expr {
        let offset = self.from.inputs[i].offset;
        map_columns(e, &|c| c - offset)
    }

    /// The conjuncts of `pool` that read input `i` only.
    fn own(&self, i: usize, pool: &[Expr]) -> Vec<Expr> {
        pool.iter()
            .filter(|e| !has_correlated_subquery(e) && self.inputs_of(e) == BTreeSet::from([i]))
            .map(|e| self.local(i, e))
            .collect()
    }

    /// Whether `inner` (a column of input `i`) and `other` may drive an index or hash: both
    /// integers, or strings compared in the inner column's collation.
    fn compatible(&self, inner: usize, other: &Expr, collation: Collation) -> bool {
        let Expr::Column(o) = other else {
            return false;
        };
        match (self.from.types.get(inner), self.from.types.get(*o)) {
            (Some(SqlType::Int { .. }), Some(SqlType::Int { .. })) => true,
            (Some(SqlType::Str { collation: a, .. }), Some(SqlType::Str { .. })) => *a == collation,
            _ => false,
        }
    }

    /// The equalities of `conds` between a column of `unit` and an expression over inputs
    /// in `avail`: (inner column, other side, collation).
    fn equalities(
        &self,
        unit: &BTreeSet<usize>,
        avail: &BTreeSet<usize>,
        conds: &[Expr],
    ) -> Vec<(usize, Expr, Collation)> {
        let mut out = Vec::new();
        for c in conds {
            let Expr::Cmp(CmpOp::Eq, a, b, coll) = c else {
                continue;
            };
            for (x, y) in [(a, b), (b, a)] {
                let Expr::Column(col) = x.as_ref() else {
                    continue;
                };
                let other = self.inputs_of(y);
                if self.input_of(*col).is_some_and(|i| unit.contains(&i))
                    && !other.is_empty()
                    && other.is_subset(avail)
                    && self.compatible(*col, y, *coll)
                {
                    out.push((*col, y.as_ref().clone(), *coll));
                    break;
                }
            }
        }
        out
    }

    fn table(&self, i: usize) -> Option<&TableRef> {
        match &self.from.inputs[i].source {
            InputSource::Table(t) => Some(t),
            InputSource::Derived(_)
            | InputSource::Virtual(_)
            | InputSource::Lateral { .. }
            | InputSource::JsonTable(_) => None,
        }
    }

    /// The index lookup rule 3 picks for input `i` from `eqs`: (index, keys, point).
    fn lookup(
        &self,
        i: usize,
        eqs: &[(usize, Expr, Collation)],
    ) -> Option<(IndexChoice, Vec<Expr>, bool)> {
        let t = self.table(i)?;
        let offset = self.from.inputs[i].offset;
        let def = &t.def;
        let mut candidates: Vec<(IndexChoice, &[usize])> = Vec::new();
        if !def.primary_key.columns.is_empty() {
            candidates.push((IndexChoice::Primary, &def.primary_key.columns));
        }
        for (n, idx) in def.indexes.iter().enumerate() {
            candidates.push((IndexChoice::Secondary(n), &idx.columns));
        }
        let mut best: Option<(IndexChoice, Vec<Expr>, bool)> = None;
        for (choice, cols) in candidates {
            let mut keys = Vec::new();
            for &c in cols {
                match eqs.iter().find(|(col, _, _)| *col == offset + c) {
                    Some((_, other, _)) => keys.push(other.clone()),
                    None => break,
                }
            }
            let point = choice == IndexChoice::Primary && keys.len() == cols.len();
            if !keys.is_empty() && best.as_ref().is_none_or(|(_, k, _)| keys.len() > k.len()) {
                best = Some((choice, keys, point));
            }
        }
        best
    }

    fn own_rank(&self, i: usize, pool: &[Expr]) -> u8 {
        let own = self.own(i, pool);
        match self.table(i) {
            Some(t) => {
                match plan::plan(&t.def, and_all(own.clone()).as_ref(), t.stats.as_ref()).access {
                    Access::PointGet(_) => 3,
                    Access::FullScan | Access::NoTable => u8::from(!own.is_empty()),
                    _ => 2,
                }
            }
            None => u8::from(!own.is_empty()),
        }
    }

    /// Rule 1 for inner joins only.
    fn order(&self, leaves: &[usize], pool: &[Expr]) -> Vec<usize> {
        let all: BTreeSet<usize> = leaves.iter().copied().collect();
        let indexed_join = |i: usize| {
            let others: BTreeSet<usize> = all.iter().copied().filter(|&j| j != i).collect();
            let eqs = self.equalities(&BTreeSet::from([i]), &others, pool);
            self.lookup(i, &eqs).is_some()
        };
        let Some(&first) = leaves
            .iter()
            .rev()
            .max_by_key(|&&i| (self.own_rank(i, pool), !indexed_join(i)))
        else {
            return Vec::new();
        };
        let mut order = vec![first];
        let mut avail = BTreeSet::from([first]);
        while order.len() < leaves.len() {
            let score = |r: usize| -> u8 {
                let unit = BTreeSet::from([r]);
                let eqs = self.equalities(&unit, &avail, pool);
                if self.own_rank(r, pool) == 3 || self.lookup(r, &eqs).is_some() {
                    2
                } else {
                    u8::from(pool.iter().any(|e| {
                        let ins = self.inputs_of(e);
                        ins.contains(&r) && ins.iter().any(|x| avail.contains(x))
                    }))
                }
            };
            let Some(&next) = leaves
                .iter()
                .filter(|i| !avail.contains(i))
                .rev()
                .max_by_key(|&&r| score(r))
            else {
                break;
            };
            order.push(next);
            avail.insert(next);
        }
        order
    }
}

fn linearize<'a>(tree: &'a JoinTree, items: &mut Vec<Item<'a>>, pool: &mut Vec<Expr>) {
    match tree {
        JoinTree::Input(i) => items.push(Item {
            unit: Unit::Input(*i),
            outer: false,
            on: Vec::new(),
        }),
        JoinTree::Join {
            left_outer: false,
            left,
            right,
            on,
        } => {
            linearize(left, items, pool);
            linearize(right, items, pool);
            if let Some(on) = on {
                conjuncts(on, pool);
            }
        }
        JoinTree::Join {
            left_outer: true,
            left,
            right,
            on,
        } => {
            linearize(left, items, pool);
            let mut conds = Vec::new();
            if let Some(on) = on {
                conjuncts(on, &mut conds);
            }
            items.push(Item {
                unit: match right.as_ref() {
                    JoinTree::Input(i) => Unit::Input(*i),
                    nested @ JoinTree::Join { .. } => Unit::Nested(nested),
                },
                outer: true,
                on: conds,
            });
        }
    }
}

/// Plans reading `from` under `filter` (the whole WHERE: the plan checks all of it).
pub(crate) fn plan_join(from: &BoundFrom, filter: Option<&Expr>) -> JoinPlan {
    let p = Planner { from };
    let mut pool = Vec::new();
    if let Some(f) = filter {
        conjuncts(f, &mut pool);
    }
    let mut items = Vec::new();
    linearize(&from.tree, &mut items, &mut pool);
    let lateral = from.inputs.iter().any(|i| {
        matches!(
            i.source,
            InputSource::Lateral { .. } | InputSource::JsonTable(_)
        )
    });
    if !from.tree.has_outer_join() && !lateral && items.len() > 1 {
        let leaves: Vec<usize> = items
            .iter()
            .filter_map(|it| match it.unit {
                Unit::Input(i) => Some(i),
                Unit::Nested(_) => None,
            })
            .collect();
        items = p
            .order(&leaves, &pool)
            .into_iter()
            .map(|i| Item {
                unit: Unit::Input(i),
                outer: false,
                on: Vec::new(),
            })
            .collect();
    }
    // Rule 2: place each part of the pool at its first step.
    let mut residual = Vec::new();
    let mut own: Vec<Vec<Expr>> = items.iter().map(|_| Vec::new()).collect();
    let mut on: Vec<Vec<Expr>> = items.iter().map(|_| Vec::new()).collect();
    let mut after: Vec<Vec<Expr>> = items.iter().map(|_| Vec::new()).collect();
    let units: Vec<BTreeSet<usize>> = items
        .iter()
        .map(|it| Planner::unit_inputs(&it.unit))
        .collect();
    for e in pool {
        if has_correlated_subquery(&e) {
            residual.push(e);
            continue;
        }
        let needs = p.inputs_of(&e);
        let mut avail = BTreeSet::new();
        let mut placed = false;
        for (k, it) in items.iter().enumerate() {
            avail.extend(units[k].iter().copied());
            if !needs.is_subset(&avail) {
                continue;
            }
            let single = matches!(it.unit, Unit::Input(_)) && needs.is_subset(&units[k]);
            if single && !it.outer {
                own[k].push(e.clone());
            } else if it.outer {
                after[k].push(e.clone());
            } else {
                on[k].push(e.clone());
            }
            placed = true;
            break;
        }
        if !placed {
            residual.push(e);
        }
    }
    for (k, it) in items.iter().enumerate() {
        for e in &it.on {
            let needs = p.inputs_of(e);
            if matches!(it.unit, Unit::Input(_))
                && needs.is_subset(&units[k])
                && !has_correlated_subquery(e)
            {
                own[k].push(e.clone());
            } else {
                on[k].push(e.clone());
            }
        }
    }
    let mut steps = Vec::with_capacity(items.len());
    let mut avail = BTreeSet::new();
    for (k, it) in items.iter().enumerate() {
        let (name, offset, width, input) = match it.unit {
            Unit::Input(i) => {
                let bi = &from.inputs[i];
                let filter = and_all(own[k].iter().map(|e| p.local(i, e)));
                let input = match &bi.source {
                    InputSource::Table(t) => StepInput::Table {
                        table: t.clone(),
                        plan: Box::new(plan::plan(&t.def, filter.as_ref(), t.stats.as_ref())),
                        filter,
                    },
                    InputSource::Derived(q) => StepInput::Derived {
                        query: Box::new(plan_query(crate::derived_pushdown::push_into(
                            q,
                            filter.as_ref(),
                        ))),
                        filter,
                    },
                    InputSource::Virtual(table) => StepInput::Virtual {
                        table: *table,
                        filter,
                    },
                    InputSource::Lateral { id, args } => StepInput::Lateral {
                        id: *id,
                        args: args.clone(),
                        filter,
                    },
                    InputSource::JsonTable(table) => StepInput::JsonTable {
                        table: table.clone(),
                        filter,
                    },
                };
                (bi.name.clone(), bi.offset, bi.width, input)
            }
            Unit::Nested(tree) => {
                let sub = BoundFrom {
                    inputs: from.inputs.clone(),
                    tree: tree.clone(),
                    types: from.types.clone(),
                    names: from.names.clone(),
                };
                let nested = plan_join(&sub, None);
                let lo = units[k]
                    .iter()
                    .map(|&i| from.inputs[i].offset)
                    .min()
                    .unwrap_or(0);
                let hi = units[k]
                    .iter()
                    .map(|&i| from.inputs[i].offset + from.inputs[i].width)
                    .max()
                    .unwrap_or(0);
                let name = units[k]
                    .iter()
                    .map(|&i| from.inputs[i].name.clone())
                    .collect::<Vec<_>>()
                    .join(", ");
                (
                    format!("({name})"),
                    lo,
                    hi - lo,
                    StepInput::Nested(Box::new(nested)),
                )
            }
        };
        let method = if k == 0 {
            Method::First
        } else if matches!(
            input,
            StepInput::Lateral { .. } | StepInput::JsonTable { .. }
        ) {
            Method::PerRow
        } else {
            let eqs = p.equalities(&units[k], &avail, &on[k]);
            let own_point = matches!(
                &input,
                StepInput::Table { plan, .. } if matches!(plan.access, Access::PointGet(_))
            );
            let lookup = match it.unit {
                Unit::Input(i) if !own_point => p.lookup(i, &eqs),
                _ => None,
            };
            match lookup {
                Some((index, keys, point)) => Method::IndexLookup { index, keys, point },
                None if !eqs.is_empty() => Method::Hash {
                    outer_keys: eqs.iter().map(|(_, o, _)| o.clone()).collect(),
                    inner_keys: eqs
                        .iter()
                        .map(|(c, _, _)| Expr::Column(c - offset))
                        .collect(),
                    collations: eqs.iter().map(|(_, _, c)| *c).collect(),
                },
                None => Method::NestedLoop,
            }
        };
        avail.extend(units[k].iter().copied());
        steps.push(Step {
            name,
            offset,
            width,
            input,
            outer: it.outer,
            method,
            on: and_all(on[k].clone()),
            after: and_all(after[k].clone()),
        });
    }
    JoinPlan {
        width: from.width(),
        steps,
        residual: and_all(residual),
        names: from.names.clone(),
    }
}

/// EXPLAIN's lines for a join: one per step, then the residual.
pub(crate) fn explain(plan: &JoinPlan, lines: &mut Vec<String>, indent: &str) {
    let name = |c: usize| {
        plan.names
            .get(c)
            .cloned()
            .unwrap_or_else(|| format!("#{c}"))
    };
    let render = |e: &Expr| plan::render_named(e, &name);
    for (k, step) in plan.steps.iter().enumerate() {
        let access = match &step.input {
            StepInput::Table { table, plan, .. } => plan::explain(Some(&table.def), plan),
            StepInput::Derived { filter, .. }
            | StepInput::Virtual { filter, .. }
            | StepInput::Lateral { filter, .. } => {
                let kind = match step.input {
                    StepInput::Virtual { .. } => "information_schema",
                    StepInput::Lateral { .. } => "lateral derived",
                    _ => "derived",
                };
                let mut t = format!("{kind} {}", step.name);
                if let Some(f) = filter {
                    let local = |c: usize| name(c + step.offset);
                    let _ = write!(t, " filter {}", plan::render_named(f, &local));
                }
                t
            }
            StepInput::JsonTable { table, filter } => {
                let mut t = format!(
                    "json_table {} ({}) {}",
                    step.name,
                    render(&table.doc),
                    table.describe()
                );
                if let Some(f) = filter {
                    let local = |c: usize| name(c + step.offset);
                    let _ = write!(t, " filter {}", plan::render_named(f, &local));
                }
                t
            }
            StepInput::Nested(_) => format!("nested join {}", step.name),
        };
        let mut line = if k == 0 {
            access
        } else {
            let kind = if step.outer { "left join" } else { "join" };
            let method = match &step.method {
                Method::First | Method::NestedLoop => "nested loop".to_string(),
                Method::PerRow => "per row".to_string(),
                Method::IndexLookup { index, keys, point } => {
                    let (iname, cols) = match (&step.input, index) {
                        (StepInput::Table { table, .. }, IndexChoice::Primary) => {
                            ("PRIMARY".to_string(), table.def.primary_key.columns.clone())
                        }
                        (StepInput::Table { table, .. }, IndexChoice::Secondary(i)) => table
                            .def
                            .indexes
                            .get(*i)
                            .map_or(("?".to_string(), Vec::new()), |ix| {
                                (ix.name.clone(), ix.columns.clone())
                            }),
                        _ => ("?".to_string(), Vec::new()),
                    };
                    let parts: Vec<String> = cols
                        .iter()
                        .zip(keys)
                        .map(|(&c, k)| format!("{} = {}", name(step.offset + c), render(k)))
                        .collect();
                    format!(
                        "{} {}.{iname} ({})",
                        if *point {
                            "point lookup"
                        } else {
                            "index lookup"
                        },
                        step.name,
                        parts.join(", ")
                    )
                }
                Method::Hash {
                    outer_keys,
                    inner_keys,
                    ..
                } => {
                    let parts: Vec<String> = inner_keys
                        .iter()
                        .zip(outer_keys)
                        .map(|(i, o)| {
                            let local = |c: usize| name(c + step.offset);
                            format!("{} = {}", plan::render_named(i, &local), render(o))
                        })
                        .collect();
                    format!("hash join ({})", parts.join(", "))
                }
            };
            match (&step.method, &step.input) {
                (Method::IndexLookup { .. }, StepInput::Table { filter, table, .. }) => {
                    match filter {
                        Some(f) => format!(
                            "{kind} {method} filter {}",
                            plan::render(f, Some(&table.def))
                        ),
                        None => format!("{kind} {method}"),
                    }
                }
                _ => format!("{kind} {method} over {access}"),
            }
        };
        if let Some(on) = &step.on {
            let _ = write!(line, " on {}", render(on));
        }
        if let Some(after) = &step.after {
            let _ = write!(line, " then {}", render(after));
        }
        lines.push(format!("{indent}{line}"));
        match &step.input {
            StepInput::Nested(nested) => explain(nested, lines, &format!("{indent}  ")),
            StepInput::Derived { query, .. } => {
                crate::query::explain_query(query, lines, &format!("{indent}  "));
            }
            StepInput::Table { .. }
            | StepInput::Virtual { .. }
            | StepInput::Lateral { .. }
            | StepInput::JsonTable { .. } => {}
        }
    }
    if let Some(r) = &plan.residual {
        lines.push(format!("{indent}filter {}", render(r)));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use shale_table::{ColumnDef, ColumnType, IndexDef, TableDef, Value};

    use super::*;
    use crate::from::BoundInput;

    fn table(name: &str, index_on_second: bool) -> TableRef {
        let col = |n: &str| ColumnDef {
            name: n.into(),
            ty: ColumnType::Int { unsigned: false },
            nullable: n != "id",
            default: None,
            auto_increment: false,
            auto_timestamp: shale_table::AutoTimestamp::default(),
            generated: None,
        };
        TableRef {
            def: Arc::new(TableDef {
                database: "d".into(),
                name: name.into(),
                columns: vec![col("id"), col("x")],
                primary_key: IndexDef {
                    name: "PRIMARY".into(),
                    columns: vec![0],
                    unique: true,
                    index_id: 1,
                },
                indexes: if index_on_second {
                    vec![IndexDef {
                        name: "by_x".into(),
                        columns: vec![1],
                        unique: false,
                        index_id: 2,
                    }]
                } else {
                    Vec::new()
                },
                schema_version: 1,
                past_versions: Vec::new(),
            }),
            database: "d".into(),
            alias: name.into(),
            stats: None,
        }
    }

    /// `p` (id, x) and `q` (id, x with index by_x) side by side: p.id 0, p.x 1, q.id 2, q.x 3.
    fn from(left_outer: bool, on: Option<Expr>) -> BoundFrom {
        let (p, q) = (table("p", false), table("q", true));
        let int = SqlType::Int {
            unsigned: false,
            len: 11,
        };
        BoundFrom {
            inputs: vec![
                BoundInput {
                    source: InputSource::Table(p),
                    name: "p".into(),
                    offset: 0,
                    width: 2,
                },
                BoundInput {
                    source: InputSource::Table(q),
                    name: "q".into(),
                    offset: 2,
                    width: 2,
                },
            ],
            tree: JoinTree::Join {
                left_outer,
                left: Box::new(JoinTree::Input(0)),
                right: Box::new(JoinTree::Input(1)),
                on,
            },
            types: vec![int; 4],
            names: vec!["p.id".into(), "p.x".into(), "q.id".into(), "q.x".into()],
        }
    }

    fn cmp(op: CmpOp, a: Expr, b: Expr) -> Expr {
        Expr::Cmp(op, a.boxed(), b.boxed(), Collation::Utf8mb4GeneralCi)
    }

    fn explained(from: &BoundFrom, filter: Option<&Expr>) -> String {
        let mut lines = Vec::new();
        explain(&plan_join(from, filter), &mut lines, "");
        lines.join("\n")
    }

    /// Rules 1-3 without a store: FROM and WHERE in, EXPLAIN out.
    #[test]
    fn orders_methods_and_placement() {
        let c = Expr::Column;
        let lit = |i: i64| Expr::Literal(Value::Int(i));
        // The side with an index on the join column is the inner side, whatever FROM says.
        let eq = cmp(CmpOp::Eq, c(3), c(1));
        assert_eq!(
            explained(&from(false, Some(eq.clone())), None),
            "full scan p\njoin index lookup q.by_x (q.x = p.x) on q.x = p.x"
        );
        // A constant point get goes first; the other side is then looked up by its key.
        let by_id = cmp(CmpOp::Eq, c(2), c(1));
        let point = cmp(CmpOp::Eq, c(2), lit(5));
        let both = Expr::And(by_id.boxed(), point.boxed());
        assert_eq!(
            explained(&from(false, None), Some(&both)),
            "point get q.PRIMARY (id = 5)\njoin hash join (p.x = q.id) over full scan p on q.id = p.x"
        );
        // LEFT JOIN keeps FROM order; WHERE on the inner side applies after NULL-extension.
        let null = Expr::IsNull(c(2).boxed(), false);
        assert_eq!(
            explained(&from(true, Some(eq)), Some(&null)),
            "full scan p\nleft join index lookup q.by_x (q.x = p.x) on q.x = p.x then q.id IS NULL"
        );
        // No equality: a nested loop.
        let lt = cmp(CmpOp::Lt, c(1), c(3));
        assert_eq!(
            explained(&from(false, Some(lt)), None),
            "full scan p\njoin nested loop over full scan q on p.x < q.x"
        );
    }
}
