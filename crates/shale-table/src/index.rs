//! Keys of rows and index entries (docs/format/table-keys.md): how a row's primary key and
//! each of its secondary index entries are laid out, and how an entry leads back to its row.
//!
//! - Row: `table_id ++ memcomparable(pk columns)` (or `++ row_id: u64 big-endian` when the
//!   table has no primary key) -> row value (docs/format/rows.md).
//! - Non-unique secondary entry, and a unique one whose key columns hold a NULL:
//!   `index_id ++ memcomparable(index columns) ++ pk suffix` -> empty value.
//! - Unique secondary entry without NULLs: `index_id ++ memcomparable(index columns)` ->
//!   pk suffix, so a locking read of that one key checks uniqueness.
//!
//! The "pk suffix" is the row key without its 4-byte table id.
//!
//! Invariants:
//! 1. An entry's pk suffix is what follows its index columns in the key if anything does,
//!    else its value ([`pk_key_of_entry`]).
//! 2. For every committed row, each secondary index holds exactly the entry
//!    [`entry_for_row`] computes, and nothing else (ARCHITECTURE.md invariant 6).

use crate::codec::key::{encode_column, index_prefix, skip_column};
use crate::codec::Reader;
use crate::error::{Error, Result};
use crate::schema::{IndexDef, TableDef};
use crate::value::Value;

/// The table id of `table` (its primary key's index id).
pub(crate) fn table_id(table: &TableDef) -> u32 {
    table.primary_key.index_id
}

pub(crate) fn is_hidden_pk(table: &TableDef) -> bool {
    table.primary_key.columns.is_empty()
}

/// The key of the row whose primary key values are `pk` (one per pk column; a table without
/// primary key takes its row id as one integer).
pub(crate) fn pk_key_from_values(
    out: &mut Vec<u8>,
    table: &TableDef,
    pk: &[Value],
    scratch: &mut Vec<u16>,
) -> Result<()> {
    out.clear();
    out.extend_from_slice(&index_prefix(table_id(table)));
    if is_hidden_pk(table) {
        let row_id = match pk {
            [Value::UInt(id)] => *id,
            [Value::Int(id)] => {
                u64::try_from(*id).map_err(|_| Error::InvalidArgument("negative row id".into()))?
            }
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "table '{}' has no primary key: look rows up by their row id",
                    table.name
                )))
            }
        };
        out.extend_from_slice(&row_id.to_be_bytes());
        return Ok(());
    }
    if pk.len() != table.primary_key.columns.len() {
        return Err(Error::InvalidArgument(format!(
            "{} values for the {}-column primary key of '{}'",
            pk.len(),
            table.primary_key.columns.len(),
            table.name
        )));
    }
    for (&position, value) in table.primary_key.columns.iter().zip(pk) {
        let column = table
            .columns
            .get(position)
            .ok_or_else(|| bad_position(table))?;
        encode_column(out, column, value, scratch)?;
    }
    Ok(())
}

fn bad_position(table: &TableDef) -> Error {
    Error::InvalidArgument(format!(
        "table '{}': an index names a column that does not exist",
        table.name
    ))
}

/// The key of `row` (its primary key columns; `row_id` for a table without primary key).
pub(crate) fn pk_key_of_row(
    out: &mut Vec<u8>,
    table: &TableDef,
    row: &[Value],
    row_id: Option<u64>,
    scratch: &mut Vec<u16>,
) -> Result<()> {
    if is_hidden_pk(table) {
        let id = row_id.ok_or_else(|| {
            Error::InvalidArgument("a row of a table without primary key needs its row id".into())
        })?;
        return pk_key_from_values(out, table, &[Value::UInt(id)], scratch);
    }
    out.clear();
    out.extend_from_slice(&index_prefix(table_id(table)));
    for &position in &table.primary_key.columns {
        let column = table
            .columns
            .get(position)
            .ok_or_else(|| bad_position(table))?;
        let value = row.get(position).ok_or_else(|| bad_position(table))?;
        encode_column(out, column, value, scratch)?;
    }
    Ok(())
}

/// The entry of `row` in `index`: (key, value), given the row's key `pk_key`.
pub(crate) fn entry_for_row(
    table: &TableDef,
    index: &IndexDef,
    row: &[Value],
    pk_key: &[u8],
    scratch: &mut Vec<u16>,
) -> Result<(Vec<u8>, Vec<u8>)> {
    let suffix = pk_key.get(4..).unwrap_or_default();
    let mut key = Vec::with_capacity(4 + 16 + suffix.len());
    key.extend_from_slice(&index_prefix(index.index_id));
    let mut has_null = false;
    for &position in &index.columns {
        let column = table
            .columns
            .get(position)
            .ok_or_else(|| bad_position(table))?;
        let value = row.get(position).ok_or_else(|| bad_position(table))?;
        has_null |= matches!(value, Value::Null);
        encode_column(&mut key, column, value, scratch)?;
    }
    if index.unique && !has_null {
        Ok((key, suffix.to_vec()))
    } else {
        key.extend_from_slice(suffix);
        Ok((key, Vec::new()))
    }
}

/// Whether an entry (as [`entry_for_row`] made it) is one whose key alone must be unique.
pub(crate) fn is_unique_entry(value: &[u8]) -> bool {
    !value.is_empty()
}

/// The row key an index entry points at (invariant 1); entry bytes are untrusted.
pub(crate) fn pk_key_of_entry(
    table: &TableDef,
    index: &IndexDef,
    key: &[u8],
    value: &[u8],
) -> Result<Vec<u8>> {
    let mut reader = Reader::new(key, "secondary index entry");
    reader.take(4)?;
    for &position in &index.columns {
        let column = table
            .columns
            .get(position)
            .ok_or_else(|| bad_position(table))?;
        skip_column(&mut reader, column)?;
    }
    let rest = reader.rest();
    let suffix = if rest.is_empty() { value } else { rest };
    if suffix.is_empty() {
        return Err(reader.corruption("entry has no primary key"));
    }
    let mut pk = Vec::with_capacity(4 + suffix.len());
    pk.extend_from_slice(&index_prefix(table_id(table)));
    pk.extend_from_slice(suffix);
    Ok(pk)
}

/// The values of `columns` of `row` as `MySQL` prints a duplicate entry: `'1-abc'`.
pub(crate) fn show_entry(row: &[Value], columns: &[usize]) -> String {
    columns
        .iter()
        .map(|&c| match row.get(c) {
            Some(Value::Int(v)) => v.to_string(),
            Some(Value::UInt(v)) => v.to_string(),
            Some(Value::Double(v)) => v.to_string(),
            Some(Value::Decimal(d)) => d.to_string(),
            Some(Value::DateTime(d)) => d.to_string(),
            Some(Value::Time(t)) => t.to_string(),
            Some(Value::Enum(_, text) | Value::Set(_, text)) => text.clone(),
            Some(Value::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
            Some(Value::Null) | None => "NULL".to_owned(),
        })
        .collect::<Vec<_>>()
        .join("-")
}
