//! What running compactions claim (`DbState::compaction_claims`), so that several compactions
//! of one keyspace run at once when their files and output ranges are apart, as `RocksDB`
//! runs several compactions of one column family (docs/compaction.md, "Compactions at once").
//!
//! A compaction claims, from when it is picked until its edit is installed or it failed: its
//! input files (those of its output level included: `RocksDB`'s `being_compacted`), and the
//! level and user-key range it writes its outputs to (the union of its inputs' ranges, which
//! bounds every output key).
//!
//! Invariants (kept here: a compaction starts only through [`CompactionClaims::claim`], after
//! the picker checked it against [`CompactionClaims::busy`], all under the state lock):
//! 1. No file is input to two running compactions.
//! 2. Two running compactions never write overlapping user-key ranges into the same level of
//!    a keyspace.
//! 3. A running compaction's inputs plus the files of its output level that overlap them are
//!    all claimed by it: no other compaction deletes or rewrites them, so the Version it was
//!    picked from still describes them when it installs, and its edit deletes only its own
//!    inputs. Whatever else lands meanwhile cannot fall in its output range at its output
//!    level or below it (a flush adds L0 files above it; ingestion keeps out of every
//!    claimed output range, `crate::ingest`), so its outputs keep levels non-overlapping and
//!    its `drop_tombstones` stays true.
//! 4. At most one compaction from L0 runs per keyspace: L0 files overlap each other, and a
//!    compaction takes every L0 file it sees, so a second would take newer files past the
//!    first's and could reorder versions of a key.
//! 5. Trivial moves claim like merges (they are one edit, but picked and installed the same
//!    way).
//! 6. A manual compaction step of a keyspace (`Db::compact_range`) runs alone in it: it
//!    holds the keyspace ([`CompactionClaims::hold_for_manual`]) while it waits for the
//!    running compactions of the keyspace to end and while it runs, and no other compaction
//!    of a held keyspace starts (`RocksDB`'s `exclusive_manual_compaction`, its default).
//!
//! A change of base level (dynamic level bytes) while compactions run stays correct: a
//! compaction from L0 into the old base level finds the levels between L0 and it empty when
//! it installs, as only a compaction from L0 writes there (invariant 4) and ingestion keeps
//! out of its output range; a deeper compaction into the old base level's next level is
//! `Ln -> Ln+1` whatever the base.

use std::collections::BTreeMap;

use shale_sst::Comparator;

use super::picker::{Busy, Compaction, OutputRange};

/// The claims of one running compaction.
#[derive(Debug)]
struct Claim {
    keyspace: u32,
    start_level: usize,
    /// Every input file's number.
    files: Vec<u64>,
    /// `None` for a compaction without inputs (never picked; kept total).
    output: Option<OutputRange>,
}

/// Identifies one running compaction's claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ClaimId(u64);

/// Every running compaction's claims, and the keyspaces held by a manual compaction.
#[derive(Debug, Default)]
pub(crate) struct CompactionClaims {
    running: BTreeMap<ClaimId, Claim>,
    next_id: u64,
    /// Keyspaces held by manual compaction steps, with how many hold each (invariant 6).
    manual: BTreeMap<u32, usize>,
}

impl CompactionClaims {
    /// What the running compactions of `keyspace` claim, for the picker.
    pub(crate) fn busy(&self, keyspace: u32) -> Busy {
        let mut busy = Busy::default();
        for claim in self.running.values().filter(|c| c.keyspace == keyspace) {
            busy.files.extend(claim.files.iter().copied());
            busy.outputs.extend(claim.output.iter().cloned());
            busy.level0 |= claim.start_level == 0;
        }
        busy
    }

    /// Records the claims of `compaction`, which the caller has checked against
    /// [`Self::busy`] (invariants 1 to 4), and returns what releases them.
    pub(crate) fn claim(&mut self, cmp: &dyn Comparator, compaction: &Compaction) -> ClaimId {
        debug_assert!(
            self.busy(compaction.keyspace).allows(cmp, compaction),
            "compaction {compaction} conflicts with a running one"
        );
        let id = ClaimId(self.next_id);
        self.next_id += 1;
        self.running.insert(
            id,
            Claim {
                keyspace: compaction.keyspace,
                start_level: compaction.start_level,
                files: compaction.all_inputs().map(|(_, f)| f.number).collect(),
                output: compaction.output_range(cmp),
            },
        );
        id
    }

    /// The compaction `id` ended (installed, failed or stopped).
    pub(crate) fn release(&mut self, id: ClaimId) {
        self.running.remove(&id);
    }

    /// Whether no compaction runs.
    pub(crate) fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// How many compactions run (`Db::running_compactions`, for tests).
    #[cfg(feature = "testing")]
    pub(crate) fn running(&self) -> usize {
        self.running.len()
    }

    /// Whether a compaction of `keyspace` runs.
    pub(crate) fn runs_in(&self, keyspace: u32) -> bool {
        self.running.values().any(|c| c.keyspace == keyspace)
    }

    /// The ranges running compactions of `keyspace` write their outputs to.
    pub(crate) fn output_ranges(&self, keyspace: u32) -> impl Iterator<Item = &OutputRange> {
        self.running
            .values()
            .filter(move |c| c.keyspace == keyspace)
            .filter_map(|c| c.output.as_ref())
    }

    /// A manual compaction step starts waiting for `keyspace` (invariant 6).
    pub(crate) fn hold_for_manual(&mut self, keyspace: u32) {
        *self.manual.entry(keyspace).or_default() += 1;
    }

    /// The manual compaction step that held `keyspace` ended.
    pub(crate) fn release_manual(&mut self, keyspace: u32) {
        if let Some(count) = self.manual.get_mut(&keyspace) {
            *count -= 1;
            if *count == 0 {
                self.manual.remove(&keyspace);
            }
        }
    }

    /// Whether a manual compaction step holds `keyspace`: no background or idle compaction
    /// of it starts.
    pub(crate) fn held_for_manual(&self, keyspace: u32) -> bool {
        self.manual.contains_key(&keyspace)
    }
}
