//! What an updatable view stands for (view_dml.rs rule 1): a view resolved down to its base
//! table, with each view column as an expression over that table and each level's WHERE, and
//! the substitution that turns a statement's names for a view's columns into those
//! expressions (rule 3).

use std::ops::ControlFlow;
use std::sync::Arc;

use shale_table::{Catalog, TableDef, ViewAlgorithm, ViewCheckOption, ViewDef};
use sqlparser::ast::{self, Statement, VisitMut, VisitorMut};

use crate::error::SqlError;

/// Why a view cannot be written (rule 1), kept until the statement's kind picks the error.
pub(crate) struct NotUpdatable;

/// A view resolved down to its base table.
pub(crate) struct Resolved {
    pub(crate) base_db: String,
    pub(crate) base: Arc<TableDef>,
    /// The view's columns: name, and expression over the base table (columns qualified by
    /// the name the rewritten statement gives the base table).
    pub(crate) columns: Vec<(String, ast::Expr)>,
    /// Each level's WHERE (over the base table) with whether rule 4 checks it, top first.
    pub(crate) filters: Vec<(ast::Expr, bool)>,
    /// The views from the named one down.
    pub(crate) chain: Vec<Arc<ViewDef>>,
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

/// Replaces column references with what they stand for (rule 3).
struct Substitute<'a> {
    names: &'a Names,
    clause: &'static str,
    depth: usize,
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
        let replacement = match e {
            ast::Expr::Identifier(id) if self.depth == 0 => {
                // `@v` user variables and `DEFAULT` are not columns.
                if id.value.starts_with('@')
                    || (id.quote_style.is_none() && id.value.eq_ignore_ascii_case("DEFAULT"))
                {
                    return ControlFlow::Continue(());
                }
                match self.names.column(&id.value) {
                    Some(r) => r.clone(),
                    None => {
                        return ControlFlow::Break(SqlError::unknown_column(&id.value, self.clause))
                    }
                }
            }
            ast::Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                let names: Vec<String> = parts.iter().map(|p| p.value.clone()).collect();
                let Some((column, qualifier)) = names.split_last() else {
                    return ControlFlow::Continue(());
                };
                if !self.names.qualifies(qualifier) {
                    if self.depth == 0 {
                        return ControlFlow::Break(SqlError::unknown_column(
                            &names.join("."),
                            self.clause,
                        ));
                    }
                    return ControlFlow::Continue(());
                }
                match self.names.column(column) {
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

pub(crate) fn substitute(
    e: &mut ast::Expr,
    names: &Names,
    clause: &'static str,
) -> Result<(), SqlError> {
    let mut visitor = Substitute {
        names,
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

/// The column a view column's expression names, if it is a plain reference (rule 2).
pub(crate) fn base_column(e: &ast::Expr) -> Option<&str> {
    match e {
        ast::Expr::CompoundIdentifier(parts) => parts.last().map(|p| p.value.as_str()),
        ast::Expr::Identifier(id) => Some(id.value.as_str()),
        _ => None,
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

/// Resolves `def` down to its base table (rule 1). `reference` is the name the rewritten
/// statement calls the base table; `depth` counts views above this one.
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
        || select.from.len() != 1
        || !select.from[0].joins.is_empty()
    {
        return Ok(Err(NotUpdatable));
    }
    let ast::TableFactor::Table {
        name, alias, args, ..
    } = &select.from[0].relation
    else {
        return Ok(Err(NotUpdatable));
    };
    if args.is_some() {
        return Ok(Err(NotUpdatable));
    }
    let parts = crate::bind::ident_name(name);
    let (db, table) = match parts.as_slice() {
        [t] => (def.database.clone(), t.clone()),
        [d, t] => (d.clone(), t.clone()),
        _ => return Ok(Err(NotUpdatable)),
    };
    // What the view's SELECT calls the relation it reads.
    let qualifiers = match alias {
        Some(a) => vec![vec![a.name.value.clone()]],
        None => vec![vec![table.clone()], vec![db.clone(), table.clone()]],
    };
    let mut below = match catalog.view(&db, &table) {
        Some(inner) => match resolve(catalog, inner, reference, depth + 1)? {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        },
        None => {
            let Some(base) = crate::bind::lookup_table(catalog, &db, &table) else {
                return Ok(Err(NotUpdatable));
            };
            let columns = base
                .columns
                .iter()
                .map(|c| {
                    let e = ast::Expr::CompoundIdentifier(vec![
                        ast::Ident::new(reference),
                        ast::Ident::new(c.name.clone()),
                    ]);
                    (c.name.clone(), e)
                })
                .collect();
            Resolved {
                base_db: db.clone(),
                base,
                columns,
                filters: Vec::new(),
                chain: Vec::new(),
            }
        }
    };
    let names = Names {
        qualifiers,
        columns: std::mem::take(&mut below.columns),
    };
    // A subquery in WHERE that names the table the view reads (MySQL's rule).
    if let Some(w) = &select.selection {
        let text = w.to_string().to_ascii_uppercase();
        if text.contains("SELECT") && text.contains(&table.to_ascii_uppercase()) {
            return Ok(Err(NotUpdatable));
        }
    }
    let mut columns = Vec::new();
    for item in &mut select.projection {
        match item {
            ast::SelectItem::Wildcard(_) => columns.extend(names.columns.iter().cloned()),
            ast::SelectItem::QualifiedWildcard(
                ast::SelectItemQualifiedWildcardKind::ObjectName(q),
                _,
            ) if names.qualifies(&crate::bind::ident_name(q)) => {
                columns.extend(names.columns.iter().cloned());
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
                substitute(e, &names, "field list").map_err(|_| invalid(def))?;
                columns.push((label, e.clone()));
            }
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                if computes_over_rows(expr) {
                    return Ok(Err(NotUpdatable));
                }
                substitute(expr, &names, "field list").map_err(|_| invalid(def))?;
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
        substitute(&mut w, &names, "where clause").map_err(|_| invalid(def))?;
        filters.push((w, def.check_option != ViewCheckOption::None));
    }
    // Rule 4: CASCADED makes every view below checked.
    let cascade = def.check_option == ViewCheckOption::Cascaded;
    for (_, checked) in &mut below.filters {
        *checked |= cascade;
    }
    filters.extend(below.filters);
    let mut chain = vec![def.clone()];
    chain.extend(below.chain);
    Ok(Ok(Resolved {
        base_db: below.base_db,
        base: below.base,
        columns,
        filters,
        chain,
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

/// `ref.c` to `c` throughout (outside subqueries).
pub(crate) fn strip_qualifiers(e: &mut ast::Expr) {
    struct Strip(usize);
    impl VisitorMut for Strip {
        type Break = ();
        fn pre_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
            self.0 += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
            self.0 -= 1;
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
            if self.0 == 0 {
                if let ast::Expr::CompoundIdentifier(parts) = e {
                    if let Some(last) = parts.pop() {
                        *e = ast::Expr::Identifier(last);
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    let _ = e.visit(&mut Strip(0));
}
