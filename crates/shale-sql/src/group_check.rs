//! ONLY_FULL_GROUP_BY: refusing a grouped SELECT whose result could depend on which row of a
//! group is read (MySQL 8's "MySQL Handling of GROUP BY").
//!
//! The check runs on the bound SELECT, where every column is a position in the row the
//! query's expressions read (bind.rs rule 2: the row of a group is its first row followed by
//! the aggregates, at `width + n`).
//!
//! Rules:
//! 1. An expression is accepted when it equals a GROUP BY expression (`GROUP BY a + 1`
//!    allows `a + 1` and `(a + 1) * 2`), is an aggregate, a constant, a parameter, an outer
//!    reference (constant for this query), `ANY_VALUE(x)`, or when every column it reads is
//!    functionally dependent on the GROUP BY columns (rule 2). A subquery's correlation
//!    values are expressions of this query's row and are checked like any other.
//! 2. Functional dependence, built to a fixed point from the GROUP BY columns (none without
//!    GROUP BY; none beyond them WITH ROLLUP, whose super-aggregate rows hold NULL for
//!    them, as MySQL's):
//!    - a base table's every column, once all columns of its PRIMARY KEY, or of a UNIQUE key
//!      whose columns are NOT NULL (or known non-NULL by an equality below), are dependent;
//!    - `x = y` and `x = constant` in the AND-ed parts of WHERE and of the ON of inner joins
//!      that no outer join is above: y (or x) becomes dependent (and known non-NULL).
//!    - a derived table's (or view's) every column, once all columns of one of its keys are
//!      dependent (MySQL 8's "functional dependencies derived from views"). Its keys: the
//!      result columns that are its GROUP BY expressions, when each of them is one (not
//!      WITH ROLLUP, whose super-aggregate rows repeat them); or, for
//!      a SELECT that does not group (DISTINCT keeps keys), the result columns that are
//!      plain references to a key of every table it reads (the PRIMARY KEY, or a UNIQUE key
//!      of NOT NULL columns; a derived table's own keys likewise), when all are selected.
//! 3. What is checked, in MySQL's order: the select list ("SELECT list", numbered by
//!    position), then with GROUP BY the ORDER BY keys that are not select-list expressions
//!    ("ORDER BY clause", numbered by key), then HAVING ("HAVING clause", numbered 1). A
//!    query aggregated without GROUP BY returns one row, so its ORDER BY is not checked.
//!    The first failure is 1055 (with GROUP BY) or 1140 (aggregates without it), in MySQL
//!    8's wording, naming the column as `db.alias.column` (`alias.column` for a derived
//!    table).
//! 4. SELECT DISTINCT with ORDER BY: a key that is not a select-list expression may read
//!    only columns the select list has as such (MySQL 8's 3065, "...references column
//!    '...' which is not in SELECT list; this is incompatible with DISTINCT"); aggregates
//!    and outer references are not checked here.
//! 5. Not checked: window functions' PARTITION BY / ORDER BY.

use crate::bind::{Binder, SortKey};
use crate::builtin::Builtin;
use crate::error::SqlError;
use crate::expr::{CmpOp, Expr, Func};
use crate::from::{InputSource, JoinTree};
use crate::query::BoundQuery;
use crate::text_funcs::TextFunc;

/// The parts of a bound SELECT the check reads.
pub(crate) struct GroupedSelect<'a> {
    pub group_by: &'a [Expr],
    pub filter: Option<&'a Expr>,
    pub projection: &'a [Expr],
    pub having: Option<&'a Expr>,
    pub order_by: &'a [SortKey],
    /// WITH ROLLUP: no functional dependence (rule 2).
    pub rollup: bool,
}

/// A base table of the FROM: where its columns start in the row.
struct KeyedTable<'a> {
    offset: usize,
    def: &'a shale_table::TableDef,
}

/// A derived table of the FROM: its columns in the row, and its keys (positions in the row).
struct KeyedDerived {
    columns: std::ops::Range<usize>,
    keys: Vec<Vec<usize>>,
}

/// The dependence sets of rule 2.
struct Dependence<'a> {
    width: usize,
    group_by: &'a [Expr],
    dependent: Vec<bool>,
    non_null: Vec<bool>,
}

impl Binder<'_> {
    /// Rule 3: the first expression reading a column that may vary within a group fails.
    pub(crate) fn check_full_group_by(&self, q: &GroupedSelect<'_>) -> Result<(), SqlError> {
        let width = self.row_width();
        let deps = self.dependence(q, width);
        let explicit = !q.group_by.is_empty();
        for (i, e) in q.projection.iter().enumerate() {
            if let Some(pos) = deps.varying_column(e) {
                return Err(self.not_grouped(explicit, i + 1, "SELECT list", pos));
            }
        }
        if explicit {
            for (i, key) in q.order_by.iter().enumerate() {
                if q.projection.contains(&key.expr) {
                    continue;
                }
                if let Some(pos) = deps.varying_column(&key.expr) {
                    return Err(self.not_grouped(explicit, i + 1, "ORDER BY clause", pos));
                }
            }
        }
        if let Some(h) = q.having {
            if !q.projection.contains(h) {
                if let Some(pos) = deps.varying_column(h) {
                    return Err(self.not_grouped(explicit, 1, "HAVING clause", pos));
                }
            }
        }
        Ok(())
    }

    /// Rule 4: 3065 for the first ORDER BY key of a DISTINCT SELECT reading a column the
    /// select list does not have.
    pub(crate) fn check_distinct_order(
        &self,
        projection: &[Expr],
        order_by: &[SortKey],
    ) -> Result<(), SqlError> {
        let width = self.row_width();
        for (i, key) in order_by.iter().enumerate() {
            if projection.contains(&key.expr) {
                continue;
            }
            let mut missing = None;
            unselected_column(&key.expr, width, projection, &mut missing);
            if let Some(pos) = missing {
                return Err(SqlError::new(
                    3065,
                    "HY000",
                    format!(
                        "Expression #{} of ORDER BY clause is not in SELECT list, references \
                         column '{}' which is not in SELECT list; this is incompatible with \
                         DISTINCT",
                        i + 1,
                        self.qualified_column_name(pos)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Rule 2, to its fixed point.
    fn dependence<'q>(&self, q: &GroupedSelect<'q>, width: usize) -> Dependence<'q> {
        let mut deps = Dependence {
            width,
            group_by: q.group_by,
            dependent: vec![false; width],
            non_null: vec![false; width],
        };
        for g in q.group_by {
            if let Expr::Column(p) = g {
                if *p < width {
                    deps.dependent[*p] = true;
                }
            }
        }
        if q.rollup {
            return deps;
        }
        let mut equalities = Vec::new();
        if let Some(f) = q.filter {
            conjuncts(f, &mut equalities);
        }
        let mut tables = Vec::new();
        let mut derived = Vec::new();
        match (&self.from, &self.table) {
            (Some(from), _) => {
                inner_join_conditions(&from.tree, false, &mut equalities);
                for input in &from.inputs {
                    match &input.source {
                        InputSource::Table(t) => tables.push(KeyedTable {
                            offset: input.offset,
                            def: &t.def,
                        }),
                        InputSource::Derived(q) => derived.push(KeyedDerived {
                            columns: input.offset..input.offset + input.width,
                            keys: query_keys(q)
                                .into_iter()
                                .map(|k| k.into_iter().map(|c| input.offset + c).collect())
                                .collect(),
                        }),
                        _ => {}
                    }
                }
            }
            (None, Some(t)) => tables.push(KeyedTable {
                offset: 0,
                def: &t.def,
            }),
            (None, None) => {}
        }
        let mut changed = true;
        while changed {
            changed = false;
            for t in &tables {
                changed |= deps.whole_table_by_key(t);
            }
            for d in &derived {
                changed |= deps.whole_derived_by_key(d);
            }
            for e in &equalities {
                changed |= deps.by_equality(e);
            }
        }
        deps
    }

    /// 1055 or 1140 naming the column at `pos`.
    fn not_grouped(&self, explicit: bool, number: usize, place: &str, pos: usize) -> SqlError {
        let column = self.qualified_column_name(pos);
        if explicit {
            SqlError::new(
                1055,
                "42000",
                format!(
                    "Expression #{number} of {place} is not in GROUP BY clause and contains \
                     nonaggregated column '{column}' which is not functionally dependent on \
                     columns in GROUP BY clause; this is incompatible with \
                     sql_mode=only_full_group_by"
                ),
            )
        } else {
            SqlError::new(
                1140,
                "42000",
                format!(
                    "In aggregated query without GROUP BY, expression #{number} of {place} \
                     contains nonaggregated column '{column}'; this is incompatible with \
                     sql_mode=only_full_group_by"
                ),
            )
        }
    }

    /// `db.alias.column` (`alias.column` for a derived table's column).
    fn qualified_column_name(&self, pos: usize) -> String {
        if let Some(scope) = &self.scope {
            for input in &scope.inputs {
                if pos >= input.offset && pos < input.offset + input.columns.len() {
                    let name = &input.columns[pos - input.offset].name;
                    return if input.database.is_empty() {
                        format!("{}.{name}", input.alias)
                    } else {
                        format!("{}.{}.{name}", input.database, input.alias)
                    };
                }
            }
        }
        match &self.table {
            Some(t) => {
                let name = t.def.columns.get(pos).map_or("", |c| c.name.as_str());
                format!("{}.{}.{name}", t.database, t.alias)
            }
            None => format!("#{pos}"),
        }
    }
}

impl Dependence<'_> {
    /// The first column `e` reads that is not dependent (rule 1), or None.
    fn varying_column(&self, e: &Expr) -> Option<usize> {
        if self.group_by.contains(e) {
            return None;
        }
        match e {
            Expr::Column(p) if *p >= self.width => None,
            Expr::Column(p) => (!self.dependent[*p]).then_some(*p),
            Expr::Func(Func::Builtin(Builtin::Text(TextFunc::AnyValue)), _) => None,
            _ => {
                let mut found = None;
                crate::walk::children(e, &mut |c| {
                    if found.is_none() {
                        found = self.varying_column(c);
                    }
                });
                found
            }
        }
    }

    /// A key of `t` entirely dependent makes all of `t` dependent; whether that added any.
    fn whole_table_by_key(&mut self, t: &KeyedTable<'_>) -> bool {
        let columns = t.def.columns.len();
        if (t.offset..t.offset + columns).all(|p| self.dependent.get(p) == Some(&true)) {
            return false;
        }
        let unique_keys = std::iter::once(&t.def.primary_key)
            .filter(|k| !k.columns.is_empty())
            .chain(t.def.indexes.iter().filter(|k| k.unique));
        for key in unique_keys {
            let determined = key.columns.iter().all(|&c| {
                let p = t.offset + c;
                self.dependent.get(p) == Some(&true)
                    && (!t.def.columns[c].nullable || self.non_null[p])
            });
            if determined {
                for p in t.offset..t.offset + columns {
                    if let Some(d) = self.dependent.get_mut(p) {
                        *d = true;
                    }
                }
                return true;
            }
        }
        false
    }

    /// A key of derived table `d` entirely dependent makes all of `d` dependent; whether
    /// that added any.
    fn whole_derived_by_key(&mut self, d: &KeyedDerived) -> bool {
        if d.columns
            .clone()
            .all(|p| self.dependent.get(p) == Some(&true))
        {
            return false;
        }
        let determined = d
            .keys
            .iter()
            .any(|k| k.iter().all(|&p| self.dependent.get(p) == Some(&true)));
        if determined {
            for p in d.columns.clone() {
                if let Some(dep) = self.dependent.get_mut(p) {
                    *dep = true;
                }
            }
        }
        determined
    }

    /// `x = y` with x dependent, or `x = constant`, makes y (x) dependent and non-NULL;
    /// whether that added any.
    fn by_equality(&mut self, e: &Expr) -> bool {
        let Expr::Cmp(CmpOp::Eq, a, b, _) = e else {
            return false;
        };
        let mut changed = false;
        for (x, y) in [(a, b), (b, a)] {
            let Expr::Column(y) = **y else { continue };
            if y >= self.width || (self.dependent[y] && self.non_null[y]) {
                continue;
            }
            let x_known = match **x {
                Expr::Column(p) => p < self.width && self.dependent[p],
                ref other => other.is_row_independent(),
            };
            if x_known {
                self.dependent[y] = true;
                self.non_null[y] = true;
                changed = true;
            }
        }
        changed
    }
}

/// The first column of this query's row that `e` reads and the select list does not have as
/// such (rule 4).
fn unselected_column(e: &Expr, width: usize, projection: &[Expr], found: &mut Option<usize>) {
    if found.is_some() {
        return;
    }
    match e {
        Expr::Column(p) if *p < width && !projection.contains(e) => *found = Some(*p),
        Expr::Column(_) => {}
        _ => crate::walk::children(e, &mut |c| unselected_column(c, width, projection, found)),
    }
}

/// The AND-ed parts of a condition.
fn conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::And(a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        other => out.push(other),
    }
}

/// The AND-ed parts of the ON of inner joins no outer join is above (rule 2: inside an
/// outer join's inner side, a row may be NULL-extended and the equality not hold).
fn inner_join_conditions<'e>(tree: &'e JoinTree, under_outer: bool, out: &mut Vec<&'e Expr>) {
    if let JoinTree::Join {
        left_outer,
        left,
        right,
        on,
    } = tree
    {
        if !left_outer && !under_outer {
            if let Some(on) = on {
                conjuncts(on, out);
            }
        }
        inner_join_conditions(left, under_outer, out);
        inner_join_conditions(right, under_outer || *left_outer, out);
    }
}

/// The keys of a derived table's query, as its result columns (rule 2).
fn query_keys(q: &BoundQuery) -> Vec<Vec<usize>> {
    let BoundQuery::Select(s) = q else {
        return Vec::new();
    };
    let result_column = |e: &Expr| s.projection.iter().position(|p| p == e);
    if s.grouped {
        // ROLLUP's super-aggregate rows repeat key values (with NULLs): no key.
        if s.group_by.is_empty() || s.rollup {
            return Vec::new();
        }
        let key: Option<Vec<usize>> = s.group_by.iter().map(result_column).collect();
        return key.into_iter().collect();
    }
    // One key of every input read, each as row positions; their union is a key of the rows.
    let mut input_keys: Vec<Vec<Vec<usize>>> = Vec::new();
    match (&s.from, &s.table) {
        (Some(from), _) => {
            for input in &from.inputs {
                let keys = match &input.source {
                    InputSource::Table(t) => table_keys(&t.def),
                    InputSource::Derived(inner) => query_keys(inner),
                    _ => return Vec::new(),
                };
                input_keys.push(
                    keys.into_iter()
                        .map(|k| k.into_iter().map(|c| input.offset + c).collect())
                        .collect(),
                );
            }
        }
        (None, Some(t)) => input_keys.push(table_keys(&t.def)),
        (None, None) => return Vec::new(),
    }
    let mut key = Vec::new();
    for keys in input_keys {
        // The first key of this input whose every column is selected.
        let selected = keys.iter().find_map(|k| {
            k.iter()
                .map(|&p| result_column(&Expr::Column(p)))
                .collect::<Option<Vec<usize>>>()
        });
        match selected {
            Some(columns) => key.extend(columns),
            None => return Vec::new(),
        }
    }
    vec![key]
}

/// A table's keys as column numbers: its PRIMARY KEY and its UNIQUE keys of NOT NULL
/// columns.
fn table_keys(def: &shale_table::TableDef) -> Vec<Vec<usize>> {
    std::iter::once(&def.primary_key)
        .filter(|k| !k.columns.is_empty())
        .chain(def.indexes.iter().filter(|k| {
            k.unique
                && k.columns
                    .iter()
                    .all(|&c| def.columns.get(c).is_some_and(|c| !c.nullable))
        }))
        .map(|k| k.columns.clone())
        .collect()
}
