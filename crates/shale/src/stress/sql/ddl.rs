//! `shale stress sql --ddl`: DDL under a crash. Each round a writer inserts rows into
//! `bank.ddl_t` (autocommit) while a DDL thread runs statements back to back: CREATE INDEX,
//! DROP INDEX, ALTER TABLE ADD COLUMN and DROP COLUMN (instant), ALTER TABLE MODIFY of `k`
//! between INT and BIGINT (a rewrite of every row when `k` is indexed or narrowed),
//! TRUNCATE TABLE, DROP TABLE then CREATE TABLE, and a bulk INSERT when the table is small
//! (so that CREATE INDEX and the rewrites have rows to copy). The SIGKILL lands wherever they
//! are, most often inside a DDL statement.
//!
//! After the restart ([`DdlTable::verify`]), from the state verified after the previous
//! restart and the round's acknowledged and unanswered statements:
//! 1. The schema (table present, index present, column `c` present, `k`'s type) is the one
//!    after the acknowledged DDL, or after the unanswered one too (ARCHITECTURE.md
//!    invariant 7: old or new, nothing else).
//! 2. Every row present was inserted by us, and reads back as written (`c`, when present,
//!    reads its DEFAULT: no row was written with it).
//! 3. Every insert acknowledged after the last acknowledged TRUNCATE/DROP is present; an
//!    unanswered TRUNCATE or DROP removed all or none of the rows acknowledged before it
//!    was sent.
//! 4. CHECK TABLE passes (the index, when present, agrees with the rows).
//!
//! The state observed then becomes the next round's starting point.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable as _;
use mysql::Conn;
use rand::rngs::SmallRng;
use rand::{Rng as _, SeedableRng as _};

use super::bank::DATABASE;
use super::server::{check_tables, connect};

const TABLE: &str = "ddl_t";
const INDEX: &str = "k_idx";
/// Below this many rows the DDL thread loads a batch first.
const SMALL: usize = 3000;
const BATCH: i64 = 3000;
/// The column ADD COLUMN adds, and the value every row reads from it.
const EXTRA: &str = "c";
const EXTRA_DEFAULT: i64 = 7;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ddl {
    CreateTable,
    CreateIndex,
    DropIndex,
    Truncate,
    DropTable,
    AddColumn,
    DropColumn,
    /// `k` INT -> BIGINT: instant without the index, a rewrite with it.
    Widen,
    /// `k` BIGINT -> INT: always a rewrite.
    Narrow,
}

/// Every kind, in `Ddl as usize` order (for the counts).
const KINDS: usize = 9;

impl Ddl {
    fn sql(self) -> String {
        match self {
            Ddl::CreateTable => format!(
                "CREATE TABLE {TABLE} (id INT PRIMARY KEY, k INT NOT NULL, v VARCHAR(40) NOT NULL)"
            ),
            Ddl::CreateIndex => format!("CREATE INDEX {INDEX} ON {TABLE} (k)"),
            Ddl::DropIndex => format!("DROP INDEX {INDEX} ON {TABLE}"),
            Ddl::Truncate => format!("TRUNCATE TABLE {TABLE}"),
            Ddl::DropTable => format!("DROP TABLE {TABLE}"),
            Ddl::AddColumn => format!(
                "ALTER TABLE {TABLE} ADD COLUMN {EXTRA} INT NOT NULL DEFAULT {EXTRA_DEFAULT}"
            ),
            Ddl::DropColumn => format!("ALTER TABLE {TABLE} DROP COLUMN {EXTRA}"),
            Ddl::Widen => format!("ALTER TABLE {TABLE} MODIFY k BIGINT NOT NULL"),
            Ddl::Narrow => format!("ALTER TABLE {TABLE} MODIFY k INT NOT NULL"),
        }
    }

    /// Whether it removes every row.
    fn destructive(self) -> bool {
        matches!(self, Ddl::Truncate | Ddl::DropTable | Ddl::CreateTable)
    }

    /// The schema (table exists, index exists) after it.
    fn apply(self, schema: Schema) -> Schema {
        match self {
            Ddl::CreateTable => Schema::CREATED,
            Ddl::CreateIndex => Schema {
                index: true,
                ..schema
            },
            Ddl::DropIndex => Schema {
                index: false,
                ..schema
            },
            Ddl::Truncate => schema,
            Ddl::DropTable => Schema::ABSENT,
            Ddl::AddColumn => Schema {
                extra: true,
                ..schema
            },
            Ddl::DropColumn => Schema {
                extra: false,
                ..schema
            },
            Ddl::Widen => Schema {
                k: KType::BigInt,
                ..schema
            },
            Ddl::Narrow => Schema {
                k: KType::Int,
                ..schema
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Schema {
    exists: bool,
    index: bool,
    /// Column `c` exists.
    extra: bool,
    k: KType,
}

/// `k`'s type, which MODIFY switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KType {
    Int,
    BigInt,
}

impl Schema {
    const ABSENT: Schema = Schema {
        exists: false,
        index: false,
        extra: false,
        k: KType::Int,
    };
    const CREATED: Schema = Schema {
        exists: true,
        ..Schema::ABSENT
    };
}

#[derive(Debug, Clone)]
enum Event {
    Insert {
        ids: Vec<i64>,
        sent: Instant,
        acked: Option<Instant>,
    },
    Ddl {
        ddl: Ddl,
        sent: Instant,
        acked: Option<Instant>,
    },
}

/// Counts over the run.
#[derive(Debug, Default, Clone, Copy)]
pub struct DdlCounts {
    pub acknowledged: u64,
    pub unanswered: u64,
    pub by_kind_unanswered: [u64; KINDS],
}

impl DdlCounts {
    pub fn add(&mut self, other: &DdlCounts) {
        self.acknowledged += other.acknowledged;
        self.unanswered += other.unanswered;
        for (a, b) in self
            .by_kind_unanswered
            .iter_mut()
            .zip(other.by_kind_unanswered)
        {
            *a += b;
        }
    }
}

impl fmt::Display for DdlCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [ct, ci, di, tr, dt, ac, dc, wi, na] = self.by_kind_unanswered;
        write!(
            f,
            "{} statements acknowledged, {} cut by a kill (CREATE TABLE {ct}, CREATE INDEX {ci}, \
             DROP INDEX {di}, TRUNCATE {tr}, DROP TABLE {dt}, ADD COLUMN {ac}, DROP COLUMN {dc}, \
             MODIFY to BIGINT {wi}, MODIFY to INT {na})",
            self.acknowledged, self.unanswered
        )
    }
}

/// The DDL table's verified state and the current round's events.
#[derive(Debug)]
pub struct DdlTable {
    schema: Schema,
    ids: BTreeSet<i64>,
    next_id: AtomicI64,
    events: Mutex<Vec<Event>>,
}

fn lock(events: &Mutex<Vec<Event>>) -> std::sync::MutexGuard<'_, Vec<Event>> {
    events.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `(id, k, v) VALUES ...` for `ids`: named columns, as `c` may exist.
fn row_values(ids: &[i64]) -> String {
    let rows: Vec<String> = ids
        .iter()
        .map(|id| format!("({id}, {}, 'r{id}')", id % 97))
        .collect();
    format!("(id, k, v) VALUES {}", rows.join(", "))
}

impl DdlTable {
    pub fn new() -> DdlTable {
        DdlTable {
            schema: Schema::ABSENT,
            ids: BTreeSet::new(),
            next_id: AtomicI64::new(1),
            events: Mutex::new(Vec::new()),
        }
    }

    /// Creates the table (the bank's database exists).
    pub fn create(&mut self, conn: &mut Conn) -> Result<(), String> {
        let sql = format!("USE {DATABASE}");
        conn.query_drop(&sql).map_err(|e| format!("{sql}: {e}"))?;
        let sql = Ddl::CreateTable.sql();
        conn.query_drop(&sql).map_err(|e| format!("{sql}: {e}"))?;
        self.schema = Schema::CREATED;
        Ok(())
    }

    /// One round: a writer thread and the DDL loop, until `stop` or a dead connection.
    pub fn run_round(&self, port: u16, seed: u64, stop: &AtomicBool) -> Result<DdlCounts, String> {
        lock(&self.events).clear();
        std::thread::scope(|scope| {
            scope.spawn(|| self.write_rows(port, stop));
            Ok(self.run_ddl(port, seed, stop))
        })
    }

    fn write_rows(&self, port: u16, stop: &AtomicBool) {
        let Ok(mut conn) = connect(port, DATABASE) else {
            return;
        };
        while !stop.load(Ordering::Relaxed) {
            let ids: Vec<i64> = (0..4)
                .map(|_| self.next_id.fetch_add(1, Ordering::Relaxed))
                .collect();
            let sent = Instant::now();
            let result = conn.query_drop(format!("INSERT INTO {TABLE} {}", row_values(&ids)));
            match result {
                Ok(()) => lock(&self.events).push(Event::Insert {
                    ids,
                    sent,
                    acked: Some(Instant::now()),
                }),
                Err(mysql::Error::MySqlError(_)) => {
                    // Refused (the table is being dropped or is gone): never inserted.
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(_) => {
                    lock(&self.events).push(Event::Insert {
                        ids,
                        sent,
                        acked: None,
                    });
                    return;
                }
            }
        }
    }

    fn run_ddl(&self, port: u16, seed: u64, stop: &AtomicBool) -> DdlCounts {
        let mut counts = DdlCounts::default();
        let mut rng = SmallRng::seed_from_u64(seed);
        let Ok(mut conn) = connect(port, DATABASE) else {
            return counts;
        };
        let mut schema = self.schema;
        let mut small = self.ids.len() < SMALL;
        while !stop.load(Ordering::Relaxed) {
            if schema.exists && small {
                let first = self.next_id.fetch_add(BATCH, Ordering::Relaxed);
                let ids: Vec<i64> = (first..first + BATCH).collect();
                let sent = Instant::now();
                match conn.query_drop(format!("INSERT INTO {TABLE} {}", row_values(&ids))) {
                    Ok(()) => {
                        lock(&self.events).push(Event::Insert {
                            ids,
                            sent,
                            acked: Some(Instant::now()),
                        });
                        small = false;
                    }
                    Err(mysql::Error::MySqlError(e)) => {
                        eprintln!("shale stress sql: bulk insert refused: {e}");
                        return counts;
                    }
                    Err(_) => {
                        lock(&self.events).push(Event::Insert {
                            ids,
                            sent,
                            acked: None,
                        });
                        return counts;
                    }
                }
                continue;
            }
            let ddl = if schema.exists {
                match rng.gen_range(0..14) {
                    0..=5 if schema.index => Ddl::DropIndex,
                    0..=5 => Ddl::CreateIndex,
                    6..=7 if schema.extra => Ddl::DropColumn,
                    6..=7 => Ddl::AddColumn,
                    8..=9 if schema.k == KType::BigInt => Ddl::Narrow,
                    8..=9 => Ddl::Widen,
                    10..=11 => Ddl::Truncate,
                    _ => Ddl::DropTable,
                }
            } else {
                Ddl::CreateTable
            };
            let sent = Instant::now();
            // Its position, taken under the same lock as the push: the writer pushes too.
            let at = {
                let mut events = lock(&self.events);
                events.push(Event::Ddl {
                    ddl,
                    sent,
                    acked: None,
                });
                events.len() - 1
            };
            let result = conn.query_drop(ddl.sql());
            match result {
                Ok(()) => {
                    if let Some(Event::Ddl { acked, .. }) = lock(&self.events).get_mut(at) {
                        *acked = Some(Instant::now());
                    }
                    counts.acknowledged += 1;
                    schema = ddl.apply(schema);
                    small |= ddl.destructive();
                }
                Err(mysql::Error::MySqlError(e)) => {
                    // A refused DDL must change nothing; it is recorded as not sent.
                    lock(&self.events).remove(at);
                    eprintln!("shale stress sql: {} refused: {e}", ddl.sql());
                    return counts;
                }
                Err(_) => {
                    counts.unanswered += 1;
                    counts.by_kind_unanswered[ddl as usize] += 1;
                    return counts;
                }
            }
        }
        counts
    }

    /// Checks rules 1 to 4 on the restarted server and adopts what it finds.
    pub fn verify(&mut self, conn: &mut Conn) -> Result<(), String> {
        let events = std::mem::take(&mut *lock(&self.events));
        // What the acknowledged DDL leaves, and the unanswered one (the DDL thread's last).
        let mut schema = self.schema;
        let mut last_destroyed: Option<Instant> = None;
        let mut in_flight: Option<(Ddl, Instant)> = None;
        for event in &events {
            if let Event::Ddl { ddl, sent, acked } = event {
                match acked {
                    Some(at) => {
                        schema = ddl.apply(schema);
                        if ddl.destructive() {
                            last_destroyed = Some(*at);
                        }
                    }
                    None => in_flight = Some((*ddl, *sent)),
                }
            }
        }
        let observed = observe_schema(conn)?;
        let allowed: Vec<Schema> = std::iter::once(schema)
            .chain(in_flight.map(|(ddl, _)| ddl.apply(schema)))
            .collect();
        if !allowed.contains(&observed) {
            return Err(format!(
                "schema {observed:?} after the crash; only {allowed:?} are allowed (DDL in flight: {in_flight:?})"
            ));
        }
        let present = if observed.exists {
            let rows: Vec<(i64, i64, String)> = conn
                .query(format!("SELECT id, k, v FROM {TABLE}"))
                .map_err(|e| format!("reading {TABLE}: {e}"))?;
            let mut present = BTreeSet::new();
            for (id, k, v) in rows {
                if k != id % 97 || v != format!("r{id}") {
                    return Err(format!("row {id} reads ({k}, {v:?})"));
                }
                present.insert(id);
            }
            if observed.extra {
                let sql = format!(
                    "SELECT COUNT(*) FROM {TABLE} WHERE {EXTRA} IS NULL OR {EXTRA} <> {EXTRA_DEFAULT}"
                );
                let wrong: Option<i64> =
                    conn.query_first(&sql).map_err(|e| format!("{sql}: {e}"))?;
                if wrong != Some(0) {
                    return Err(format!(
                        "{wrong:?} rows do not read {EXTRA} = {EXTRA_DEFAULT}"
                    ));
                }
            }
            check_tables(conn, &[&format!("{DATABASE}.{TABLE}")])?;
            present
        } else {
            BTreeSet::new()
        };
        // Rule 2: nothing present that was never sent.
        let mut sent_ids: BTreeSet<i64> = self.ids.clone();
        for event in &events {
            if let Event::Insert { ids, .. } = event {
                sent_ids.extend(ids);
            }
        }
        if let Some(id) = present.iter().find(|id| !sent_ids.contains(id)) {
            return Err(format!(
                "row {id} is present but was never inserted (or was refused)"
            ));
        }
        // Rule 3. Rows that must be there unless the unanswered DDL removed them.
        let mut required: BTreeSet<i64> = if last_destroyed.is_some() {
            BTreeSet::new()
        } else {
            self.ids.clone()
        };
        for event in &events {
            if let Event::Insert {
                ids,
                sent,
                acked: Some(acked),
            } = event
            {
                if last_destroyed.is_some_and(|d| *sent < d) {
                    continue;
                }
                // Acknowledged after an unanswered TRUNCATE or DROP was sent: it may have run
                // before or after them, so these rows are free to be either way.
                let free = in_flight
                    .is_some_and(|(ddl, ddl_sent)| ddl.destructive() && *acked >= ddl_sent);
                if !free {
                    required.extend(ids);
                }
            }
        }
        let missing = required.iter().filter(|id| !present.contains(id)).count();
        let removed_by_in_flight = in_flight.is_some_and(|(ddl, _)| ddl.destructive())
            && missing == required.len()
            && !required.is_empty();
        if missing > 0 && !removed_by_in_flight {
            return Err(format!(
                "{missing} of {} acknowledged rows are missing (DDL in flight: {in_flight:?})",
                required.len()
            ));
        }
        self.schema = observed;
        self.ids = present;
        Ok(())
    }
}

/// Whether the table, its index and column `c` exist, and `k`'s type.
fn observe_schema(conn: &mut Conn) -> Result<Schema, String> {
    let sql = format!("SHOW INDEX FROM {TABLE}");
    let index = match conn.query::<mysql::Row, _>(&sql) {
        Ok(rows) => rows
            .iter()
            .any(|row| row.get::<String, _>(2).is_some_and(|name| name == INDEX)),
        Err(mysql::Error::MySqlError(e)) if e.code == 1146 => return Ok(Schema::ABSENT),
        Err(e) => return Err(format!("{sql}: {e}")),
    };
    let sql = format!("SHOW COLUMNS FROM {TABLE}");
    let columns: Vec<(String, String)> = conn
        .query_map(&sql, |row: mysql::Row| {
            (
                row.get::<String, _>(0).unwrap_or_default(),
                row.get::<String, _>(1).unwrap_or_default(),
            )
        })
        .map_err(|e| format!("{sql}: {e}"))?;
    let type_of = |name: &str| {
        columns
            .iter()
            .find(|(column, _)| column == name)
            .map(|(_, ty)| ty.to_ascii_lowercase())
    };
    let k = match type_of("k").as_deref() {
        Some(ty) if ty.starts_with("bigint") => KType::BigInt,
        Some(ty) if ty.starts_with("int") => KType::Int,
        other => return Err(format!("column k has type {other:?}")),
    };
    Ok(Schema {
        exists: true,
        index,
        extra: type_of(EXTRA).is_some(),
        k,
    })
}
