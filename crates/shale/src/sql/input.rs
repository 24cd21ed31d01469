//! Splits what the user types into statements, as the mysql client does: a statement ends at
//! `;` (or `\G`, for vertical output) outside quotes and comments, so one line may hold several
//! statements and one statement may span lines.

/// How a complete statement asked to be shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terminator {
    /// `;`: the session's format.
    Semicolon,
    /// `\G`: one `column: value` line per field.
    Vertical,
}

/// Lexer state carried across lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Code,
    /// Inside a quoted string or identifier opened by this character.
    Quoted(char),
    /// Inside `/* ... */`.
    BlockComment,
}

/// Accumulates input and hands out complete statements.
#[derive(Debug)]
pub struct StatementSplitter {
    buffer: String,
    state: State,
}

impl Default for StatementSplitter {
    fn default() -> Self {
        StatementSplitter {
            buffer: String::new(),
            state: State::Code,
        }
    }
}

impl StatementSplitter {
    /// Whether part of a statement is waiting for more lines (the prompt shows `->`).
    pub fn is_pending(&self) -> bool {
        !self.buffer.trim().is_empty()
    }

    /// The unterminated rest, for end of input (the mysql client runs it as is).
    pub fn take_rest(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.buffer);
        self.state = State::Code;
        let trimmed = rest.trim();
        (!trimmed.is_empty()).then(|| trimmed.to_owned())
    }

    /// Adds one line of input; returns the statements it completed, in order.
    pub fn push_line(&mut self, line: &str) -> Vec<(String, Terminator)> {
        let mut done = Vec::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match self.state {
                State::Quoted(quote) => {
                    self.buffer.push(c);
                    if c == '\\' && quote != '`' {
                        if let Some(escaped) = chars.next() {
                            self.buffer.push(escaped);
                        }
                    } else if c == quote {
                        self.state = State::Code;
                    }
                }
                State::BlockComment => {
                    self.buffer.push(c);
                    if c == '*' && chars.peek() == Some(&'/') {
                        self.buffer.push(chars.next().unwrap_or('/'));
                        self.state = State::Code;
                    }
                }
                State::Code => match c {
                    '\'' | '"' | '`' => {
                        self.buffer.push(c);
                        self.state = State::Quoted(c);
                    }
                    '/' if chars.peek() == Some(&'*') => {
                        self.buffer.push(c);
                        self.buffer.push(chars.next().unwrap_or('*'));
                        self.state = State::BlockComment;
                    }
                    '#' => break,
                    '-' if chars.peek() == Some(&'-') => {
                        // `-- ` starts a comment only when followed by a space or the line end.
                        let mut ahead = chars.clone();
                        ahead.next();
                        if ahead.peek().is_none_or(|c| c.is_whitespace()) {
                            break;
                        }
                        self.buffer.push(c);
                    }
                    ';' => done.extend(self.finish(Terminator::Semicolon)),
                    '\\' if matches!(chars.peek(), Some('G' | 'g')) => {
                        let vertical = chars.next() == Some('G');
                        done.extend(self.finish(if vertical {
                            Terminator::Vertical
                        } else {
                            Terminator::Semicolon
                        }));
                    }
                    _ => self.buffer.push(c),
                },
            }
        }
        if !self.buffer.is_empty() {
            self.buffer.push('\n');
        }
        done
    }

    fn finish(&mut self, terminator: Terminator) -> Option<(String, Terminator)> {
        let statement = std::mem::take(&mut self.buffer);
        let trimmed = statement.trim();
        (!trimmed.is_empty()).then(|| (trimmed.to_owned(), terminator))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(lines: &[&str]) -> Vec<String> {
        let mut splitter = StatementSplitter::default();
        let mut out: Vec<String> = lines
            .iter()
            .flat_map(|line| splitter.push_line(line))
            .map(|(s, _)| s)
            .collect();
        out.extend(splitter.take_rest());
        out
    }

    #[test]
    fn statements_end_at_semicolons_outside_quotes_and_comments() {
        assert_eq!(split(&["select 1; select 2;"]), ["select 1", "select 2"]);
        assert_eq!(
            split(&["select 'a;b', \"c;\", `d;`;"]),
            ["select 'a;b', \"c;\", `d;`"]
        );
        assert_eq!(split(&["select 'it\\'s;';"]), ["select 'it\\'s;'"]);
        assert_eq!(split(&["select /* ; */ 1;"]), ["select /* ; */ 1"]);
        assert_eq!(split(&["select 1 -- ; not the end", ";"]), ["select 1"]);
        assert_eq!(split(&["select 1 # ; comment", "+ 1;"]), ["select 1 \n+ 1"]);
        assert_eq!(split(&["select 5--1;"]), ["select 5--1"]);
    }

    #[test]
    fn statements_span_lines_and_the_rest_runs_at_the_end() {
        assert_eq!(
            split(&["create table t (", "  id int", ");", "select 1"]),
            ["create table t (\n  id int\n)", "select 1"]
        );
        assert_eq!(
            split(&["select 'multi", "line';"]),
            ["select 'multi\nline'"]
        );
    }

    #[test]
    fn backslash_g_asks_for_vertical_output() {
        let mut splitter = StatementSplitter::default();
        assert_eq!(
            splitter.push_line("select 1\\G select 2;"),
            [
                ("select 1".to_owned(), Terminator::Vertical),
                ("select 2".to_owned(), Terminator::Semicolon)
            ]
        );
        assert!(!splitter.is_pending());
    }
}
