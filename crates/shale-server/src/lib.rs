//! Shale's MySQL-compatible server (`shale serve`): the MySQL client/server protocol over a
//! [`shale_sql::Session`] per connection.
//!
//! Layout, bottom up: `wire` (the protocol's integer and string encodings), `codec` (packet
//! framing), `protocol` (flags, command bytes, OK/ERR/EOF), `handshake` and `auth` (the
//! connection phase, with `sha2_full` for `caching_sha2_password`'s full authentication and
//! `tls` for the switch to TLS), `text` and `binary` (result and parameter encodings), `prepared`
//! (prepared statements' state, COM_STMT_EXECUTE decoding), `cursor` (COM_STMT_FETCH's
//! materialized results), `results` (streaming replies),
//! `split` (is there a second statement?), `throttle` (delays after failed logins), `stream`
//! (a connection's blocking byte stream, plain or TLS) with `compress` (the compressed
//! protocol under it), `command` (the command phase), `conn`
//! (a connection's thread: the connection phase and the command loop) and `server` (the
//! listener); `testing` (feature `testing`) holds the fuzz targets' entry
//! points. docs/server.md describes the server for its users.

// The docs name packets and fields the way the protocol documentation spells them (COM_QUERY,
// OK_Packet, MySQL, int<lenenc>); backticks around every one would only add noise.
#![allow(clippy::doc_markdown)]

mod auth;
mod backend;
mod binary;
mod codec;
mod command;
mod compress;
mod conn;
mod cursor;
mod handshake;
mod prepared;
mod protocol;
mod results;
mod results_charset;
mod server;
mod sha2_full;
mod split;
mod statement_text;
mod stream;
mod text;
mod throttle;
mod tls;
mod wire;

#[cfg(feature = "testing")]
pub mod testing;

use std::net::SocketAddr;

pub use auth::{
    hash_password, native_scramble_response, sha2_scramble_response, CACHING_SHA2, NATIVE_PASSWORD,
};
pub use backend::{Backend, BackendSession};
pub use server::{Server, ServerOptions, ShutdownReport, SERVER_VERSION};
pub use sha2_full::{rsa_encrypt_password, RsaKeyPair};
pub use tls::{server_config as tls_server_config, TlsError, TlsSession};

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot listen on {addr}: {source}; is another server using the port? (--port 0 picks a free one)")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot read the listening address: {0}")]
    LocalAddr(std::io::Error),
}

/// Random damage to valid client packets never panics any decoder (the fuzz targets' cheap
/// cousin, run with every `cargo test`).
#[cfg(test)]
mod hostile_input_tests {
    use rand::{Rng as _, SeedableRng as _};

    use crate::handshake::parse_handshake_response;
    use crate::prepared::Statements;

    fn mutate(rng: &mut rand::rngs::SmallRng, valid: &[u8]) -> Vec<u8> {
        let mut bytes = valid.to_vec();
        match rng.gen_range(0..4) {
            0 => bytes.truncate(rng.gen_range(0..=bytes.len())),
            1 => {
                for _ in 0..rng.gen_range(1..4) {
                    if !bytes.is_empty() {
                        let i = rng.gen_range(0..bytes.len());
                        bytes[i] = rng.gen();
                    }
                }
            }
            2 => bytes.extend((0..rng.gen_range(1..16)).map(|_| rng.gen::<u8>())),
            _ => bytes = (0..rng.gen_range(0..64)).map(|_| rng.gen()).collect(),
        }
        bytes
    }

    #[test]
    fn damaged_handshake_responses_and_executes_never_panic() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut handshake = crate::protocol::capability::SERVER.to_le_bytes().to_vec();
        handshake.extend_from_slice(&[0, 0, 0, 1, 45]);
        handshake.extend_from_slice(&[0; 23]);
        handshake.extend_from_slice(b"root\0\x14");
        handshake.extend_from_slice(&[7; 20]);
        handshake.extend_from_slice(b"db\0mysql_native_password\0");
        let mut execute = 1u32.to_le_bytes().to_vec();
        execute.extend_from_slice(&[0, 1, 0, 0, 0, 0b10, 1]);
        for t in [8u8, 253, 12, 11, 5, 246] {
            execute.extend_from_slice(&[t, 0]);
        }
        execute.extend_from_slice(&5i64.to_le_bytes());
        execute.extend_from_slice(&[7, 0xE8, 7, 1, 2, 3, 4, 5, 0]);
        execute.extend_from_slice(&2.5f64.to_le_bytes());
        execute.extend_from_slice(b"\x041.50");
        let mut statements = Statements::default();
        statements.add(1, 6);
        assert_eq!(statements.decode_execute(&execute).unwrap().params.len(), 6);
        assert!(parse_handshake_response(&handshake).is_ok());
        for _ in 0..20_000 {
            let _ = parse_handshake_response(&mutate(&mut rng, &handshake));
            let mut statements = Statements::default();
            statements.add(1, 6);
            let _ = statements.decode_execute(&mutate(&mut rng, &execute));
            statements.send_long_data(&mutate(&mut rng, &execute));
        }
    }
}
