//! ENUM's SQL rules: declaring one, storing into it, and what its values mean elsewhere.
//!
//! 1. `ENUM('a', 'b', ...)`: 1 to 65535 members, no two equal under the column's collation
//!    (1291 "Column 'c' has duplicated value 'x' in ENUM"). A value is held as the member's
//!    1-based index with its text (`Value::Enum`); index 0 is MySQL's error value ''.
//! 2. Stored text picks the member equal to it under the column's collation (trailing
//!    spaces ignored, as MySQL strips them from members), or, naming none, by index when it
//!    is an integer (`'3'`); an integer picks the member by index (0, the error value, and
//!    fractions are refused). Anything else is 1265 "Data truncated for column 'c' at
//!    row N" (strict mode; MySQL's non-strict mode would store '' with a warning).
//! 3. An ENUM sorts and compares with another ENUM by index (ORDER BY, MIN/MAX, GROUP BY,
//!    keys); with text as its text under the comparison's collation; with numbers, and in
//!    arithmetic (`e + 0`), as its index.

use shale_table::{Collation, Value};

use crate::error::SqlError;

/// Checks the members of `ENUM(...)` of column `column` (rule 1): their texts, trailing
/// spaces removed as MySQL does.
pub(crate) fn members(
    list: &[sqlparser::ast::EnumMember],
    collation: Collation,
    column: &str,
) -> Result<Vec<String>, SqlError> {
    let mut out: Vec<String> = Vec::with_capacity(list.len());
    for m in list {
        let sqlparser::ast::EnumMember::Name(name) = m else {
            return Err(SqlError::unsupported("ENUM members with values"));
        };
        let text = name.trim_end_matches(' ').to_string();
        if out
            .iter()
            .any(|o| collation.compare(o.as_bytes(), text.as_bytes()).is_eq())
        {
            return Err(SqlError::new(
                1291,
                "HY000",
                format!("Column '{column}' has duplicated value '{text}' in ENUM"),
            ));
        }
        out.push(text);
    }
    if out.is_empty() || out.len() > shale_table::ENUM_MAX_MEMBERS {
        return Err(SqlError::new(
            1097,
            "HY000",
            format!("Too many strings for column {column} and SET"),
        ));
    }
    Ok(out)
}

/// The member of `members` that `value` names (rule 2); None when none does.
pub(crate) fn pick(members: &[String], collation: Collation, value: &Value) -> Option<Value> {
    let by_index = |i: i128| -> Option<Value> {
        // Index 0, the error value, is refused like any other bad value (strict mode).
        let index = u16::try_from(i).ok().filter(|&i| i > 0)?;
        members
            .get(usize::from(index) - 1)
            .map(|m| Value::Enum(index, m.clone()))
    };
    match value {
        Value::Enum(i, text) => members
            .iter()
            .position(|m| collation.compare(m.as_bytes(), text.as_bytes()).is_eq())
            .and_then(|p| by_index(p as i128 + 1))
            .or_else(|| (*i == 0).then(|| Value::Enum(0, String::new()))),
        // Text that names no member but is an integer is an index, as MySQL reads `'3'`.
        Value::Bytes(b) => members
            .iter()
            .position(|m| collation.compare(m.as_bytes(), b).is_eq())
            .and_then(|p| by_index(p as i128 + 1))
            .or_else(|| by_index(crate::value::str_to_i128_exact(b)?)),
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) => {
            let d = crate::value::to_f64(value)?;
            if d.fract() != 0.0 {
                return None;
            }
            by_index(crate::value::to_i128(value)?)
        }
        _ => {
            let text = crate::value::display(value);
            members
                .iter()
                .position(|m| collation.compare(m.as_bytes(), text.as_bytes()).is_eq())
                .and_then(|p| by_index(p as i128 + 1))
        }
    }
}

/// `value` stored into an ENUM column (rule 2).
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

/// `enum('a','b')` as SHOW CREATE TABLE and COLUMN_TYPE print it.
pub(crate) fn type_text(members: &[String]) -> String {
    member_list("enum", members)
}

/// `kind('a','b''c')`: an ENUM's or SET's members as MySQL prints the type.
pub(crate) fn member_list(kind: &str, members: &[String]) -> String {
    let quoted: Vec<String> = members
        .iter()
        .map(|m| format!("'{}'", m.replace('\'', "''")))
        .collect();
    format!("{kind}({})", quoted.join(","))
}

/// The longest member in characters (the column's display length).
pub(crate) fn max_chars(members: &[String]) -> u32 {
    members
        .iter()
        .map(|m| u32::try_from(m.chars().count()).unwrap_or(u32::MAX))
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Value {
        Value::Bytes(s.as_bytes().to_vec())
    }

    #[test]
    fn picks_members_by_text_and_index() {
        let members = vec!["small".to_string(), "Large".to_string()];
        let ci = Collation::Utf8mb4GeneralCi;
        let pick = |v: &Value| pick(&members, ci, v);
        assert_eq!(pick(&b("LARGE")), Some(Value::Enum(2, "Large".into())));
        assert_eq!(pick(&b("small  ")), Some(Value::Enum(1, "small".into())));
        assert_eq!(pick(&Value::Int(1)), Some(Value::Enum(1, "small".into())));
        assert_eq!(pick(&Value::Int(0)), None);
        assert_eq!(pick(&Value::Int(3)), None);
        assert_eq!(pick(&Value::Double(1.5)), None);
        assert_eq!(pick(&b("medium")), None);
        assert_eq!(pick(&b(" 2")), Some(Value::Enum(2, "Large".into())));
        let bin = pick_bin(&members);
        assert_eq!(bin, None);
        let e = store(&members, ci, &b("x"), "size", 4).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (1265, "Data truncated for column 'size' at row 4")
        );
        assert_eq!(type_text(&["a'b".into(), "c".into()]), "enum('a''b','c')");
    }

    fn pick_bin(members: &[String]) -> Option<Value> {
        pick(members, Collation::Utf8mb4Bin, &b("LARGE"))
    }

    #[test]
    fn declarations_refuse_duplicates() {
        use sqlparser::ast::EnumMember;
        let list = [EnumMember::Name("a".into()), EnumMember::Name("A ".into())];
        let e = members(&list, Collation::Utf8mb4GeneralCi, "c").unwrap_err();
        assert_eq!(e.code, 1291);
        assert_eq!(e.message, "Column 'c' has duplicated value 'A' in ENUM");
        assert_eq!(
            members(&list, Collation::Utf8mb4Bin, "c").unwrap(),
            vec!["a".to_string(), "A".to_string()]
        );
    }
}
