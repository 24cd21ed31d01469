//! Server-side prepared statements of one connection: what COM_STMT_PREPARE returned, the
//! parameter types last bound, and long data from COM_STMT_SEND_LONG_DATA; and the decoding of
//! COM_STMT_EXECUTE (MySQL/MariaDB "COM_STMT_EXECUTE"):
//!
//! ```text
//! 0x17, int<4> statement id, int<1> cursor flags, int<4> iteration count (1),
//! if params > 0: NULL bitmap ((params + 7) / 8 bytes), int<1> new-params-bound flag,
//!                if the flag is 1: params x (int<1> type, int<1> flags: 0x80 unsigned),
//!                then each parameter that is neither NULL nor sent as long data, in order.
//! ```
//!
//! Invariants:
//! 1. With the new-params-bound flag 0 the types bound by the previous execution are reused;
//!    if there were none the execution is refused (1210), never guessed.
//! 2. Statement id 0xFFFFFFFF means the statement prepared last on this connection (MariaDB
//!    10.2+ pipelining).
//! 3. Long data is kept per parameter until the statement is executed, reset or closed, and
//!    takes the place of that parameter's value (whatever its NULL bit says), as in MySQL.
//! 4. A parameter's long data never grows past the connection's `max_allowed_packet`: the
//!    data is dropped and the next execution fails with error 1153.
//! 5. A statement's open cursor (cursor.rs) lives and dies with the statement, and
//!    COM_STMT_RESET closes it.

use std::collections::HashMap;

use shale_sql::{SqlError, Value};

use crate::binary::read_param;
use crate::cursor::Cursor;
use crate::protocol::errors;
use crate::wire::Reader;

const EXECUTE: &str = "mysqld_stmt_execute";

#[derive(Debug, Default)]
struct Statement {
    param_count: usize,
    /// `(type, flags)` per parameter from the last execution that sent them.
    bound_types: Option<Vec<(u8, u8)>>,
    long_data: Vec<Option<Vec<u8>>>,
    /// Some parameter's long data went past the limit since the last execution.
    long_data_too_large: bool,
    cursor: Option<Cursor>,
}

/// The prepared statements of one connection.
#[derive(Debug)]
pub struct Statements {
    by_id: HashMap<u32, Statement>,
    last_prepared: Option<u32>,
    max_long_data: usize,
}

impl Default for Statements {
    fn default() -> Self {
        Statements::new(64 << 20)
    }
}

/// A decoded COM_STMT_EXECUTE.
#[derive(Debug, PartialEq)]
pub struct Execute {
    pub id: u32,
    pub cursor_flags: u8,
    pub params: Vec<Value>,
    /// Which parameters are character strings, sent in `character_set_client`: every string
    /// type but the BLOB types, which MySQL takes as binary.
    pub text_params: Vec<bool>,
}

/// Whether a parameter of MySQL type `type_code` is a character string (see `text_params`).
fn is_text_param(type_code: u8) -> bool {
    // VARCHAR, JSON, ENUM, SET, VAR_STRING, STRING.
    matches!(type_code, 15 | 245 | 247 | 248 | 253 | 254)
}

impl Statements {
    /// No statements yet; long data per parameter is limited to `max_long_data` bytes.
    pub fn new(max_long_data: usize) -> Self {
        Statements {
            by_id: HashMap::new(),
            last_prepared: None,
            max_long_data,
        }
    }

    pub fn add(&mut self, id: u32, param_count: usize) {
        self.by_id.insert(
            id,
            Statement {
                param_count,
                bound_types: None,
                long_data: vec![None; param_count],
                long_data_too_large: false,
                cursor: None,
            },
        );
        self.last_prepared = Some(id);
    }

    /// Forgets `id`; false if it was unknown.
    pub fn remove(&mut self, id: u32) -> bool {
        if self.last_prepared == Some(id) {
            self.last_prepared = None;
        }
        self.by_id.remove(&id).is_some()
    }

    pub fn clear(&mut self) {
        self.by_id.clear();
        self.last_prepared = None;
    }

    /// COM_STMT_RESET: drops long data; false if `id` is unknown.
    pub fn reset(&mut self, id: u32) -> bool {
        match self.by_id.get_mut(&id) {
            Some(statement) => {
                statement.long_data.iter_mut().for_each(|d| *d = None);
                statement.long_data_too_large = false;
                statement.cursor = None;
                true
            }
            None => false,
        }
    }

    /// Keeps `cursor` as statement `id`'s open cursor (closing any earlier one).
    pub fn set_cursor(&mut self, id: u32, cursor: Cursor) {
        if let Some(statement) = self.by_id.get_mut(&id) {
            statement.cursor = Some(cursor);
        }
    }

    /// Closes statement `id`'s cursor, if it has one.
    pub fn close_cursor(&mut self, id: u32) {
        if let Some(statement) = self.by_id.get_mut(&id) {
            statement.cursor = None;
        }
    }

    /// Statement `id`'s open cursor: error 1243 for an unknown statement, 1421 when it has
    /// no open cursor.
    pub fn cursor(&mut self, id: u32) -> Result<&mut Cursor, SqlError> {
        let statement = self
            .by_id
            .get_mut(&id)
            .ok_or_else(|| errors::unknown_statement(id, "mysqld_stmt_fetch"))?;
        statement
            .cursor
            .as_mut()
            .ok_or_else(|| errors::no_open_cursor(id))
    }

    /// COM_STMT_SEND_LONG_DATA (`int<4>` id, `int<2>` parameter, data). It has no reply, so
    /// bad ids are ignored here and reported by the next execution, as MySQL does.
    pub fn send_long_data(&mut self, body: &[u8]) {
        let mut r = Reader::new(body);
        let (Ok(id), Ok(param)) = (r.u32("statement id"), r.u16("parameter")) else {
            return;
        };
        let Some(statement) = self.by_id.get_mut(&id) else {
            return;
        };
        let Some(slot) = statement.long_data.get_mut(param as usize) else {
            return;
        };
        let data = r.rest();
        let held = slot.as_ref().map_or(0, Vec::len);
        if held + data.len() > self.max_long_data {
            *slot = None;
            statement.long_data_too_large = true;
        } else {
            slot.get_or_insert_with(Vec::new).extend_from_slice(data);
        }
    }

    /// Decodes COM_STMT_EXECUTE's body (after the command byte).
    pub fn decode_execute(&mut self, body: &[u8]) -> Result<Execute, SqlError> {
        let malformed = |e: crate::wire::Malformed| errors::malformed(e.0);
        let mut r = Reader::new(body);
        let mut id = r.u32("statement id").map_err(malformed)?;
        if id == u32::MAX {
            id = self
                .last_prepared
                .ok_or_else(|| errors::unknown_statement(id, EXECUTE))?;
        }
        let cursor_flags = r.u8("flags").map_err(malformed)?;
        r.u32("iteration count").map_err(malformed)?;
        let statement = self
            .by_id
            .get_mut(&id)
            .ok_or_else(|| errors::unknown_statement(id, EXECUTE))?;
        if std::mem::take(&mut statement.long_data_too_large) {
            statement.long_data.iter_mut().for_each(|d| *d = None);
            return Err(errors::packet_too_large());
        }
        let n = statement.param_count;
        let mut params = Vec::with_capacity(n);
        let mut text_params = Vec::with_capacity(n);
        if n > 0 {
            let bitmap = r.take(n.div_ceil(8), "NULL bitmap").map_err(malformed)?;
            let new_bound = r.u8("new-params-bound flag").map_err(malformed)?;
            if new_bound == 1 {
                let mut types = Vec::with_capacity(n);
                for _ in 0..n {
                    let t = r.u8("parameter type").map_err(malformed)?;
                    let f = r.u8("parameter flags").map_err(malformed)?;
                    types.push((t, f));
                }
                statement.bound_types = Some(types);
            }
            let types = statement
                .bound_types
                .as_ref()
                .ok_or_else(|| errors::wrong_arguments(EXECUTE))?;
            for (i, &(type_code, flags)) in types.iter().enumerate() {
                text_params.push(is_text_param(type_code));
                if let Some(data) = statement.long_data[i].take() {
                    params.push(Value::Bytes(data));
                } else if bitmap[i / 8] & (1 << (i % 8)) != 0 {
                    params.push(Value::Null);
                } else {
                    params.push(read_param(&mut r, type_code, flags).map_err(malformed)?);
                }
            }
        }
        Ok(Execute {
            id,
            cursor_flags,
            params,
            text_params,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn execute_body(id: u32, bitmap: u8, types: Option<&[(u8, u8)]>, values: &[u8]) -> Vec<u8> {
        let mut b = id.to_le_bytes().to_vec();
        b.push(0);
        b.extend_from_slice(&1u32.to_le_bytes());
        b.push(bitmap);
        match types {
            Some(types) => {
                b.push(1);
                for &(t, f) in types {
                    b.extend_from_slice(&[t, f]);
                }
            }
            None => b.push(0),
        }
        b.extend_from_slice(values);
        b
    }

    #[test]
    fn execute_decodes_nulls_and_reuses_bound_types() {
        let mut s = Statements::default();
        s.add(1, 3);
        let mut values = 5i32.to_le_bytes().to_vec();
        values.extend_from_slice(b"\x02hi");
        let body = execute_body(1, 0b010, Some(&[(3, 0), (8, 0), (253, 0)]), &values);
        let e = s.decode_execute(&body).unwrap();
        assert_eq!(
            e.params,
            [Value::Int(5), Value::Null, Value::Bytes(b"hi".to_vec())]
        );
        // Flag 0: the same types again, and id -1 means the last prepared statement.
        let body = execute_body(u32::MAX, 0b110, None, &(-7i32).to_le_bytes());
        let e = s.decode_execute(&body).unwrap();
        assert_eq!(e.id, 1);
        assert_eq!(e.params, [Value::Int(-7), Value::Null, Value::Null]);
    }

    #[test]
    fn execute_without_types_unknown_ids_and_truncation_are_errors() {
        let mut s = Statements::default();
        s.add(1, 1);
        let body = execute_body(1, 0, None, &[1]);
        assert_eq!(s.decode_execute(&body).unwrap_err().code, 1210);
        assert_eq!(
            s.decode_execute(&execute_body(9, 0, None, &[]))
                .unwrap_err()
                .code,
            1243
        );
        let body = execute_body(1, 0, Some(&[(8, 0)]), &[1, 2, 3, 4, 5, 6, 7, 8]);
        for n in 0..body.len() {
            assert!(s.decode_execute(&body[..n]).is_err());
        }
    }

    #[test]
    fn long_data_replaces_the_value_once() {
        let mut s = Statements::default();
        s.add(4, 2);
        let mut chunk = 4u32.to_le_bytes().to_vec();
        chunk.extend_from_slice(&0u16.to_le_bytes());
        chunk.extend_from_slice(b"abc");
        s.send_long_data(&chunk);
        s.send_long_data(&chunk);
        s.send_long_data(&[1, 2]);
        let body = execute_body(4, 0, Some(&[(252, 0), (1, 0)]), &[9]);
        let e = s.decode_execute(&body).unwrap();
        assert_eq!(e.params, [Value::Bytes(b"abcabc".to_vec()), Value::Int(9)]);
        // The long data was used up: the next execution reads the value from the packet.
        let body = execute_body(4, 0, None, &[1, b'x', 7]);
        let e = s.decode_execute(&body).unwrap();
        assert_eq!(e.params, [Value::Bytes(b"x".to_vec()), Value::Int(7)]);
    }

    #[test]
    fn long_data_past_the_limit_fails_the_next_execution_once() {
        let mut s = Statements::new(5);
        s.add(4, 1);
        let mut chunk = 4u32.to_le_bytes().to_vec();
        chunk.extend_from_slice(&0u16.to_le_bytes());
        chunk.extend_from_slice(b"abc");
        s.send_long_data(&chunk);
        s.send_long_data(&chunk);
        let body = execute_body(4, 0, Some(&[(252, 0)]), &[1, b'y']);
        assert_eq!(s.decode_execute(&body).unwrap_err().code, 1153);
        let e = s.decode_execute(&body).unwrap();
        assert_eq!(e.params, [Value::Bytes(b"y".to_vec())]);
    }
}
