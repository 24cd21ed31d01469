//! Binding FROM over several inputs: joins, derived tables and CTE references, and the
//! names their columns go by.
//!
//! Row layout: a query over several inputs evaluates its expressions over one combined row,
//! the inputs' columns side by side in FROM order (input i's column c is at `offset(i) + c`);
//! aggregates follow at `width + n`, as for one table. The join order the planner picks
//! never changes this layout: each input fills its own slots, and an input a LEFT JOIN
//! found no match for leaves its slots NULL.
//!
//! Rules:
//! 1. `c` names the one visible input column called c (1052 if several inputs have one,
//!    1054 if none); `t.c` and `db.t.c` name input t's column (t its alias or table name).
//! 2. `USING (c, ...)` compares both sides' c by equality; after it an unqualified `c` reads
//!    the left side's column (the right side's for RIGHT JOIN) and `*` shows it once, first,
//!    as MySQL does. NATURAL JOIN is USING every column name both sides have.
//! 3. RIGHT JOIN is bound as LEFT JOIN with its sides swapped; CROSS JOIN, a comma and JOIN
//!    without ON are inner joins without a condition.
//! 4. Two inputs may not share a name (1066); a derived table needs an alias (1248).
//! 5. A single base table keeps the one-table binding (`Binder::table`), so the plans and
//!    hot paths of one-table statements do not change.
//! 6. At most [`MAX_JOIN_TABLES`] (61, MySQL's limit) tables join in one FROM (1116): the
//!    join planner's time grows steeply with the count and it does not watch the clock.
//! 7. A LATERAL derived table (`FROM t, LATERAL (SELECT .. WHERE x = t.a) AS d`, `JOIN
//!    LATERAL .. ON`, `LEFT JOIN LATERAL .. ON`) sees the columns of the inputs bound before
//!    it as outer values, as a correlated subquery sees its enclosing row; it is bound into
//!    the statement's subquery list and run once per distinct set of those values
//!    (subquery.rs rule 1). A derived table without LATERAL sees none of them (1054). Inside
//!    parentheses it may not read inputs outside them (1235).
//! 8. A lateral input (a LATERAL derived table or a JSON_TABLE, json_table.rs) on the right
//!    of RIGHT JOIN may not read the left side: 3668 `INNER or LEFT JOIN must be used for
//!    LATERAL references made by 'd'`, as MySQL; one that reads nothing of it is an ordinary
//!    input there.

use std::rc::Rc;

use shale_table::Collation;
use sqlparser::ast;

use crate::bind::{pick_collation, Binder, TableRef};
use crate::error::SqlError;
use crate::expr::{CmpOp, Expr};
use crate::query::BoundQuery;
use crate::result::ColumnMeta;
use crate::types::{column_meta, SqlType};

/// MySQL's limit on the tables of one join (rule 6).
pub(crate) const MAX_JOIN_TABLES: usize = 61;

/// The tables (and derived tables) `twj` joins, nested joins counted through.
fn table_count(twj: &ast::TableWithJoins) -> usize {
    std::iter::once(&twj.relation)
        .chain(twj.joins.iter().map(|j| &j.relation))
        .map(|factor| match factor {
            ast::TableFactor::NestedJoin {
                table_with_joins, ..
            } => table_count(table_with_joins),
            _ => 1,
        })
        .sum()
}

/// One column a name can resolve to.
#[derive(Debug, Clone)]
pub(crate) struct ScopeColumn {
    pub name: String,
    pub ty: SqlType,
    pub meta: ColumnMeta,
}

/// One input's names.
#[derive(Debug, Clone)]
pub(crate) struct ScopeInput {
    pub alias: String,
    /// The database of a base table ("" for a derived table).
    pub database: String,
    pub columns: Vec<ScopeColumn>,
    pub offset: usize,
}

/// The names visible to a query's expressions.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scope {
    pub inputs: Vec<ScopeInput>,
    /// Positions USING merged into another column: not found by an unqualified name, not
    /// shown by `*`.
    pub hidden: Vec<usize>,
    /// What `*` expands to, in order.
    pub star: Vec<usize>,
}

pub(crate) fn ambiguous(name: &str, clause: &str) -> SqlError {
    SqlError::new(
        1052,
        "23000",
        format!("Column '{name}' in {clause} is ambiguous"),
    )
}

impl Scope {
    pub(crate) fn width(&self) -> usize {
        self.inputs.last().map_or(0, |i| i.offset + i.columns.len())
    }

    pub(crate) fn column_at(&self, pos: usize) -> Option<&ScopeColumn> {
        self.inputs
            .iter()
            .find(|i| pos >= i.offset && pos < i.offset + i.columns.len())
            .and_then(|i| i.columns.get(pos - i.offset))
    }

    /// The names of one base table.
    pub(crate) fn of_table(t: &TableRef) -> Scope {
        let columns: Vec<ScopeColumn> = t
            .def
            .columns
            .iter()
            .enumerate()
            .map(|(pos, c)| ScopeColumn {
                name: c.name.clone(),
                ty: SqlType::of_column(&c.ty),
                meta: column_meta(&t.database, &t.alias, &t.def, pos, &c.name),
            })
            .collect();
        Scope {
            star: (0..columns.len()).collect(),
            inputs: vec![ScopeInput {
                alias: t.alias.clone(),
                database: t.database.clone(),
                columns,
                offset: 0,
            }],
            hidden: Vec::new(),
        }
    }

    /// Resolves `c`, `t.c` or `db.t.c` (rule 1).
    pub(crate) fn resolve(
        &self,
        parts: &[&str],
        text: &str,
        clause: &str,
    ) -> Result<(Expr, SqlType), SqlError> {
        let (db, table, col) = match parts {
            [c] => (None, None, *c),
            [t, c] => (None, Some(*t), *c),
            [d, t, c] => (Some(*d), Some(*t), *c),
            _ => return Err(SqlError::unknown_column(text, clause)),
        };
        let mut found: Option<(usize, &ScopeColumn)> = None;
        for input in &self.inputs {
            if table.is_some_and(|t| !t.eq_ignore_ascii_case(&input.alias))
                || db.is_some_and(|d| d != input.database)
            {
                continue;
            }
            for (i, c) in input.columns.iter().enumerate() {
                let pos = input.offset + i;
                if !c.name.eq_ignore_ascii_case(col)
                    || (table.is_none() && self.hidden.contains(&pos))
                {
                    continue;
                }
                if found.is_some() {
                    return Err(ambiguous(col, clause));
                }
                found = Some((pos, c));
            }
        }
        match found {
            Some((pos, c)) => Ok((Expr::Column(pos), c.ty.clone())),
            None => Err(SqlError::unknown_column(text, clause)),
        }
    }

    /// The positions of input `alias`'s columns (`t.*`), or None when no input is so named.
    pub(crate) fn input_columns(&self, alias: &str) -> Option<Vec<usize>> {
        let input = self
            .inputs
            .iter()
            .find(|i| i.alias.eq_ignore_ascii_case(alias))?;
        Some((input.offset..input.offset + input.columns.len()).collect())
    }
}

/// Where an input's rows come from.
#[derive(Debug, Clone)]
pub(crate) enum InputSource {
    Table(TableRef),
    /// A derived table or a CTE reference: a query read completely.
    Derived(Box<BoundQuery>),
    /// A table of `information_schema`, computed when read (info_schema/mod.rs).
    Virtual(crate::info_schema::InfoTable),
    /// A LATERAL derived table (rule 7): the statement's subquery `id`, run per row of the
    /// inputs before it with `args` (over the combined row) as its outer values.
    Lateral {
        id: usize,
        args: Vec<Expr>,
    },
    /// A JSON_TABLE (json_table.rs): computed per row of the inputs before it, from its
    /// document expression over the combined row.
    JsonTable(Box<crate::json_table::JsonTable>),
}

impl InputSource {
    /// The expressions over the combined row this input reads per row of the inputs before
    /// it (a LATERAL derived table's outer values, a JSON_TABLE's document); empty for the
    /// others.
    pub(crate) fn lateral_reads(&self) -> Vec<&Expr> {
        match self {
            InputSource::Lateral { args, .. } => args.iter().collect(),
            InputSource::JsonTable(t) => vec![&t.doc],
            InputSource::Table(_) | InputSource::Derived(_) | InputSource::Virtual(_) => Vec::new(),
        }
    }

    /// Whether this input reads a column below position `floor` of the combined row.
    pub(crate) fn reads_before(&self, floor: usize) -> bool {
        self.lateral_reads().into_iter().any(|a| {
            let mut cols = Vec::new();
            crate::walk::columns(a, &mut cols);
            cols.iter().any(|&c| c < floor)
        })
    }
}

/// One input of a multi-input FROM.
#[derive(Debug, Clone)]
pub(crate) struct BoundInput {
    pub source: InputSource,
    pub name: String,
    pub offset: usize,
    pub width: usize,
}

/// How the inputs join (rule 3: no RIGHT joins remain).
#[derive(Debug, Clone)]
pub(crate) enum JoinTree {
    Input(usize),
    Join {
        /// LEFT JOIN: every row of `left` appears, with NULLs for `right` where no row of
        /// `right` satisfies `on`.
        left_outer: bool,
        left: Box<JoinTree>,
        right: Box<JoinTree>,
        on: Option<Expr>,
    },
}

impl JoinTree {
    /// The inputs under this tree, in FROM order.
    pub(crate) fn inputs(&self, out: &mut Vec<usize>) {
        match self {
            JoinTree::Input(i) => out.push(*i),
            JoinTree::Join { left, right, .. } => {
                left.inputs(out);
                right.inputs(out);
            }
        }
    }

    pub(crate) fn has_outer_join(&self) -> bool {
        match self {
            JoinTree::Input(_) => false,
            JoinTree::Join {
                left_outer,
                left,
                right,
                ..
            } => *left_outer || left.has_outer_join() || right.has_outer_join(),
        }
    }
}

/// A bound multi-input FROM.
#[derive(Debug, Clone)]
pub(crate) struct BoundFrom {
    pub inputs: Vec<BoundInput>,
    pub tree: JoinTree,
    /// The type of each position of the combined row.
    pub types: Vec<SqlType>,
    /// `alias.column` for each position (EXPLAIN).
    pub names: Vec<String>,
}

impl BoundFrom {
    pub(crate) fn width(&self) -> usize {
        self.types.len()
    }

    /// One base table as a FROM (a one-table query planned as a join, when it has subqueries).
    pub(crate) fn single(t: &TableRef) -> BoundFrom {
        BoundFrom {
            inputs: vec![BoundInput {
                source: InputSource::Table(t.clone()),
                name: t.alias.clone(),
                offset: 0,
                width: t.def.columns.len(),
            }],
            tree: JoinTree::Input(0),
            types: t
                .def
                .columns
                .iter()
                .map(|c| SqlType::of_column(&c.ty))
                .collect(),
            names: t
                .def
                .columns
                .iter()
                .map(|c| format!("{}.{}", t.alias, c.name))
                .collect(),
        }
    }
}

/// A join's condition, the positions USING hides, and what `*` shows of the join.
type ConstraintParts = (Option<Expr>, Vec<usize>, Vec<usize>);

/// A subtree being bound: its tree and what `*` shows of it.
pub(crate) struct Bound {
    tree: JoinTree,
    star: Vec<usize>,
}

impl Binder<'_> {
    /// Binds FROM: one base table the one-table way (rule 5), anything else into
    /// `self.from` and `self.scope`.
    pub(crate) fn bind_from(&mut self, from: &[ast::TableWithJoins]) -> Result<(), SqlError> {
        if let [twj] = from {
            if let (
                true,
                ast::TableFactor::Table {
                    name, alias, args, ..
                },
            ) = (twj.joins.is_empty(), &twj.relation)
            {
                let is_cte = matches!(crate::bind::ident_name(name).as_slice(),
                    [n] if self.cte(n).is_some()
                        || self.working.as_ref().is_some_and(|w| w.name.eq_ignore_ascii_case(n)));
                if args.is_none()
                    && !is_cte
                    && self.info_schema_table(name)?.is_none()
                    && !self.names_view(name)
                {
                    let alias = alias.as_ref().map(|a| a.name.value.as_str());
                    self.table = Some(self.resolve_table(name, alias)?);
                    return Ok(());
                }
            }
        }
        if from.is_empty() {
            return Ok(());
        }
        if from.iter().map(table_count).sum::<usize>() > MAX_JOIN_TABLES {
            return Err(SqlError::new(
                1116,
                "HY000",
                format!("Too many tables; MySQL can only use {MAX_JOIN_TABLES} tables in a join"),
            ));
        }
        self.scope = Some(Scope::default());
        let mut inputs = Vec::new();
        let mut whole: Option<Bound> = None;
        for twj in from {
            let next = self.bind_table_with_joins(twj, &mut inputs)?;
            whole = Some(match whole {
                None => next,
                Some(prev) => Bound {
                    tree: JoinTree::Join {
                        left_outer: false,
                        left: Box::new(prev.tree),
                        right: Box::new(next.tree),
                        on: None,
                    },
                    star: prev.star.into_iter().chain(next.star).collect(),
                },
            });
        }
        let Some(whole) = whole else {
            return Ok(());
        };
        let scope = self
            .scope
            .as_mut()
            .ok_or_else(|| SqlError::internal("no scope"))?;
        scope.star = whole.star;
        let types = (0..scope.width())
            .map(|p| scope.column_at(p).map_or(SqlType::Null, |c| c.ty.clone()))
            .collect();
        let names = scope
            .inputs
            .iter()
            .flat_map(|i| i.columns.iter().map(|c| format!("{}.{}", i.alias, c.name)))
            .collect();
        self.from = Some(BoundFrom {
            inputs,
            tree: whole.tree,
            types,
            names,
        });
        Ok(())
    }

    fn bind_table_with_joins(
        &mut self,
        twj: &ast::TableWithJoins,
        inputs: &mut Vec<BoundInput>,
    ) -> Result<Bound, SqlError> {
        let mut left = self.bind_factor(&twj.relation, inputs)?;
        for join in &twj.joins {
            use ast::JoinOperator as J;
            let (kind, constraint) = match &join.join_operator {
                J::Join(c) | J::Inner(c) | J::CrossJoin(c) | J::StraightJoin(c) => ('I', c),
                J::Left(c) | J::LeftOuter(c) => ('L', c),
                J::Right(c) | J::RightOuter(c) => ('R', c),
                J::FullOuter(_) => return Err(SqlError::unsupported("FULL OUTER JOIN")),
                _ => return Err(SqlError::unsupported("this kind of join")),
            };
            let (first_right, floor) = (inputs.len(), self.scope.as_ref().map_or(0, Scope::width));
            let right = self.bind_factor(&join.relation, inputs)?;
            // Rule 8: the right side of a RIGHT JOIN is read first (rule 3), so a lateral
            // input there may not read the left side.
            if kind == 'R' {
                if let Some(i) = inputs[first_right..]
                    .iter()
                    .find(|i| i.source.reads_before(floor))
                {
                    return Err(forbidden_join_type(&i.name));
                }
            }
            let (on, hidden, star) =
                self.join_constraint(constraint, &left, &right, kind == 'R')?;
            if let Some(scope) = self.scope.as_mut() {
                scope.hidden.extend(hidden);
            }
            let (l, r) = if kind == 'R' {
                (right, left)
            } else {
                (left, right)
            };
            left = Bound {
                tree: JoinTree::Join {
                    left_outer: kind != 'I',
                    left: Box::new(l.tree),
                    right: Box::new(r.tree),
                    on,
                },
                star,
            };
        }
        Ok(left)
    }

    /// The condition of ON / USING / NATURAL, the positions USING hides, and `*` of the join.
    fn join_constraint(
        &mut self,
        constraint: &ast::JoinConstraint,
        left: &Bound,
        right: &Bound,
        right_join: bool,
    ) -> Result<ConstraintParts, SqlError> {
        let plain_star = || left.star.iter().chain(&right.star).copied().collect();
        let names: Vec<String> = match constraint {
            ast::JoinConstraint::None => return Ok((None, Vec::new(), plain_star())),
            ast::JoinConstraint::On(e) => {
                let on = self.condition_in(e, "on clause")?;
                return Ok((Some(on), Vec::new(), plain_star()));
            }
            ast::JoinConstraint::Using(cols) => cols
                .iter()
                .map(|c| crate::bind::ident_name(c).pop().unwrap_or_default())
                .collect(),
            ast::JoinConstraint::Natural => {
                let scope = self
                    .scope
                    .as_ref()
                    .ok_or_else(|| SqlError::internal("no scope"))?;
                let name = |p: usize| scope.column_at(p).map(|c| c.name.clone());
                left.star
                    .iter()
                    .filter_map(|&p| name(p))
                    .filter(|n| {
                        right
                            .star
                            .iter()
                            .any(|&p| name(p).is_some_and(|m| m.eq_ignore_ascii_case(n)))
                    })
                    .collect()
            }
            ast::JoinConstraint::UsingAlias(..) => {
                return Err(SqlError::unsupported("USING ... AS"))
            }
        };
        let scope = self
            .scope
            .as_ref()
            .ok_or_else(|| SqlError::internal("no scope"))?;
        let find = |side: &Bound, n: &str| -> Result<(usize, SqlType), SqlError> {
            let mut hits = side.star.iter().filter_map(|&p| {
                let c = scope.column_at(p)?;
                c.name.eq_ignore_ascii_case(n).then(|| (p, c.ty.clone()))
            });
            let first = hits
                .next()
                .ok_or_else(|| SqlError::unknown_column(n, "from clause"))?;
            if hits.next().is_some() {
                return Err(ambiguous(n, "from clause"));
            }
            Ok(first)
        };
        let mut conds = Vec::new();
        let mut kept = Vec::new();
        let mut hidden = Vec::new();
        for n in &names {
            let (l, tl) = find(left, n)?;
            let (r, tr) = find(right, n)?;
            let collation: Collation = pick_collation(&[&tl, &tr]);
            conds.push(Expr::Cmp(
                CmpOp::Eq,
                Expr::Column(l).boxed(),
                Expr::Column(r).boxed(),
                collation,
            ));
            if right_join {
                kept.push(r);
                hidden.push(l);
            } else {
                kept.push(l);
                hidden.push(r);
            }
        }
        let (first, second) = if right_join {
            (&right.star, &left.star)
        } else {
            (&left.star, &right.star)
        };
        let star = kept
            .iter()
            .copied()
            .chain(
                first
                    .iter()
                    .chain(second)
                    .copied()
                    .filter(|p| !kept.contains(p) && !hidden.contains(p)),
            )
            .collect();
        Ok((crate::walk::and_all(conds), hidden, star))
    }

    fn bind_factor(
        &mut self,
        factor: &ast::TableFactor,
        inputs: &mut Vec<BoundInput>,
    ) -> Result<Bound, SqlError> {
        match factor {
            ast::TableFactor::Table {
                name, alias, args, ..
            } if args.is_none() => {
                let parts = crate::bind::ident_name(name);
                let alias_name = alias.as_ref().map(|a| a.name.value.clone());
                if let [single] = parts.as_slice() {
                    if let Some((query, names)) = self.working_table(single) {
                        let name = alias_name.unwrap_or_else(|| single.clone());
                        return self.push_derived(query, name, &names, inputs);
                    }
                    if let Some((visible, cte)) = self.cte_at(single) {
                        let name = alias_name.unwrap_or_else(|| single.clone());
                        let renames: Vec<String> = cte
                            .alias
                            .columns
                            .iter()
                            .map(|c| c.name.value.clone())
                            .collect();
                        let query = if self.recursive_ctes.iter().any(|r| Rc::ptr_eq(r, &cte)) {
                            self.bind_recursive_cte(&cte, visible)?
                        } else {
                            self.bind_derived_query(&cte.query, visible)?
                        };
                        return self.push_derived(query, name, &renames, inputs);
                    }
                }
                if let Some(table) = self.info_schema_table(name)? {
                    let name = alias_name.unwrap_or_else(|| table.name().to_string());
                    let columns = crate::info_schema::scope_columns(table, &name);
                    let width = columns.len();
                    return self.push_input(
                        BoundInput {
                            source: InputSource::Virtual(table),
                            name,
                            offset: 0,
                            width,
                        },
                        crate::info_schema::DATABASE.to_string(),
                        columns,
                        inputs,
                    );
                }
                if let Some(view) = self.expand_view(name)? {
                    return self.push_view(view, alias_name, inputs);
                }
                let t = self.resolve_table(name, alias_name.as_deref())?;
                let columns = Scope::of_table(&t).inputs.remove(0).columns;
                let name = t.alias.clone();
                let database = t.database.clone();
                let width = columns.len();
                self.push_input(
                    BoundInput {
                        source: InputSource::Table(t),
                        name,
                        offset: 0,
                        width,
                    },
                    database,
                    columns,
                    inputs,
                )
            }
            ast::TableFactor::Derived {
                lateral,
                subquery,
                alias,
                ..
            } => {
                let Some(alias) = alias else {
                    return Err(SqlError::new(
                        1248,
                        "42000",
                        "Every derived table must have its own alias",
                    ));
                };
                let renames: Vec<String> =
                    alias.columns.iter().map(|c| c.name.value.clone()).collect();
                if *lateral {
                    return self.push_lateral(subquery, alias.name.value.clone(), &renames, inputs);
                }
                let visible = self.ctes.len();
                let query = self.bind_derived_query(subquery, visible)?;
                self.push_derived(query, alias.name.value.clone(), &renames, inputs)
            }
            ast::TableFactor::NestedJoin {
                table_with_joins,
                alias: None,
            } => {
                let (first, floor) = (inputs.len(), self.scope.as_ref().map_or(0, Scope::width));
                let bound = self.bind_table_with_joins(table_with_joins, inputs)?;
                // Rule 7: a parenthesized join may be planned on its own (join.rs rule 4),
                // where a LATERAL table could not see the inputs outside it.
                let reads_outside = inputs[first..].iter().any(|i| i.source.reads_before(floor));
                if reads_outside {
                    return Err(SqlError::unsupported(
                        "a LATERAL derived table inside parentheses reading tables outside them",
                    ));
                }
                Ok(bound)
            }
            ast::TableFactor::JsonTable {
                json_expr,
                json_path,
                columns,
                alias,
            } => {
                let (table, columns) =
                    self.bind_json_table(json_expr, json_path, columns, alias.as_ref())?;
                let (name, width) = (table.alias.clone(), table.width());
                self.push_input(
                    BoundInput {
                        source: InputSource::JsonTable(Box::new(table)),
                        name,
                        offset: 0,
                        width,
                    },
                    String::new(),
                    columns,
                    inputs,
                )
            }
            other => Err(SqlError::unsupported(format!("FROM {other}"))),
        }
    }

    /// Binds a derived table's query: it sees the first `visible` CTEs (a CTE sees only
    /// those before it) and the parameters, not the enclosing query's names.
    fn bind_derived_query(
        &mut self,
        q: &ast::Query,
        visible: usize,
    ) -> Result<BoundQuery, SqlError> {
        let mut sub = self.child(None);
        sub.ctes.truncate(visible);
        let r = sub.query(q);
        self.adopt(sub);
        r
    }

    /// Binds a LATERAL derived table (rule 7).
    fn push_lateral(
        &mut self,
        q: &ast::Query,
        name: String,
        renames: &[String],
        inputs: &mut Vec<BoundInput>,
    ) -> Result<Bound, SqlError> {
        let outer = self.current_scope();
        let mut sub = self.child(outer);
        let bound = sub.query(q);
        let args = std::mem::take(&mut sub.outer_refs);
        self.adopt(sub);
        let query = bound?;
        let columns = derived_columns(&query, &name, renames)?;
        let id = self.subqueries.len();
        self.subqueries.push(crate::query::BoundSubquery {
            query,
            correlated: !args.is_empty(),
            max_rows: None,
        });
        let width = columns.len();
        self.push_input(
            BoundInput {
                source: InputSource::Lateral { id, args },
                name,
                offset: 0,
                width,
            },
            String::new(),
            columns,
            inputs,
        )
    }

    pub(crate) fn push_derived(
        &mut self,
        query: BoundQuery,
        name: String,
        renames: &[String],
        inputs: &mut Vec<BoundInput>,
    ) -> Result<Bound, SqlError> {
        let columns = derived_columns(&query, &name, renames)?;
        let width = columns.len();
        self.push_input(
            BoundInput {
                source: InputSource::Derived(Box::new(query)),
                name,
                offset: 0,
                width,
            },
            String::new(),
            columns,
            inputs,
        )
    }
}

/// 3668: a lateral input on the right of RIGHT JOIN reading its left side (rule 8).
fn forbidden_join_type(name: &str) -> SqlError {
    SqlError::new(
        3668,
        "HY000",
        format!("INNER or LEFT JOIN must be used for LATERAL references made by '{name}'"),
    )
}

/// The names a derived table's columns go by: the query's, or `renames` (1353 for another
/// count, 1060 for a name twice).
fn derived_columns(
    query: &BoundQuery,
    name: &str,
    renames: &[String],
) -> Result<Vec<ScopeColumn>, SqlError> {
    let metas = query.columns();
    if !renames.is_empty() && renames.len() != metas.len() {
        return Err(SqlError::new(
            1353,
            "HY000",
            "In definition of view, derived table or common table expression, SELECT list and \
             column names list have different column counts",
        ));
    }
    let mut columns = Vec::with_capacity(metas.len());
    for (i, (m, ty)) in metas.iter().zip(query.types()).enumerate() {
        let col_name = renames.get(i).cloned().unwrap_or_else(|| m.name.clone());
        if columns
            .iter()
            .any(|c: &ScopeColumn| c.name.eq_ignore_ascii_case(&col_name))
        {
            return Err(SqlError::new(
                1060,
                "42S21",
                format!("Duplicate column name '{col_name}'"),
            ));
        }
        let mut meta = m.clone();
        meta.name.clone_from(&col_name);
        meta.table = name.to_string();
        meta.org_table = name.to_string();
        meta.database = String::new();
        columns.push(ScopeColumn {
            name: col_name,
            ty: ty.clone(),
            meta,
        });
    }
    Ok(columns)
}

impl Binder<'_> {
    fn push_input(
        &mut self,
        mut input: BoundInput,
        database: String,
        columns: Vec<ScopeColumn>,
        inputs: &mut Vec<BoundInput>,
    ) -> Result<Bound, SqlError> {
        let scope = self.scope.get_or_insert_with(Scope::default);
        if scope
            .inputs
            .iter()
            .any(|i| i.alias.eq_ignore_ascii_case(&input.name))
        {
            return Err(SqlError::new(
                1066,
                "42000",
                format!("Not unique table/alias: '{}'", input.name),
            ));
        }
        let offset = scope.width();
        input.offset = offset;
        scope.inputs.push(ScopeInput {
            alias: input.name.clone(),
            database,
            offset,
            columns,
        });
        let star = (offset..offset + input.width).collect();
        inputs.push(input);
        Ok(Bound {
            tree: JoinTree::Input(inputs.len() - 1),
            star,
        })
    }

    /// The `information_schema` table `name` names, if it names one there (1146 for a name
    /// `information_schema` does not have).
    fn info_schema_table(
        &self,
        name: &ast::ObjectName,
    ) -> Result<Option<crate::info_schema::InfoTable>, SqlError> {
        let parts = crate::bind::ident_name(name);
        let in_schema = match parts.as_slice() {
            [db, _] => crate::info_schema::is_database(db),
            [_] => self.database().is_some_and(crate::info_schema::is_database),
            _ => false,
        };
        if !in_schema {
            return Ok(None);
        }
        let table = parts.last().map(String::as_str).unwrap_or_default();
        crate::info_schema::InfoTable::named(table)
            .map(Some)
            .ok_or_else(|| SqlError::no_such_table(crate::info_schema::DATABASE, table))
    }

    /// The CTE called `name` visible here.
    pub(crate) fn cte(&self, name: &str) -> Option<Rc<ast::Cte>> {
        self.cte_at(name).map(|(_, c)| c)
    }

    /// The CTE called `name` and how many CTEs its own query sees.
    fn cte_at(&self, name: &str) -> Option<(usize, Rc<ast::Cte>)> {
        let i = self
            .ctes
            .iter()
            .rposition(|c| c.alias.name.value.eq_ignore_ascii_case(name))?;
        Some((i, Rc::clone(&self.ctes[i])))
    }
}
