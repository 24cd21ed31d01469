//! The connection's character sets: the collation a client names in its handshake, and
//! `SET NAMES charset [COLLATE collation]` / `SET NAMES DEFAULT`, recorded in the session's
//! `character_set_client`, `character_set_connection`, `character_set_results` and
//! `collation_connection` as MySQL sets them.
//!
//! The SQL layer itself reads and stores UTF-8; the server converts at the connection's edge
//! with [`crate::Charset`] (charset.rs): statement text and string parameters from
//! `character_set_client`, results and error messages into `character_set_results`
//! (shale-server's `statement_text.rs` and `results_charset.rs`, docs/server.md).
//!
//! Invariant: the four variables always name a character set and collation of [`COLLATIONS`]
//! that belong together; an unknown name is an error (1115, 1273, 1253, as MySQL) that
//! changes nothing.

use shale_table::Value;

use crate::error::SqlError;
use crate::session::Session;

/// MySQL's collation ids (the handshake's byte holds those below 256), names and character
/// sets, for the character sets Shale records. The first collation of a character set is its default
/// under `SET NAMES` (MySQL 8's, so utf8mb4 means `utf8mb4_0900_ai_ci`).
const COLLATIONS: [(u16, &str, &str); 15] = [
    (255, "utf8mb4_0900_ai_ci", "utf8mb4"),
    (45, "utf8mb4_general_ci", "utf8mb4"),
    (46, "utf8mb4_bin", "utf8mb4"),
    (224, "utf8mb4_unicode_ci", "utf8mb4"),
    (246, "utf8mb4_unicode_520_ci", "utf8mb4"),
    (278, "utf8mb4_0900_as_cs", "utf8mb4"),
    (305, "utf8mb4_0900_as_ci", "utf8mb4"),
    (309, "utf8mb4_0900_bin", "utf8mb4"),
    (33, "utf8mb3_general_ci", "utf8mb3"),
    (83, "utf8mb3_bin", "utf8mb3"),
    (192, "utf8mb3_unicode_ci", "utf8mb3"),
    (8, "latin1_swedish_ci", "latin1"),
    (47, "latin1_bin", "latin1"),
    (11, "ascii_general_ci", "ascii"),
    (63, "binary", "binary"),
];

/// The character set a collation MySQL names belongs to, for the collations Shale knows.
pub(crate) fn charset_of_collation(name: &str) -> Option<&'static str> {
    COLLATIONS
        .iter()
        .find(|(_, known, _)| known.eq_ignore_ascii_case(name))
        .map(|(_, _, set)| *set)
}

/// A character set's name as MySQL reports it and its default collation (MySQL 8's:
/// utf8mb4 is `utf8mb4_0900_ai_ci`), for a name Shale knows (`utf8` is utf8mb3).
pub(crate) fn default_collation(charset: &str) -> Option<(&'static str, &'static str)> {
    resolve(charset, None).ok()
}

/// What the session starts with (the server's `character_set_server`/`collation_server`).
const DEFAULT: (&str, &str) = ("utf8mb4", "utf8mb4_general_ci");

fn unknown_charset(name: &str) -> SqlError {
    SqlError::new(1115, "42000", format!("Unknown character set: '{name}'"))
}

/// The character set and collation for `SET NAMES charset [COLLATE collation]`.
fn resolve(
    charset: &str,
    collation: Option<&str>,
) -> Result<(&'static str, &'static str), SqlError> {
    let lower = charset.to_ascii_lowercase();
    // MySQL 8 still takes `utf8` as utf8mb3 (with a deprecation warning we leave out).
    let wanted = if lower == "utf8" {
        "utf8mb3"
    } else {
        lower.as_str()
    };
    let (_, default, set) = COLLATIONS
        .iter()
        .find(|(_, _, set)| *set == wanted)
        .ok_or_else(|| unknown_charset(charset))?;
    let Some(collation) = collation else {
        return Ok((set, default));
    };
    let lower = collation.to_ascii_lowercase();
    let lower = lower.replace("utf8_", "utf8mb3_");
    let (_, name, of) = COLLATIONS
        .iter()
        .find(|(_, name, _)| *name == lower)
        .ok_or_else(|| SqlError::new(1273, "HY000", format!("Unknown collation: '{collation}'")))?;
    if of != set {
        return Err(SqlError::new(
            1253,
            "42000",
            format!("COLLATION '{name}' is not valid for CHARACTER SET '{set}'"),
        ));
    }
    Ok((set, name))
}

impl Session {
    /// The collation id a client sent in its handshake: recorded as MySQL does, when it is
    /// one of [`COLLATIONS`]; otherwise the session keeps the server's defaults (as MySQL does
    /// for an id it does not know). False if the id was not known.
    pub fn set_client_collation(&mut self, id: u8) -> bool {
        match COLLATIONS
            .iter()
            .find(|(known, _, _)| *known == u16::from(id))
        {
            Some((_, collation, charset)) => {
                self.record_names(charset, collation);
                true
            }
            None => false,
        }
    }

    /// `SET NAMES charset [COLLATE collation]`, or `SET NAMES DEFAULT` with `None`.
    pub(crate) fn set_names(
        &mut self,
        charset: Option<&str>,
        collation: Option<&str>,
    ) -> Result<(), SqlError> {
        let (charset, collation) = match charset {
            Some(charset) => resolve(charset, collation)?,
            None => DEFAULT,
        };
        self.record_names(charset, collation);
        Ok(())
    }

    /// `SET character_set_client | character_set_connection | character_set_results |
    /// collation_connection = name`, as MySQL sets them: a collation also sets
    /// `character_set_connection` to its character set, `character_set_connection` sets
    /// `collation_connection` to the set's default, and `character_set_results` may be NULL.
    /// 1115 for an unknown character set, 1273 for an unknown collation.
    pub(crate) fn set_names_variable(&mut self, name: &str, v: &Value) -> Result<(), SqlError> {
        let text = |s: &str| Value::Bytes(s.as_bytes().to_vec());
        let wanted = match v {
            Value::Null if name == "character_set_results" => {
                self.state_mut().vars.insert(name.to_owned(), Value::Null);
                return Ok(());
            }
            Value::Null => {
                return Err(SqlError::new(
                    1231,
                    "42000",
                    format!("Variable '{name}' can't be set to the value of 'NULL'"),
                ))
            }
            Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            other => crate::value::as_text(other).unwrap_or_default(),
        };
        let vars = &mut self.state_mut().vars;
        if name == "collation_connection" {
            let lower = wanted.to_ascii_lowercase().replace("utf8_", "utf8mb3_");
            let (_, collation, set) = COLLATIONS
                .iter()
                .find(|(_, known, _)| *known == lower)
                .ok_or_else(|| {
                    SqlError::new(1273, "HY000", format!("Unknown collation: '{wanted}'"))
                })?;
            vars.insert("collation_connection".to_owned(), text(collation));
            vars.insert("character_set_connection".to_owned(), text(set));
            return Ok(());
        }
        let (set, default) = resolve(&wanted, None)?;
        vars.insert(name.to_owned(), text(set));
        if name == "character_set_connection" {
            vars.insert("collation_connection".to_owned(), text(default));
        }
        Ok(())
    }

    /// The session's `collation_connection` (the collation string literals take).
    pub(crate) fn collation_connection(&self) -> &str {
        match self.state().vars.get("collation_connection") {
            Some(Value::Bytes(b)) => std::str::from_utf8(b).unwrap_or(""),
            _ => "",
        }
    }

    fn record_names(&mut self, charset: &str, collation: &str) {
        let vars = &mut self.state_mut().vars;
        let text = |s: &str| Value::Bytes(s.as_bytes().to_vec());
        for name in [
            "character_set_client",
            "character_set_connection",
            "character_set_results",
        ] {
            vars.insert(name.to_owned(), text(charset));
        }
        vars.insert("collation_connection".to_owned(), text(collation));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_as_mysql_8_does() {
        assert_eq!(
            resolve("utf8mb4", None).unwrap(),
            ("utf8mb4", "utf8mb4_0900_ai_ci")
        );
        assert_eq!(
            resolve("UTF8", None).unwrap(),
            ("utf8mb3", "utf8mb3_general_ci")
        );
        assert_eq!(
            resolve("latin1", None).unwrap(),
            ("latin1", "latin1_swedish_ci")
        );
        assert_eq!(resolve("binary", None).unwrap(), ("binary", "binary"));
        assert_eq!(
            resolve("utf8mb4", Some("utf8mb4_bin")).unwrap(),
            ("utf8mb4", "utf8mb4_bin")
        );
        assert_eq!(
            resolve("utf8", Some("utf8_bin")).unwrap(),
            ("utf8mb3", "utf8mb3_bin")
        );
        assert_eq!(resolve("koi9", None).unwrap_err().code, 1115);
        assert_eq!(resolve("utf8mb4", Some("nope")).unwrap_err().code, 1273);
        let err = resolve("utf8mb4", Some("latin1_bin")).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (
                1253,
                "COLLATION 'latin1_bin' is not valid for CHARACTER SET 'utf8mb4'"
            )
        );
    }

    #[test]
    fn every_collation_belongs_to_a_charset_whose_default_is_listed_first() {
        for (_, _, set) in COLLATIONS {
            let first = COLLATIONS.iter().find(|(_, _, s)| *s == set).unwrap();
            assert!(first.1.starts_with(set), "{set}");
        }
    }
}
