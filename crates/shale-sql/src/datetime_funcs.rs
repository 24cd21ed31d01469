//! The arithmetic behind the date and time functions (builtin.rs binds them): reading a
//! value as a date or a time of day the way MySQL's functions do, intervals, session time
//! zones and week numbers.
//!
//! Rules:
//! 1. A function argument reads as a date when it is a DATE/DATETIME value, text in any
//!    punctuation (`2024-01-02`, `2024/1/2 10.11.12`, `20240102`, `240102101112`) or an
//!    integer `YYYYMMDD`, `YYMMDD`, `YYYYMMDDhhmmss`, `YYMMDDhhmmss` (two-digit years
//!    70..=99 are 19xx, 00..=69 20xx). Anything else is NULL (MySQL adds warning 1292).
//! 2. Dates live in years 1000..=9999 (shale-table's `DateTime`); arithmetic leaving that
//!    range gives NULL, as MySQL does past 9999.
//! 3. Adding months keeps the day unless the month is shorter (`2024-01-31` + 1 MONTH is
//!    `2024-02-29`).
//! 4. A session's `time_zone` is `SYSTEM` (the server's zone, UTC) or an offset `+hh:mm`
//!    from -13:59 to +14:00; NOW() and FROM_UNIXTIME() show that zone's wall clock and
//!    UNIX_TIMESTAMP(d) reads d in it.
//! 5. Times of day (TIME's text) are `[-]hhh:mm:ss[.ffffff]` within -838:59:59..838:59:59.

use shale_table::{DateTime, Value};

use crate::error::SqlError;

pub(crate) const MICROS_PER_SECOND: i64 = 1_000_000;
pub(crate) const MICROS_PER_DAY: i64 = 86_400 * MICROS_PER_SECOND;
/// TIME's largest magnitude, 838:59:59, in microseconds.
pub(crate) const TIME_MAX_MICROS: i64 = (838 * 3600 + 59 * 60 + 59) * MICROS_PER_SECOND;

/// The system clock in microseconds since 1970-01-01 UTC.
pub(crate) fn clock_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`].
pub(crate) fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

pub(crate) fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

pub(crate) fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(y) => 29,
        2 => 28,
        _ => 31,
    }
}

/// Microseconds since 1970-01-01 00:00:00 of a date's wall clock.
pub(crate) fn epoch_micros(d: &DateTime) -> i64 {
    let (y, mo, da, h, mi, s, us) = d.parts();
    let days = days_from_civil(i64::from(y), i64::from(mo), i64::from(da));
    days * MICROS_PER_DAY
        + (i64::from(h) * 3600 + i64::from(mi) * 60 + i64::from(s)) * MICROS_PER_SECOND
        + i64::from(us)
}

/// The wall clock `micros` after 1970-01-01 as a DATE (`fsp` None) or DATETIME(fsp); None
/// outside years 1000..=9999 (rule 2). The time is kept even for a DATE (its caller rounds).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // parts are in range
pub(crate) fn from_epoch_micros(micros: i64, fsp: Option<u8>) -> Option<DateTime> {
    let days = micros.div_euclid(MICROS_PER_DAY);
    let in_day = micros.rem_euclid(MICROS_PER_DAY);
    let (y, m, d) = civil_from_days(days);
    let secs = in_day / MICROS_PER_SECOND;
    DateTime::new(
        u16::try_from(y).ok()?,
        m as u8,
        d as u8,
        (secs / 3600) as u8,
        (secs / 60 % 60) as u8,
        (secs % 60) as u8,
        (in_day % MICROS_PER_SECOND) as u32,
        Some(6),
    )
    .map(|v| v.with_fsp(fsp))
}

/// Whether the value is a date only (a DATE, or text/number with no time part).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dated {
    pub value: DateTime,
    pub has_time: bool,
}

/// A function argument read as a date (rule 1); None for NULL and for what is not a date.
pub(crate) fn date_arg(v: &Value) -> Option<Dated> {
    match v {
        Value::DateTime(d) => Some(Dated {
            value: *d,
            has_time: d.fsp().is_some(),
        }),
        Value::Bytes(b) => parse_lenient(std::str::from_utf8(b).ok()?),
        Value::Int(i) => number_form(&i.to_string(), None),
        Value::UInt(u) => number_form(&u.to_string(), None),
        Value::Decimal(d) => {
            let text = d.to_string();
            let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
            number_form(int, Some(frac))
        }
        Value::Double(d) => number_form(&format!("{}", d.trunc()), None),
        // A TIME is not read as a date here (MySQL would put it on the current date).
        Value::Enum(_, text) | Value::Set(_, text) => parse_lenient(text),
        Value::Time(_) | Value::Null => None,
    }
}

fn two_digit_year(y: i64) -> i64 {
    if y < 70 {
        2000 + y
    } else {
        1900 + y
    }
}

/// Microseconds of a fraction's digits (`5` is 500000; past six digits truncated).
fn fraction_micros(frac: &str) -> Option<i64> {
    if frac.is_empty() {
        return Some(0);
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut digits: String = frac.chars().take(6).collect();
    while digits.len() < 6 {
        digits.push('0');
    }
    digits.parse().ok()
}

/// The integer forms `YYMMDD`, `YYYYMMDD`, `YYMMDDhhmmss`, `YYYYMMDDhhmmss`.
fn number_form(int: &str, frac: Option<&str>) -> Option<Dated> {
    let int = int.trim_start_matches('+');
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let width = match int.len() {
        0..=6 => 6,
        7..=8 => 8,
        9..=12 => 12,
        13..=14 => 14,
        _ => return None,
    };
    let padded = format!("{int:0>width$}");
    let num = |r: std::ops::Range<usize>| padded.get(r)?.parse::<i64>().ok();
    let (year, rest) = if width == 8 || width == 14 {
        (num(0..4)?, 4)
    } else {
        (two_digit_year(num(0..2)?), 2)
    };
    let (month, day) = (num(rest..rest + 2)?, num(rest + 2..rest + 4)?);
    let has_time = width >= 12;
    let (h, mi, s) = if has_time {
        (
            num(rest + 4..rest + 6)?,
            num(rest + 6..rest + 8)?,
            num(rest + 8..rest + 10)?,
        )
    } else {
        (0, 0, 0)
    };
    let micros = if has_time {
        fraction_micros(frac.unwrap_or(""))?
    } else {
        0
    };
    build(year, month, day, h, mi, s, micros, has_time)
}

#[allow(clippy::too_many_arguments)]
fn build(
    y: i64,
    mo: i64,
    d: i64,
    h: i64,
    mi: i64,
    s: i64,
    us: i64,
    has_time: bool,
) -> Option<Dated> {
    let value = DateTime::new(
        u16::try_from(y).ok()?,
        u8::try_from(mo).ok()?,
        u8::try_from(d).ok()?,
        u8::try_from(h).ok()?,
        u8::try_from(mi).ok()?,
        u8::try_from(s).ok()?,
        u32::try_from(us).ok()?,
        if has_time {
            Some(if us == 0 { 0 } else { 6 })
        } else {
            None
        },
    )?;
    Some(Dated { value, has_time })
}

/// Text in MySQL's relaxed date forms (rule 1).
pub(crate) fn parse_lenient(text: &str) -> Option<Dated> {
    let t = text.trim();
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    if !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit())
    {
        return number_form(int, Some(frac));
    }
    // The date part ends at the first space, or a `T` followed by a digit.
    let split = t.char_indices().find(|&(i, c)| {
        c == ' ' || (c == 'T' && t[i + 1..].starts_with(|n: char| n.is_ascii_digit()))
    });
    let (date, time) = match split {
        Some((i, _)) => (&t[..i], Some(t[i + 1..].trim())),
        None => (t, None),
    };
    let groups = digit_groups(date)?;
    let [y, m, d] = groups.as_slice() else {
        return None;
    };
    let year = if y.len() <= 2 {
        two_digit_year(y.parse().ok()?)
    } else {
        y.parse().ok()?
    };
    let (month, day): (i64, i64) = (m.parse().ok()?, d.parse().ok()?);
    let Some(time) = time.filter(|s| !s.is_empty()) else {
        return build(year, month, day, 0, 0, 0, 0, false);
    };
    // h, m, s, then a fraction after a `.` following the seconds.
    let mut parts = digit_groups(time)?;
    let frac = if parts.len() == 4 && time[..time.len() - parts[3].len()].ends_with('.') {
        parts.pop().unwrap_or("")
    } else {
        ""
    };
    if parts.is_empty() || parts.len() > 3 {
        return None;
    }
    let field = |i: usize| parts.get(i).map_or(Some(0), |p| p.parse::<i64>().ok());
    build(
        year,
        month,
        day,
        field(0)?,
        field(1)?,
        field(2)?,
        fraction_micros(frac)?,
        true,
    )
}

/// The runs of digits of `s`, which must be separated by single punctuation characters.
fn digit_groups(s: &str) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    for part in s.split(|c: char| c.is_ascii_punctuation()) {
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        out.push(part);
    }
    Some(out)
}

/// A time of day or duration read from a value (rule 5): a DATETIME's time, TIME text
/// `[-][D ]hh:mm[:ss[.f]]`, or a number `[-]hhmmss[.f]`. Microseconds, signed.
pub(crate) fn time_arg(v: &Value) -> Option<i64> {
    match v {
        Value::DateTime(d) => Some(epoch_micros(d).rem_euclid(MICROS_PER_DAY)),
        Value::Time(t) => Some(t.micros()),
        Value::Enum(_, text) | Value::Set(_, text) => {
            time_arg(&Value::Bytes(text.as_bytes().to_vec()))
        }
        Value::Bytes(b) => {
            let s = std::str::from_utf8(b).ok()?.trim();
            if let Some(d) = parse_lenient(s).filter(|d| d.has_time || !s.contains(':')) {
                if d.has_time {
                    return Some(epoch_micros(&d.value).rem_euclid(MICROS_PER_DAY));
                }
            }
            parse_time_text(s)
        }
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) => {
            parse_time_text(&crate::value::display(v))
        }
        Value::Null => None,
    }
}

fn parse_time_text(s: &str) -> Option<i64> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest.trim_start()),
        None => (false, s),
    };
    let (main, frac) = s.split_once('.').unwrap_or((s, ""));
    let micros = fraction_micros(frac)?;
    let (days, clock) = match main.split_once(' ') {
        Some((d, c)) => (d.parse::<i64>().ok()?, c),
        None => (0, main),
    };
    let (h, m, sec) = if clock.contains(':') {
        let parts = digit_groups(clock)?;
        let f = |i: usize| parts.get(i).map_or(Some(0), |p| p.parse::<i64>().ok());
        if parts.len() > 3 {
            return None;
        }
        (f(0)?, f(1)?, f(2)?)
    } else {
        if clock.is_empty() || !clock.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let n: i64 = clock.parse().ok()?;
        (n / 10_000, n / 100 % 100, n % 100)
    };
    if m > 59 || sec > 59 {
        return None;
    }
    // Saturating: a day or hour count past i64's range is past TIME's anyway (rule 5 clamps).
    let total = days
        .saturating_mul(24)
        .saturating_add(h)
        .saturating_mul(3600)
        .saturating_add(m * 60 + sec)
        .saturating_mul(MICROS_PER_SECOND)
        .saturating_add(micros);
    let total = total.clamp(-TIME_MAX_MICROS, TIME_MAX_MICROS);
    Some(if neg { -total } else { total })
}

/// TIME's text for signed microseconds, clamped to ±838:59:59 (rule 5); `fsp` fraction
/// digits (the fraction truncated to them).
pub(crate) fn time_text(micros: i64, fsp: u8) -> String {
    let clamped = micros.clamp(-TIME_MAX_MICROS, TIME_MAX_MICROS);
    let sign = if clamped < 0 { "-" } else { "" };
    let abs = clamped.unsigned_abs();
    let secs = abs / 1_000_000;
    let mut out = format!(
        "{sign}{:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if fsp > 0 {
        let frac = format!("{:06}", abs % 1_000_000);
        out.push('.');
        out.push_str(&frac[..usize::from(fsp.min(6))]);
    }
    out
}

/// The session's offset from UTC in seconds (rule 4); 1298 for a zone Shale cannot apply.
pub(crate) fn zone_offset(zone: &Value) -> Result<i64, SqlError> {
    let text = crate::value::as_text(zone).unwrap_or_default();
    parse_zone(&text).ok_or_else(|| {
        SqlError::new(
            1298,
            "HY000",
            format!("Unknown or incorrect time zone: '{text}'"),
        )
    })
}

/// `SYSTEM` (UTC here), or `±h:mm` between -13:59 and +14:00.
pub(crate) fn parse_zone(text: &str) -> Option<i64> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("SYSTEM") {
        return Some(0);
    }
    let (sign, rest) = match t.as_bytes().first()? {
        b'+' => (1, &t[1..]),
        b'-' => (-1, &t[1..]),
        _ => return None,
    };
    let (h, m) = rest.split_once(':')?;
    if h.is_empty() || h.len() > 2 || m.len() != 2 {
        return None;
    }
    let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
    let offset = sign * (h * 3600 + m * 60);
    (m < 60 && (-(13 * 3600 + 59 * 60)..=14 * 3600).contains(&offset)).then_some(offset)
}

/// Interval units of DATE_ADD, `+ INTERVAL`, TIMESTAMPADD/DIFF and EXTRACT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Microsecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
    SecondMicrosecond,
    MinuteMicrosecond,
    MinuteSecond,
    HourMicrosecond,
    HourSecond,
    HourMinute,
    DayMicrosecond,
    DaySecond,
    DayMinute,
    DayHour,
    YearMonth,
}

impl Unit {
    pub(crate) fn from_name(name: &str) -> Option<Unit> {
        use Unit as U;
        Some(match name.to_ascii_uppercase().as_str() {
            "MICROSECOND" | "FRAC_SECOND" => U::Microsecond,
            "SECOND" => U::Second,
            "MINUTE" => U::Minute,
            "HOUR" => U::Hour,
            "DAY" => U::Day,
            "WEEK" => U::Week,
            "MONTH" => U::Month,
            "QUARTER" => U::Quarter,
            "YEAR" => U::Year,
            "SECOND_MICROSECOND" => U::SecondMicrosecond,
            "MINUTE_MICROSECOND" => U::MinuteMicrosecond,
            "MINUTE_SECOND" => U::MinuteSecond,
            "HOUR_MICROSECOND" => U::HourMicrosecond,
            "HOUR_SECOND" => U::HourSecond,
            "HOUR_MINUTE" => U::HourMinute,
            "DAY_MICROSECOND" => U::DayMicrosecond,
            "DAY_SECOND" => U::DaySecond,
            "DAY_MINUTE" => U::DayMinute,
            "DAY_HOUR" => U::DayHour,
            "YEAR_MONTH" => U::YearMonth,
            _ => return None,
        })
    }

    /// Whether adding the unit to a DATE gives a DATETIME.
    pub(crate) fn has_time(self) -> bool {
        !matches!(
            self,
            Unit::Day | Unit::Week | Unit::Month | Unit::Quarter | Unit::Year | Unit::YearMonth
        )
    }

    pub(crate) fn has_micros(self) -> bool {
        matches!(
            self,
            Unit::Microsecond
                | Unit::SecondMicrosecond
                | Unit::MinuteMicrosecond
                | Unit::HourMicrosecond
                | Unit::DayMicrosecond
        )
    }

    /// A compound unit's fields as multiples of a microsecond (0 marks months).
    fn fields(self) -> &'static [i64] {
        const S: i64 = MICROS_PER_SECOND;
        match self {
            Unit::SecondMicrosecond => &[S, 1],
            Unit::MinuteMicrosecond => &[60 * S, S, 1],
            Unit::MinuteSecond => &[60 * S, S],
            Unit::HourMicrosecond => &[3600 * S, 60 * S, S, 1],
            Unit::HourSecond => &[3600 * S, 60 * S, S],
            Unit::HourMinute => &[3600 * S, 60 * S],
            Unit::DayMicrosecond => &[MICROS_PER_DAY, 3600 * S, 60 * S, S, 1],
            Unit::DaySecond => &[MICROS_PER_DAY, 3600 * S, 60 * S, S],
            Unit::DayMinute => &[MICROS_PER_DAY, 3600 * S, 60 * S],
            Unit::DayHour => &[MICROS_PER_DAY, 3600 * S],
            Unit::YearMonth => &[0, 0],
            _ => &[],
        }
    }
}

/// A signed amount of months and microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Interval {
    pub months: i64,
    pub micros: i64,
}

/// `INTERVAL value unit`; None for NULL or a value that does not read as the unit. Simple
/// units take a number (SECOND keeps its fraction, others round half away from zero);
/// compound ones text such as `'1 2:03'`, missing leading fields taken as zero.
pub(crate) fn interval(value: &Value, unit: Unit) -> Option<Interval> {
    const S: i64 = MICROS_PER_SECOND;
    let simple = |scale: i64| -> Option<i64> {
        let d = crate::decimal::to_decimal(value)?;
        let n = if scale == 0 {
            d.round_to(0).to_i128()?
        } else {
            d.round_to(0).to_i128()?.checked_mul(i128::from(scale))?
        };
        i64::try_from(n).ok()
    };
    let micros_of = |n: i64| {
        Some(Interval {
            months: 0,
            micros: n,
        })
    };
    let months_of = |n: i64| {
        Some(Interval {
            months: n,
            micros: 0,
        })
    };
    match unit {
        Unit::Microsecond => micros_of(simple(1)?),
        Unit::Second => {
            let d = crate::decimal::to_decimal(value)?;
            let scaled = d.mul(&shale_table::Decimal::from_i128(i128::from(S)));
            micros_of(i64::try_from(scaled.round_to(0).to_i128()?).ok()?)
        }
        Unit::Minute => micros_of(simple(60 * S)?),
        Unit::Hour => micros_of(simple(3600 * S)?),
        Unit::Day => micros_of(simple(MICROS_PER_DAY)?),
        Unit::Week => micros_of(simple(7 * MICROS_PER_DAY)?),
        Unit::Month => months_of(simple(0)?),
        Unit::Quarter => months_of(simple(0)?.checked_mul(3)?),
        Unit::Year => months_of(simple(0)?.checked_mul(12)?),
        compound => compound_interval(value, compound),
    }
}

fn compound_interval(value: &Value, unit: Unit) -> Option<Interval> {
    let text = crate::value::as_text(value)?;
    let t = text.trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    let groups: Vec<&str> = t
        .split(|c: char| !c.is_ascii_digit())
        .filter(|g| !g.is_empty())
        .collect();
    let fields = unit.fields();
    if groups.is_empty() || groups.len() > fields.len() {
        return None;
    }
    let skip = fields.len() - groups.len();
    let mut iv = Interval {
        months: 0,
        micros: 0,
    };
    for (i, g) in groups.iter().enumerate() {
        let mut n: i64 = g.parse().ok()?;
        let field = fields[skip + i];
        if unit == Unit::YearMonth {
            iv.months =
                iv.months
                    .checked_add(if skip + i == 0 { n.checked_mul(12)? } else { n })?;
            continue;
        }
        if field == 1 && g.len() < 6 {
            // A microsecond field of fewer than six digits is a fraction: `.5` is 500000.
            n *= 10i64.pow(6 - g.len() as u32);
        }
        iv.micros = iv.micros.checked_add(n.checked_mul(field)?)?;
    }
    if neg {
        iv.months = -iv.months;
        iv.micros = -iv.micros;
    }
    Some(iv)
}

/// `d` moved by `iv` (rules 2 and 3), keeping `d`'s precision tag.
pub(crate) fn add_interval(d: &DateTime, iv: Interval) -> Option<DateTime> {
    let (y, m, day, ..) = d.parts();
    let mut micros = epoch_micros(d);
    if iv.months != 0 {
        let index = (i64::from(y) * 12 + i64::from(m) - 1).checked_add(iv.months)?;
        // Far past year 9999 (or before year 0) is out of range (NULL), and would overflow.
        if !(0..=10_000 * 12).contains(&index) {
            return None;
        }
        let (ny, nm) = (index.div_euclid(12), index.rem_euclid(12) + 1);
        let nd = i64::from(day).min(days_in_month(ny, nm));
        let old_day = days_from_civil(i64::from(y), i64::from(m), i64::from(day));
        micros += (days_from_civil(ny, nm, nd) - old_day) * MICROS_PER_DAY;
    }
    from_epoch_micros(micros.checked_add(iv.micros)?, d.fsp())
}

/// TIMESTAMPDIFF(unit, a, b): `b - a` in whole units, truncated toward zero.
pub(crate) fn timestamp_diff(unit: Unit, a: &DateTime, b: &DateTime) -> i64 {
    let (ma, mb) = (epoch_micros(a), epoch_micros(b));
    let per = match unit {
        Unit::Microsecond => 1,
        Unit::Second => MICROS_PER_SECOND,
        Unit::Minute => 60 * MICROS_PER_SECOND,
        Unit::Hour => 3600 * MICROS_PER_SECOND,
        Unit::Day => MICROS_PER_DAY,
        Unit::Week => 7 * MICROS_PER_DAY,
        _ => 0,
    };
    if per != 0 {
        return (mb - ma) / per;
    }
    let month_index = |d: &DateTime| {
        let (y, m, ..) = d.parts();
        i64::from(y) * 12 + i64::from(m)
    };
    // Months are whole when the later date's day and time reach the earlier one's.
    let in_month = |d: &DateTime| {
        let (_, _, day, ..) = d.parts();
        (i64::from(day) - 1) * MICROS_PER_DAY + epoch_micros(d).rem_euclid(MICROS_PER_DAY)
    };
    let mut months = month_index(b) - month_index(a);
    if months > 0 && in_month(b) < in_month(a) {
        months -= 1;
    } else if months < 0 && in_month(b) > in_month(a) {
        months += 1;
    }
    match unit {
        Unit::Quarter => months / 3,
        Unit::Year => months / 12,
        _ => months,
    }
}

/// Monday = 0 .. Sunday = 6 of a day number (days since 1970-01-01, a Thursday).
pub(crate) fn weekday(days: i64) -> i64 {
    (days + 3).rem_euclid(7)
}

/// MySQL's week number of a date and the year it belongs to, for a week behaviour: bit 0
/// Monday starts the week, bit 1 weeks 0 belong to the previous year (1..=53), bit 2 week 1
/// is the first with a first-day-of-week (else the first with 4 or more days).
pub(crate) fn calc_week(y: i64, m: i64, d: i64, behaviour: u8) -> (i64, i64) {
    let monday_first = behaviour & 1 != 0;
    let mut week_year = behaviour & 2 != 0;
    let first_weekday = behaviour & 4 != 0;
    let day_nr = days_from_civil(y, m, d);
    let mut first_day_nr = days_from_civil(y, 1, 1);
    let weekday_of = |n: i64| {
        if monday_first {
            weekday(n)
        } else {
            (weekday(n) + 1) % 7
        }
    };
    let mut wd = weekday_of(first_day_nr);
    let mut year = y;
    let year_days = |yy: i64| if is_leap(yy) { 366 } else { 365 };
    if m == 1 && d <= 7 - wd {
        if !week_year && ((first_weekday && wd != 0) || (!first_weekday && wd >= 4)) {
            return (0, year);
        }
        week_year = true;
        year -= 1;
        let days = year_days(year);
        first_day_nr -= days;
        wd = (wd + 53 * 7 - days) % 7;
    }
    let days = if (first_weekday && wd != 0) || (!first_weekday && wd >= 4) {
        day_nr - (first_day_nr + (7 - wd))
    } else {
        day_nr - (first_day_nr - wd)
    };
    if week_year && days >= 52 * 7 {
        let wd2 = (wd + year_days(year)) % 7;
        if (!first_weekday && wd2 < 4) || (first_weekday && wd2 == 0) {
            return (1, year + 1);
        }
    }
    (days / 7 + 1, year)
}

/// WEEK()'s mode (0..=7) as a [`calc_week`] behaviour.
pub(crate) fn week_mode(mode: i64) -> u8 {
    let mut m = (mode.rem_euclid(8)) as u8;
    if m & 1 == 0 {
        m ^= 4;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(s: &str) -> DateTime {
        parse_lenient(s).unwrap().value
    }

    #[test]
    fn calendar_round_trips() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        for n in [-700_000, -1, 0, 59, 20_000, 2_900_000] {
            let (y, m, d) = civil_from_days(n);
            assert_eq!(days_from_civil(y, m, d), n);
        }
        assert_eq!(weekday(0), 3); // 1970-01-01 was a Thursday
    }

    #[test]
    fn lenient_forms() {
        let cases = [
            ("2024-01-02", "2024-01-02", false),
            ("2024/1/2", "2024-01-02", false),
            ("20240102", "2024-01-02", false),
            ("240102", "2024-01-02", false),
            ("991231", "1999-12-31", false),
            ("2024-01-02 3:04:05", "2024-01-02 03:04:05", true),
            ("2024-01-02T03:04:05.5", "2024-01-02 03:04:05.500000", true),
            ("20240102030405", "2024-01-02 03:04:05", true),
            ("2024.01.02 03.04.05", "2024-01-02 03:04:05", true),
        ];
        for (text, want, time) in cases {
            let d = parse_lenient(text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(
                (d.value.to_string(), d.has_time),
                (want.into(), time),
                "{text}"
            );
        }
        for bad in ["2024-02-30", "x", "2024-01", "", "2024-01-02 25:00:00"] {
            assert!(parse_lenient(bad).is_none(), "{bad}");
        }
        assert_eq!(
            date_arg(&Value::Int(20_240_102)).unwrap().value,
            date("2024-01-02")
        );
    }

    #[test]
    fn intervals() {
        let b = |s: &str| Value::Bytes(s.as_bytes().to_vec());
        let add = |d: &str, v: Value, u: Unit| {
            add_interval(&date(d), interval(&v, u).unwrap())
                .map(|x| x.with_fsp(Some(6)).to_string())
        };
        assert_eq!(
            add("2024-01-31", Value::Int(1), Unit::Month).unwrap(),
            "2024-02-29 00:00:00.000000"
        );
        assert_eq!(
            add("2024-01-01 00:00:00", b("1 2"), Unit::DayHour).unwrap(),
            "2024-01-02 02:00:00.000000"
        );
        assert_eq!(
            add("2024-01-01 00:00:00", b("-1:30"), Unit::HourMinute).unwrap(),
            "2023-12-31 22:30:00.000000"
        );
        assert_eq!(
            add(
                "1992-12-31 23:59:59.000002",
                b("1.999999"),
                Unit::SecondMicrosecond
            )
            .unwrap(),
            "1993-01-01 00:00:01.000001"
        );
        assert_eq!(
            add("2024-01-01", b("2-3"), Unit::YearMonth).unwrap(),
            "2026-04-01 00:00:00.000000"
        );
        assert_eq!(add("9999-12-31", Value::Int(1), Unit::Day), None);
        assert!(interval(&b("1 2 3"), Unit::DayHour).is_none());
    }

    #[test]
    fn diffs_and_weeks() {
        let d = |s| date(s);
        assert_eq!(
            timestamp_diff(Unit::Month, &d("2024-01-31"), &d("2024-02-29")),
            0
        );
        assert_eq!(
            timestamp_diff(Unit::Month, &d("2024-01-29"), &d("2024-02-29")),
            1
        );
        assert_eq!(
            timestamp_diff(Unit::Year, &d("2024-02-29"), &d("2023-02-28")),
            -1
        );
        assert_eq!(
            timestamp_diff(Unit::Minute, &d("2024-01-01"), &d("2024-01-01 01:30:59")),
            90
        );
        // MySQL's manual: WEEK('2008-02-20') = 7, WEEK('2008-02-20', 1) = 8,
        // WEEK('2008-12-31', 1) = 53, WEEK('2000-01-01', 0) = 0 and mode 2 gives 52.
        assert_eq!(calc_week(2008, 2, 20, week_mode(0)).0, 7);
        assert_eq!(calc_week(2008, 2, 20, week_mode(1)).0, 8);
        assert_eq!(calc_week(2008, 12, 31, week_mode(1)).0, 53);
        assert_eq!(calc_week(2000, 1, 1, week_mode(0)).0, 0);
        assert_eq!(calc_week(2000, 1, 1, week_mode(2)), (52, 1999));
    }

    #[test]
    fn times_and_zones() {
        let b = |s: &str| Value::Bytes(s.as_bytes().to_vec());
        assert_eq!(time_arg(&b("10:11:12")), Some(36_672_000_000));
        assert_eq!(
            time_text(time_arg(&b("-1 02:00:00")).unwrap(), 0),
            "-26:00:00"
        );
        assert_eq!(
            time_text(time_arg(&Value::Int(101_112)).unwrap(), 0),
            "10:11:12"
        );
        assert_eq!(
            time_text(time_arg(&b("2024-01-02 03:04:05.25")).unwrap(), 2),
            "03:04:05.25"
        );
        assert_eq!(time_text(3_000 * 3600 * MICROS_PER_SECOND, 0), "838:59:59");
        assert_eq!(parse_zone("+02:00"), Some(7200));
        assert_eq!(parse_zone("-13:59"), Some(-50_340));
        assert_eq!(parse_zone("SYSTEM"), Some(0));
        assert_eq!(parse_zone("+14:01"), None);
        assert_eq!(parse_zone("Europe/Paris"), None);
    }
}
