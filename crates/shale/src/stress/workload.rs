//! The randomized workload one worker thread runs: puts, deletes, range deletes, batches
//! across keyspaces, point reads, iterator scans and snapshot reads of its own keys, and
//! memtable flushes (compactions follow from the small L0 trigger). Every write marks its
//! keys pending in the expected state before it is issued and resolves them once it is
//! acknowledged; every read is checked exactly, since no other thread writes these keys.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{Db, Durability, Keyspace, ReadOptions, WriteBatch, WriteOptions};

use super::expected::{ExpectedState, Slot};
use super::keys::{key, parse_value, value, KEYSPACES};

/// What the worker threads of one process share.
pub struct Workload<'a> {
    pub db: &'a Db,
    pub state: &'a ExpectedState,
    pub durability: Durability,
    /// Whether an acknowledged write is durable against the crash being tested (then the
    /// floor moves at acknowledgement, otherwise only at the thread's `Sync` checkpoints).
    pub durable_at_ack: bool,
    pub stop: &'a AtomicBool,
    pub operations: &'a AtomicU64,
}

enum Write {
    Put,
    Delete,
}

impl Workload<'_> {
    /// Runs thread `thread` until `stop` is set; `Err` describes a violation or an error.
    pub fn run_thread(&self, thread: usize, seed: u64) -> Result<(), String> {
        let mut rng =
            SmallRng::seed_from_u64(seed ^ (thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let shape = self.state.shape();
        let keyspaces: Vec<Keyspace> = KEYSPACES[..shape.keyspaces]
            .iter()
            .map(|name| {
                self.db
                    .keyspace(name)
                    .ok_or_else(|| format!("keyspace {name} is missing"))
            })
            .collect::<Result<_, _>>()?;
        let first = shape.first_key(thread);
        let per = shape.keys_per_thread;
        while !self.stop.load(Ordering::Relaxed) {
            let ks = rng.gen_range(0..shape.keyspaces);
            let k = first + rng.gen_range(0..per);
            let choice: u32 = rng.gen_range(0..100);
            match choice {
                0..=39 | 95.. => self.write(&mut rng, &keyspaces, &[(ks, k, Write::Put)])?,
                40..=49 => self.write(&mut rng, &keyspaces, &[(ks, k, Write::Delete)])?,
                50..=53 => {
                    let end = (k + rng.gen_range(1..=8)).min(first + per);
                    self.delete_range(&mut rng, &keyspaces[ks], ks, k, end)?;
                }
                54..=68 => {
                    let mut entries: Vec<(usize, usize, Write)> = Vec::new();
                    for _ in 0..rng.gen_range(2..=6) {
                        let ks = rng.gen_range(0..shape.keyspaces);
                        let k = first + rng.gen_range(0..per);
                        if !entries.iter().any(|e| e.0 == ks && e.1 == k) {
                            let op = if rng.gen_bool(0.25) {
                                Write::Delete
                            } else {
                                Write::Put
                            };
                            entries.push((ks, k, op));
                        }
                    }
                    self.write(&mut rng, &keyspaces, &entries)?;
                }
                69..=83 => self.check_get(&keyspaces[ks], ks, k, None)?,
                84..=88 => self.check_scan(&keyspaces[ks], ks, first, first + per)?,
                89..=93 => self.check_snapshot(&mut rng, &keyspaces, ks, first, per)?,
                94 => self.db.flush().map_err(|e| format!("flush: {e}"))?,
            }
            self.operations.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Write options of the next write: mostly the database's durability, and now and then
    /// an explicit `Sync` write that is this thread's durability checkpoint.
    fn write_options(&self, rng: &mut SmallRng) -> (WriteOptions, bool) {
        if self.durability != Durability::Sync && rng.gen_ratio(1, 16) {
            (WriteOptions::sync(), true)
        } else {
            (WriteOptions::default(), false)
        }
    }

    fn write(
        &self,
        rng: &mut SmallRng,
        keyspaces: &[Keyspace],
        entries: &[(usize, usize, Write)],
    ) -> Result<(), String> {
        let shape = self.state.shape();
        let thread = entries[0].1 / shape.keys_per_thread;
        let indexes: Vec<usize> = entries.iter().map(|e| shape.slot_of(e.0, e.1).1).collect();
        let deletes: Vec<bool> = entries
            .iter()
            .map(|e| matches!(e.2, Write::Delete))
            .collect();
        let ids = self.state.lock(thread).begin(&indexes, &deletes)?;
        let mut batch = WriteBatch::new();
        for ((ks, k, op), id) in entries.iter().zip(&ids) {
            let ks_id = keyspaces[*ks].id();
            match op {
                Write::Put => batch.put(ks_id, &key(*k), &value(*ks, *k, *id)),
                Write::Delete => batch.delete(ks_id, &key(*k)),
            }
            .map_err(|e| format!("building a batch: {e}"))?;
        }
        self.issue(rng, thread, batch, &indexes)
    }

    fn delete_range(
        &self,
        rng: &mut SmallRng,
        keyspace: &Keyspace,
        ks: usize,
        start: usize,
        end: usize,
    ) -> Result<(), String> {
        let shape = self.state.shape();
        let thread = start / shape.keys_per_thread;
        let indexes: Vec<usize> = (start..end).map(|k| shape.slot_of(ks, k).1).collect();
        self.state
            .lock(thread)
            .begin(&indexes, &vec![true; indexes.len()])?;
        let mut batch = WriteBatch::new();
        batch
            .delete_range(keyspace.id(), &key(start), &key(end))
            .map_err(|e| format!("building a range deletion: {e}"))?;
        self.issue(rng, thread, batch, &indexes)
    }

    fn issue(
        &self,
        rng: &mut SmallRng,
        thread: usize,
        batch: WriteBatch,
        indexes: &[usize],
    ) -> Result<(), String> {
        let (options, checkpoint) = self.write_options(rng);
        self.db
            .write(batch, &options)
            .map_err(|e| format!("write failed: {e}"))?;
        let mut slots = self.state.lock(thread);
        slots.acknowledge(indexes, self.durable_at_ack || checkpoint)?;
        if checkpoint {
            slots.checkpoint()?;
        }
        Ok(())
    }

    /// The exact content `slot` says the key has now (no write of it is in flight).
    fn exact(slot: Slot) -> Option<u32> {
        (!slot.is_deleted()).then_some(slot.latest)
    }

    fn read_id(ks: usize, k: usize, read: Option<Vec<u8>>) -> Result<Option<u32>, String> {
        read.map(|bytes| {
            parse_value(ks, k, &bytes).map_err(|e| {
                format!(
                    "violation: keyspace {:?} key {:?}: {e}",
                    KEYSPACES[ks],
                    String::from_utf8_lossy(&key(k))
                )
            })
        })
        .transpose()
    }

    fn check_get(
        &self,
        keyspace: &Keyspace,
        ks: usize,
        k: usize,
        expected: Option<(Option<u32>, &ReadOptions)>,
    ) -> Result<(), String> {
        let shape = self.state.shape();
        let (thread, index) = shape.slot_of(ks, k);
        let (want, read) = if let Some((want, options)) = expected {
            (want, keyspace.get_with(&key(k), options))
        } else {
            // No expected-state lock may be held across an engine call: a crash-image hook
            // takes those locks on a thread that may hold the engine's.
            let want = Self::exact(self.state.lock(thread).get(index));
            (want, keyspace.get(&key(k)))
        };
        let got = Self::read_id(ks, k, read.map_err(|e| format!("get: {e}"))?)?;
        if got != want {
            return Err(format!(
                "violation: keyspace {:?} key {:?}: a read while running expected {} and found {}",
                KEYSPACES[ks],
                String::from_utf8_lossy(&key(k)),
                describe(want),
                describe(got)
            ));
        }
        Ok(())
    }

    fn check_scan(
        &self,
        keyspace: &Keyspace,
        ks: usize,
        start: usize,
        end: usize,
    ) -> Result<(), String> {
        let shape = self.state.shape();
        let thread = start / shape.keys_per_thread;
        let expected: Vec<(usize, u32)> = {
            let slots = self.state.lock(thread);
            (start..end)
                .filter_map(|k| Self::exact(slots.get(shape.slot_of(ks, k).1)).map(|id| (k, id)))
                .collect()
        };
        let options = ReadOptions {
            lower_bound: Some(key(start)),
            upper_bound: Some(key(end)),
            ..ReadOptions::default()
        };
        let mut iter = keyspace
            .iterator(options)
            .map_err(|e| format!("iterator: {e}"))?;
        iter.seek_to_first();
        let mut got = Vec::new();
        while iter.valid() {
            let k = super::keys::parse_key(iter.key()).ok_or_else(|| {
                format!(
                    "violation: a scan of keyspace {:?} returned unknown key {:?}",
                    KEYSPACES[ks],
                    String::from_utf8_lossy(iter.key())
                )
            })?;
            let id = Self::read_id(ks, k, Some(iter.value().to_vec()))?.unwrap_or_default();
            got.push((k, id));
            iter.next();
        }
        iter.status().map_err(|e| format!("iterator: {e}"))?;
        if got != expected {
            let at = got
                .iter()
                .zip(&expected)
                .position(|(a, b)| a != b)
                .unwrap_or(got.len().min(expected.len()));
            return Err(format!(
                "violation: a scan of keyspace {:?} keys {:?}..{:?} differs at entry {at}: expected {:?}, found {:?} (key number, value id)",
                KEYSPACES[ks],
                String::from_utf8_lossy(&key(start)),
                String::from_utf8_lossy(&key(end)),
                expected.get(at),
                got.get(at)
            ));
        }
        Ok(())
    }

    /// Takes a snapshot, overwrites a few keys, and checks the snapshot still reads the old
    /// contents.
    fn check_snapshot(
        &self,
        rng: &mut SmallRng,
        keyspaces: &[Keyspace],
        ks: usize,
        first: usize,
        per: usize,
    ) -> Result<(), String> {
        let shape = self.state.shape();
        let thread = first / per;
        let keys: Vec<usize> = (0..3).map(|_| first + rng.gen_range(0..per)).collect();
        let before: Vec<Option<u32>> = {
            let slots = self.state.lock(thread);
            keys.iter()
                .map(|&k| Self::exact(slots.get(shape.slot_of(ks, k).1)))
                .collect()
        };
        let options = ReadOptions {
            snapshot: Some(self.db.snapshot()),
            ..ReadOptions::default()
        };
        let mut entries: Vec<(usize, usize, Write)> = Vec::new();
        for &k in &keys {
            if !entries.iter().any(|e| e.1 == k) {
                entries.push((ks, k, Write::Put));
            }
        }
        self.write(rng, keyspaces, &entries)?;
        for (&k, want) in keys.iter().zip(before) {
            self.check_get(&keyspaces[ks], ks, k, Some((want, &options)))?;
        }
        Ok(())
    }
}

fn describe(found: Option<u32>) -> String {
    found.map_or_else(
        || "no value".to_owned(),
        |id| format!("the value of id {id}"),
    )
}
