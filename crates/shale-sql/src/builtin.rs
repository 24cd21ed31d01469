//! The built-in functions beyond the first few of expr.rs: their names, argument counts and
//! result types (binding), the MySQL syntax sqlparser gives its own AST nodes (`SUBSTRING(s
//! FROM p FOR n)`, `TRIM(LEADING x FROM s)`, `POSITION(a IN b)`, `EXTRACT(unit FROM d)`,
//! `CONVERT(x, type)`, `CONVERT(x USING cs)`, `x REGEXP p`, `d + INTERVAL n unit`).
//! builtin_eval.rs evaluates them.
//!
//! Rules:
//! 1. An unknown name is 1305 (`FUNCTION NAME does not exist`), a wrong argument count 1582.
//! 2. Date arithmetic's result type follows MySQL: DATE stays DATE for day-or-longer units,
//!    a DATE with a time unit or a DATETIME gives DATETIME, text and numbers give text.
//! 3. NOW() and its synonyms are the statement's start time (`Env::statement_time`), the
//!    same for every row; SYSDATE() is NOW() here (MySQL reads the clock per call).
//! 4. RAND(), SLEEP() and BENCHMARK() are never constants: RAND's value changes per row, and
//!    the other two must run when the row is evaluated, not while binding.

use shale_table::{Collation, Value};
use sqlparser::ast;

use crate::bind::{pick_collation, unify, Binder};
use crate::datetime_funcs::{self as dt, Unit};
use crate::error::SqlError;
use crate::expr::{Expr, Func};
use crate::numeric_funcs::Math;
use crate::string_funcs::TrimSide;
use crate::types::SqlType;

/// How a date function gives its result (rule 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TemporalOut {
    Date,
    DateTime(u8),
    Text,
}

/// A built-in function, with what binding fixed about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builtin {
    Now {
        fsp: u8,
        utc: bool,
    },
    CurDate {
        utc: bool,
    },
    CurTime {
        fsp: u8,
        utc: bool,
    },
    UnixTimestamp {
        scale: u8,
    },
    FromUnixtime {
        fsp: u8,
    },
    DateAdd {
        unit: Unit,
        subtract: bool,
        out: TemporalOut,
    },
    DateDiff,
    TimestampDiff(Unit),
    /// TIME_FORMAT (time_type.rs).
    TimeFormat,
    /// ADDTIME (`1`) and SUBTIME (`-1`).
    AddTime(i64),
    /// FIND_IN_SET (set_type.rs), comparing in the collation.
    FindInSet(Collation),
    DateFormat,
    StrToDate,
    /// YEAR(), MONTH(), HOUR(), ... and EXTRACT(unit FROM x).
    Extract(Unit),
    DayOfWeek,
    DayOfYear,
    Weekday,
    Week,
    YearWeek,
    WeekOfYear,
    LastDay,
    DateOf,
    TimeOf,
    DayName,
    MonthName,
    ToDays,
    TimeToSec,
    SecToTime,
    TimeDiff,
    ConcatWs,
    Substring,
    Left,
    Right,
    Trim(TrimSide),
    Replace,
    /// LOCATE(needle, haystack[, pos]); INSTR and POSITION bind to it with swapped args.
    Locate(Collation),
    Lpad,
    Rpad,
    Repeat,
    Space,
    Reverse,
    Hex,
    Unhex,
    Ascii,
    Strcmp(Collation),
    RegexpLike(Collation),
    RegexpReplace(Collation),
    RegexpSubstr(Collation),
    RegexpInstr(Collation),
    NullIf(Collation),
    Greatest(Collation),
    Least(Collation),
    Round,
    Truncate,
    Floor,
    Ceil,
    Mod,
    Pow,
    Sign,
    Math(Math),
    Log,
    Rand,
    RowCount,
    FoundRows,
    SubstringIndex,
    Field(Collation),
    Elt,
    /// SLEEP(seconds): 0, or 1 when KILL QUERY or `max_execution_time` cut it short
    /// (interrupt.rs `sleep`).
    Sleep,
    /// BENCHMARK(count, expr): evaluates `expr` `count` times, 0; each time is a unit of work.
    Benchmark,
    /// The JSON functions (json_funcs.rs).
    Json(crate::json_funcs::JsonFunc),
    /// JSON_PRETTY, JSON_SEARCH, JSON_STORAGE_SIZE (json_extra.rs).
    JsonExtra(crate::json_extra::JsonExtra),
    /// MAKEDATE, MAKETIME, PERIOD_*, TIMESTAMP(), CONVERT_TZ (calendar_funcs.rs).
    Calendar(crate::calendar_funcs::CalendarFunc),
    /// Digests, ids and base64 (hash_funcs.rs).
    Hash(crate::hash_funcs::HashFunc),
    /// The less common string functions (text_funcs.rs).
    Text(crate::text_funcs::TextFunc),
    /// Trigonometry and BIT_COUNT (trig_funcs.rs).
    Trig(crate::trig_funcs::TrigFunc),
    /// The bitwise operators (bit_ops.rs).
    Bit(crate::bit_ops::BitOp),
    /// The bitwise operators over binary strings (bit_bytes.rs).
    BitBytes(crate::bit_ops::BitOp),
    /// Named user locks (user_locks.rs).
    Lock(crate::user_locks::LockFunc),
    /// MAKE_SET, EXPORT_SET, INTERVAL() (list_funcs.rs).
    List(crate::list_funcs::ListFunc),
    /// INET_ATON and the other address functions (inet_funcs.rs).
    Inet(crate::inet_funcs::InetFunc),
    /// AES_ENCRYPT, AES_DECRYPT (aes_funcs.rs).
    Aes(crate::aes_funcs::AesFunc),
    /// COMPRESS, UNCOMPRESS, UNCOMPRESSED_LENGTH (compress_funcs.rs).
    Compress(crate::compress_funcs::CompressFunc),
}

impl Builtin {
    /// Rule 4.
    pub(crate) fn is_volatile(self) -> bool {
        match self {
            Builtin::Hash(h) => h.is_volatile(),
            Builtin::Lock(_) => true,
            _ => matches!(self, Builtin::Rand | Builtin::Sleep | Builtin::Benchmark),
        }
    }
}

fn str_type(len: u32) -> SqlType {
    SqlType::Str {
        collation: Collation::Utf8mb4GeneralCi,
        len,
    }
}

fn int_type() -> SqlType {
    SqlType::Int {
        unsigned: false,
        len: 21,
    }
}

pub(crate) fn wrong_count(name: &str) -> SqlError {
    SqlError::new(
        1582,
        "42000",
        format!("Incorrect parameter count in the call to native function '{name}'"),
    )
}

/// Argument counts (min, max) of the functions bound by [`bind_call`]'s table.
fn arity(name: &str) -> Option<(usize, usize)> {
    Some(match name {
        "NOW" | "CURRENT_TIMESTAMP" | "LOCALTIMESTAMP" | "LOCALTIME" | "SYSDATE"
        | "UTC_TIMESTAMP" | "CURTIME" | "CURRENT_TIME" | "UTC_TIME" | "UNIX_TIMESTAMP" => (0, 1),
        "CURDATE" | "CURRENT_DATE" | "UTC_DATE" | "RAND" | "ROW_COUNT" | "FOUND_ROWS" => (0, 0),
        "FROM_UNIXTIME" | "WEEK" | "YEARWEEK" | "ROUND" | "LOG" => (1, 2),
        "DATEDIFF" | "DATE_FORMAT" | "TIME_FORMAT" | "STR_TO_DATE" | "TIMEDIFF" | "ADDTIME"
        | "SUBTIME" | "FIND_IN_SET" | "LEFT" | "RIGHT" | "REPEAT" | "INSTR" | "STRCMP"
        | "NULLIF" | "TRUNCATE" | "MOD" | "POW" | "POWER" | "BENCHMARK" => (2, 2),
        "YEAR" | "MONTH" | "DAY" | "DAYOFMONTH" | "HOUR" | "MINUTE" | "SECOND" | "MICROSECOND"
        | "QUARTER" | "DAYOFWEEK" | "DAYOFYEAR" | "WEEKDAY" | "WEEKOFYEAR" | "LAST_DAY"
        | "DATE" | "TIME" | "DAYNAME" | "MONTHNAME" | "TO_DAYS" | "TIME_TO_SEC" | "SEC_TO_TIME"
        | "LTRIM" | "RTRIM" | "TRIM" | "SPACE" | "REVERSE" | "HEX" | "UNHEX" | "ASCII"
        | "FLOOR" | "CEIL" | "CEILING" | "SIGN" | "SQRT" | "EXP" | "LN" | "LOG2" | "LOG10"
        | "SLEEP" => (1, 1),
        "SUBSTRING" | "SUBSTR" | "MID" | "LOCATE" | "REGEXP_LIKE" => (2, 3),
        "CONCAT_WS" | "GREATEST" | "LEAST" | "FIELD" | "ELT" => (2, usize::MAX),
        "REPLACE" | "LPAD" | "RPAD" | "SUBSTRING_INDEX" => (3, 3),
        "REGEXP_REPLACE" => (3, 6),
        "REGEXP_SUBSTR" => (2, 5),
        "REGEXP_INSTR" => (2, 6),
        _ => return None,
    })
}

fn literal_int(e: &Expr) -> Option<i64> {
    match e {
        Expr::Literal(v) => crate::value::to_i128(v).and_then(|n| i64::try_from(n).ok()),
        _ => None,
    }
}

/// A fractional-seconds precision argument: a constant 0..=6, else 1426.
fn fsp_arg(e: Option<&Expr>, name: &str) -> Result<u8, SqlError> {
    let Some(e) = e else {
        return Ok(0);
    };
    match literal_int(e) {
        Some(n @ 0..=6) => Ok(n as u8),
        Some(n) => Err(SqlError::new(
            1426,
            "42000",
            format!(
                "Too-big precision {n} specified for '{}'. Maximum is 6.",
                name.to_ascii_lowercase()
            ),
        )),
        None => Err(SqlError::syntax(name, 1)),
    }
}

/// Rule 2.
fn temporal_out(arg: &SqlType, unit: Unit) -> TemporalOut {
    let micros = if unit.has_micros() { 6 } else { 0 };
    match arg {
        SqlType::DateTime { fsp: None } if !unit.has_time() => TemporalOut::Date,
        SqlType::DateTime { fsp: None } => TemporalOut::DateTime(micros),
        SqlType::DateTime { fsp: Some(f) } => TemporalOut::DateTime((*f).max(micros)),
        _ => TemporalOut::Text,
    }
}

fn out_type(out: TemporalOut) -> SqlType {
    match out {
        TemporalOut::Date => SqlType::DateTime { fsp: None },
        TemporalOut::DateTime(f) => SqlType::DateTime { fsp: Some(f) },
        TemporalOut::Text => str_type(29),
    }
}

/// The unit of a parsed INTERVAL (compound units arrive as `DAY TO HOUR`, and
/// SECOND_MICROSECOND as `MICROSECOND TO SECOND`: parse.rs's pre-pass rule 5).
pub(crate) fn interval_unit(iv: &ast::Interval) -> Result<Unit, SqlError> {
    use ast::DateTimeField as F;
    let simple = |f: &F| -> Option<Unit> {
        Some(match f {
            F::Year | F::Years => Unit::Year,
            F::Month | F::Months => Unit::Month,
            F::Week(_) | F::Weeks => Unit::Week,
            F::Day | F::Days => Unit::Day,
            F::Hour | F::Hours => Unit::Hour,
            F::Minute | F::Minutes => Unit::Minute,
            F::Second | F::Seconds => Unit::Second,
            F::Microsecond | F::Microseconds => Unit::Microsecond,
            F::Quarter => Unit::Quarter,
            F::Custom(id) => return Unit::from_name(&id.value),
            _ => return None,
        })
    };
    let unit = match (&iv.leading_field, &iv.last_field) {
        (Some(f), None) => simple(f),
        (Some(a), Some(b)) => match (simple(a), simple(b)) {
            (Some(Unit::Day), Some(Unit::Hour)) => Some(Unit::DayHour),
            (Some(Unit::Day), Some(Unit::Minute)) => Some(Unit::DayMinute),
            (Some(Unit::Day), Some(Unit::Second)) => Some(Unit::DaySecond),
            (Some(Unit::Day), Some(Unit::Microsecond)) => Some(Unit::DayMicrosecond),
            (Some(Unit::Hour), Some(Unit::Minute)) => Some(Unit::HourMinute),
            (Some(Unit::Hour), Some(Unit::Second)) => Some(Unit::HourSecond),
            (Some(Unit::Hour), Some(Unit::Microsecond)) => Some(Unit::HourMicrosecond),
            (Some(Unit::Minute), Some(Unit::Second)) => Some(Unit::MinuteSecond),
            (Some(Unit::Minute), Some(Unit::Microsecond)) => Some(Unit::MinuteMicrosecond),
            (Some(Unit::Microsecond), Some(Unit::Second)) => Some(Unit::SecondMicrosecond),
            (Some(Unit::Year), Some(Unit::Month)) => Some(Unit::YearMonth),
            _ => None,
        },
        _ => None,
    };
    unit.ok_or_else(|| SqlError::syntax(&iv.to_string(), 1))
}

fn unit_ident(e: &ast::Expr) -> Result<Unit, SqlError> {
    match e {
        ast::Expr::Identifier(id) => Unit::from_name(&id.value),
        _ => None,
    }
    .ok_or_else(|| SqlError::syntax(&e.to_string(), 1))
}

fn call(b: Builtin, args: Vec<Expr>, t: SqlType) -> (Expr, SqlType) {
    (Expr::Func(Func::Builtin(b), args), t)
}

/// A date moved by an interval: DATE_ADD(d, INTERVAL n unit) and `d + INTERVAL n unit`.
fn bind_date_add(
    binder: &mut Binder<'_>,
    date: &ast::Expr,
    amount: &ast::Expr,
    unit: Unit,
    subtract: bool,
) -> Result<(Expr, SqlType), SqlError> {
    let (d, td) = binder.expr(date)?;
    let (n, _) = binder.expr(amount)?;
    let out = temporal_out(&td, unit);
    Ok(call(
        Builtin::DateAdd {
            unit,
            subtract,
            out,
        },
        vec![d, n],
        out_type(out),
    ))
}

/// `d + INTERVAL ...`, `INTERVAL ... + d` and `d - INTERVAL ...`; None when neither side
/// is an INTERVAL.
pub(crate) fn bind_interval_arith(
    binder: &mut Binder<'_>,
    left: &ast::Expr,
    op: &ast::BinaryOperator,
    right: &ast::Expr,
) -> Option<Result<(Expr, SqlType), SqlError>> {
    use ast::BinaryOperator as B;
    let (date, iv, subtract) = match (left, op, right) {
        (d, B::Plus, ast::Expr::Interval(iv)) | (ast::Expr::Interval(iv), B::Plus, d) => {
            (d, iv, false)
        }
        (d, B::Minus, ast::Expr::Interval(iv)) if !matches!(d, ast::Expr::Interval(_)) => {
            (d, iv, true)
        }
        (ast::Expr::Interval(iv), ..) | (_, _, ast::Expr::Interval(iv)) => {
            return Some(Err(SqlError::syntax(&iv.to_string(), 1)))
        }
        _ => return None,
    };
    Some(interval_unit(iv).and_then(|unit| bind_date_add(binder, date, &iv.value, unit, subtract)))
}

/// A call of a function expr.rs's own table does not know (rule 1).
pub(crate) fn bind_call(
    binder: &mut Binder<'_>,
    name: &str,
    args: &[&ast::Expr],
) -> Result<(Expr, SqlType), SqlError> {
    match (name, args) {
        ("DATE_ADD" | "ADDDATE" | "DATE_SUB" | "SUBDATE", [d, amount]) => {
            let subtract = name.ends_with("SUB") || name == "SUBDATE";
            return match amount {
                ast::Expr::Interval(iv) => {
                    bind_date_add(binder, d, &iv.value, interval_unit(iv)?, subtract)
                }
                n if name == "ADDDATE" || name == "SUBDATE" => {
                    bind_date_add(binder, d, n, Unit::Day, subtract)
                }
                other => Err(SqlError::syntax(&other.to_string(), 1)),
            };
        }
        ("TIMESTAMPDIFF", [unit, a, b]) => {
            let unit = unit_ident(unit)?;
            let (a, _) = binder.expr(a)?;
            let (b, _) = binder.expr(b)?;
            return Ok(call(Builtin::TimestampDiff(unit), vec![a, b], int_type()));
        }
        ("TIMESTAMPADD", [unit, n, d]) => {
            return bind_date_add(binder, d, n, unit_ident(unit)?, false)
        }
        ("DATE_ADD" | "ADDDATE" | "DATE_SUB" | "SUBDATE" | "TIMESTAMPDIFF" | "TIMESTAMPADD", _) => {
            return Err(wrong_count(name))
        }
        _ => {}
    }
    if let Some(bound) = crate::json_bind::bind(binder, name, args) {
        return bound;
    }
    if let Some(bound) = crate::hash_funcs::bind(binder, name, args)
        .or_else(|| crate::text_funcs::bind(binder, name, args))
        .or_else(|| crate::json_extra::bind(binder, name, args))
        .or_else(|| crate::calendar_funcs::bind(binder, name, args))
        .or_else(|| crate::trig_funcs::bind(binder, name, args))
        .or_else(|| crate::user_locks::bind(binder, name, args))
        .or_else(|| crate::list_funcs::bind(binder, name, args))
        .or_else(|| crate::inet_funcs::bind(binder, name, args))
        .or_else(|| crate::aes_funcs::bind(binder, name, args))
        .or_else(|| crate::compress_funcs::bind(binder, name, args))
    {
        return bound;
    }
    let Some((min, max)) = arity(name) else {
        return Err(SqlError::new(
            1305,
            "42000",
            format!("FUNCTION {name} does not exist"),
        ));
    };
    if args.len() < min || args.len() > max {
        return Err(wrong_count(name));
    }
    let mut bound = Vec::with_capacity(args.len());
    let mut types = Vec::with_capacity(args.len());
    for a in args {
        let (e, t) = binder.expr(a)?;
        bound.push(e);
        types.push(t);
    }
    let refs: Vec<&SqlType> = types.iter().collect();
    let coll = pick_collation(&refs);
    // The functions whose result mixes their arguments' collations (GREATEST and LEAST
    // also compare in it, as MySQL does, even when it is NONE); NULLIF compares in the mix
    // and returns its first argument.
    let operands: Vec<(&ast::Expr, &SqlType)> = args.iter().copied().zip(&types).collect();
    let (coll, mixed) = match name {
        "GREATEST" | "LEAST" | "CONCAT_WS" => {
            let op = name.to_ascii_lowercase();
            let node = crate::coercibility::Mixed::Call(args[0]);
            let mixed = crate::coercibility::for_result(binder, node, &operands, &op, false)?;
            (mixed.unwrap_or(coll), mixed)
        }
        "NULLIF" => (
            crate::coercibility::for_comparison(binder, &operands, "nullif")?,
            None,
        ),
        _ => (coll, None),
    };
    let first = types.first().cloned().unwrap_or(SqlType::Null);
    let text_len = |extra: u32| {
        str_type(
            types
                .iter()
                .map(|t| match t {
                    SqlType::Str { len, .. } => *len,
                    _ => 21,
                })
                .sum::<u32>()
                .saturating_add(extra)
                .min(65_535),
        )
    };
    let (f, t) = match name {
        "NOW" | "CURRENT_TIMESTAMP" | "LOCALTIMESTAMP" | "LOCALTIME" | "SYSDATE"
        | "UTC_TIMESTAMP" => {
            let fsp = fsp_arg(bound.first(), name)?;
            bound.clear();
            (
                Builtin::Now {
                    fsp,
                    utc: name == "UTC_TIMESTAMP",
                },
                SqlType::DateTime { fsp: Some(fsp) },
            )
        }
        "CURDATE" | "CURRENT_DATE" | "UTC_DATE" => (
            Builtin::CurDate {
                utc: name == "UTC_DATE",
            },
            SqlType::DateTime { fsp: None },
        ),
        "CURTIME" | "CURRENT_TIME" | "UTC_TIME" => {
            let fsp = fsp_arg(bound.first(), name)?;
            bound.clear();
            (
                Builtin::CurTime {
                    fsp,
                    utc: name == "UTC_TIME",
                },
                SqlType::Time { fsp },
            )
        }
        "UNIX_TIMESTAMP" => {
            let scale = match (&first, bound.first()) {
                (SqlType::DateTime { fsp: Some(f) }, _) => *f,
                (SqlType::Decimal { scale, .. }, _) => (*scale).min(6),
                // A literal's fraction digits, as MySQL types it when preparing.
                (SqlType::Str { .. }, Some(Expr::Literal(Value::Bytes(b)))) => {
                    let text = String::from_utf8_lossy(b);
                    match (dt::parse_lenient(&text), text.trim().rsplit_once('.')) {
                        (Some(d), Some((_, frac))) if d.has_time => frac.len().min(6) as u8,
                        _ => 0,
                    }
                }
                _ => 0,
            };
            let t = if scale == 0 {
                SqlType::Int {
                    unsigned: false,
                    len: 11,
                }
            } else {
                SqlType::Decimal {
                    precision: 11 + scale,
                    scale,
                }
            };
            (Builtin::UnixTimestamp { scale }, t)
        }
        "FROM_UNIXTIME" => {
            let fsp = match &first {
                SqlType::Int { .. } => 0,
                SqlType::Decimal { scale, .. } => (*scale).min(6),
                _ => 6,
            };
            let t = if bound.len() == 2 {
                str_type(64)
            } else {
                SqlType::DateTime { fsp: Some(fsp) }
            };
            (Builtin::FromUnixtime { fsp }, t)
        }
        "DATEDIFF" => (Builtin::DateDiff, int_type()),
        "DATE_FORMAT" => (Builtin::DateFormat, str_type(64)),
        "TIME_FORMAT" => (Builtin::TimeFormat, str_type(64)),
        "FIND_IN_SET" => (Builtin::FindInSet(coll), int_type()),
        "ADDTIME" | "SUBTIME" => {
            let t = match &first {
                SqlType::DateTime { fsp: Some(f) } => SqlType::DateTime { fsp: Some(*f) },
                SqlType::Time { fsp } => SqlType::Time { fsp: *fsp },
                _ => str_type(26),
            };
            (Builtin::AddTime(if name == "ADDTIME" { 1 } else { -1 }), t)
        }
        "STR_TO_DATE" => {
            let t = match bound.get(1) {
                Some(Expr::Literal(Value::Bytes(f))) => {
                    match crate::date_format::format_parts(&String::from_utf8_lossy(f)) {
                        (true, false, _) => SqlType::DateTime { fsp: None },
                        (true, true, frac) => SqlType::DateTime {
                            fsp: Some(if frac { 6 } else { 0 }),
                        },
                        (false, _, _) => str_type(17),
                    }
                }
                _ => SqlType::DateTime { fsp: Some(6) },
            };
            (Builtin::StrToDate, t)
        }
        "YEAR" => (Builtin::Extract(Unit::Year), int_type()),
        "MONTH" => (Builtin::Extract(Unit::Month), int_type()),
        "DAY" | "DAYOFMONTH" => (Builtin::Extract(Unit::Day), int_type()),
        "HOUR" => (Builtin::Extract(Unit::Hour), int_type()),
        "MINUTE" => (Builtin::Extract(Unit::Minute), int_type()),
        "SECOND" => (Builtin::Extract(Unit::Second), int_type()),
        "MICROSECOND" => (Builtin::Extract(Unit::Microsecond), int_type()),
        "QUARTER" => (Builtin::Extract(Unit::Quarter), int_type()),
        "DAYOFWEEK" => (Builtin::DayOfWeek, int_type()),
        "DAYOFYEAR" => (Builtin::DayOfYear, int_type()),
        "WEEKDAY" => (Builtin::Weekday, int_type()),
        "WEEK" => (Builtin::Week, int_type()),
        "YEARWEEK" => (Builtin::YearWeek, int_type()),
        "WEEKOFYEAR" => (Builtin::WeekOfYear, int_type()),
        "LAST_DAY" => (Builtin::LastDay, SqlType::DateTime { fsp: None }),
        "DATE" => (Builtin::DateOf, SqlType::DateTime { fsp: None }),
        "TIME" => {
            let fsp = match &first {
                SqlType::DateTime { fsp } => fsp.unwrap_or(0),
                SqlType::Time { fsp } => *fsp,
                SqlType::Int { .. } => 0,
                _ => 6,
            };
            (Builtin::TimeOf, SqlType::Time { fsp })
        }
        "DAYNAME" => (Builtin::DayName, str_type(9)),
        "MONTHNAME" => (Builtin::MonthName, str_type(9)),
        "TO_DAYS" | "TIME_TO_SEC" => (
            if name == "TO_DAYS" {
                Builtin::ToDays
            } else {
                Builtin::TimeToSec
            },
            int_type(),
        ),
        "SEC_TO_TIME" => {
            let fsp = match &first {
                SqlType::Int { .. } => 0,
                SqlType::Decimal { scale, .. } => (*scale).min(6),
                _ => 6,
            };
            (Builtin::SecToTime, SqlType::Time { fsp })
        }
        "TIMEDIFF" => {
            let digits = |t: &SqlType| match t {
                SqlType::DateTime { fsp } => fsp.unwrap_or(0),
                SqlType::Time { fsp } => *fsp,
                SqlType::Int { .. } => 0,
                _ => 6,
            };
            let fsp = types.iter().map(digits).max().unwrap_or(0);
            (Builtin::TimeDiff, SqlType::Time { fsp })
        }
        "CONCAT_WS" => (Builtin::ConcatWs, text_len(0)),
        "SUBSTRING" | "SUBSTR" | "MID" => (Builtin::Substring, text_len(0)),
        "LEFT" => (Builtin::Left, text_len(0)),
        "RIGHT" => (Builtin::Right, text_len(0)),
        "TRIM" => (Builtin::Trim(TrimSide::Both), text_len(0)),
        "LTRIM" => (Builtin::Trim(TrimSide::Leading), text_len(0)),
        "RTRIM" => (Builtin::Trim(TrimSide::Trailing), text_len(0)),
        "REPLACE" => (Builtin::Replace, text_len(0)),
        "LOCATE" => (Builtin::Locate(coll), int_type()),
        "INSTR" => {
            bound.swap(0, 1);
            (Builtin::Locate(coll), int_type())
        }
        "LPAD" => (Builtin::Lpad, str_type(255)),
        "RPAD" => (Builtin::Rpad, str_type(255)),
        "REPEAT" => (Builtin::Repeat, str_type(255)),
        "SPACE" => (Builtin::Space, str_type(255)),
        "REVERSE" => (Builtin::Reverse, text_len(0)),
        "HEX" => (Builtin::Hex, str_type(255)),
        "UNHEX" => (
            Builtin::Unhex,
            SqlType::Str {
                collation: Collation::Binary,
                len: 255,
            },
        ),
        "ASCII" => (Builtin::Ascii, int_type()),
        "STRCMP" => (Builtin::Strcmp(coll), int_type()),
        "REGEXP_LIKE" => (Builtin::RegexpLike(coll), bool_type()),
        "REGEXP_REPLACE" => (Builtin::RegexpReplace(coll), text_len(0)),
        "REGEXP_SUBSTR" => (Builtin::RegexpSubstr(coll), text_len(0)),
        "REGEXP_INSTR" => (Builtin::RegexpInstr(coll), int_type()),
        "NULLIF" => (Builtin::NullIf(coll), first),
        "GREATEST" | "LEAST" => {
            let t = if types.iter().all(|t| *t == first) {
                first
            } else {
                types.iter().fold(SqlType::Null, |a, b| unify(&a, b))
            };
            let f = if name == "GREATEST" {
                Builtin::Greatest(coll)
            } else {
                Builtin::Least(coll)
            };
            if let SqlType::Decimal { precision, scale } = t {
                // The winner shows at the common scale (GREATEST(-0.5, 0) is 0.0).
                let target = crate::cast::CastTarget::Decimal { precision, scale };
                let e = Expr::Cast(Expr::Func(Func::Builtin(f), bound).boxed(), target);
                return Ok((e, t));
            }
            (f, t)
        }
        "ROUND" | "TRUNCATE" => {
            let digits = bound.get(1).map_or(Some(0), literal_int);
            let t = match (&first, digits) {
                (SqlType::Decimal { precision, scale }, Some(d)) => SqlType::Decimal {
                    precision: *precision,
                    scale: (*scale).min(d.clamp(0, 30) as u8),
                },
                (SqlType::Decimal { precision, scale }, None) => SqlType::Decimal {
                    precision: *precision,
                    scale: *scale,
                },
                (SqlType::Int { .. }, _) => first.clone(),
                _ => SqlType::Double,
            };
            let f = if name == "ROUND" {
                Builtin::Round
            } else {
                Builtin::Truncate
            };
            (f, t)
        }
        "FLOOR" | "CEIL" | "CEILING" => {
            let t = match &first {
                SqlType::Int { .. } | SqlType::Decimal { .. } => int_type(),
                _ => SqlType::Double,
            };
            let f = if name == "FLOOR" {
                Builtin::Floor
            } else {
                Builtin::Ceil
            };
            (f, t)
        }
        "MOD" => {
            let second = types.get(1).cloned().unwrap_or(SqlType::Null);
            let t = match (&first, &second) {
                (SqlType::Int { unsigned, .. }, SqlType::Int { .. }) => SqlType::Int {
                    unsigned: *unsigned,
                    len: 21,
                },
                (
                    SqlType::Int { .. } | SqlType::Decimal { .. },
                    SqlType::Int { .. } | SqlType::Decimal { .. },
                ) => crate::decimal::arith_type(crate::value::ArithOp::Mod, &first, &second),
                _ => SqlType::Double,
            };
            (Builtin::Mod, t)
        }
        "POW" | "POWER" => (Builtin::Pow, SqlType::Double),
        "SIGN" => (Builtin::Sign, int_type()),
        "SQRT" => (Builtin::Math(Math::Sqrt), SqlType::Double),
        "EXP" => (Builtin::Math(Math::Exp), SqlType::Double),
        "LN" => (Builtin::Math(Math::Ln), SqlType::Double),
        "LOG2" => (Builtin::Math(Math::Log2), SqlType::Double),
        "LOG10" => (Builtin::Math(Math::Log10), SqlType::Double),
        "LOG" if bound.len() == 1 => (Builtin::Math(Math::Ln), SqlType::Double),
        "LOG" => (Builtin::Log, SqlType::Double),
        "RAND" => (Builtin::Rand, SqlType::Double),
        "SLEEP" => (Builtin::Sleep, int_type()),
        "BENCHMARK" => (Builtin::Benchmark, int_type()),
        "ROW_COUNT" => (Builtin::RowCount, int_type()),
        "SUBSTRING_INDEX" => (Builtin::SubstringIndex, text_len(0)),
        "FIELD" => (Builtin::Field(coll), int_type()),
        "ELT" => (Builtin::Elt, text_len(0)),
        "FOUND_ROWS" => (
            Builtin::FoundRows,
            SqlType::Int {
                unsigned: true,
                len: 21,
            },
        ),
        _ => {
            return Err(SqlError::new(
                1305,
                "42000",
                format!("FUNCTION {name} does not exist"),
            ))
        }
    };
    let t = match f {
        Builtin::Greatest(_) | Builtin::Least(_) | Builtin::ConcatWs => {
            crate::coercibility::with_collation(t, mixed)
        }
        _ => t,
    };
    Ok(call(f, bound, t))
}

fn bool_type() -> SqlType {
    SqlType::Int {
        unsigned: false,
        len: 1,
    }
}

/// The special syntax sqlparser gives its own nodes; `unsupported` (1235) for the rest.
pub(crate) fn bind_special(
    binder: &mut Binder<'_>,
    e: &ast::Expr,
) -> Result<(Expr, SqlType), SqlError> {
    match e {
        ast::Expr::Substring {
            expr,
            substring_from,
            substring_for,
            ..
        } => {
            let mut args: Vec<&ast::Expr> = vec![expr];
            match substring_from {
                Some(f) => args.push(f),
                None => return Err(wrong_count("SUBSTRING")),
            }
            if let Some(f) = substring_for {
                args.push(f);
            }
            bind_call(binder, "SUBSTRING", &args)
        }
        ast::Expr::Trim {
            trim_where,
            trim_what,
            expr,
            trim_characters: None,
        } => {
            let side = match trim_where {
                Some(ast::TrimWhereField::Leading) => TrimSide::Leading,
                Some(ast::TrimWhereField::Trailing) => TrimSide::Trailing,
                _ => TrimSide::Both,
            };
            let (s, ts) = binder.expr(expr)?;
            let mut args = vec![s];
            if let Some(w) = trim_what {
                args.push(binder.expr(w)?.0);
            }
            Ok(call(Builtin::Trim(side), args, ts))
        }
        ast::Expr::Position { expr, r#in } => bind_call(binder, "LOCATE", &[expr, r#in]),
        ast::Expr::Extract { field, expr, .. } => {
            let iv = ast::Interval {
                value: Box::new(ast::Expr::value(ast::Value::Null)),
                leading_field: Some(field.clone()),
                leading_precision: None,
                last_field: None,
                fractional_seconds_precision: None,
            };
            let unit = interval_unit(&iv)?;
            let (x, _) = binder.expr(expr)?;
            Ok(call(Builtin::Extract(unit), vec![x], int_type()))
        }
        ast::Expr::Ceil {
            expr,
            field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
        } => bind_call(binder, "CEIL", &[expr]),
        ast::Expr::Floor {
            expr,
            field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
        } => bind_call(binder, "FLOOR", &[expr]),
        ast::Expr::RLike {
            negated,
            expr,
            pattern,
            ..
        } => {
            let (x, t) = bind_call(binder, "REGEXP_LIKE", &[expr, pattern])?;
            Ok(if *negated {
                (Expr::Not(x.boxed()), t)
            } else {
                (x, t)
            })
        }
        ast::Expr::Convert {
            is_try: false,
            expr,
            data_type,
            charset,
            ..
        } => {
            let (x, _) = binder.expr(expr)?;
            match (data_type, charset) {
                (Some(dt), None) => {
                    let target = crate::cast::CastTarget::of(dt)?;
                    Ok((Expr::Cast(x.boxed(), target), target.result_type()))
                }
                (None, Some(cs)) => {
                    let name = crate::bind::ident_name(cs).join(".").to_ascii_lowercase();
                    let collation = match name.as_str() {
                        "binary" => Collation::Binary,
                        "utf8mb4" | "utf8" | "utf8mb3" | "latin1" | "ascii" => {
                            Collation::Utf8mb4GeneralCi
                        }
                        other => {
                            return Err(SqlError::new(
                                1115,
                                "42000",
                                format!("Unknown character set: '{other}'"),
                            ))
                        }
                    };
                    Ok((
                        Expr::Cast(x.boxed(), crate::cast::CastTarget::Char),
                        SqlType::Str {
                            collation,
                            len: 255,
                        },
                    ))
                }
                _ => Err(SqlError::unsupported(e.to_string())),
            }
        }
        ast::Expr::MemberOf(m) => crate::json_bind::bind_member_of(binder, &m.value, &m.array),
        other => Err(SqlError::unsupported(other.to_string())),
    }
}
