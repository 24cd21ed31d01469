//! Shale's MySQL-compatible server (`shale serve`): the MySQL client/server protocol over a
//! [`shale_sql::Session`] per connection.
//!
//! Layout, bottom up: `wire` (the protocol's integer and string encodings), `codec` (packet
//! framing), `protocol` (flags, command bytes, OK/ERR/EOF), `handshake` and `auth` (the
//! connection phase), `text` and `binary` (result and parameter encodings), `prepared`
//! (prepared statements' state, COM_STMT_EXECUTE decoding), `results` (streaming replies),
//! `command` (the command phase on the session thread), `conn` (a connection's I/O task) and
//! `server` (the listener). docs/server.md describes the server for its users.

// The docs name packets and fields the way the protocol documentation spells them (COM_QUERY,
// OK_Packet, MySQL, int<lenenc>); backticks around every one would only add noise.
#![allow(clippy::doc_markdown)]

mod auth;
mod backend;
mod binary;
mod codec;
mod command;
mod conn;
mod handshake;
mod prepared;
mod protocol;
mod results;
mod server;
mod text;
mod wire;

use std::net::SocketAddr;

pub use auth::{
    hash_password, native_scramble_response, sha2_scramble_response, CACHING_SHA2, NATIVE_PASSWORD,
};
pub use backend::{Backend, BackendSession};
pub use server::{Server, ServerOptions, ShutdownReport, SERVER_VERSION};

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
