//! A list-append history checker in the manner of Jepsen's Elle, through the server: clients
//! run random transactions that append unique elements to a few keys
//! (`UPDATE lists SET v = CONCAT(v, ',e')`) and read them, committing or rolling back; the
//! whole history is kept and checked against the final lists (docs/reliability.md, "The
//! server"). What it checks, at READ COMMITTED and REPEATABLE READ:
//! 1. every committed append is in its key's final list exactly once (no lost update), and
//!    nothing else is (no aborted or invented element);
//! 2. every read, less the reading transaction's own appends, is a prefix of the key's final
//!    list (the order of appends is one order that every reader agrees with);
//! 3. no read observes an element of a transaction that rolled back (G1a), or only some of
//!    another transaction's appends to that key (G1b);
//! 4. at REPEATABLE READ, two reads of a key in one transaction with no append of its own
//!    between them return the same list;
//! 5. the dependency graph of the committed transactions (cycles.rs, Elle's ww, wr and rw
//!    edges) has no cycle of a class the level forbids: G0 and G1c at READ COMMITTED, and
//!    G-single too at REPEATABLE READ (snapshot isolation); G2 (write skew) is allowed at
//!    both, and the cycles of allowed classes are counted and printed.
//!
//! Transactions have 2 to 4 operations on 5 keys, so most touch several keys and cycles
//! across keys are possible.
//!
//! Scale: `SHALE_LIST_APPEND_TXNS` (transactions per client, default 150);
//! `SHALE_LIST_APPEND_ROUNDS` (histories per level, each on a fresh server, default 1).

mod cycles;
#[path = "../support/mod.rs"]
mod support;

use std::collections::{BTreeMap, HashMap, HashSet};

use mysql::prelude::Queryable as _;
use rand::rngs::SmallRng;
use rand::{Rng as _, SeedableRng as _};

const KEYS: u32 = 5;
const CLIENTS: u64 = 4;

#[derive(Debug, Clone)]
pub enum Op {
    Append(u32, String),
    Read(u32, Vec<String>),
}

#[derive(Debug, Clone)]
pub struct Txn {
    /// `client.number`, for reports.
    pub name: String,
    pub ops: Vec<Op>,
    pub committed: bool,
}

fn connect(port: u16, level: &str) -> mysql::Conn {
    let opts = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .user(Some("root"))
        .pass(Some(""))
        .db_name(Some("elle"))
        .prefer_socket(false);
    let mut conn = mysql::Conn::new(opts).expect("connect");
    conn.query_drop(format!("SET SESSION TRANSACTION ISOLATION LEVEL {level}"))
        .unwrap();
    conn
}

fn parse_list(v: &str) -> Vec<String> {
    v.split(',')
        .filter(|e| !e.is_empty())
        .map(str::to_string)
        .collect()
}

/// One client's history.
fn client(port: u16, level: &str, id: u64, txns: u64, round: u64) -> Vec<Txn> {
    let mut conn = connect(port, level);
    let mut rng = SmallRng::seed_from_u64(0x11_57 + id + 100 * round);
    let mut history = Vec::new();
    for t in 0..txns {
        let mut txn = Txn {
            name: format!("{id}.{t}"),
            ops: Vec::new(),
            committed: false,
        };
        conn.query_drop("BEGIN").unwrap();
        let mut failed = false;
        for n in 0..rng.gen_range(2..=4) {
            let key = rng.gen_range(0..KEYS);
            let result = if rng.gen_bool(0.5) {
                let element = format!("{id}.{t}.{n}");
                conn.query_drop(format!(
                    "UPDATE lists SET v = CONCAT(v, ',{element}') WHERE k = {key}"
                ))
                .map(|()| txn.ops.push(Op::Append(key, element)))
            } else {
                conn.query_first::<String, _>(format!("SELECT v FROM lists WHERE k = {key}"))
                    .map(|v| {
                        txn.ops
                            .push(Op::Read(key, parse_list(&v.unwrap_or_default())));
                    })
            };
            if let Err(e) = result {
                assert!(
                    matches!(&e, mysql::Error::MySqlError(m) if m.code == 1213 || m.code == 1205),
                    "{e}"
                );
                failed = true;
                break;
            }
        }
        if failed || rng.gen_ratio(1, 10) {
            conn.query_drop("ROLLBACK").unwrap();
        } else {
            match conn.query_drop("COMMIT") {
                Ok(()) => txn.committed = true,
                Err(e) => panic!("COMMIT failed: {e}"),
            }
        }
        history.push(txn);
    }
    history
}

fn check(history: &[Txn], finals: &BTreeMap<u32, Vec<String>>, level: &str) -> Vec<String> {
    let mut errors = Vec::new();
    // Who wrote each element, and every element each transaction wrote per key.
    let mut writer: HashMap<&str, usize> = HashMap::new();
    let mut appends_by_txn: HashMap<(usize, u32), HashSet<&str>> = HashMap::new();
    for (i, txn) in history.iter().enumerate() {
        for op in &txn.ops {
            if let Op::Append(k, e) = op {
                writer.insert(e, i);
                appends_by_txn.entry((i, *k)).or_default().insert(e);
            }
        }
    }
    // 1.
    for (k, list) in finals {
        let mut seen = HashSet::new();
        for e in list {
            if !seen.insert(e) {
                errors.push(format!("key {k}: {e} twice in the final list"));
            }
            match writer.get(e.as_str()) {
                Some(&i) if history[i].committed => {}
                Some(_) => errors.push(format!(
                    "key {k}: {e}, of a rolled back transaction, in the final list"
                )),
                None => errors.push(format!("key {k}: {e} was never appended")),
            }
        }
    }
    for txn in history.iter().filter(|t| t.committed) {
        for op in &txn.ops {
            if let Op::Append(k, e) = op {
                if !finals[k].contains(e) {
                    errors.push(format!("key {k}: committed append {e} is lost"));
                }
            }
        }
    }
    for (i, txn) in history.iter().enumerate() {
        let mut last_read: HashMap<u32, Vec<String>> = HashMap::new();
        for op in &txn.ops {
            match op {
                Op::Append(k, _) => {
                    last_read.remove(k);
                }
                Op::Read(k, list) => {
                    // 2.
                    let others: Vec<&String> = list
                        .iter()
                        .filter(|e| writer.get(e.as_str()) != Some(&i))
                        .collect();
                    let final_list = &finals[k];
                    if others.len() > final_list.len()
                        || others.iter().zip(final_list).any(|(a, b)| *a != b)
                    {
                        errors.push(format!(
                            "key {k}: read {list:?} is not a prefix of the final {final_list:?}"
                        ));
                    }
                    // 3.
                    for e in &others {
                        let Some(&w) = writer.get(e.as_str()) else {
                            continue;
                        };
                        if !history[w].committed {
                            errors.push(format!(
                                "key {k}: read {e} of a rolled back transaction (G1a)"
                            ));
                        }
                        if let Some(all) = appends_by_txn.get(&(w, *k)) {
                            if !all.iter().all(|x| list.iter().any(|y| y == x)) {
                                errors.push(format!("key {k}: read only part of a transaction's appends (G1b): {list:?}"));
                            }
                        }
                    }
                    // 4.
                    if level == "REPEATABLE READ" {
                        if let Some(before) = last_read.get(k) {
                            if before != list {
                                errors.push(format!(
                                    "key {k}: read {before:?} then {list:?} in one transaction"
                                ));
                            }
                        }
                    }
                    last_read.insert(*k, list.clone());
                }
            }
        }
    }
    errors
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `SHALE_LIST_APPEND_ROUNDS` histories at `level`, each on a fresh server, and checks
/// each (rules 1-5).
fn run(level: &str, name: &str) {
    let txns = env("SHALE_LIST_APPEND_TXNS", 150);
    let rounds = env("SHALE_LIST_APPEND_ROUNDS", 1);
    let mut allowed_cycles: BTreeMap<cycles::Class, usize> = BTreeMap::new();
    let mut total_committed = 0;
    for round in 0..rounds {
        let (history, finals) = one_history(level, name, txns, round);
        let committed = history.iter().filter(|t| t.committed).count();
        let appended: usize = finals.values().map(Vec::len).sum();
        assert!(committed > 0 && appended > 0);
        total_committed += committed;
        let errors = check(&history, &finals, level);
        assert!(errors.is_empty(), "{}", errors.join("\n"));
        let graph = cycles::Graph::build(&history, &finals);
        let found = cycles::cycles(&history, &finals);
        let mut classes: BTreeMap<cycles::Class, usize> = BTreeMap::new();
        for c in &found {
            *classes.entry(c.class).or_default() += 1;
        }
        println!(
            "{level}, history {round}: {} transactions ({committed} committed), {appended} \
             elements in the final lists, {} dependency edges, cycles by class: {classes:?}",
            history.len(),
            graph.edge_count(),
        );
        let forbidden: Vec<String> = found
            .iter()
            .filter(|c| cycles::forbidden(level).contains(&c.class))
            .map(|c| c.explain(&history))
            .collect();
        assert!(
            forbidden.is_empty(),
            "{level} forbids these cycles:\n{}",
            forbidden.join("\n")
        );
        for c in &found {
            if *allowed_cycles.entry(c.class).or_default() == 0 {
                println!("first {}", c.explain(&history));
            }
            *allowed_cycles.get_mut(&c.class).unwrap() += 1;
        }
    }
    println!(
        "{level}: {rounds} histories ({total_committed} committed transactions) checked; \
         cycles of allowed classes: {allowed_cycles:?}"
    );
}

/// One history at `level` from a fresh server, and the final lists.
fn one_history(
    level: &str,
    name: &str,
    txns: u64,
    round: u64,
) -> (Vec<Txn>, BTreeMap<u32, Vec<String>>) {
    let dir = support::scratch(name);
    let server = support::start_shale(&dir);
    let port = server.port;
    let mut admin = {
        let opts = mysql::OptsBuilder::new()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(port)
            .user(Some("root"))
            .pass(Some(""))
            .prefer_socket(false);
        mysql::Conn::new(opts).expect("connect")
    };
    admin.query_drop("CREATE DATABASE elle").unwrap();
    admin
        .query_drop("CREATE TABLE elle.lists (k INT PRIMARY KEY, v TEXT NOT NULL)")
        .unwrap();
    for k in 0..KEYS {
        admin
            .query_drop(format!("INSERT INTO elle.lists VALUES ({k}, '')"))
            .unwrap();
    }
    let history: Vec<Txn> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|id| scope.spawn(move || client(port, level, id, txns, round)))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let finals: BTreeMap<u32, Vec<String>> = admin
        .query::<(u32, String), _>("SELECT k, v FROM elle.lists")
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k, parse_list(&v)))
        .collect();
    (history, finals)
}

#[test]
fn list_append_history_read_committed() {
    run("READ COMMITTED", "elle-rc");
}

#[test]
fn list_append_history_repeatable_read() {
    run("REPEATABLE READ", "elle-rr");
}

/// The checker itself: a history with a lost append, a read of a rolled back element, a
/// read that is not a prefix and a non-repeatable read is refused on each count.
#[test]
fn checker_catches_anomalies() {
    let s = |v: &[&str]| v.iter().map(|e| (*e).to_string()).collect::<Vec<_>>();
    let history = vec![
        Txn {
            name: "T1".into(),
            ops: vec![Op::Append(0, "a".into())],
            committed: true,
        },
        Txn {
            name: "T2".into(),
            ops: vec![Op::Append(0, "b".into())],
            committed: true,
        },
        Txn {
            name: "T3".into(),
            ops: vec![Op::Append(0, "x".into())],
            committed: false,
        },
        Txn {
            name: "T4".into(),
            ops: vec![Op::Read(0, s(&["a", "x"])), Op::Read(0, s(&["b"]))],
            committed: true,
        },
    ];
    let finals = BTreeMap::from([(0, s(&["a"]))]);
    let errors = check(&history, &finals, "REPEATABLE READ").join("\n");
    for wanted in [
        "committed append b is lost",
        "of a rolled back transaction (G1a)",
        "is not a prefix of the final",
        "in one transaction",
    ] {
        assert!(errors.contains(wanted), "{wanted:?} not in:\n{errors}");
    }
    assert!(check(
        &history[..2],
        &BTreeMap::from([(0, s(&["a", "b"]))]),
        "READ COMMITTED"
    )
    .is_empty());
}
