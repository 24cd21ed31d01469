//! `SELECT ... INTO @a, @b`: a query whose one row goes into user variables, as MySQL's
//! SELECT ... INTO var_list.
//!
//! Rules:
//! 1. Only user variables are targets; `INTO OUTFILE`, `INTO DUMPFILE` and a table are
//!    refused (1235), and INTO is taken only from the statement's outermost SELECT.
//! 2. The query runs as any SELECT of the session (its transaction, locks and privileges);
//!    then a result of one row sets each variable to its column's value, in order.
//! 3. No row: nothing is set and warning 1329 says so; more than one row: error 1172 and
//!    nothing is set; a number of variables that is not the number of columns: 1222.
//! 4. The client gets an OK with one affected row (none for no row), as MySQL answers.
//! 5. INTO may also end the statement (`SELECT a FROM t WHERE .. ORDER BY .. LIMIT 1 INTO @a`,
//!    MySQL 8's preferred place), before or after a locking clause (`FOR UPDATE`, `FOR
//!    SHARE`). sqlparser reads INTO only right after the select list,
//!    so [`move_trailing_into`] moves a trailing `INTO @a, @b` there in the tokens before
//!    parsing. Only a list of user variables is moved, only at the outermost level of a
//!    statement that starts with SELECT, and only when nothing but a locking clause follows
//!    it; anything else stays where it is (a syntax error, as in MySQL). Over a UNION the
//!    moved INTO lands in the first SELECT, and takes the whole union's row (MySQL's rule).
//! 6. A prepared statement (PREPARE, COM_STMT_PREPARE) refuses INTO in either place (1235).

use sqlparser::ast::{self, Statement};
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

use crate::dml_modifiers::{next_significant, word_at};

use crate::error::SqlError;
use crate::result::ResultSink;
use crate::session::Session;

/// Takes the INTO clause out of `stmt`'s outermost SELECT: the variables' names (lower
/// case, without `@`), or an error for a target that is not a user variable (rule 1);
/// `None` when the statement has no INTO.
pub(crate) fn take_targets(stmt: &mut Statement) -> Option<Result<Vec<String>, SqlError>> {
    let Statement::Query(q) = stmt else {
        return None;
    };
    // Over a UNION, INTO sits in the first SELECT and takes the union's row (rule 5).
    let mut body = q.body.as_mut();
    while let ast::SetExpr::SetOperation { left, .. } = body {
        body = left.as_mut();
    }
    let ast::SetExpr::Select(select) = body else {
        return None;
    };
    let into = select.into.take()?;
    if into.temporary || into.unlogged || into.table {
        return Some(Err(SqlError::unsupported(format!(
            "SELECT ... INTO {into}"
        ))));
    }
    Some(
        into.targets
            .iter()
            .map(|target| match target {
                ast::Expr::Identifier(id)
                    if id.value.starts_with('@') && !id.value.starts_with("@@") =>
                {
                    Ok(id.value[1..].to_ascii_lowercase())
                }
                other => Err(SqlError::unsupported(format!(
                    "SELECT ... INTO {other} (only user variables)"
                ))),
            })
            .collect(),
    )
}

/// Runs the planned query and sets `targets` from its row (rules 2 to 4).
pub(crate) fn run(
    session: &mut Session,
    planned: &crate::session::Planned,
    targets: &[String],
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    let mut result = crate::alter::Collected::default();
    session.run(planned, &[], &mut result)?;
    if result.columns.len() != targets.len() {
        return Err(SqlError::new(
            1222,
            "21000",
            "The used SELECT statements have a different number of columns",
        ));
    }
    match result.rows.as_slice() {
        [] => {
            session.state_mut().warnings.push((
                "Warning",
                1329,
                "No data - zero rows fetched, selected, or processed".into(),
            ));
            session.ok(sink, 0)
        }
        [row] => {
            for (name, value) in targets.iter().zip(row) {
                session.state().user_vars.set(name.clone(), value.clone());
            }
            session.ok(sink, 1)
        }
        _ => Err(SqlError::new(
            1172,
            "42000",
            "Result consisted of more than one row",
        )),
    }
}

/// The words that end a select list at the outermost level of a statement.
const AFTER_SELECT_LIST: &[&str] = &[
    "FROM",
    "WHERE",
    "GROUP",
    "HAVING",
    "WINDOW",
    "ORDER",
    "LIMIT",
    "FOR",
    "UNION",
    "EXCEPT",
    "INTERSECT",
];

/// Moves each statement's trailing `INTO @a, @b` right after its first select list, where
/// sqlparser reads it (rule 5).
pub(crate) fn move_trailing_into(tokens: &mut Vec<TokenWithSpan>) {
    let mut start = 0;
    while start < tokens.len() {
        let end = (start..tokens.len())
            .find(|&i| tokens[i].token == Token::SemiColon)
            .unwrap_or(tokens.len());
        let added = move_in_statement(tokens, start, end);
        start = end + added + 1;
    }
}

/// Rule 5 for the statement at `tokens[start..end]` (`end` is its `;` or the end); how many
/// tokens it added (the spaces around a moved clause).
fn move_in_statement(tokens: &mut Vec<TokenWithSpan>, start: usize, end: usize) -> usize {
    let is =
        |i: usize, word: &str| word_at(tokens, i).is_some_and(|w| w.eq_ignore_ascii_case(word));
    let first = next_significant(tokens, start);
    if first >= end || !is(first, "SELECT") {
        return 0;
    }
    // The outermost INTO, and the first outermost word before it that ends the select list.
    let mut depth = 0usize;
    let mut list_end = None;
    let mut into = None;
    for (i, token) in tokens.iter().enumerate().take(end).skip(first + 1) {
        match &token.token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            _ if is(i, "INTO") => {
                into = Some(i);
                break;
            }
            _ if list_end.is_none() && AFTER_SELECT_LIST.iter().any(|w| is(i, w)) => {
                list_end = Some(i);
            }
            _ => {}
        }
    }
    // No INTO, or one already right after the select list.
    let (Some(list_end), Some(into)) = (list_end, into) else {
        return 0;
    };
    // `@a [, @b ...]`: the clause ends after its last variable.
    let mut clause_end = into + 1;
    loop {
        let at = next_significant(tokens, clause_end);
        let variable =
            matches!(word_at(tokens, at), Some(w) if w.starts_with('@') && !w.starts_with("@@"));
        if at >= end || !variable {
            return 0;
        }
        clause_end = at + 1;
        let comma = next_significant(tokens, clause_end);
        if comma >= end || tokens[comma].token != Token::Comma {
            break;
        }
        clause_end = comma + 1;
    }
    let after = next_significant(tokens, clause_end);
    if after < end && !is(after, "FOR") {
        return 0;
    }
    let space = |span| TokenWithSpan::new(Token::Whitespace(Whitespace::Space), span);
    let clause: Vec<TokenWithSpan> = tokens.drain(into..clause_end).collect();
    let span = tokens[list_end].span;
    let moved = std::iter::once(space(span))
        .chain(clause)
        .chain(std::iter::once(space(span)));
    tokens.splice(list_end..list_end, moved);
    2
}

#[cfg(test)]
mod tests {
    use crate::syntax_mode::{parse_statements, Syntax};

    fn parsed(sql: &str) -> Result<String, String> {
        parse_statements(sql, Syntax::DEFAULT)
            .map(|s| {
                s.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_trailing_into_moves_after_the_select_list() {
        assert_eq!(
            parsed("SELECT a, b FROM t WHERE a > (SELECT 1) ORDER BY a LIMIT 1 INTO @x, @y")
                .unwrap(),
            "SELECT a, b INTO @x, @y FROM t WHERE a > (SELECT 1) ORDER BY a LIMIT 1"
        );
        assert_eq!(
            parsed("select max(a) from t for update into @m; SELECT 1 LIMIT 1 INTO @n").unwrap(),
            "SELECT max(a) INTO @m FROM t FOR UPDATE; SELECT 1 INTO @n LIMIT 1"
        );
        assert_eq!(
            parsed("SELECT a FROM t INTO @x FOR SHARE").unwrap(),
            "SELECT a INTO @x FROM t FOR SHARE"
        );
        assert_eq!(
            parsed("SELECT 1 UNION SELECT 2 INTO @x").unwrap(),
            "SELECT 1 INTO @x UNION SELECT 2"
        );
    }

    #[test]
    fn other_intos_stay_where_they_are() {
        // The first place, a non-variable target, INTO in a subquery, text after it.
        assert_eq!(
            parsed("SELECT a INTO @x FROM t").unwrap(),
            "SELECT a INTO @x FROM t"
        );
        assert!(parsed("SELECT a FROM t INTO OUTFILE 'f'").is_err());
        assert!(parsed("SELECT a FROM t INTO @x WHERE a = 1").is_err());
        assert!(parsed("SELECT a FROM t INTO @x, 3").is_err());
        assert!(parsed("SELECT * FROM (SELECT a FROM t INTO @x) AS d").is_err());
        assert!(parsed("SELECT a FROM t INTO @@x").is_err());
        assert_eq!(
            parsed("INSERT INTO t SELECT a FROM u").unwrap(),
            "INSERT INTO t SELECT a FROM u"
        );
    }
}
