//! Reading one WAL for repair: every record up to the first damage.

use std::path::Path;

use crate::batch::WriteBatch;
use crate::error::Result;
use crate::wal::{LogEnd, LogReader, RecoveryMode};

/// Reads WAL `number` up to its first damage (and never past `recorded`, where an earlier
/// open sealed it), appending its write batches to `batches`. Returns the records read, where
/// the last one ends, and the damage that stopped reading, if any.
pub(super) fn read_wal(
    fs: &dyn shale_fs::FileSystem,
    path: &Path,
    number: u64,
    recorded: Option<u64>,
    batches: &mut Vec<(u64, WriteBatch)>,
) -> Result<(u64, u64, Option<String>)> {
    let file = fs.open_read(path)?;
    let mut reader = match LogReader::with_end(file, number, RecoveryMode::PointInTime, recorded) {
        Ok(reader) => reader,
        Err(e) if e.is_corruption() => return Ok((0, 0, Some(e.to_string()))),
        Err(e) => return Err(e),
    };
    let mut records = 0;
    loop {
        let record = match reader.read_record() {
            Ok(Some(record)) => record,
            Ok(None) => break,
            Err(e) if e.is_corruption() => {
                return Ok((records, reader.last_record_end(), Some(e.to_string())))
            }
            Err(e) => return Err(e),
        };
        let (bytes, offset) = record;
        match WriteBatch::from_wal_record(bytes, reader.format_version(), path, offset) {
            Ok(batch) => {
                batches.push((number, batch));
                records += 1;
            }
            Err(e) => return Ok((records, offset, Some(e.to_string()))),
        }
    }
    let end = reader.last_record_end();
    let damage = match reader.end() {
        Some(LogEnd::TornTail { offset, bytes }) => Some(format!(
            "corruption in {} at offset {offset}: torn or damaged tail, {bytes} bytes not \
             salvaged",
            path.display()
        )),
        Some(LogEnd::Corruption { offset, detail }) => Some(format!(
            "corruption in {} at offset {offset}: {detail}; the records after it were not \
             salvaged",
            path.display()
        )),
        _ => None,
    };
    Ok((records, end, damage))
}
