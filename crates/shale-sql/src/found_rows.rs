//! `SELECT SQL_CALC_FOUND_ROWS ... LIMIT n`: FOUND_ROWS() then gives the rows the SELECT
//! would have returned without its LIMIT, as MySQL does (deprecated there since 8.0.17, still
//! used by older applications to page through results).
//!
//! Rules:
//! 1. Only the statement's outermost query may carry it: its SELECT, or the first SELECT of
//!    its UNION (where it counts the whole union's rows). Anywhere else (a subquery, a
//!    derived table, a later part of a UNION) it is 1234, as in MySQL.
//! 2. The query runs without its outermost LIMIT and OFFSET (which move into a [`Window`]):
//!    every row is produced and counted, and the window's rows alone reach the client. So it
//!    costs what the query costs without LIMIT — as in MySQL, which also finishes the scan.

use shale_table::Value;
use sqlparser::ast;

use crate::error::SqlError;
use crate::expr::{Env, Expr};
use crate::query::BoundQuery;
use crate::result::{ColumnMeta, ResultSink, StatementStatus};

/// Whether the outermost query asks for SQL_CALC_FOUND_ROWS (rule 1).
pub(crate) fn requested(q: &ast::Query) -> bool {
    fn first_select(body: &ast::SetExpr) -> Option<&ast::Select> {
        match body {
            ast::SetExpr::Select(s) => Some(s),
            ast::SetExpr::SetOperation { left, .. } => first_select(left),
            ast::SetExpr::Query(q) => first_select(&q.body),
            _ => None,
        }
    }
    first_select(&q.body).is_some_and(has_modifier)
}

/// Whether `s` says SQL_CALC_FOUND_ROWS.
pub(crate) fn has_modifier(s: &ast::Select) -> bool {
    s.select_modifiers
        .as_ref()
        .is_some_and(|m| m.sql_calc_found_rows)
}

/// MySQL's error for the modifier anywhere but the outermost query (rule 1).
pub(crate) fn misplaced() -> SqlError {
    SqlError::new(
        1234,
        "42000",
        "Incorrect usage/placement of 'SQL_CALC_FOUND_ROWS'",
    )
}

/// The outermost LIMIT and OFFSET, taken out of the query (rule 2).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Window {
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
}

impl Window {
    /// Takes `q`'s outermost LIMIT and OFFSET.
    pub(crate) fn take(q: &mut BoundQuery) -> Window {
        match q {
            BoundQuery::Select(s) => Window {
                limit: s.limit.take(),
                offset: s.offset.take(),
            },
            BoundQuery::Union(u) => Window {
                limit: u.limit.take(),
                offset: u.offset.take(),
            },
            // A recursive CTE's LIMIT bounds its recursion, not the outer result.
            BoundQuery::Recursive(_) | BoundQuery::WorkingTable(_) => Window::default(),
        }
    }

    /// A sink passing on this window's rows of `inner`'s result and counting them all.
    pub(crate) fn sink<'a>(
        &self,
        inner: &'a mut dyn ResultSink,
        env: &dyn Env,
    ) -> Result<WindowSink<'a>, SqlError> {
        Ok(WindowSink {
            inner,
            skip: crate::exec::count_value(self.offset.as_ref(), env, 0)?,
            left: crate::exec::count_value(self.limit.as_ref(), env, u64::MAX)?,
            found: 0,
        })
    }
}

/// Counts every row (`found`, FOUND_ROWS()'s next value) and passes on those of the window.
pub(crate) struct WindowSink<'a> {
    inner: &'a mut dyn ResultSink,
    skip: u64,
    left: u64,
    pub found: u64,
}

impl ResultSink for WindowSink<'_> {
    fn ok(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        self.inner.ok(status)
    }
    fn columns(&mut self, columns: &[ColumnMeta]) -> Result<(), SqlError> {
        self.inner.columns(columns)
    }
    fn row(&mut self, row: &[Value]) -> Result<(), SqlError> {
        self.found += 1;
        if self.skip > 0 {
            self.skip -= 1;
            Ok(())
        } else if self.left > 0 {
            self.left -= 1;
            self.inner.row(row)
        } else {
            Ok(())
        }
    }
    fn end(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        self.inner.end(status)
    }
}
