//! TIME's SQL rules: storing into a TIME(fsp) column, reading other values as a TIME, how a
//! TIME compares, TIME_FORMAT and ADDTIME/SUBTIME.
//!
//! 1. Stored into a TIME(fsp) column: a TIME as it is; text in MySQL's forms
//!    (`[-][D ]hh:mm[:ss][.f]`, `hhmmss[.f]`, a datetime's time: shale-table's
//!    `Time::parse`); an integer or decimal `[-]hhmmss[.f]` (`123456` is 12:34:56, `12.5`
//!    00:00:12.5); a DATETIME's time of day (a DATE's is 00:00:00). The fraction rounds
//!    half away from zero to `fsp`. A value past ±838:59:59, or one that is not a time,
//!    is 1292 "Incorrect time value: '...' for column 'c' at row N" (strict mode, the only
//!    mode Shale has; MySQL's non-strict clipping with 1264 is not done).
//! 2. In expressions (CAST, functions) a value past the range is clipped to ±838:59:59 and
//!    one that is not a time is NULL.
//! 3. A TIME compares with a TIME or with text that reads as a time as times (`t >
//!    '9:00:00'` is true for `10:00:00`), with other text as text, with numbers as the
//!    number `hhmmss[.f]`.
//! 4. In numeric context a TIME is `[-]hhmmss` (an integer at fsp 0, a decimal of `fsp`
//!    digits otherwise).

use std::cmp::Ordering;

use shale_table::{Collation, Decimal, Time, TimeParse, Value};

use crate::error::SqlError;

/// `value` read as a TIME with `fsp` digits (rules 1 and 2): `Ok` in range, `Clipped`
/// past it, `Invalid` when it is no time; None for NULL.
pub(crate) fn read(value: &Value, fsp: u8) -> Option<TimeParse> {
    Some(match value {
        Value::Null => return None,
        Value::Time(t) => Time::clipped(i128::from(t.micros()), fsp),
        Value::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => Time::parse(s, fsp),
            Err(_) => TimeParse::Invalid,
        },
        Value::Enum(_, text) | Value::Set(_, text) => Time::parse(text, fsp),
        Value::Int(i) => Time::from_number(i128::from(*i), 0, *i < 0, fsp),
        Value::UInt(u) => Time::from_number(i128::from(*u), 0, false, fsp),
        Value::Decimal(d) => from_decimal(d, fsp),
        Value::Double(d) => match Decimal::from_f64(*d) {
            Some(d) => from_decimal(&d, fsp),
            None => TimeParse::Invalid,
        },
        Value::DateTime(d) => {
            let (_, _, _, h, m, s, us) = d.parts();
            let micros = (i128::from(h) * 3600 + i128::from(m) * 60 + i128::from(s)) * 1_000_000
                + i128::from(us);
            Time::clipped(micros, fsp)
        }
    })
}

/// A decimal `[-]hhmmss.ffffff`.
fn from_decimal(d: &Decimal, fsp: u8) -> TimeParse {
    let micros = d.mul(&Decimal::from_i128(1_000_000)).round_to(0);
    let Some(total) = micros.to_i128() else {
        return TimeParse::Invalid;
    };
    let abs = total.abs();
    let fraction = u32::try_from(abs % 1_000_000).unwrap_or(0);
    Time::from_number(abs / 1_000_000, fraction, total < 0, fsp)
}

/// `value` stored into a TIME(`fsp`) column (rule 1).
pub(crate) fn store(value: &Value, fsp: u8, column: &str, row: usize) -> Result<Value, SqlError> {
    match read(value, fsp) {
        Some(TimeParse::Ok(t)) => Ok(Value::Time(t)),
        None => Ok(Value::Null),
        Some(TimeParse::Clipped(_) | TimeParse::Invalid) => Err(SqlError::new(
            1292,
            "22007",
            format!(
                "Incorrect time value: '{}' for column '{column}' at row {row}",
                crate::value::display(value)
            ),
        )),
    }
}

/// `value` as a TIME in an expression (rule 2); None for NULL and what is not a time.
pub(crate) fn to_time(value: &Value, fsp: u8) -> Option<Time> {
    match read(value, fsp)? {
        TimeParse::Ok(t) | TimeParse::Clipped(t) => Some(t),
        TimeParse::Invalid => None,
    }
}

/// A TIME result of `micros` microseconds shown with `fsp` digits, clipped (rule 2).
pub(crate) fn value_of(micros: i64, fsp: u8) -> Value {
    match Time::clipped(i128::from(micros), fsp) {
        TimeParse::Ok(t) | TimeParse::Clipped(t) => Value::Time(t),
        TimeParse::Invalid => Value::Null,
    }
}

/// Compares a TIME with a value of another kind (rule 3); None for NULL.
pub(crate) fn compare_mixed(time: &Time, other: &Value, collation: Collation) -> Option<Ordering> {
    match other {
        Value::Null => None,
        Value::Time(t) => Some(time.cmp(t)),
        Value::Bytes(b) => Some(match read(other, 6) {
            Some(TimeParse::Ok(t) | TimeParse::Clipped(t)) => time.cmp(&t),
            _ => collation.compare(time.to_string().as_bytes(), b),
        }),
        other => time.to_f64().partial_cmp(&crate::value::to_f64(other)?),
    }
}

/// The TIME as a number (rule 4).
pub(crate) fn to_number(time: &Time) -> Value {
    let (negative, h, m, s, us) = time.parts();
    let whole = i128::from(h) * 10_000 + i128::from(m) * 100 + i128::from(s);
    let signed = |v: i128| if negative { -v } else { v };
    if time.fsp() == 0 {
        // At most 8385959: fits.
        #[allow(clippy::cast_possible_truncation)]
        return Value::Int(signed(whole) as i64);
    }
    let scaled = Decimal::new(signed(whole * 1_000_000 + i128::from(us)).into(), 6);
    Value::Decimal(scaled.round_to(time.fsp()))
}

/// Display length MySQL reports for TIME(fsp): 10 (`-838:59:59`) plus the fraction.
pub(crate) fn display_length(fsp: u8) -> u32 {
    if fsp == 0 {
        10
    } else {
        11 + u32::from(fsp)
    }
}

/// ADDTIME(a, b) (`sign` 1) and SUBTIME(a, b) (`sign` -1): a DATETIME moved by the TIME
/// `b`, or the TIME `a + b` (clipped); NULL when `a` or `b` is not what it must be.
pub(crate) fn add_time(a: &Value, b: &Value, sign: i64) -> Value {
    let Some(delta) = to_time(b, 6) else {
        return Value::Null;
    };
    let delta = sign * delta.micros();
    let datetime = match a {
        Value::DateTime(d) if d.fsp().is_some() => Some(*d),
        Value::Bytes(_) => crate::datetime_funcs::date_arg(a)
            .filter(|d| d.has_time)
            .map(|d| d.value),
        _ => None,
    };
    if let Some(d) = datetime {
        let fsp = d.fsp().unwrap_or(0).max(digits_of(b));
        return d
            .with_fsp(Some(fsp))
            .add_micros(delta)
            .map_or(Value::Null, Value::DateTime);
    }
    match to_time(a, 6) {
        Some(t) => {
            let sum = t.micros() + delta;
            value_of(sum, digits_of(a).max(digits_of(b)))
        }
        None => Value::Null,
    }
}

/// The fraction digits a TIME made from `v` shows: a TIME's or DATETIME's own, a decimal's
/// scale, the digits written after the point in text (at most 6), 6 for a double.
pub(crate) fn digits_of(v: &Value) -> u8 {
    match v {
        Value::Time(t) => t.fsp(),
        Value::DateTime(d) => d.fsp().unwrap_or(0),
        Value::Decimal(d) => d.scale().min(6),
        Value::Double(_) => 6,
        Value::Bytes(b) => {
            let text = String::from_utf8_lossy(b);
            text.trim().rsplit_once('.').map_or(0, |(_, f)| {
                u8::try_from(f.chars().take_while(char::is_ascii_digit).count().min(6)).unwrap_or(6)
            })
        }
        _ => 0,
    }
}

/// TIME_FORMAT(t, format): the hour, minute, second and fraction specifiers of
/// DATE_FORMAT over a TIME (`%H` and `%k` go past 23); any other letter specifier makes
/// the result NULL, as MySQL's TIME_FORMAT gives NULL for date parts.
pub(crate) fn format(time: &Time, fmt: &str) -> Option<String> {
    let (negative, h, m, s, us) = time.parts();
    let h12 = match h % 12 {
        0 => 12,
        x => x,
    };
    let am_pm = if h % 24 < 12 { "AM" } else { "PM" };
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(spec) = chars.next() else {
            break;
        };
        let part = match spec {
            'H' => format!("{h:02}"),
            'k' => h.to_string(),
            'h' | 'I' => format!("{h12:02}"),
            'l' => h12.to_string(),
            'i' => format!("{m:02}"),
            's' | 'S' => format!("{s:02}"),
            'f' => format!("{us:06}"),
            'p' => am_pm.to_string(),
            'r' => format!("{h12:02}:{m:02}:{s:02} {am_pm}"),
            'T' => format!("{h:02}:{m:02}:{s:02}"),
            c if c.is_ascii_alphabetic() => return None,
            other => other.to_string(),
        };
        out.push_str(&part);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Value {
        Value::Bytes(s.as_bytes().to_vec())
    }

    fn shown(v: &Value) -> String {
        crate::value::display(v)
    }

    #[test]
    fn storing_reads_every_form() {
        let cases = [
            (b("12:34:56"), 0, "12:34:56"),
            (b("1 02:00:00"), 0, "26:00:00"),
            (b("-00:00:01"), 0, "-00:00:01"),
            (Value::Int(123_456), 0, "12:34:56"),
            (Value::Int(-123_456), 0, "-12:34:56"),
            (
                Value::Decimal(Decimal::parse("12.5").unwrap()),
                1,
                "00:00:12.5",
            ),
            (Value::Double(12.5), 0, "00:00:13"),
            (b("10:11:12.123456"), 3, "10:11:12.123"),
        ];
        for (v, fsp, want) in cases {
            assert_eq!(shown(&store(&v, fsp, "c", 1).unwrap()), want, "{v:?}");
        }
        for bad in [b("abc"), b("850:00:00"), b("12:61:00"), Value::Int(160)] {
            let e = store(&bad, 0, "c", 2).unwrap_err();
            assert_eq!(e.code, 1292, "{bad:?}");
        }
        let e = store(&b("900:00:00"), 0, "t", 3).unwrap_err();
        assert_eq!(
            e.message,
            "Incorrect time value: '900:00:00' for column 't' at row 3"
        );
    }

    #[test]
    fn compares_and_converts() {
        let ten = to_time(&b("10:00:00"), 0).unwrap();
        let ci = Collation::Utf8mb4GeneralCi;
        assert_eq!(
            compare_mixed(&ten, &b("9:00:00"), ci),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare_mixed(&ten, &b("10:00:00"), ci),
            Some(Ordering::Equal)
        );
        assert_eq!(
            compare_mixed(&ten, &Value::Int(95_959), ci),
            Some(Ordering::Greater)
        );
        assert_eq!(compare_mixed(&ten, &Value::Null, ci), None);
        assert_eq!(shown(&to_number(&ten)), "100000");
        let frac = to_time(&b("-12:34:56.5"), 1).unwrap();
        assert_eq!(shown(&to_number(&frac)), "-123456.5");
        assert_eq!(
            shown(&to_time(&b("900:00:00"), 0).map(Value::Time).unwrap()),
            "838:59:59"
        );
    }

    #[test]
    fn add_time_and_format() {
        assert_eq!(
            shown(&add_time(&b("01:00:00"), &b("02:30:00"), 1)),
            "03:30:00"
        );
        assert_eq!(
            shown(&add_time(&b("2024-01-01 23:00:00"), &b("02:00:00"), 1)),
            "2024-01-02 01:00:00"
        );
        assert_eq!(
            shown(&add_time(&b("01:00:00"), &b("02:00:00"), -1)),
            "-01:00:00"
        );
        assert_eq!(add_time(&b("x"), &b("02:00:00"), 1), Value::Null);
        let t = to_time(&b("100:00:00"), 0).unwrap();
        assert_eq!(
            format(&t, "%H %k %h %I %l %i %s %f %p %r %T").unwrap(),
            "100 100 04 04 4 00 00 000000 AM 04:00:00 AM 100:00:00"
        );
        assert_eq!(format(&t, "%Y"), None);
    }
}
