//! Views in multi-table UPDATE and DELETE (view_dml.rs rule 7): `UPDATE v JOIN t ON .. SET
//! v.c = ..` and `DELETE v FROM v JOIN t ..`. Each view the statement writes is merged into
//! its FROM: the view's relation becomes the base tables it reads (view_resolve.rs), the
//! statement's names for the view's columns become the expressions they stand for, and the
//! view's WHERE joins the statement's conditions. multi_dml.rs then runs the statement.
//!
//! Rules:
//! 1. A view is written when SET assigns one of its columns (UPDATE) or when it is named as
//!    a target (DELETE). A written view that is not updatable is 1288; a written join view
//!    is 1395 for DELETE, and 1393 when SET assigns columns of two of its base tables. A view
//!    only read stays a derived table.
//! 2. The view's WHERE goes where it keeps its meaning: into the ON of an inner or LEFT join
//!    that brings the view in (or of the inner or RIGHT join right after the view, when the
//!    view comes first), else into the statement's WHERE when the view is not inside
//!    parentheses and no RIGHT JOIN follows it. Elsewhere a view with a WHERE is 1235.
//! 3. Names: `v.c` (or `alias.c`) is the view's column c; an unqualified name is the view's
//!    column when the view has it, 1052 when another base table of the FROM has it too;
//!    other names are the statement's other tables'.
//! 4. The CHECK OPTION of a written view is checked on each changed row as joined
//!    (multi_dml.rs).

use std::sync::Arc;

use shale_table::{Catalog, ViewDef};
use sqlparser::ast::{self, Statement};

use crate::error::SqlError;
use crate::session::Session;
use crate::view_dml::{
    assignment_target, check_of, join_delete, not_updatable, pass_down, qualified_target,
    several_tables, view_filter, view_named, view_names, view_qualifiers, Rewritten,
};
use crate::view_resolve::{and, resolve, substitute_in, table_factor, Lookup, Names, Resolved};

/// A view the statement writes, merged into its FROM.
struct Merged {
    def: Arc<ViewDef>,
    resolved: Resolved,
    names: Names,
}

/// Which views of the FROM are written (rule 1).
enum Writes<'a> {
    Assignments(&'a [ast::Assignment]),
    /// DELETE's target names (last part of each).
    Targets(&'a [String]),
}

/// Where a merged view's WHERE goes (rule 2).
enum Place {
    Where,
    /// The ON of the join at this index of the list the view is in.
    On(usize),
    Nowhere,
}

struct Merger<'a> {
    session: &'a Session,
    catalog: &'a Catalog,
    writes: Writes<'a>,
    statement: &'static str,
    merged: Vec<Merged>,
    /// The columns of the FROM's other base tables, for rule 3's 1052.
    others: Vec<Names>,
    /// Views' WHERE bound for the statement's WHERE.
    filters: Vec<ast::Expr>,
}

impl Merger<'_> {
    /// Whether the view called `qualifiers` (with columns `names`, if resolved) is written.
    fn written(&self, names: &Names) -> bool {
        match &self.writes {
            Writes::Assignments(list) => list.iter().any(|a| {
                let ast::AssignmentTarget::ColumnName(target) = &a.target else {
                    return false;
                };
                let parts = crate::bind::ident_name(target);
                match parts.split_last() {
                    Some((column, [])) => names.column(column).is_some(),
                    Some((_, qualifier)) => names.qualifies(qualifier),
                    None => false,
                }
            }),
            Writes::Targets(targets) => targets
                .iter()
                .any(|t| names.qualifies(std::slice::from_ref(t))),
        }
    }

    /// Merges the written views of `twj` (rule 1), placing their WHERE (rule 2).
    fn merge(&mut self, twj: &mut ast::TableWithJoins, nested: bool) -> Result<(), SqlError> {
        use ast::JoinOperator as J;
        let right_at = |joins: &[ast::Join], from: usize| {
            joins
                .iter()
                .skip(from)
                .any(|j| matches!(j.join_operator, J::Right(_) | J::RightOuter(_)))
        };
        let first = match twj.joins.first().map(|j| &j.join_operator) {
            Some(
                J::Join(_)
                | J::Inner(_)
                | J::CrossJoin(_)
                | J::StraightJoin(_)
                | J::Right(_)
                | J::RightOuter(_),
            ) => Place::On(0),
            // Alone, or the kept side of a LEFT JOIN: WHERE, unless parentheses or a later
            // RIGHT JOIN may NULL-extend it.
            None | Some(J::Left(_) | J::LeftOuter(_)) if !nested && !right_at(&twj.joins, 1) => {
                Place::Where
            }
            _ => Place::Nowhere,
        };
        let mut places = vec![first];
        for (i, j) in twj.joins.iter().enumerate() {
            places.push(match j.join_operator {
                J::Join(_)
                | J::Inner(_)
                | J::CrossJoin(_)
                | J::StraightJoin(_)
                | J::Left(_)
                | J::LeftOuter(_) => Place::On(i),
                J::Right(_) | J::RightOuter(_) if !nested && !right_at(&twj.joins, i + 1) => {
                    Place::Where
                }
                _ => Place::Nowhere,
            });
        }
        // Each join's ON is over the base tables once the relations up to its own are
        // merged (it may name no later one); the views' WHERE are added after, being over
        // the base tables already.
        let mut ons: Vec<(usize, ast::Expr)> = Vec::new();
        for (k, place) in places.into_iter().enumerate() {
            let factor = if k == 0 {
                &mut twj.relation
            } else {
                &mut twj.joins[k - 1].relation
            };
            if let ast::TableFactor::NestedJoin {
                table_with_joins, ..
            } = factor
            {
                self.merge(table_with_joins, true)?;
            } else if let Some(filter) = self.factor(factor)? {
                match place {
                    Place::Where => self.filters.push(filter),
                    Place::On(i) => ons.push((i, filter)),
                    Place::Nowhere => {
                        return Err(SqlError::unsupported(format!(
                            "a view with a WHERE clause written by a multi-table {} from \
                             inside parentheses or beside a RIGHT JOIN",
                            self.statement
                        )))
                    }
                }
            }
            if k > 0 {
                let relations = self.relations();
                let join = &mut twj.joins[k - 1].join_operator;
                if let Some(on) = on_condition(join) {
                    substitute_in(on, &relations, Lookup::Lenient, "on clause")?;
                }
                for (_, filter) in ons.iter().filter(|(i, _)| *i == k - 1) {
                    add_to_on(join, filter.clone())?;
                }
            }
        }
        Ok(())
    }

    /// Merges `factor` when it is a written view; the view's WHERE to place, if any.
    fn factor(&mut self, factor: &mut ast::TableFactor) -> Result<Option<ast::Expr>, SqlError> {
        let ast::TableFactor::Table { name, alias, .. } = &*factor else {
            return Ok(None);
        };
        let alias = alias.as_ref().map(|a| a.name.value.clone());
        let Some(def) = view_named(self.session, self.catalog, name) else {
            self.note_table(name);
            return Ok(None);
        };
        let reference = alias.clone().unwrap_or_else(|| def.name.clone());
        let Ok(resolved) = resolve(self.catalog, &def, &reference, 0)? else {
            // Only its names are known: written when a target names it.
            let names = Names {
                qualifiers: view_qualifiers(&def, alias.as_deref()),
                columns: Vec::new(),
            };
            if self.written(&names) {
                return Err(not_updatable(&reference, self.statement));
            }
            return Ok(None);
        };
        let names = view_names(&def, alias.as_deref(), &resolved);
        if !self.written(&names) {
            return Ok(None);
        }
        if resolved.is_join() && matches!(self.writes, Writes::Targets(_)) {
            return Err(join_delete(&def));
        }
        *factor = if resolved.is_join() {
            ast::TableFactor::NestedJoin {
                table_with_joins: Box::new(resolved.from.clone()),
                alias: None,
            }
        } else {
            let t = resolved.single();
            table_factor(&t.db, &t.def.name, &reference)
        };
        let filter = view_filter(&resolved);
        self.merged.push(Merged {
            def,
            resolved,
            names,
        });
        Ok(filter)
    }

    /// A base table of the FROM: its columns, for rule 3's 1052.
    fn note_table(&mut self, name: &ast::ObjectName) {
        let parts = crate::bind::ident_name(name);
        let (db, table) = match parts.as_slice() {
            [t] => match self.session.current_database() {
                Some(db) => (db.to_string(), t.clone()),
                None => return,
            },
            [d, t] => (d.clone(), t.clone()),
            _ => return,
        };
        let Some(def) = crate::bind::lookup_table(self.catalog, &db, &table) else {
            return;
        };
        self.others.push(Names {
            // Never matched by a qualified name: those are left alone (rule 3).
            qualifiers: Vec::new(),
            columns: def
                .columns
                .iter()
                .map(|c| {
                    (
                        c.name.clone(),
                        ast::Expr::Identifier(ast::Ident::new(c.name.clone())),
                    )
                })
                .collect(),
        });
    }

    /// Every name space rule 3 looks in: the merged views', then the other tables'.
    fn relations(&self) -> Vec<Names> {
        self.merged
            .iter()
            .map(|m| Names {
                qualifiers: m.names.qualifiers.clone(),
                columns: m.names.columns.clone(),
            })
            .chain(self.others.iter().map(|o| Names {
                qualifiers: Vec::new(),
                columns: o.columns.clone(),
            }))
            .collect()
    }

    /// The statement's WHERE with the views' (rule 2), over the base tables (rule 3).
    fn selection(
        &mut self,
        selection: Option<ast::Expr>,
        relations: &[Names],
    ) -> Result<Option<ast::Expr>, SqlError> {
        let mut out = selection;
        if let Some(w) = &mut out {
            substitute_in(w, relations, Lookup::Lenient, "where clause")?;
        }
        for f in std::mem::take(&mut self.filters) {
            out = Some(match out {
                Some(o) => and(o, f),
                None => f,
            });
        }
        Ok(out)
    }

    /// The needs, hidden tables and check of the merged views (view_dml.rs rules 4 and 5).
    fn finish(&self, stmt: Statement, written: &[(usize, String)], privs: u32) -> Rewritten {
        let mut out = Rewritten::unchanged(stmt);
        for (i, reference) in written {
            let m = &self.merged[*i];
            let Some(table) = m.resolved.table(reference) else {
                continue;
            };
            if out.target.is_none() {
                out.target = Some((m.def.name.clone(), self.statement));
            }
            if let Some((c, view)) = check_of(&m.resolved, table) {
                out.check = Some(match out.check.take() {
                    Some((a, first)) => (and(a, c), first),
                    None => (c, view),
                });
            }
            pass_down(&m.resolved, table, privs, &mut out);
        }
        out
    }
}

/// ANDs `filter` into a join's ON (a join without one gets it as its ON).
fn add_to_on(op: &mut ast::JoinOperator, filter: ast::Expr) -> Result<(), SqlError> {
    use ast::JoinOperator as J;
    let (J::Join(c)
    | J::Inner(c)
    | J::CrossJoin(c)
    | J::StraightJoin(c)
    | J::Left(c)
    | J::LeftOuter(c)
    | J::Right(c)
    | J::RightOuter(c)) = op
    else {
        return Err(SqlError::unsupported("this kind of join beside a view"));
    };
    *c = match std::mem::replace(c, ast::JoinConstraint::None) {
        ast::JoinConstraint::On(e) => ast::JoinConstraint::On(and(e, filter)),
        ast::JoinConstraint::None => ast::JoinConstraint::On(filter),
        _ => return Err(SqlError::unsupported("USING or NATURAL beside a view")),
    };
    Ok(())
}

/// The ON condition of a join, if it has one.
fn on_condition(op: &mut ast::JoinOperator) -> Option<&mut ast::Expr> {
    use ast::JoinOperator as J;
    match op {
        J::Join(ast::JoinConstraint::On(e))
        | J::Inner(ast::JoinConstraint::On(e))
        | J::CrossJoin(ast::JoinConstraint::On(e))
        | J::StraightJoin(ast::JoinConstraint::On(e))
        | J::Left(ast::JoinConstraint::On(e))
        | J::LeftOuter(ast::JoinConstraint::On(e))
        | J::Right(ast::JoinConstraint::On(e))
        | J::RightOuter(ast::JoinConstraint::On(e)) => Some(e),
        _ => None,
    }
}

/// A multi-table UPDATE, with the views it writes merged (rules 1 to 3).
pub(crate) fn update(
    session: &Session,
    catalog: &Catalog,
    mut u: ast::Update,
) -> Result<Rewritten, SqlError> {
    let assignments = u.assignments.clone();
    let mut merger = Merger {
        session,
        catalog,
        writes: Writes::Assignments(&assignments),
        statement: "UPDATE",
        merged: Vec::new(),
        others: Vec::new(),
        filters: Vec::new(),
    };
    merger.merge(&mut u.table, false)?;
    if merger.merged.is_empty() {
        return Ok(Rewritten::unchanged(Statement::Update(u)));
    }
    let relations = merger.relations();
    // Each assignment to a merged view's column, as `reference.column` (rule 1).
    let mut written: Vec<(usize, String)> = Vec::new();
    for a in &mut u.assignments {
        let ast::AssignmentTarget::ColumnName(target) = &a.target else {
            return Err(SqlError::unsupported(a.to_string()));
        };
        let parts = crate::bind::ident_name(target);
        let owner = match parts.split_last() {
            Some((column, [])) => {
                let mut having = relations
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.column(column).is_some());
                let first = having.next();
                if first.is_some() && having.next().is_some() {
                    return Err(crate::from::ambiguous(column, "field list"));
                }
                first.map(|(i, _)| i).filter(|&i| i < merger.merged.len())
            }
            Some((_, qualifier)) => merger
                .merged
                .iter()
                .position(|m| m.names.qualifies(qualifier)),
            None => None,
        };
        if let Some(i) = owner {
            let m = &merger.merged[i];
            let (reference, column) = assignment_target(a, &m.names)?;
            match written.iter().find(|(j, _)| *j == i) {
                Some((_, r)) if *r != reference => return Err(several_tables(&m.def)),
                Some(_) => {}
                None => written.push((i, reference.clone())),
            }
            a.target = qualified_target(&reference, &column);
        }
        substitute_in(&mut a.value, &relations, Lookup::Lenient, "field list")?;
    }
    let read = if u.selection.is_some() {
        crate::grants::SELECT
    } else {
        0
    };
    u.selection = merger.selection(u.selection.take(), &relations)?;
    for o in &mut u.order_by {
        substitute_in(&mut o.expr, &relations, Lookup::Lenient, "order clause")?;
    }
    Ok(merger.finish(Statement::Update(u), &written, crate::grants::UPDATE | read))
}

/// A multi-table DELETE, with the views it deletes from merged (rules 1 to 3).
pub(crate) fn delete(
    session: &Session,
    catalog: &Catalog,
    mut d: ast::Delete,
) -> Result<Rewritten, SqlError> {
    let from = match &d.from {
        ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
    };
    let targets: Vec<String> = if d.using.is_some() {
        from.iter()
            .filter_map(|t| match &t.relation {
                ast::TableFactor::Table { name, .. } => crate::bind::ident_name(name).pop(),
                _ => None,
            })
            .collect()
    } else {
        d.tables
            .iter()
            .filter_map(|n| crate::bind::ident_name(n).pop())
            .collect()
    };
    let mut merger = Merger {
        session,
        catalog,
        writes: Writes::Targets(&targets),
        statement: "DELETE",
        merged: Vec::new(),
        others: Vec::new(),
        filters: Vec::new(),
    };
    let list = match (&mut d.using, &mut d.from) {
        (Some(using), _) => using,
        (None, ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f)) => f,
    };
    for twj in list.iter_mut() {
        merger.merge(twj, false)?;
    }
    if merger.merged.is_empty() {
        return Ok(Rewritten::unchanged(Statement::Delete(d)));
    }
    let relations = merger.relations();
    let read = if d.selection.is_some() {
        crate::grants::SELECT
    } else {
        0
    };
    d.selection = merger.selection(d.selection.take(), &relations)?;
    let written: Vec<(usize, String)> = merger
        .merged
        .iter()
        .enumerate()
        .filter_map(|(i, m)| m.resolved.tables.first().map(|t| (i, t.reference.clone())))
        .collect();
    let mut out = merger.finish(Statement::Delete(d), &written, crate::grants::DELETE | read);
    out.check = None; // DELETE writes no row to check.
    Ok(out)
}
