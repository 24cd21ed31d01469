//! One client connection's I/O task: the connection phase (HandshakeV10, the client's
//! response, an optional AuthSwitchRequest, then OK or ERR), then the command loop, which
//! reads command packets and writes the replies the session thread streams back. COM_QUIT and
//! COM_CHANGE_USER (another round of authentication) are handled here; every other command
//! goes to the session thread. An idle connection closes after `wait_timeout`.
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

use shale_sql::{SqlError, UserRecord};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use crate::auth::{self, CACHING_SHA2, NATIVE_PASSWORD};
use crate::codec::{read_packet, Packet, PacketWriter, ReadError};
use crate::command::{run_session, Job};
use crate::handshake::{
    parse_change_user, parse_handshake_response, put_auth_switch, put_handshake, HandshakeError,
    HandshakeResponse,
};
use crate::protocol::{capability, command, errors, put_err, status};
use crate::results::{Output, Reply, CHANNEL_CHUNKS};
use crate::server::Shared;

/// Largest packet accepted before authentication: a handshake response is small.
const MAX_HANDSHAKE_PACKET: usize = 64 * 1024;

type Reader = BufReader<OwnedReadHalf>;

/// Serves one connection to its end; never panics, errors only end this connection.
pub(crate) async fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let open = shared.connections.fetch_add(1, Ordering::Relaxed) + 1;
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::with_capacity(16 * 1024, read);
    if open > shared.options.max_connections {
        let _ = send_error(&mut write, 0, &errors::too_many_connections()).await;
    } else {
        let timeout = shared.options.connect_timeout;
        let authenticated = tokio::time::timeout(
            timeout,
            authenticate(&mut reader, &mut write, peer, &shared),
        )
        .await;
        if let Ok(Some(login)) = authenticated {
            command_loop(reader, write, &shared, login, stop).await;
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
    database: Option<String>,
    /// The sequence id the OK after authentication gets.
    seq: u8,
}

async fn send_error(write: &mut OwnedWriteHalf, seq: u8, error: &SqlError) -> std::io::Result<()> {
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

/// The connection phase; `None` when it failed (the client was told why, if it can be).
async fn authenticate(
    reader: &mut Reader,
    write: &mut OwnedWriteHalf,
    peer: SocketAddr,
    shared: &Arc<Shared>,
) -> Option<Login> {
    let scramble = auth::new_scramble();
    let connection_id = shared.next_connection_id();
    let mut w = PacketWriter::new(0);
    w.packet(|out| {
        put_handshake(
            out,
            &shared.options.server_version,
            connection_id,
            &scramble,
            status::AUTOCOMMIT,
            NATIVE_PASSWORD,
        );
    });
    write.write_all(&w.take()).await.ok()?;

    let packet = read_packet(reader, 1, MAX_HANDSHAKE_PACKET).await.ok()?;
    let seq = packet.last_seq.wrapping_add(1);
    let response = match parse_handshake_response(&packet.payload) {
        Ok(response) => response,
        Err(
            HandshakeError::Malformed(_)
            | HandshakeError::OldProtocol
            | HandshakeError::TlsRequested,
        ) => {
            let _ = send_error(write, seq, &errors::bad_handshake()).await;
            return None;
        }
    };
    let (host, seq) = check_account(reader, write, peer, shared, &scramble, &response, seq).await?;
    Some(Login {
        capabilities: response.capabilities,
        connection_id,
        scramble,
        peer,
        user: response.user,
        host,
        database: response.database,
        seq,
    })
}

/// Checks the account `response` claims against `scramble`, switching the client to the
/// account's plugin if it started with another; on success returns the account's host and the
/// sequence id of the packet that follows. On failure the client got an ERR packet.
async fn check_account(
    reader: &mut Reader,
    write: &mut OwnedWriteHalf,
    peer: SocketAddr,
    shared: &Arc<Shared>,
    scramble: &[u8; 20],
    response: &HandshakeResponse,
    seq: u8,
) -> Option<(String, u8)> {
    let mut seq = seq;
    let (host, hosts) = client_hosts(peer.ip());
    let record = lookup_user(shared, &response.user, hosts).await;
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
    let verified = record.as_ref().is_some_and(|r| {
        let stored = &r.authentication_string;
        auth::verify(&plugin, stored, scramble, &auth_response)
            // PyMySQL scrambles with every byte of the switch request's data, NUL included.
            || (switched && plugin == CACHING_SHA2 && {
                let mut with_nul = scramble.to_vec();
                with_nul.push(0);
                auth::verify(&plugin, stored, &with_nul, &auth_response)
            })
    });
    if !verified {
        let error = errors::access_denied(&response.user, &host, !auth_response.is_empty());
        let _ = send_error(write, seq, &error).await;
        return None;
    }
    if plugin == CACHING_SHA2 && !auth_response.is_empty() {
        // AuthMoreData fast_auth_success: the OK follows.
        let mut w = PacketWriter::new(seq);
        w.packet(|out| out.extend_from_slice(&[0x01, 0x03]));
        write.write_all(&w.take()).await.ok()?;
        seq = w.seq();
    }
    Some((host, seq))
}

/// Writes replies from the session thread until the job's last one; false ends the connection.
async fn pump(replies: &mut mpsc::Receiver<Reply>, write: &mut OwnedWriteHalf) -> bool {
    while let Some(reply) = replies.recv().await {
        match reply {
            Reply::Partial(bytes) => {
                if write.write_all(&bytes).await.is_err() {
                    return false;
                }
            }
            Reply::Done { bytes, close } => {
                if !bytes.is_empty() && write.write_all(&bytes).await.is_err() {
                    return false;
                }
                return !close;
            }
        }
    }
    false
}

async fn command_loop(
    mut reader: Reader,
    mut write: OwnedWriteHalf,
    shared: &Arc<Shared>,
    login: Login,
    mut stop: watch::Receiver<bool>,
) {
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
    let connect = Job::Connect {
        connection_id: login.connection_id,
        user: login.user,
        host: login.host,
        database: login.database,
        seq: login.seq,
    };
    if job_tx.send(connect).is_ok() && pump(&mut replies, &mut write).await {
        let max = shared.options.max_allowed_packet;
        loop {
            let wait = shared.options.wait_timeout;
            let packet = tokio::select! {
                packet = tokio::time::timeout(wait, read_packet(&mut reader, 0, max)) => {
                    let Ok(packet) = packet else { break };
                    packet
                }
                _ = stop.wait_for(|stop| *stop) => break,
            };
            let packet = match packet {
                Ok(packet) => packet,
                Err(ReadError::TooLarge { .. }) => {
                    let _ = send_error(&mut write, 1, &errors::packet_too_large()).await;
                    break;
                }
                Err(ReadError::OutOfOrder { got, .. }) => {
                    let seq = got.wrapping_add(1);
                    let _ = send_error(&mut write, seq, &errors::out_of_order()).await;
                    break;
                }
                Err(ReadError::Closed | ReadError::Io(_)) => break,
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
                let checked = check_account(
                    &mut reader,
                    &mut write,
                    login.peer,
                    shared,
                    &login.scramble,
                    &claim,
                    seq,
                )
                .await;
                let Some((host, seq)) = checked else { break };
                let job = Job::Connect {
                    connection_id: login.connection_id,
                    user: claim.user,
                    host,
                    database: claim.database,
                    seq,
                };
                if job_tx.send(job).is_err() || !pump(&mut replies, &mut write).await {
                    break;
                }
                continue;
            }
            let job = Job::Command {
                seq: packet.last_seq.wrapping_add(1),
                payload: packet.payload,
            };
            if job_tx.send(job).is_err() || !pump(&mut replies, &mut write).await {
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
