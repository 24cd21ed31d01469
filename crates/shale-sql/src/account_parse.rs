//! The parser of the account statements (account.rs runs them): a small lexer for MySQL's
//! quoting (`'..'`, `".."`, `` `..` ``, doubled quotes and backslash escapes) and one
//! recursive-descent parser per statement form. A text that does not start like an account
//! statement is left to sqlparser; one that does but does not parse is 1064.

use crate::account_lock::LockOptions;
use crate::error::SqlError;
use crate::grants::{self, Account, Level, Privs, ALL_DB, ALL_GLOBAL, ALL_TABLE, GRANT_OPTION};
use crate::password::{CACHING_SHA2, NATIVE_PASSWORD};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// A bare word (upper-cased for keywords by the parser when compared).
    Word(String),
    /// `'..'`, `".."` or `` `..` ``.
    Quoted(String),
    Punct(char),
}

fn lex(sql: &str) -> Option<Vec<Token>> {
    let mut out = Vec::new();
    let mut chars = sql.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '\'' || c == '"' || c == '`' {
            chars.next();
            let mut s = String::new();
            loop {
                match chars.next()? {
                    '\\' if c != '`' => s.push(match chars.next()? {
                        'n' => '\n',
                        't' => '\t',
                        '0' => '\0',
                        other => other,
                    }),
                    q if q == c => {
                        if chars.peek() == Some(&c) {
                            chars.next();
                            s.push(c);
                        } else {
                            break;
                        }
                    }
                    other => s.push(other),
                }
            }
            out.push(Token::Quoted(s));
        } else if c.is_alphanumeric() || c == '_' || c == '$' {
            let mut s = String::new();
            while let Some(&d) = chars.peek() {
                if d.is_alphanumeric() || d == '_' || d == '$' {
                    s.push(d);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(Token::Word(s));
        } else if "@.,*()=;".contains(c) {
            chars.next();
            out.push(Token::Punct(c));
        } else {
            return None;
        }
    }
    while out.last() == Some(&Token::Punct(';')) {
        out.pop();
    }
    Some(out)
}

/// How an account authenticates (`IDENTIFIED ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Auth {
    pub plugin: Option<String>,
    /// The clear password (`BY`), hashed before it is stored.
    pub password: Option<String>,
    /// An already hashed string (`AS`).
    pub hash: Option<Vec<u8>>,
}

/// The object of GRANT and REVOKE: `*.*`, `db.*` or `db.table`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Global,
    Db(String),
    Table(String, String),
}

/// An account name as written; `None` host is `%`; `current` is CURRENT_USER().
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Name {
    Account(Account),
    Current,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AccountStatement {
    CreateUser {
        if_not_exists: bool,
        users: Vec<(Name, Option<Auth>)>,
        options: LockOptions,
    },
    AlterUser {
        if_exists: bool,
        users: Vec<(Name, Option<Auth>)>,
        options: LockOptions,
    },
    DropUser {
        if_exists: bool,
        users: Vec<Name>,
    },
    RenameUser(Vec<(Name, Name)>),
    SetPassword {
        user: Option<Name>,
        password: String,
    },
    Grant {
        privs: Privs,
        target: Target,
        users: Vec<Name>,
    },
    Revoke {
        privs: Privs,
        target: Target,
        users: Vec<Name>,
    },
    ShowGrants(Option<Name>),
    ShowCreateUser(Name),
    FlushPrivileges,
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

fn syntax(near: &str) -> SqlError {
    SqlError::syntax(near, 1)
}

impl Parser {
    fn peek_word(&self, word: &str) -> bool {
        matches!(self.tokens.get(self.pos), Some(Token::Word(w)) if w.eq_ignore_ascii_case(word))
    }

    fn eat_word(&mut self, word: &str) -> bool {
        let found = self.peek_word(word);
        if found {
            self.pos += 1;
        }
        found
    }

    fn eat_words(&mut self, words: &[&str]) -> bool {
        let start = self.pos;
        for w in words {
            if !self.eat_word(w) {
                self.pos = start;
                return false;
            }
        }
        true
    }

    fn eat_punct(&mut self, c: char) -> bool {
        let found = self.tokens.get(self.pos) == Some(&Token::Punct(c));
        if found {
            self.pos += 1;
        }
        found
    }

    fn near(&self) -> String {
        match self.tokens.get(self.pos) {
            Some(Token::Word(w) | Token::Quoted(w)) => w.clone(),
            Some(Token::Punct(c)) => c.to_string(),
            None => String::new(),
        }
    }

    fn expect_word(&mut self, word: &str) -> Result<(), SqlError> {
        if self.eat_word(word) {
            Ok(())
        } else {
            Err(syntax(&self.near()))
        }
    }

    fn name_part(&mut self) -> Result<String, SqlError> {
        match self.tokens.get(self.pos) {
            Some(Token::Word(w) | Token::Quoted(w)) => {
                let w = w.clone();
                self.pos += 1;
                Ok(w)
            }
            _ => Err(syntax(&self.near())),
        }
    }

    fn string(&mut self) -> Result<String, SqlError> {
        match self.tokens.get(self.pos) {
            Some(Token::Quoted(s)) => {
                let s = s.clone();
                self.pos += 1;
                Ok(s)
            }
            _ => Err(syntax(&self.near())),
        }
    }

    fn account(&mut self) -> Result<Name, SqlError> {
        if self.eat_word("CURRENT_USER") {
            if self.eat_punct('(') && !self.eat_punct(')') {
                return Err(syntax(&self.near()));
            }
            return Ok(Name::Current);
        }
        let user = self.name_part()?;
        let host = if self.eat_punct('@') {
            self.name_part()?
        } else {
            "%".to_owned()
        };
        Ok(Name::Account(Account { user, host }))
    }

    fn accounts(&mut self) -> Result<Vec<Name>, SqlError> {
        let mut out = vec![self.account()?];
        while self.eat_punct(',') {
            out.push(self.account()?);
        }
        Ok(out)
    }

    fn auth(&mut self) -> Result<Option<Auth>, SqlError> {
        if !self.eat_word("IDENTIFIED") {
            return Ok(None);
        }
        let mut auth = Auth {
            plugin: None,
            password: None,
            hash: None,
        };
        if self.eat_word("WITH") {
            let plugin = self.name_part()?.to_ascii_lowercase();
            if plugin != NATIVE_PASSWORD && plugin != CACHING_SHA2 {
                return Err(SqlError::new(
                    1524,
                    "HY000",
                    format!("Plugin '{plugin}' is not loaded"),
                ));
            }
            auth.plugin = Some(plugin);
            if self.eat_word("BY") {
                auth.password = Some(self.string()?);
            } else if self.eat_word("AS") {
                auth.hash = Some(self.string()?.into_bytes());
            }
        } else {
            self.expect_word("BY")?;
            auth.password = Some(self.string()?);
        }
        Ok(Some(auth))
    }

    fn users_with_auth(&mut self) -> Result<Vec<(Name, Option<Auth>)>, SqlError> {
        let mut out = Vec::new();
        loop {
            let name = self.account()?;
            let auth = self.auth()?;
            out.push((name, auth));
            if !self.eat_punct(',') {
                return Ok(out);
            }
        }
    }

    /// A privilege list for `level` resolution later: (bits, "ALL" was named).
    fn privileges(&mut self) -> Result<(u32, bool), SqlError> {
        let mut bits = 0;
        let mut all = false;
        loop {
            if self.eat_word("ALL") {
                self.eat_word("PRIVILEGES");
                all = true;
            } else if self.eat_words(&["GRANT", "OPTION"]) {
                bits |= GRANT_OPTION;
            } else if !self.eat_word("USAGE") {
                // (USAGE is no privilege: GRANT USAGE only checks that the account exists.)
                // Names of one to three words (CREATE USER, CREATE TEMPORARY TABLES), the
                // longest that names a privilege.
                let mut name = self.name_part()?.to_ascii_uppercase();
                let mut found = grants::PRIVILEGES.iter().find(|p| p.name == name);
                let mut words = 0;
                for more in 1..=2 {
                    let Some(Token::Word(w)) = self.tokens.get(self.pos + more - 1) else {
                        break;
                    };
                    name = format!("{name} {}", w.to_ascii_uppercase());
                    if let Some(p) = grants::PRIVILEGES.iter().find(|p| p.name == name) {
                        found = Some(p);
                        words = more;
                    }
                }
                let Some(p) = found else {
                    return Err(syntax(name.split(' ').next().unwrap_or_default()));
                };
                self.pos += words;
                bits |= p.bit;
            }
            if !self.eat_punct(',') {
                return Ok((bits, all));
            }
        }
    }

    fn target(&mut self, current: Option<&str>) -> Result<Target, SqlError> {
        let no_db = || current.map(str::to_owned).ok_or_else(SqlError::no_database);
        if self.eat_punct('*') {
            if self.eat_punct('.') {
                if !self.eat_punct('*') {
                    return Err(syntax(&self.near()));
                }
                return Ok(Target::Global);
            }
            return Ok(Target::Db(no_db()?));
        }
        let first = self.name_part()?;
        if self.eat_punct('.') {
            if self.eat_punct('*') {
                return Ok(Target::Db(first));
            }
            let table = self.name_part()?;
            return Ok(Target::Table(first, table));
        }
        Ok(Target::Table(no_db()?, first))
    }

    /// The locking clauses after CREATE USER's or ALTER USER's accounts (account_lock.rs).
    fn lock_options(&mut self) -> Result<LockOptions, SqlError> {
        let mut options = LockOptions::default();
        while let Some(Token::Word(w)) = self.tokens.get(self.pos) {
            let word = w.to_ascii_uppercase();
            let tokens = &self.tokens;
            let mut pos = self.pos + 1;
            let found = options.parse_clause(&word, || {
                let next = match tokens.get(pos) {
                    Some(Token::Word(w)) => Some(w.clone()),
                    _ => None,
                };
                pos += 1;
                next
            })?;
            if found.is_none() {
                break;
            }
            self.pos = pos;
        }
        Ok(options)
    }

    fn done(&self) -> Result<(), SqlError> {
        if self.pos == self.tokens.len() {
            Ok(())
        } else {
            Err(syntax(&self.near()))
        }
    }
}

/// The privileges `bits` (and ALL) mean at `target`; 1221 or 1144 when one cannot be given
/// there.
fn privs_at(bits: u32, all: bool, target: &Target) -> Result<Privs, SqlError> {
    let global = matches!(target, Target::Global);
    let all_bits = match target {
        Target::Global => ALL_GLOBAL,
        Target::Db(_) => ALL_DB,
        Target::Table(..) => ALL_TABLE,
    };
    let bits = bits | if all { all_bits } else { 0 };
    if !global {
        let misplaced = grants::PRIVILEGES.iter().any(|p| {
            bits & p.bit != 0
                && match target {
                    Target::Table(..) => p.level != Level::Any,
                    _ => p.level == Level::Global,
                }
        });
        if misplaced {
            return Err(match target {
                Target::Db(_) => SqlError::new(
                    1221,
                    "HY000",
                    "Incorrect usage of DB GRANT and GLOBAL PRIVILEGES",
                ),
                _ => SqlError::new(
                    1144,
                    "42000",
                    "Illegal GRANT/REVOKE command; please consult the manual to see which \
                     privileges can be used",
                ),
            });
        }
    }
    Ok(Privs(bits))
}

/// The statement `sql` holds, if it is one account statement; `Some(Err)` when it starts
/// like one but does not parse.
pub(crate) fn parse(sql: &str) -> Option<Result<AccountStatement, SqlError>> {
    const FIRST_WORDS: [&str; 9] = [
        "CREATE", "ALTER", "DROP", "RENAME", "SET", "GRANT", "REVOKE", "SHOW", "FLUSH",
    ];
    if !crate::parse::starts_with_any(sql, &FIRST_WORDS) {
        return None;
    }
    let tokens = lex(sql)?;
    let mut p = Parser { tokens, pos: 0 };
    let kind = if p.eat_words(&["CREATE", "USER"]) {
        "create"
    } else if p.eat_words(&["ALTER", "USER"]) {
        "alter"
    } else if p.eat_words(&["DROP", "USER"]) {
        "drop"
    } else if p.eat_words(&["RENAME", "USER"]) {
        "rename"
    } else if p.eat_words(&["SET", "PASSWORD"]) {
        "password"
    } else if p.eat_word("GRANT") {
        "grant"
    } else if p.eat_word("REVOKE") {
        "revoke"
    } else if p.eat_words(&["SHOW", "GRANTS"]) {
        "show"
    } else if p.eat_words(&["SHOW", "CREATE", "USER"]) {
        "show create"
    } else if p.eat_words(&["FLUSH", "PRIVILEGES"]) {
        "flush"
    } else {
        return None;
    };
    Some(parse_rest(&mut p, kind))
}

fn parse_rest(p: &mut Parser, kind: &str) -> Result<AccountStatement, SqlError> {
    let statement = match kind {
        "create" => {
            let if_not_exists = p.eat_words(&["IF", "NOT", "EXISTS"]);
            AccountStatement::CreateUser {
                if_not_exists,
                users: p.users_with_auth()?,
                options: p.lock_options()?,
            }
        }
        "alter" => {
            let if_exists = p.eat_words(&["IF", "EXISTS"]);
            if p.eat_word("USER") {
                // ALTER USER USER() IDENTIFIED BY ...: the current account.
                if !(p.eat_punct('(') && p.eat_punct(')')) {
                    return Err(syntax(&p.near()));
                }
                let auth = p.auth()?;
                AccountStatement::AlterUser {
                    if_exists,
                    users: vec![(Name::Current, auth)],
                    options: LockOptions::default(),
                }
            } else {
                AccountStatement::AlterUser {
                    if_exists,
                    users: p.users_with_auth()?,
                    options: p.lock_options()?,
                }
            }
        }
        "drop" => {
            let if_exists = p.eat_words(&["IF", "EXISTS"]);
            AccountStatement::DropUser {
                if_exists,
                users: p.accounts()?,
            }
        }
        "rename" => {
            let mut pairs = Vec::new();
            loop {
                let from = p.account()?;
                p.expect_word("TO")?;
                pairs.push((from, p.account()?));
                if !p.eat_punct(',') {
                    break;
                }
            }
            AccountStatement::RenameUser(pairs)
        }
        "password" => {
            let user = if p.eat_word("FOR") {
                Some(p.account()?)
            } else {
                None
            };
            if !p.eat_punct('=') {
                return Err(syntax(&p.near()));
            }
            AccountStatement::SetPassword {
                user,
                password: p.string()?,
            }
        }
        "grant" | "revoke" => {
            let (bits, all) = p.privileges()?;
            p.expect_word("ON")?;
            p.eat_word("TABLE");
            // The target's database is resolved when the statement runs.
            let target = p.target(Some(""))?;
            let grant = kind == "grant";
            p.expect_word(if grant { "TO" } else { "FROM" })?;
            let users = p.accounts()?;
            let bits = if grant && p.eat_words(&["WITH", "GRANT", "OPTION"]) {
                bits | GRANT_OPTION
            } else {
                bits
            };
            return finish_grant(p, bits, all, target, users, grant);
        }
        "show" => {
            let user = if p.eat_word("FOR") {
                Some(p.account()?)
            } else {
                None
            };
            AccountStatement::ShowGrants(user)
        }
        "show create" => AccountStatement::ShowCreateUser(p.account()?),
        _ => AccountStatement::FlushPrivileges,
    };
    p.done()?;
    Ok(statement)
}

/// GRANT and REVOKE after their parts are parsed. A target written without a database
/// (`*` or `t`) keeps an empty database name until `run` fills in the current one.
fn finish_grant(
    p: &Parser,
    bits: u32,
    all: bool,
    target: Target,
    users: Vec<Name>,
    grant: bool,
) -> Result<AccountStatement, SqlError> {
    p.done()?;
    let privs = privs_at(bits, all, &target)?;
    Ok(if grant {
        AccountStatement::Grant {
            privs,
            target,
            users,
        }
    } else {
        AccountStatement::Revoke {
            privs,
            target,
            users,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::CREATE_USER;

    #[test]
    fn parses_each_form() {
        let acct = |u: &str, h: &str| {
            Name::Account(Account {
                user: u.into(),
                host: h.into(),
            })
        };
        let p = |sql: &str| parse(sql).unwrap().unwrap();
        assert_eq!(
            p("CREATE USER IF NOT EXISTS 'app'@'%' IDENTIFIED WITH mysql_native_password BY 'pw';"),
            AccountStatement::CreateUser {
                if_not_exists: true,
                users: vec![(
                    acct("app", "%"),
                    Some(Auth {
                        plugin: Some(NATIVE_PASSWORD.into()),
                        password: Some("pw".into()),
                        hash: None
                    })
                )],
                options: LockOptions::default(),
            }
        );
        assert_eq!(
            p("ALTER USER u FAILED_LOGIN_ATTEMPTS 3 PASSWORD_LOCK_TIME UNBOUNDED ACCOUNT LOCK"),
            AccountStatement::AlterUser {
                if_exists: false,
                users: vec![(acct("u", "%"), None)],
                options: LockOptions {
                    lock: Some(true),
                    failed_login_attempts: Some(3),
                    password_lock_time: Some(crate::account_lock::LockTime::Unbounded),
                },
            }
        );
        assert_eq!(
            p("SHOW CREATE USER 'u'@'h'"),
            AccountStatement::ShowCreateUser(acct("u", "h"))
        );
        assert_eq!(
            parse("CREATE USER u ACCOUNT LOCK extra")
                .unwrap()
                .unwrap_err()
                .code,
            1064
        );
        assert_eq!(
            p("drop user `a`@localhost, b"),
            AccountStatement::DropUser {
                if_exists: false,
                users: vec![acct("a", "localhost"), acct("b", "%")]
            }
        );
        assert_eq!(
            p("GRANT SELECT, INSERT ON d.* TO 'u'@'h' WITH GRANT OPTION"),
            AccountStatement::Grant {
                privs: Privs(grants::SELECT | grants::INSERT | GRANT_OPTION),
                target: Target::Db("d".into()),
                users: vec![acct("u", "h")]
            }
        );
        assert_eq!(
            p("REVOKE ALL PRIVILEGES ON *.* FROM u"),
            AccountStatement::Revoke {
                privs: Privs(ALL_GLOBAL),
                target: Target::Global,
                users: vec![acct("u", "%")]
            }
        );
        assert_eq!(
            p("GRANT CREATE USER, SHOW DATABASES ON *.* TO u"),
            AccountStatement::Grant {
                privs: Privs(CREATE_USER | grants::SHOW_DATABASES),
                target: Target::Global,
                users: vec![acct("u", "%")]
            }
        );
        assert_eq!(
            p("SET PASSWORD FOR 'u'@'%' = 'x''y'"),
            AccountStatement::SetPassword {
                user: Some(acct("u", "%")),
                password: "x'y".into()
            }
        );
        assert_eq!(
            p("SHOW GRANTS FOR CURRENT_USER()"),
            AccountStatement::ShowGrants(Some(Name::Current))
        );
        assert_eq!(parse("SELECT 1").map(|r| r.is_ok()), None);
        assert_eq!(
            parse("GRANT SUPER ON d.* TO u").unwrap().unwrap_err().code,
            1221
        );
        assert_eq!(
            parse("GRANT SUPER ON d.t TO u").unwrap().unwrap_err().code,
            1144
        );
        assert_eq!(
            parse("GRANT FLY ON *.* TO u").unwrap().unwrap_err().code,
            1064
        );
        assert_eq!(
            parse("CREATE USER u IDENTIFIED WITH nope")
                .unwrap()
                .unwrap_err()
                .code,
            1524
        );
        assert_eq!(parse("CREATE USER 'u").map(|r| r.is_ok()), None);
        assert_eq!(parse("DROP USER u extra").unwrap().unwrap_err().code, 1064);
    }
}
