//! What repair sets aside and when it moves it: the plan of files to move into `lost/`, the
//! journal that records it (journal.rs), the accounting of what earlier repairs set aside,
//! and the commit that makes the new MANIFEST live before anything moves (module invariant 2
//! of repair/mod.rs).

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::version::{
    manifest_file_name, parse_manifest_file_name, write_current, write_fresh_manifest, VersionEdit,
    CURRENT_FILE_NAME,
};
use crate::wal::format::parse_log_file_name;

use super::{
    file_name, journal, read_whole, table_number, LostFile, Repair, LOST_DIR_NAME, NUM_LEVELS,
    STAGING_DIR_NAME,
};

impl Repair<'_> {
    /// Plans to move `name` into `lost/` (under a fresh name if one is taken) once the new
    /// MANIFEST is live, and records why. A table's bytes count as lost data; callers adjust
    /// [`LostFile::data_lost`] for other files that held data.
    pub(super) fn set_aside(&mut self, name: &str, reason: String) -> Result<()> {
        let fs = &*self.options.file_system;
        let bytes = fs.size(&self.dir.join(name)).unwrap_or(0);
        let lost = self.dir.join(LOST_DIR_NAME);
        let mut to = name.to_owned();
        let mut attempt = 1;
        while self.claimed.contains(&to) || fs.exists(&lost.join(&to))? {
            to = format!("{name}.{attempt}");
            attempt += 1;
        }
        self.claimed.insert(to.clone());
        self.pending.push((name.to_owned(), lost.join(&to)));
        self.report.lost.push(LostFile {
            name: name.to_owned(),
            moved_to: Some(lost.join(&to)),
            bytes,
            data_lost: if table_number(name).is_some() {
                bytes
            } else {
                0
            },
            earlier: false,
            obsolete: false,
            reason,
        });
        Ok(())
    }

    /// Reads every journal in `lost/` (claiming the destinations they name) and removes what
    /// an interrupted repair left in the staging directory.
    pub(super) fn read_journals(&mut self) -> Result<()> {
        let fs = &*self.options.file_system;
        let lost = self.dir.join(LOST_DIR_NAME);
        if !fs.exists(&lost)? {
            return Ok(());
        }
        let staging = lost.join(STAGING_DIR_NAME);
        if fs.exists(&staging)? {
            for name in fs.list(&staging)? {
                fs.remove(&staging.join(name))?;
            }
            fs.sync_dir(&staging)?;
        }
        for name in fs.list(&lost)? {
            if name
                .strip_suffix(".tmp")
                .and_then(journal::parse_journal_name)
                .is_some()
            {
                // A journal an interrupted repair did not finish writing: it committed nothing.
                fs.remove(&lost.join(&name))?;
                continue;
            }
            let Some(number) = journal::parse_journal_name(&name) else {
                continue;
            };
            let path = lost.join(&name);
            let bytes = read_whole(fs, &path)?;
            let entries = journal::decode(&String::from_utf8_lossy(&bytes), &path, &lost)?;
            for entry in &entries {
                if let Some(to) = entry.moved_to.as_deref().and_then(Path::file_name) {
                    self.claimed.insert(to.to_string_lossy().into_owned());
                }
            }
            self.journals.push((number, entries));
        }
        Ok(())
    }

    /// Accounts for what earlier repairs set aside (journal invariants 1 and 2): files they
    /// moved into `lost/` join the report as earlier losses; when the live MANIFEST is the one
    /// a journal names, its missing files join the report and the files it had yet to move
    /// are moved with the reason it recorded. Files in `lost/` no journal names (moved by a
    /// repair that kept no journal) count as lost whole if they are tables or WALs.
    pub(super) fn account_for_earlier_repairs(&mut self) -> Result<()> {
        let fs = &*self.options.file_system;
        let lost = self.dir.join(LOST_DIR_NAME);
        let live = self
            .report
            .manifest_used
            .as_deref()
            .map(file_name)
            .and_then(|n| parse_manifest_file_name(&n));
        for (number, entries) in std::mem::take(&mut self.journals) {
            let committed = live == Some(number);
            for mut entry in entries {
                let moved = match &entry.moved_to {
                    Some(to) => fs.exists(to)?,
                    None => false,
                };
                let reported = self
                    .report
                    .lost
                    .iter()
                    .any(|l| l.earlier && l.name == entry.name && l.moved_to == entry.moved_to);
                if reported {
                    continue;
                }
                if moved || (committed && entry.moved_to.is_none()) {
                    entry.earlier = true;
                    self.report.lost.push(entry);
                } else if committed
                    && self.names.contains(&entry.name)
                    && !self.pending.iter().any(|(name, _)| *name == entry.name)
                {
                    if let Some(to) = entry.moved_to.clone() {
                        // The earlier repair's decision: its journal stays the record.
                        self.names.retain(|n| *n != entry.name);
                        self.pending.push((entry.name.clone(), to));
                        entry.earlier = true;
                        self.report.lost.push(entry);
                    }
                }
            }
        }
        if !fs.exists(&lost)? {
            return Ok(());
        }
        for name in fs.list(&lost)? {
            if self.claimed.contains(&name)
                || name == STAGING_DIR_NAME
                || journal::parse_journal_name(&name).is_some()
            {
                continue;
            }
            let bytes = fs.size(&lost.join(&name)).unwrap_or(0);
            let data = table_number(&name).is_some() || parse_log_file_name(&name).is_some();
            self.report.lost.push(LostFile {
                moved_to: Some(lost.join(&name)),
                name,
                bytes,
                data_lost: if data { bytes } else { 0 },
                earlier: true,
                obsolete: false,
                reason: "in lost/ from an earlier repair that recorded no reason".to_owned(),
            });
        }
        Ok(())
    }

    /// Step 5: makes the new MANIFEST live, then moves the files set aside (invariant 2).
    /// The MANIFEST is written in staging and renamed in, so that a MANIFEST in the database
    /// directory is always whole (a damaged `CURRENT` makes the next repair use the newest
    /// one). The journal is durable before anything moves.
    pub(super) fn commit(&mut self, manifest_number: u64, edit: &VersionEdit) -> Result<()> {
        let fs = &*self.options.file_system;
        let lost = self.dir.join(LOST_DIR_NAME);
        let staging = lost.join(STAGING_DIR_NAME);
        fs.create_dir_all(&staging)?;
        write_fresh_manifest(
            fs,
            &staging,
            &self.options.comparator,
            NUM_LEVELS,
            manifest_number,
            edit,
        )?;
        let journal: Vec<LostFile> = self
            .report
            .lost
            .iter()
            .filter(|l| !l.earlier)
            .cloned()
            .collect();
        shale_fs::replace_file_durably(
            fs,
            &lost.join(journal::journal_name(manifest_number)),
            journal::encode(&journal).as_bytes(),
        )?;
        let pending = std::mem::take(&mut self.pending);
        let (current, rest): (Vec<_>, Vec<_>) = pending
            .into_iter()
            .partition(|(n, _)| n == CURRENT_FILE_NAME);
        // A damaged CURRENT is moved before it is replaced, so its bytes are kept.
        self.move_files(&current)?;
        let name = manifest_file_name(manifest_number);
        fs.rename(&staging.join(&name), &self.dir.join(&name))?;
        fs.sync_dir(self.dir)?;
        write_current(fs, self.dir, manifest_number)?;
        self.move_files(&rest)
    }

    /// Moves `files` (name, destination) into `lost/`, durably.
    fn move_files(&self, files: &[(String, PathBuf)]) -> Result<()> {
        if files.is_empty() {
            return Ok(());
        }
        let fs = &*self.options.file_system;
        for (name, to) in files {
            fs.rename(&self.dir.join(name), to)?;
        }
        fs.sync_dir(&self.dir.join(LOST_DIR_NAME))?;
        fs.sync_dir(self.dir)?;
        Ok(())
    }
}
