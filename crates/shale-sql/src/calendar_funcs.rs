//! More date and time functions: MAKEDATE, MAKETIME, PERIOD_ADD, PERIOD_DIFF,
//! TIMESTAMP(expr [, time]), CONVERT_TZ and GET_FORMAT.
//!
//! Rules (MySQL 8's):
//! 1. A NULL argument gives NULL.
//! 2. MAKEDATE(year, day_of_year): years 0..=69 are 2000..=2069 and 70..=99 are
//!    1970..=1999; a day of year below 1, or a result past 9999-12-31, is NULL.
//! 3. MAKETIME(h, m, s): minutes outside 0..=59 or seconds outside [0, 60) give NULL; the
//!    result is clipped to ±838:59:59; its fraction digits are the seconds argument's
//!    (6 for a double or text).
//! 4. Periods are YYMM or YYYYMM (YY below 70 is 20YY, else 19YY). A period that is not
//!    positive or whose month is outside 1..=12 is 1210 `Incorrect arguments to
//!    period_add` (MySQL 8.0.28 and later).
//! 5. TIMESTAMP(expr) is `expr` as a DATETIME; TIMESTAMP(expr, time) adds the TIME. Its
//!    fraction digits are the arguments' (a text literal's own fraction digits).
//! 6. CONVERT_TZ(dt, from, to) knows `SYSTEM` (UTC here) and `±hh:mm` offsets; a named zone
//!    gives NULL, as MySQL does without its time zone tables. When `dt` read in `from` is
//!    outside TIMESTAMP's range, `dt` comes back unchanged.
//! 7. GET_FORMAT({DATE | TIME | DATETIME | TIMESTAMP}, 'EUR' | 'USA' | 'JIS' | 'ISO' |
//!    'INTERNAL'): MySQL's table of formats; another name gives NULL.

// Every narrowing cast here follows a range check or clamp on the line before it.
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]

use shale_table::{Collation, Value};
use sqlparser::ast;

use crate::bind::Binder;
use crate::builtin::Builtin;
use crate::datetime_funcs::{self as dt, MICROS_PER_DAY, MICROS_PER_SECOND};
use crate::error::SqlError;
use crate::expr::{Expr, Func};
use crate::types::SqlType;

/// One function of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CalendarFunc {
    MakeDate,
    MakeTime { fsp: u8 },
    PeriodAdd,
    PeriodDiff,
    Timestamp { fsp: u8 },
    ConvertTz { fsp: u8 },
}

fn int_type() -> SqlType {
    SqlType::Int {
        unsigned: false,
        len: 21,
    }
}

/// The fraction digits a temporal argument of type `t` (bound to `e`) carries.
fn digits(t: &SqlType, e: &Expr) -> u8 {
    match (t, e) {
        (SqlType::DateTime { fsp }, _) => fsp.unwrap_or(0),
        (SqlType::Time { fsp }, _) => *fsp,
        (SqlType::Int { .. } | SqlType::Null, _) => 0,
        (SqlType::Decimal { scale, .. }, _) => (*scale).min(6),
        (SqlType::Str { .. }, Expr::Literal(Value::Bytes(b))) => {
            let text = String::from_utf8_lossy(b);
            let t = text.trim();
            match t.rsplit_once('.') {
                Some((head, frac))
                    if head.contains(':') && frac.bytes().all(|c| c.is_ascii_digit()) =>
                {
                    frac.len().min(6) as u8
                }
                _ => 0,
            }
        }
        _ => 6,
    }
}

/// Names, argument counts and result types; None for a name not of this module.
pub(crate) fn bind(
    binder: &mut Binder<'_>,
    name: &str,
    args: &[&ast::Expr],
) -> Option<Result<(Expr, SqlType), SqlError>> {
    let (min, max) = match name {
        "MAKEDATE" | "PERIOD_ADD" | "PERIOD_DIFF" | "GET_FORMAT" => (2, 2),
        "MAKETIME" | "CONVERT_TZ" => (3, 3),
        "TIMESTAMP" => (1, 2),
        _ => return None,
    };
    if args.len() < min || args.len() > max {
        return Some(Err(crate::builtin::wrong_count(name)));
    }
    if name == "GET_FORMAT" {
        return Some(get_format(binder, args[0], args[1]));
    }
    Some(bind_known(binder, name, args))
}

fn bind_known(
    binder: &mut Binder<'_>,
    name: &str,
    args: &[&ast::Expr],
) -> Result<(Expr, SqlType), SqlError> {
    let mut bound = Vec::with_capacity(args.len());
    let mut types = Vec::with_capacity(args.len());
    for a in args {
        let (e, t) = binder.expr(a)?;
        bound.push(e);
        types.push(t);
    }
    let fsp_of = |i: usize| digits(&types[i], &bound[i]);
    let (f, t) = match name {
        "MAKEDATE" => (CalendarFunc::MakeDate, SqlType::DateTime { fsp: None }),
        "MAKETIME" => {
            let fsp = fsp_of(2);
            (CalendarFunc::MakeTime { fsp }, SqlType::Time { fsp })
        }
        "PERIOD_ADD" => (CalendarFunc::PeriodAdd, int_type()),
        "PERIOD_DIFF" => (CalendarFunc::PeriodDiff, int_type()),
        "TIMESTAMP" => {
            let fsp = (0..bound.len()).map(fsp_of).max().unwrap_or(0);
            (
                CalendarFunc::Timestamp { fsp },
                SqlType::DateTime { fsp: Some(fsp) },
            )
        }
        _ => {
            let fsp = fsp_of(0);
            (
                CalendarFunc::ConvertTz { fsp },
                SqlType::DateTime { fsp: Some(fsp) },
            )
        }
    };
    Ok((Expr::Func(Func::Builtin(Builtin::Calendar(f)), bound), t))
}

/// Rule 7, fixed while binding when the name is a constant.
fn get_format(
    binder: &mut Binder<'_>,
    kind: &ast::Expr,
    standard: &ast::Expr,
) -> Result<(Expr, SqlType), SqlError> {
    let kind_name = match kind {
        ast::Expr::Identifier(id) => id.value.to_ascii_uppercase(),
        other => other.to_string().to_ascii_uppercase(),
    };
    let column = match kind_name.as_str() {
        "DATE" => 0,
        "TIME" => 1,
        "DATETIME" | "TIMESTAMP" => 2,
        _ => return Err(SqlError::syntax(&kind.to_string(), 1)),
    };
    let (e, _) = binder.expr(standard)?;
    let t = SqlType::Str {
        collation: Collation::Utf8mb4GeneralCi,
        len: 17,
    };
    let Expr::Literal(v) = &e else {
        return Err(SqlError::unsupported(
            "GET_FORMAT with a format name that is not a constant",
        ));
    };
    let shown = crate::value::as_text(v).and_then(|s| format_of(column, &s));
    let out = shown.map_or(Value::Null, |s| Value::Bytes(s.as_bytes().to_vec()));
    Ok((Expr::Literal(out), t))
}

/// MySQL's GET_FORMAT table: DATE, TIME, DATETIME formats per standard.
fn format_of(column: usize, standard: &str) -> Option<&'static str> {
    let row: [&'static str; 3] = match standard.to_ascii_uppercase().as_str() {
        "USA" => ["%m.%d.%Y", "%h:%i:%s %p", "%Y-%m-%d %H.%i.%s"],
        "JIS" | "ISO" => ["%Y-%m-%d", "%H:%i:%s", "%Y-%m-%d %H:%i:%s"],
        "EUR" => ["%d.%m.%Y", "%H.%i.%s", "%Y-%m-%d %H.%i.%s"],
        "INTERNAL" => ["%Y%m%d", "%H%i%s", "%Y%m%d%H%i%s"],
        _ => return None,
    };
    Some(row[column])
}

/// Evaluates `f` over its argument values.
pub(crate) fn eval(f: CalendarFunc, args: &[Value]) -> Result<Value, SqlError> {
    if args.iter().any(|v| matches!(v, Value::Null)) {
        return Ok(Value::Null);
    }
    let arg = |i: usize| args.get(i).unwrap_or(&Value::Null);
    Ok(match f {
        CalendarFunc::MakeDate => make_date(arg(0), arg(1)),
        CalendarFunc::MakeTime { fsp } => make_time(arg(0), arg(1), arg(2), fsp),
        CalendarFunc::PeriodAdd => {
            let (Some(p), Some(n)) = (to_i64(arg(0)), to_i64(arg(1))) else {
                return Ok(Value::Null);
            };
            let months = period_months(p, "period_add")?;
            let total = months.saturating_add(n);
            let shown = total.div_euclid(12).saturating_mul(100);
            Value::Int(shown.saturating_add(total.rem_euclid(12) + 1))
        }
        CalendarFunc::PeriodDiff => {
            let (Some(a), Some(b)) = (to_i64(arg(0)), to_i64(arg(1))) else {
                return Ok(Value::Null);
            };
            Value::Int(period_months(a, "period_diff")? - period_months(b, "period_diff")?)
        }
        CalendarFunc::Timestamp { fsp } => timestamp(args, fsp),
        CalendarFunc::ConvertTz { fsp } => convert_tz(arg(0), arg(1), arg(2), fsp),
    })
}

fn to_i64(v: &Value) -> Option<i64> {
    crate::value::to_i128(v).map(|n| n.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
}

/// Rule 2.
fn make_date(year: &Value, day: &Value) -> Value {
    let (Some(mut y), Some(d)) = (to_i64(year), to_i64(day)) else {
        return Value::Null;
    };
    if d < 1 || !(0..=9999).contains(&y) {
        return Value::Null;
    }
    if y < 70 {
        y += 2000;
    } else if y < 100 {
        y += 1900;
    }
    let days = dt::days_from_civil(y, 1, 1).saturating_add(d - 1);
    match dt::from_epoch_micros(days.saturating_mul(MICROS_PER_DAY), None) {
        Some(v) if days < i64::MAX / MICROS_PER_DAY => Value::DateTime(v.round_to(None)),
        _ => Value::Null,
    }
}

/// Rule 3.
fn make_time(h: &Value, m: &Value, s: &Value, fsp: u8) -> Value {
    let (Some(h), Some(m), Some(s)) = (
        crate::value::to_i128(h),
        crate::value::to_i128(m),
        crate::value::to_f64(s),
    ) else {
        return Value::Null;
    };
    if !(0..60).contains(&m) || !(0.0..60.0).contains(&s) {
        return Value::Null;
    }
    let micros_of_s = (s * 1e6).round() as i128;
    let hours = i128::try_from(h.unsigned_abs().min(1_000_000)).unwrap_or(1_000_000);
    let magnitude = hours * 3_600_000_000 + m * 60_000_000 + micros_of_s;
    let micros = if h < 0 { -magnitude } else { magnitude };
    let clipped = micros.clamp(-i128::from(i64::MAX), i128::from(i64::MAX)) as i64;
    crate::time_type::value_of(clipped, fsp)
}

/// Rule 4: a period as months since year 0.
fn period_months(p: i64, func: &str) -> Result<i64, SqlError> {
    let month = p % 100;
    if p <= 0 || !(1..=12).contains(&month) {
        return Err(SqlError::new(
            1210,
            "HY000",
            format!("Incorrect arguments to {func}"),
        ));
    }
    let mut year = p / 100;
    if year < 70 {
        year += 2000;
    } else if year < 100 {
        year += 1900;
    }
    Ok(year.saturating_mul(12).saturating_add(month - 1))
}

/// Rule 5.
fn timestamp(args: &[Value], fsp: u8) -> Value {
    let Some(d) = args.first().and_then(dt::date_arg) else {
        return Value::Null;
    };
    let base = d.value.with_fsp(Some(6));
    let moved = match args.get(1) {
        None => Some(base),
        Some(t) => dt::time_arg(t).and_then(|micros| base.add_micros(micros)),
    };
    moved.map_or(Value::Null, |v| Value::DateTime(v.round_to(Some(fsp))))
}

/// Rule 6.
fn convert_tz(d: &Value, from: &Value, to: &Value, fsp: u8) -> Value {
    let (Some(d), Some(from), Some(to)) = (
        dt::date_arg(d),
        crate::value::as_text(from),
        crate::value::as_text(to),
    ) else {
        return Value::Null;
    };
    let (Some(from), Some(to)) = (dt::parse_zone(&from), dt::parse_zone(&to)) else {
        return Value::Null;
    };
    let value = d.value.with_fsp(Some(6));
    let converted = value
        .add_micros(-from * MICROS_PER_SECOND)
        .filter(shale_table::DateTime::in_timestamp_range)
        .and_then(|utc| utc.add_micros(to * MICROS_PER_SECOND));
    Value::DateTime(converted.unwrap_or(value).round_to(Some(fsp)))
}
