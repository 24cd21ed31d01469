//! TIMESTAMP values between a transaction's time zone and UTC.
//!
//! A TIMESTAMP column stores the UTC date and time of an instant (so keys sort in UTC order
//! whatever zone wrote them); a [`TableTxn`](crate::TableTxn) takes and returns its values as
//! wall-clock times at the transaction's UTC offset (`MySQL`'s session `time_zone`).
//!
//! Invariants:
//! 1. Every row and key value a transaction writes is converted to UTC here before it is
//!    encoded, and every TIMESTAMP value it returns is converted back, so a row read and
//!    handed back to `update`/`delete` finds its stored image again.
//! 2. A TIMESTAMP written is within TIMESTAMP's range in UTC
//!    ([`DateTime::in_timestamp_range`]); nothing outside it is ever stored.
//! 3. Only fixed offsets exist, so the conversion is a bijection and preserves order.

use crate::error::{Error, Result};
use crate::schema::{ColumnDef, TableDef};
use crate::temporal::DateTime;
use crate::types::ColumnType;
use crate::value::Value;

/// Whether any column of `table` is a TIMESTAMP (the conversions below are skipped otherwise).
pub(crate) fn has_timestamp(table: &TableDef) -> bool {
    table
        .columns
        .iter()
        .any(|c| matches!(c.ty, ColumnType::Timestamp { .. }))
}

/// A full row as written: TIMESTAMP values moved from the offset to UTC and range-checked
/// (invariant 2).
pub(crate) fn row_to_utc(table: &TableDef, row: &mut [Value], offset_micros: i64) -> Result<()> {
    for (column, value) in table.columns.iter().zip(row.iter_mut()) {
        if !matches!(column.ty, ColumnType::Timestamp { .. }) {
            continue;
        }
        if let Value::DateTime(local) = value {
            let utc = local
                .add_micros(-offset_micros)
                .filter(DateTime::in_timestamp_range)
                .ok_or_else(|| Error::TimestampOutOfRange {
                    column: column.name.clone(),
                    value: local.to_string(),
                })?;
            *local = utc;
        }
    }
    Ok(())
}

/// Key values of `columns` (a prefix of an index's columns: a lookup key or a range bound)
/// moved to UTC. A bound past the years a date can hold stays as it is: it is then below or
/// above every stored TIMESTAMP either way.
pub(crate) fn key_to_utc<'c>(
    columns: impl Iterator<Item = &'c ColumnDef>,
    values: &mut [Value],
    offset_micros: i64,
) {
    if offset_micros == 0 {
        return;
    }
    for (column, value) in columns.zip(values.iter_mut()) {
        if let (ColumnType::Timestamp { .. }, Value::DateTime(local)) = (&column.ty, &mut *value) {
            if let Some(utc) = local.add_micros(-offset_micros) {
                *local = utc;
            }
        }
    }
}

/// Values read (one per column of `columns`, in order): TIMESTAMPs moved from UTC to the
/// offset.
pub(crate) fn values_to_local<'c>(
    columns: impl Iterator<Item = &'c ColumnDef>,
    values: &mut [Value],
    offset_micros: i64,
) {
    if offset_micros == 0 {
        return;
    }
    for (column, value) in columns.zip(values.iter_mut()) {
        if let (ColumnType::Timestamp { .. }, Value::DateTime(utc)) = (&column.ty, &mut *value) {
            // A stored TIMESTAMP plus at most 14 hours is still within years 1000..=9999.
            if let Some(local) = utc.add_micros(offset_micros) {
                *utc = local;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::IndexDef;

    fn table() -> TableDef {
        let column = |name: &str, ty| ColumnDef {
            name: name.into(),
            ty,
            nullable: true,
            default: None,
            auto_increment: false,
            auto_timestamp: crate::schema::AutoTimestamp::default(),
            generated: None,
        };
        TableDef {
            database: "d".into(),
            name: "t".into(),
            columns: vec![
                column("id", ColumnType::Int { unsigned: false }),
                column("at", ColumnType::Timestamp { fsp: 0 }),
                column("dt", ColumnType::DateTime { fsp: 0 }),
            ],
            primary_key: IndexDef {
                name: "PRIMARY".into(),
                columns: vec![0],
                unique: true,
                index_id: 0,
            },
            indexes: Vec::new(),
            schema_version: 1,
            past_versions: Vec::new(),
        }
    }

    fn at(text: &str) -> Value {
        Value::DateTime(DateTime::parse(text, Some(0)).unwrap())
    }

    #[test]
    fn converts_only_timestamps_and_checks_the_range() {
        let t = table();
        assert!(has_timestamp(&t));
        let plus_two = 2 * 3_600_000_000;
        let mut row = vec![
            Value::Int(1),
            at("2024-01-01 01:00:00"),
            at("2024-01-01 01:00:00"),
        ];
        row_to_utc(&t, &mut row, plus_two).unwrap();
        assert_eq!(row[1], at("2023-12-31 23:00:00"));
        assert_eq!(row[2], at("2024-01-01 01:00:00"));
        values_to_local(t.columns.iter(), &mut row, plus_two);
        assert_eq!(row[1], at("2024-01-01 01:00:00"));
        // '1970-01-01 01:00:00' at +02:00 is 1969 in UTC: out of range.
        let mut early = vec![Value::Int(1), at("1970-01-01 01:00:00"), Value::Null];
        assert!(matches!(
            row_to_utc(&t, &mut early, plus_two),
            Err(Error::TimestampOutOfRange { .. })
        ));
        let mut late = vec![Value::Int(1), at("2038-01-19 03:14:08"), Value::Null];
        assert!(row_to_utc(&t, &mut late, 0).is_err());
        let mut null = vec![Value::Int(1), Value::Null, Value::Null];
        row_to_utc(&t, &mut null, plus_two).unwrap();
        let mut bound = vec![at("1000-01-01 00:00:00")];
        key_to_utc(t.columns[1..].iter(), &mut bound, plus_two);
        assert_eq!(bound[0], at("1000-01-01 00:00:00"));
    }
}
