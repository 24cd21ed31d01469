//! Dates and times of day (DATE, DATETIME(fsp)): a calendar date with an optional time to
//! the microsecond, validated on construction.
//!
//! Invariants:
//! 1. A [`DateTime`] is always a real date of years 1000..=9999 (MySQL's supported range;
//!    `0000-00-00` and days past a month's end are not representable) with a valid time.
//! 2. [`DateTime::packed`] is monotonic in the value, so it orders and encodes keys.
//! 3. Equality and order ignore `fsp` (how many fraction digits the value prints with).

use std::cmp::Ordering;
use std::fmt;

/// Microseconds from 0000-03-01 to 1970-01-01 (day 719 468 of the civil-days count).
const UNIX_EPOCH_MICROS: i64 = 719_468 * 86_400 * 1_000_000;
/// TIMESTAMP's range in microseconds since 1970-01-01 UTC: `[1 s, 2^31 s)`, so
/// '1970-01-01 00:00:01' to '2038-01-19 03:14:07.999999' UTC.
const TIMESTAMP_MICROS: std::ops::Range<i64> = 1_000_000..(1i64 << 31) * 1_000_000;

/// A DATE (`fsp` None) or DATETIME value (`fsp` Some(0..=6): fraction digits shown).
#[derive(Clone, Copy)]
pub struct DateTime {
    year: u16,
    month: u8,
    day: u8,
    hour: u8,
    minute: u8,
    second: u8,
    micros: u32,
    fsp: Option<u8>,
}

fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        _ => 28,
    }
}

impl DateTime {
    /// A checked date and time; None when any part is out of range.
    #[allow(clippy::too_many_arguments)]
    #[must_use]
    pub fn new(
        year: u16,
        month: u8,
        day: u8,
        hour: u8,
        minute: u8,
        second: u8,
        micros: u32,
        fsp: Option<u8>,
    ) -> Option<DateTime> {
        let ok = (1000..=9999).contains(&year)
            && (1..=12).contains(&month)
            && day >= 1
            && day <= days_in_month(year, month)
            && hour < 24
            && minute < 60
            && second < 60
            && micros < 1_000_000
            && fsp.is_none_or(|f| f <= 6);
        ok.then_some(DateTime {
            year,
            month,
            day,
            hour,
            minute,
            second,
            micros,
            fsp,
        })
    }

    /// Parses MySQL's strict forms `YYYY-MM-DD` and `YYYY-MM-DD hh:mm:ss[.ffffff]` (also
    /// with `T` between); the fraction is rounded to `fsp` digits; a DATE (`fsp` None)
    /// drops the time part (MySQL does so with note 1265).
    #[must_use]
    pub fn parse(text: &str, fsp: Option<u8>) -> Option<DateTime> {
        let t = text.trim();
        let (date, time) = match t.find([' ', 'T']) {
            Some(at) => (&t[..at], Some(t[at + 1..].trim_start())),
            None => (t, None),
        };
        let mut parts = date.split('-');
        let year: u16 = parts.next()?.parse().ok()?;
        let month: u8 = parts.next()?.parse().ok()?;
        let day: u8 = parts.next()?.parse().ok()?;
        if parts.next().is_some() || date.len() < 8 {
            return None;
        }
        let (mut hour, mut minute, mut second, mut micros) = (0u8, 0u8, 0u8, 0u32);
        if let Some(time) = time {
            let (hms, fraction) = match time.find('.') {
                Some(at) => (&time[..at], Some(&time[at + 1..])),
                None => (time, None),
            };
            let mut parts = hms.split(':');
            hour = parts.next()?.parse().ok()?;
            minute = parts.next()?.parse().ok()?;
            second = parts.next()?.parse().ok()?;
            if parts.next().is_some() {
                return None;
            }
            if let Some(f) = fraction {
                if f.is_empty() || f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let mut digits = f.to_string();
                while digits.len() < 7 {
                    digits.push('0');
                }
                // Seven digits: round the seventh half up.
                let seven: u32 = digits[..7].parse().ok()?;
                micros = seven / 10 + u32::from(seven % 10 >= 5);
            }
        }
        let mut value = DateTime::new(year, month, day, hour, minute, second, 0, fsp)?;
        if micros >= 1_000_000 {
            value = value.add_micros(1_000_000)?;
            micros = 0;
        }
        let value = value.add_micros(i64::from(micros))?;
        Some(value.round_to(fsp))
    }

    /// The value shown with `fsp` fraction digits (None: as a DATE, time dropped), the
    /// fraction rounded half up as MySQL stores into a column of that precision.
    #[must_use]
    pub fn round_to(self, fsp: Option<u8>) -> DateTime {
        let digits = fsp.unwrap_or(0).min(6);
        let unit = 10u32.pow(6 - u32::from(digits));
        let rest = self.micros % unit;
        let mut rounded = DateTime {
            micros: self.micros - rest,
            fsp,
            ..self
        };
        if rest * 2 >= unit {
            rounded = rounded.add_micros(i64::from(unit)).unwrap_or(rounded);
        }
        if fsp.is_none() {
            rounded.hour = 0;
            rounded.minute = 0;
            rounded.second = 0;
            rounded.micros = 0;
        }
        rounded
    }

    /// Days since 0000-03-01 of the proleptic Gregorian calendar (a civil-days count).
    fn day_number(&self) -> i64 {
        let (y, m) = if self.month <= 2 {
            (i64::from(self.year) - 1, i64::from(self.month) + 9)
        } else {
            (i64::from(self.year), i64::from(self.month) - 3)
        };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let doy = (153 * m + 2) / 5 + i64::from(self.day) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe
    }

    // Day and month are in 1..=31 and 1..=12 by construction of the civil-days algorithm.
    #[allow(clippy::cast_sign_loss)]
    fn from_day_number(days: i64) -> (i64, u8, u8) {
        let era = days.div_euclid(146_097);
        let doe = days - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
        let year = yoe + era * 400 + i64::from(month <= 2);
        (year, month, day)
    }

    /// Microseconds since 0000-03-01 00:00:00.
    fn total_micros(&self) -> i64 {
        let seconds = self.day_number() * 86_400
            + i64::from(self.hour) * 3600
            + i64::from(self.minute) * 60
            + i64::from(self.second);
        seconds * 1_000_000 + i64::from(self.micros)
    }

    // `rem_euclid` keeps every part non-negative and below its unit.
    #[allow(clippy::cast_sign_loss)]
    fn from_total_micros(total: i64, fsp: Option<u8>) -> Option<DateTime> {
        let micros = total.rem_euclid(1_000_000);
        let seconds = total.div_euclid(1_000_000);
        let days = seconds.div_euclid(86_400);
        let in_day = seconds.rem_euclid(86_400);
        let (year, month, day) = DateTime::from_day_number(days);
        DateTime::new(
            u16::try_from(year).ok()?,
            month,
            day,
            (in_day / 3600) as u8,
            (in_day / 60 % 60) as u8,
            (in_day % 60) as u8,
            micros as u32,
            fsp,
        )
    }

    /// The value moved by `delta` microseconds; None outside years 1000..=9999.
    #[must_use]
    pub fn add_micros(self, delta: i64) -> Option<DateTime> {
        DateTime::from_total_micros(self.total_micros().checked_add(delta)?, self.fsp)
    }

    /// Monotonic 64-bit form: microseconds since 0000-03-01 (always positive in range).
    #[must_use]
    pub fn packed(&self) -> u64 {
        self.total_micros().cast_unsigned()
    }

    /// The value of [`DateTime::packed`] bits; None when they are not a valid value.
    #[must_use]
    pub fn from_packed(packed: u64, fsp: Option<u8>) -> Option<DateTime> {
        let total = i64::try_from(packed).ok()?;
        let value = DateTime::from_total_micros(total, fsp)?;
        // A DATE holds no time; a DATETIME no finer fraction than its precision.
        (value.round_to(fsp).packed() == packed).then_some(value)
    }

    /// Microseconds since 1970-01-01 00:00:00 of this date and time read as UTC.
    #[must_use]
    pub fn unix_micros(&self) -> i64 {
        self.total_micros() - UNIX_EPOCH_MICROS
    }

    /// The UTC date and time `micros` microseconds after 1970-01-01 00:00:00 (a DATETIME with
    /// `fsp` digits, not rounded); None outside years 1000..=9999.
    #[must_use]
    pub fn from_unix_micros(micros: i64, fsp: Option<u8>) -> Option<DateTime> {
        DateTime::from_total_micros(micros.checked_add(UNIX_EPOCH_MICROS)?, fsp)
    }

    /// Whether this value, read as UTC, is within TIMESTAMP's range.
    #[must_use]
    pub fn in_timestamp_range(&self) -> bool {
        TIMESTAMP_MICROS.contains(&self.unix_micros())
    }

    /// None for a DATE, else the fraction digits shown.
    #[must_use]
    pub fn fsp(&self) -> Option<u8> {
        self.fsp
    }

    /// The same instant shown as a DATE or DATETIME(fsp) (no rounding: see `round_to`).
    #[must_use]
    pub fn with_fsp(self, fsp: Option<u8>) -> DateTime {
        DateTime { fsp, ..self }
    }

    /// `(year, month, day, hour, minute, second, microsecond)`.
    #[must_use]
    pub fn parts(&self) -> (u16, u8, u8, u8, u8, u8, u32) {
        (
            self.year,
            self.month,
            self.day,
            self.hour,
            self.minute,
            self.second,
            self.micros,
        )
    }

    /// The value as the number MySQL reads it as (`20240102` for a DATE,
    /// `20240102030405.5` for a DATETIME).
    #[must_use]
    pub fn to_f64(&self) -> f64 {
        let date =
            f64::from(self.year) * 10_000.0 + f64::from(self.month) * 100.0 + f64::from(self.day);
        if self.fsp.is_none() {
            return date;
        }
        date * 1_000_000.0
            + f64::from(self.hour) * 10_000.0
            + f64::from(self.minute) * 100.0
            + f64::from(self.second)
            + f64::from(self.micros) / 1e6
    }
}

impl PartialEq for DateTime {
    fn eq(&self, other: &Self) -> bool {
        self.packed() == other.packed()
    }
}

impl Eq for DateTime {}

impl PartialOrd for DateTime {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for DateTime {
    fn cmp(&self, other: &Self) -> Ordering {
        self.packed().cmp(&other.packed())
    }
}

impl fmt::Display for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)?;
        let Some(fsp) = self.fsp else {
            return Ok(());
        };
        write!(f, " {:02}:{:02}:{:02}", self.hour, self.minute, self.second)?;
        if fsp > 0 {
            let digits = format!("{:06}", self.micros);
            write!(f, ".{}", &digits[..usize::from(fsp.min(6))])?;
        }
        Ok(())
    }
}

impl fmt::Debug for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DateTime({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_validate_and_print() {
        for (text, fsp, shown) in [
            ("2024-01-02", None, "2024-01-02"),
            ("2024-01-02 03:04:05", None, "2024-01-02"),
            ("2024-01-02", Some(0), "2024-01-02 00:00:00"),
            (
                "2024-01-02 03:04:05.123",
                Some(3),
                "2024-01-02 03:04:05.123",
            ),
            ("2024-01-02 03:04:05.5", Some(0), "2024-01-02 03:04:06"),
            (
                "2024-12-31 23:59:59.9999995",
                Some(6),
                "2025-01-01 00:00:00.000000",
            ),
            ("2024-02-29T10:00:00", Some(0), "2024-02-29 10:00:00"),
            (" 2024-1-2 3:4:5 ", Some(1), "2024-01-02 03:04:05.0"),
        ] {
            let value = DateTime::parse(text, fsp).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(value.to_string(), shown, "{text}");
        }
        for bad in [
            "2023-02-29",
            "0000-00-00",
            "2024-13-01",
            "2024-04-31",
            "2024-01-02 24:00:00",
            "2024-01-02 10:60:00",
            "abc",
            "2024-01",
            "2024-01-02 03:04",
            "10000-01-01",
            "0999-12-31",
        ] {
            assert!(DateTime::parse(bad, Some(0)).is_none(), "{bad}");
        }
    }

    #[test]
    fn packed_orders_and_round_trips() {
        let mut previous: Option<DateTime> = None;
        let mut value = DateTime::new(1000, 1, 1, 0, 0, 0, 0, Some(6)).unwrap();
        for step in 0..20_000i64 {
            let packed = value.packed();
            assert_eq!(DateTime::from_packed(packed, Some(6)), Some(value));
            if let Some(p) = previous {
                assert!(p < value && p.packed() < packed);
            }
            previous = Some(value);
            value = value
                .add_micros((step % 1000) * 3_600_000_000 + 1_234_567)
                .unwrap();
        }
        let date = DateTime::parse("2024-03-01", None).unwrap();
        assert!(DateTime::from_packed(date.packed() + 1, None).is_none());
        assert_eq!(
            date.add_micros(-86_400_000_000).unwrap().to_string(),
            "2024-02-29"
        );
        assert!(DateTime::from_packed(u64::MAX, Some(0)).is_none());
    }

    #[test]
    fn unix_micros_and_timestamp_range() {
        let epoch = DateTime::parse("1970-01-01 00:00:00", Some(0)).unwrap();
        assert_eq!(epoch.unix_micros(), 0);
        assert_eq!(DateTime::from_unix_micros(0, Some(0)), Some(epoch));
        let first = DateTime::parse("1970-01-01 00:00:01", Some(0)).unwrap();
        let last = DateTime::parse("2038-01-19 03:14:07.999999", Some(6)).unwrap();
        assert!(first.in_timestamp_range() && last.in_timestamp_range());
        assert_eq!(last.unix_micros(), 2_147_483_647_999_999);
        assert!(!epoch.in_timestamp_range());
        assert!(!last.add_micros(1).unwrap().in_timestamp_range());
        let t = DateTime::parse("2024-02-29 12:34:56.5", Some(1)).unwrap();
        assert_eq!(t.unix_micros(), 1_709_210_096_500_000);
        assert_eq!(
            DateTime::from_unix_micros(t.unix_micros(), Some(1)),
            Some(t)
        );
        assert!(DateTime::from_unix_micros(i64::MAX, None).is_none());
    }
}
