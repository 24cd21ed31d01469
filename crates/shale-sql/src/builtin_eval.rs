//! Evaluation of the functions builtin.rs binds: each arm calls the value rules of
//! datetime_funcs.rs, date_format.rs, string_funcs.rs or numeric_funcs.rs.

use shale_table::Value;

use crate::builtin::{Builtin, TemporalOut};
use crate::datetime_funcs::{self as dt, Unit, MICROS_PER_DAY, MICROS_PER_SECOND};
use crate::error::SqlError;
use crate::expr::{Env, Expr};
use crate::numeric_funcs as num;
use crate::string_funcs as st;

fn dated(v: &Value) -> Option<dt::Dated> {
    dt::date_arg(v)
}

/// A date result in the shape binding chose (rule 2).
fn temporal_value(d: dt::Dated, out: TemporalOut) -> Value {
    match out {
        TemporalOut::Date => Value::DateTime(d.value.round_to(None)),
        TemporalOut::DateTime(f) => Value::DateTime(d.value.round_to(Some(f))),
        TemporalOut::Text => {
            let shown = if !d.has_time {
                d.value.round_to(None)
            } else if d.value.parts().6 != 0 {
                d.value.with_fsp(Some(6))
            } else {
                d.value.with_fsp(Some(0))
            };
            Value::Bytes(shown.to_string().into_bytes())
        }
    }
}

fn int(n: i64) -> Value {
    Value::Int(n)
}

/// SLEEP(seconds): MySQL's strict-mode error for NULL or a negative duration; the longest
/// sleep is a year (MySQL's limit), so no argument overflows the clock.
fn sleep(seconds: &Value) -> Result<Value, SqlError> {
    const YEAR: f64 = 365.0 * 86_400.0;
    let seconds = match seconds {
        Value::Null => None,
        v => crate::value::to_f64(v).filter(|s| *s >= 0.0),
    }
    .ok_or_else(|| SqlError::new(1210, "HY000", "Incorrect arguments to sleep"))?;
    let duration = std::time::Duration::from_secs_f64(seconds.min(YEAR));
    Ok(match crate::interrupt::sleep(duration)? {
        crate::interrupt::Slept::Fully => int(0),
        crate::interrupt::Slept::Interrupted => int(1),
    })
}

/// BENCHMARK(count, expr): `expr` evaluated `count` times (NULL count: NULL; negative:
/// MySQL's error 1210), each a unit of work for KILL and `max_execution_time`.
fn benchmark(args: &[Expr], row: &[Value], env: &dyn Env) -> Result<Value, SqlError> {
    let (Some(count), Some(expr)) = (args.first(), args.get(1)) else {
        return Ok(Value::Null);
    };
    let count = match count.eval(row, env)? {
        Value::Null => return Ok(Value::Null),
        v => crate::value::to_f64(&v).unwrap_or(0.0),
    };
    if count < 0.0 {
        return Err(SqlError::new(
            1210,
            "HY000",
            "Incorrect arguments to benchmark",
        ));
    }
    // Saturating: a count past u64 runs until KILL or the deadline stops it.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let count = count.round() as u64;
    for _ in 0..count {
        expr.eval(row, env)?;
        crate::interrupt::tick()?;
    }
    Ok(int(0))
}

fn text(s: impl Into<String>) -> Value {
    Value::Bytes(s.into().into_bytes())
}

/// The session's wall clock now (rule 3), in microseconds since 1970-01-01.
fn wall_clock(env: &dyn Env, utc: bool) -> Result<i64, SqlError> {
    let offset = if utc {
        0
    } else {
        dt::zone_offset(&env.variable("time_zone"))?
    };
    Ok(env.statement_time() + offset * MICROS_PER_SECOND)
}

fn truncate_micros(micros: i64, fsp: u8) -> i64 {
    let unit = 10i64.pow(6 - u32::from(fsp.min(6)));
    micros - micros.rem_euclid(unit)
}

/// Evaluates a built-in function.
#[allow(clippy::too_many_lines)] // one arm per function, each a call into its rules module
pub(crate) fn eval(
    f: Builtin,
    args: &[Expr],
    row: &[Value],
    env: &dyn Env,
) -> Result<Value, SqlError> {
    if f == Builtin::Benchmark {
        return benchmark(args, row, env);
    }
    let mut vals = Vec::with_capacity(args.len());
    for a in args {
        vals.push(a.eval(row, env)?);
    }
    let arg = |i: usize| vals.get(i).unwrap_or(&Value::Null);
    let date = |i: usize| dated(arg(i));
    let date_parts = |i: usize| {
        date(i).map(|d| {
            let (y, m, day, ..) = d.value.parts();
            (i64::from(y), i64::from(m), i64::from(day))
        })
    };
    Ok(match f {
        Builtin::Now { fsp, utc } => {
            let micros = truncate_micros(wall_clock(env, utc)?, fsp);
            dt::from_epoch_micros(micros, Some(fsp)).map_or(Value::Null, Value::DateTime)
        }
        Builtin::CurDate { utc } => dt::from_epoch_micros(wall_clock(env, utc)?, None)
            .map_or(Value::Null, |d| Value::DateTime(d.round_to(None))),
        Builtin::CurTime { fsp, utc } => {
            let micros = truncate_micros(wall_clock(env, utc)?, fsp).rem_euclid(MICROS_PER_DAY);
            crate::time_type::value_of(micros, fsp)
        }
        Builtin::UnixTimestamp { scale } => {
            let micros = if args.is_empty() {
                env.statement_time()
            } else {
                let Some(d) = date(0) else {
                    return Ok(Value::Null);
                };
                let offset = dt::zone_offset(&env.variable("time_zone"))?;
                let m = crate::date_format::unix_micros(&d.value, offset);
                if m < 0 {
                    return Ok(int(0));
                }
                m
            };
            if scale == 0 {
                int(micros.div_euclid(MICROS_PER_SECOND))
            } else {
                let d = shale_table::Decimal::new(micros.into(), 6);
                Value::Decimal(d.round_to(scale))
            }
        }
        Builtin::FromUnixtime { fsp } => {
            let Some(secs) = crate::decimal::to_decimal(arg(0)) else {
                return Ok(Value::Null);
            };
            if secs.is_negative() {
                return Ok(Value::Null);
            }
            let micros = secs
                .mul(&shale_table::Decimal::from_i128(1_000_000))
                .round_to(0)
                .to_i128()
                .and_then(|m| i64::try_from(m).ok());
            let Some(micros) = micros else {
                return Ok(Value::Null);
            };
            let offset = dt::zone_offset(&env.variable("time_zone"))?;
            let Some(d) = dt::from_epoch_micros(micros + offset * MICROS_PER_SECOND, Some(6))
            else {
                return Ok(Value::Null);
            };
            match vals.get(1) {
                None => Value::DateTime(d.round_to(Some(fsp))),
                Some(Value::Null) => Value::Null,
                Some(fmt) => text(crate::date_format::format(
                    &d,
                    &crate::value::as_text(fmt).unwrap_or_default(),
                )),
            }
        }
        Builtin::DateAdd {
            unit,
            subtract,
            out,
        } => {
            let (Some(d), Some(mut iv)) = (date(0), dt::interval(arg(1), unit)) else {
                return Ok(Value::Null);
            };
            if subtract {
                iv.months = -iv.months;
                iv.micros = -iv.micros;
            }
            let base = d.value.with_fsp(Some(6));
            match dt::add_interval(&base, iv) {
                Some(v) => temporal_value(
                    dt::Dated {
                        value: v,
                        has_time: d.has_time || unit.has_time(),
                    },
                    out,
                ),
                None => Value::Null,
            }
        }
        Builtin::DateDiff => match (date_parts(0), date_parts(1)) {
            (Some((y1, m1, d1)), Some((y2, m2, d2))) => {
                int(dt::days_from_civil(y1, m1, d1) - dt::days_from_civil(y2, m2, d2))
            }
            _ => Value::Null,
        },
        Builtin::TimestampDiff(unit) => match (date(0), date(1)) {
            (Some(a), Some(b)) => int(dt::timestamp_diff(unit, &a.value, &b.value)),
            _ => Value::Null,
        },
        Builtin::DateFormat => match (date(0), crate::value::as_text(arg(1))) {
            (Some(d), Some(fmt)) => text(crate::date_format::format(&d.value, &fmt)),
            (None, Some(fmt)) if !fmt.is_empty() => match dt::time_arg(arg(0)) {
                // TIME_FORMAT of a time: the time of day on no particular date.
                Some(t) if (0..MICROS_PER_DAY).contains(&t) => {
                    let d = dt::from_epoch_micros(t, Some(6));
                    d.map_or(Value::Null, |d| text(crate::date_format::format(&d, &fmt)))
                }
                _ => Value::Null,
            },
            _ => Value::Null,
        },
        Builtin::StrToDate => {
            let (Some(s), Some(fmt)) =
                (crate::value::as_text(arg(0)), crate::value::as_text(arg(1)))
            else {
                return Ok(Value::Null);
            };
            match crate::date_format::str_to_date(&s, &fmt) {
                Some(crate::date_format::Parsed::Date(d)) => Value::DateTime(d),
                Some(crate::date_format::Parsed::Time(t)) => text(t),
                None => Value::Null,
            }
        }
        Builtin::Extract(unit) => extract(unit, arg(0)),
        Builtin::DayOfWeek | Builtin::Weekday | Builtin::DayOfYear | Builtin::ToDays => {
            let Some((y, m, d)) = date_parts(0) else {
                return Ok(Value::Null);
            };
            let days = dt::days_from_civil(y, m, d);
            int(match f {
                Builtin::DayOfWeek => (dt::weekday(days) + 1) % 7 + 1,
                Builtin::Weekday => dt::weekday(days),
                Builtin::DayOfYear => days - dt::days_from_civil(y, 1, 1) + 1,
                // MySQL's day number: days since year 0 (0000-01-01 is day 1).
                _ => days + 719_528,
            })
        }
        Builtin::Week | Builtin::YearWeek | Builtin::WeekOfYear => {
            let Some((y, m, d)) = date_parts(0) else {
                return Ok(Value::Null);
            };
            let mode = match vals.get(1) {
                Some(v) => crate::value::to_i128(v).map_or(0, |n| n.rem_euclid(8) as i64),
                None => match env.variable("default_week_format") {
                    Value::Null => 0,
                    v => crate::value::to_i128(&v).map_or(0, |n| n.rem_euclid(8) as i64),
                },
            };
            match f {
                Builtin::Week => int(dt::calc_week(y, m, d, dt::week_mode(mode)).0),
                Builtin::WeekOfYear => int(dt::calc_week(y, m, d, dt::week_mode(3)).0),
                _ => {
                    let (w, year) = dt::calc_week(y, m, d, dt::week_mode(mode) | 2);
                    int(year * 100 + w)
                }
            }
        }
        Builtin::LastDay => match date_parts(0) {
            Some((y, m, _)) => {
                let days = dt::days_from_civil(y, m, dt::days_in_month(y, m));
                dt::from_epoch_micros(days * MICROS_PER_DAY, None)
                    .map_or(Value::Null, |d| Value::DateTime(d.round_to(None)))
            }
            None => Value::Null,
        },
        Builtin::DateOf => date(0).map_or(Value::Null, |d| Value::DateTime(d.value.round_to(None))),
        Builtin::TimeOf => dt::time_arg(arg(0)).map_or(Value::Null, |t| {
            crate::time_type::value_of(t, crate::time_type::digits_of(arg(0)))
        }),
        Builtin::DayName => match date_parts(0) {
            Some((y, m, d)) => text(crate::date_format::day_name(dt::weekday(
                dt::days_from_civil(y, m, d),
            ))),
            None => Value::Null,
        },
        Builtin::MonthName => match date_parts(0) {
            Some((_, m, _)) => text(crate::date_format::month_name(m as u8)),
            None => Value::Null,
        },
        Builtin::TimeToSec => {
            dt::time_arg(arg(0)).map_or(Value::Null, |t| int(t / MICROS_PER_SECOND))
        }
        Builtin::SecToTime => match crate::decimal::to_decimal(arg(0)) {
            Some(s) => {
                let micros = s
                    .mul(&shale_table::Decimal::from_i128(1_000_000))
                    .round_to(0)
                    .to_i128()
                    .map_or(i64::MAX, |m| {
                        m.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
                    });
                crate::time_type::value_of(micros, crate::time_type::digits_of(arg(0)))
            }
            None => Value::Null,
        },
        Builtin::TimeDiff => {
            let a = date(0).filter(|d| d.has_time);
            let b = date(1).filter(|d| d.has_time);
            let diff = match (a, b) {
                (Some(a), Some(b)) => Some(dt::epoch_micros(&a.value) - dt::epoch_micros(&b.value)),
                (None, None) => match (dt::time_arg(arg(0)), dt::time_arg(arg(1))) {
                    (Some(x), Some(y))
                        if !matches!(arg(0), Value::DateTime(_))
                            && !matches!(arg(1), Value::DateTime(_)) =>
                    {
                        Some(x - y)
                    }
                    _ => None,
                },
                _ => None,
            };
            let fsp = crate::time_type::digits_of(arg(0)).max(crate::time_type::digits_of(arg(1)));
            diff.map_or(Value::Null, |d| crate::time_type::value_of(d, fsp))
        }
        Builtin::TimeFormat => match (arg(0), crate::value::as_text(arg(1))) {
            (Value::Null, _) | (_, None) => Value::Null,
            (v, Some(fmt)) => crate::time_type::to_time(v, 6)
                .and_then(|t| crate::time_type::format(&t, &fmt))
                .map_or(Value::Null, text),
        },
        Builtin::AddTime(sign) => crate::time_type::add_time(arg(0), arg(1), sign),
        Builtin::FindInSet(c) => crate::set_type::find_in_set(arg(0), arg(1), c),
        Builtin::ConcatWs => st::concat_ws(&vals),
        Builtin::Substring => st::substring(arg(0), arg(1), vals.get(2)),
        Builtin::Left => st::left_right(arg(0), arg(1), false),
        Builtin::Right => st::left_right(arg(0), arg(1), true),
        Builtin::Trim(side) => st::trim(arg(0), vals.get(1), side),
        Builtin::Replace => st::replace(arg(0), arg(1), arg(2)),
        Builtin::Locate(c) => st::locate(arg(0), arg(1), vals.get(2), c),
        Builtin::Lpad => st::pad(arg(0), arg(1), arg(2), true),
        Builtin::Rpad => st::pad(arg(0), arg(1), arg(2), false),
        Builtin::Repeat => st::repeat(arg(0), arg(1)),
        Builtin::Space => st::space(arg(0)),
        Builtin::Reverse => st::reverse(arg(0)),
        Builtin::Hex => st::hex(arg(0)),
        Builtin::Unhex => st::unhex(arg(0)),
        Builtin::Ascii => st::ascii(arg(0)),
        Builtin::Strcmp(c) => st::strcmp(arg(0), arg(1), c),
        Builtin::RegexpLike(c) => st::regexp_like(arg(0), arg(1), vals.get(2), c)?,
        Builtin::RegexpReplace(c) => st::regexp_replace(&vals, c)?,
        Builtin::RegexpSubstr(c) => st::regexp_find(&vals, c, false)?,
        Builtin::RegexpInstr(c) => st::regexp_find(&vals, c, true)?,
        Builtin::NullIf(c) => {
            if crate::value::compare(arg(0), arg(1), c) == Some(std::cmp::Ordering::Equal) {
                Value::Null
            } else {
                arg(0).clone()
            }
        }
        Builtin::Greatest(c) | Builtin::Least(c) => {
            let want = if matches!(f, Builtin::Greatest(_)) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Less
            };
            let mut best = arg(0).clone();
            for v in &vals {
                match crate::value::compare(v, &best, c) {
                    None => return Ok(Value::Null),
                    Some(o) if o == want => best = v.clone(),
                    Some(_) => {}
                }
            }
            best
        }
        Builtin::Round => num::round(arg(0), vals.get(1), false),
        Builtin::Truncate => num::round(arg(0), vals.get(1), true),
        Builtin::Floor => num::floor_ceil(arg(0), false),
        Builtin::Ceil => num::floor_ceil(arg(0), true),
        Builtin::Mod => {
            let r = crate::value::arith(crate::value::ArithOp::Mod, arg(0), arg(1))?;
            // MOD(x, 0) is a division by zero (lenient_store.rs rule 4).
            if matches!(r, Value::Null)
                && !matches!(arg(0), Value::Null)
                && !matches!(arg(1), Value::Null)
            {
                env.division_by_zero()?;
            }
            r
        }
        Builtin::Pow => num::pow(arg(0), arg(1))?,
        Builtin::Sign => num::sign(arg(0)),
        Builtin::Math(m) => num::math(m, arg(0))?,
        Builtin::Log => num::log_base(arg(0), arg(1)),
        Builtin::Rand => num::rand(),
        Builtin::Sleep => sleep(arg(0))?,
        // Never reached: evaluated above, before (and instead of) its arguments.
        Builtin::Benchmark => return benchmark(args, row, env),
        Builtin::RowCount => int(env.row_counts().0),
        Builtin::SubstringIndex => st::substring_index(arg(0), arg(1), arg(2)),
        Builtin::Field(c) => st::field(&vals, c),
        Builtin::Elt => st::elt(&vals),
        Builtin::Json(j) => crate::json_funcs::eval(j, &vals)?,
        Builtin::Hash(h) => crate::hash_funcs::eval(h, &vals)?,
        Builtin::Text(t) => crate::text_funcs::eval(t, &vals),
        Builtin::JsonExtra(j) => crate::json_extra::eval(j, &vals)?,
        Builtin::Calendar(c) => crate::calendar_funcs::eval(c, &vals)?,
        Builtin::Trig(t) => crate::trig_funcs::eval(t, &vals)?,
        Builtin::Bit(op) => crate::bit_ops::eval(op, &vals),
        Builtin::BitBytes(op) => crate::bit_bytes::eval(op, &vals)?,
        Builtin::Lock(l) => crate::user_locks::eval(l, &vals)?,
        Builtin::List(l) => crate::list_funcs::eval(l, &vals),
        Builtin::Inet(i) => crate::inet_funcs::eval(i, arg(0)),
        Builtin::Compress(c) => crate::compress_funcs::eval(c, arg(0), env),
        Builtin::Aes(a) => {
            crate::aes_funcs::eval(a, &vals, &env.variable("block_encryption_mode"))?
        }
        Builtin::FoundRows => Value::UInt(env.row_counts().1),
    })
}

/// YEAR(), HOUR(), ... and EXTRACT(unit FROM x): date parts from a date, time parts from a
/// time or a date's time.
fn extract(unit: Unit, v: &Value) -> Value {
    let date_part = |f: fn(i64, i64, i64) -> i64| {
        dt::date_arg(v).map_or(Value::Null, |d| {
            let (y, m, day, ..) = d.value.parts();
            Value::Int(f(i64::from(y), i64::from(m), i64::from(day)))
        })
    };
    // HOUR/MINUTE/SECOND of a negative time are those of its magnitude, as in MySQL.
    let time_part =
        |f: fn(i64) -> i64| dt::time_arg(v).map_or(Value::Null, |t| Value::Int(f(t.abs())));
    match unit {
        Unit::Year => date_part(|y, _, _| y),
        Unit::Month => date_part(|_, m, _| m),
        Unit::Day => date_part(|_, _, d| d),
        Unit::Quarter => date_part(|_, m, _| (m + 2) / 3),
        Unit::Week => date_part(|y, m, d| dt::calc_week(y, m, d, dt::week_mode(0)).0),
        Unit::YearMonth => date_part(|y, m, _| y * 100 + m),
        Unit::Hour => time_part(|t| t / (3600 * MICROS_PER_SECOND)),
        Unit::Minute => time_part(|t| t / (60 * MICROS_PER_SECOND) % 60),
        Unit::Second => time_part(|t| t / MICROS_PER_SECOND % 60),
        Unit::Microsecond => time_part(|t| t % MICROS_PER_SECOND),
        Unit::HourMinute => {
            time_part(|t| t / (3600 * MICROS_PER_SECOND) * 100 + t / (60 * MICROS_PER_SECOND) % 60)
        }
        Unit::MinuteSecond => {
            time_part(|t| t / (60 * MICROS_PER_SECOND) % 60 * 100 + t / MICROS_PER_SECOND % 60)
        }
        Unit::HourSecond => time_part(|t| {
            let s = t / MICROS_PER_SECOND;
            s / 3600 * 10_000 + s / 60 % 60 * 100 + s % 60
        }),
        Unit::SecondMicrosecond => {
            time_part(|t| t / MICROS_PER_SECOND % 60 * 1_000_000 + t % MICROS_PER_SECOND)
        }
        Unit::DayHour => match dt::date_arg(v) {
            Some(d) => {
                let (_, _, day, h, ..) = d.value.parts();
                Value::Int(i64::from(day) * 100 + i64::from(h))
            }
            None => Value::Null,
        },
        _ => Value::Null,
    }
}
