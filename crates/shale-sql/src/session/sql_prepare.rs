//! PREPARE / EXECUTE / DEALLOCATE PREPARE in SQL text: named handles over the session's
//! prepared statements (the same ones COM_STMT_PREPARE makes, so they are bound and planned
//! once, re-planned after DDL, and count toward the same limit).
//!
//! sqlparser parses only PostgreSQL's `PREPARE name AS statement`, so a statement text that
//! is exactly one `PREPARE name FROM 'text' | @variable` is recognized here before parsing
//! (as CHECK TABLE is); EXECUTE and DEALLOCATE/DROP PREPARE arrive parsed. Rules (MySQL's):
//! 1. PREPARE over an existing name deallocates the old statement first, even when the new
//!    text fails.
//! 2. The text is one statement; PREPARE, EXECUTE and DEALLOCATE cannot be prepared (1295),
//!    so an EXECUTE never runs another EXECUTE.
//! 3. EXECUTE's USING takes user variables only, one per `?` (1210 otherwise); an unknown
//!    name is 1243.

use shale_table::Value;
use sqlparser::ast::{self, Statement};

use super::Session;
use crate::error::SqlError;
use crate::result::ResultSink;
use crate::syntax_mode::Syntax;

/// Where PREPARE takes its text from.
pub(crate) enum PrepareSource {
    Text(String),
    UserVariable(String),
}

fn unknown_handler(name: &str, command: &str) -> SqlError {
    SqlError::new(
        1243,
        "HY000",
        format!("Unknown prepared statement handler ({name}) given to {command}"),
    )
}

/// `(name, source)` when `sql` is a single `PREPARE name FROM ...` statement; an error
/// when it starts so but the source is neither a string nor a user variable. `syntax` is
/// the session's: under ANSI_QUOTES `"..."` is a name, not the source text.
pub(crate) fn parse_prepare(
    sql: &str,
    syntax: Syntax,
) -> Option<Result<(String, PrepareSource), SqlError>> {
    let text = sql.trim().trim_end_matches(';').trim_end();
    let (head, rest) = text.split_once(char::is_whitespace)?;
    if !head.eq_ignore_ascii_case("PREPARE") {
        return None;
    }
    let rest = rest.trim_start();
    let (name, rest) = rest.split_once(char::is_whitespace)?;
    let rest = rest.trim_start();
    let (from, source) = rest.split_once(char::is_whitespace)?;
    if !from.eq_ignore_ascii_case("FROM") {
        return None;
    }
    let name = if syntax.ansi_quotes {
        name.trim_matches(|c| c == '`' || c == '"')
    } else {
        name.trim_matches('`')
    }
    .to_string();
    // The source is parsed as an expression of `SELECT`, so quoting and escapes are the
    // parser's.
    let parsed = crate::parse::parse_as(&format!("SELECT {source}"), syntax);
    let expr = match parsed.as_deref() {
        Ok([Statement::Query(q)]) => match q.body.as_ref() {
            ast::SetExpr::Select(s) if s.projection.len() == 1 => match &s.projection[0] {
                ast::SelectItem::UnnamedExpr(e) => Some(e.clone()),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    };
    let source = match expr {
        Some(ast::Expr::Value(v)) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => {
                Some(PrepareSource::Text(s.clone()))
            }
            _ => None,
        },
        Some(ast::Expr::Identifier(id)) if user_variable(&id.value).is_some() => {
            user_variable(&id.value).map(PrepareSource::UserVariable)
        }
        _ => None,
    };
    Some(
        source
            .map(|s| (name, s))
            .ok_or_else(|| SqlError::syntax(source_text(text), 1)),
    )
}

/// The text after FROM, for a syntax error.
fn source_text(text: &str) -> &str {
    let upper = text.to_ascii_uppercase();
    upper.find(" FROM ").map_or(text, |i| text[i + 6..].trim())
}

/// `@name` as a user variable's (lowercased) name.
fn user_variable(text: &str) -> Option<String> {
    let name = text.strip_prefix('@')?;
    if name.is_empty() || name.starts_with('@') {
        return None;
    }
    Some(name.trim_matches('`').to_ascii_lowercase())
}

impl Session {
    fn user_variable_value(&self, name: &str) -> Value {
        self.state.user_vars.get(name)
    }

    /// PREPARE name FROM source (rules 1 and 2).
    pub(crate) fn sql_prepare(
        &mut self,
        name: &str,
        source: &PrepareSource,
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError> {
        self.state.warnings.clear();
        let key = name.to_ascii_lowercase();
        if let Some(old) = self.sql_prepared.remove(&key) {
            self.close_prepared(old);
        }
        let text = match source {
            PrepareSource::Text(t) => t.clone(),
            PrepareSource::UserVariable(v) => match self.user_variable_value(v) {
                // MySQL prepares the text NULL, which is a syntax error.
                Value::Null => "NULL".to_string(),
                other => crate::value::display(&other),
            },
        };
        let statements = crate::parse::parse_as(&text, self.syntax())?;
        if statements.iter().any(|s| {
            matches!(
                s,
                Statement::Prepare { .. }
                    | Statement::Execute { .. }
                    | Statement::Deallocate { .. }
            )
        }) || parse_prepare(&text, self.syntax()).is_some()
        {
            return Err(SqlError::new(
                1295,
                "HY000",
                "This command is not supported in the prepared statement protocol yet",
            ));
        }
        let info = self.prepare(&text)?;
        self.sql_prepared.insert(key, info.id);
        let mut status = self.state.status(self.in_transaction());
        status.info = "Statement prepared".to_string();
        sink.ok(&status)
    }

    /// EXECUTE and DEALLOCATE PREPARE, as parsed.
    pub(crate) fn sql_prepared_command(
        &mut self,
        stmt: &Statement,
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError> {
        match stmt {
            Statement::Execute {
                name: Some(name),
                parameters,
                has_parentheses: false,
                immediate: false,
                into,
                using,
                output: false,
                default: false,
            } if parameters.is_empty() && into.is_empty() => {
                let name = crate::bind::ident_name(name).join(".");
                let id = self
                    .sql_prepared
                    .get(&name.to_ascii_lowercase())
                    .copied()
                    .filter(|id| self.prepared.contains_key(id))
                    .ok_or_else(|| unknown_handler(&name, "EXECUTE"))?;
                let mut params = Vec::with_capacity(using.len());
                for u in using {
                    let var = match &u.expr {
                        ast::Expr::Identifier(id) if u.alias.is_none() => user_variable(&id.value),
                        _ => None,
                    }
                    .ok_or_else(|| SqlError::syntax(&u.to_string(), 1))?;
                    params.push(self.user_variable_value(&var));
                }
                let count = self.prepared.get(&id).map_or(0, |p| p.params);
                if params.len() != count {
                    return Err(SqlError::new(
                        1210,
                        "HY000",
                        "Incorrect arguments to EXECUTE",
                    ));
                }
                self.execute_prepared(id, &params, sink)
            }
            Statement::Deallocate { name, .. } => {
                let id = self
                    .sql_prepared
                    .remove(&name.value.to_ascii_lowercase())
                    .ok_or_else(|| unknown_handler(&name.value, "DEALLOCATE PREPARE"))?;
                self.close_prepared(id);
                self.state.warnings.clear();
                self.ok(sink, 0)
            }
            other => Err(SqlError::unsupported(other.to_string())),
        }
    }
}
