//! Checks a whole reopened database against the expected state, then settles the state on
//! what was found (writing fresh values where the database legitimately lost a suffix, so
//! that value ids stay unique per key).

use shale_engine::{Db, ReadOptions, WriteBatch, WriteOptions};

use super::expected::{Shape, Slot};
use super::keys::{key, parse_key, parse_value, value, KEYSPACES};

/// A key whose content the expected state does not allow.
#[derive(Debug)]
pub struct Violation {
    pub keyspace: String,
    pub key: String,
    pub expected: String,
    pub found: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "keyspace {:?} key {:?}: expected {}; found {}",
            self.keyspace, self.key, self.expected, self.found
        )
    }
}

fn violation(
    keyspace: usize,
    key: &[u8],
    expected: impl Into<String>,
    found: impl Into<String>,
) -> Violation {
    Violation {
        keyspace: KEYSPACES[keyspace].to_owned(),
        key: String::from_utf8_lossy(key).into_owned(),
        expected: expected.into(),
        found: found.into(),
    }
}

fn describe(found: Option<u32>) -> String {
    found.map_or_else(
        || "no value".to_owned(),
        |id| format!("the value of id {id}"),
    )
}

/// Reads every keyspace with an iterator and every key with a point read, and checks each
/// against `slots` (indexed as [`Shape::slot_of`]). Returns the value id found per slot.
pub fn check(db: &Db, shape: &Shape, slots: &[Slot]) -> Result<Vec<Option<u32>>, Violation> {
    let mut found = vec![None; shape.slots()];
    let keys = shape.threads * shape.keys_per_thread;
    for (ks, name) in KEYSPACES.iter().enumerate().take(shape.keyspaces) {
        let Some(keyspace) = db.keyspace(name) else {
            return Err(violation(
                ks,
                b"",
                "the keyspace to exist",
                "no such keyspace",
            ));
        };
        let mut iter = keyspace
            .iterator(ReadOptions::default())
            .map_err(|e| violation(ks, b"", "an iterator", e.to_string()))?;
        iter.seek_to_first();
        while iter.valid() {
            let index = parse_key(iter.key()).filter(|&k| k < keys).ok_or_else(|| {
                violation(ks, iter.key(), "no such key (never written)", "a value")
            })?;
            let id = parse_value(ks, index, iter.value())
                .map_err(|e| violation(ks, iter.key(), "a value of this key", e))?;
            found[shape.slot_of(ks, index).1] = Some(id);
            iter.next();
        }
        iter.status()
            .map_err(|e| violation(ks, b"", "a full scan", format!("iterator error: {e}")))?;
        for index in 0..keys {
            let k = key(index);
            let slot = shape.slot_of(ks, index).1;
            let read = keyspace
                .get(&k)
                .map_err(|e| violation(ks, &k, "a point read", e.to_string()))?;
            let by_get = match read {
                Some(bytes) => Some(
                    parse_value(ks, index, &bytes)
                        .map_err(|e| violation(ks, &k, "a value of this key", e))?,
                ),
                None => None,
            };
            if by_get != found[slot] {
                return Err(violation(
                    ks,
                    &k,
                    format!(
                        "a point read to agree with the scan ({})",
                        describe(found[slot])
                    ),
                    format!("{} by point read", describe(by_get)),
                ));
            }
            if !slots[slot].allows(by_get) {
                return Err(violation(ks, &k, slots[slot].to_string(), describe(by_get)));
            }
        }
    }
    Ok(found)
}

/// What settling changed.
#[derive(Debug, Default, Clone, Copy)]
pub struct Settled {
    /// Keys whose pending operation was found applied.
    pub pending_applied: u64,
    /// Keys whose pending operation was found not applied.
    pub pending_lost: u64,
    /// Keys that lost acknowledged (not yet durable) operations, within their floor.
    pub suffix_lost: u64,
}

/// Makes `slots` say exactly what `found` holds. A key that holds an older id than its
/// highest gets a fresh `Sync` write of the same content under a new id first, so an id that
/// was lost can never be mistaken for a later write. `persist(slot index, slot)` records
/// each change (pending markers first, then the settled slots).
pub fn settle(
    db: &Db,
    shape: &Shape,
    slots: &mut [Slot],
    found: &[Option<u32>],
    mut persist: impl FnMut(usize, Slot, bool) -> Result<(), String>,
) -> Result<Settled, String> {
    let mut counts = Settled::default();
    let mut batch = WriteBatch::new();
    let mut repaired = Vec::new();
    let keys = shape.threads * shape.keys_per_thread;
    for (ks, name) in KEYSPACES.iter().enumerate().take(shape.keyspaces) {
        let id = db
            .keyspace(name)
            .ok_or_else(|| format!("keyspace {name} is missing"))?
            .id();
        for index in 0..keys {
            let at = shape.slot_of(ks, index).1;
            let slot = &mut slots[at];
            let highest = slot.highest();
            let up_to_date = match found[at] {
                Some(v) => v == highest && !(slot.pending == v && slot.pending_delete),
                None => {
                    slot.last_delete == highest || (slot.pending == highest && slot.pending_delete)
                }
            };
            let holds_latest = match found[at] {
                Some(v) => v == slot.latest && !slot.is_deleted(),
                None => slot.is_deleted(),
            };
            if slot.pending != 0 && up_to_date {
                counts.pending_applied += 1;
            } else if slot.pending != 0 && holds_latest {
                counts.pending_lost += 1;
            } else if !up_to_date && !holds_latest {
                counts.suffix_lost += 1;
            }
            if up_to_date {
                *slot = slot.settled(highest, found[at].is_none());
                persist(at, *slot, false)?;
                continue;
            }
            slot.pending = highest + 1;
            slot.pending_delete = found[at].is_none();
            persist(at, *slot, true)?;
            let k = key(index);
            if found[at].is_some() {
                batch.put(id, &k, &value(ks, index, slot.pending))
            } else {
                batch.delete(id, &k)
            }
            .map_err(|e| format!("building the settling batch: {e}"))?;
            repaired.push(at);
        }
    }
    if !batch.is_empty() {
        db.write(batch, &WriteOptions::sync())
            .map_err(|e| format!("writing the settling batch: {e}"))?;
    }
    for at in repaired {
        let slot = &mut slots[at];
        *slot = slot.settled(slot.pending, slot.pending_delete);
        persist(at, *slot, false)?;
    }
    Ok(counts)
}
