//! What `shale serve` keeps in the data directory besides the database: the first start's root
//! account and its password file, and the PID file.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use rand::distributions::{Alphanumeric, DistString as _};
use shale_server::{hash_password, NATIVE_PASSWORD};
use shale_sql::{Instance, UserRecord};

use crate::output::Failure;

pub const ROOT_PASSWORD_FILE: &str = "root-password";
const PID_FILE: &str = "shale.pid";

/// Creates `root@localhost` if there is no such account yet; returns the generated password.
/// `mysql_native_password` because every client supports it without TLS.
pub fn ensure_root(
    instance: &Instance,
    datadir: &Path,
    insecure: bool,
) -> Result<Option<String>, Failure> {
    let existing = instance
        .lookup_user("root", "localhost")
        .map_err(|e| Failure::error(format!("reading the accounts: {e}")))?;
    if existing.is_some() {
        return Ok(None);
    }
    let password = if insecure {
        String::new()
    } else {
        Alphanumeric.sample_string(&mut rand::thread_rng(), 20)
    };
    if !insecure {
        // Written before the account exists, so a crash in between cannot lock anyone out.
        let path = datadir.join(ROOT_PASSWORD_FILE);
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| Failure::error(format!("cannot write {}: {e}", path.display())))?;
        writeln!(file, "{password}")
            .and_then(|()| file.sync_all())
            .map_err(|e| Failure::error(format!("cannot write {}: {e}", path.display())))?;
    }
    instance
        .put_user(&UserRecord {
            user: "root".into(),
            host: "localhost".into(),
            plugin: NATIVE_PASSWORD.into(),
            authentication_string: hash_password(NATIVE_PASSWORD, &password),
        })
        .map_err(|e| Failure::error(format!("creating root@localhost: {e}")))?;
    instance
        .grant_all("root", "localhost")
        .map_err(|e| Failure::error(format!("granting root@localhost: {e}")))?;
    Ok((!insecure).then_some(password))
}

/// `<datadir>/shale.pid`, removed when dropped.
#[derive(Debug)]
pub struct PidFile {
    path: PathBuf,
}

impl PidFile {
    pub fn write(datadir: &Path) -> Result<PidFile, Failure> {
        let path = datadir.join(PID_FILE);
        std::fs::write(&path, format!("{}\n", std::process::id()))
            .map_err(|e| Failure::error(format!("cannot write {}: {e}", path.display())))?;
        Ok(PidFile { path })
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
