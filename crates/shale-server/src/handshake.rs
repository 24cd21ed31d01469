//! The connection phase's packets (MySQL "Connection Phase"): Protocol::HandshakeV10 from the
//! server, Protocol::HandshakeResponse41 from the client, Protocol::AuthSwitchRequest, and
//! COM_CHANGE_USER, which carries the same claims in the command phase.
//!
//! Invariant: only the 4.1 protocol is accepted (`CLIENT_PROTOCOL_41`); an older client is
//! refused with "Bad handshake". An SSLRequest is recognized by [`is_ssl_request`] before a
//! response is parsed; one where a full response is due is an error.

use crate::protocol::capability;
use crate::wire::{put_nul_bytes, put_u16, put_u32, Malformed, Reader};

/// The collation the server announces: `utf8mb4_general_ci` (45), which every MySQL and
/// MariaDB client knows (MySQL 8's 255, `utf8mb4_0900_ai_ci`, is unknown to older clients).
pub const SERVER_COLLATION: u8 = 45;

/// Protocol::HandshakeV10.
pub fn put_handshake(
    out: &mut Vec<u8>,
    server_version: &str,
    connection_id: u32,
    scramble: &[u8; 20],
    status: u16,
    plugin: &str,
    capabilities: u32,
) {
    out.push(10);
    put_nul_bytes(out, server_version.as_bytes());
    put_u32(out, connection_id);
    out.extend_from_slice(&scramble[..8]);
    out.push(0);
    put_u16(out, capabilities as u16);
    out.push(SERVER_COLLATION);
    put_u16(out, status);
    put_u16(out, (capabilities >> 16) as u16);
    // Length of the whole scramble with its terminating NUL.
    out.push(21);
    out.extend_from_slice(&[0; 10]);
    out.extend_from_slice(&scramble[8..]);
    out.push(0);
    put_nul_bytes(out, plugin.as_bytes());
}

/// Protocol::AuthSwitchRequest: `0xFE`, the plugin name, then its data: the scramble and a
/// NUL (libmariadb's `caching_sha2_password` refuses anything but 21 bytes).
pub fn put_auth_switch(out: &mut Vec<u8>, plugin: &str, scramble: &[u8; 20]) {
    out.push(0xFE);
    put_nul_bytes(out, plugin.as_bytes());
    out.extend_from_slice(scramble);
    out.push(0);
}

/// What Protocol::HandshakeResponse41 carries that the server uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeResponse {
    pub capabilities: u32,
    pub max_packet: u32,
    pub collation: u8,
    pub user: String,
    pub auth_response: Vec<u8>,
    pub database: Option<String>,
    /// Empty when the client did not say (pre-PLUGIN_AUTH clients mean the native one).
    pub plugin: String,
    /// The zstd level, when the client asked for zstd protocol compression.
    pub zstd_level: Option<u8>,
}

/// MySQL's `protocol_compression_level` default for zstd.
pub const DEFAULT_ZSTD_LEVEL: u8 = 3;

/// Why a handshake response was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    #[error("the client does not speak protocol 4.1")]
    OldProtocol,
    #[error("the client asked for TLS again, or where it was not offered")]
    TlsRequested,
    #[error(transparent)]
    Malformed(#[from] Malformed),
}

/// Protocol::SSLRequest: the first 32 bytes of a HandshakeResponse41 with CLIENT_SSL, after
/// which the client starts TLS and sends the whole response inside it.
pub fn is_ssl_request(payload: &[u8]) -> bool {
    payload.len() == 32
        && u32::from_le_bytes([payload[0], payload[1], payload[2], payload[3]]) & capability::SSL
            != 0
}

pub fn parse_handshake_response(payload: &[u8]) -> Result<HandshakeResponse, HandshakeError> {
    let mut r = Reader::new(payload);
    let what = "handshake response";
    let client = r.u32(what)?;
    if client & capability::PROTOCOL_41 == 0 {
        return Err(HandshakeError::OldProtocol);
    }
    // Only what both sides support counts from here on (SSL: whether TLS is in use was
    // settled by the SSLRequest before this packet).
    let capabilities = client & (capability::SERVER | capability::SSL);
    let max_packet = r.u32(what)?;
    let collation = r.u8(what)?;
    r.take(23, what)?;
    if r.is_empty() && client & capability::SSL != 0 {
        return Err(HandshakeError::TlsRequested);
    }
    let user = String::from_utf8_lossy(r.nul_bytes()).into_owned();
    let auth_response = if capabilities & capability::PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
        r.lenenc_bytes(what)?.to_vec()
    } else if capabilities & capability::SECURE_CONNECTION != 0 {
        let n = r.u8(what)?;
        r.take(n as usize, what)?.to_vec()
    } else {
        r.nul_bytes().to_vec()
    };
    let database = if capabilities & capability::CONNECT_WITH_DB != 0 && !r.is_empty() {
        let db = r.nul_bytes();
        (!db.is_empty()).then(|| String::from_utf8_lossy(db).into_owned())
    } else {
        None
    };
    let plugin = if capabilities & capability::PLUGIN_AUTH != 0 && !r.is_empty() {
        String::from_utf8_lossy(r.nul_bytes()).into_owned()
    } else {
        String::new()
    };
    // Connection attributes (CLIENT_CONNECT_ATTRS) follow; the server does not use them.
    // After them, under CLIENT_ZSTD_COMPRESSION_ALGORITHM, the zstd level the client wants
    // (MySQL's default, 3, when it is missing or out of range).
    let mut zstd_level = None;
    if capabilities & capability::ZSTD_COMPRESSION_ALGORITHM != 0 {
        if capabilities & capability::CONNECT_ATTRS != 0 && !r.is_empty() {
            r.lenenc_bytes(what)?;
        }
        let level = r.u8(what).unwrap_or(DEFAULT_ZSTD_LEVEL);
        zstd_level = Some(if (1..=22).contains(&level) {
            level
        } else {
            DEFAULT_ZSTD_LEVEL
        });
    }
    Ok(HandshakeResponse {
        capabilities,
        max_packet,
        collation,
        user,
        auth_response,
        database,
        plugin,
        zstd_level,
    })
}

/// COM_CHANGE_USER's body (after the command byte): user, auth response, database, then
/// optionally the collation, the plugin name and connection attributes. `capabilities` are
/// the ones the connection agreed on.
pub fn parse_change_user(
    body: &[u8],
    capabilities: u32,
) -> Result<HandshakeResponse, HandshakeError> {
    let mut r = Reader::new(body);
    let what = "COM_CHANGE_USER";
    let user = String::from_utf8_lossy(r.nul_bytes()).into_owned();
    let auth_response = if capabilities & capability::SECURE_CONNECTION != 0 {
        let n = r.u8(what)?;
        r.take(n as usize, what)?.to_vec()
    } else {
        r.nul_bytes().to_vec()
    };
    let db = r.nul_bytes();
    let database = (!db.is_empty()).then(|| String::from_utf8_lossy(db).into_owned());
    let mut collation = SERVER_COLLATION;
    if r.remaining() >= 2 {
        collation = r.u16(what)? as u8;
    }
    let plugin = if capabilities & capability::PLUGIN_AUTH != 0 && !r.is_empty() {
        String::from_utf8_lossy(r.nul_bytes()).into_owned()
    } else {
        String::new()
    };
    Ok(HandshakeResponse {
        capabilities,
        max_packet: 0,
        collation,
        user,
        auth_response,
        database,
        plugin,
        zstd_level: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::put_lenenc_bytes;

    #[test]
    fn handshake_carries_the_scramble_in_two_parts() {
        let scramble = *b"abcdefghijklmnopqrst";
        let mut out = Vec::new();
        put_handshake(
            &mut out,
            "8.0.36-Shale",
            7,
            &scramble,
            2,
            "mysql_native_password",
            capability::SERVER,
        );
        let mut r = Reader::new(&out);
        assert_eq!(r.u8("").unwrap(), 10);
        assert_eq!(r.nul_bytes(), b"8.0.36-Shale");
        assert_eq!(r.u32("").unwrap(), 7);
        assert_eq!(r.take(8, "").unwrap(), b"abcdefgh");
        r.take(1 + 2 + 1 + 2 + 2 + 1 + 10, "").unwrap();
        assert_eq!(r.nul_bytes(), b"ijklmnopqrst");
        assert_eq!(r.nul_bytes(), b"mysql_native_password");
        assert!(r.is_empty());
    }

    #[test]
    fn zstd_level_follows_the_connection_attributes() {
        let response = |caps: u32, attrs: bool, level: Option<u8>| {
            let mut p = Vec::new();
            put_u32(&mut p, caps);
            put_u32(&mut p, 1 << 24);
            p.push(45);
            p.extend_from_slice(&[0; 23]);
            put_nul_bytes(&mut p, b"root");
            put_lenenc_bytes(&mut p, &[1, 2, 3]);
            put_nul_bytes(&mut p, b"db1");
            put_nul_bytes(&mut p, b"mysql_native_password");
            if attrs {
                put_lenenc_bytes(&mut p, b"\x04_pid\x0212");
            }
            p.extend(level);
            parse_handshake_response(&p).unwrap().zstd_level
        };
        let zstd = capability::SERVER;
        let no_attrs = zstd & !capability::CONNECT_ATTRS;
        assert_eq!(response(zstd, true, Some(7)), Some(7));
        assert_eq!(response(no_attrs, false, Some(19)), Some(19));
        assert_eq!(response(zstd, true, Some(0)), Some(DEFAULT_ZSTD_LEVEL));
        assert_eq!(response(zstd, true, None), Some(DEFAULT_ZSTD_LEVEL));
        let zlib = zstd & !capability::ZSTD_COMPRESSION_ALGORITHM;
        assert_eq!(response(zlib, true, Some(7)), None);
    }

    #[test]
    fn response_parses_lenenc_auth_database_and_plugin() {
        let mut p = Vec::new();
        put_u32(&mut p, capability::SERVER);
        put_u32(&mut p, 1 << 24);
        p.push(45);
        p.extend_from_slice(&[0; 23]);
        put_nul_bytes(&mut p, b"root");
        put_lenenc_bytes(&mut p, &[1, 2, 3]);
        put_nul_bytes(&mut p, b"db1");
        put_nul_bytes(&mut p, b"mysql_native_password");
        let r = parse_handshake_response(&p).unwrap();
        assert_eq!(r.user, "root");
        assert_eq!(r.auth_response, [1, 2, 3]);
        assert_eq!(r.database.as_deref(), Some("db1"));
        assert_eq!(r.plugin, "mysql_native_password");
        // Every truncation is an error or a shorter valid response, never a panic.
        for n in 0..p.len() {
            let _ = parse_handshake_response(&p[..n]);
        }
        let mut change = b"app\0\x03abcdb2\0".to_vec();
        change.extend_from_slice(&[45, 0]);
        change.extend_from_slice(b"caching_sha2_password\0");
        let c = parse_change_user(&change, capability::SERVER).unwrap();
        assert_eq!(c.user, "app");
        assert_eq!(c.auth_response, b"abc");
        assert_eq!(c.database.as_deref(), Some("db2"));
        assert_eq!(c.plugin, "caching_sha2_password");
        for n in 0..change.len() {
            let _ = parse_change_user(&change[..n], capability::SERVER);
        }
        let mut ssl = p[..32].to_vec();
        ssl[1] |= (capability::SSL >> 8) as u8;
        assert!(is_ssl_request(&ssl));
        assert!(!is_ssl_request(&p[..32]));
        assert_eq!(
            parse_handshake_response(&ssl),
            Err(HandshakeError::TlsRequested)
        );
        let mut old = p.clone();
        old[1] &= !(capability::PROTOCOL_41 >> 8) as u8;
        assert_eq!(
            parse_handshake_response(&old),
            Err(HandshakeError::OldProtocol)
        );
    }
}
