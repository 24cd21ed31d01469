//! TTL values (docs/format/ttl.md): in a keyspace with a `ttl`, every stored value is the
//! user's value followed by its write time, a u64 little-endian count of seconds since the
//! Unix epoch, appended by the write path before the WAL. Reads strip it and hide values whose
//! write time is older than the TTL; compaction drops them.
//!
//! Invariant: an entry expired at time `t` stays expired at every later time, and (write
//! times following sequence numbers) every older version of its key is expired too, so hiding
//! or dropping an expired value never shows an older one.

use crate::error::{Error, Result};

/// Bytes of the write time at the end of a stored value.
pub(crate) const WRITE_TIME_LEN: usize = 8;

/// The stored form of `value` written at `now`.
pub(crate) fn with_write_time(value: &[u8], now: u64) -> Vec<u8> {
    let mut stored = Vec::with_capacity(value.len() + WRITE_TIME_LEN);
    stored.extend_from_slice(value);
    stored.extend_from_slice(&now.to_le_bytes());
    stored
}

/// The user's value and write time of a stored value; `None` when it is too short to carry a
/// write time (a damaged table, or a value written without TTL).
pub(crate) fn split(stored: &[u8]) -> Option<(&[u8], u64)> {
    let at = stored.len().checked_sub(WRITE_TIME_LEN)?;
    let (value, time) = stored.split_at(at);
    let time = u64::from_le_bytes(time.try_into().ok()?);
    Some((value, time))
}

/// The write times that are expired at `now` with `ttl` seconds: those below the cutoff.
pub(crate) fn cutoff(ttl: u64, now: u64) -> u64 {
    now.saturating_sub(ttl)
}

/// The error for a stored value without a write time.
pub(crate) fn missing_write_time(key: &[u8]) -> Error {
    Error::Corruption {
        file: "<read>".into(),
        offset: 0,
        detail: format!(
            "the value of key {} in a keyspace with a TTL is shorter than its {WRITE_TIME_LEN}-byte \
             write time; verify the database's tables",
            shale_sst::printable(key)
        ),
    }
}

/// The user's value of a stored value read at `now`: `None` once expired.
pub(crate) fn visible(key: &[u8], stored: Vec<u8>, ttl: u64, now: u64) -> Result<Option<Vec<u8>>> {
    let (value, time) = split(&stored).ok_or_else(|| missing_write_time(key))?;
    if time < cutoff(ttl, now) {
        return Ok(None);
    }
    let len = value.len();
    let mut stored = stored;
    stored.truncate(len);
    Ok(Some(stored))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_time_round_trips_and_expiry_is_by_cutoff() {
        let stored = with_write_time(b"v", 1000);
        assert_eq!(stored.len(), 1 + WRITE_TIME_LEN);
        assert_eq!(split(&stored), Some((&b"v"[..], 1000)));
        assert_eq!(split(b"short"), None);
        // Written at 1000 with a TTL of 10: visible through 1010, expired from 1011.
        assert_eq!(
            visible(b"k", stored.clone(), 10, 1010).unwrap(),
            Some(b"v".to_vec())
        );
        assert_eq!(visible(b"k", stored, 10, 1011).unwrap(), None);
        assert!(visible(b"k", b"x".to_vec(), 10, 0)
            .unwrap_err()
            .to_string()
            .contains("write time"));
    }
}
