//! Differential test: the same random schema, data, queries and changes on `MariaDB` (`InnoDB`)
//! and on Shale's server, results compared (as multisets where no ORDER BY fixes the order).
//!
//! Bounded for CI by `SHALE_DIFF_STATEMENTS` (default 300) and seeded by `SHALE_DIFF_SEED`
//! (default: random, printed). The long run is a documented command (docs/sql.md):
//! `SHALE_DIFF_STATEMENTS=20000 cargo test --release -p shale --test differential -- --nocapture`.
//! Every difference is either a bug to fix or a documented, intended difference.

mod support;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use support::{scratch, start_mariadb, start_shale, Server};

const WORDS: &[&str] = &[
    "abc", "ABC", "Abc", "abd", "b", "B", "ba", "", "z", "zz", "a b", "xyz", "m", "M",
];

/// One generated statement and how to compare its results.
struct Statement {
    sql: String,
    /// The statement's ORDER BY fixes every row's place, so rows compare in order.
    ordered: bool,
}

/// Random statements over `t(id INT PRIMARY KEY, a INT NULL, b VARCHAR(20) NULL, c BIGINT
/// NOT NULL, d DECIMAL(8,2) NULL, e DATE NULL, KEY ka (a), KEY kd (d), KEY ke (e))` and
/// `u(id INT PRIMARY KEY, t_id INT NULL, d VARCHAR(20) NULL, KEY kt (t_id))`.
struct Generator {
    rng: SmallRng,
}

impl Generator {
    fn int_literal(&mut self) -> String {
        self.rng.gen_range(-6..=6).to_string()
    }

    fn id_literal(&mut self) -> String {
        self.rng.gen_range(0..=130).to_string()
    }

    fn word(&mut self) -> String {
        format!("'{}'", WORDS.choose(&mut self.rng).unwrap())
    }

    fn a_value(&mut self) -> String {
        if self.rng.gen_bool(0.15) {
            "NULL".into()
        } else {
            self.int_literal()
        }
    }

    fn b_value(&mut self) -> String {
        if self.rng.gen_bool(0.15) {
            "NULL".into()
        } else {
            self.word()
        }
    }

    fn c_value(&mut self) -> String {
        match self.rng.gen_range(0..4) {
            0 => self
                .rng
                .gen_range(-3_000_000_000_i64..3_000_000_000)
                .to_string(),
            _ => self.rng.gen_range(-100..100).to_string(),
        }
    }

    /// A decimal literal with up to 3 fraction digits (stored rounded to 2), now and then one
    /// out of DECIMAL(8,2)'s range.
    fn decimal_literal(&mut self) -> String {
        let thousandths: i64 = if self.rng.gen_bool(0.05) {
            self.rng.gen_range(-200_000_000_000..200_000_000_000)
        } else {
            self.rng.gen_range(-20_000..20_000)
        };
        let sign = if thousandths < 0 { "-" } else { "" };
        let abs = thousandths.unsigned_abs();
        format!("{sign}{}.{:03}", abs / 1000, abs % 1000)
    }

    /// A date literal around 2024 (leap day included), now and then an invalid one.
    fn date_literal(&mut self) -> String {
        if self.rng.gen_bool(0.03) {
            return "'2023-02-29'".into();
        }
        let year = self.rng.gen_range(2023..=2025);
        let month = self.rng.gen_range(1..=3);
        let day = self.rng.gen_range(1..=28) + u32::from(month == 2 && year == 2024);
        format!("'{year}-{month:02}-{day:02}'")
    }

    fn e_value(&mut self) -> String {
        if self.rng.gen_bool(0.15) {
            "NULL".into()
        } else {
            self.date_literal()
        }
    }

    fn d_value(&mut self) -> String {
        if self.rng.gen_bool(0.15) {
            "NULL".into()
        } else {
            self.decimal_literal()
        }
    }

    fn predicate(&mut self, depth: u32) -> String {
        self.predicate_on("", depth)
    }

    /// A condition on t's columns, each written `{p}column` (`p` is "" or "t.").
    fn predicate_on(&mut self, p: &str, depth: u32) -> String {
        let leaf = depth > 1 || self.rng.gen_bool(0.6);
        if leaf {
            return match self.rng.gen_range(0..17) {
                15 => format!("{p}e >= {}", self.date_literal()),
                16 => format!(
                    "{p}e BETWEEN {} AND {}",
                    self.date_literal(),
                    self.date_literal()
                ),
                12 => format!("{p}d > {}", self.decimal_literal()),
                13 => format!("{p}d = {}", self.decimal_literal()),
                14 => format!(
                    "{p}d BETWEEN {} AND {}",
                    self.decimal_literal(),
                    self.decimal_literal()
                ),
                0 => format!("{p}id = {}", self.id_literal()),
                1 => {
                    let low = self.rng.gen_range(0..=120);
                    let high = low + self.rng.gen_range(0..30);
                    format!("{p}id BETWEEN {low} AND {high}")
                }
                2 => format!("{p}a = {}", self.int_literal()),
                3 => format!("{p}a > {}", self.int_literal()),
                4 => format!("{p}a IS NULL"),
                5 => format!("{p}b IS NOT NULL"),
                6 => format!("{p}b = {}", self.word()),
                7 => format!("{p}b < {}", self.word()),
                8 => format!(
                    "{p}a IN ({}, {}, {})",
                    self.int_literal(),
                    self.int_literal(),
                    self.int_literal()
                ),
                9 => format!("{p}c < {}", self.c_value()),
                10 => format!(
                    "{p}id > {} AND {p}id <= {}",
                    self.id_literal(),
                    self.id_literal()
                ),
                _ => format!("{p}a + {p}c >= {}", self.int_literal()),
            };
        }
        match self.rng.gen_range(0..3) {
            0 => format!(
                "({} AND {})",
                self.predicate_on(p, depth + 1),
                self.predicate_on(p, depth + 1)
            ),
            1 => format!(
                "({} OR {})",
                self.predicate_on(p, depth + 1),
                self.predicate_on(p, depth + 1)
            ),
            _ => format!("NOT ({})", self.predicate_on(p, depth + 1)),
        }
    }

    /// A condition on u's columns.
    fn u_predicate(&mut self) -> String {
        match self.rng.gen_range(0..4) {
            0 => format!("u.d < {}", self.word()),
            1 => format!("u.t_id > {}", self.id_literal()),
            2 => "u.d IS NOT NULL".into(),
            _ => format!("u.id <> {}", self.rng.gen_range(0..60)),
        }
    }

    /// Two-table queries: joins (INNER, LEFT, with NULLs on both sides) and subqueries
    /// (IN, NOT IN, EXISTS, NOT EXISTS, scalar, correlated), compared as multisets unless
    /// ordered.
    fn two_table_select(&mut self) -> Statement {
        let tp = self.predicate_on("t.", 1);
        let up = self.u_predicate();
        let word = self.word();
        let (sql, ordered) = match self.rng.gen_range(0..11) {
            0 => (
                format!("SELECT t.id, u.id, t.a, u.d FROM t JOIN u ON u.t_id = t.id WHERE {tp}"),
                false,
            ),
            1 => (
                format!(
                    "SELECT t.id, u.id, u.d FROM t LEFT JOIN u ON u.t_id = t.id AND {up} WHERE {tp}"
                ),
                false,
            ),
            2 => (
                "SELECT t.a, COUNT(*), COUNT(u.id), MAX(u.id), COUNT(u.d) FROM t LEFT JOIN u \
                 ON u.t_id = t.a GROUP BY t.a ORDER BY t.a"
                    .to_string(),
                true,
            ),
            3 => (
                format!("SELECT t.id, u.id FROM t, u WHERE t.b = u.d AND {tp}"),
                false,
            ),
            4 => (
                format!("SELECT u.id, u.d FROM u LEFT JOIN t ON t.a = u.t_id WHERE t.id IS NULL OR {tp}"),
                false,
            ),
            5 => (
                format!("SELECT id, b FROM t WHERE a IN (SELECT t_id FROM u WHERE {up})"),
                false,
            ),
            6 => (
                format!("SELECT id FROM t WHERE a NOT IN (SELECT t_id FROM u WHERE {up}) AND {tp}"),
                false,
            ),
            7 => (
                format!(
                    "SELECT id FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.t_id = t.id AND u.d < {word})"
                ),
                false,
            ),
            8 => (
                format!("SELECT id, a FROM t WHERE NOT EXISTS (SELECT * FROM u WHERE u.t_id = t.a) AND {tp}"),
                false,
            ),
            9 => (
                format!(
                    "SELECT id, (SELECT COUNT(*) FROM u WHERE u.t_id = t.id), \
                     (SELECT MAX(u.id) FROM u WHERE u.t_id = t.a) FROM t WHERE {tp} ORDER BY id"
                ),
                true,
            ),
            _ => (
                format!("SELECT t.id, u.id FROM t JOIN u ON t.a < u.t_id WHERE {tp} AND {up}"),
                false,
            ),
        };
        Statement { sql, ordered }
    }

    /// Window functions over t (partitions by nullable and `general_ci` columns, ROWS and
    /// RANGE frames, over groups), ordered by a unique key.
    fn window_select(&mut self) -> Statement {
        let p = self.predicate(1);
        let sql = match self.rng.gen_range(0..6) {
            0 => format!(
                "SELECT id, ROW_NUMBER() OVER (PARTITION BY a ORDER BY c, id), \
                 RANK() OVER (PARTITION BY a ORDER BY c), DENSE_RANK() OVER (ORDER BY b) \
                 FROM t WHERE {p} ORDER BY id"
            ),
            1 => format!(
                "SELECT id, SUM(c) OVER (PARTITION BY b ORDER BY id), COUNT(a) OVER (PARTITION BY b), \
                 MAX(d) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING) \
                 FROM t WHERE {p} ORDER BY id"
            ),
            2 => format!(
                "SELECT id, LAG(a) OVER (ORDER BY id), LEAD(c, 2) OVER (PARTITION BY a ORDER BY id), \
                 FIRST_VALUE(b) OVER (PARTITION BY a ORDER BY id), NTILE(3) OVER (ORDER BY id) \
                 FROM t WHERE {p} ORDER BY id"
            ),
            3 => format!(
                "SELECT id, a, COUNT(*) OVER (ORDER BY a RANGE BETWEEN 2 PRECEDING AND 1 FOLLOWING), \
                 SUM(c) OVER (ORDER BY a DESC RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) \
                 FROM t WHERE {p} ORDER BY id"
            ),
            4 => format!(
                "SELECT a, COUNT(*), RANK() OVER (ORDER BY COUNT(*) DESC), SUM(SUM(c)) OVER () \
                 FROM t WHERE {p} GROUP BY a ORDER BY a"
            ),
            _ => format!(
                "SELECT id, AVG(d) OVER (PARTITION BY e), MIN(c) OVER (PARTITION BY a ORDER BY id \
                 ROWS UNBOUNDED PRECEDING), LAST_VALUE(id) OVER (PARTITION BY e ORDER BY id \
                 ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM t WHERE {p} ORDER BY id"
            ),
        };
        // `MariaDB` 10.11 returns GROUP BY with a window function in the window's order, not
        // ORDER BY's (MySQL and Shale sort): compare those as multisets.
        let ordered = !sql.contains("GROUP BY");
        Statement { sql, ordered }
    }

    fn u_change(&mut self) -> Statement {
        let sql = if self.rng.gen_bool(0.8) {
            let t_id = if self.rng.gen_bool(0.15) {
                "NULL".to_string()
            } else if self.rng.gen_bool(0.3) {
                self.int_literal()
            } else {
                self.id_literal()
            };
            format!(
                "INSERT INTO u (id, t_id, d) VALUES ({}, {t_id}, {})",
                self.rng.gen_range(0..60),
                self.b_value()
            )
        } else {
            format!("DELETE FROM u WHERE id = {}", self.rng.gen_range(0..60))
        };
        Statement { sql, ordered: true }
    }

    fn select(&mut self) -> Statement {
        let predicate = self.predicate(0);
        match self.rng.gen_range(0..10) {
            9 => Statement {
                sql: format!(
                    "SELECT e, COUNT(*), MIN(id) FROM t WHERE {predicate} GROUP BY e ORDER BY e"
                ),
                ordered: true,
            },
            7 => Statement {
                sql: format!(
                    "SELECT id, d, d * 3, d / 3, d + a, d - 0.5 FROM t WHERE {predicate} ORDER BY d, id"
                ),
                ordered: true,
            },
            8 => Statement {
                sql: format!("SELECT SUM(d), AVG(d), MIN(d), MAX(d), COUNT(d) FROM t WHERE {predicate}"),
                ordered: true,
            },
            0 => Statement {
                sql: format!("SELECT id, a, b, c, d, e FROM t WHERE {predicate} ORDER BY id"),
                ordered: true,
            },
            1 => Statement {
                sql: format!("SELECT b, id FROM t WHERE {predicate}"),
                ordered: false,
            },
            2 => Statement {
                sql: format!(
                    "SELECT COUNT(*), COUNT(a), SUM(a), MIN(a), MAX(c), MIN(id) FROM t WHERE {predicate}"
                ),
                ordered: true,
            },
            3 => Statement {
                sql: format!(
                    "SELECT a, COUNT(*), SUM(c) FROM t WHERE {predicate} GROUP BY a ORDER BY a"
                ),
                ordered: true,
            },
            4 => {
                let limit = self.rng.gen_range(1..10);
                let descending = if self.rng.gen_bool(0.5) { " DESC" } else { "" };
                Statement {
                    sql: format!(
                        "SELECT id, c FROM t WHERE {predicate} ORDER BY c{descending}, id LIMIT {limit}"
                    ),
                    ordered: true,
                }
            }
            5 => Statement {
                sql: format!("SELECT DISTINCT a FROM t WHERE {predicate}"),
                ordered: false,
            },
            _ => Statement {
                sql: format!("SELECT id, a * 2, c - a, a + 1 FROM t WHERE {predicate} ORDER BY id"),
                ordered: true,
            },
        }
    }

    fn change(&mut self) -> Statement {
        let sql = match self.rng.gen_range(0..9) {
            0..=3 => format!(
                "INSERT INTO t (id, a, b, c, d, e) VALUES ({}, {}, {}, {}, {}, {})",
                self.id_literal(),
                self.a_value(),
                self.b_value(),
                self.c_value(),
                self.d_value(),
                self.e_value()
            ),
            8 => format!(
                "UPDATE t SET d = d * 1.5 + {} WHERE {}",
                self.decimal_literal(),
                self.predicate(0)
            ),
            4 => format!(
                "UPDATE t SET a = {}, b = {} WHERE {}",
                self.a_value(),
                self.b_value(),
                self.predicate(0)
            ),
            5 | 6 => format!("UPDATE t SET c = c + 1 WHERE {}", self.predicate(0)),
            // Deletes stay narrow so the table keeps rows to query.
            _ => format!(
                "DELETE FROM t WHERE id = {} OR ({} AND id < {})",
                self.id_literal(),
                self.predicate(1),
                self.rng.gen_range(0..20)
            ),
        };
        Statement { sql, ordered: true }
    }
}

/// A statement's outcome, comparable across servers: its rows, or its `MySQL` error code.
fn outcome(server: &Server, statement: &Statement) -> Result<Vec<String>, String> {
    match server.query(Some("diff"), &statement.sql) {
        Ok(out) => {
            let mut rows: Vec<String> = out.lines().map(str::to_owned).collect();
            if !statement.ordered {
                rows.sort();
            }
            Ok(rows)
        }
        // "ERROR 1062 (23000) at line 1: Duplicate entry ...": the code is what must match.
        Err(text) => Err(text.split_whitespace().nth(1).unwrap_or(&text).to_owned()),
    }
}

#[test]
fn shale_answers_as_mariadb_does() {
    let statements: usize = std::env::var("SHALE_DIFF_STATEMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let seed: u64 = std::env::var("SHALE_DIFF_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen());
    println!("differential: seed {seed}, {statements} statements (SHALE_DIFF_SEED={seed} repeats)");

    let dir = scratch("differential");
    let mariadb = start_mariadb(&dir);
    let shale = start_shale(&dir);
    let schema = [
        "CREATE DATABASE diff",
        "CREATE TABLE diff.t (id INT NOT NULL PRIMARY KEY, a INT NULL, b VARCHAR(20) NULL, \
         c BIGINT NOT NULL DEFAULT 0, d DECIMAL(8,2) NULL, e DATE NULL, KEY ka (a), KEY kd (d), KEY ke (e)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
        "CREATE TABLE diff.u (id INT NOT NULL PRIMARY KEY, t_id INT NULL, d VARCHAR(20) NULL, \
         KEY kt (t_id)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
    ];
    for sql in schema {
        for server in [&mariadb, &shale] {
            server
                .query(None, sql)
                .unwrap_or_else(|e| panic!("{}: {sql}: {e}", server.name));
        }
    }

    let mut generator = Generator {
        rng: SmallRng::seed_from_u64(seed),
    };
    // Load some rows first, then mix queries and changes.
    let mut differences = Vec::new();
    let mut answered_rows = 0;
    for step in 0..statements {
        let statement = if step < statements / 4 || generator.rng.gen_bool(0.3) {
            if generator.rng.gen_bool(0.3) {
                generator.u_change()
            } else {
                generator.change()
            }
        } else if generator.rng.gen_bool(0.4) {
            generator.two_table_select()
        } else if generator.rng.gen_bool(0.2) {
            generator.window_select()
        } else {
            generator.select()
        };
        let expected = outcome(&mariadb, &statement);
        let found = outcome(&shale, &statement);
        answered_rows += usize::from(expected.as_ref().is_ok_and(|rows| !rows.is_empty()));
        if expected != found {
            differences.push(format!(
                "step {step}: {}\n  mariadb: {expected:?}\n  shale:   {found:?}",
                statement.sql
            ));
        }
    }
    // The tables must end equal, whatever the statements did.
    let all = Statement {
        sql: "SELECT id, a, b, c, d, e FROM t ORDER BY id".into(),
        ordered: true,
    };
    let (expected, found) = (outcome(&mariadb, &all), outcome(&shale, &all));
    if expected != found {
        differences.push(format!(
            "final contents differ\n  mariadb: {expected:?}\n  shale:   {found:?}"
        ));
    }
    // A comparison of empty answers proves nothing: the generator must reach real rows.
    assert!(
        answered_rows > statements / 5 && expected.as_ref().is_ok_and(|rows| rows.len() > 10),
        "seed {seed}: only {answered_rows} statements returned rows and the table ended with \
         {expected:?}; the generator is off"
    );
    assert!(
        differences.is_empty(),
        "seed {seed}: {} of {statements} statements differ (first 10):\n{}",
        differences.len(),
        differences
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
