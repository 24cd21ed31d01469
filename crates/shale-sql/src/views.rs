//! Views: CREATE [OR REPLACE] VIEW, ALTER VIEW, DROP VIEW, reading a view, and what SHOW and
//! `information_schema` say of views. The catalog keeps a view as its SELECT's text
//! (shale-table's `ViewDef`, docs/format/catalog.md "Views").
//!
//! Rules:
//! 1. A view is read as a derived table: each statement that names it parses its text and
//!    binds it with the view's database as the current one (so `t` in the view's SELECT is
//!    the view's database's `t`, whoever reads it), in a binder of its own that sees none of
//!    the statement's CTEs or names. `*` is expanded when the view is read, not when it is
//!    created (MySQL expands it at CREATE; docs/sql.md).
//! 2. Privileges: reading a view needs SELECT on the view. With SQL SECURITY DEFINER (the
//!    default) the tables the view reads are not checked for the reader; with INVOKER they
//!    are, as if the reader had named them. CREATE VIEW needs CREATE (DROP too for OR
//!    REPLACE) on the view's name and SELECT on every table its SELECT names; the definer's
//!    privileges are not re-checked when the view is read.
//! 3. INSERT, UPDATE and DELETE through a view are view_dml.rs's. `WITH [CASCADED | LOCAL]
//!    CHECK OPTION`, which sqlparser does not parse, arrives as the option `check_option`
//!    (parse.rs rule 9); on a view that is not updatable it is 1368, as MySQL.
//! 4. A view that reads itself through other views is 1462 when bound; a view whose SELECT
//!    no longer binds (a table or column it reads was dropped) is 1356 when read.
//! 5. At most `MAX_VIEW_NESTING` views are expanded inside one another (1235 past it, at
//!    CREATE VIEW or when read), so a chain of views cannot overflow the session's stack.
//! 6. Metadata locks (shale-table's name_lock.rs): a statement's transaction takes the name
//!    of every view it was bound through (nested ones too) shared before it runs, and holds
//!    it until the transaction ends; a wait for a DDL statement on one of them ends in 1412,
//!    which binds the statement again (session.rs `run_rebinding`). CREATE [OR REPLACE] /
//!    ALTER / DROP VIEW and RENAME of a view take their names exclusive before anything
//!    else, after the implicit commit, so they wait for the transactions that used them.

use std::sync::Arc;

use shale_table::{ViewAlgorithm, ViewCheckOption, ViewDef, ViewSecurity, ViewWrite};
use sqlparser::ast::{self, Statement};

use crate::bind::{BindContext, Binder};
use crate::error::SqlError;
use crate::from::{Bound, BoundInput};
use crate::query::BoundQuery;
use crate::result::ResultSink;
use crate::session::{text_column, Session};

/// How many views may be expanded inside one another: each level binds on the session's
/// stack (rule 5).
pub(crate) const MAX_VIEW_NESTING: usize = 64;

thread_local! {
    /// The views bound on this thread while [`collect_bound_views`] runs (rule 6); None
    /// outside it, where nothing is kept.
    static BOUND_VIEWS: std::cell::RefCell<Option<Vec<(String, String)>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `bind` and returns with its result the views it bound through (rule 6), each once.
pub(crate) fn collect_bound_views<R>(bind: impl FnOnce() -> R) -> (R, Vec<(String, String)>) {
    let outer = BOUND_VIEWS.with(|v| v.borrow_mut().replace(Vec::new()));
    let result = bind();
    let mut views = BOUND_VIEWS
        .with(|v| std::mem::replace(&mut *v.borrow_mut(), outer))
        .unwrap_or_default();
    views.sort();
    views.dedup();
    (result, views)
}

/// A view bound for one statement: its definition and its bound SELECT.
pub(crate) struct ExpandedView {
    def: Arc<ViewDef>,
    query: BoundQuery,
}

fn text(s: &str) -> shale_table::Value {
    shale_table::Value::Bytes(s.as_bytes().to_vec())
}

fn not_view(db: &str, name: &str) -> SqlError {
    SqlError::new(1347, "HY000", format!("'{db}.{name}' is not VIEW"))
}

fn invalid_view(db: &str, name: &str) -> SqlError {
    SqlError::new(
        1356,
        "HY000",
        format!(
            "View '{db}.{name}' references invalid table(s) or column(s) or function(s) or \
             definer/invoker of view lack rights to use them"
        ),
    )
}

fn recursion(db: &str, name: &str) -> SqlError {
    SqlError::new(
        1462,
        "HY000",
        format!("`{db}`.`{name}` contains view recursion"),
    )
}

/// `user@host` as SHOW CREATE VIEW prints it: `` `user`@`host` ``.
fn quoted_account(account: &str) -> String {
    let (user, host) = account.rsplit_once('@').unwrap_or((account, "%"));
    format!("{}@{}", quote(user), quote(host))
}

fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

impl Binder<'_> {
    /// Whether `name` names a view (false when it cannot be qualified: the table path
    /// reports that).
    pub(crate) fn names_view(&self, name: &ast::ObjectName) -> bool {
        self.qualify(name)
            .is_ok_and(|(db, n)| self.ctx.catalog.view(&db, &n).is_some())
    }

    /// Binds the view `name` names, if it names one (rule 1): None for anything else.
    pub(crate) fn expand_view(
        &mut self,
        name: &ast::ObjectName,
    ) -> Result<Option<ExpandedView>, SqlError> {
        let Ok((db, n)) = self.qualify(name) else {
            return Ok(None);
        };
        let Some(def) = self.ctx.catalog.view(&db, &n).cloned() else {
            return Ok(None);
        };
        BOUND_VIEWS.with(|v| {
            if let Some(views) = v.borrow_mut().as_mut() {
                views.push((def.database.clone(), def.name.clone()));
            }
        });
        self.ctx
            .touched
            .borrow_mut()
            .push((def.database.clone(), def.name.clone()));
        if self
            .views
            .iter()
            .any(|(d, v)| *d == def.database && v.eq_ignore_ascii_case(&def.name))
        {
            return Err(recursion(&def.database, &def.name));
        }
        if self.views.len() >= MAX_VIEW_NESTING {
            return Err(SqlError::unsupported(format!(
                "views nested more than {MAX_VIEW_NESTING} deep"
            )));
        }
        let Ok(mut statements) = crate::parse::parse(&def.query) else {
            return Err(invalid_view(&def.database, &def.name));
        };
        let (Some(Statement::Query(q)), None) = (statements.pop(), statements.pop()) else {
            return Err(invalid_view(&def.database, &def.name));
        };
        // Rule 2: a DEFINER view's tables are not the reader's to be checked.
        let unchecked = std::cell::RefCell::default();
        let ctx = BindContext {
            catalog: self.ctx.catalog,
            database: Some(&def.database),
            variable: self.ctx.variable,
            user: self.ctx.user,
            touched: match def.security {
                ViewSecurity::Invoker => self.ctx.touched,
                ViewSecurity::Definer => &unchecked,
            },
            statistics: self.ctx.statistics,
            // A view's literals keep the collation of the session that created it (MySQL).
            collation_connection: &def.collation_connection,
            // A view's query was checked when the view was created (CREATE VIEW below).
            full_group_by: false,
        };
        let mut sub = Binder::new(&ctx);
        sub.params = self.params;
        sub.subqueries = std::mem::take(&mut self.subqueries);
        sub.depth = self.depth;
        sub.views.clone_from(&self.views);
        sub.views.push((def.database.clone(), def.name.clone()));
        let bound = sub.query(&q);
        self.params = sub.params;
        self.subqueries = std::mem::take(&mut sub.subqueries);
        let query = bound.map_err(|e| match e.code {
            1235 | 1356 | 1462 => e,
            _ => invalid_view(&def.database, &def.name),
        })?;
        if !def.columns.is_empty() && def.columns.len() != query.columns().len() {
            return Err(invalid_view(&def.database, &def.name));
        }
        Ok(Some(ExpandedView { def, query }))
    }

    /// Adds a bound view to FROM as a derived table called `alias` (or the view's name),
    /// whose columns say they come from the view, as MySQL's metadata does.
    pub(crate) fn push_view(
        &mut self,
        view: ExpandedView,
        alias: Option<String>,
        inputs: &mut Vec<BoundInput>,
    ) -> Result<Bound, SqlError> {
        let ExpandedView { def, query } = view;
        let name = alias.unwrap_or_else(|| def.name.clone());
        let bound = self.push_derived(query, name, &def.columns, inputs)?;
        if let Some(input) = self.scope.as_mut().and_then(|s| s.inputs.last_mut()) {
            input.database.clone_from(&def.database);
            for c in &mut input.columns {
                c.meta.database.clone_from(&def.database);
                c.meta.org_table.clone_from(&def.name);
            }
        }
        Ok(bound)
    }
}

/// The parts of CREATE VIEW and ALTER VIEW that make a definition.
struct ViewSpec<'s> {
    name: &'s ast::ObjectName,
    columns: Vec<String>,
    query: &'s ast::Query,
    params: Option<&'s ast::CreateViewParams>,
    check_option: ViewCheckOption,
}

/// CREATE [OR REPLACE] [ALGORITHM=..] [DEFINER=..] [SQL SECURITY ..] VIEW.
pub(crate) fn create_view(
    session: &mut Session,
    cv: &ast::CreateView,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    if cv.materialized || cv.temporary || cv.secure || cv.if_not_exists {
        return Err(SqlError::unsupported(
            "this form of CREATE VIEW (MATERIALIZED, TEMPORARY, SECURE or IF NOT EXISTS)",
        ));
    }
    let spec = ViewSpec {
        name: &cv.name,
        columns: cv.columns.iter().map(|c| c.name.value.clone()).collect(),
        query: &cv.query,
        params: cv.params.as_ref(),
        check_option: match &cv.options {
            ast::CreateTableOptions::None => ViewCheckOption::None,
            ast::CreateTableOptions::With(options) => check_option_of(options)?,
            other => return Err(SqlError::unsupported(format!("view options {other}"))),
        },
    };
    // parse.rs rule 6 spells `ALTER ALGORITHM=.. VIEW` as `CREATE OR ALTER ...`.
    let mode = if cv.or_alter {
        ViewWrite::Alter
    } else if cv.or_replace {
        ViewWrite::CreateOrReplace
    } else {
        ViewWrite::Create
    };
    write_view(session, &spec, mode, sink)
}

/// ALTER VIEW v [(columns)] AS SELECT ...
pub(crate) fn alter_view(
    session: &mut Session,
    av: &ast::AlterView,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    let ast::AlterViewOperation::As {
        columns,
        query,
        with_options,
    } = &av.operation
    else {
        return Err(SqlError::unsupported(format!(
            "ALTER VIEW {}",
            av.operation
        )));
    };
    if av.materialized || av.if_exists {
        return Err(SqlError::unsupported(
            "ALTER MATERIALIZED VIEW / ALTER VIEW IF EXISTS",
        ));
    }
    let spec = ViewSpec {
        name: &av.name,
        columns: columns.iter().map(|c| c.value.clone()).collect(),
        query,
        params: None,
        check_option: check_option_of(with_options)?,
    };
    write_view(session, &spec, ViewWrite::Alter, sink)
}

fn write_view(
    session: &mut Session,
    spec: &ViewSpec<'_>,
    mode: ViewWrite,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    session.ddl_prelude()?;
    session.refuse_under_table_locks()?;
    let (db, name) = qualify(session, spec.name)?;
    // Rule 6: before the definition is bound (CREATE OR REPLACE VIEW v AS ... FROM v reads
    // the old v under its own lock).
    let _name = session.lock_names(&[(db.clone(), name.clone())])?;
    let catalog = session.instance().store.catalog();
    if !catalog.databases.contains_key(&db) {
        return Err(SqlError::unknown_database(&db));
    }
    if crate::bind::lookup_table(&catalog, &db, &name).is_some() {
        return Err(match mode {
            ViewWrite::Alter => not_view(&db, &name),
            _ => SqlError::table_exists(&name),
        });
    }
    match (mode, catalog.view(&db, &name)) {
        (ViewWrite::Create, Some(_)) => return Err(SqlError::table_exists(&name)),
        (ViewWrite::Alter, None) => return Err(SqlError::no_such_table(&db, &name)),
        _ => {}
    }
    check_query(session, &db, &name, spec)?;
    let params = spec.params;
    let definer = match params.and_then(|p| p.definer.as_ref()) {
        Some(ast::GranteeName::UserHost { user, host }) => format!("{}@{}", user.value, host.value),
        Some(ast::GranteeName::ObjectName(n))
            if crate::bind::ident_name(n)
                .join(".")
                .eq_ignore_ascii_case("CURRENT_USER") =>
        {
            current_account(session)
        }
        Some(ast::GranteeName::ObjectName(n)) => {
            format!("{}@%", crate::bind::ident_name(n).join("."))
        }
        None => current_account(session),
    };
    let variable =
        |n: &str| crate::value::as_text(&session.state().variable(n)).unwrap_or_default();
    let def = ViewDef {
        database: db,
        name,
        columns: spec.columns.clone(),
        query: crate::syntax_mode::stored_text(spec.query),
        algorithm: match params.and_then(|p| p.algorithm.as_ref()) {
            None | Some(ast::CreateViewAlgorithm::Undefined) => ViewAlgorithm::Undefined,
            Some(ast::CreateViewAlgorithm::Merge) => ViewAlgorithm::Merge,
            Some(ast::CreateViewAlgorithm::TempTable) => ViewAlgorithm::TempTable,
        },
        security: match params.and_then(|p| p.security.as_ref()) {
            None | Some(ast::CreateViewSecurity::Definer) => ViewSecurity::Definer,
            Some(ast::CreateViewSecurity::Invoker) => ViewSecurity::Invoker,
        },
        definer,
        character_set_client: variable("character_set_client"),
        collation_connection: variable("collation_connection"),
        check_option: spec.check_option,
    };
    if def.check_option != ViewCheckOption::None
        && !crate::view_resolve::is_updatable(&catalog, &Arc::new(def.clone()))
    {
        return Err(SqlError::new(
            1368,
            "HY000",
            format!(
                "CHECK OPTION on non-updatable view '{}.{}'",
                def.database, def.name
            ),
        ));
    }
    session.instance().store.write_view(def, mode)?;
    session.instance().bump_generation();
    session.ok(sink, 0)
}

/// The account CREATE VIEW records as definer: `CURRENT_USER()`.
fn current_account(session: &Session) -> String {
    match &session.state().account {
        Some(a) => format!("{}@{}", a.user, a.host),
        None => session.state().user.clone(),
    }
}

/// Binds the view's SELECT as a read of it would (rule 1), with the view itself on the
/// recursion stack; checks the column names and the creator's SELECT privileges (rule 2).
fn check_query(
    session: &Session,
    db: &str,
    name: &str,
    spec: &ViewSpec<'_>,
) -> Result<(), SqlError> {
    // With the session's temporary tables, so a name one shadows is refused below rather
    // than bound to the base table.
    let catalog = session.catalog();
    let touched = std::cell::RefCell::default();
    let defaults = &session.state().defaults;
    let variable = |n: &str| defaults.get(n).cloned();
    let ctx = BindContext {
        catalog: &catalog,
        database: Some(db),
        variable: &variable,
        user: &session.state().user,
        touched: &touched,
        statistics: None,
        collation_connection: session.collation_connection(),
        full_group_by: session
            .state()
            .sql_mode
            .has(crate::sql_mode::SqlMode::ONLY_FULL_GROUP_BY),
    };
    let mut binder = Binder::new(&ctx);
    binder.views.push((db.to_string(), name.to_string()));
    let bound = binder.query(spec.query);
    let params = binder.params;
    let touched = touched.take();
    if let Some((_, table)) = touched
        .iter()
        .find(|(db, table)| session.temp_tables().find(db, table).is_some())
    {
        return Err(SqlError::new(
            1352,
            "HY000",
            format!("View's SELECT refers to a temporary table '{table}'"),
        ));
    }
    let needs: Vec<crate::privilege::Need> = touched
        .into_iter()
        .map(|(db, table)| crate::privilege::Need::Table {
            privs: crate::grants::SELECT,
            db,
            table,
        })
        .collect();
    session.authorize(&needs)?;
    let query = bound?;
    if params > 0 {
        return Err(SqlError::new(
            1351,
            "HY000",
            "View's SELECT contains a variable or parameter",
        ));
    }
    let names: Vec<String> = if spec.columns.is_empty() {
        query.columns().iter().map(|m| m.name.clone()).collect()
    } else if spec.columns.len() == query.columns().len() {
        spec.columns.clone()
    } else {
        return Err(SqlError::new(
            1353,
            "HY000",
            "In definition of view, derived table or common table expression, SELECT list and \
             column names list have different column counts",
        ));
    };
    for (i, n) in names.iter().enumerate() {
        if names[..i].iter().any(|m| m.eq_ignore_ascii_case(n)) {
            return Err(SqlError::new(
                1060,
                "42S21",
                format!("Duplicate column name '{n}'"),
            ));
        }
    }
    Ok(())
}

/// DROP VIEW [IF EXISTS] v, ...: all or none (MySQL 8's atomic DROP VIEW). A table's name is
/// 1347; missing views are one 1051 naming them all (notes with IF EXISTS).
pub(crate) fn drop_views(
    session: &mut Session,
    if_exists: bool,
    names: &[ast::ObjectName],
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    session.ddl_prelude()?;
    session.refuse_under_table_locks()?;
    let qualified = names
        .iter()
        .map(|n| qualify(session, n))
        .collect::<Result<Vec<_>, _>>()?;
    let _names = session.lock_names(&qualified)?;
    let catalog = session.instance().store.catalog();
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for (db, name) in qualified {
        if let Some(view) = catalog.view(&db, &name) {
            found.push((view.database.clone(), view.name.clone()));
        } else if crate::bind::lookup_table(&catalog, &db, &name).is_some() {
            return Err(not_view(&db, &name));
        } else {
            missing.push(format!("{db}.{name}"));
        }
    }
    if !missing.is_empty() && !if_exists {
        return Err(SqlError::unknown_table_drop(&missing.join(",")));
    }
    if !found.is_empty() {
        session.instance().store.drop_views(&found)?;
        session.instance().bump_generation();
    }
    for m in missing {
        session
            .state_mut()
            .warnings
            .push(("Note", 1051, format!("Unknown table '{m}'")));
    }
    session.ok(sink, 0)
}

/// RENAME TABLE whose first name is a view: every name must be a view (1146 for a table
/// among them) and stay in its database (1450, as MySQL), renamed in one write. False
/// (nothing done) when the first name is not a view: the tables' path runs, where a view
/// among tables is 1146.
pub(crate) fn rename(
    session: &Session,
    names: &[(String, String, String, String)],
) -> Result<bool, SqlError> {
    let catalog = session.instance().store.catalog();
    let Some((db, name, _, _)) = names.first() else {
        return Ok(false);
    };
    if catalog.view(db, name).is_none() {
        return Ok(false);
    }
    let mut renames = Vec::new();
    for (db, name, to_db, to_name) in names {
        if db != to_db {
            return Err(SqlError::new(
                1450,
                "HY000",
                format!("Changing schema from '{db}' to '{to_db}' is not allowed."),
            ));
        }
        renames.push((db.clone(), name.clone(), to_name.clone()));
    }
    session.instance().store.rename_views(&renames)?;
    session.instance().bump_generation();
    Ok(true)
}

fn qualify(session: &Session, name: &ast::ObjectName) -> Result<(String, String), SqlError> {
    let parts = crate::bind::ident_name(name);
    let (db, n) = match parts.as_slice() {
        [n] => (session.current_db()?, n.clone()),
        [d, n] => (d.clone(), n.clone()),
        _ => return Err(SqlError::unsupported(format!("name {name}"))),
    };
    if crate::info_schema::is_database(&db) {
        return Err(crate::info_schema::access_denied(&session.state().user));
    }
    Ok((db, n))
}

/// The text SHOW CREATE VIEW shows.
pub(crate) fn create_text(def: &ViewDef) -> String {
    let algorithm = match def.algorithm {
        ViewAlgorithm::Undefined => "UNDEFINED",
        ViewAlgorithm::Merge => "MERGE",
        ViewAlgorithm::TempTable => "TEMPTABLE",
    };
    let security = match def.security {
        ViewSecurity::Definer => "DEFINER",
        ViewSecurity::Invoker => "INVOKER",
    };
    let columns = if def.columns.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = def.columns.iter().map(|c| quote(c)).collect();
        format!(" ({})", list.join(","))
    };
    let check = match def.check_option {
        ViewCheckOption::None => "",
        ViewCheckOption::Local => " WITH LOCAL CHECK OPTION",
        ViewCheckOption::Cascaded => " WITH CASCADED CHECK OPTION",
    };
    format!(
        "CREATE ALGORITHM={algorithm} DEFINER={} SQL SECURITY {security} VIEW {}{columns} AS {}{check}",
        quoted_account(&def.definer),
        quote(&def.name),
        def.query
    )
}

/// SHOW CREATE VIEW v (1347 for a table, 1146 for neither), and SHOW CREATE TABLE of a view:
/// MySQL's four columns.
pub(crate) fn show_create(
    session: &mut Session,
    name: &ast::ObjectName,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    let (db, n) = qualify(session, name)?;
    let catalog = session.instance().store.catalog();
    let Some(def) = catalog.view(&db, &n) else {
        if crate::bind::lookup_table(&catalog, &db, &n).is_some() {
            return Err(not_view(&db, &n));
        }
        return Err(SqlError::no_such_table(&db, &n));
    };
    session.state_mut().warnings.clear();
    session.text_rows(
        sink,
        &[
            text_column("View"),
            text_column("Create View"),
            text_column("character_set_client"),
            text_column("collation_connection"),
        ],
        &[vec![
            text(&def.name),
            text(&create_text(def)),
            text(&def.character_set_client),
            text(&def.collation_connection),
        ]],
    )
}

/// The columns of view `db.name` as a table definition without keys, for DESCRIBE and
/// SHOW COLUMNS (typed as CREATE TABLE ... SELECT would type them); None if it is no view.
pub(crate) fn shape(
    session: &Session,
    db: &str,
    name: &str,
) -> Result<Option<Arc<shale_table::TableDef>>, SqlError> {
    let catalog = session.instance().store.catalog();
    let Some(def) = catalog.view(db, name).cloned() else {
        return Ok(None);
    };
    let defaults = &session.state().defaults;
    let variable = |n: &str| defaults.get(n).cloned();
    shape_of(&catalog, &def, &variable, &session.state().user).map(Some)
}

/// The columns of every view whose SELECT binds now (`information_schema.COLUMNS`; system
/// variables in a view's SELECT do not bind here, and such a view lists no columns).
pub(crate) fn shapes(catalog: &shale_table::Catalog) -> Vec<Arc<shale_table::TableDef>> {
    catalog
        .views
        .values()
        .flat_map(|views| views.values())
        .filter_map(|def| shape_of(catalog, def, &|_| None, "").ok())
        .collect()
}

fn shape_of(
    catalog: &shale_table::Catalog,
    def: &ViewDef,
    variable: &dyn Fn(&str) -> Option<shale_table::Value>,
    user: &str,
) -> Result<Arc<shale_table::TableDef>, SqlError> {
    let object = ast::ObjectName::from(vec![
        ast::Ident::new(def.database.clone()),
        ast::Ident::new(def.name.clone()),
    ]);
    let touched = std::cell::RefCell::default();
    let ctx = BindContext {
        catalog,
        database: Some(&def.database),
        variable,
        user,
        touched: &touched,
        statistics: None,
        collation_connection: &def.collation_connection,
        full_group_by: false,
    };
    let view = Binder::new(&ctx)
        .expand_view(&object)?
        .ok_or_else(|| SqlError::no_such_table(&def.database, &def.name))?;
    let mut columns = Vec::new();
    for (i, meta) in view.query.columns().iter().enumerate() {
        let mut column = crate::alter::column_of_result(meta);
        if let Some(rename) = def.columns.get(i) {
            column.name.clone_from(rename);
        }
        columns.push(column);
    }
    Ok(Arc::new(shale_table::TableDef {
        database: def.database.clone(),
        name: def.name.clone(),
        columns,
        primary_key: shale_table::IndexDef {
            name: "PRIMARY".into(),
            columns: Vec::new(),
            unique: true,
            index_id: 0,
        },
        indexes: Vec::new(),
        schema_version: 1,
        past_versions: Vec::new(),
    }))
}

/// The rows of `information_schema.VIEWS`.
pub(crate) fn info_schema_views(store: &shale_table::Store) -> Vec<Vec<shale_table::Value>> {
    let catalog = store.catalog();
    catalog
        .views
        .values()
        .flat_map(|views| views.values())
        .map(|def| {
            vec![
                text("def"),
                text(&def.database),
                text(&def.name),
                text(&def.query),
                text(match def.check_option {
                    ViewCheckOption::None => "NONE",
                    ViewCheckOption::Local => "LOCAL",
                    ViewCheckOption::Cascaded => "CASCADED",
                }),
                text(if crate::view_resolve::is_updatable(&catalog, def) {
                    "YES"
                } else {
                    "NO"
                }),
                text(&def.definer),
                text(match def.security {
                    ViewSecurity::Definer => "DEFINER",
                    ViewSecurity::Invoker => "INVOKER",
                }),
                text(&def.character_set_client),
                text(&def.collation_connection),
            ]
        })
        .collect()
}

/// The rows `information_schema.TABLES` has for views: TABLE_TYPE `VIEW`, no engine or
/// sizes, TABLE_COMMENT `VIEW`, as MySQL shows them.
pub(crate) fn info_schema_tables(store: &shale_table::Store) -> Vec<Vec<shale_table::Value>> {
    let catalog = store.catalog();
    catalog
        .views
        .values()
        .flat_map(|views| views.values())
        .map(|def| {
            let mut row = vec![
                text("def"),
                text(&def.database),
                text(&def.name),
                text("VIEW"),
            ];
            row.extend(std::iter::repeat_n(shale_table::Value::Null, 16));
            row.push(text("VIEW"));
            row
        })
        .collect()
}

/// The names of `db`'s views (SHOW TABLES lists them with the tables).
pub(crate) fn names(catalog: &shale_table::Catalog, db: &str) -> Vec<String> {
    catalog
        .views
        .get(db)
        .map(|v| v.keys().cloned().collect())
        .unwrap_or_default()
}

/// The `check_option` of `WITH (check_option = 'local')`, the form parse.rs rule 9 gives a
/// view's `WITH [CASCADED | LOCAL] CHECK OPTION` (any other option is 1235).
fn check_option_of(options: &[ast::SqlOption]) -> Result<ViewCheckOption, SqlError> {
    let mut out = ViewCheckOption::None;
    for o in options {
        let value = match o {
            ast::SqlOption::KeyValue { key, value } if key.to_string() == "check_option" => {
                value.to_string().trim_matches('\'').to_ascii_uppercase()
            }
            other => return Err(SqlError::unsupported(format!("view option {other}"))),
        };
        out = match value.as_str() {
            "LOCAL" => ViewCheckOption::Local,
            "CASCADED" => ViewCheckOption::Cascaded,
            _ => return Err(SqlError::unsupported(format!("check_option {value}"))),
        };
    }
    Ok(out)
}

/// Parses a CREATE or ALTER VIEW ending in `WITH [CASCADED | LOCAL] CHECK OPTION` (parse.rs
/// rule 9): the text without that clause, with the clause as the option `check_option`.
/// None when `sql` is no such statement or does not parse without the clause.
pub(crate) fn parse_with_check_option(
    sql: &str,
    parse: impl Fn(&str) -> Option<Vec<Statement>>,
) -> Option<Vec<Statement>> {
    if !has_check_option(sql) {
        return None;
    }
    let trimmed = sql.trim().trim_end_matches(';').trim_end();
    // Drop `CHECK OPTION`, then `CASCADED`/`LOCAL` if present, then `WITH`.
    let mut rest = trimmed;
    let mut option = "CASCADED";
    for _ in 0..2 {
        let cut = rest.trim_end().rfind(char::is_whitespace)?;
        rest = rest[..cut].trim_end();
    }
    let cut = rest.rfind(char::is_whitespace)?;
    let word = rest[cut..].trim();
    if word.eq_ignore_ascii_case("LOCAL") || word.eq_ignore_ascii_case("CASCADED") {
        if word.eq_ignore_ascii_case("LOCAL") {
            option = "LOCAL";
        }
        rest = rest[..cut].trim_end();
    }
    let cut = rest.rfind(char::is_whitespace)?;
    rest = rest[..cut].trim_end();
    let mut statements = parse(rest)?;
    let [statement] = statements.as_mut_slice() else {
        return None;
    };
    let option = ast::SqlOption::KeyValue {
        key: ast::ObjectName::from(vec![ast::Ident::new("check_option")]),
        value: ast::Expr::Value(ast::Value::SingleQuotedString(option.to_string()).into()),
    };
    match statement {
        Statement::CreateView(cv) if matches!(cv.options, ast::CreateTableOptions::None) => {
            cv.options = ast::CreateTableOptions::With(vec![option]);
        }
        Statement::AlterView(ast::AlterView {
            operation: ast::AlterViewOperation::As { with_options, .. },
            ..
        }) if with_options.is_empty() => with_options.push(option),
        _ => return None,
    }
    Some(statements)
}

/// Whether `sql` is a CREATE or ALTER VIEW ending in `WITH [CASCADED | LOCAL] CHECK OPTION`,
/// which sqlparser does not parse (parse.rs rule 9).
pub(crate) fn has_check_option(sql: &str) -> bool {
    let upper = sql.trim().trim_end_matches(';').to_ascii_uppercase();
    let words: Vec<&str> = upper.split_whitespace().collect();
    let starts = matches!(words.first(), Some(&("CREATE" | "ALTER"))) && words.contains(&"VIEW");
    starts && words.ends_with(&["CHECK", "OPTION"]) && words.len() >= 3 && {
        let before = &words[..words.len() - 2];
        matches!(before.last(), Some(&"WITH"))
            || (matches!(before.last(), Some(&("CASCADED" | "LOCAL")))
                && before.len() >= 2
                && before[before.len() - 2] == "WITH")
    }
}

/// parse.rs rule 6: `ALTER <view options> VIEW ...` as `CREATE OR ALTER <view options> VIEW
/// ...`, which sqlparser parses (None for any other statement).
pub(crate) fn alter_with_params(sql: &str) -> Option<String> {
    let trimmed = sql.trim_start();
    let mut words = trimmed.split_whitespace();
    let first = words.next()?;
    let second = words.next()?.to_ascii_uppercase();
    let with_params = second.starts_with("ALGORITHM")
        || second.starts_with("DEFINER")
        || (second == "SQL" && words.next()?.eq_ignore_ascii_case("SECURITY"));
    if !first.eq_ignore_ascii_case("ALTER") || !with_params {
        return None;
    }
    Some(format!("CREATE OR ALTER {}", &trimmed[first.len()..]))
}
