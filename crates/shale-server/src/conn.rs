//! One client connection: the connection phase (HandshakeV10, an optional SSLRequest and the
//! switch to TLS, the client's response, an optional AuthSwitchRequest,
//! `caching_sha2_password`'s extra round trips, then OK or ERR), then the command loop. Both run
//! on the connection's own thread with blocking I/O (see stream.rs for why); a small async task
//! per connection only watches it: it ends the connection phase after `connect_timeout`, and on
//! server shutdown or KILL CONNECTION it shuts the socket's read side, which wakes the thread.
//! COM_QUIT and COM_CHANGE_USER (another round of authentication) are handled here; every
//! other command goes to the session (command.rs). An idle connection closes after
//! `wait_timeout` (`interactive_timeout` for clients that set CLIENT_INTERACTIVE).
//!
//! Invariants:
//! 1. No command is read before authentication succeeded, and the failure message is the same
//!    whether or not the user exists (error 1045).
//! 2. A malformed or oversized packet gets an ERR packet (when the stream is still in sync)
//!    and closes this connection only.
//! 3. The watching task ends only after the connection's thread has ended (or when the server
//!    drops it after the shutdown grace period, which shuts the socket down entirely so a
//!    thread blocked on a slow client ends too), so when every task is done no session is left
//!    and the Instance can be closed.

use std::io::{BufReader, Write};
use std::net::{IpAddr, Shutdown, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use shale_sql::{Counter, SqlError, UserRecord};
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

use crate::auth::{self, CACHING_SHA2, NATIVE_PASSWORD};
use crate::codec::{read_packet, Packet, PacketWriter, ReadError};
use crate::command::{CommandHandler, ConnControl, Identity};
use crate::compress::Algorithm;
use crate::handshake::{
    is_ssl_request, parse_change_user, parse_handshake_response, put_auth_switch, put_handshake,
    HandshakeError, HandshakeResponse,
};
use crate::protocol::{capability, command, errors, put_err, put_err_before_handshake, status};
use crate::results::Output;
use crate::server::Shared;
use crate::stream::{self, Conn, Stream, READ_BUFFER};
use crate::tls::TlsSession;

/// Largest packet accepted before authentication: a handshake response is small.
const MAX_HANDSHAKE_PACKET: usize = 64 * 1024;

/// Serves one connection to its end; never panics, errors only end this connection.
pub(crate) async fn serve(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let open = shared.connections.fetch_add(1, Ordering::Relaxed) + 1;
    shared.count(Counter::Connections, 1);
    // One connection past max_connections is let in, as MySQL does, for an account with
    // SUPER or CONNECTION_ADMIN (checked after its login, `connection`).
    if open > shared.max_connections() + 1 {
        let mut stream = stream;
        let _ = stream.write_all(&too_many_connections()).await;
        shared.connections.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    let control = Arc::new(ConnControl::default());
    let logged_in = Arc::new(AtomicBool::new(false));
    let Some((socket, mut done)) = spawn_connection(stream, peer, &shared, &control, &logged_in)
    else {
        shared.connections.fetch_sub(1, Ordering::Relaxed);
        return;
    };
    // Dropped when this task ends or is dropped at the end of the grace period.
    let socket = ShutOnDrop(socket);
    let connect_deadline = tokio::time::sleep(shared.options.connect_timeout);
    tokio::pin!(connect_deadline);
    let mut connecting = true;
    let mut stopping = false;
    loop {
        tokio::select! {
            _ = &mut done => break,
            () = &mut connect_deadline, if connecting => {
                connecting = false;
                if !logged_in.load(Ordering::Acquire) {
                    let _ = socket.0.shutdown(Shutdown::Both);
                }
            }
            () = control.killed.notified() => {
                let _ = socket.0.shutdown(Shutdown::Read);
            }
            _ = stop.wait_for(|stop| *stop), if !stopping => {
                stopping = true;
                let _ = socket.0.shutdown(Shutdown::Read);
            }
        }
    }
}

/// Shuts a socket down entirely when dropped.
struct ShutOnDrop(std::net::TcpStream);

impl Drop for ShutOnDrop {
    fn drop(&mut self) {
        let _ = self.0.shutdown(Shutdown::Both);
    }
}

/// Starts the connection's thread; returns a clone of its socket and what resolves when the
/// thread ends. None if no thread could be started (the client was told).
fn spawn_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    shared: &Arc<Shared>,
    control: &Arc<ConnControl>,
    logged_in: &Arc<AtomicBool>,
) -> Option<(std::net::TcpStream, tokio::sync::oneshot::Receiver<()>)> {
    let tcp = stream.into_std().ok()?;
    tcp.set_nonblocking(false).ok()?;
    let socket = tcp.try_clone().ok()?;
    let (finished, done) = tokio::sync::oneshot::channel::<()>();
    let (thread_shared, thread_control) = (shared.clone(), control.clone());
    let thread_logged_in = logged_in.clone();
    let spawned = std::thread::Builder::new()
        .name("shale-conn".into())
        .spawn(move || {
            connection(
                tcp,
                peer,
                &thread_shared,
                &thread_control,
                &thread_logged_in,
            );
            thread_shared.connections.fetch_sub(1, Ordering::Relaxed);
            // Invariant 3: what holds the backend goes before the watching task is told.
            drop((thread_shared, thread_control, thread_logged_in));
            drop(finished);
        });
    if spawned.is_err() {
        let mut socket = socket;
        let _ = socket.write_all(&too_many_connections());
        return None;
    }
    Some((socket, done))
}

/// The connection's thread: authenticate, then serve commands until the connection ends.
fn connection(
    tcp: std::net::TcpStream,
    peer: SocketAddr,
    shared: &Arc<Shared>,
    control: &Arc<ConnControl>,
    logged_in: &AtomicBool,
) {
    let Some((conn, login)) = connect(tcp, peer, shared) else {
        shared.count(Counter::AbortedConnects, 1);
        return;
    };
    // The extra connection past max_connections is an administrator's only.
    if shared.connections.load(Ordering::Relaxed) > shared.max_connections()
        && !shared
            .backend
            .is_connection_admin(&login.user, &login.account_host)
    {
        let mut conn = conn;
        send_error(conn.get_mut(), login.seq, &errors::too_many_connections());
        shared.count(Counter::AbortedConnects, 1);
        return;
    }
    logged_in.store(true, Ordering::Release);
    command_loop(conn, shared, login, control);
}

/// What a successful connection phase hands to the command phase.
struct Login {
    capabilities: u32,
    connection_id: u32,
    /// The handshake's nonce, which COM_CHANGE_USER authenticates against again.
    scramble: [u8; 20],
    peer: SocketAddr,
    user: String,
    host: String,
    /// The matched account's host pattern.
    account_host: String,
    database: Option<String>,
    /// The TLS session, when the connection switched to TLS.
    tls: Option<TlsSession>,
    /// The sequence id the OK after authentication gets.
    seq: u8,
    /// The collation id the client's handshake named.
    collation: u8,
    /// The protocol compression the client asked for (zstd if it named both).
    compression: Option<Algorithm>,
}

/// 1040, sent before the handshake: without protocol 4.1's SQL state (see
/// `put_err_before_handshake`).
fn too_many_connections() -> Vec<u8> {
    let error = errors::too_many_connections();
    let mut w = PacketWriter::new(0);
    w.packet(|out| put_err_before_handshake(out, error.code, &error.message));
    w.take()
}

fn error_packet(seq: u8, error: &SqlError) -> Vec<u8> {
    let mut w = PacketWriter::new(seq);
    w.packet(|out| put_err(out, error.code, error.sqlstate, error.message.as_bytes()));
    w.take()
}

/// Writes `bytes` to the client at once; None if the connection failed.
fn send<W: Write + ?Sized>(write: &mut W, bytes: &[u8]) -> Option<()> {
    write.write_all(bytes).and_then(|()| write.flush()).ok()
}

fn send_error<W: Write + ?Sized>(write: &mut W, seq: u8, error: &SqlError) {
    let _ = send(write, &error_packet(seq, error));
}

/// The host an account must match: loopback peers are `localhost`, as MySQL treats them.
fn client_hosts(ip: IpAddr) -> (String, Vec<String>) {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 @ IpAddr::V4(_) => v4,
    };
    if ip.is_loopback() {
        let hosts = ["localhost", "127.0.0.1", "::1", "%"];
        (
            "localhost".into(),
            hosts.iter().map(|h| (*h).to_owned()).collect(),
        )
    } else {
        (ip.to_string(), vec![ip.to_string(), "%".into()])
    }
}

/// The account `user` logs in as from one of `hosts` (most specific first). A failed read
/// of the accounts (a storage error) is an error, never an unknown user: that would answer
/// "Access denied" and count a failed login against a client that did nothing wrong.
fn lookup_user(
    shared: &Shared,
    user: &str,
    hosts: &[String],
) -> Result<Option<UserRecord>, SqlError> {
    for host in hosts {
        if let Some(record) = shared.backend.lookup_user(user, host)? {
            return Ok(Some(record));
        }
    }
    Ok(None)
}

/// The connection phase, with the switch to TLS when the client asks for it; `None` when it
/// failed (the client was told why, if it can be).
fn connect(
    mut tcp: std::net::TcpStream,
    peer: SocketAddr,
    shared: &Arc<Shared>,
) -> Option<(Conn, Login)> {
    let scramble = auth::new_scramble();
    let connection_id = shared.next_connection_id();
    let tls_config = shared.options.tls.clone();
    let offered = if tls_config.is_some() {
        capability::SERVER | capability::SSL
    } else {
        capability::SERVER
    };
    let mut w = PacketWriter::new(0);
    w.packet(|out| {
        put_handshake(
            out,
            &shared.options.server_version,
            connection_id,
            &scramble,
            status::AUTOCOMMIT,
            NATIVE_PASSWORD,
            offered,
        );
    });
    send(&mut tcp, &w.take())?;

    // Unbuffered: after an SSLRequest the next bytes are TLS's, not ours to read ahead.
    let first = read_packet(&mut tcp, 1, MAX_HANDSHAKE_PACKET).ok()?;
    let (mut conn, packet, tls) = if is_ssl_request(&first.payload) {
        let Some(config) = tls_config else {
            let seq = first.last_seq.wrapping_add(1);
            send_error(&mut tcp, seq, &errors::bad_handshake());
            return None;
        };
        let (stream, session) = Stream::accept_tls(tcp, config).ok()?;
        let mut conn = BufReader::with_capacity(READ_BUFFER, stream);
        let next = first.last_seq.wrapping_add(1);
        let packet = read_packet(&mut conn, next, MAX_HANDSHAKE_PACKET).ok()?;
        (conn, packet, Some(session))
    } else {
        let conn = BufReader::with_capacity(READ_BUFFER, Stream::plain(tcp));
        (conn, first, None)
    };
    let seq = packet.last_seq.wrapping_add(1);
    if tls.is_none() && shared.options.require_secure_transport {
        send_error(conn.get_mut(), seq, &errors::insecure_transport());
        return None;
    }
    let response = match parse_handshake_response(&packet.payload) {
        Ok(response) => response,
        Err(
            HandshakeError::Malformed(_)
            | HandshakeError::OldProtocol
            | HandshakeError::TlsRequested,
        ) => {
            send_error(conn.get_mut(), seq, &errors::bad_handshake());
            return None;
        }
    };
    let secure = tls.is_some();
    let claim = Claim {
        peer,
        scramble: &scramble,
        secure,
    };
    let (host, account_host, seq) = check_account(&mut conn, shared, &claim, &response, seq)?;
    let compression = compression_of(&response);
    let login = Login {
        capabilities: response.capabilities,
        connection_id,
        scramble,
        peer,
        user: response.user,
        host,
        account_host,
        database: response.database,
        tls,
        seq,
        collation: response.collation,
        compression,
    };
    Some((conn, login))
}

/// The compression a handshake response asks for.
fn compression_of(response: &HandshakeResponse) -> Option<Algorithm> {
    if let Some(level) = response.zstd_level {
        Some(Algorithm::Zstd(level))
    } else if response.capabilities & capability::COMPRESS != 0 {
        Some(Algorithm::Zlib)
    } else {
        None
    }
}

/// What authentication knows about the connection besides the client's response.
struct Claim<'a> {
    peer: SocketAddr,
    scramble: &'a [u8; 20],
    /// TLS is in use: a clear password may be sent.
    secure: bool,
}

/// Checks the account `response` claims, switching the client to the account's plugin if it
/// started with another; on success returns the client's host, the matched account's host and
/// the sequence id of the packet that follows. On failure the client got an ERR packet.
///
/// An unknown user is checked against a decoy account (a random password's hash under the
/// plugin the client chose), so it takes the same steps and the same hashing work as a known
/// one with a wrong password; the answer is the same 1045. Before the check, a host with
/// repeated failures waits (`throttle`, MySQL's connection_control).
fn check_account(
    conn: &mut Conn,
    shared: &Arc<Shared>,
    claim: &Claim<'_>,
    response: &HandshakeResponse,
    seq: u8,
) -> Option<(String, String, u8)> {
    let scramble = claim.scramble;
    let mut seq = seq;
    let (host, hosts) = client_hosts(claim.peer.ip());
    let wait = shared.throttle.admit(claim.peer.ip());
    if !wait.is_zero() {
        // A delay past connect_timeout ends the attempt there, as the watching task would.
        let limit = shared.options.connect_timeout;
        std::thread::sleep(wait.min(limit));
        if wait >= limit {
            return None;
        }
    }
    let record = lookup_user(shared, &response.user, &hosts)
        .map_err(|error| send_error(conn.get_mut(), seq, &error))
        .ok()?;
    let exists = record.is_some();
    // An unknown user goes through the same steps as a known one with a wrong password.
    let plugin = record.as_ref().map_or_else(
        || {
            if response.plugin == CACHING_SHA2 {
                CACHING_SHA2.to_owned()
            } else {
                NATIVE_PASSWORD.to_owned()
            }
        },
        |r| r.plugin.clone(),
    );
    let client_plugin = if response.plugin.is_empty() {
        NATIVE_PASSWORD
    } else {
        response.plugin.as_str()
    };
    let mut auth_response = response.auth_response.clone();
    if client_plugin != plugin {
        if response.capabilities & capability::PLUGIN_AUTH == 0 {
            let error = SqlError {
                code: 1251,
                sqlstate: "08004",
                message: "Client does not support authentication protocol requested by server; \
                          consider upgrading MySQL client"
                    .into(),
            };
            send_error(conn.get_mut(), seq, &error);
            return None;
        }
        let mut w = PacketWriter::new(seq);
        w.packet(|out| put_auth_switch(out, &plugin, scramble));
        send(conn.get_mut(), &w.take())?;
        let Packet { payload, last_seq } =
            stream::read_packet(conn, w.seq(), MAX_HANDSHAKE_PACKET).ok()?;
        seq = last_seq.wrapping_add(1);
        auth_response = payload;
    }
    let switched = client_plugin != plugin;
    let record = record.unwrap_or_else(|| shared.decoy(&response.user, &plugin));
    let verified = if plugin == CACHING_SHA2 && !auth_response.is_empty() {
        let (verified, next) = caching_sha2(
            conn,
            shared,
            claim,
            &record,
            exists,
            &auth_response,
            switched,
            seq,
        )?;
        seq = next;
        verified
    } else {
        auth::verify(
            &plugin,
            &record.authentication_string,
            scramble,
            &auth_response,
        )
    };
    let verified = verified && exists;
    // A locked account's refusal (3118, 3955) replaces the answer, and counts as a failure.
    let refusal = if exists {
        shared
            .backend
            .check_login(&response.user, &record.host, &host, verified)
            .err()
    } else {
        None
    };
    if verified && refusal.is_none() {
        shared.throttle.succeeded(claim.peer.ip());
    } else {
        shared.throttle.failed(claim.peer.ip());
    }
    if let Some(error) = refusal {
        send_error(conn.get_mut(), seq, &error);
        return None;
    }
    if !verified {
        let error = errors::access_denied(&response.user, &host, !auth_response.is_empty());
        send_error(conn.get_mut(), seq, &error);
        return None;
    }
    Some((host, record.host, seq))
}

/// `caching_sha2_password` after the client's scramble response: the fast path for a cached
/// account, otherwise full authentication (see `sha2_full`). Returns whether the password was
/// right and the sequence id of the next packet; the OK or ERR is the caller's to send.
#[allow(clippy::too_many_arguments)]
fn caching_sha2(
    conn: &mut Conn,
    shared: &Arc<Shared>,
    claim: &Claim<'_>,
    record: &UserRecord,
    exists: bool,
    response: &[u8],
    switched: bool,
    seq: u8,
) -> Option<(bool, u8)> {
    let scramble = claim.scramble;
    let r = record;
    let fast = exists
        && shared
            .sha2_cache
            .secret(&r.user, &r.host, &r.authentication_string)
            .is_some_and(|secret| {
                auth::verify_sha2_scramble(&secret, scramble, response)
                // PyMySQL scrambles with every byte of the switch request's data, NUL included.
                || (switched && {
                    let mut with_nul = scramble.to_vec();
                    with_nul.push(0);
                    auth::verify_sha2_scramble(&secret, &with_nul, response)
                })
            });
    // AuthMoreData: fast_auth_success (the OK follows) or perform_full_authentication.
    let mut w = PacketWriter::new(seq);
    w.packet(|out| out.extend_from_slice(&[0x01, if fast { 0x03 } else { 0x04 }]));
    send(conn.get_mut(), &w.take())?;
    if fast {
        return Some((true, w.seq()));
    }
    let packet = stream::read_packet(conn, w.seq(), MAX_HANDSHAKE_PACKET).ok()?;
    let mut seq = packet.last_seq.wrapping_add(1);
    let mut payload = packet.payload;
    let password = if claim.secure {
        // The clear password, NUL-terminated.
        if payload.last() == Some(&0) {
            payload.pop();
        }
        Some(payload)
    } else if payload == [0x02] {
        // A request for the public key; the password comes back encrypted with it.
        match &shared.options.rsa_keys {
            Some(keys) => {
                let mut w = PacketWriter::new(seq);
                w.packet(|out| {
                    out.push(0x01);
                    out.extend_from_slice(keys.public_pem().as_bytes());
                });
                send(conn.get_mut(), &w.take())?;
                let sealed = stream::read_packet(conn, w.seq(), MAX_HANDSHAKE_PACKET).ok()?;
                seq = sealed.last_seq.wrapping_add(1);
                keys.decrypt_password(&sealed.payload, scramble)
            }
            None => None,
        }
    } else {
        // A clear password on a plain connection: refused, whatever it is.
        None
    };
    let verified = password
        .as_ref()
        .is_some_and(|password| auth::sha2_password_matches(&r.authentication_string, password));
    if let (true, true, Some(password)) = (verified, exists, password) {
        shared.sha2_cache.insert(
            &r.user,
            &r.host,
            &r.authentication_string,
            shale_sql::sha2_double_hash(&password),
        );
    }
    Some((verified, seq))
}

/// A command packet read, counted in `Bytes_received`; None (after answering a packet too large
/// or out of order with its error) ends the connection.
fn counted_packet(
    packet: Result<Packet, ReadError>,
    output: &mut Output,
    shared: &Shared,
) -> Option<Packet> {
    if let Ok(p) = &packet {
        // The payload and its 4-byte header (one header per 16 MiB piece).
        let headers = 4 * (p.payload.len() / 0xFF_FFFF + 1);
        shared.count(Counter::BytesReceived, (p.payload.len() + headers) as u64);
    }
    let (seq, error) = match packet {
        Ok(packet) => return Some(packet),
        Err(ReadError::TooLarge { .. }) => (1, errors::packet_too_large()),
        Err(ReadError::OutOfOrder { got, .. }) => (got.wrapping_add(1), errors::out_of_order()),
        Err(ReadError::Closed | ReadError::Io(_)) => return None,
    };
    output.writer.set_seq(seq);
    output.err(&error);
    output.flush_reply();
    None
}

/// The command phase: the session is opened, then each command packet is read and answered
/// until COM_QUIT, an error, a KILL, `wait_timeout` or the server's shutdown ends it.
fn command_loop(conn: Conn, shared: &Arc<Shared>, login: Login, control: &Arc<ConnControl>) {
    let mut output = Output::new(conn, shared.clone(), shared.max_allowed_packet());
    output.writer.set_seq(login.seq);
    let identity = Identity {
        connection_id: login.connection_id,
        user: login.user,
        host: login.host,
        account_host: login.account_host,
        tls: login.tls.clone(),
        control: Arc::clone(control),
        collation: login.collation,
        compression: login.compression,
    };
    let opened = CommandHandler::open(
        shared,
        identity,
        login.capabilities,
        login.database.as_deref(),
        &mut output,
    );
    let Some(mut handler) = opened.filter(|_| output.flush_reply()) else {
        output.flush_reply();
        output.close();
        return;
    };
    // The login's OK went plain; the client compresses from its first command on.
    if let Some(algorithm) = login.compression {
        output.conn().get_mut().start_compression(algorithm);
    }
    let interactive = login.capabilities & capability::INTERACTIVE != 0;
    let mut timeouts = CachedTimeouts::default();
    loop {
        let (wait, stalled) = timeouts.get(shared, interactive, control);
        if output.conn().get_mut().set_timeouts(wait, stalled).is_err() {
            break;
        }
        output.conn().get_mut().new_command();
        let packet = output.read_packet(0);
        let Some(packet) = counted_packet(packet, &mut output, shared) else {
            break;
        };
        let seq = packet.last_seq.wrapping_add(1);
        match packet.payload.first() {
            Some(&command::QUIT) => break,
            Some(&command::CHANGE_USER) => {
                // Authenticate again; a fresh session replaces the old one (whose transaction
                // rolls back and whose prepared statements go when it is dropped).
                let Ok(claim) = parse_change_user(&packet.payload[1..], login.capabilities) else {
                    output.writer.set_seq(seq);
                    output.err(&errors::malformed("COM_CHANGE_USER"));
                    output.flush_reply();
                    break;
                };
                let context = Claim {
                    peer: login.peer,
                    scramble: &login.scramble,
                    secure: login.tls.is_some(),
                };
                let checked = check_account(output.conn(), shared, &context, &claim, seq);
                let Some((host, account_host, seq)) = checked else {
                    break;
                };
                drop(handler);
                output.writer.set_seq(seq);
                let identity = Identity {
                    connection_id: login.connection_id,
                    user: claim.user,
                    host,
                    account_host,
                    tls: login.tls.clone(),
                    control: Arc::clone(control),
                    collation: claim.collation,
                    compression: login.compression,
                };
                let database = claim.database.as_deref();
                let opened = CommandHandler::open(
                    shared,
                    identity,
                    login.capabilities,
                    database,
                    &mut output,
                );
                let Some(next) = opened.filter(|_| output.flush_reply()) else {
                    output.flush_reply();
                    break;
                };
                handler = next;
            }
            _ => {
                output.writer.set_seq(seq);
                let close = handler.run(&packet.payload, &mut output);
                if !output.flush_reply() || close {
                    break;
                }
            }
        }
    }
    output.close();
}

/// The connection's idle and write timeouts, re-read from the server's settings only when a
/// global variable or the session's own `wait_timeout` changed: every command would otherwise
/// take the global variables' mutex, which all connections share.
#[derive(Default)]
struct CachedTimeouts {
    /// The globals version and the session's own wait_timeout they were read under.
    read_under: Option<(u64, u64)>,
    wait: Duration,
    stalled: Duration,
}

impl CachedTimeouts {
    fn get(
        &mut self,
        shared: &Shared,
        interactive: bool,
        control: &ConnControl,
    ) -> (Duration, Duration) {
        let now = (
            shared.backend.globals_version(),
            control.wait_timeout_secs.load(Ordering::Relaxed),
        );
        // A backend without versions (0) is read every time.
        if self.read_under != Some(now) || now.0 == 0 {
            // SET [GLOBAL] wait_timeout applies from the next idle wait. A reply the client
            // takes none of for net_write_timeout ends the connection (MySQL's rule: per
            // stalled write, so a slow reader that keeps reading is served); the statement
            // then stops at its next row, releasing its locks.
            self.wait = shared.wait_timeout(interactive, control);
            self.stalled = shared.net_write_timeout();
            self.read_under = Some(now);
        }
        (self.wait, self.stalled)
    }
}
