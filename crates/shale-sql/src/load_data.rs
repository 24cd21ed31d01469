//! `LOAD DATA [LOCAL] INFILE`: the statement (recognized before parsing: sqlparser has no
//! LOAD DATA for MySQL, docs/sql.md "Parser workarounds") and MySQL's rules for splitting a
//! file into rows and fields. Executing it is bulk_insert.rs's job.
//!
//! Field rules (MySQL 8 reference, "LOAD DATA Statement"):
//! 1. Defaults: `FIELDS TERMINATED BY '\t' ENCLOSED BY '' ESCAPED BY '\\'`, `LINES
//!    TERMINATED BY '\n' STARTING BY ''`.
//! 2. With an escape character, `\0 \b \n \r \t \Z` are NUL, backspace, newline, carriage
//!    return, tab and 0x1A; the escape before any other character (a terminator, the
//!    enclosure, itself) keeps that character literally. A field that is exactly `\N` is NULL.
//! 3. A field that starts with the enclosing character ends at the enclosing character
//!    followed by a field or line terminator; inside it, a doubled enclosing character is one,
//!    and terminators are text. With an enclosing character set, an unenclosed field that is
//!    exactly `NULL` is NULL too.
//! 4. With `LINES STARTING BY`, text up to and including the prefix is skipped; a line without
//!    it is skipped whole. `IGNORE n LINES` skips the first `n` lines.

use crate::error::SqlError;

/// One parsed LOAD DATA statement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LoadData {
    pub local: bool,
    pub file: String,
    pub duplicates: Duplicates,
    pub database: Option<String>,
    pub table: String,
    pub charset: Option<String>,
    pub format: Format,
    pub ignore_lines: u64,
    /// The column list: a column name, or `@var` (a user variable).
    pub targets: Option<Vec<Target>>,
    /// The `SET col = expr, ...` text, bound later as an UPDATE's assignments.
    pub set_text: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Duplicates {
    Error,
    Ignore,
    Replace,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Column(String),
    Variable(String),
}

/// How fields and lines are delimited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Format {
    pub field_terminator: Vec<u8>,
    pub enclosed_by: Option<u8>,
    pub optionally: bool,
    pub escaped_by: Option<u8>,
    pub line_terminator: Vec<u8>,
    pub line_starting: Vec<u8>,
}

impl Default for Format {
    fn default() -> Self {
        Format {
            field_terminator: b"\t".to_vec(),
            enclosed_by: None,
            optionally: false,
            escaped_by: Some(b'\\'),
            line_terminator: b"\n".to_vec(),
            line_starting: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Text(Vec<u8>),
    Ident(String),
    Number(u64),
    Punct(char),
}

fn tokenize(sql: &str) -> Option<Vec<(Token, usize)>> {
    let bytes = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'\'' || c == b'"' {
            let (text, end) = quoted(bytes, i)?;
            out.push((Token::Text(text), start));
            i = end;
        } else if c == b'`' {
            let mut name = Vec::new();
            i += 1;
            loop {
                match bytes.get(i)? {
                    b'`' if bytes.get(i + 1) == Some(&b'`') => {
                        name.push(b'`');
                        i += 2;
                    }
                    b'`' => break,
                    &b => {
                        name.push(b);
                        i += 1;
                    }
                }
            }
            i += 1;
            out.push((Token::Ident(String::from_utf8(name).ok()?), start));
        } else if c.is_ascii_digit() {
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            out.push((Token::Number(sql[start..i].parse().ok()?), start));
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b'@' || c >= 0x80 {
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric()
                    || matches!(bytes[i], b'_' | b'@' | b'$')
                    || bytes[i] >= 0x80)
            {
                i += 1;
            }
            out.push((Token::Word(sql[start..i].to_string()), start));
        } else {
            out.push((Token::Punct(c as char), start));
            i += 1;
        }
    }
    Some(out)
}

/// A MySQL string literal at `bytes[at]` (its quote): the text with escapes applied, and the
/// offset after it.
fn quoted(bytes: &[u8], at: usize) -> Option<(Vec<u8>, usize)> {
    let quote = bytes[at];
    let mut text = Vec::new();
    let mut i = at + 1;
    loop {
        let c = *bytes.get(i)?;
        if c == quote {
            if bytes.get(i + 1) == Some(&quote) {
                text.push(quote);
                i += 2;
                continue;
            }
            return Some((text, i + 1));
        }
        if c == b'\\' {
            let e = *bytes.get(i + 1)?;
            text.push(match e {
                b'0' => 0,
                b'b' => 8,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'Z' => 0x1A,
                other => other,
            });
            i += 2;
            continue;
        }
        text.push(c);
        i += 1;
    }
}

struct Cursor<'a> {
    sql: &'a str,
    tokens: Vec<(Token, usize)>,
    at: usize,
}

impl Cursor<'_> {
    fn peek_word(&self, word: &str) -> bool {
        matches!(self.tokens.get(self.at), Some((Token::Word(w), _)) if w.eq_ignore_ascii_case(word))
    }

    fn eat_word(&mut self, word: &str) -> bool {
        let yes = self.peek_word(word);
        if yes {
            self.at += 1;
        }
        yes
    }

    fn error(&self) -> SqlError {
        let offset = self
            .tokens
            .get(self.at)
            .map_or(self.sql.len(), |(_, offset)| *offset);
        SqlError::syntax(&self.sql[offset..], 1)
    }

    fn expect_word(&mut self, word: &str) -> Result<(), SqlError> {
        if self.eat_word(word) {
            Ok(())
        } else {
            Err(self.error())
        }
    }

    fn text(&mut self) -> Result<Vec<u8>, SqlError> {
        match self.tokens.get(self.at) {
            Some((Token::Text(t), _)) => {
                let t = t.clone();
                self.at += 1;
                Ok(t)
            }
            _ => Err(self.error()),
        }
    }

    fn name(&mut self) -> Result<String, SqlError> {
        match self.tokens.get(self.at) {
            Some((Token::Word(w) | Token::Ident(w), _)) => {
                let w = w.clone();
                self.at += 1;
                Ok(w)
            }
            _ => Err(self.error()),
        }
    }

    fn punct(&mut self, c: char) -> bool {
        let yes = matches!(self.tokens.get(self.at), Some((Token::Punct(p), _)) if *p == c);
        if yes {
            self.at += 1;
        }
        yes
    }

    /// One enclosing or escape character (MySQL allows only one; empty means none).
    fn one_char(&mut self) -> Result<Option<u8>, SqlError> {
        let t = self.text()?;
        match t.as_slice() {
            [] => Ok(None),
            [c] => Ok(Some(*c)),
            _ => Err(SqlError::new(
                1083,
                "42000",
                "Field separator argument is not what is expected; check the manual",
            )),
        }
    }
}

/// The statement if `sql` is one LOAD DATA statement (`None`: not LOAD DATA at all, so the
/// normal parser reports whatever it is); a LOAD DATA with bad syntax is an error.
pub(crate) fn parse_load_data(sql: &str) -> Option<Result<LoadData, SqlError>> {
    let text = sql.trim().trim_end_matches(';').trim_end();
    let mut words = text.split_whitespace();
    let is_load =
        words.next()?.eq_ignore_ascii_case("LOAD") && words.next()?.eq_ignore_ascii_case("DATA");
    if !is_load {
        return None;
    }
    let Some(tokens) = tokenize(text) else {
        return Some(Err(SqlError::syntax(text, 1)));
    };
    let mut c = Cursor {
        sql: text,
        tokens,
        at: 2,
    };
    Some(parse_rest(&mut c))
}

fn parse_rest(c: &mut Cursor<'_>) -> Result<LoadData, SqlError> {
    let _ = c.eat_word("LOW_PRIORITY") || c.eat_word("CONCURRENT");
    let local = c.eat_word("LOCAL");
    c.expect_word("INFILE")?;
    let file = String::from_utf8_lossy(&c.text()?).into_owned();
    let duplicates = if c.eat_word("REPLACE") {
        Duplicates::Replace
    } else if c.eat_word("IGNORE") {
        Duplicates::Ignore
    } else {
        Duplicates::Error
    };
    c.expect_word("INTO")?;
    c.expect_word("TABLE")?;
    let first = c.name()?;
    let (database, table) = if c.punct('.') {
        (Some(first), c.name()?)
    } else {
        (None, first)
    };
    if c.peek_word("PARTITION") {
        return Err(SqlError::unsupported("LOAD DATA ... PARTITION"));
    }
    let mut charset = None;
    if c.eat_word("CHARACTER") {
        c.expect_word("SET")?;
        charset = Some(c.name()?.to_ascii_lowercase());
    } else if c.eat_word("CHARSET") {
        charset = Some(c.name()?.to_ascii_lowercase());
    }
    let mut format = Format::default();
    if c.eat_word("FIELDS") || c.eat_word("COLUMNS") {
        let mut any = false;
        loop {
            if c.eat_word("TERMINATED") {
                c.expect_word("BY")?;
                format.field_terminator = c.text()?;
            } else if c.eat_word("OPTIONALLY") {
                c.expect_word("ENCLOSED")?;
                c.expect_word("BY")?;
                format.enclosed_by = c.one_char()?;
                format.optionally = true;
            } else if c.eat_word("ENCLOSED") {
                c.expect_word("BY")?;
                format.enclosed_by = c.one_char()?;
            } else if c.eat_word("ESCAPED") {
                c.expect_word("BY")?;
                format.escaped_by = c.one_char()?;
            } else {
                break;
            }
            any = true;
        }
        if !any {
            return Err(c.error());
        }
    }
    if c.eat_word("LINES") {
        let mut any = false;
        loop {
            if c.eat_word("STARTING") {
                c.expect_word("BY")?;
                format.line_starting = c.text()?;
            } else if c.eat_word("TERMINATED") {
                c.expect_word("BY")?;
                format.line_terminator = c.text()?;
            } else {
                break;
            }
            any = true;
        }
        if !any {
            return Err(c.error());
        }
    }
    let mut ignore_lines = 0;
    if c.eat_word("IGNORE") {
        ignore_lines = match c.tokens.get(c.at) {
            Some((Token::Number(n), _)) => *n,
            _ => return Err(c.error()),
        };
        c.at += 1;
        if !c.eat_word("LINES") && !c.eat_word("ROWS") {
            return Err(c.error());
        }
    }
    let mut targets = None;
    if c.punct('(') {
        let mut list = Vec::new();
        if !c.punct(')') {
            loop {
                let name = c.name()?;
                list.push(match name.strip_prefix('@') {
                    Some(var) => Target::Variable(var.to_ascii_lowercase()),
                    None => Target::Column(name),
                });
                if c.punct(')') {
                    break;
                }
                if !c.punct(',') {
                    return Err(c.error());
                }
            }
        }
        targets = Some(list);
    }
    let mut set_text = None;
    if c.peek_word("SET") {
        let offset = c.tokens[c.at].1 + 3;
        set_text = Some(c.sql[offset..].trim().to_string());
        c.at = c.tokens.len();
    }
    if c.at < c.tokens.len() {
        return Err(c.error());
    }
    if format.field_terminator.is_empty() && format.enclosed_by.is_none() {
        // MySQL's fixed-row format (both empty) is not done.
        return Err(SqlError::unsupported(
            "LOAD DATA with empty FIELDS TERMINATED BY and ENCLOSED BY (fixed-width rows)",
        ));
    }
    if format.line_terminator.is_empty() {
        format.line_terminator = format.field_terminator.clone();
    }
    Ok(LoadData {
        local,
        file,
        duplicates,
        database,
        table,
        charset,
        format,
        ignore_lines,
        targets,
        set_text,
    })
}

/// One field of a row: its bytes, or NULL.
pub(crate) type Field = Option<Vec<u8>>;

/// Splits `data` into rows of fields by `format` (rules 1 to 4), calling `each` per row.
pub(crate) fn split_rows(
    data: &[u8],
    format: &Format,
    ignore_lines: u64,
    mut each: impl FnMut(Vec<Field>) -> Result<(), SqlError>,
) -> Result<(), SqlError> {
    let mut at = 0;
    let mut skipped = 0u64;
    while at < data.len() {
        if !format.line_starting.is_empty() {
            // Rule 4: skip to just after the prefix; no prefix in the rest, no more rows.
            match find(&data[at..], &format.line_starting) {
                Some(p) => at += p + format.line_starting.len(),
                None => return Ok(()),
            }
        }
        let (fields, next) = read_row(data, at, format);
        at = next;
        if skipped < ignore_lines {
            skipped += 1;
            continue;
        }
        each(fields)?;
    }
    Ok(())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// One row from `data[at..]`: its fields and where the next row starts.
fn read_row(data: &[u8], mut at: usize, format: &Format) -> (Vec<Field>, usize) {
    let mut fields = Vec::new();
    loop {
        let (field, next, end) = read_field(data, at, format);
        fields.push(field);
        at = next;
        if end {
            return (fields, at);
        }
    }
}

/// One field from `data[at..]`: the value, where the next field starts, and whether the row
/// ended (a line terminator or the end of the data).
fn read_field(data: &[u8], at: usize, format: &Format) -> (Field, usize, bool) {
    let terminated = |i: usize| -> Option<(usize, bool)> {
        if i >= data.len() {
            return Some((i, true));
        }
        if !format.line_terminator.is_empty() && data[i..].starts_with(&format.line_terminator) {
            return Some((i + format.line_terminator.len(), true));
        }
        if !format.field_terminator.is_empty() && data[i..].starts_with(&format.field_terminator) {
            return Some((i + format.field_terminator.len(), false));
        }
        None
    };
    let escape = format.escaped_by;
    let mut value = Vec::new();
    if let Some(q) = format.enclosed_by.filter(|&q| data.get(at) == Some(&q)) {
        // Rule 3.
        let mut i = at + 1;
        while i < data.len() {
            let c = data[i];
            if Some(c) == escape && i + 1 < data.len() {
                value.push(unescape(data[i + 1]));
                i += 2;
            } else if c == q && data.get(i + 1) == Some(&q) {
                value.push(q);
                i += 2;
            } else if c == q {
                if let Some((next, end)) = terminated(i + 1) {
                    return (Some(value), next, end);
                }
                value.push(c);
                i += 1;
            } else {
                value.push(c);
                i += 1;
            }
        }
        return (Some(value), data.len(), true);
    }
    let mut i = at;
    let mut escaped_n = false;
    loop {
        if let Some((next, end)) = terminated(i) {
            // Rule 2 (`\N`) and rule 3 (bare NULL with an enclosure).
            let null = (escaped_n && value == b"N")
                || (format.enclosed_by.is_some() && &data[at..i] == b"NULL");
            return ((!null).then_some(value), next, end);
        }
        let c = data[i];
        if Some(c) == escape && i + 1 < data.len() {
            if data[i + 1] == b'N' && i == at {
                escaped_n = true;
                value.push(b'N');
            } else {
                value.push(unescape(data[i + 1]));
            }
            i += 2;
        } else {
            value.push(c);
            i += 1;
        }
    }
}

fn unescape(c: u8) -> u8 {
    match c {
        b'0' => 0,
        b'b' => 8,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'Z' => 0x1A,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(data: &str, format: &Format) -> Vec<Vec<Option<String>>> {
        let mut out = Vec::new();
        split_rows(data.as_bytes(), format, 0, |fields| {
            out.push(
                fields
                    .into_iter()
                    .map(|f| f.map(|b| String::from_utf8(b).unwrap()))
                    .collect(),
            );
            Ok(())
        })
        .unwrap();
        out
    }

    #[allow(clippy::unnecessary_wraps)] // a field: Some(text)
    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn the_full_statement_parses() {
        let l = parse_load_data(
            "LOAD DATA LOCAL INFILE '/tmp/a b.csv' IGNORE INTO TABLE `d`.t CHARACTER SET utf8mb4 \
             FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '\\\\' \
             LINES STARTING BY 'x:' TERMINATED BY '\\r\\n' IGNORE 1 LINES (id, @k, c) \
             SET k = @k + 1, pad = 'p';",
        )
        .unwrap()
        .unwrap();
        assert!(l.local);
        assert_eq!(l.file, "/tmp/a b.csv");
        assert_eq!(l.duplicates, Duplicates::Ignore);
        assert_eq!((l.database.as_deref(), l.table.as_str()), (Some("d"), "t"));
        assert_eq!(l.charset.as_deref(), Some("utf8mb4"));
        assert_eq!(l.format.field_terminator, b",");
        assert_eq!(l.format.enclosed_by, Some(b'"'));
        assert!(l.format.optionally);
        assert_eq!(l.format.escaped_by, Some(b'\\'));
        assert_eq!(l.format.line_starting, b"x:");
        assert_eq!(l.format.line_terminator, b"\r\n");
        assert_eq!(l.ignore_lines, 1);
        assert_eq!(
            l.targets,
            Some(vec![
                Target::Column("id".into()),
                Target::Variable("k".into()),
                Target::Column("c".into())
            ])
        );
        assert_eq!(l.set_text.as_deref(), Some("k = @k + 1, pad = 'p'"));
        assert!(parse_load_data("SELECT 1").is_none());
        let err = parse_load_data("LOAD DATA INFILE 'f' INTO t")
            .unwrap()
            .unwrap_err();
        assert_eq!(err.code, 1064);
        let err = parse_load_data("LOAD DATA INFILE 'f' INTO TABLE t FIELDS ENCLOSED BY 'ab'")
            .unwrap()
            .unwrap_err();
        assert_eq!(err.code, 1083);
    }

    #[test]
    fn tab_separated_fields_follow_the_escape_rules() {
        let f = Format::default();
        assert_eq!(
            rows("1\ta\\tb\t\\N\n2\t\\\\N\tx\\\ny\n3\t\t\n", &f),
            vec![
                vec![s("1"), s("a\tb"), None],
                vec![s("2"), s("\\N"), s("x\ny")],
                vec![s("3"), s(""), s("")],
            ]
        );
        // No final line terminator: the last row still counts.
        assert_eq!(rows("7\t8", &f), vec![vec![s("7"), s("8")]]);
    }

    #[test]
    fn enclosed_fields_keep_terminators_and_double_quotes() {
        let f = Format {
            field_terminator: b",".to_vec(),
            enclosed_by: Some(b'"'),
            optionally: true,
            ..Format::default()
        };
        assert_eq!(
            rows(
                "1,\"a,b\",\"say \"\"hi\"\"\"\n2,NULL,\"NULL\"\n3,\"x\ny\",\\N\n",
                &f
            ),
            vec![
                vec![s("1"), s("a,b"), s("say \"hi\"")],
                vec![s("2"), None, s("NULL")],
                vec![s("3"), s("x\ny"), None],
            ]
        );
    }

    #[test]
    fn starting_by_and_ignore_lines_skip_text() {
        let f = Format {
            field_terminator: b",".to_vec(),
            line_starting: b"xxx".to_vec(),
            ..Format::default()
        };
        let mut out = Vec::new();
        split_rows(b"header\nxxx1,a\nnoise\nyyxxx2,b\nxxx3,c\n", &f, 1, |r| {
            out.push(r);
            Ok(())
        })
        .unwrap();
        assert_eq!(
            out,
            vec![
                vec![Some(b"2".to_vec()), Some(b"b".to_vec())],
                vec![Some(b"3".to_vec()), Some(b"c".to_vec())]
            ]
        );
    }
}
