//! SET's SQL rules, and FIND_IN_SET.
//!
//! 1. `SET('a', 'b', ...)`: 1 to 64 members, none containing a comma, no two equal under the
//!    column's collation (1291 "Column 'c' has duplicated value 'x' in SET"). A value is the
//!    bitmask of its members (bit `i` for member `i + 1`) with its text (`Value::Set`).
//! 2. Stored text is a comma-separated list of members in any order, repeats allowed, each
//!    matched under the column's collation (`''` is the empty set); an integer is the mask
//!    itself. A member that is not in the list, or a mask with bits past the members, is 1265
//!    "Data truncated for column 'c' at row N" (strict mode).
//! 3. A SET shows its members in definition order joined by commas; it sorts and compares
//!    with another SET by mask, with text as text, with numbers and in arithmetic as its mask.
//! 4. FIND_IN_SET(s, list): the 1-based position of `s` in the comma-separated `list`
//!    (compared under the arguments' collation), 0 when absent or when `s` holds a comma,
//!    NULL when either is NULL.

use shale_table::{Collation, Value};

use crate::error::SqlError;

/// The most members a SET may have.
pub(crate) const SET_MAX_MEMBERS: usize = 64;

/// Checks the members of `SET(...)` of column `column` (rule 1).
pub(crate) fn members(
    list: &[String],
    collation: Collation,
    column: &str,
) -> Result<Vec<String>, SqlError> {
    let mut out: Vec<String> = Vec::with_capacity(list.len());
    for m in list {
        let text = m.trim_end_matches(' ').to_string();
        if text.contains(',') {
            return Err(SqlError::new(
                1367,
                "22007",
                format!("Illegal set '{text}' value found during parsing"),
            ));
        }
        if out
            .iter()
            .any(|o| collation.compare(o.as_bytes(), text.as_bytes()).is_eq())
        {
            return Err(SqlError::new(
                1291,
                "HY000",
                format!("Column '{column}' has duplicated value '{text}' in SET"),
            ));
        }
        out.push(text);
    }
    if out.is_empty() || out.len() > SET_MAX_MEMBERS {
        return Err(SqlError::new(
            1097,
            "HY000",
            format!("Too many strings for column {column} and SET"),
        ));
    }
    Ok(out)
}

/// The SET value of `mask` (None when it has bits past the members).
pub(crate) fn of_mask(members: &[String], mask: u64) -> Option<Value> {
    if members.len() < 64 && mask >> members.len() != 0 {
        return None;
    }
    let text: Vec<&str> = members
        .iter()
        .enumerate()
        .filter(|(i, _)| mask >> i & 1 == 1)
        .map(|(_, m)| m.as_str())
        .collect();
    Some(Value::Set(mask, text.join(",")))
}

/// The SET value `value` names (rule 2); None when it names something else.
pub(crate) fn pick(members: &[String], collation: Collation, value: &Value) -> Option<Value> {
    let text = match value {
        Value::Set(_, text) => text.clone(),
        Value::Bytes(b) => String::from_utf8(b.clone()).ok()?,
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) => {
            if crate::value::to_f64(value)?.fract() != 0.0 {
                return None;
            }
            let mask = u64::try_from(crate::value::to_i128(value)?).ok()?;
            return of_mask(members, mask);
        }
        other => crate::value::display(other),
    };
    let mut mask = 0u64;
    if !text.is_empty() {
        for part in text.split(',') {
            let position = members
                .iter()
                .position(|m| collation.compare(m.as_bytes(), part.as_bytes()).is_eq())?;
            mask |= 1 << position;
        }
    }
    of_mask(members, mask)
}

/// `value` stored into a SET column (rule 2).
pub(crate) fn store(
    members: &[String],
    collation: Collation,
    value: &Value,
    column: &str,
    row: usize,
) -> Result<Value, SqlError> {
    if matches!(value, Value::Null) {
        return Ok(Value::Null);
    }
    pick(members, collation, value).ok_or_else(|| SqlError::data_truncated(column, row))
}

/// `set('a','b')` as SHOW CREATE TABLE and COLUMN_TYPE print it.
pub(crate) fn type_text(members: &[String]) -> String {
    crate::enum_type::member_list("set", members)
}

/// The longest text a value can have: every member and the commas between them.
pub(crate) fn max_chars(members: &[String]) -> u32 {
    let chars: usize = members.iter().map(|m| m.chars().count()).sum();
    u32::try_from(chars + members.len().saturating_sub(1)).unwrap_or(u32::MAX)
}

/// FIND_IN_SET(s, list) (rule 4).
pub(crate) fn find_in_set(s: &Value, list: &Value, collation: Collation) -> Value {
    let (Some(s), Some(list)) = (crate::value::as_text(s), crate::value::as_text(list)) else {
        return Value::Null;
    };
    if s.contains(',') || list.is_empty() {
        return Value::Int(0);
    }
    let position = list
        .split(',')
        .position(|part| collation.compare(part.as_bytes(), s.as_bytes()).is_eq());
    Value::Int(position.map_or(0, |p| i64::try_from(p).unwrap_or(i64::MAX - 1) + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Value {
        Value::Bytes(s.as_bytes().to_vec())
    }

    #[test]
    fn picks_lists_in_any_order() {
        let members: Vec<String> = ["a", "b", "c"].iter().map(|s| (*s).to_string()).collect();
        let ci = Collation::Utf8mb4GeneralCi;
        let pick = |v: &Value| pick(&members, ci, v);
        assert_eq!(pick(&b("c,A,a")), Some(Value::Set(5, "a,c".into())));
        assert_eq!(pick(&b("")), Some(Value::Set(0, String::new())));
        assert_eq!(pick(&Value::Int(6)), Some(Value::Set(6, "b,c".into())));
        assert_eq!(pick(&Value::Int(8)), None);
        assert_eq!(pick(&b("a,d")), None);
        assert_eq!(pick(&b("a,")), None);
        let e = store(&members, ci, &b("x"), "s", 2).unwrap_err();
        assert_eq!(e.code, 1265);
        assert_eq!(type_text(&members), "set('a','b','c')");
        assert_eq!(max_chars(&members), 5);
    }

    #[test]
    fn find_in_set_positions() {
        let ci = Collation::Utf8mb4GeneralCi;
        assert_eq!(find_in_set(&b("B"), &b("a,b,c"), ci), Value::Int(2));
        assert_eq!(find_in_set(&b("d"), &b("a,b,c"), ci), Value::Int(0));
        assert_eq!(find_in_set(&b("a,b"), &b("a,b,c"), ci), Value::Int(0));
        assert_eq!(find_in_set(&b("a"), &b(""), ci), Value::Int(0));
        assert_eq!(find_in_set(&Value::Null, &b("a"), ci), Value::Null);
        assert_eq!(
            find_in_set(&b("c"), &Value::Set(5, "a,c".into()), ci),
            Value::Int(2)
        );
    }

    #[test]
    fn declarations_refuse_duplicates_and_commas() {
        let ci = Collation::Utf8mb4GeneralCi;
        let list = |v: &[&str]| v.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
        assert_eq!(members(&list(&["a", "A"]), ci, "s").unwrap_err().code, 1291);
        assert_eq!(members(&list(&["a,b"]), ci, "s").unwrap_err().code, 1367);
        let many: Vec<String> = (0..65).map(|i| format!("m{i}")).collect();
        assert_eq!(members(&many, ci, "s").unwrap_err().code, 1097);
    }
}
