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
//! 3. Without compression a read or write goes straight to the transport (no copy, no extra
//!    call); with it ([`Stream::start_compression`], after the login's OK) every byte goes
//!    through the connection's [`Compression`], and a `flush` ends a compressed packet.

use std::io::{self, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use rustls::{ServerConfig, ServerConnection, StreamOwned};

use crate::codec::{read_packet_in_order, Packet, ReadError};
use crate::compress::{Algorithm, Compression};
use crate::tls::TlsSession;

/// Bytes read ahead from the socket per `recv`.
pub const READ_BUFFER: usize = 16 * 1024;

/// The connection's transport, and the socket timeouts last set on it.
#[derive(Debug)]
pub struct Stream {
    transport: Transport,
    timeouts: Option<(Duration, Duration)>,
    /// Set when the client logged in with CLIENT_COMPRESS.
    compression: Option<Box<Compression>>,
}

#[derive(Debug)]
enum Transport {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ServerConnection, TcpStream>>),
}

/// A connection's buffered stream: reads through the buffer, writes straight to the stream.
pub type Conn = BufReader<Stream>;

/// Reads the client's next packet, whose first chunk must carry `seq` (any id under the
/// compressed protocol, whose own ids keep the order).
pub fn read_packet(
    conn: &mut Conn,
    seq: u8,
    max_allowed_packet: usize,
) -> Result<Packet, ReadError> {
    let expected = (!conn.get_ref().compressed()).then_some(seq);
    read_packet_in_order(conn, expected, max_allowed_packet)
}

impl Stream {
    /// A plain TCP stream.
    pub fn plain(tcp: TcpStream) -> Stream {
        Stream {
            transport: Transport::Plain(tcp),
            timeouts: None,
            compression: None,
        }
    }

    /// The TCP socket under the stream.
    pub fn socket(&self) -> &TcpStream {
        match &self.transport {
            Transport::Plain(tcp) => tcp,
            Transport::Tls(tls) => &tls.sock,
        }
    }

    /// Bounds each blocking read and write: a read past `read` fails with `WouldBlock`, a
    /// write that makes no progress for `write` fails. Both are socket options set only when
    /// they change (a command loop asks before every command, and the settings rarely move).
    pub fn set_timeouts(&mut self, read: Duration, write: Duration) -> io::Result<()> {
        // A zero duration means "no timeout" to the OS call: keep a tiny positive one instead.
        let (read, write) = (
            read.max(Duration::from_millis(1)),
            write.max(Duration::from_millis(1)),
        );
        if self.timeouts != Some((read, write)) {
            self.socket().set_read_timeout(Some(read))?;
            self.socket().set_write_timeout(Some(write))?;
            self.timeouts = Some((read, write));
        }
        Ok(())
    }

    /// From now on every byte goes in compressed packets (compress.rs), both ways.
    pub fn start_compression(&mut self, algorithm: Algorithm) {
        self.compression = Some(Box::new(Compression::new(algorithm)));
    }

    /// Whether the compressed protocol is in use.
    pub fn compressed(&self) -> bool {
        self.compression.is_some()
    }

    /// A command starts: under compression, its compressed packets are numbered from 0.
    pub fn new_command(&mut self) {
        if let Some(compression) = &mut self.compression {
            compression.new_command();
        }
    }

    /// Ends the stream: TLS's close_notify, then the socket's write side (best effort).
    pub fn close(&mut self) {
        if let Transport::Tls(tls) = &mut self.transport {
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
        let stream = Stream {
            transport: Transport::Tls(Box::new(tls)),
            timeouts: None,
            compression: None,
        };
        Ok((stream, session))
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.compression {
            None => self.transport.read(buf),
            Some(compression) => compression.read(&mut self.transport, buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.compression {
            None => self.transport.write(buf),
            Some(compression) => {
                compression.write(buf);
                Ok(buf.len())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.compression {
            None => self.transport.flush(),
            Some(compression) => compression.flush(&mut self.transport),
        }
    }
}

impl Read for Transport {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(tcp) => tcp.read(buf),
            Transport::Tls(tls) => tls.read(buf),
        }
    }
}

impl Write for Transport {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(tcp) => tcp.write(buf),
            Transport::Tls(tls) => tls.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Transport::Plain(tcp) => tcp.flush(),
            Transport::Tls(tls) => tls.flush(),
        }
    }
}
