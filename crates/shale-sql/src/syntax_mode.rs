//! The `sql_mode` flags that change how statement text parses, and the sqlparser dialect
//! that parses by them: MySQL's dialect with these changes (MySQL 8 "Server SQL Modes",
//! "Operator Precedence").
//!
//! Rules:
//! 1. `ANSI_QUOTES`: `"..."` is a quoted identifier (`""` inside is one `"`), as `` `...` ``;
//!    without it `"..."` is a string. The tokenizer reads `"` as an identifier quote, and
//!    [`backtick_identifiers`] then gives every such identifier the backtick quote style, so
//!    text printed from the tree (a view's stored SELECT, a generated column's expression)
//!    reads the same in a session without the mode, as MySQL stores views with backticks.
//! 2. `||` without `PIPES_AS_CONCAT` is the logical OR, at OR's precedence (MySQL 8, where
//!    it is deprecated); with it, `a || b` is `CONCAT(a, b)` (NULL if either is NULL),
//!    binding tighter than `*` and `+` (MySQL puts it between `^` and the unary operators).
//!    The tree holds `OR` or the `CONCAT` call, never sqlparser's `StringConcat`, so a view
//!    created under the mode keeps its meaning in any session.
//! 3. `HIGH_NOT_PRECEDENCE`: `NOT` binds as tightly as `!`, so `NOT a BETWEEN b AND c` is
//!    `(NOT a) BETWEEN b AND c`. The tree holds the parenthesis (`Expr::Nested`), for the
//!    same reason as rule 2. `NOT EXISTS`, `NOT IN`, `NOT LIKE`, `IS NOT` are not prefix
//!    NOTs and do not change.
//! 4. `REAL_AS_FLOAT`: the type REAL is FLOAT (column definitions, CAST); without it REAL is
//!    DOUBLE, as sqlparser's `DataType::Real` already binds.
//! 5. `!x` is MySQL's logical NOT at its own precedence, above unary minus and `^` (`!1 + 1`
//!    is `(!1) + 1`), in every mode; `MySqlDialect` does not parse it.
//! 6. `@x := expr`, the assignment inside an expression (user_vars.rs), binds weaker than
//!    every other operator and to the right, as in MySQL: `@a := 1 OR 0` is `@a := (1 OR
//!    0)`, `@a := @b := 1` is `@a := (@b := 1)`. `MySqlDialect` reads `:=` as a comparison.
//! 7. `NO_BACKSLASH_ESCAPES`: `\` is an ordinary character in string literals (`'a\'` is
//!    the two characters `a\`); without it `\n`, `\'`, `\\` ... are escapes, as MySQL reads
//!    them.
//! 8. Text printed from the tree to be stored and parsed again (a view's SELECT, a generated
//!    column's expression) goes through [`stored_text`]: it is read back under
//!    [`Syntax::DEFAULT`], where `\` escapes, but sqlparser prints a string's value with only
//!    its quotes doubled, so a value holding `\` would come back as another value.
//! 9. Everything else is `MySqlDialect`'s: every method it overrides is passed on, and
//!    [`ModeDialect::dialect`] answers `MySqlDialect`'s type, so sqlparser's own checks for the
//!    MySQL dialect hold too.
//!
//! Since each flag changes the parse, a plan made from text is kept only with the mode it was
//! parsed under: the statement cache compares the whole `sql_mode`, a prepared statement is
//! parsed again under the mode it was prepared with, and a view's text is parsed under
//! [`Syntax::DEFAULT`] (it is stored in that form).

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, DataType, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList,
    FunctionArguments, Ident, ObjectName, Statement, UnaryOperator, Value, ValueWithSpan, VisitMut,
    VisitorMut,
};
use sqlparser::dialect::{BindPlaceholderStyle, Dialect, MySqlDialect, Precedence};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::sql_mode::SqlMode;

/// The parse-changing part of a `sql_mode`.
#[allow(clippy::struct_excessive_bools)] // five independent mode flags, as sql_mode has them
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Syntax {
    pub ansi_quotes: bool,
    pub pipes_as_concat: bool,
    pub high_not_precedence: bool,
    pub real_as_float: bool,
    pub no_backslash_escapes: bool,
}

impl Syntax {
    /// No flag: how stored text (views, generated columns) and internal text are parsed.
    pub const DEFAULT: Syntax = Syntax {
        ansi_quotes: false,
        pipes_as_concat: false,
        high_not_precedence: false,
        real_as_float: false,
        no_backslash_escapes: false,
    };

    pub fn of(mode: SqlMode) -> Syntax {
        Syntax {
            ansi_quotes: mode.has(SqlMode::ANSI_QUOTES),
            pipes_as_concat: mode.has(SqlMode::PIPES_AS_CONCAT),
            high_not_precedence: mode.has(SqlMode::HIGH_NOT_PRECEDENCE),
            real_as_float: mode.has(SqlMode::REAL_AS_FLOAT),
            no_backslash_escapes: mode.has(SqlMode::NO_BACKSLASH_ESCAPES),
        }
    }
}

/// `:=`'s precedence (rule 6): below OR's, above the 0 a whole expression is parsed at.
const ASSIGNMENT_PRECEDENCE: u8 = 1;

/// MySQL's dialect under `syntax` (rule 9).
#[derive(Debug)]
pub(crate) struct ModeDialect {
    pub syntax: Syntax,
    inner: MySqlDialect,
}

impl ModeDialect {
    pub fn new(syntax: Syntax) -> ModeDialect {
        ModeDialect {
            syntax,
            inner: MySqlDialect {},
        }
    }
}

/// Rule 1: identifiers quoted with `"` become backtick-quoted ones (their value is already
/// unquoted by the tokenizer).
pub(crate) fn backtick_identifiers(tokens: &mut [TokenWithSpan]) {
    for t in tokens {
        if let Token::Word(w) = &mut t.token {
            if w.quote_style == Some('"') {
                w.quote_style = Some('`');
            }
        }
    }
}

/// `node` printed for storage (rule 8): every string literal's `\\` and quote are escaped
/// with `\\`, so parsing the text under [`Syntax::DEFAULT`] gives back the same values.
pub(crate) fn stored_text<T: Clone + std::fmt::Display + VisitMut>(node: &T) -> String {
    struct EscapeStrings;
    impl VisitorMut for EscapeStrings {
        type Break = ();
        fn pre_visit_value(&mut self, value: &mut ValueWithSpan) -> ControlFlow<()> {
            match &mut value.value {
                Value::SingleQuotedString(s) | Value::NationalStringLiteral(s) => {
                    *s = escaped(s, '\'');
                }
                Value::DoubleQuotedString(s) => *s = escaped(s, '"'),
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    // sqlparser doubles a quote unless a `\\` comes before it, so a quote escaped here
    // is printed as it is.
    fn escaped(s: &str, quote: char) -> String {
        let mut out = String::with_capacity(s.len() + 2);
        for c in s.chars() {
            if c == '\\' || c == quote {
                out.push('\\');
            }
            out.push(c);
        }
        out
    }
    let text = node.to_string();
    if !text.contains('\\') {
        return text;
    }
    let mut copy = node.clone();
    let _ = copy.visit(&mut EscapeStrings);
    copy.to_string()
}

/// Parses `text` into statements under `syntax` (rules 1 to 6), UPDATE's and DELETE's
/// modifiers taken out first (dml_modifiers.rs), `FROM DUAL` dropped (from_dual.rs) and a
/// trailing INTO moved after the select list (select_into.rs).
pub(crate) fn parse_statements(text: &str, syntax: Syntax) -> Result<Vec<Statement>, ParserError> {
    let dialect = ModeDialect::new(syntax);
    let mut tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, text)
        .with_unescape(true)
        .tokenize_with_location()?;
    crate::dml_modifiers::take_modifiers(&mut tokens)?;
    crate::from_dual::take_from_dual(&mut tokens);
    crate::select_into::move_trailing_into(&mut tokens);
    if syntax.ansi_quotes {
        backtick_identifiers(&mut tokens);
    }
    Parser::new(&dialect)
        .with_recursion_limit(200)
        .with_tokens_with_locations(tokens)
        .parse_statements()
}

/// `CONCAT(left, right)` (rule 2).
fn concat(left: Expr, right: Expr) -> Expr {
    let arg = |e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e));
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new("CONCAT")]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: vec![arg(left), arg(right)],
            clauses: Vec::new(),
        }),
        within_group: Vec::new(),
        filter: None,
        null_treatment: None,
        over: None,
    })
}

impl Dialect for ModeDialect {
    fn dialect(&self) -> std::any::TypeId {
        self.inner.dialect()
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        (self.syntax.ansi_quotes && ch == '"') || self.inner.is_delimited_identifier_start(ch)
    }

    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        if parser.peek_token_ref().token == Token::Assignment {
            return Some(Ok(ASSIGNMENT_PRECEDENCE));
        }
        if parser.peek_token_ref().token == Token::StringConcat {
            let prec = if self.syntax.pipes_as_concat {
                // Above `*` (MulDivModOp), below `::`/`!` (rule 2).
                self.prec_value(Precedence::MulDivModOp) + 2
            } else {
                self.prec_value(Precedence::Or)
            };
            return Some(Ok(prec));
        }
        self.inner.get_next_precedence(parser)
    }

    fn parse_infix(
        &self,
        parser: &mut Parser,
        expr: &Expr,
        precedence: u8,
    ) -> Option<Result<Expr, ParserError>> {
        if parser.peek_token_ref().token == Token::StringConcat {
            parser.advance_token();
            let right = match parser.parse_subexpr(precedence) {
                Ok(r) => r,
                Err(e) => return Some(Err(e)),
            };
            let left = expr.clone();
            return Some(Ok(if self.syntax.pipes_as_concat {
                concat(left, right)
            } else {
                Expr::BinaryOp {
                    left: Box::new(left),
                    op: BinaryOperator::Or,
                    right: Box::new(right),
                }
            }));
        }
        if parser.peek_token_ref().token == Token::Assignment {
            parser.advance_token();
            // Right to left (rule 6): the value takes every operator, `:=` too.
            let value = match parser.parse_subexpr(ASSIGNMENT_PRECEDENCE - 1) {
                Ok(v) => v,
                Err(e) => return Some(Err(e)),
            };
            return Some(Ok(Expr::BinaryOp {
                left: Box::new(expr.clone()),
                op: BinaryOperator::Assignment,
                right: Box::new(value),
            }));
        }
        self.inner.parse_infix(parser, expr, precedence)
    }

    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        let bang = parser.peek_token_ref().token == Token::ExclamationMark;
        let high_not = self.syntax.high_not_precedence
            && matches!(&parser.peek_token_ref().token,
                Token::Word(w) if w.keyword == Keyword::NOT)
            && !matches!(&parser.peek_nth_token_ref(1).token,
                Token::Word(w) if w.keyword == Keyword::EXISTS);
        if !(bang || high_not) {
            return self.inner.parse_prefix(parser);
        }
        parser.advance_token();
        // As tightly as `!` (rules 3 and 5): only `.`, `::` and `[` bind tighter.
        let operand = match parser.parse_subexpr(self.prec_value(Precedence::DoubleColon) - 1) {
            Ok(e) => Box::new(e),
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(if bang {
            Expr::UnaryOp {
                op: UnaryOperator::BangNot,
                expr: operand,
            }
        } else {
            Expr::Nested(Box::new(Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr: operand,
            }))
        }))
    }

    fn parse_data_type(&self, parser: &mut Parser) -> Option<Result<DataType, ParserError>> {
        let is_real = matches!(&parser.peek_token_ref().token,
            Token::Word(w) if w.keyword == Keyword::REAL && w.quote_style.is_none());
        if !(self.syntax.real_as_float && is_real) {
            return self.inner.parse_data_type(parser);
        }
        parser.advance_token();
        Some(Ok(if parser.parse_keyword(Keyword::UNSIGNED) {
            DataType::FloatUnsigned(sqlparser::ast::ExactNumberInfo::None)
        } else {
            DataType::Float(sqlparser::ast::ExactNumberInfo::None)
        }))
    }

    // Rule 9: the rest is MySqlDialect's.

    fn supports_string_literal_table_alias(&self, explicit: bool) -> bool {
        self.inner.supports_string_literal_table_alias(explicit)
    }
    fn is_identifier_start(&self, ch: char) -> bool {
        self.inner.is_identifier_start(ch)
    }
    fn is_identifier_part(&self, ch: char) -> bool {
        self.inner.is_identifier_part(ch)
    }
    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        self.inner.identifier_quote_style(identifier)
    }
    fn ordered_bind_placeholder_style(&self) -> Option<BindPlaceholderStyle> {
        self.inner.ordered_bind_placeholder_style()
    }
    fn supports_string_literal_backslash_escape(&self) -> bool {
        // Rule 7.
        !self.syntax.no_backslash_escapes && self.inner.supports_string_literal_backslash_escape()
    }
    fn supports_string_literal_concatenation(&self) -> bool {
        self.inner.supports_string_literal_concatenation()
    }
    fn ignores_wildcard_escapes(&self) -> bool {
        self.inner.ignores_wildcard_escapes()
    }
    fn supports_numeric_prefix(&self) -> bool {
        self.inner.supports_numeric_prefix()
    }
    fn supports_literal_prefix_in_qualified_name(&self) -> bool {
        self.inner.supports_literal_prefix_in_qualified_name()
    }
    fn supports_bitwise_shift_operators(&self) -> bool {
        self.inner.supports_bitwise_shift_operators()
    }
    fn supports_singular_value_keyword(&self) -> bool {
        self.inner.supports_singular_value_keyword()
    }
    fn supports_multiline_comment_hints(&self) -> bool {
        self.inner.supports_multiline_comment_hints()
    }
    fn parse_statement(&self, parser: &mut Parser) -> Option<Result<Statement, ParserError>> {
        self.inner.parse_statement(parser)
    }
    fn require_interval_qualifier(&self) -> bool {
        self.inner.require_interval_qualifier()
    }
    fn supports_limit_comma(&self) -> bool {
        self.inner.supports_limit_comma()
    }
    fn supports_create_table_select(&self) -> bool {
        self.inner.supports_create_table_select()
    }
    fn supports_insert_set(&self) -> bool {
        self.inner.supports_insert_set()
    }
    fn supports_user_host_grantee(&self) -> bool {
        self.inner.supports_user_host_grantee()
    }
    fn is_table_factor_alias(&self, explicit: bool, kw: &Keyword, parser: &mut Parser) -> bool {
        self.inner.is_table_factor_alias(explicit, kw, parser)
    }
    fn supports_table_hints(&self) -> bool {
        self.inner.supports_table_hints()
    }
    fn requires_single_line_comment_whitespace(&self) -> bool {
        self.inner.requires_single_line_comment_whitespace()
    }
    fn supports_hash_comment(&self) -> bool {
        self.inner.supports_hash_comment()
    }
    fn supports_match_against(&self) -> bool {
        self.inner.supports_match_against()
    }
    fn supports_select_modifiers(&self) -> bool {
        self.inner.supports_select_modifiers()
    }
    fn supports_set_names(&self) -> bool {
        self.inner.supports_set_names()
    }
    fn supports_comma_separated_set_assignments(&self) -> bool {
        self.inner.supports_comma_separated_set_assignments()
    }
    fn supports_alter_column_position(&self) -> bool {
        self.inner.supports_alter_column_position()
    }
    fn supports_update_order_by(&self) -> bool {
        self.inner.supports_update_order_by()
    }
    fn supports_data_type_signed_suffix(&self) -> bool {
        self.inner.supports_data_type_signed_suffix()
    }
    fn supports_data_type_zerofill_suffix(&self) -> bool {
        self.inner.supports_data_type_zerofill_suffix()
    }
    fn supports_cross_join_constraint(&self) -> bool {
        self.inner.supports_cross_join_constraint()
    }
    fn supports_double_ampersand_operator(&self) -> bool {
        self.inner.supports_double_ampersand_operator()
    }
    fn supports_binary_kw_as_cast(&self) -> bool {
        self.inner.supports_binary_kw_as_cast()
    }
    fn supports_table_partitions(&self) -> bool {
        self.inner.supports_table_partitions()
    }
    fn supports_comment_optimizer_hint(&self) -> bool {
        self.inner.supports_comment_optimizer_hint()
    }
    fn supports_constraint_keyword_without_name(&self) -> bool {
        self.inner.supports_constraint_keyword_without_name()
    }
    fn supports_key_column_option(&self) -> bool {
        self.inner.supports_key_column_option()
    }
    fn supports_group_by_with_modifier(&self) -> bool {
        self.inner.supports_group_by_with_modifier()
    }
    fn supports_left_associative_joins_without_parens(&self) -> bool {
        self.inner.supports_left_associative_joins_without_parens()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(sql: &str, syntax: Syntax) -> String {
        parse_statements(sql, syntax)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn mysql(sql: &str) -> String {
        Parser::parse_sql(&MySqlDialect {}, sql)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    }

    #[test]
    fn without_flags_it_parses_as_mysql_dialect_but_for_pipes() {
        for sql in [
            "SELECT a DIV 2, 'x' \"y\", `c` FROM t USE INDEX (k) WHERE a && b LIMIT 1, 2",
            "LOCK TABLES t READ",
            "INSERT INTO t SET a = 1",
            "SELECT NOT a BETWEEN 1 AND 2, CAST(x AS REAL), 1 << 2, x'0f'",
            "CREATE TABLE t (a REAL, b INT UNSIGNED ZEROFILL, KEY (a))",
        ] {
            assert_eq!(parsed(sql, Syntax::DEFAULT), mysql(sql), "{sql}");
        }
        assert_eq!(
            parsed("SELECT a || b AND c", Syntax::DEFAULT),
            "SELECT a OR b AND c"
        );
    }

    #[test]
    fn each_flag_changes_only_its_part() {
        let ansi = Syntax {
            ansi_quotes: true,
            ..Syntax::DEFAULT
        };
        assert_eq!(
            parsed("SELECT \"a\"\"b\", 'c', `d` FROM \"t\"", ansi),
            "SELECT `a\"b`, 'c', `d` FROM `t`"
        );
        let pipes = Syntax {
            pipes_as_concat: true,
            ..Syntax::DEFAULT
        };
        assert_eq!(
            parsed("SELECT a || b * 2 OR c || d || e", pipes),
            "SELECT CONCAT(a, b) * 2 OR CONCAT(CONCAT(c, d), e)"
        );
        let not = Syntax {
            high_not_precedence: true,
            ..Syntax::DEFAULT
        };
        assert_eq!(
            parsed(
                "SELECT NOT a BETWEEN 1 AND 2, NOT EXISTS (SELECT 1), a NOT IN (1)",
                not
            ),
            "SELECT (NOT a) BETWEEN 1 AND 2, NOT EXISTS (SELECT 1), a NOT IN (1)"
        );
        let real = Syntax {
            real_as_float: true,
            ..Syntax::DEFAULT
        };
        assert_eq!(
            parsed(
                "SELECT CAST(1 AS REAL); CREATE TABLE t (a REAL UNSIGNED)",
                real
            ),
            "SELECT CAST(1 AS FLOAT); CREATE TABLE t (a FLOAT UNSIGNED)"
        );
    }
}
