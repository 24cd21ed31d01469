//! Random ops, drawn from the state of the run they are about to be applied to.

use std::collections::BTreeSet;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::Rng;

use super::run::Run;
use super::{BatchOp, IngestOp, Move, Op, K, SNAPSHOT_SLOTS};

/// The keys ops use: 12 groups of `per_group` keys sharing two-byte prefixes (and one-byte and
/// three-byte ones), keys shorter than every prefix, the empty key, long keys and bytes at both
/// ends of the alphabet; about 300 with 24 per group.
pub fn key_space(per_group: u8) -> Vec<Vec<u8>> {
    let mut keys = BTreeSet::new();
    for a in [b'a', b'b', b'c'] {
        for b in [b'a', b'b', b'c', b'd'] {
            for n in 0..per_group.min(100) {
                keys.insert(vec![a, b, b'0' + n / 10, b'0' + n % 10]);
            }
        }
    }
    for extra in [
        &b""[..],
        b"a",
        b"ab",
        b"b",
        b"c",
        b"d",
        b"aa\x00",
        b"ab\xff",
        b"bb10\x00",
        b"\x00",
        b"\xff\xff",
    ] {
        keys.insert(extra.to_vec());
    }
    // Long keys, one sharing a prefix with short ones.
    keys.insert([&b"ab05"[..], &[b'z'; 120]].concat());
    keys.insert(vec![b'b'; 300]);
    keys.into_iter().collect()
}

/// Makes random ops from the state of the run they are about to be applied to.
pub(super) struct Generator {
    pub(super) rng: SmallRng,
    pub(super) keys: Vec<Vec<u8>>,
    pub(super) next_value: u32,
    pub(super) max_value_len: u16,
    /// Whether to generate [`Op::ChangePrefix`] (only for option sets with an extractor).
    pub(super) change_prefix: bool,
}

impl Generator {
    fn key(&mut self) -> K {
        K(self.keys.choose(&mut self.rng).cloned().unwrap_or_default())
    }

    /// A key of the key space, or one just after, just before or between them.
    fn probe(&mut self) -> K {
        let mut key = self.key();
        match self.rng.gen_range(0..10) {
            0 => key.0.push(0),
            1 => {
                let len = self.rng.gen_range(0..=key.0.len());
                key.0.truncate(len);
            }
            2 => key.0.push(b'5'),
            _ => {}
        }
        key
    }

    /// A key the keyspace holds, most of the time.
    fn existing_key(&mut self, run: &Run, ks: u8) -> K {
        if let Some(data) = run.model.keyspaces.get(&ks).filter(|d| !d.is_empty()) {
            if self.rng.gen_bool(0.7) {
                let index = self.rng.gen_range(0..data.len());
                if let Some(key) = data.keys().nth(index) {
                    return K(key.clone());
                }
            }
        }
        self.key()
    }

    fn keyspace(&mut self, run: &Run) -> u8 {
        match self.rng.gen_range(0..10) {
            0 if run.handles.contains_key(&2) => 2,
            0..=3 => 1,
            _ => 0,
        }
    }

    fn value(&mut self) -> (u32, u16) {
        self.next_value += 1;
        let len = if self.rng.gen_bool(0.02) {
            0
        } else if self.rng.gen_bool(0.2) {
            self.rng.gen_range(1..=self.max_value_len)
        } else {
            self.rng.gen_range(1..=self.max_value_len / 4)
        };
        (self.next_value, len)
    }

    /// Bounds of a range deletion: mostly a few neighbouring keys, sometimes a wide span,
    /// rarely empty or reversed.
    fn range(&mut self) -> (K, K) {
        match self.rng.gen_range(0..20) {
            0 => {
                let key = self.probe();
                (key.clone(), key)
            }
            1 => {
                let (a, b) = (self.probe(), self.probe());
                (a.clone().max(b.clone()), a.min(b))
            }
            2..=5 => {
                let (a, b) = (self.probe(), self.probe());
                (a.clone().min(b.clone()), a.max(b))
            }
            _ => {
                let start = self.rng.gen_range(0..self.keys.len());
                let end = (start + self.rng.gen_range(1..8)).min(self.keys.len() - 1);
                let mut end_key = K(self.keys[end].clone());
                if self.rng.gen_bool(0.3) {
                    end_key.0.push(0);
                }
                (K(self.keys[start].clone()), end_key)
            }
        }
    }

    fn snapshot_slot(&mut self, run: &Run) -> Option<u8> {
        if run.snapshots.is_empty() || self.rng.gen_bool(0.6) {
            return None;
        }
        let slots: Vec<u8> = run.snapshots.keys().copied().collect();
        slots.choose(&mut self.rng).copied()
    }

    fn bound(&mut self) -> Option<K> {
        self.rng.gen_bool(0.4).then(|| self.probe())
    }

    fn moves(&mut self) -> Vec<Move> {
        let count = self.rng.gen_range(1..24);
        let mut moves = Vec::with_capacity(count + 1);
        moves.push(self.seek());
        // Runs of one direction with turns, and the odd re-seek.
        let mut forward = self.rng.gen_bool(0.5);
        for _ in 0..count {
            match self.rng.gen_range(0..40) {
                0 | 1 => moves.push(self.seek()),
                2 => {
                    let (value, len) = self.value();
                    moves.push(Move::PutDuring {
                        key: self.key(),
                        value,
                        len,
                    });
                }
                3 => {
                    let (start, end) = self.range();
                    moves.push(Move::DeleteRangeDuring { start, end });
                }
                4 => moves.push(Move::FlushDuring),
                5..=12 => {
                    forward = !forward;
                    moves.push(if forward { Move::Next } else { Move::Prev });
                }
                _ => moves.push(if forward { Move::Next } else { Move::Prev }),
            }
        }
        moves
    }

    fn seek(&mut self) -> Move {
        match self.rng.gen_range(0..6) {
            0 => Move::SeekToFirst,
            1 => Move::SeekToLast,
            2 | 3 => Move::Seek(self.probe()),
            _ => Move::SeekForPrev(self.probe()),
        }
    }

    /// An [`Op::Ingest`] into one or two keyspaces, one or two files each.
    fn ingest(&mut self, run: &Run) -> Op {
        let mut keyspaces: Vec<u8> = run.handles.keys().copied().collect();
        keyspaces.shuffle(&mut self.rng);
        keyspaces.truncate(self.rng.gen_range(1..=2));
        let mut files = Vec::new();
        for ks in keyspaces {
            let count = self.rng.gen_range(1..=2);
            let mut bounds: Vec<usize> = (0..count * 2)
                .map(|_| self.rng.gen_range(0..=self.keys.len()))
                .collect();
            bounds.sort_unstable();
            let mut list = Vec::new();
            // Chunks `[bounds[2i], bounds[2i+1])` of the sorted key space never overlap.
            for chunk in bounds.chunks(2) {
                let (lo, hi) = (chunk[0], chunk[1].min(chunk[0] + 40));
                if lo >= hi {
                    continue;
                }
                list.push(self.ingest_file(lo, hi));
            }
            if !list.is_empty() {
                files.push((ks, list));
            }
        }
        Op::Ingest {
            files,
            move_files: self.rng.gen_bool(0.5),
        }
    }

    /// The entries of one external table over `keys[lo..hi)` (`lo < hi`).
    fn ingest_file(&mut self, lo: usize, hi: usize) -> Vec<IngestOp> {
        let mut entries = Vec::new();
        for index in lo..hi {
            if index != lo && self.rng.gen_bool(0.5) {
                continue;
            }
            let key = K(self.keys[index].clone());
            if self.rng.gen_bool(0.8) {
                let (value, len) = self.value();
                entries.push(IngestOp::IngestPut { key, value, len });
            } else {
                entries.push(IngestOp::IngestDelete { key });
            }
        }
        if hi - lo >= 2 && self.rng.gen_bool(0.3) {
            let a = self.rng.gen_range(lo..hi - 1);
            let b = self.rng.gen_range(a + 1..hi);
            entries.push(IngestOp::IngestDeleteRange {
                start: K(self.keys[a].clone()),
                end: K(self.keys[b].clone()),
            });
        }
        entries
    }

    #[allow(clippy::too_many_lines)] // one arm per kind of op
    pub(super) fn op(&mut self, run: &Run) -> Op {
        loop {
            let roll = self.rng.gen_range(0..100);
            let ks = self.keyspace(run);
            return match roll {
                0..=21 => {
                    let (value, len) = self.value();
                    Op::Put {
                        ks,
                        key: self.key(),
                        value,
                        len,
                    }
                }
                22..=28 => Op::Delete {
                    ks,
                    key: self.existing_key(run, ks),
                },
                29..=33 => {
                    let (start, end) = self.range();
                    Op::DeleteRange { ks, start, end }
                }
                34..=41 => {
                    let count = self.rng.gen_range(1..10);
                    let entries = (0..count)
                        .map(|_| {
                            let ks = self.keyspace(run);
                            match self.rng.gen_range(0..20) {
                                0..=11 => {
                                    let (value, len) = self.value();
                                    BatchOp::BatchPut {
                                        ks,
                                        key: self.key(),
                                        value,
                                        len,
                                    }
                                }
                                12..=16 => BatchOp::BatchDelete {
                                    ks,
                                    key: self.existing_key(run, ks),
                                },
                                _ => {
                                    let (start, end) = self.range();
                                    BatchOp::BatchDeleteRange { ks, start, end }
                                }
                            }
                        })
                        .collect();
                    Op::Batch {
                        sync: self.rng.gen_bool(0.2),
                        entries,
                    }
                }
                42..=53 => Op::Get {
                    ks,
                    key: if self.rng.gen_bool(0.5) {
                        self.existing_key(run, ks)
                    } else {
                        self.probe()
                    },
                    snapshot: self.snapshot_slot(run),
                },
                54..=57 => Op::MultiGet {
                    ks,
                    keys: (0..self.rng.gen_range(1..8))
                        .map(|_| self.existing_key(run, ks))
                        .collect(),
                    snapshot: self.snapshot_slot(run),
                },
                58..=60 => Op::TakeSnapshot {
                    slot: self.rng.gen_range(0..SNAPSHOT_SLOTS),
                },
                61..=62 if !run.snapshots.is_empty() => Op::ReleaseSnapshot {
                    slot: self.rng.gen_range(0..SNAPSHOT_SLOTS),
                },
                63..=76 => {
                    let (lower, upper) = (self.bound(), self.bound());
                    Op::Iterate {
                        ks,
                        snapshot: self.snapshot_slot(run),
                        lower,
                        upper,
                        prefix: self.rng.gen_bool(0.3),
                        moves: self.moves(),
                    }
                }
                77..=79 => Op::Scan {
                    ks,
                    snapshot: self.snapshot_slot(run),
                },
                80..=83 => Op::Flush,
                84..=85 => Op::WaitIdle,
                86 => Op::CompactRange {
                    ks,
                    start: self.bound(),
                    end: self.bound(),
                },
                87..=88 => Op::Reopen,
                89 if self.rng.gen_bool(0.5) => Op::Crash,
                89 => Op::TornCrash {
                    seed: self.rng.gen(),
                },
                90 if run.handles.contains_key(&2) => Op::DropThird,
                90 => Op::CreateThird,
                91 => {
                    let (threads, writes) = (self.rng.gen_range(2..5), self.rng.gen_range(1..60));
                    let first_value = self.next_value;
                    self.next_value += u32::from(threads) * u32::from(writes) + 1;
                    Op::ConcurrentWrites {
                        ks,
                        threads,
                        writes,
                        flushes: self.rng.gen_range(0..3),
                        first_value,
                        seed: self.rng.gen(),
                    }
                }
                93..=94 => self.ingest(run),
                92 if self.change_prefix => Op::ChangePrefix {
                    len: [None, Some(1), Some(2), Some(3)][self.rng.gen_range(0..4)],
                },
                _ => continue,
            };
        }
    }
}
