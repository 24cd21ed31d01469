//! INSERT, UPDATE and DELETE through views. A statement whose target is an updatable view is
//! rewritten, before binding, into the same statement on the view's base table: the view's
//! columns become the expressions they stand for, its WHERE is AND-ed to the statement's, and
//! a `WITH CHECK OPTION` becomes a condition every written row must meet (`ViewCheck`).
//!
//! Rules:
//! 1. A view is updatable (view_resolve.rs) when its SELECT reads one base table or one updatable view, with no
//!    DISTINCT, GROUP BY, HAVING, aggregate or window function, UNION (or other set
//!    operation), WITH, LIMIT, subquery in the select list, or subquery in WHERE naming the
//!    table it reads, and is not ALGORITHM=TEMPTABLE (MySQL's list). Otherwise INSERT is 1471,
//!    UPDATE and DELETE 1288.
//! 2. A view column is a base column when its expression is a column reference. UPDATE may
//!    set only those (1348 otherwise); INSERT needs every view column to be one, each base
//!    column at most once (1471), and every base column left out to have a default (1423).
//! 3. The statement's names are resolved against the view: an unqualified name or one
//!    qualified by the view's name (or alias) must be a view column (1054 otherwise). Inside
//!    a subquery only names qualified by the view's name are the view's; others belong to
//!    the subquery. The rewritten statement calls the base table by the view's name.
//! 4. CHECK OPTION (MySQL's rule): walking the views from the named one down, a view's WHERE
//!    is checked when the view has a check option or when a view above it has CASCADED;
//!    CASCADED makes every view below checked. A written row (inserted, or updated and
//!    changed) that fails is 1369 naming the view the statement names.
//! 5. Privileges: the statement needs its privilege on the named view (privilege.rs). Each
//!    SQL SECURITY INVOKER view passes the need down to what it reads; the first DEFINER view
//!    stops it there (the definer's own privileges are not checked, as for reads, views.rs
//!    rule 2).
//! 6. The multi-table forms (`UPDATE v JOIN u ...`, `DELETE v FROM v ...`) do not write
//!    through views: a view target there is 1288 (multi_dml.rs binds it as a derived table).

use std::sync::Arc;

use shale_table::{Catalog, ViewDef, ViewSecurity};
use sqlparser::ast::{self, Statement};

use crate::error::SqlError;
use crate::expr::{Env, Expr};
use crate::privilege::Need;
use crate::session::Session;
use crate::view_resolve::{
    and, base_column, resolve, strip_qualifiers, substitute, Names, Resolved,
};

/// What a write through a view turned into.
pub(crate) struct Rewritten {
    /// The statement on the base table (the input unchanged when it names no view).
    pub stmt: Statement,
    /// The condition a written row must meet (rule 4), over the base table, and the view
    /// `db.v` the error names.
    pub check: Option<(ast::Expr, String)>,
    /// What the INVOKER views pass down (rule 5).
    pub needs: Vec<Need>,
    /// The base table, when a DEFINER view reads it: the binder's SELECT need on it is
    /// dropped (rule 5).
    pub hidden: Option<(String, String)>,
    /// The view the statement names and the statement's kind, for `translate`.
    pub target: Option<(String, &'static str)>,
}

/// A subquery of the statement reading the view's table is 1443 for a view where it is
/// 1093 for a table (`target`: the view the statement names and the statement's kind), as
/// MySQL says it.
pub(crate) fn translate(target: Option<&(String, &'static str)>, e: SqlError) -> SqlError {
    match (target, e.code) {
        (Some((view, op)), 1093) => SqlError::new(
            1443,
            "HY000",
            format!("The definition of table '{view}' prevents operation {op} on table '{view}'."),
        ),
        _ => e,
    }
}

/// The bound check of rule 4.
#[derive(Debug, Clone)]
pub(crate) struct ViewCheck {
    pub cond: Expr,
    /// `db.v`, as 1369 names it.
    pub view: String,
}

impl ViewCheck {
    /// 1369 unless `row` (a row of the base table as it will be written) meets the check.
    pub(crate) fn verify(&self, row: &[shale_table::Value], env: &dyn Env) -> Result<(), SqlError> {
        if crate::value::truth(&self.cond.eval(row, env)?) == Some(true) {
            return Ok(());
        }
        Err(SqlError::new(
            1369,
            "HY000",
            format!("CHECK OPTION failed '{}'", self.view),
        ))
    }
}

fn not_updatable(name: &str, statement: &str) -> SqlError {
    SqlError::new(
        1288,
        "HY000",
        format!("The target table {name} of the {statement} is not updatable"),
    )
}

fn not_insertable(name: &str) -> SqlError {
    SqlError::new(
        1471,
        "HY000",
        format!("The target table {name} of the INSERT is not insertable-into"),
    )
}

/// The view `name` names, with its database.
fn view_named(
    session: &Session,
    catalog: &Catalog,
    name: &ast::ObjectName,
) -> Option<Arc<ViewDef>> {
    let parts = crate::bind::ident_name(name);
    let (db, n) = match parts.as_slice() {
        [n] => (session.current_database()?.to_string(), n.clone()),
        [d, n] => (d.clone(), n.clone()),
        _ => return None,
    };
    catalog.view(&db, &n).cloned()
}

fn base_name(r: &Resolved) -> ast::ObjectName {
    ast::ObjectName::from(vec![
        ast::Ident::new(r.base_db.clone()),
        ast::Ident::new(r.base.name.clone()),
    ])
}

fn table_alias(name: &str) -> ast::TableAlias {
    ast::TableAlias {
        explicit: true,
        name: ast::Ident::new(name),
        columns: Vec::new(),
        at: None,
    }
}

/// Rewrites `stmt` when its target is a view (rules 1 to 5); returns it unchanged otherwise.
pub(crate) fn rewrite(session: &Session, stmt: Statement) -> Result<Rewritten, SqlError> {
    let unchanged = |stmt| Rewritten {
        stmt,
        check: None,
        needs: Vec::new(),
        hidden: None,
        target: None,
    };
    if !matches!(
        stmt,
        Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_)
    ) {
        return Ok(unchanged(stmt));
    }
    let catalog = session.instance().store.catalog();
    // The common case costs one look at the catalog.
    if catalog
        .views
        .values()
        .all(std::collections::BTreeMap::is_empty)
    {
        return Ok(unchanged(stmt));
    }
    match stmt {
        Statement::Insert(mut ins) => {
            let ast::TableObject::TableName(name) = &ins.table else {
                return Ok(unchanged(Statement::Insert(ins)));
            };
            let Some(def) = view_named(session, &catalog, name) else {
                return Ok(unchanged(Statement::Insert(ins)));
            };
            let label = def.name.clone();
            let reference = def.name.clone();
            let Ok(r) = resolve(&catalog, &def, &reference, 0)? else {
                return Err(not_insertable(&label));
            };
            let names = view_names(&r, &def, None);
            rewrite_insert(&mut ins, &r, &names, &label)?;
            let privs = insert_privs(&ins);
            ins.table = ast::TableObject::TableName(base_name(&r));
            Ok(finish(Statement::Insert(ins), &r, privs, false, "INSERT"))
        }
        Statement::Update(mut u) => {
            let ast::TableFactor::Table { name, alias, .. } = &u.table.relation else {
                return Ok(unchanged(Statement::Update(u)));
            };
            let Some(def) = view_named(session, &catalog, name) else {
                return Ok(unchanged(Statement::Update(u)));
            };
            if !u.table.joins.is_empty() || u.from.is_some() {
                return Err(not_updatable(&def.name, "UPDATE")); // rule 6
            }
            let alias = alias.as_ref().map(|a| a.name.value.clone());
            let reference = alias.clone().unwrap_or_else(|| def.name.clone());
            let Ok(r) = resolve(&catalog, &def, &reference, 0)? else {
                return Err(not_updatable(&def.name, "UPDATE"));
            };
            let names = view_names(&r, &def, alias.as_deref());
            for a in &mut u.assignments {
                let ast::AssignmentTarget::ColumnName(target) = &a.target else {
                    return Err(SqlError::unsupported(a.to_string()));
                };
                let parts = crate::bind::ident_name(target);
                let Some((column, qualifier)) = parts.split_last() else {
                    return Err(SqlError::unsupported(a.to_string()));
                };
                let Some(e) = (qualifier.is_empty() || names.qualifies(qualifier))
                    .then(|| names.column(column))
                    .flatten()
                else {
                    return Err(SqlError::unknown_column(&parts.join("."), "field list"));
                };
                let Some(base) = base_column(e) else {
                    return Err(SqlError::new(
                        1348,
                        "HY000",
                        format!("Column '{column}' is not updatable"),
                    ));
                };
                a.target = ast::AssignmentTarget::ColumnName(ast::ObjectName::from(vec![
                    ast::Ident::new(reference.clone()),
                    ast::Ident::new(base),
                ]));
                substitute(&mut a.value, &names, "field list")?;
            }
            // The statement's own WHERE reads columns (SELECT), not the view's.
            let read = if u.selection.is_some() {
                crate::grants::SELECT
            } else {
                0
            };
            u.selection = with_filters(u.selection.take(), &r, &names)?;
            for o in &mut u.order_by {
                substitute(&mut o.expr, &names, "order clause")?;
            }
            u.table.relation = ast::TableFactor::Table {
                name: base_name(&r),
                alias: Some(table_alias(&reference)),
                args: None,
                with_hints: Vec::new(),
                version: None,
                with_ordinality: false,
                partitions: Vec::new(),
                json_path: None,
                sample: None,
                index_directives: Vec::new(),
                inheritance: None,
            };
            Ok(finish(
                Statement::Update(u),
                &r,
                crate::grants::UPDATE | read,
                true,
                "UPDATE",
            ))
        }
        Statement::Delete(mut d) => {
            let from = match &mut d.from {
                ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
            };
            let single = d.tables.is_empty()
                && d.using.is_none()
                && from.len() == 1
                && from[0].joins.is_empty();
            if !single {
                // Rule 6: the targets of the multi-table forms.
                let targets: Vec<ast::ObjectName> = if d.tables.is_empty() {
                    from.iter()
                        .filter(|t| t.joins.is_empty())
                        .filter_map(|t| match &t.relation {
                            ast::TableFactor::Table { name, .. } => Some(name.clone()),
                            _ => None,
                        })
                        .collect()
                } else {
                    d.tables.clone()
                };
                if let Some(def) = targets
                    .iter()
                    .find_map(|n| view_named(session, &catalog, n))
                {
                    return Err(not_updatable(&def.name, "DELETE"));
                }
                return Ok(unchanged(Statement::Delete(d)));
            }
            let ast::TableFactor::Table { name, alias, .. } = &mut from[0].relation else {
                return Ok(unchanged(Statement::Delete(d)));
            };
            let Some(def) = view_named(session, &catalog, name) else {
                return Ok(unchanged(Statement::Delete(d)));
            };
            let alias_name = alias.as_ref().map(|a| a.name.value.clone());
            let reference = alias_name.clone().unwrap_or_else(|| def.name.clone());
            let Ok(r) = resolve(&catalog, &def, &reference, 0)? else {
                return Err(not_updatable(&def.name, "DELETE"));
            };
            *name = base_name(&r);
            *alias = Some(table_alias(&reference));
            let names = view_names(&r, &def, alias_name.as_deref());
            let read = if d.selection.is_some() {
                crate::grants::SELECT
            } else {
                0
            };
            d.selection = with_filters(d.selection.take(), &r, &names)?;
            for o in &mut d.order_by {
                substitute(&mut o.expr, &names, "order clause")?;
            }
            let mut out = finish(
                Statement::Delete(d),
                &r,
                crate::grants::DELETE | read,
                true,
                "DELETE",
            );
            out.check = None; // DELETE writes no row to check.
            Ok(out)
        }
        other => Ok(unchanged(other)),
    }
}

/// The names the statement may use for the view (rule 3).
fn view_names(r: &Resolved, def: &ViewDef, alias: Option<&str>) -> Names {
    let qualifiers = match alias {
        Some(a) => vec![vec![a.to_string()]],
        None => vec![
            vec![def.name.clone()],
            vec![def.database.clone(), def.name.clone()],
        ],
    };
    Names {
        qualifiers,
        columns: r.columns.clone(),
    }
}

/// The statement's WHERE on the view's columns AND every view's WHERE.
fn with_filters(
    selection: Option<ast::Expr>,
    r: &Resolved,
    names: &Names,
) -> Result<Option<ast::Expr>, SqlError> {
    let mut out: Option<ast::Expr> = None;
    for (f, _) in &r.filters {
        out = Some(match out {
            Some(o) => and(o, f.clone()),
            None => f.clone(),
        });
    }
    if let Some(mut w) = selection {
        substitute(&mut w, names, "where clause")?;
        out = Some(match out {
            Some(o) => and(o, w),
            None => w,
        });
    }
    Ok(out)
}

fn insert_privs(ins: &ast::Insert) -> u32 {
    let mut privs = crate::grants::INSERT;
    if ins.on.is_some() {
        privs |= crate::grants::UPDATE;
    }
    if ins.replace_into {
        privs |= crate::grants::DELETE;
    }
    privs
}

/// INSERT's column list mapped onto the base table (rule 2).
fn rewrite_insert(
    ins: &mut ast::Insert,
    r: &Resolved,
    names: &Names,
    label: &str,
) -> Result<(), SqlError> {
    let mut bases: Vec<String> = Vec::new();
    for (_, e) in &r.columns {
        let Some(b) = base_column(e) else {
            return Err(not_insertable(label));
        };
        if bases.iter().any(|x| x.eq_ignore_ascii_case(b)) {
            return Err(not_insertable(label));
        }
        bases.push(b.to_string());
    }
    let listed: Vec<String> = if ins.columns.is_empty() {
        bases.clone()
    } else {
        let mut out = Vec::new();
        for c in &ins.columns {
            let parts = crate::bind::ident_name(c);
            let column = parts.last().cloned().unwrap_or_default();
            let Some(e) = names.column(&column) else {
                return Err(SqlError::unknown_column(&column, "field list"));
            };
            out.push(base_column(e).unwrap_or_default().to_string());
        }
        out
    };
    // Base columns the view leaves out must have a default (1423, as MySQL in strict mode).
    let view = r
        .chain
        .first()
        .map(|d| format!("{}.{}", d.database, d.name));
    for c in &r.base.columns {
        let given = listed.iter().any(|l| l.eq_ignore_ascii_case(&c.name));
        let defaulted = c.default.is_some()
            || c.nullable
            || c.auto_increment
            || c.generated.is_some()
            || c.auto_timestamp.on_insert;
        if !given && !defaulted {
            return Err(SqlError::new(
                1423,
                "HY000",
                format!(
                    "Field of view '{}' underlying table doesn't have a default value",
                    view.clone().unwrap_or_default()
                ),
            ));
        }
    }
    ins.columns = listed
        .into_iter()
        .map(|c| ast::ObjectName::from(vec![ast::Ident::new(c)]))
        .collect();
    if let Some(ast::OnInsert::DuplicateKeyUpdate(assignments)) = &mut ins.on {
        let unqualified = Names {
            qualifiers: names.qualifiers.clone(),
            columns: names
                .columns
                .iter()
                .map(|(n, e)| {
                    let plain = base_column(e)
                        .map_or_else(|| e.clone(), |b| ast::Expr::Identifier(ast::Ident::new(b)));
                    (n.clone(), plain)
                })
                .collect(),
        };
        for a in assignments {
            let ast::AssignmentTarget::ColumnName(target) = &a.target else {
                return Err(SqlError::unsupported(a.to_string()));
            };
            let parts = crate::bind::ident_name(target);
            let column = parts.last().cloned().unwrap_or_default();
            let Some(e) = names.column(&column) else {
                return Err(SqlError::unknown_column(&column, "field list"));
            };
            let base = base_column(e).unwrap_or_default().to_string();
            a.target =
                ast::AssignmentTarget::ColumnName(ast::ObjectName::from(vec![ast::Ident::new(
                    base,
                )]));
            substitute(&mut a.value, &unqualified, "field list")?;
        }
    }
    Ok(())
}

/// The check, needs and hidden table of a rewritten statement (rules 4 and 5).
fn finish(
    stmt: Statement,
    r: &Resolved,
    privs: u32,
    qualified: bool,
    op: &'static str,
) -> Rewritten {
    let mut check: Option<ast::Expr> = None;
    for (f, checked) in &r.filters {
        if *checked {
            check = Some(match check {
                Some(c) => and(c, f.clone()),
                None => f.clone(),
            });
        }
    }
    if !qualified {
        // INSERT binds its check over the table under its own name.
        if let Some(c) = &mut check {
            strip_qualifiers(c);
        }
    }
    let top = r
        .chain
        .first()
        .map(|d| format!("{}.{}", d.database, d.name))
        .unwrap_or_default();
    let target = r.chain.first().map(|d| (d.name.clone(), op));
    let mut needs = Vec::new();
    let mut hidden = None;
    for (i, def) in r.chain.iter().enumerate() {
        if def.security == ViewSecurity::Definer {
            hidden = Some((r.base_db.clone(), r.base.name.clone()));
            break;
        }
        let (db, table) = match r.chain.get(i + 1) {
            Some(next) => (next.database.clone(), next.name.clone()),
            None => (r.base_db.clone(), r.base.name.clone()),
        };
        needs.push(Need::Table { privs, db, table });
    }
    Rewritten {
        stmt,
        check: check.map(|c| (c, top)),
        needs,
        hidden,
        target,
    }
}

/// Drops the binder's SELECT need on a table a DEFINER view reads (rule 5): the first time
/// the binder resolved it, which is the rewritten statement's target.
pub(crate) fn hide(touched: &mut Vec<(String, String)>, hidden: Option<&(String, String)>) {
    if let Some((db, table)) = hidden {
        if let Some(i) = touched
            .iter()
            .position(|(d, t)| d == db && t.eq_ignore_ascii_case(table))
        {
            touched.remove(i);
        }
    }
}

/// Binds the check of rule 4 into the planned INSERT or UPDATE, over its table's row.
pub(crate) fn attach_check(
    binder: &mut crate::bind::Binder<'_>,
    check: Option<&(ast::Expr, String)>,
    mut planned: crate::session::Planned,
) -> Result<crate::session::Planned, SqlError> {
    use crate::session::Planned;
    let Some((cond, view)) = check else {
        return Ok(planned);
    };
    let subqueries = binder.subqueries.len();
    let cond = binder.condition_in(cond, "where clause")?;
    if binder.subqueries.len() != subqueries {
        return Err(SqlError::unsupported(
            "WITH CHECK OPTION on a view whose WHERE holds a subquery",
        ));
    }
    let bound = Some(ViewCheck {
        cond,
        view: view.clone(),
    });
    match &mut planned {
        Planned::Insert(i, _) => i.view_check = bound,
        Planned::Update(u, _) => u.view_check = bound,
        Planned::MultiTable(m) => m.view_check = bound,
        _ => {}
    }
    Ok(planned)
}
