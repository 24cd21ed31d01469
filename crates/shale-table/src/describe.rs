//! A table file's entries as rows: what `shale tool sst` prints for the index ids a file
//! describes (`file_properties.rs`).
//!
//! ```text
//! shop.items (id=1) = (id=1, name='Pear')              a row (primary key entry)
//! shop.items (id=1) deleted                            a row's deletion
//! shop.items index by_name (name~'APPLE') -> pk (id=2) a secondary index entry
//! ```
//!
//! Key columns whose encoding loses information show what it keeps: a string in a character
//! collation its weights as text after `~` (`general_ci` weights are uppercase, and trailing
//! spaces are gone); a DECIMAL `~` and its encoding in hex. TIMESTAMP values show as stored,
//! in UTC.

use shale_engine::ValueKind;

use crate::codec::key_decode::{decode_key_column, KeyColumn};
use crate::codec::row::decode_row;
use crate::codec::Reader;
use crate::error::{Error, Result};
use crate::file_properties::FileTables;
use crate::schema::{IndexDef, TableDef};
use crate::value::Value;

impl FileTables {
    /// The entry `key` (a user key) of kind `kind` with `value`, as a row or index entry of
    /// a table the file describes. `Ok(None)` when the file describes no table for the key's
    /// index id, or the kind has no row to show (a blob reference, a range tombstone); an
    /// error when the bytes do not decode against the definition.
    pub fn describe_entry(
        &self,
        key: &[u8],
        kind: ValueKind,
        value: &[u8],
    ) -> Result<Option<String>> {
        let Some(prefix) = key.first_chunk::<4>() else {
            return Ok(None);
        };
        let Some((table, index)) = self.lookup(u32::from_be_bytes(*prefix)) else {
            return Ok(None);
        };
        let deleted = match kind {
            ValueKind::Value => false,
            ValueKind::Deletion => true,
            _ => return Ok(None),
        };
        let name = format!("{}.{}", table.database, table.name);
        let mut reader = Reader::new(key, "key");
        reader.take(4)?;
        let text = match index.and_then(|i| table.indexes.get(i)) {
            None => {
                let pk = key_text(table, None, key)?;
                if deleted {
                    format!("{name} ({pk}) deleted")
                } else {
                    let row = decode_row(table, value)?;
                    let columns: Vec<String> = table
                        .columns
                        .iter()
                        .zip(&row)
                        .map(|(column, value)| format!("{}={}", column.name, show_value(value)))
                        .collect();
                    format!("{name} ({pk}) = ({})", columns.join(", "))
                }
            }
            Some(index) => {
                let columns = key_columns(&mut reader, table, index)?;
                // A unique entry without NULLs keeps the primary key in its value
                // (docs/format/table-keys.md).
                let suffix = if reader.is_empty() {
                    value
                } else {
                    reader.rest()
                };
                let mut pk_reader = Reader::new(suffix, "primary key of an index entry");
                let pk = key_columns(&mut pk_reader, table, &table.primary_key)?;
                if !pk_reader.is_empty() {
                    return Err(pk_reader.corruption("bytes after the primary key"));
                }
                let mark = if deleted { " deleted" } else { "" };
                format!("{name} index {} ({columns}) -> pk ({pk}){mark}", index.name)
            }
        };
        Ok(Some(text))
    }
}

/// The columns of `key`, a user key of `table`'s index `index` (None: the primary key),
/// in the form entries are described: `id=1`, or `name~'APPLE' -> pk (id=2)` for a
/// secondary index key that ends in its primary key. For views of row locks and deadlocks,
/// which otherwise show keys in hex. An error when the bytes do not decode.
pub fn key_text(table: &TableDef, index: Option<usize>, key: &[u8]) -> Result<String> {
    let mut reader = Reader::new(key, "key");
    reader.take(4)?;
    let secondary = index.and_then(|i| table.indexes.get(i));
    let columns = key_columns(&mut reader, table, secondary.unwrap_or(&table.primary_key))?;
    if reader.is_empty() {
        return Ok(columns);
    }
    if secondary.is_none() {
        return Err(reader.corruption("bytes after the primary key"));
    }
    let pk = key_columns(&mut reader, table, &table.primary_key)?;
    if !reader.is_empty() {
        return Err(reader.corruption("bytes after the primary key"));
    }
    Ok(format!("{columns} -> pk ({pk})"))
}

/// `name=value, ...` of `index`'s columns read from `reader`; a hidden primary key shows
/// its row id.
fn key_columns(reader: &mut Reader<'_>, table: &TableDef, index: &IndexDef) -> Result<String> {
    if index.columns.is_empty() {
        let id = u64::from_be_bytes(reader.array()?);
        return Ok(format!("row id {id}"));
    }
    let mut parts = Vec::with_capacity(index.columns.len());
    for &position in &index.columns {
        let column = table.columns.get(position).ok_or_else(|| {
            Error::Corruption(format!(
                "index '{}' of '{}' names column #{position}, which does not exist",
                index.name, table.name
            ))
        })?;
        parts.push(match decode_key_column(reader, column)? {
            KeyColumn::Value(value) => format!("{}={}", column.name, show_value(&value)),
            KeyColumn::Weights(text) => format!("{}~{}", column.name, quote(&text)),
            KeyColumn::Encoded(bytes) => format!("{}~{}", column.name, hex(&bytes)),
        });
    }
    Ok(parts.join(", "))
}

/// A value as an SQL literal: numbers bare, text and temporal values quoted, bytes that
/// are not printable UTF-8 as `0x...`.
fn show_value(value: &Value) -> String {
    match value {
        Value::Null => "NULL".to_owned(),
        Value::Int(v) => v.to_string(),
        Value::UInt(v) => v.to_string(),
        Value::Double(v) => v.to_string(),
        Value::Decimal(d) => d.to_string(),
        Value::DateTime(d) => format!("'{d}'"),
        Value::Time(t) => format!("'{t}'"),
        Value::Enum(_, text) | Value::Set(_, text) => quote(text),
        Value::Bytes(bytes) => match std::str::from_utf8(bytes) {
            Ok(text) if !text.chars().any(char::is_control) => quote(text),
            _ => format!("0x{}", hex(bytes)),
        },
    }
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02X}");
        out
    })
}
