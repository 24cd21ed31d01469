//! What an updatable view stands for (view_dml.rs rule 1): a view resolved down to the base
//! tables it reads, with the joins between them, each view column as an expression over
//! those tables and each level's WHERE, and the substitution that turns a statement's names
//! for a view's columns into those expressions (rule 3).
//!
//! Rules:
//! 1. Each base table gets the name the rewritten statement calls it by (its reference):
//!    a view reading one relation gives it the view's own reference; a view joining several
//!    gives each `reference.alias` (the alias, or table name, its SELECT uses), unique
//!    because aliases are unique within one SELECT.
//! 2. A join view's joins (inner, LEFT and RIGHT, with ON or none) are kept as they are, over
//!    the references; USING, NATURAL, derived tables and table functions make a view not
//!    updatable here. Comma-separated items are joined by CROSS JOIN.

use std::ops::ControlFlow;
use std::sync::Arc;

use shale_table::{Catalog, TableDef, ViewAlgorithm, ViewCheckOption, ViewDef};
use sqlparser::ast::{self, Statement, VisitMut, VisitorMut};

use crate::error::SqlError;

/// Why a view cannot be written (rule 1), kept until the statement's kind picks the error.
pub(crate) struct NotUpdatable;

/// One base table a view reads.
pub(crate) struct BaseTable {
    pub(crate) db: String,
    pub(crate) def: Arc<TableDef>,
    /// What the rewritten statement calls it (rule 1).
    pub(crate) reference: String,
    /// The views from the named one down to this table.
    pub(crate) path: Vec<Arc<ViewDef>>,
}

/// A view resolved down to its base tables.
pub(crate) struct Resolved {
    pub(crate) tables: Vec<BaseTable>,
    /// What the view reads, over the references: one table, or the joins of several.
    pub(crate) from: ast::TableWithJoins,
    /// Whether an outer join is among the joins (such a view is not insertable).
    pub(crate) outer: bool,
    /// The view's columns: name, and expression over the base tables (columns qualified by
    /// their table's reference).
    pub(crate) columns: Vec<(String, ast::Expr)>,
    /// Each level's WHERE (over the base tables) with whether rule 4 checks it, top first.
    pub(crate) filters: Vec<(ast::Expr, bool)>,
}

impl Resolved {
    /// Whether the view reads several base tables (a join view).
    pub(crate) fn is_join(&self) -> bool {
        self.tables.len() > 1
    }

    /// The base table called `reference`.
    pub(crate) fn table(&self, reference: &str) -> Option<&BaseTable> {
        self.tables.iter().find(|t| t.reference == reference)
    }

    /// The one base table of a view that is no join view.
    pub(crate) fn single(&self) -> &BaseTable {
        &self.tables[0]
    }
}

/// The names a statement may call a relation by: `[alias]`, or `[name]` and `[db, name]`.
pub(crate) struct Names {
    pub(crate) qualifiers: Vec<Vec<String>>,
    pub(crate) columns: Vec<(String, ast::Expr)>,
}

impl Names {
    pub(crate) fn qualifies(&self, parts: &[String]) -> bool {
        self.qualifiers.iter().any(|q| {
            q.len() == parts.len() && q.iter().zip(parts).all(|(a, b)| a.eq_ignore_ascii_case(b))
        })
    }

    pub(crate) fn column(&self, name: &str) -> Option<&ast::Expr> {
        self.columns
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, e)| e)
    }
}

/// Where a substitution looks names up, and what it does with names it does not know.
#[derive(Clone, Copy)]
pub(crate) enum Lookup {
    /// Every unqualified name, and every name at this query's level, must be a relation's
    /// column (1054 otherwise).
    Strict,
    /// Names of no relation listed are left as they are (they belong to the statement's
    /// other tables); an unqualified name several relations have is 1052.
    Lenient,
}

/// Replaces column references with what they stand for (rule 3).
struct Substitute<'a> {
    relations: &'a [Names],
    lookup: Lookup,
    clause: &'static str,
    depth: usize,
}

impl Substitute<'_> {
    /// What an unqualified `name` stands for, if a relation has it.
    fn unqualified(&self, name: &str) -> Result<Option<ast::Expr>, SqlError> {
        let mut found = self.relations.iter().filter_map(|r| r.column(name));
        let first = found.next().cloned();
        if first.is_some() && found.next().is_some() {
            return Err(crate::from::ambiguous(name, self.clause));
        }
        Ok(first)
    }
}

impl VisitorMut for Substitute<'_> {
    type Break = SqlError;

    fn pre_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<SqlError> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<SqlError> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<SqlError> {
        let strict = matches!(self.lookup, Lookup::Strict);
        let replacement = match e {
            ast::Expr::Identifier(id) if self.depth == 0 => {
                // `@v` user variables and `DEFAULT` are not columns.
                if id.value.starts_with('@') || crate::insert_set::is_default_ident(id) {
                    return ControlFlow::Continue(());
                }
                match self.unqualified(&id.value) {
                    Ok(Some(r)) => r,
                    Ok(None) if !strict => return ControlFlow::Continue(()),
                    Ok(None) => {
                        return ControlFlow::Break(SqlError::unknown_column(&id.value, self.clause))
                    }
                    Err(err) => return ControlFlow::Break(err),
                }
            }
            ast::Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                let names: Vec<String> = parts.iter().map(|p| p.value.clone()).collect();
                let Some((column, qualifier)) = names.split_last() else {
                    return ControlFlow::Continue(());
                };
                let Some(relation) = self.relations.iter().find(|r| r.qualifies(qualifier)) else {
                    if self.depth == 0 && strict {
                        return ControlFlow::Break(SqlError::unknown_column(
                            &names.join("."),
                            self.clause,
                        ));
                    }
                    return ControlFlow::Continue(());
                };
                match relation.column(column) {
                    Some(r) => r.clone(),
                    None => {
                        return ControlFlow::Break(SqlError::unknown_column(
                            &names.join("."),
                            self.clause,
                        ))
                    }
                }
            }
            _ => return ControlFlow::Continue(()),
        };
        *e = match replacement {
            simple @ (ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_)) => simple,
            other => ast::Expr::Nested(Box::new(other)),
        };
        ControlFlow::Continue(())
    }
}

/// Replaces the names in `e` of one relation's columns with what they stand for (rule 3).
pub(crate) fn substitute(
    e: &mut ast::Expr,
    names: &Names,
    clause: &'static str,
) -> Result<(), SqlError> {
    substitute_in(e, std::slice::from_ref(names), Lookup::Strict, clause)
}

/// Replaces the names in `e` of the columns of `relations` with what they stand for.
pub(crate) fn substitute_in(
    e: &mut ast::Expr,
    relations: &[Names],
    lookup: Lookup,
    clause: &'static str,
) -> Result<(), SqlError> {
    let mut visitor = Substitute {
        relations,
        lookup,
        clause,
        depth: 0,
    };
    match e.visit(&mut visitor) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(err) => Err(err),
    }
}

pub(crate) fn and(a: ast::Expr, b: ast::Expr) -> ast::Expr {
    ast::Expr::BinaryOp {
        left: Box::new(ast::Expr::Nested(Box::new(a))),
        op: ast::BinaryOperator::And,
        right: Box::new(ast::Expr::Nested(Box::new(b))),
    }
}

const AGGREGATES: &[&str] = &[
    "COUNT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "GROUP_CONCAT",
    "BIT_AND",
    "BIT_OR",
    "BIT_XOR",
    "STD",
    "STDDEV",
    "STDDEV_POP",
    "STDDEV_SAMP",
    "VARIANCE",
    "VAR_POP",
    "VAR_SAMP",
    "JSON_ARRAYAGG",
    "JSON_OBJECTAGG",
];

/// Whether an expression holds an aggregate, a window function or a subquery (by walking it).
fn computes_over_rows(e: &mut ast::Expr) -> bool {
    struct Finder(bool);
    impl VisitorMut for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
            self.0 = true;
            ControlFlow::Break(())
        }
        fn pre_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
            if let ast::Expr::Function(f) = e {
                let name = f.name.to_string().to_ascii_uppercase();
                if f.over.is_some() || AGGREGATES.contains(&name.as_str()) {
                    self.0 = true;
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut f = Finder(false);
    let _ = e.visit(&mut f);
    f.0
}

/// The base table reference and column a view column's expression names, if it is a plain
/// reference to a base column.
pub(crate) fn base_reference(e: &ast::Expr) -> Option<(&str, &str)> {
    match e {
        ast::Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
            Some((parts[0].value.as_str(), parts[1].value.as_str()))
        }
        _ => None,
    }
}

/// What the relations of one view's FROM resolved to so far.
struct Merge<'c> {
    catalog: &'c Catalog,
    view: Arc<ViewDef>,
    /// The view's database, for unqualified table names.
    database: String,
    reference: String,
    /// Whether the FROM is one relation (rule 1: it takes the view's reference).
    single: bool,
    depth: usize,
    relations: Vec<Names>,
    tables: Vec<BaseTable>,
    filters: Vec<(ast::Expr, bool)>,
    outer: bool,
}

impl Merge<'_> {
    /// One relation of the FROM, as the factor the rewritten statement reads.
    fn factor(
        &mut self,
        factor: &ast::TableFactor,
    ) -> Result<Result<ast::TableFactor, NotUpdatable>, SqlError> {
        let (name, alias) = match factor {
            ast::TableFactor::Table {
                name,
                alias,
                args: None,
                ..
            } => (name, alias),
            ast::TableFactor::NestedJoin {
                table_with_joins,
                alias: None,
            } => {
                return Ok(self
                    .joins(table_with_joins)?
                    .map(|twj| ast::TableFactor::NestedJoin {
                        table_with_joins: Box::new(twj),
                        alias: None,
                    }))
            }
            _ => return Ok(Err(NotUpdatable)),
        };
        let parts = crate::bind::ident_name(name);
        let (db, table) = match parts.as_slice() {
            [t] => (self.database.clone(), t.clone()),
            [d, t] => (d.clone(), t.clone()),
            _ => return Ok(Err(NotUpdatable)),
        };
        // What the view's SELECT calls the relation.
        let qualifiers = match alias {
            Some(a) => vec![vec![a.name.value.clone()]],
            None => vec![vec![table.clone()], vec![db.clone(), table.clone()]],
        };
        let reference = if self.single {
            self.reference.clone()
        } else {
            let local = alias.as_ref().map_or(&table, |a| &a.name.value);
            format!("{}.{local}", self.reference)
        };
        if let Some(inner) = self.catalog.view(&db, &table) {
            let below = match resolve(self.catalog, inner, &reference, self.depth + 1)? {
                Ok(r) => r,
                Err(e) => return Ok(Err(e)),
            };
            self.outer |= below.outer;
            self.filters.extend(below.filters);
            self.tables.extend(below.tables);
            self.relations.push(Names {
                qualifiers,
                columns: below.columns,
            });
            return Ok(Ok(if below.from.joins.is_empty() {
                below.from.relation
            } else {
                ast::TableFactor::NestedJoin {
                    table_with_joins: Box::new(below.from),
                    alias: None,
                }
            }));
        }
        let Some(base) = crate::bind::lookup_table(self.catalog, &db, &table) else {
            return Ok(Err(NotUpdatable));
        };
        let columns = base
            .columns
            .iter()
            .map(|c| {
                let e = ast::Expr::CompoundIdentifier(vec![
                    reference_ident(&reference),
                    ast::Ident::new(c.name.clone()),
                ]);
                (c.name.clone(), e)
            })
            .collect();
        self.relations.push(Names {
            qualifiers,
            columns,
        });
        self.tables.push(BaseTable {
            db: db.clone(),
            def: base,
            reference: reference.clone(),
            path: Vec::new(),
        });
        Ok(Ok(table_factor(&db, &table, &reference)))
    }

    /// A relation with its joins, each ON over the base tables (it may name the relations
    /// before it).
    fn joins(
        &mut self,
        twj: &ast::TableWithJoins,
    ) -> Result<Result<ast::TableWithJoins, NotUpdatable>, SqlError> {
        use ast::JoinOperator as J;
        let relation = match self.factor(&twj.relation)? {
            Ok(f) => f,
            Err(e) => return Ok(Err(e)),
        };
        let mut joins = Vec::new();
        for j in &twj.joins {
            let constraint = match &j.join_operator {
                J::Join(c) | J::Inner(c) | J::CrossJoin(c) | J::StraightJoin(c) => c,
                J::Left(c) | J::LeftOuter(c) | J::Right(c) | J::RightOuter(c) => {
                    self.outer = true;
                    c
                }
                _ => return Ok(Err(NotUpdatable)),
            };
            if !matches!(
                constraint,
                ast::JoinConstraint::On(_) | ast::JoinConstraint::None
            ) {
                return Ok(Err(NotUpdatable));
            }
            let relation = match self.factor(&j.relation)? {
                Ok(f) => f,
                Err(e) => return Ok(Err(e)),
            };
            let mut join_operator = j.join_operator.clone();
            if let J::Join(ast::JoinConstraint::On(e))
            | J::Inner(ast::JoinConstraint::On(e))
            | J::CrossJoin(ast::JoinConstraint::On(e))
            | J::StraightJoin(ast::JoinConstraint::On(e))
            | J::Left(ast::JoinConstraint::On(e))
            | J::LeftOuter(ast::JoinConstraint::On(e))
            | J::Right(ast::JoinConstraint::On(e))
            | J::RightOuter(ast::JoinConstraint::On(e)) = &mut join_operator
            {
                substitute_in(e, &self.relations, Lookup::Strict, "on clause")
                    .map_err(|_| invalid(&self.view))?;
            }
            joins.push(ast::Join {
                relation,
                global: false,
                join_operator,
            });
        }
        Ok(Ok(ast::TableWithJoins { relation, joins }))
    }
}

/// A reference as an identifier, quoted: a join view's references hold dots (rule 1), and a
/// statement printed and parsed again must read each as one name.
pub(crate) fn reference_ident(reference: &str) -> ast::Ident {
    ast::Ident::with_quote('`', reference)
}

/// `db.table AS reference`.
pub(crate) fn table_factor(db: &str, table: &str, reference: &str) -> ast::TableFactor {
    ast::TableFactor::Table {
        name: ast::ObjectName::from(vec![ast::Ident::new(db), ast::Ident::new(table)]),
        alias: Some(ast::TableAlias {
            explicit: true,
            name: reference_ident(reference),
            columns: Vec::new(),
            at: None,
        }),
        args: None,
        with_hints: Vec::new(),
        version: None,
        with_ordinality: false,
        partitions: Vec::new(),
        json_path: None,
        sample: None,
        index_directives: Vec::new(),
        inheritance: None,
    }
}

/// Resolves `def` down to its base tables (rule 1). `reference` is the name the rewritten
/// statement calls what the view reads; `depth` counts views above this one.
pub(crate) fn resolve(
    catalog: &Catalog,
    def: &Arc<ViewDef>,
    reference: &str,
    depth: usize,
) -> Result<Result<Resolved, NotUpdatable>, SqlError> {
    if depth >= crate::views::MAX_VIEW_NESTING {
        return Err(SqlError::unsupported(format!(
            "views nested more than {} deep",
            crate::views::MAX_VIEW_NESTING
        )));
    }
    if def.algorithm == ViewAlgorithm::TempTable {
        return Ok(Err(NotUpdatable));
    }
    let Ok(mut statements) = crate::parse::parse(&def.query) else {
        return Ok(Err(NotUpdatable));
    };
    let (Some(Statement::Query(q)), None) = (statements.pop(), statements.pop()) else {
        return Ok(Err(NotUpdatable));
    };
    let q = *q;
    if q.with.is_some() || q.limit_clause.is_some() || q.fetch.is_some() {
        return Ok(Err(NotUpdatable));
    }
    let ast::SetExpr::Select(select) = *q.body else {
        return Ok(Err(NotUpdatable));
    };
    let mut select = *select;
    let grouped = match &select.group_by {
        ast::GroupByExpr::All(_) => true,
        ast::GroupByExpr::Expressions(list, _) => !list.is_empty(),
    };
    if select.distinct.is_some()
        || grouped
        || select.having.is_some()
        || select.qualify.is_some()
        || !select.named_window.is_empty()
        || select.from.is_empty()
    {
        return Ok(Err(NotUpdatable));
    }
    let mut merge = Merge {
        catalog,
        view: def.clone(),
        database: def.database.clone(),
        reference: reference.to_string(),
        single: select.from.len() == 1 && select.from[0].joins.is_empty(),
        depth,
        relations: Vec::new(),
        tables: Vec::new(),
        filters: Vec::new(),
        outer: false,
    };
    let mut items = Vec::new();
    for twj in &select.from {
        match merge.joins(twj)? {
            Ok(item) => items.push(item),
            Err(e) => return Ok(Err(e)),
        }
    }
    let names = std::mem::take(&mut merge.relations);
    // A subquery in WHERE that names a table the view reads (MySQL's rule).
    if let Some(w) = &select.selection {
        let text = w.to_string().to_ascii_uppercase();
        if text.contains("SELECT")
            && merge
                .tables
                .iter()
                .any(|t| text.contains(&t.def.name.to_ascii_uppercase()))
        {
            return Ok(Err(NotUpdatable));
        }
    }
    let mut columns = Vec::new();
    for item in &mut select.projection {
        match item {
            ast::SelectItem::Wildcard(_) => {
                columns.extend(names.iter().flat_map(|n| n.columns.iter().cloned()));
            }
            ast::SelectItem::QualifiedWildcard(
                ast::SelectItemQualifiedWildcardKind::ObjectName(q),
                _,
            ) => {
                let qualifier = crate::bind::ident_name(q);
                let Some(relation) = names.iter().find(|n| n.qualifies(&qualifier)) else {
                    return Err(invalid(def));
                };
                columns.extend(relation.columns.iter().cloned());
            }
            ast::SelectItem::UnnamedExpr(e) => {
                if computes_over_rows(e) {
                    return Ok(Err(NotUpdatable));
                }
                let label = match &*e {
                    ast::Expr::Identifier(id) => id.value.clone(),
                    ast::Expr::CompoundIdentifier(p) => {
                        p.last().map(|i| i.value.clone()).unwrap_or_default()
                    }
                    other => other.to_string(),
                };
                substitute_in(e, &names, Lookup::Strict, "field list").map_err(|_| invalid(def))?;
                columns.push((label, e.clone()));
            }
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                if computes_over_rows(expr) {
                    return Ok(Err(NotUpdatable));
                }
                substitute_in(expr, &names, Lookup::Strict, "field list")
                    .map_err(|_| invalid(def))?;
                columns.push((alias.value.clone(), expr.clone()));
            }
            _ => return Ok(Err(NotUpdatable)),
        }
    }
    if !def.columns.is_empty() {
        if def.columns.len() != columns.len() {
            return Err(invalid(def));
        }
        for ((name, _), rename) in columns.iter_mut().zip(&def.columns) {
            name.clone_from(rename);
        }
    }
    let mut filters = Vec::new();
    if let Some(mut w) = select.selection.take() {
        substitute_in(&mut w, &names, Lookup::Strict, "where clause").map_err(|_| invalid(def))?;
        filters.push((w, def.check_option != ViewCheckOption::None));
    }
    // Rule 4: CASCADED makes every view below checked.
    let cascade = def.check_option == ViewCheckOption::Cascaded;
    for (_, checked) in &mut merge.filters {
        *checked |= cascade;
    }
    filters.extend(merge.filters);
    for t in &mut merge.tables {
        t.path.insert(0, def.clone());
    }
    let mut items = items.into_iter();
    let Some(mut from) = items.next() else {
        return Ok(Err(NotUpdatable));
    };
    // A view over one join view reads that view's joins, not one parenthesized relation.
    if from.joins.is_empty() {
        if let ast::TableFactor::NestedJoin {
            table_with_joins,
            alias: None,
        } = from.relation
        {
            from = *table_with_joins;
        }
    }
    // Rule 2: `a, b` is `a CROSS JOIN b`.
    for item in items {
        from.joins.push(ast::Join {
            relation: ast::TableFactor::NestedJoin {
                table_with_joins: Box::new(item),
                alias: None,
            },
            global: false,
            join_operator: ast::JoinOperator::CrossJoin(ast::JoinConstraint::None),
        });
    }
    Ok(Ok(Resolved {
        tables: merge.tables,
        from,
        outer: merge.outer,
        columns,
        filters,
    }))
}

fn invalid(def: &ViewDef) -> SqlError {
    SqlError::new(
        1356,
        "HY000",
        format!(
            "View '{}.{}' references invalid table(s) or column(s) or function(s) or \
             definer/invoker of view lack rights to use them",
            def.database, def.name
        ),
    )
}

/// Whether `def` is updatable (rule 1): `information_schema.VIEWS.IS_UPDATABLE` and the
/// check of CREATE VIEW ... WITH CHECK OPTION.
pub(crate) fn is_updatable(catalog: &Catalog, def: &Arc<ViewDef>) -> bool {
    matches!(resolve(catalog, def, &def.name, 0), Ok(Ok(_)))
}
