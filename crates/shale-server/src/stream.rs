//! A connection's byte stream on its own thread: plain TCP or TLS (rustls), read and written
//! with blocking calls (MySQL's thread-per-connection model).
//!
//! Why blocking I/O on the connection's thread rather than an async I/O task: the SQL layer is
//! synchronous, so a statement runs on a thread of its own either way; letting that thread
//! read the command and write the reply itself costs one `recv` and one `send` per command,
//! where handing packets between an I/O task and the thread cost two cross-thread wake-ups
//! (under sysbench's `oltp_point_select` the server's CPU per query fell from 38.5 to 15.8 us
//! with this change; docs/server.md, "How it runs").
//!
//! Invariants:
//! 1. Other threads stop a connection only through [`Stream::socket`]'s clone (`shutdown`):
//!    a blocked read then returns end-of-file, while a reply being written still goes out.
//! 2. The read buffer of [`Conn`] is the only place bytes read ahead live; nothing reads the
//!    socket around it once the connection phase hands it over.

use std::io::{self, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use rustls::{ServerConfig, ServerConnection, StreamOwned};

use crate::tls::TlsSession;

/// Bytes read ahead from the socket per `recv`.
pub const READ_BUFFER: usize = 16 * 1024;

/// The connection's transport.
#[derive(Debug)]
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ServerConnection, TcpStream>>),
}

/// A connection's buffered stream: reads through the buffer, writes straight to the stream.
pub type Conn = BufReader<Stream>;

impl Stream {
    /// The TCP socket under the stream.
    pub fn socket(&self) -> &TcpStream {
        match self {
            Stream::Plain(tcp) => tcp,
            Stream::Tls(tls) => &tls.sock,
        }
    }

    /// Bounds each blocking read (None: wait forever); a read past it fails with `WouldBlock`.
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        // A zero duration means "no timeout" to the OS call: keep a tiny positive one instead.
        let timeout = timeout.map(|t| t.max(Duration::from_millis(1)));
        self.socket().set_read_timeout(timeout)
    }

    /// Ends the stream: TLS's close_notify, then the socket's write side (best effort).
    pub fn close(&mut self) {
        if let Stream::Tls(tls) = self {
            tls.conn.send_close_notify();
            let _ = tls.conn.complete_io(&mut tls.sock);
        }
        let _ = self.socket().shutdown(std::net::Shutdown::Write);
    }

    /// Switches a plain stream to TLS: runs the server side of the TLS handshake to its end.
    pub fn accept_tls(
        tcp: TcpStream,
        config: Arc<ServerConfig>,
    ) -> io::Result<(Stream, TlsSession)> {
        let conn = ServerConnection::new(config).map_err(io::Error::other)?;
        let mut tls = StreamOwned::new(conn, tcp);
        while tls.conn.is_handshaking() {
            tls.conn.complete_io(&mut tls.sock)?;
        }
        let session = TlsSession::of(&tls.conn);
        Ok((Stream::Tls(Box::new(tls)), session))
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(tcp) => tcp.read(buf),
            Stream::Tls(tls) => tls.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(tcp) => tcp.write(buf),
            Stream::Tls(tls) => tls.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(tcp) => tcp.flush(),
            Stream::Tls(tls) => tls.flush(),
        }
    }
}
