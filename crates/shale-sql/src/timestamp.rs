//! TIMESTAMP columns and automatic `CURRENT_TIMESTAMP` values (MySQL 8's rules, with
//! `explicit_defaults_for_timestamp` on as in MySQL 8).
//!
//! 1. A TIMESTAMP(fsp) column takes what a DATETIME(fsp) takes (temporal.rs rule 1), read as
//!    a wall-clock time in the session's `time_zone`. The instant must lie within
//!    '1970-01-01 00:00:01' .. '2038-01-19 03:14:07.999999' UTC, else 1292 "Incorrect
//!    datetime value" (strict mode). It is stored in UTC and shown in the reading session's
//!    zone (shale-table's zone.rs; the session sets its transaction's offset).
//! 2. DEFAULT `CURRENT_TIMESTAMP[(fsp)]` (or NOW(), LOCALTIME, LOCALTIMESTAMP) and ON UPDATE
//!    `CURRENT_TIMESTAMP[(fsp)]` are accepted on TIMESTAMP and DATETIME columns whose precision
//!    is the same fsp; otherwise 1067 "Invalid default value" and 1294 "Invalid ON UPDATE
//!    clause".
//! 3. An INSERT that names no value for a DEFAULT `CURRENT_TIMESTAMP` column stores the
//!    statement's start time in the session's zone, truncated to the column's precision (as
//!    NOW(fsp) shows it).
//!    `SET timestamp = N` fixes that time, as in MySQL.
//! 4. An UPDATE (and INSERT ... ON DUPLICATE KEY UPDATE) that changes some column of a row
//!    sets each ON UPDATE `CURRENT_TIMESTAMP` column it does not assign to the statement's start
//!    time; a row left unchanged keeps its value.

use shale_table::{AutoTimestamp, ColumnDef, ColumnType, TableDef, Value};
use sqlparser::ast;

use crate::error::SqlError;
use crate::expr::Env;
use crate::types::store_value;

const MICROS_PER_SECOND: i64 = 1_000_000;

/// The session's UTC offset in seconds (`time_zone`).
pub(crate) fn zone_offset(env: &dyn Env) -> Result<i64, SqlError> {
    crate::datetime_funcs::zone_offset(&env.variable("time_zone"))
}

/// When a statement starts, in microseconds since 1970-01-01 UTC: the session's `timestamp`
/// variable when set to a positive number of seconds (as MySQL's `SET timestamp = N`, which
/// fixes NOW() and `CURRENT_TIMESTAMP` defaults), else the clock.
pub(crate) fn statement_clock(timestamp: &Value) -> i64 {
    let fixed = crate::value::to_f64(timestamp).filter(|s| *s > 0.0 && *s < 32_536_771_200.0);
    match fixed {
        // Below 32536771200 (year 3001), so the product fits an i64.
        #[allow(clippy::cast_possible_truncation)]
        Some(seconds) => (seconds * 1e6).round() as i64,
        None => crate::datetime_funcs::clock_micros(),
    }
}

/// Makes `txn` take and return TIMESTAMP values in the zone `time_zone` names (rule 1).
pub(crate) fn set_txn_zone(
    txn: &mut shale_table::TableTxn,
    time_zone: &Value,
) -> Result<(), SqlError> {
    let seconds = crate::datetime_funcs::zone_offset(time_zone)?;
    // parse_zone keeps offsets within -13:59..=+14:00.
    txn.set_time_zone_offset(i32::try_from(seconds).unwrap_or(0));
    Ok(())
}

/// A row for a bulk load (which has no time zone) with its TIMESTAMPs moved from the
/// session's zone (`zone_seconds`) to UTC; their range was checked by [`store`].
pub(crate) fn row_to_utc(table: &TableDef, row: &mut [Value], zone_seconds: i64) {
    if zone_seconds == 0 {
        return;
    }
    for (col, value) in table.columns.iter().zip(row.iter_mut()) {
        if let (ColumnType::Timestamp { .. }, Value::DateTime(local)) = (&col.ty, &mut *value) {
            if let Some(utc) = local.add_micros(-zone_seconds * MICROS_PER_SECOND) {
                *local = utc;
            }
        }
    }
}

/// The fraction digits of a TIMESTAMP or DATETIME column; None for other types.
fn fsp_of(ty: &ColumnType) -> Option<u8> {
    match *ty {
        ColumnType::Timestamp { fsp } | ColumnType::DateTime { fsp } => Some(fsp),
        _ => None,
    }
}

/// `value` stored into `col` (`row` 1-based): `store_value`, and for a TIMESTAMP the range
/// check of rule 1 in the session's zone.
/// Outside strict mode (or under IGNORE) a refused value is converted with a warning
/// (lenient_store.rs).
pub(crate) fn store(
    col: &ColumnDef,
    value: Value,
    row: usize,
    env: &dyn Env,
) -> Result<Value, SqlError> {
    let rules = env.store_rules();
    if !rules.lenient {
        return store_strict(col, value, row, env);
    }
    crate::lenient_store::store(
        col,
        &value,
        row,
        rules,
        |v| store_strict(col, v, row, env),
        &mut |code, message| env.warn(code, message),
    )
}

fn store_strict(
    col: &ColumnDef,
    value: Value,
    row: usize,
    env: &dyn Env,
) -> Result<Value, SqlError> {
    if !matches!(col.ty, ColumnType::Timestamp { .. }) {
        return store_value(col, value, row);
    }
    let given = crate::value::display(&value);
    let stored = store_value(col, value, row)?;
    if let Value::DateTime(local) = &stored {
        let in_range = local
            .add_micros(-zone_offset(env)? * MICROS_PER_SECOND)
            .is_some_and(|utc| utc.in_timestamp_range());
        if !in_range {
            return Err(incorrect_datetime(&given, &col.name, row));
        }
    }
    Ok(stored)
}

fn incorrect_datetime(given: &str, column: &str, row: usize) -> SqlError {
    SqlError::new(
        1292,
        "22007",
        format!("Incorrect datetime value: '{given}' for column '{column}' at row {row}"),
    )
}

/// The statement's start time as `col` holds it (rules 3 and 4).
pub(crate) fn now(col: &ColumnDef, env: &dyn Env) -> Result<Value, SqlError> {
    let fsp = fsp_of(&col.ty).unwrap_or(0);
    let micros = env.statement_time() + zone_offset(env)? * MICROS_PER_SECOND;
    let unit = 10i64.pow(6 - u32::from(fsp.min(6)));
    let truncated = micros - micros.rem_euclid(unit);
    crate::datetime_funcs::from_epoch_micros(truncated, Some(fsp))
        .map(Value::DateTime)
        .ok_or_else(|| SqlError::internal("the clock is outside years 1000..=9999"))
}

/// What rows that exist when ALTER TABLE adds a DEFAULT `CURRENT_TIMESTAMP` column read: the
/// ALTER's time. A TIMESTAMP's stored value is UTC, so it needs no zone; a DATETIME's would
/// need the session's, which ALTER does not carry yet (1235).
pub(crate) fn fill_now(col: &ColumnDef) -> Result<Value, SqlError> {
    let ColumnType::Timestamp { fsp } = col.ty else {
        return Err(SqlError::unsupported(format!(
            "ADD COLUMN `{}` DATETIME DEFAULT CURRENT_TIMESTAMP (use TIMESTAMP)",
            col.name
        )));
    };
    let micros = crate::datetime_funcs::clock_micros();
    let unit = 10i64.pow(6 - u32::from(fsp.min(6)));
    crate::datetime_funcs::from_epoch_micros(micros - micros.rem_euclid(unit), Some(fsp))
        .map(Value::DateTime)
        .ok_or_else(|| SqlError::internal("the clock is outside years 1000..=9999"))
}

/// Rule 4: `new` (an update of `old` that assigned the columns at `assigned`) gets the
/// statement's time in each ON UPDATE column it did not assign, if anything changed.
pub(crate) fn touch(
    table: &TableDef,
    old: &[Value],
    new: &mut [Value],
    assigned: impl Fn(usize) -> bool,
    env: &dyn Env,
) -> Result<(), SqlError> {
    if old == new {
        return Ok(());
    }
    for (pos, col) in table.columns.iter().enumerate() {
        if col.auto_timestamp.on_update && !assigned(pos) {
            if let Some(slot) = new.get_mut(pos) {
                *slot = now(col, env)?;
            }
        }
    }
    Ok(())
}

/// The precision of a `CURRENT_TIMESTAMP[(fsp)]` expression (also NOW(), LOCALTIME,
/// LOCALTIMESTAMP); None for any other expression.
pub(crate) fn current_timestamp_fsp(e: &ast::Expr) -> Option<u8> {
    let is_now = |name: &str| {
        ["CURRENT_TIMESTAMP", "NOW", "LOCALTIME", "LOCALTIMESTAMP"]
            .iter()
            .any(|n| n.eq_ignore_ascii_case(name))
    };
    match e {
        ast::Expr::Identifier(id) if is_now(&id.value) => Some(0),
        ast::Expr::Function(f) if is_now(&f.name.to_string()) => match &f.args {
            ast::FunctionArguments::None => Some(0),
            ast::FunctionArguments::List(list) => match list.args.as_slice() {
                [] => Some(0),
                [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Value(v)))] => {
                    match &v.value {
                        ast::Value::Number(n, _) => n.parse::<u8>().ok().filter(|f| *f <= 6),
                        _ => None,
                    }
                }
                _ => None,
            },
            ast::FunctionArguments::Subquery(_) => None,
        },
        _ => None,
    }
}

/// Rule 2: records DEFAULT / ON UPDATE `CURRENT_TIMESTAMP` (`default_fsp`, `on_update`: the
/// clauses' expressions' precision) on `col`.
pub(crate) fn declare(
    col: &mut ColumnDef,
    default_fsp: Option<u8>,
    on_update: Option<&ast::Expr>,
) -> Result<(), SqlError> {
    let column_fsp = fsp_of(&col.ty);
    if let Some(fsp) = default_fsp {
        if column_fsp != Some(fsp) {
            return Err(SqlError::new(
                1067,
                "42000",
                format!("Invalid default value for '{}'", col.name),
            ));
        }
    }
    if let Some(e) = on_update {
        if column_fsp.is_none() || current_timestamp_fsp(e) != column_fsp {
            return Err(SqlError::new(
                1294,
                "HY000",
                format!("Invalid ON UPDATE clause for '{}' column", col.name),
            ));
        }
    }
    col.auto_timestamp = AutoTimestamp {
        on_insert: default_fsp.is_some(),
        on_update: on_update.is_some(),
    };
    Ok(())
}

/// `CURRENT_TIMESTAMP` or `CURRENT_TIMESTAMP(fsp)` as MySQL prints it for `col`.
fn current_timestamp_text(col: &ColumnDef) -> String {
    match fsp_of(&col.ty) {
        Some(fsp) if fsp > 0 => format!("CURRENT_TIMESTAMP({fsp})"),
        _ => "CURRENT_TIMESTAMP".into(),
    }
}

/// information_schema.COLUMNS' COLUMN_DEFAULT (and SHOW COLUMNS' Default) of an automatic
/// default; None when the column has none.
pub(crate) fn default_text(col: &ColumnDef) -> Option<String> {
    col.auto_timestamp
        .on_insert
        .then(|| current_timestamp_text(col))
}

/// The EXTRA of information_schema.COLUMNS and SHOW COLUMNS for the automatic values:
/// `DEFAULT_GENERATED`, `on update CURRENT_TIMESTAMP`, both, or empty.
pub(crate) fn extra_text(col: &ColumnDef) -> String {
    let AutoTimestamp {
        on_insert,
        on_update,
    } = col.auto_timestamp;
    let mut parts = Vec::new();
    if on_insert {
        parts.push("DEFAULT_GENERATED".to_string());
    }
    if on_update {
        parts.push(format!("on update {}", current_timestamp_text(col)));
    }
    parts.join(" ")
}

/// SHOW CREATE TABLE's DEFAULT and ON UPDATE clauses of an automatic column (with a leading
/// space), or None to print the column's default as usual.
pub(crate) fn show_clauses(col: &ColumnDef) -> Option<String> {
    let AutoTimestamp {
        on_insert,
        on_update,
    } = col.auto_timestamp;
    if !on_insert && !on_update {
        return None;
    }
    let mut out = String::new();
    if on_insert {
        out.push_str(" DEFAULT ");
        out.push_str(&current_timestamp_text(col));
    } else if let Some(d) = &col.default {
        out.push_str(" DEFAULT '");
        out.push_str(&crate::value::display(d).replace('\'', "''"));
        out.push('\'');
    } else if col.nullable {
        out.push_str(" DEFAULT NULL");
    }
    if on_update {
        out.push_str(" ON UPDATE ");
        out.push_str(&current_timestamp_text(col));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(sql: &str) -> ast::Expr {
        let dialect = sqlparser::dialect::MySqlDialect {};
        sqlparser::parser::Parser::new(&dialect)
            .try_with_sql(sql)
            .and_then(|mut p| p.parse_expr())
            .unwrap()
    }

    #[test]
    fn current_timestamp_forms() {
        for (sql, want) in [
            ("CURRENT_TIMESTAMP", Some(0)),
            ("current_timestamp()", Some(0)),
            ("CURRENT_TIMESTAMP(3)", Some(3)),
            ("NOW(6)", Some(6)),
            ("LOCALTIMESTAMP", Some(0)),
            ("CURRENT_TIMESTAMP(7)", None),
            ("'2024-01-01'", None),
            ("CURDATE()", None),
        ] {
            assert_eq!(current_timestamp_fsp(&expr(sql)), want, "{sql}");
        }
    }

    #[test]
    fn declare_checks_type_and_precision() {
        let column = |ty| ColumnDef {
            name: "c".into(),
            ty,
            nullable: true,
            default: None,
            auto_increment: false,
            auto_timestamp: AutoTimestamp::default(),
            generated: None,
        };
        let mut ts = column(ColumnType::Timestamp { fsp: 3 });
        let on_update = expr("CURRENT_TIMESTAMP(3)");
        declare(&mut ts, Some(3), Some(&on_update)).unwrap();
        assert_eq!(
            extra_text(&ts),
            "DEFAULT_GENERATED on update CURRENT_TIMESTAMP(3)"
        );
        assert_eq!(default_text(&ts).as_deref(), Some("CURRENT_TIMESTAMP(3)"));
        assert_eq!(declare(&mut ts, Some(0), None).unwrap_err().code, 1067);
        let plain = expr("CURRENT_TIMESTAMP");
        assert_eq!(declare(&mut ts, None, Some(&plain)).unwrap_err().code, 1294);
        let mut int = column(ColumnType::Int { unsigned: false });
        assert_eq!(declare(&mut int, Some(0), None).unwrap_err().code, 1067);
        assert_eq!(
            declare(&mut int, None, Some(&plain)).unwrap_err().code,
            1294
        );
        let mut dt = column(ColumnType::DateTime { fsp: 0 });
        declare(&mut dt, None, Some(&plain)).unwrap();
        assert_eq!(extra_text(&dt), "on update CURRENT_TIMESTAMP");
        assert_eq!(
            show_clauses(&dt).as_deref(),
            Some(" DEFAULT NULL ON UPDATE CURRENT_TIMESTAMP")
        );
    }
}
