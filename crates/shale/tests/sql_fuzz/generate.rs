//! The statement generator of the live SQL fuzz test: random statements over a fixed schema
//! ([`SCHEMA`]), biased toward the edges: deep nesting of expressions and subqueries, huge
//! literals, many columns, many joins, every column type and function at its edge values,
//! and random text. Most statements are valid SQL that does something; many fail with an
//! error, which is fine: only a crash, a hang or unbounded memory is a finding.
//!
//! Deterministic per seed (one `SmallRng`), so a finding is reproduced by its seed and
//! statement number.

use rand::rngs::SmallRng;
use rand::seq::SliceRandom as _;
use rand::{Rng as _, SeedableRng as _};

/// The tables the statements read and write (created by the test, refilled by [`refill`]).
pub const SCHEMA: &[&str] = &[
    "CREATE TABLE t0 (id INT PRIMARY KEY, a INT, b BIGINT, u BIGINT UNSIGNED, ti TINYINT, \
     f FLOAT, d DOUBLE, dc DECIMAL(20,5), big DECIMAL(65,30), s VARCHAR(64), c CHAR(10), \
     tx TEXT, bn VARBINARY(32), bl BLOB, dt DATE, dtm DATETIME(6), y YEAR, KEY(a), KEY(s), \
     KEY(dt, a))",
    "CREATE TABLE t1 LIKE t0",
    "CREATE TABLE t2 (id BIGINT PRIMARY KEY AUTO_INCREMENT, k INT, v VARCHAR(255), \
     UNIQUE KEY(v), KEY(k))",
];

/// Columns of t0 and t1 (and of t2, which shares `id`).
const COLUMNS: &[&str] = &[
    "id", "a", "b", "u", "ti", "f", "d", "dc", "big", "s", "c", "tx", "bn", "bl", "dt", "dtm", "y",
];
const T2_COLUMNS: &[&str] = &["id", "k", "v"];

/// Functions with the argument counts they take (one of them is picked, or sometimes a
/// wrong count); names Shale lacks are kept on purpose (they must fail cleanly).
const FUNCTIONS: &[(&str, &[usize])] = &[
    ("ABS", &[1]),
    ("CEIL", &[1]),
    ("FLOOR", &[1]),
    ("ROUND", &[1, 2]),
    ("TRUNCATE", &[2]),
    ("MOD", &[2]),
    ("POW", &[2]),
    ("SQRT", &[1]),
    ("EXP", &[1]),
    ("LN", &[1]),
    ("LOG", &[1, 2]),
    ("LOG2", &[1]),
    ("LOG10", &[1]),
    ("SIGN", &[1]),
    ("RAND", &[0, 1]),
    ("CONCAT", &[1, 2, 3, 5]),
    ("CONCAT_WS", &[2, 3, 4]),
    ("LENGTH", &[1]),
    ("CHAR_LENGTH", &[1]),
    ("UPPER", &[1]),
    ("LOWER", &[1]),
    ("SUBSTRING", &[2, 3]),
    ("LEFT", &[2]),
    ("RIGHT", &[2]),
    ("LPAD", &[3]),
    ("RPAD", &[3]),
    ("REPEAT", &[2]),
    ("SPACE", &[1]),
    ("REVERSE", &[1]),
    ("REPLACE", &[3]),
    ("LOCATE", &[2, 3]),
    ("INSTR", &[2]),
    ("HEX", &[1]),
    ("UNHEX", &[1]),
    ("ASCII", &[1]),
    ("STRCMP", &[2]),
    ("SUBSTRING_INDEX", &[3]),
    ("FIELD", &[2, 4]),
    ("ELT", &[2, 4]),
    ("TRIM", &[1]),
    ("LTRIM", &[1]),
    ("RTRIM", &[1]),
    ("REGEXP_LIKE", &[2, 3]),
    ("REGEXP_REPLACE", &[3, 4, 5]),
    ("REGEXP_SUBSTR", &[2, 3, 4]),
    ("REGEXP_INSTR", &[2, 3, 5]),
    ("IFNULL", &[2]),
    ("NULLIF", &[2]),
    ("COALESCE", &[1, 3]),
    ("IF", &[3]),
    ("GREATEST", &[2, 3]),
    ("LEAST", &[2, 3]),
    ("NOW", &[0, 1]),
    ("CURDATE", &[0]),
    ("DATE_ADD", &[2]),
    ("DATEDIFF", &[2]),
    ("DATE_FORMAT", &[2]),
    ("STR_TO_DATE", &[2]),
    ("UNIX_TIMESTAMP", &[0, 1]),
    ("FROM_UNIXTIME", &[1, 2]),
    ("YEAR", &[1]),
    ("MONTH", &[1]),
    ("DAY", &[1]),
    ("WEEK", &[1, 2]),
    ("YEARWEEK", &[1, 2]),
    ("LAST_DAY", &[1]),
    ("DAYNAME", &[1]),
    ("TO_DAYS", &[1]),
    ("SEC_TO_TIME", &[1]),
    ("TIME_TO_SEC", &[1]),
    ("TIMEDIFF", &[2]),
    ("TIMESTAMPDIFF", &[]),
    ("MAKEDATE", &[2]),
    ("CONNECTION_ID", &[0]),
    ("LAST_INSERT_ID", &[0, 1]),
    ("ROW_COUNT", &[0]),
    ("FOUND_ROWS", &[0]),
    ("VERSION", &[0]),
    ("DATABASE", &[0]),
    ("JSON_EXTRACT", &[2]),
    ("JSON_OBJECT", &[2]),
    ("MD5", &[1]),
    ("SLEEP", &[1]),
    ("BENCHMARK", &[2]),
    ("NO_SUCH_FUNCTION", &[1]),
];

const AGGREGATES: &[&str] = &["COUNT", "SUM", "AVG", "MIN", "MAX", "GROUP_CONCAT"];
const WINDOWS: &[&str] = &[
    "ROW_NUMBER()",
    "RANK()",
    "DENSE_RANK()",
    "PERCENT_RANK()",
    "CUME_DIST()",
    "NTILE(3)",
    "LAG(a)",
    "LEAD(s, 2)",
    "FIRST_VALUE(d)",
    "LAST_VALUE(dt)",
    "NTH_VALUE(b, 2)",
    "SUM(a)",
    "COUNT(*)",
];
const BINARY_OPS: &[&str] = &[
    "+", "-", "*", "/", "DIV", "%", "=", "<>", "<", "<=", ">", ">=", "<=>", "AND", "OR", "XOR",
    "&", "|", "^", "<<", ">>", "LIKE", "REGEXP", "||", "&&",
];
const CAST_TYPES: &[&str] = &[
    "SIGNED",
    "UNSIGNED",
    "CHAR",
    "CHAR(3)",
    "BINARY",
    "DECIMAL(65,30)",
    "DECIMAL(5,2)",
    "DATE",
    "DATETIME(6)",
    "TIME",
    "DOUBLE",
    "JSON",
    "YEAR",
];
const UNITS: &[&str] = &[
    "MICROSECOND",
    "SECOND",
    "MINUTE",
    "HOUR",
    "DAY",
    "WEEK",
    "MONTH",
    "QUARTER",
    "YEAR",
    "DAY_SECOND",
    "YEAR_MONTH",
    "HOUR_MICROSECOND",
];
const EDGE_NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "127",
    "-128",
    "255",
    "32767",
    "65535",
    "2147483647",
    "-2147483648",
    "4294967295",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "99999999999999999999999999999999999999999999999999999999999999999",
    "0.000000000000000000000000000001",
    "1e308",
    "-1e308",
    "1.7976931348623157e308",
    "2.2250738585072014e-308",
    "5e-324",
    "1e-400",
    "0x7FFFFFFFFFFFFFFF",
    "0xFFFFFFFFFFFFFFFFFF",
    "b'1011'",
    "X'00FF'",
    ".5",
    "1.",
    "1e",
];
const EDGE_TEXT: &[&str] = &[
    "''",
    "' '",
    "'a'",
    "'A'",
    "'%'",
    "'_'",
    "'\\\\'",
    "'\\0'",
    "'\\''",
    "'NULL'",
    "'2024-02-29'",
    "'2023-02-29'",
    "'0000-00-00'",
    "'9999-12-31 23:59:59.999999'",
    "'1000-01-01'",
    "'10000-01-01'",
    "'2024-01-01 24:00:00'",
    "'838:59:59'",
    "'-1'",
    "'1e309'",
    "'  12abc'",
    "'ß'",
    "'😀'",
    "'İı'",
    "'(a|b)*c'",
    "'(((((((((('",
    "'[[:alpha:]]+'",
    "'\\\\1'",
    "'%Y-%m-%d %H:%i:%s.%f'",
    "'%'",
    "_utf8mb4'x'",
    "_binary'\\xFF'",
    "N'n'",
];

/// A statement generator; see the module doc.
pub struct Generator {
    rng: SmallRng,
    /// Nesting budget left for the statement being built (subqueries and expressions).
    budget: u32,
}

impl Generator {
    pub fn new(seed: u64) -> Generator {
        Generator {
            rng: SmallRng::seed_from_u64(seed),
            budget: 0,
        }
    }

    fn pick<'a>(&mut self, items: &'a [&'a str]) -> &'a str {
        items.choose(&mut self.rng).copied().unwrap_or("1")
    }

    fn chance(&mut self, percent: u32) -> bool {
        self.rng.gen_range(0..100) < percent
    }

    /// The next statement.
    pub fn statement(&mut self) -> String {
        self.budget = 40;
        match self.rng.gen_range(0..100) {
            0..=39 => self.select(),
            40..=47 => self.insert(),
            48..=53 => self.update(),
            54..=56 => self.delete(),
            57..=64 => self.edge_case(),
            65..=68 => self.ddl(),
            69..=72 => self.session_statement(),
            73..=76 => format!("SELECT {}", self.expr(6)),
            77..=80 => self.window_query(),
            81..=83 => self.recursive_cte(),
            84..=86 => self.random_text(),
            87..=89 => self.prepared(),
            90..=93 => format!("EXPLAIN {}", self.select()),
            _ => self.union(),
        }
    }

    fn column(&mut self, qualifier: Option<&str>) -> String {
        let name = self.pick(COLUMNS);
        match qualifier {
            Some(q) => format!("{q}.{name}"),
            None => name.to_owned(),
        }
    }

    fn literal(&mut self) -> String {
        match self.rng.gen_range(0..10) {
            0..=2 => self.pick(EDGE_NUMBERS).to_owned(),
            3..=4 => self.pick(EDGE_TEXT).to_owned(),
            5 => "NULL".into(),
            6 => format!("{}", self.rng.gen::<i32>()),
            7 => format!("{:.3}", self.rng.gen::<f64>() * 1e6),
            8 => format!("'{}'", self.rng.gen_range(-5i64..100_000)),
            _ => {
                let pick = self.pick(&["TRUE", "FALSE", "DATE '2024-01-02'", "@v", "@@sql_mode"]);
                pick.to_owned()
            }
        }
    }

    /// An expression of at most `depth` levels over the columns in scope.
    fn expr(&mut self, depth: u32) -> String {
        if depth == 0 || self.budget == 0 {
            return if self.chance(50) {
                self.literal()
            } else {
                self.column(None)
            };
        }
        self.budget -= 1;
        let d = depth - 1;
        match self.rng.gen_range(0..22) {
            0..=2 => self.literal(),
            3..=5 => self.column(None),
            6..=8 => {
                let op = self.pick(BINARY_OPS);
                format!("({} {op} {})", self.expr(d), self.expr(d))
            }
            9..=11 => self.call(d),
            12 => format!("(- {})", self.expr(d)),
            13 => format!("(NOT {})", self.expr(d)),
            14 => format!("CAST({} AS {})", self.expr(d), self.pick(CAST_TYPES)),
            15 => format!(
                "CASE {} WHEN {} THEN {} ELSE {} END",
                self.expr(d),
                self.expr(d),
                self.expr(d),
                self.expr(d)
            ),
            16 => format!(
                "({} BETWEEN {} AND {})",
                self.expr(d),
                self.expr(d),
                self.expr(d)
            ),
            17 => {
                let n = self.rng.gen_range(1..6);
                let list: Vec<String> = (0..n).map(|_| self.expr(d)).collect();
                format!("({} IN ({}))", self.expr(d), list.join(", "))
            }
            18 => format!(
                "({} IS {}NULL)",
                self.expr(d),
                if self.chance(50) { "NOT " } else { "" }
            ),
            19 => format!(
                "({} {} INTERVAL {} {})",
                self.expr(d),
                if self.chance(50) { "+" } else { "-" },
                self.expr(d),
                self.pick(UNITS)
            ),
            20 if self.budget > 8 => self.subquery_expr(d),
            _ => format!("({})", self.expr(d)),
        }
    }

    fn call(&mut self, depth: u32) -> String {
        let (name, counts) = *FUNCTIONS.choose(&mut self.rng).unwrap_or(&("ABS", &[1]));
        if name == "TIMESTAMPDIFF" {
            return format!(
                "TIMESTAMPDIFF({}, {}, {})",
                self.pick(UNITS),
                self.expr(depth),
                self.expr(depth)
            );
        }
        if name == "SLEEP" {
            return format!(
                "SLEEP({})",
                self.pick(&["0", "0.01", "-1", "NULL", "100000"])
            );
        }
        let n = if self.chance(5) || counts.is_empty() {
            self.rng.gen_range(0..5)
        } else {
            *counts.choose(&mut self.rng).unwrap_or(&1)
        };
        let args: Vec<String> = (0..n).map(|_| self.expr(depth)).collect();
        format!("{name}({})", args.join(", "))
    }

    fn subquery_expr(&mut self, depth: u32) -> String {
        let table = self.pick(&["t0", "t1"]);
        match self.rng.gen_range(0..4) {
            0 => format!(
                "(SELECT {} FROM {table} WHERE {} LIMIT 1)",
                self.expr(depth),
                self.expr(depth)
            ),
            1 => format!(
                "EXISTS (SELECT 1 FROM {table} WHERE {} = {})",
                self.column(Some(table)),
                self.expr(depth)
            ),
            2 => format!(
                "({} IN (SELECT {} FROM {table}))",
                self.expr(depth),
                self.column(None)
            ),
            _ => {
                let agg = self.pick(AGGREGATES);
                format!("(SELECT {agg}({}) FROM {table})", self.expr(depth))
            }
        }
    }

    /// A FROM clause of 1 to `n` tables (aliases x0, x1, ...).
    fn from(&mut self, n: usize) -> (String, Vec<String>) {
        let mut text = String::new();
        let mut aliases = Vec::new();
        for i in 0..n {
            let table = self.pick(&["t0", "t1", "t0", "t1", "t2"]);
            let alias = format!("x{i}");
            if i == 0 {
                text = format!("{table} {alias}");
            } else {
                let join = self.pick(&[
                    "JOIN",
                    "LEFT JOIN",
                    "RIGHT JOIN",
                    "CROSS JOIN",
                    "STRAIGHT_JOIN",
                ]);
                let on = if join == "CROSS JOIN" {
                    String::new()
                } else {
                    format!(" ON x{}.id = {alias}.id", self.rng.gen_range(0..i))
                };
                text = format!("{text} {join} {table} {alias}{on}");
            }
            aliases.push(alias);
        }
        if self.chance(10) {
            text = format!("({}) dt", self.select_core(1));
            aliases = vec!["dt".into()];
        }
        (text, aliases)
    }

    fn select_core(&mut self, tables: usize) -> String {
        let (from, aliases) = self.from(tables);
        let n = self.rng.gen_range(1..5);
        let list: Vec<String> = (0..n)
            .map(|i| {
                if self.chance(20) {
                    let agg = self.pick(AGGREGATES);
                    format!("{agg}({}) AS c{i}", self.expr(2))
                } else if self.chance(30) {
                    let alias = aliases.choose(&mut self.rng).cloned().unwrap_or_default();
                    let col = if alias.starts_with('x') {
                        self.column(Some(&alias))
                    } else {
                        "id".into()
                    };
                    format!("{col} AS c{i}")
                } else {
                    format!("{} AS c{i}", self.expr(3))
                }
            })
            .collect();
        format!("SELECT {} FROM {from}", list.join(", "))
    }

    fn select(&mut self) -> String {
        let tables = if self.chance(10) {
            self.rng.gen_range(3..8)
        } else {
            self.rng.gen_range(1..3)
        };
        let mut sql = self.select_core(tables);
        if self.chance(60) {
            sql = format!("{sql} WHERE {}", self.expr(4));
        }
        if self.chance(20) {
            sql = format!("{sql} GROUP BY c0");
            if self.chance(50) {
                sql = format!("{sql} HAVING {}", self.expr(2));
            }
        }
        if self.chance(30) {
            sql = format!(
                "{sql} ORDER BY {} {}",
                self.expr(2),
                self.pick(&["ASC", "DESC"])
            );
        }
        if self.chance(50) {
            sql = format!(
                "{sql} LIMIT {}",
                self.pick(&["0", "1", "10", "18446744073709551615", "5, 5"])
            );
        }
        if self.chance(5) {
            sql = format!(
                "{sql} {}",
                self.pick(&["FOR UPDATE", "FOR SHARE", "LOCK IN SHARE MODE"])
            );
        }
        sql
    }

    fn union(&mut self) -> String {
        let all = self.pick(&["UNION", "UNION ALL", "UNION DISTINCT"]);
        format!(
            "SELECT a, s FROM t0 {all} SELECT {}, {} FROM t1",
            self.expr(2),
            self.expr(2)
        )
    }

    fn window_query(&mut self) -> String {
        let f = self.pick(WINDOWS);
        let frame = self.pick(&[
            "",
            " ROWS BETWEEN 1 PRECEDING AND CURRENT ROW",
            " ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
            " RANGE BETWEEN 18446744073709551615 PRECEDING AND CURRENT ROW",
            " ROWS 9223372036854775807 PRECEDING",
        ]);
        format!(
            "SELECT id, {f} OVER (PARTITION BY {} ORDER BY {}{frame}) FROM t0",
            self.expr(1),
            self.column(None)
        )
    }

    fn recursive_cte(&mut self) -> String {
        let limit = self.pick(&["10", "1000", "100000", "n + 1", "NULL"]);
        format!(
            "WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < {limit}) \
             SELECT COUNT(*), SUM(n) FROM r"
        )
    }

    fn value_for(&mut self, column: &str) -> String {
        if self.chance(40) {
            return self.expr(2);
        }
        match column {
            "id" => format!("{}", self.rng.gen_range(0..400)),
            "s" | "c" | "tx" | "bn" | "bl" => self.pick(EDGE_TEXT).to_owned(),
            "dt" | "dtm" => self
                .pick(&[
                    "'2024-01-02'",
                    "'9999-12-31 23:59:59.9999995'",
                    "'1000-01-01'",
                    "NOW()",
                    "'0000-00-00'",
                ])
                .to_owned(),
            _ => self.pick(EDGE_NUMBERS).to_owned(),
        }
    }

    fn insert(&mut self) -> String {
        let table = self.pick(&["t0", "t1", "t2"]);
        let columns = if table == "t2" { T2_COLUMNS } else { COLUMNS };
        let n = self.rng.gen_range(1..=columns.len());
        let chosen: Vec<&str> = columns.choose_multiple(&mut self.rng, n).copied().collect();
        let rows = if self.chance(10) {
            self.rng.gen_range(2..50)
        } else {
            1
        };
        let values: Vec<String> = (0..rows)
            .map(|_| {
                let v: Vec<String> = chosen.iter().map(|c| self.value_for(c)).collect();
                format!("({})", v.join(", "))
            })
            .collect();
        let verb = self.pick(&["INSERT", "INSERT IGNORE", "REPLACE", "INSERT"]);
        let tail = if verb == "INSERT" && self.chance(30) {
            format!(" ON DUPLICATE KEY UPDATE {} = {}", chosen[0], self.expr(2))
        } else {
            String::new()
        };
        format!(
            "{verb} INTO {table} ({}) VALUES {}{tail}",
            chosen.join(", "),
            values.join(", ")
        )
    }

    fn update(&mut self) -> String {
        let table = self.pick(&["t0", "t1"]);
        let column = self.pick(&COLUMNS[1..]);
        format!(
            "UPDATE {table} SET {column} = {} WHERE {} LIMIT {}",
            self.expr(3),
            self.expr(3),
            self.rng.gen_range(0..20)
        )
    }

    fn delete(&mut self) -> String {
        let table = self.pick(&["t0", "t1", "t2"]);
        format!("DELETE FROM {table} WHERE {} LIMIT 3", self.expr(3))
    }

    fn ddl(&mut self) -> String {
        let n = self.rng.gen_range(0..6);
        match self.rng.gen_range(0..7) {
            0 => {
                let cols: Vec<String> = (0..self.rng.gen_range(1..8))
                    .map(|i| {
                        let ty = self.pick(&[
                            "INT",
                            "BIGINT UNSIGNED",
                            "DECIMAL(65,30)",
                            "VARCHAR(16383)",
                            "CHAR(255)",
                            "TEXT",
                            "BLOB",
                            "DATE",
                            "DATETIME(6)",
                            "YEAR",
                            "DOUBLE",
                            "FLOAT(53)",
                            "DECIMAL(66,0)",
                            "VARCHAR(70000)",
                            "BINARY(0)",
                            "BIT(64)",
                            "JSON",
                        ]);
                        format!("c{i} {ty}")
                    })
                    .collect();
                format!(
                    "CREATE TABLE IF NOT EXISTS z{n} (id INT PRIMARY KEY, {})",
                    cols.join(", ")
                )
            }
            1 => format!("DROP TABLE IF EXISTS z{n}"),
            2 => format!("CREATE INDEX i{n} ON z{n} (c0)"),
            3 => format!(
                "ALTER TABLE z{n} ADD COLUMN n{} INT DEFAULT {}",
                self.rng.gen_range(0..9),
                self.literal()
            ),
            4 => format!("INSERT INTO z{n} SELECT id, {} FROM t0", self.expr(1)),
            5 => format!("CREATE TABLE IF NOT EXISTS z{n} AS {}", self.select_core(1)),
            _ => format!("TRUNCATE TABLE z{n}"),
        }
    }

    fn session_statement(&mut self) -> String {
        match self.rng.gen_range(0..8) {
            0 => format!("SET @v = {}", self.expr(3)),
            1 => self
                .pick(&[
                    "BEGIN",
                    "COMMIT",
                    "ROLLBACK",
                    "SAVEPOINT s1",
                    "ROLLBACK TO s1",
                    "START TRANSACTION",
                ])
                .to_owned(),
            2 => format!(
                "SET SESSION {} = {}",
                self.pick(&[
                    "sql_mode",
                    "time_zone",
                    "div_precision_increment",
                    "autocommit",
                    "group_concat_max_len",
                    "cte_max_recursion_depth",
                    "sort_buffer_size",
                    "transaction_isolation"
                ]),
                self.literal()
            ),
            3 => self
                .pick(&[
                    "SHOW TABLES",
                    "SHOW STATUS",
                    "SHOW PROCESSLIST",
                    "SHOW CREATE TABLE t0",
                    "SHOW INDEX FROM t1",
                    "SHOW VARIABLES LIKE '%time%'",
                    "SHOW WARNINGS",
                    "CHECK TABLE t0, t1, t2",
                ])
                .to_owned(),
            4 => "SELECT * FROM information_schema.columns WHERE table_schema = 'fz'".into(),
            5 => format!("DO {}", self.expr(3)),
            6 => "SET max_execution_time = 3000".into(),
            _ => format!("SELECT {} INTO @w", self.expr(3)),
        }
    }

    fn prepared(&mut self) -> String {
        let inner = self.select().replace('\'', "''");
        match self.rng.gen_range(0..3) {
            0 => format!("PREPARE p FROM '{inner}'"),
            1 => "EXECUTE p".into(),
            _ => "DEALLOCATE PREPARE p".into(),
        }
    }

    fn random_text(&mut self) -> String {
        let n = self.rng.gen_range(0..200);
        let pieces = [
            "SELECT", "(", ")", ",", "'", "\"", "`", "\\", ";", "--", "/*", "*/", "FROM", "t0",
            "WHERE", "1", "NULL", " ", "\0", "\u{1}", "é", "😀", "\u{feff}", "#", "@", "?", ":=",
            "=",
        ];
        let mut text = String::new();
        for _ in 0..n {
            if self.chance(20) {
                text.push(char::from(self.rng.gen_range(0u8..128)));
            } else {
                text.push_str(self.pick(&pieces));
            }
        }
        text
    }

    /// The extremes: deep nesting, huge literals, many columns and joins.
    fn edge_case(&mut self) -> String {
        let deep = *[10usize, 100, 500, 999, 1000, 1001, 5000, 100_000]
            .choose(&mut self.rng)
            .unwrap_or(&10);
        match self.rng.gen_range(0..14) {
            0 => format!("SELECT {}1{}", "(".repeat(deep), ")".repeat(deep)),
            1 => format!("SELECT 1{}", "+1".repeat(deep)),
            2 => format!("SELECT {}1", "NOT ".repeat(deep)),
            3 => format!(
                "SELECT {}1{}",
                "(SELECT ".repeat(deep.min(2000)),
                ")".repeat(deep.min(2000))
            ),
            4 => format!(
                "SELECT {}'x'{}",
                "CONCAT(".repeat(deep),
                ", 'y')".repeat(deep)
            ),
            5 => format!("SELECT {}1{}", "- ".repeat(deep), ""),
            6 => {
                let len = *[1usize << 10, 1 << 16, 1 << 20, 4 << 20]
                    .choose(&mut self.rng)
                    .unwrap_or(&1024);
                format!("SELECT LENGTH('{}')", "z".repeat(len))
            }
            7 => format!(
                "SELECT {}",
                "9".repeat(
                    *[66usize, 1000, 100_000]
                        .choose(&mut self.rng)
                        .unwrap_or(&66)
                )
            ),
            8 => {
                let n = *[100usize, 4096, 4097, 20_000]
                    .choose(&mut self.rng)
                    .unwrap_or(&100);
                let list: Vec<String> = (0..n).map(|i| format!("{i}")).collect();
                format!("SELECT {}", list.join(", "))
            }
            9 => {
                let n = *[10usize, 61, 62, 200].choose(&mut self.rng).unwrap_or(&10);
                let joins: Vec<String> = (1..n)
                    .map(|i| format!("JOIN t2 y{i} ON y{i}.id = y0.id"))
                    .collect();
                format!(
                    "SELECT COUNT(*) FROM t2 y0 {} WHERE y0.id < 3",
                    joins.join(" ")
                )
            }
            10 => {
                let n = *[10usize, 4096, 5000].choose(&mut self.rng).unwrap_or(&10);
                let cols: Vec<String> = (0..n).map(|i| format!("c{i} INT")).collect();
                format!(
                    "CREATE TABLE IF NOT EXISTS wide{} (id INT PRIMARY KEY, {})",
                    self.rng.gen_range(0..3),
                    cols.join(", ")
                )
            }
            11 => {
                let n = *[100usize, 10_000, 200_000]
                    .choose(&mut self.rng)
                    .unwrap_or(&100);
                let list: Vec<String> = (0..n).map(|i| format!("{i}")).collect();
                format!("SELECT COUNT(*) FROM t0 WHERE a IN ({})", list.join(","))
            }
            12 => format!(
                "SELECT REPEAT('ab', {}), LPAD('', {}, 'x')",
                self.pick(EDGE_NUMBERS),
                self.pick(EDGE_NUMBERS)
            ),
            _ => format!("SELECT '{}'", "\\'".repeat(deep.min(50_000))),
        }
    }
}

/// Rows for t0, t1 and t2 (run at the start and whenever the tables run low).
pub fn refill(seed: u64) -> Vec<String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut out = Vec::new();
    for table in ["t0", "t1"] {
        let rows: Vec<String> = (0..40)
            .map(|id| {
                format!(
                    "({id}, {}, {}, {}, {}, {}, {}, {}, {}, 'v{}', 'c{}', REPEAT('t', {}), X'{:02x}', 'blob', \
                     '2024-{:02}-{:02}', '2024-01-02 03:04:05.{:06}', {})",
                    rng.gen_range(-50..50),
                    rng.gen::<i64>(),
                    rng.gen::<u64>(),
                    rng.gen_range(-128..128),
                    rng.gen::<f32>(),
                    rng.gen::<f64>() * 1e10,
                    rng.gen_range(-99_999i64..99_999),
                    rng.gen::<i32>(),
                    rng.gen_range(0..10),
                    id % 7,
                    rng.gen_range(0..300),
                    rng.gen::<u8>(),
                    rng.gen_range(1..13),
                    rng.gen_range(1..29),
                    rng.gen_range(0..1_000_000),
                    rng.gen_range(1901..2156),
                )
            })
            .collect();
        out.push(format!("REPLACE INTO {table} VALUES {}", rows.join(", ")));
    }
    let rows: Vec<String> = (1..40)
        .map(|id| format!("({id}, {}, 'v{id}')", rng.gen_range(0..10)))
        .collect();
    out.push(format!("REPLACE INTO t2 VALUES {}", rows.join(", ")));
    out
}
