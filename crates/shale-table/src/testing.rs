//! Entry points for tests and fuzz targets (feature `testing`): the encoders and decoders on
//! their own, without a store.

use crate::error::Result;
use crate::schema::{ColumnDef, TableDef};
use crate::value::Value;

/// One column's memcomparable key encoding (docs/format/table-keys.md).
pub fn encode_key_column(column: &ColumnDef, value: &Value) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    crate::codec::key::encode_column(&mut out, column, value, &mut Vec::new())?;
    Ok(out)
}

/// A row value's encoding (docs/format/rows.md).
pub fn encode_row(table: &TableDef, row: &[Value]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    crate::codec::row::encode_row(&mut out, table, row)?;
    Ok(out)
}

/// Decodes a row value (untrusted bytes).
pub fn decode_row(table: &TableDef, bytes: &[u8]) -> Result<Vec<Value>> {
    crate::codec::row::decode_row(table, bytes)
}

/// Decodes a stored table definition (untrusted bytes; docs/format/catalog.md).
pub fn decode_table_definition(bytes: &[u8]) -> Result<TableDef> {
    crate::system::decode_table(bytes)
}
