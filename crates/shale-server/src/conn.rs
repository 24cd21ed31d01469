//! One client connection's I/O task: the connection phase (HandshakeV10, an optional
//! SSLRequest and the switch to TLS, the client's response, an optional AuthSwitchRequest,
//! `caching_sha2_password`'s extra round trips, then OK or ERR), then the command loop, which
//! reads command packets and writes the replies the session thread streams back. COM_QUIT and
//! COM_CHANGE_USER (another round of authentication) are handled here; every other command
//! goes to the session thread. An idle connection closes after `wait_timeout`
//! (`interactive_timeout` for clients that set CLIENT_INTERACTIVE).
//!
//! Invariants:
//! 1. No command is read before authentication succeeded, and the failure message is the same
//!    whether or not the user exists (error 1045).
//! 2. A malformed or oversized packet gets an ERR packet (when the stream is still in sync)
//!    and closes this connection only.
//! 3. The session thread is joined before the task ends, so when every connection task is
//!    done no session is left (the Instance can be closed).

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use shale_sql::{Counter, SqlError, UserRecord};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use crate::auth::{self, CACHING_SHA2, NATIVE_PASSWORD};
use crate::codec::{read_packet, Packet, PacketWriter, ReadError};
use crate::command::{run_session, ConnControl, Job};
use crate::handshake::{
    is_ssl_request, parse_change_user, parse_handshake_response, put_auth_switch, put_handshake,
    HandshakeError, HandshakeResponse,
};
use crate::protocol::{capability, command, errors, put_err, put_err_before_handshake, status};
use crate::results::{LocalFile, Output, Reply, CHANNEL_CHUNKS};
use crate::server::Shared;
use crate::tls::TlsSession;

/// Largest packet accepted before authentication: a handshake response is small.
const MAX_HANDSHAKE_PACKET: usize = 64 * 1024;

/// The connection's byte streams, plain TCP or TLS alike.
type Reader = BufReader<Box<dyn AsyncRead + Send + Unpin>>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

const READ_BUFFER: usize = 16 * 1024;

/// Serves one connection to its end; never panics, errors only end this connection.
pub(crate) async fn serve(
    mut stream: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let open = shared.connections.fetch_add(1, Ordering::Relaxed) + 1;
    shared.count(Counter::Connections, 1);
    if open > shared.max_connections() {
        let error = errors::too_many_connections();
        let mut w = PacketWriter::new(0);
        w.packet(|out| put_err_before_handshake(out, error.code, &error.message));
        let _ = stream.write_all(&w.take()).await;
    } else {
        let timeout = shared.options.connect_timeout;
        let connected = tokio::time::timeout(timeout, connect(stream, peer, &shared)).await;
        if let Ok(Some((reader, writer, login))) = connected {
            command_loop(reader, writer, &shared, login, stop).await;
        } else {
            shared.count(Counter::AbortedConnects, 1);
        }
    }
    shared.connections.fetch_sub(1, Ordering::Relaxed);
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
}

async fn send_error<W: AsyncWrite + Unpin + ?Sized>(
    write: &mut W,
    seq: u8,
    error: &SqlError,
) -> std::io::Result<()> {
    let mut w = PacketWriter::new(seq);
    w.packet(|out| put_err(out, error.code, error.sqlstate, &error.message));
    write.write_all(&w.take()).await
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

async fn lookup_user(shared: &Arc<Shared>, user: &str, hosts: Vec<String>) -> Option<UserRecord> {
    let backend = shared.backend.clone();
    let user = user.to_owned();
    // The lookup reads the store: keep it off the reactor.
    let found = tokio::task::spawn_blocking(move || {
        for host in &hosts {
            if let Ok(Some(record)) = backend.lookup_user(&user, host) {
                return Some(record);
            }
        }
        None
    })
    .await;
    found.ok().flatten()
}

/// The connection phase, with the switch to TLS when the client asks for it; `None` when it
/// failed (the client was told why, if it can be).
async fn connect(
    mut stream: TcpStream,
    peer: SocketAddr,
    shared: &Arc<Shared>,
) -> Option<(Reader, Writer, Login)> {
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
    stream.write_all(&w.take()).await.ok()?;

    // Unbuffered: after an SSLRequest the next bytes are TLS's, not ours to read ahead.
    let first = read_packet(&mut stream, 1, MAX_HANDSHAKE_PACKET)
        .await
        .ok()?;
    let (mut reader, mut writer, packet, tls): (Reader, Writer, Packet, Option<TlsSession>) =
        if is_ssl_request(&first.payload) {
            let Some(config) = tls_config else {
                let seq = first.last_seq.wrapping_add(1);
                let _ = send_error(&mut stream, seq, &errors::bad_handshake()).await;
                return None;
            };
            let tls_stream = tokio_rustls::TlsAcceptor::from(config)
                .accept(stream)
                .await
                .ok()?;
            let session = TlsSession::of(tls_stream.get_ref().1);
            let (read, write) = tokio::io::split(tls_stream);
            let mut reader: Reader = BufReader::with_capacity(READ_BUFFER, Box::new(read));
            let next = first.last_seq.wrapping_add(1);
            let packet = read_packet(&mut reader, next, MAX_HANDSHAKE_PACKET)
                .await
                .ok()?;
            (reader, Box::new(write), packet, Some(session))
        } else {
            let (read, write) = stream.into_split();
            let reader: Reader = BufReader::with_capacity(READ_BUFFER, Box::new(read));
            (reader, Box::new(write), first, None)
        };
    let seq = packet.last_seq.wrapping_add(1);
    if tls.is_none() && shared.options.require_secure_transport {
        let _ = send_error(&mut writer, seq, &errors::insecure_transport()).await;
        return None;
    }
    let response = match parse_handshake_response(&packet.payload) {
        Ok(response) => response,
        Err(
            HandshakeError::Malformed(_)
            | HandshakeError::OldProtocol
            | HandshakeError::TlsRequested,
        ) => {
            let _ = send_error(&mut writer, seq, &errors::bad_handshake()).await;
            return None;
        }
    };
    let secure = tls.is_some();
    let claim = Claim {
        peer,
        scramble: &scramble,
        secure,
    };
    let (host, account_host, seq) =
        check_account(&mut reader, &mut writer, shared, &claim, &response, seq).await?;
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
    };
    Some((reader, writer, login))
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
async fn check_account(
    reader: &mut Reader,
    write: &mut Writer,
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
        tokio::time::sleep(wait).await;
    }
    let record = lookup_user(shared, &response.user, hosts).await;
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
            let _ = send_error(write, seq, &error).await;
            return None;
        }
        let mut w = PacketWriter::new(seq);
        w.packet(|out| put_auth_switch(out, &plugin, scramble));
        write.write_all(&w.take()).await.ok()?;
        let Packet { payload, last_seq } = read_packet(reader, w.seq(), MAX_HANDSHAKE_PACKET)
            .await
            .ok()?;
        seq = last_seq.wrapping_add(1);
        auth_response = payload;
    }
    let switched = client_plugin != plugin;
    let record = record.unwrap_or_else(|| shared.decoy(&response.user, &plugin));
    let verified = if plugin == CACHING_SHA2 && !auth_response.is_empty() {
        let (verified, next) = caching_sha2(
            reader,
            write,
            shared,
            claim,
            &record,
            exists,
            &auth_response,
            switched,
            seq,
        )
        .await?;
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
    if verified {
        shared.throttle.succeeded(claim.peer.ip());
    } else {
        shared.throttle.failed(claim.peer.ip());
    }
    if !verified {
        let error = errors::access_denied(&response.user, &host, !auth_response.is_empty());
        let _ = send_error(write, seq, &error).await;
        return None;
    }
    Some((host, record.host, seq))
}

/// `caching_sha2_password` after the client's scramble response: the fast path for a cached
/// account, otherwise full authentication (see `sha2_full`). Returns whether the password was
/// right and the sequence id of the next packet; the OK or ERR is the caller's to send.
#[allow(clippy::too_many_arguments)]
async fn caching_sha2(
    reader: &mut Reader,
    write: &mut Writer,
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
    write.write_all(&w.take()).await.ok()?;
    if fast {
        return Some((true, w.seq()));
    }
    let packet = read_packet(reader, w.seq(), MAX_HANDSHAKE_PACKET)
        .await
        .ok()?;
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
                write.write_all(&w.take()).await.ok()?;
                let sealed = read_packet(reader, w.seq(), MAX_HANDSHAKE_PACKET)
                    .await
                    .ok()?;
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

/// Writes replies from the session thread until the job's last one; false ends the connection.
/// A LOAD DATA LOCAL request in between reads the client's file from `reader` (packets of at
/// most `max_allowed_packet` bytes each, up to an empty one) and hands it to the session thread.
/// A write the client does not take within `net_write_timeout` ends the connection (the
/// session thread then sees its replies refused and stops the statement).
async fn pump(
    replies: &mut mpsc::Receiver<Reply>,
    write: &mut Writer,
    reader: &mut Reader,
    shared: &Shared,
) -> bool {
    let max = shared.options.max_allowed_packet;
    while let Some(reply) = replies.recv().await {
        match reply {
            Reply::Partial(bytes) => {
                shared.count(Counter::BytesSent, bytes.len() as u64);
                if !write_in_time(write, &bytes, shared).await {
                    return false;
                }
            }
            Reply::Done { bytes, close } => {
                shared.count(Counter::BytesSent, bytes.len() as u64);
                if !bytes.is_empty() && !write_in_time(write, &bytes, shared).await {
                    return false;
                }
                return !close;
            }
            Reply::LocalInfile {
                bytes,
                next_seq,
                file,
            } => {
                let received = if write_in_time(write, &bytes, shared).await {
                    read_local_file(reader, next_seq, max).await
                } else {
                    None
                };
                let ok = received.is_some();
                // The session thread waits for this; it sees `None` as a broken connection.
                let _ = file.send(received);
                if !ok {
                    return false;
                }
            }
        }
    }
    false
}

/// Writes `bytes`; false if the write failed or the client took none of them for
/// `net_write_timeout` (MySQL's rule: the timeout is per stalled write, so a slow reader that
/// keeps reading is served).
async fn write_in_time(write: &mut Writer, bytes: &[u8], shared: &Shared) -> bool {
    let timeout = shared.net_write_timeout();
    let mut rest = bytes;
    while !rest.is_empty() {
        match tokio::time::timeout(timeout, write.write(rest)).await {
            Ok(Ok(n)) if n > 0 => rest = &rest[n..],
            _ => return false,
        }
    }
    matches!(
        tokio::time::timeout(timeout, write.flush()).await,
        Ok(Ok(()))
    )
}

/// A command packet read, counted in `Bytes_received`; None (after answering a packet too large
/// or out of order with its error) ends the connection.
async fn counted_packet(
    packet: Result<Packet, ReadError>,
    write: &mut Writer,
    shared: &Shared,
) -> Option<Packet> {
    if let Ok(p) = &packet {
        // The payload and its 4-byte header (one header per 16 MiB piece).
        let headers = 4 * (p.payload.len() / 0xFF_FFFF + 1);
        shared.count(Counter::BytesReceived, (p.payload.len() + headers) as u64);
    }
    match packet {
        Ok(packet) => Some(packet),
        Err(ReadError::TooLarge { .. }) => {
            let _ = send_error(write, 1, &errors::packet_too_large()).await;
            None
        }
        Err(ReadError::OutOfOrder { got, .. }) => {
            let _ = send_error(write, got.wrapping_add(1), &errors::out_of_order()).await;
            None
        }
        Err(ReadError::Closed | ReadError::Io(_)) => None,
    }
}

/// The packets of a LOCAL INFILE transfer, from sequence id `seq` to the empty one.
async fn read_local_file(reader: &mut Reader, mut seq: u8, max: usize) -> Option<LocalFile> {
    let mut data = Vec::new();
    loop {
        let packet = read_packet(reader, seq, max).await.ok()?;
        seq = packet.last_seq.wrapping_add(1);
        if packet.payload.is_empty() {
            return Some(LocalFile {
                data,
                next_seq: seq,
            });
        }
        data.extend_from_slice(&packet.payload);
    }
}

async fn command_loop(
    mut reader: Reader,
    mut write: Writer,
    shared: &Arc<Shared>,
    login: Login,
    mut stop: watch::Receiver<bool>,
) {
    let max = shared.options.max_allowed_packet;
    let (job_tx, job_rx) = std::sync::mpsc::sync_channel::<Job>(1);
    let (reply_tx, mut replies) = mpsc::channel(CHANNEL_CHUNKS);
    let thread_shared = shared.clone();
    let capabilities = login.capabilities;
    let spawned = std::thread::Builder::new()
        .name("shale-session".into())
        .spawn(move || run_session(&thread_shared, capabilities, &job_rx, Output::new(reply_tx)));
    let Ok(thread) = spawned else {
        let _ = send_error(&mut write, login.seq, &errors::too_many_connections()).await;
        return;
    };
    let control = Arc::new(ConnControl::default());
    let connect = Job::Connect {
        connection_id: login.connection_id,
        user: login.user,
        host: login.host,
        account_host: login.account_host,
        database: login.database,
        tls: login.tls.clone(),
        control: Arc::clone(&control),
        seq: login.seq,
    };
    if job_tx.send(connect).is_ok() && pump(&mut replies, &mut write, &mut reader, shared).await {
        let interactive = login.capabilities & capability::INTERACTIVE != 0;
        loop {
            // Read each time: SET [GLOBAL] wait_timeout applies from the next idle wait.
            let wait = shared.wait_timeout(interactive, &control);
            let packet = tokio::select! {
                packet = tokio::time::timeout(wait, read_packet(&mut reader, 0, max)) => {
                    let Ok(packet) = packet else { break };
                    packet
                }
                () = control.killed.notified() => break,
                _ = stop.wait_for(|stop| *stop) => break,
            };
            let Some(packet) = counted_packet(packet, &mut write, shared).await else {
                break;
            };
            if packet.payload.first() == Some(&command::QUIT) {
                break;
            }
            if packet.payload.first() == Some(&command::CHANGE_USER) {
                // Authenticate again on this side; the session thread then starts a fresh
                // session (dropping the old one's transaction and prepared statements).
                let seq = packet.last_seq.wrapping_add(1);
                let Ok(claim) = parse_change_user(&packet.payload[1..], login.capabilities) else {
                    let _ =
                        send_error(&mut write, seq, &errors::malformed("COM_CHANGE_USER")).await;
                    break;
                };
                let context = Claim {
                    peer: login.peer,
                    scramble: &login.scramble,
                    secure: login.tls.is_some(),
                };
                let checked =
                    check_account(&mut reader, &mut write, shared, &context, &claim, seq).await;
                let Some((host, account_host, seq)) = checked else {
                    break;
                };
                let job = Job::Connect {
                    connection_id: login.connection_id,
                    user: claim.user,
                    host,
                    account_host,
                    database: claim.database,
                    tls: login.tls.clone(),
                    control: Arc::clone(&control),
                    seq,
                };
                if job_tx.send(job).is_err()
                    || !pump(&mut replies, &mut write, &mut reader, shared).await
                {
                    break;
                }
                continue;
            }
            let job = Job::Command {
                seq: packet.last_seq.wrapping_add(1),
                payload: packet.payload,
            };
            if job_tx.send(job).is_err()
                || !pump(&mut replies, &mut write, &mut reader, shared).await
            {
                break;
            }
        }
    }
    let _ = write.shutdown().await;
    drop(job_tx);
    drop(replies);
    // The thread ends once it sees the closed channel (after a running command, if any).
    let _ = tokio::task::spawn_blocking(move || thread.join()).await;
}
