//! The dependency-graph half of the list-append checker, as Jepsen's Elle builds it
//! (docs/reliability.md, "Histories: a list-append checker").
//!
//! From the committed transactions of a history and each key's final list it infers:
//! - the version order of each key: the final list, since every read is a prefix of it
//!   (main.rs checks that first); version `m` of a key is its first `m` elements;
//! - **ww** `a -> b`: `b` appended the element right after `a`'s in a key's order;
//! - **wr** `a -> b`: `b` read a version whose last element (other than its own) is `a`'s;
//! - **rw** `a -> b` (an anti-dependency): `a` read version `m` of a key and `b` appended the
//!   element that made version `m + 1`, so `a` did not see `b`'s write.
//!
//! Each edge that follows from the history is there (ww and wr between neighbours only: the
//! rest follow by transitivity). A cycle means no serial order explains what the transactions
//! saw. The graph is split into strongly connected components (Tarjan's algorithm); in each
//! the most severe cycle class is found, with a shortest example cycle:
//! 1. **G0** (write cycle): only ww edges;
//! 2. **G1c** (circular information flow): ww and wr edges, at least one wr;
//! 3. **G-single** (read skew): exactly one rw edge;
//! 4. **G2** (anti-dependency cycle, e.g. write skew): the component has a cycle but none of
//!    the classes above, so every cycle in it has two or more rw edges.
//!
//! Steps 1-3 are exact: a class is reported when and only when a cycle of that class exists
//! in the component (for G1c and G-single, a shortest path back over ww and wr edges from
//! each wr or rw edge's target). A component with a G-single cycle may hold G2 cycles too;
//! only the most severe is reported, which is what decides whether a level allows it, since
//! each level forbids a class together with every class before it.
//!
//! What the levels forbid (Adya's definitions, as Elle applies them): READ COMMITTED forbids
//! G0 and G1c (with G1a and G1b, which main.rs checks directly); snapshot isolation, which is
//! Shale's REPEATABLE READ (docs/transactions.md), forbids G-single too, and allows G2.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt::{self, Write as _};

use crate::{Op, Txn};

/// The kind of a dependency edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dep {
    Ww,
    Wr,
    Rw,
}

/// The class of a cycle, from most to least severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    G0,
    G1c,
    GSingle,
    G2,
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Class::G0 => "G0",
            Class::G1c => "G1c",
            Class::GSingle => "G-single",
            Class::G2 => "G2",
        })
    }
}

/// The cycle classes an isolation level (as Shale implements it) forbids.
pub fn forbidden(level: &str) -> &'static [Class] {
    match level {
        "READ COMMITTED" => &[Class::G0, Class::G1c],
        "REPEATABLE READ" => &[Class::G0, Class::G1c, Class::GSingle],
        other => panic!("no isolation promise known for {other}"),
    }
}

/// One edge: transaction indexes into the history, the kind and the key it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    pub dep: Dep,
    pub key: u32,
}

/// A cycle found, with its class and its edges in order (the last one ends where the first
/// begins).
#[derive(Debug, Clone)]
pub struct Cycle {
    pub class: Class,
    pub edges: Vec<Edge>,
    /// The number of transactions in the strongly connected component it was found in.
    pub component: usize,
}

impl Cycle {
    /// The cycle written out with the transactions' names and operations, for a report.
    pub fn explain(&self, history: &[Txn]) -> String {
        let mut out = format!(
            "{} (in a component of {} transactions):",
            self.class, self.component
        );
        for e in &self.edges {
            let dep = match e.dep {
                Dep::Ww => "ww",
                Dep::Wr => "wr",
                Dep::Rw => "rw",
            };
            let _ = write!(
                out,
                "\n  {} -{dep} on key {}-> {}",
                history[e.from].name, e.key, history[e.to].name
            );
        }
        for t in self.edges.iter().map(|e| e.from).collect::<BTreeSet<_>>() {
            let ops: Vec<String> = history[t]
                .ops
                .iter()
                .map(|op| match op {
                    Op::Append(k, e) => format!("append {e} to key {k}"),
                    Op::Read(k, list) => format!(
                        "read key {k}: {} elements, the last {}",
                        list.len(),
                        list.last().map_or("none", String::as_str)
                    ),
                })
                .collect();
            let _ = write!(out, "\n  {}: {}", history[t].name, ops.join("; "));
        }
        out
    }
}

/// The dependency graph of the committed transactions of `history`.
pub struct Graph {
    /// Outgoing edges per transaction (index into the history); each edge once.
    out: Vec<Vec<Edge>>,
}

impl Graph {
    /// Builds the graph from a history whose reads are prefixes of `finals` (elements no
    /// committed transaction appended, and reads that are not prefixes, are skipped: main.rs
    /// reports those).
    pub fn build(history: &[Txn], finals: &std::collections::BTreeMap<u32, Vec<String>>) -> Graph {
        let mut writer: HashMap<&str, usize> = HashMap::new();
        for (i, txn) in history.iter().enumerate().filter(|(_, t)| t.committed) {
            for op in &txn.ops {
                if let Op::Append(_, e) = op {
                    writer.insert(e, i);
                }
            }
        }
        let mut edges = BTreeSet::new();
        let mut add = |from: usize, to: usize, dep: Dep, key: u32| {
            if from != to {
                edges.insert(Edge { from, to, dep, key });
            }
        };
        for (&key, list) in finals {
            for pair in list.windows(2) {
                if let (Some(&a), Some(&b)) =
                    (writer.get(pair[0].as_str()), writer.get(pair[1].as_str()))
                {
                    add(a, b, Dep::Ww, key);
                }
            }
        }
        for (i, txn) in history.iter().enumerate().filter(|(_, t)| t.committed) {
            for op in &txn.ops {
                let Op::Read(key, list) = op else { continue };
                let Some(order) = finals.get(key) else {
                    continue;
                };
                let seen: Vec<&String> = list
                    .iter()
                    .filter(|e| writer.get(e.as_str()) != Some(&i))
                    .collect();
                let is_prefix =
                    seen.len() <= order.len() && seen.iter().zip(order).all(|(a, b)| *a == b);
                if !is_prefix {
                    continue;
                }
                if let Some(&w) = seen.last().and_then(|e| writer.get(e.as_str())) {
                    add(w, i, Dep::Wr, *key);
                }
                if let Some(&w) = order.get(seen.len()).and_then(|e| writer.get(e.as_str())) {
                    add(i, w, Dep::Rw, *key);
                }
            }
        }
        let mut out = vec![Vec::new(); history.len()];
        for e in edges {
            out[e.from].push(e);
        }
        Graph { out }
    }

    pub fn edge_count(&self) -> usize {
        self.out.iter().map(Vec::len).sum()
    }

    /// The strongly connected components with more than one transaction (Tarjan's
    /// algorithm, iterative so a long chain cannot overflow the stack).
    pub fn components(&self) -> Vec<Vec<usize>> {
        let n = self.out.len();
        let mut index = vec![usize::MAX; n];
        let mut low = vec![0; n];
        let mut on_stack = vec![false; n];
        let mut stack = Vec::new();
        let mut next = 0;
        let mut found = Vec::new();
        for root in 0..n {
            if index[root] != usize::MAX {
                continue;
            }
            // (node, position in its edge list)
            let mut work = vec![(root, 0)];
            index[root] = next;
            low[root] = next;
            next += 1;
            stack.push(root);
            on_stack[root] = true;
            while let Some(&mut (v, ref mut pos)) = work.last_mut() {
                if let Some(e) = self.out[v].get(*pos) {
                    *pos += 1;
                    let w = e.to;
                    if index[w] == usize::MAX {
                        index[w] = next;
                        low[w] = next;
                        next += 1;
                        stack.push(w);
                        on_stack[w] = true;
                        work.push((w, 0));
                    } else if on_stack[w] {
                        low[v] = low[v].min(index[w]);
                    }
                    continue;
                }
                work.pop();
                if let Some(&(parent, _)) = work.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut component = Vec::new();
                    loop {
                        let w = stack.pop().expect("v is on the stack");
                        on_stack[w] = false;
                        component.push(w);
                        if w == v {
                            break;
                        }
                    }
                    if component.len() > 1 {
                        component.sort_unstable();
                        found.push(component);
                    }
                }
            }
        }
        found
    }

    /// A shortest path from `from` to `to` over edges of the kinds `allowed`, staying inside
    /// `within`; its edges in order.
    fn shortest_path(
        &self,
        from: usize,
        to: usize,
        allowed: &[Dep],
        within: &[bool],
    ) -> Option<Vec<Edge>> {
        let mut came_by: HashMap<usize, Edge> = HashMap::new();
        let mut visited = BTreeSet::from([from]);
        let mut queue = VecDeque::from([from]);
        'search: while let Some(v) = queue.pop_front() {
            for e in &self.out[v] {
                if allowed.contains(&e.dep) && within[e.to] && visited.insert(e.to) {
                    came_by.insert(e.to, *e);
                    if e.to == to {
                        break 'search;
                    }
                    queue.push_back(e.to);
                }
            }
        }
        let mut path = Vec::new();
        let mut at = to;
        loop {
            let e = *came_by.get(&at)?;
            path.push(e);
            at = e.from;
            if at == from {
                break;
            }
        }
        path.reverse();
        Some(path)
    }

    /// The shortest cycle that starts with one of `firsts` and returns over `allowed`.
    fn shortest_cycle_through<'a>(
        &self,
        firsts: impl Iterator<Item = &'a Edge>,
        allowed: &[Dep],
        within: &[bool],
    ) -> Option<Vec<Edge>> {
        let mut best: Option<Vec<Edge>> = None;
        for first in firsts {
            if let Some(back) = self.shortest_path(first.to, first.from, allowed, within) {
                if best.as_ref().is_none_or(|b| back.len() + 1 < b.len()) {
                    let mut cycle = vec![*first];
                    cycle.extend(back);
                    best = Some(cycle);
                }
            }
        }
        best
    }

    /// The most severe cycle in `component` (module doc, steps 1-4).
    fn classify(&self, component: &[usize]) -> Cycle {
        let mut within = vec![false; self.out.len()];
        for &v in component {
            within[v] = true;
        }
        let within = &within;
        let inside = |dep: Dep| {
            component
                .iter()
                .flat_map(|&v| &self.out[v])
                .filter(move |e| e.dep == dep && within[e.to])
        };
        let searches: [(Class, Dep, &[Dep]); 4] = [
            (Class::G0, Dep::Ww, &[Dep::Ww]),
            (Class::G1c, Dep::Wr, &[Dep::Ww, Dep::Wr]),
            (Class::GSingle, Dep::Rw, &[Dep::Ww, Dep::Wr]),
            (Class::G2, Dep::Rw, &[Dep::Ww, Dep::Wr, Dep::Rw]),
        ];
        for (class, first, allowed) in searches {
            if let Some(edges) = self.shortest_cycle_through(inside(first), allowed, within) {
                return Cycle {
                    class,
                    edges,
                    component: component.len(),
                };
            }
        }
        unreachable!("a strongly connected component of two or more transactions has a cycle, and every cycle has a ww, wr or rw edge")
    }
}

/// Every component's most severe cycle, ordered by class.
pub fn cycles(
    history: &[Txn],
    finals: &std::collections::BTreeMap<u32, Vec<String>>,
) -> Vec<Cycle> {
    let graph = Graph::build(history, finals);
    let mut found: Vec<Cycle> = graph
        .components()
        .iter()
        .map(|c| graph.classify(c))
        .collect();
    found.sort_by_key(|c| (c.class, c.edges.len()));
    found
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn txn(name: &str, ops: Vec<Op>) -> Txn {
        Txn {
            name: name.into(),
            ops,
            committed: true,
        }
    }

    fn append(k: u32, e: &str) -> Op {
        Op::Append(k, e.into())
    }

    fn read(k: u32, list: &[&str]) -> Op {
        Op::Read(k, list.iter().map(|e| (*e).to_string()).collect())
    }

    fn lists(lists: &[(u32, &[&str])]) -> BTreeMap<u32, Vec<String>> {
        lists
            .iter()
            .map(|(k, l)| (*k, l.iter().map(|e| (*e).to_string()).collect()))
            .collect()
    }

    fn classes(history: &[Txn], finals: &BTreeMap<u32, Vec<String>>) -> Vec<Class> {
        cycles(history, finals).iter().map(|c| c.class).collect()
    }

    #[test]
    fn a_serializable_history_has_no_cycle() {
        // T1 appends to both keys; T2 reads both after it and appends; T3 reads both before.
        let history = vec![
            txn("T1", vec![append(0, "a"), append(1, "b")]),
            txn("T2", vec![read(0, &["a"]), read(1, &["b"]), append(0, "c")]),
            txn("T3", vec![read(0, &[]), read(1, &[])]),
            Txn {
                committed: false,
                ..txn("T4", vec![read(0, &["a", "c"]), append(1, "x")])
            },
        ];
        let finals = lists(&[(0, &["a", "c"]), (1, &["b"])]);
        let graph = Graph::build(&history, &finals);
        // ww T1->T2 (key 0); wr T1->T2 (both keys); rw T3->T1 (both keys). Nothing of T4's.
        assert_eq!(graph.edge_count(), 5, "{:?}", graph.out);
        assert!(classes(&history, &finals).is_empty());
    }

    #[test]
    fn g0_write_cycle() {
        // T1 is before T2 on key 0 and after it on key 1.
        let history = vec![
            txn("T1", vec![append(0, "a"), append(1, "d")]),
            txn("T2", vec![append(0, "b"), append(1, "c")]),
        ];
        let finals = lists(&[(0, &["a", "b"]), (1, &["c", "d"])]);
        let found = cycles(&history, &finals);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].class, Class::G0);
        assert_eq!(found[0].edges.len(), 2);
        assert!(found[0].edges.iter().all(|e| e.dep == Dep::Ww));
        assert!(forbidden("READ COMMITTED").contains(&Class::G0));
    }

    #[test]
    fn g1c_circular_information_flow() {
        // T2 reads T1's append, and T1 reads T2's.
        let history = vec![
            txn("T1", vec![append(0, "a"), read(1, &["b"])]),
            txn("T2", vec![append(1, "b"), read(0, &["a"])]),
        ];
        let finals = lists(&[(0, &["a"]), (1, &["b"])]);
        assert_eq!(classes(&history, &finals), [Class::G1c]);
        assert!(forbidden("READ COMMITTED").contains(&Class::G1c));
    }

    #[test]
    fn g1c_through_a_write_edge() {
        // T1 -ww-> T2 on key 0, T2 -wr-> T1 on key 1.
        let history = vec![
            txn("T1", vec![append(0, "a"), read(1, &["b"])]),
            txn("T2", vec![append(0, "c"), append(1, "b")]),
        ];
        let finals = lists(&[(0, &["a", "c"]), (1, &["b"])]);
        let found = cycles(&history, &finals);
        assert_eq!(found[0].class, Class::G1c);
        let deps: BTreeSet<Dep> = found[0].edges.iter().map(|e| e.dep).collect();
        assert_eq!(deps, BTreeSet::from([Dep::Ww, Dep::Wr]));
    }

    #[test]
    fn g_single_read_skew() {
        // T1 reads key 0 before T2's append but key 1 after it.
        let history = vec![
            txn("T1", vec![read(0, &[]), read(1, &["y"])]),
            txn("T2", vec![append(0, "x"), append(1, "y")]),
        ];
        let finals = lists(&[(0, &["x"]), (1, &["y"])]);
        let found = cycles(&history, &finals);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].class, Class::GSingle);
        assert_eq!(
            found[0].edges.iter().filter(|e| e.dep == Dep::Rw).count(),
            1
        );
        assert!(forbidden("REPEATABLE READ").contains(&Class::GSingle));
        assert!(!forbidden("READ COMMITTED").contains(&Class::GSingle));
        assert!(found[0].explain(&history).contains("T1 -rw on key 0-> T2"));
    }

    #[test]
    fn g2_write_skew() {
        // Each reads the key the other appends to, before the other's append.
        let history = vec![
            txn("T1", vec![read(0, &[]), append(1, "b")]),
            txn("T2", vec![read(1, &[]), append(0, "a")]),
        ];
        let finals = lists(&[(0, &["a"]), (1, &["b"])]);
        let found = cycles(&history, &finals);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].class, Class::G2);
        assert!(found[0].edges.iter().all(|e| e.dep == Dep::Rw));
        assert!(!forbidden("REPEATABLE READ").contains(&Class::G2));
    }

    #[test]
    fn the_most_severe_class_of_a_component_and_a_shortest_cycle_are_reported() {
        // T1, T2, T3 form a G2 ring (three rw edges); T1 and T2 also have a G-single (T1
        // read key 3 before T2's append, and T2 appended after T1 on key 4). And a separate
        // G0 pair (T4, T5).
        let history = vec![
            txn(
                "T1",
                vec![read(0, &[]), append(1, "b"), read(3, &[]), append(4, "p")],
            ),
            txn(
                "T2",
                vec![read(1, &[]), append(2, "c"), append(3, "z"), append(4, "q")],
            ),
            txn("T3", vec![read(2, &[]), append(0, "a")]),
            txn("T4", vec![append(5, "m"), append(6, "o")]),
            txn("T5", vec![append(5, "n"), append(6, "l")]),
        ];
        let finals = lists(&[
            (0, &["a"]),
            (1, &["b"]),
            (2, &["c"]),
            (3, &["z"]),
            (4, &["p", "q"]),
            (5, &["m", "n"]),
            (6, &["l", "o"]),
        ]);
        let found = cycles(&history, &finals);
        let summary: Vec<(Class, usize, usize)> = found
            .iter()
            .map(|c| (c.class, c.edges.len(), c.component))
            .collect();
        assert_eq!(summary, [(Class::G0, 2, 2), (Class::GSingle, 2, 3)]);
        // The G2 ring alone is G2.
        let ring = lists(&[(0, &["a"]), (1, &["b"]), (2, &["c"])]);
        let history: Vec<Txn> = history[..3]
            .iter()
            .map(|t| Txn {
                ops: t
                    .ops
                    .iter()
                    .filter(|o| !matches!(o, Op::Append(3 | 4, _) | Op::Read(3, _)))
                    .cloned()
                    .collect(),
                ..t.clone()
            })
            .collect();
        let found = cycles(&history, &ring);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].class, found[0].edges.len()), (Class::G2, 3));
    }

    #[test]
    fn own_appends_and_aborted_transactions_make_no_edges() {
        // T1 appends then reads its own element: no self edge. T2 read key 0 before T1 and
        // committed; T3 (aborted) read T1's element and appended to key 1, where T2 read it.
        let history = vec![
            txn("T1", vec![append(0, "a"), read(0, &["a"])]),
            txn("T2", vec![read(0, &[]), read(1, &[])]),
            Txn {
                committed: false,
                ..txn("T3", vec![read(0, &["a"]), append(1, "x")])
            },
        ];
        let finals = lists(&[(0, &["a"]), (1, &[])]);
        let graph = Graph::build(&history, &finals);
        assert_eq!(
            graph.out.concat(),
            [Edge {
                from: 1,
                to: 0,
                dep: Dep::Rw,
                key: 0
            }]
        );
        assert!(classes(&history, &finals).is_empty());
    }

    #[test]
    fn a_long_chain_does_not_overflow_the_stack() {
        // 100,000 transactions appending to one key in turn: a chain of ww edges, no cycle.
        let n = 100_000;
        let elements: Vec<String> = (0..n).map(|i| format!("e{i}")).collect();
        let history: Vec<Txn> = (0..n)
            .map(|i| Txn {
                name: format!("T{i}"),
                ops: vec![Op::Append(0, elements[i].clone())],
                committed: true,
            })
            .collect();
        let finals = BTreeMap::from([(0, elements)]);
        assert!(cycles(&history, &finals).is_empty());
    }
}
