//! INSERT, UPDATE and DELETE through views. A statement whose target is an updatable view is
//! rewritten, before binding, into the same statement on the view's base table: the view's
//! columns become the expressions they stand for, its WHERE is AND-ed to the statement's, and
//! a `WITH CHECK OPTION` becomes a condition every written row must meet (`ViewCheck`).
//!
//! Rules:
//! 1. A view is updatable (view_resolve.rs) when its SELECT reads base tables or updatable
//!    views (one, or several joined: a join view), with no DISTINCT, GROUP BY, HAVING,
//!    aggregate or window function, UNION (or other set operation), WITH, LIMIT, subquery in
//!    the select list, or subquery in WHERE naming a table it reads, and is not
//!    ALGORITHM=TEMPTABLE (MySQL's list). Otherwise INSERT is 1471, UPDATE and DELETE 1288.
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
//! 6. A join view (MySQL's and MariaDB's rules): UPDATE may set the columns of one of its
//!    base tables (1393 for two); it becomes a multi-table UPDATE over the view's joins
//!    (multi_dml.rs), so ORDER BY and LIMIT are 1221 there. INSERT needs a column list
//!    (1394) naming columns of one base table (1393), whose row alone is inserted; a view
//!    with an outer join is not insertable (1471). DELETE is 1395. Its CHECK OPTION is
//!    checked on the joined row as updated; for INSERT, on the inserted row with the other
//!    tables' columns NULL (MariaDB's result).
//! 7. The multi-table forms (`UPDATE v JOIN u ...`, `DELETE v FROM v ...`) merge each view
//!    they write into the statement's FROM (view_merge.rs); a view they only read stays a
//!    derived table.

use std::ops::ControlFlow;
use std::sync::Arc;

use shale_table::{Catalog, ViewDef, ViewSecurity};
use sqlparser::ast::{self, Statement, VisitMut, VisitorMut};

use crate::error::SqlError;
use crate::expr::{Env, Expr};
use crate::privilege::Need;
use crate::session::Session;
use crate::view_resolve::{
    and, base_reference, resolve, substitute, table_factor, BaseTable, Names, Resolved,
};

/// What a write through a view turned into.
pub(crate) struct Rewritten {
    /// The statement on the base tables (the input unchanged when it names no view).
    pub stmt: Statement,
    /// The condition a written row must meet (rule 4), over the base tables, and the view
    /// `db.v` the error names.
    pub check: Option<(ast::Expr, String)>,
    /// What the INVOKER views pass down (rule 5).
    pub needs: Vec<Need>,
    /// The base tables DEFINER views read: the binder's SELECT needs on them are dropped
    /// (rule 5).
    pub hidden: Vec<(String, String)>,
    /// The view the statement names and the statement's kind, for `translate`.
    pub target: Option<(String, &'static str)>,
}

impl Rewritten {
    pub(crate) fn unchanged(stmt: Statement) -> Rewritten {
        Rewritten {
            stmt,
            check: None,
            needs: Vec::new(),
            hidden: Vec::new(),
            target: None,
        }
    }
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

pub(crate) fn not_updatable(name: &str, statement: &str) -> SqlError {
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

/// 1393: a statement writing two base tables of a join view (rule 6).
pub(crate) fn several_tables(view: &ViewDef) -> SqlError {
    SqlError::new(
        1393,
        "HY000",
        format!(
            "Can not modify more than one base table through a join view '{}.{}'",
            view.database, view.name
        ),
    )
}

/// 1395: DELETE from a join view (rule 6).
pub(crate) fn join_delete(view: &ViewDef) -> SqlError {
    SqlError::new(
        1395,
        "HY000",
        format!(
            "Can not delete from join view '{}.{}'",
            view.database, view.name
        ),
    )
}

fn not_updatable_column(column: &str) -> SqlError {
    SqlError::new(1348, "HY000", format!("Column '{column}' is not updatable"))
}

/// The view `name` names, with its database.
pub(crate) fn view_named(
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

fn base_name(t: &BaseTable) -> ast::ObjectName {
    ast::ObjectName::from(vec![
        ast::Ident::new(t.db.clone()),
        ast::Ident::new(t.def.name.clone()),
    ])
}

/// The base table an assignment's target names through the view, as `reference.column`
/// (1054 for a name not the view's, 1348 for a column that is no base column).
pub(crate) fn assignment_target(
    a: &ast::Assignment,
    names: &Names,
) -> Result<(String, String), SqlError> {
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
    let Some((reference, base)) = base_reference(e) else {
        return Err(not_updatable_column(column));
    };
    Ok((reference.to_string(), base.to_string()))
}

/// `reference.column` as an assignment target.
pub(crate) fn qualified_target(reference: &str, column: &str) -> ast::AssignmentTarget {
    ast::AssignmentTarget::ColumnName(ast::ObjectName::from(vec![
        crate::view_resolve::reference_ident(reference),
        ast::Ident::new(column),
    ]))
}

/// Rewrites `stmt` when its target is a view (rules 1 to 7); returns it unchanged otherwise.
pub(crate) fn rewrite(session: &Session, stmt: Statement) -> Result<Rewritten, SqlError> {
    if !matches!(
        stmt,
        Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_)
    ) {
        return Ok(Rewritten::unchanged(stmt));
    }
    // A temporary table shadows a view of its name (temp_tables.rs rule 1).
    let catalog = session.catalog();
    // The common case costs one look at the catalog.
    if catalog
        .views
        .values()
        .all(std::collections::BTreeMap::is_empty)
    {
        return Ok(Rewritten::unchanged(stmt));
    }
    match stmt {
        Statement::Insert(ins) => rewrite_insert(session, &catalog, ins),
        Statement::Update(u) if !u.table.joins.is_empty() || u.from.is_some() => {
            crate::view_merge::update(session, &catalog, u) // rule 7
        }
        Statement::Update(u) => rewrite_update(session, &catalog, u),
        Statement::Delete(d) => rewrite_delete(session, &catalog, d),
        other => Ok(Rewritten::unchanged(other)),
    }
}

fn rewrite_insert(
    session: &Session,
    catalog: &Catalog,
    mut ins: ast::Insert,
) -> Result<Rewritten, SqlError> {
    let ast::TableObject::TableName(name) = &ins.table else {
        return Ok(Rewritten::unchanged(Statement::Insert(ins)));
    };
    let Some(def) = view_named(session, catalog, name) else {
        return Ok(Rewritten::unchanged(Statement::Insert(ins)));
    };
    let label = def.name.clone();
    let Ok(r) = resolve(catalog, &def, &def.name, 0)? else {
        return Err(not_insertable(&label));
    };
    let names = view_names(&def, None, &r);
    // Rule 6: the one base table of a join view the column list names.
    let target = if r.is_join() {
        if r.outer {
            return Err(not_insertable(&label));
        }
        if ins.columns.is_empty() {
            return Err(SqlError::new(
                1394,
                "HY000",
                format!(
                    "Can not insert into join view '{}.{}' without fields list",
                    def.database, def.name
                ),
            ));
        }
        let mut target: Option<String> = None;
        for c in &ins.columns {
            let column = crate::bind::ident_name(c).pop().unwrap_or_default();
            let Some(e) = names.column(&column) else {
                return Err(SqlError::unknown_column(&column, "field list"));
            };
            let Some((reference, _)) = base_reference(e) else {
                return Err(not_insertable(&label));
            };
            match &target {
                Some(t) if t != reference => return Err(several_tables(&def)),
                Some(_) => {}
                None => target = Some(reference.to_string()),
            }
        }
        target.unwrap_or_default()
    } else {
        r.single().reference.clone()
    };
    let Some(table) = r.table(&target) else {
        return Err(SqlError::internal("a view column of no base table"));
    };
    map_insert_columns(&mut ins, &r, table, &names, &def)?;
    let privs = insert_privs(&ins);
    ins.table = ast::TableObject::TableName(base_name(table));
    let mut out = finish(Statement::Insert(ins), &r, table, privs, "INSERT");
    // INSERT binds its check over the inserted row under its table's own name.
    if let Some((c, _)) = &mut out.check {
        as_row_of(c, &target);
    }
    Ok(out)
}

fn rewrite_update(
    session: &Session,
    catalog: &Catalog,
    mut u: ast::Update,
) -> Result<Rewritten, SqlError> {
    let ast::TableFactor::Table { name, alias, .. } = &u.table.relation else {
        return Ok(Rewritten::unchanged(Statement::Update(u)));
    };
    let Some(def) = view_named(session, catalog, name) else {
        return Ok(Rewritten::unchanged(Statement::Update(u)));
    };
    let alias = alias.as_ref().map(|a| a.name.value.clone());
    let reference = alias.clone().unwrap_or_else(|| def.name.clone());
    let Ok(r) = resolve(catalog, &def, &reference, 0)? else {
        return Err(not_updatable(&def.name, "UPDATE"));
    };
    let names = view_names(&def, alias.as_deref(), &r);
    let mut written: Option<String> = None;
    for a in &mut u.assignments {
        let (table, column) = assignment_target(a, &names)?;
        match &written {
            Some(w) if *w != table => return Err(several_tables(&def)),
            Some(_) => {}
            None => written = Some(table.clone()),
        }
        a.target = qualified_target(&table, &column);
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
    let Some(table) = written.as_deref().and_then(|w| r.table(w)) else {
        return Err(SqlError::unsupported("UPDATE without SET"));
    };
    // A join view becomes a multi-table UPDATE over its joins (rule 6).
    u.table = if r.is_join() {
        r.from.clone()
    } else {
        ast::TableWithJoins {
            relation: table_factor(&table.db, &table.def.name, &reference),
            joins: Vec::new(),
        }
    };
    Ok(finish(
        Statement::Update(u),
        &r,
        table,
        crate::grants::UPDATE | read,
        "UPDATE",
    ))
}

fn rewrite_delete(
    session: &Session,
    catalog: &Catalog,
    mut d: ast::Delete,
) -> Result<Rewritten, SqlError> {
    let from = match &mut d.from {
        ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
    };
    let single =
        d.tables.is_empty() && d.using.is_none() && from.len() == 1 && from[0].joins.is_empty();
    if !single {
        return crate::view_merge::delete(session, catalog, d); // rule 7
    }
    let ast::TableFactor::Table { name, alias, .. } = &mut from[0].relation else {
        return Ok(Rewritten::unchanged(Statement::Delete(d)));
    };
    let Some(def) = view_named(session, catalog, name) else {
        return Ok(Rewritten::unchanged(Statement::Delete(d)));
    };
    let alias_name = alias.as_ref().map(|a| a.name.value.clone());
    let reference = alias_name.clone().unwrap_or_else(|| def.name.clone());
    let Ok(r) = resolve(catalog, &def, &reference, 0)? else {
        return Err(not_updatable(&def.name, "DELETE"));
    };
    if r.is_join() {
        return Err(join_delete(&def));
    }
    let table = r.single();
    from[0].relation = table_factor(&table.db, &table.def.name, &reference);
    let names = view_names(&def, alias_name.as_deref(), &r);
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
        table,
        crate::grants::DELETE | read,
        "DELETE",
    );
    out.check = None; // DELETE writes no row to check.
    Ok(out)
}

/// What the statement may call the view: its alias, or its name with or without database.
pub(crate) fn view_qualifiers(def: &ViewDef, alias: Option<&str>) -> Vec<Vec<String>> {
    match alias {
        Some(a) => vec![vec![a.to_string()]],
        None => vec![
            vec![def.name.clone()],
            vec![def.database.clone(), def.name.clone()],
        ],
    }
}

/// The names the statement may use for the view (rule 3).
pub(crate) fn view_names(def: &ViewDef, alias: Option<&str>, r: &Resolved) -> Names {
    Names {
        qualifiers: view_qualifiers(def, alias),
        columns: r.columns.clone(),
    }
}

/// Every view's WHERE, AND-ed.
pub(crate) fn view_filter(r: &Resolved) -> Option<ast::Expr> {
    r.filters.iter().map(|(f, _)| f.clone()).reduce(and)
}

/// The statement's WHERE on the view's columns AND every view's WHERE.
fn with_filters(
    selection: Option<ast::Expr>,
    r: &Resolved,
    names: &Names,
) -> Result<Option<ast::Expr>, SqlError> {
    let mut out = view_filter(r);
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

/// INSERT's column list mapped onto the base table `table` (rules 2 and 6).
fn map_insert_columns(
    ins: &mut ast::Insert,
    r: &Resolved,
    table: &BaseTable,
    names: &Names,
    view: &ViewDef,
) -> Result<(), SqlError> {
    let label = &view.name;
    let listed: Vec<String> = if ins.columns.is_empty() {
        // Every view column must be a base column, each at most once.
        let mut bases: Vec<String> = Vec::new();
        for (_, e) in &r.columns {
            let Some((_, b)) = base_reference(e) else {
                return Err(not_insertable(label));
            };
            if bases.iter().any(|x| x.eq_ignore_ascii_case(b)) {
                return Err(not_insertable(label));
            }
            bases.push(b.to_string());
        }
        bases
    } else {
        if !r.is_join() && r.columns.iter().any(|(_, e)| base_reference(e).is_none()) {
            return Err(not_insertable(label));
        }
        let mut out: Vec<String> = Vec::new();
        for c in &ins.columns {
            let column = crate::bind::ident_name(c).pop().unwrap_or_default();
            let Some(e) = names.column(&column) else {
                return Err(SqlError::unknown_column(&column, "field list"));
            };
            let Some((_, b)) = base_reference(e) else {
                return Err(not_insertable(label));
            };
            out.push(b.to_string());
        }
        if !r.is_join() {
            // A base column two view columns name may not be inserted (MySQL's rule).
            let mut seen: Vec<&str> = Vec::new();
            for (_, e) in &r.columns {
                if let Some((_, b)) = base_reference(e) {
                    if seen.iter().any(|x| x.eq_ignore_ascii_case(b)) {
                        return Err(not_insertable(label));
                    }
                    seen.push(b);
                }
            }
        }
        out
    };
    // Base columns the view leaves out must have a default (1423, as MySQL in strict mode).
    for c in &table.def.columns {
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
                    "Field of view '{}.{}' underlying table doesn't have a default value",
                    view.database, view.name
                ),
            ));
        }
    }
    ins.columns = listed
        .into_iter()
        .map(|c| ast::ObjectName::from(vec![ast::Ident::new(c)]))
        .collect();
    // The inserted table's columns, unqualified; a join view's other columns are not this
    // row's.
    let unqualified = Names {
        qualifiers: names.qualifiers.clone(),
        columns: names
            .columns
            .iter()
            .filter_map(|(n, e)| match base_reference(e) {
                Some((reference, b)) if reference == table.reference => {
                    Some((n.clone(), ast::Expr::Identifier(ast::Ident::new(b))))
                }
                Some(_) => None,
                None if r.is_join() => None,
                None => Some((n.clone(), e.clone())),
            })
            .collect(),
    };
    // A VALUES row may read the row's columns (bind.rs) by their view names.
    if let Some(ast::SetExpr::Values(values)) = ins.source.as_mut().map(|q| q.body.as_mut()) {
        for row in &mut values.rows {
            for e in &mut row.content {
                if !crate::insert_set::is_default_keyword(e) {
                    substitute(e, &unqualified, "field list")?;
                }
            }
        }
    }
    if let Some(ast::OnInsert::DuplicateKeyUpdate(assignments)) = &mut ins.on {
        for a in assignments {
            let (reference, base) = assignment_target(a, names)?;
            if reference != table.reference {
                return Err(several_tables(view));
            }
            a.target =
                ast::AssignmentTarget::ColumnName(ast::ObjectName::from(vec![ast::Ident::new(
                    base,
                )]));
            substitute(&mut a.value, &unqualified, "field list")?;
        }
    }
    Ok(())
}

/// The check, needs and hidden tables of a statement that writes `table` (rules 4 and 5).
pub(crate) fn finish(
    stmt: Statement,
    r: &Resolved,
    table: &BaseTable,
    privs: u32,
    op: &'static str,
) -> Rewritten {
    let mut out = Rewritten {
        stmt,
        check: check_of(r, table),
        needs: Vec::new(),
        hidden: Vec::new(),
        target: table.path.first().map(|d| (d.name.clone(), op)),
    };
    pass_down(r, table, privs, &mut out);
    out
}

/// The condition rule 4 checks for a write of `table` through the view, with the view
/// `db.v` its error names.
pub(crate) fn check_of(r: &Resolved, table: &BaseTable) -> Option<(ast::Expr, String)> {
    let check = r
        .filters
        .iter()
        .filter(|(_, checked)| *checked)
        .map(|(f, _)| f.clone())
        .reduce(and)?;
    let view = table.path.first()?;
    Some((check, format!("{}.{}", view.database, view.name)))
}

/// Rule 5 for the written table; every table a DEFINER view reads is hidden.
pub(crate) fn pass_down(r: &Resolved, table: &BaseTable, privs: u32, out: &mut Rewritten) {
    for (i, def) in table.path.iter().enumerate() {
        if def.security == ViewSecurity::Definer {
            break;
        }
        let (db, name) = match table.path.get(i + 1) {
            Some(next) => (next.database.clone(), next.name.clone()),
            None => (table.db.clone(), table.def.name.clone()),
        };
        out.needs.push(Need::Table {
            privs,
            db,
            table: name,
        });
    }
    for t in &r.tables {
        if t.path.iter().any(|d| d.security == ViewSecurity::Definer) {
            out.hidden.push((t.db.clone(), t.def.name.clone()));
        }
    }
}

/// A check over the base tables as a condition on the row of the table called `reference`:
/// its columns unqualified, another table's columns NULL (rule 6).
fn as_row_of(e: &mut ast::Expr, reference: &str) {
    struct Row<'a>(&'a str, usize);
    impl VisitorMut for Row<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
            self.1 += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
            self.1 -= 1;
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
            if self.1 == 0 {
                let named = base_reference(e).map(|(r, c)| (r == self.0, c.to_string()));
                if let Some((own, column)) = named {
                    *e = if own {
                        ast::Expr::Identifier(ast::Ident::new(column))
                    } else {
                        ast::Expr::Value(ast::Value::Null.into())
                    };
                }
            }
            ControlFlow::Continue(())
        }
    }
    let _ = e.visit(&mut Row(reference, 0));
}

/// Drops the binder's SELECT need on each table a DEFINER view reads (rule 5): the first
/// time the binder resolved it.
pub(crate) fn hide(touched: &mut Vec<(String, String)>, hidden: &[(String, String)]) {
    for (db, table) in hidden {
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
