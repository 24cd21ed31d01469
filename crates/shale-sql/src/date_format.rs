//! DATE_FORMAT's and STR_TO_DATE's `%` specifiers (MySQL 8's table, in English).
//!
//! `%a %b %c %D %d %e %f %H %h %I %i %j %k %l %M %m %p %r %S %s %T %U %u %V %v %W %w %X %x
//! %Y %y %%`; `%` before any other character gives that character. STR_TO_DATE reads the
//! same specifiers (week specifiers are read and ignored), matches other format characters
//! literally (a space in the format skips any run of spaces), ignores text left over after
//! the format, and gives NULL when the text does not match or names an impossible date.

use shale_table::DateTime;

use crate::datetime_funcs::{
    calc_week, days_from_civil, epoch_micros, time_text, weekday, MICROS_PER_DAY,
};

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
/// Monday first, as [`weekday`] counts.
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

pub(crate) fn month_name(m: u8) -> &'static str {
    MONTHS[usize::from(m.clamp(1, 12)) - 1]
}

pub(crate) fn day_name(monday_based: i64) -> &'static str {
    DAYS[monday_based.rem_euclid(7) as usize]
}

fn ordinal_suffix(d: u8) -> &'static str {
    match (d % 10, d % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

/// DATE_FORMAT(d, format).
pub(crate) fn format(d: &DateTime, format: &str) -> String {
    use std::fmt::Write as _;
    let (y, mo, da, h, mi, s, us) = d.parts();
    let (yi, moi, dai) = (i64::from(y), i64::from(mo), i64::from(da));
    let days = days_from_civil(yi, moi, dai);
    let wd = weekday(days);
    let h12 = if h % 12 == 0 { 12 } else { h % 12 };
    let ampm = if h < 12 { "AM" } else { "PM" };
    let mut out = String::with_capacity(format.len() + 16);
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(spec) = chars.next() else {
            break;
        };
        let _ = match spec {
            'a' => write!(out, "{}", &day_name(wd)[..3]),
            'b' => write!(out, "{}", &month_name(mo)[..3]),
            'c' => write!(out, "{mo}"),
            'D' => write!(out, "{da}{}", ordinal_suffix(da)),
            'd' => write!(out, "{da:02}"),
            'e' => write!(out, "{da}"),
            'f' => write!(out, "{us:06}"),
            'H' => write!(out, "{h:02}"),
            'h' | 'I' => write!(out, "{h12:02}"),
            'i' => write!(out, "{mi:02}"),
            'j' => write!(out, "{:03}", days - days_from_civil(yi, 1, 1) + 1),
            'k' => write!(out, "{h}"),
            'l' => write!(out, "{h12}"),
            'M' => write!(out, "{}", month_name(mo)),
            'm' => write!(out, "{mo:02}"),
            'p' => write!(out, "{ampm}"),
            'r' => write!(out, "{h12:02}:{mi:02}:{s:02} {ampm}"),
            'S' | 's' => write!(out, "{s:02}"),
            'T' => write!(out, "{h:02}:{mi:02}:{s:02}"),
            'U' => write!(out, "{:02}", calc_week(yi, moi, dai, 4).0),
            'u' => write!(out, "{:02}", calc_week(yi, moi, dai, 1).0),
            'V' => write!(out, "{:02}", calc_week(yi, moi, dai, 6).0),
            'v' => write!(out, "{:02}", calc_week(yi, moi, dai, 3).0),
            'W' => write!(out, "{}", day_name(wd)),
            'w' => write!(out, "{}", (wd + 1) % 7),
            'X' => write!(out, "{:04}", calc_week(yi, moi, dai, 6).1),
            'x' => write!(out, "{:04}", calc_week(yi, moi, dai, 3).1),
            'Y' => write!(out, "{y:04}"),
            'y' => write!(out, "{:02}", y % 100),
            other => write!(out, "{other}"),
        };
    }
    out
}

/// What STR_TO_DATE read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// A date, with its time when the format had time specifiers (`fsp` 6 with `%f`).
    Date(DateTime),
    /// Only time specifiers: TIME's text.
    Time(String),
}

/// Which parts a format names: (date, time, fraction).
pub(crate) fn format_parts(format: &str) -> (bool, bool, bool) {
    let (mut date, mut time, mut frac) = (false, false, false);
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c == '%' {
            match chars.next() {
                Some('Y' | 'y' | 'm' | 'c' | 'd' | 'e' | 'D' | 'M' | 'b' | 'j') => date = true,
                Some('H' | 'k' | 'h' | 'I' | 'l' | 'i' | 'S' | 's' | 'p' | 'T' | 'r') => {
                    time = true;
                }
                Some('f') => {
                    time = true;
                    frac = true;
                }
                _ => {}
            }
        }
    }
    (date, time, frac)
}

struct Reader<'a> {
    text: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn number(&mut self, max_digits: usize) -> Option<i64> {
        let start = self.at;
        while self.at < self.text.len()
            && self.at - start < max_digits
            && self.text[self.at].is_ascii_digit()
        {
            self.at += 1;
        }
        std::str::from_utf8(&self.text[start..self.at])
            .ok()?
            .parse()
            .ok()
    }

    fn word(&mut self, names: &[&str], abbreviated: bool) -> Option<usize> {
        let rest = &self.text[self.at..];
        names.iter().position(|name| {
            let name = if abbreviated { &name[..3] } else { name };
            let hit = rest.len() >= name.len()
                && rest[..name.len()].eq_ignore_ascii_case(name.as_bytes());
            if hit {
                self.at += name.len();
            }
            hit
        })
    }

    fn skip_spaces(&mut self) {
        while self.at < self.text.len() && self.text[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn literal(&mut self, c: u8) -> Option<()> {
        (self.text.get(self.at) == Some(&c)).then(|| self.at += 1)
    }
}

/// STR_TO_DATE(text, format); None when the text does not match.
pub(crate) fn str_to_date(text: &str, format: &str) -> Option<Parsed> {
    let mut r = Reader {
        text: text.as_bytes(),
        at: 0,
    };
    let (mut year, mut month, mut day) = (None, None, None);
    let (mut hour, mut minute, mut second, mut micros) = (0i64, 0i64, 0i64, 0i64);
    let mut pm: Option<bool> = None;
    let mut twelve = false;
    let mut yday = None;
    let fmt = format.as_bytes();
    let mut i = 0;
    while i < fmt.len() {
        let c = fmt[i];
        i += 1;
        if c.is_ascii_whitespace() {
            r.skip_spaces();
            continue;
        }
        if c != b'%' {
            r.literal(c)?;
            continue;
        }
        let spec = *fmt.get(i)?;
        i += 1;
        r.skip_spaces();
        match spec {
            b'Y' => {
                let start = r.at;
                let y = r.number(4)?;
                year = Some(if r.at - start <= 2 {
                    if y < 70 {
                        2000 + y
                    } else {
                        1900 + y
                    }
                } else {
                    y
                });
            }
            b'y' => {
                let y = r.number(2)?;
                year = Some(if y < 70 { 2000 + y } else { 1900 + y });
            }
            b'm' | b'c' => month = Some(r.number(2)?),
            b'M' => month = Some(r.word(&MONTHS, false)? as i64 + 1),
            b'b' => month = Some(r.word(&MONTHS, true)? as i64 + 1),
            b'd' | b'e' => day = Some(r.number(2)?),
            b'D' => {
                day = Some(r.number(2)?);
                r.at = (r.at + 2).min(r.text.len());
            }
            b'j' => yday = Some(r.number(3)?),
            b'H' | b'k' => hour = r.number(2)?,
            b'h' | b'I' | b'l' => {
                hour = r.number(2)?;
                twelve = true;
            }
            b'i' => minute = r.number(2)?,
            b'S' | b's' => second = r.number(2)?,
            b'f' => {
                let start = r.at;
                let n = r.number(6)?;
                micros = n * 10i64.pow(6 - (r.at - start) as u32);
            }
            b'p' => {
                pm = Some(r.word(&["AM", "PM"], false)? == 1);
            }
            b'T' | b'r' => {
                hour = r.number(2)?;
                r.literal(b':')?;
                minute = r.number(2)?;
                r.literal(b':')?;
                second = r.number(2)?;
                if spec == b'r' {
                    r.skip_spaces();
                    twelve = true;
                    pm = Some(r.word(&["AM", "PM"], false)? == 1);
                }
            }
            b'W' => {
                r.word(&DAYS, false)?;
            }
            b'a' => {
                r.word(&DAYS, true)?;
            }
            b'U' | b'u' | b'V' | b'v' | b'X' | b'x' | b'w' => {
                r.number(4)?;
            }
            other => r.literal(other)?,
        }
    }
    if twelve || pm.is_some() {
        if !(1..=12).contains(&hour) && twelve {
            return None;
        }
        hour %= 12;
        if pm == Some(true) {
            hour += 12;
        }
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let clock = (hour * 3600 + minute * 60 + second) * 1_000_000 + micros;
    let (has_date, has_time, frac) = format_parts(format);
    if !has_date {
        return Some(Parsed::Time(time_text(clock, if frac { 6 } else { 0 })));
    }
    let year = year?;
    let days = match yday {
        Some(n) if month.is_none() && day.is_none() => days_from_civil(year, 1, 1) + n - 1,
        _ => {
            let (m, d) = (month?, day?);
            if !(1..=12).contains(&m) || d < 1 || d > crate::datetime_funcs::days_in_month(year, m)
            {
                return None;
            }
            days_from_civil(year, m, d)
        }
    };
    let fsp = if has_time {
        Some(if frac { 6 } else { 0 })
    } else {
        None
    };
    crate::datetime_funcs::from_epoch_micros(days * MICROS_PER_DAY + clock, fsp).map(Parsed::Date)
}

/// Seconds since 1970-01-01 UTC of a wall-clock value in a zone `offset` seconds east.
pub(crate) fn unix_micros(d: &DateTime, offset: i64) -> i64 {
    epoch_micros(d) - offset * 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(s: &str) -> DateTime {
        crate::datetime_funcs::parse_lenient(s).unwrap().value
    }

    #[test]
    fn formats() {
        // Examples of MySQL 8's manual for DATE_FORMAT.
        let d = date("2009-10-04 22:23:00");
        assert_eq!(format(&d, "%W %M %Y"), "Sunday October 2009");
        assert_eq!(format(&date("2007-10-04 22:23:00"), "%H:%i:%s"), "22:23:00");
        assert_eq!(
            format(&date("1900-10-04 22:23:00"), "%D %y %a %d %m %b %j"),
            "4th 00 Thu 04 10 Oct 277"
        );
        assert_eq!(
            format(&date("1997-10-04 22:23:00"), "%H %k %I %r %T %S %w"),
            "22 22 10 10:23:00 PM 22:23:00 00 6"
        );
        assert_eq!(format(&date("1999-01-01"), "%X %V"), "1998 52");
        assert_eq!(
            format(&date("2024-01-02 03:04:05.000007"), "%f %e %c %l %p %% %q"),
            "000007 2 1 3 AM % q"
        );
    }

    #[test]
    fn str_to_date_reads() {
        let ok = |t: &str, f: &str| match str_to_date(t, f) {
            Some(Parsed::Date(d)) => d.to_string(),
            Some(Parsed::Time(t)) => t,
            None => "NULL".into(),
        };
        assert_eq!(ok("01,5,2013", "%d,%m,%Y"), "2013-05-01");
        assert_eq!(ok("May 1, 2013", "%M %d,%Y"), "2013-05-01");
        assert_eq!(ok("a09:30:17", "a%h:%i:%s"), "09:30:17");
        assert_eq!(ok("a09:30:17", "%h:%i:%s"), "NULL");
        assert_eq!(ok("09:30:17a", "%h:%i:%s"), "09:30:17");
        assert_eq!(
            ok("2024-01-02 10:11:12.5", "%Y-%m-%d %H:%i:%s.%f"),
            "2024-01-02 10:11:12.500000"
        );
        assert_eq!(ok("2024-02-30", "%Y-%m-%d"), "NULL");
        assert_eq!(
            ok("10:11 PM 2024/3/4", "%h:%i %p %Y/%c/%e"),
            "2024-03-04 22:11:00"
        );
        assert_eq!(ok("2024 060", "%Y %j"), "2024-02-29");
    }
}
