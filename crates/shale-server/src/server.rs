//! The listener: accepts TCP connections, gives each a thread (and a task that watches it,
//! conn.rs), and shuts down in order: stop accepting, let running commands finish within the
//! grace period, then drop what is left.
//!
//! Invariants:
//! 1. [`Server::run`] returns only after every connection task has ended or been dropped after
//!    the grace period; a connection's thread still inside a command then ends after that
//!    command (its socket is shut down, so it cannot block on the client).
//! 2. One connection's failure (bad packets, a panicking statement) never stops the listener or
//!    another connection.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use shale_sql::{Counter, StatusCounters};

use crate::backend::Backend;
use crate::command::ConnControl;
use crate::sha2_full::{RsaKeyPair, Sha2Cache};
use crate::throttle::LoginThrottle;
use crate::Error;

/// How the server behaves; [`Default`] gives MySQL's defaults where MySQL has one.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Largest command packet accepted (MySQL's `max_allowed_packet`, 64 MiB).
    pub max_allowed_packet: usize,
    /// The version string of the handshake.
    pub server_version: String,
    /// Time a client has to complete the handshake (`connect_timeout`).
    pub connect_timeout: Duration,
    /// An idle connection is closed after this long without a command (`wait_timeout`).
    pub wait_timeout: Duration,
    /// The same for clients that set CLIENT_INTERACTIVE, such as the mariadb command-line
    /// client (`interactive_timeout`).
    pub interactive_timeout: Duration,
    /// Connections beyond this are refused with error 1040 (`max_connections`).
    pub max_connections: usize,
    /// A reply the client does not read for this long closes the connection, so a client
    /// that never reads its result set cannot hold a session (and its locks) for ever
    /// (`net_write_timeout`, 60 s; `SET GLOBAL net_write_timeout` changes it live).
    pub net_write_timeout: Duration,
    /// How long shutdown waits for running commands.
    pub shutdown_timeout: Duration,
    /// TLS for clients that ask (CLIENT_SSL is offered only with it).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The key pair for `caching_sha2_password` full authentication on plain connections;
    /// without one such logins need TLS.
    pub rsa_keys: Option<Arc<RsaKeyPair>>,
    /// Refuse connections that are not TLS (error 3159), MySQL's `require_secure_transport`.
    pub require_secure_transport: bool,
    /// Failed logins from one host before its attempts are delayed (MySQL's
    /// `connection_control_failed_connections_threshold`, 3; 0 turns delays off).
    pub connection_control_failed_connections_threshold: u32,
    /// The first delay (`connection_control_min_connection_delay`, 1000 ms).
    pub connection_control_min_connection_delay: Duration,
    /// The longest delay (`connection_control_max_connection_delay`).
    pub connection_control_max_connection_delay: Duration,
}

/// The SQL layer's version (`8.0.36-Shale`, also `@@version`): clients pick features by the
/// major version, and 8.0 is the MySQL version the SQL layer follows (MyRocks's base);
/// "-Shale" names us. Not "5.5.5-10.x-MariaDB": that prefix makes MariaDB clients expect
/// MariaDB-only behaviour.
pub const SERVER_VERSION: &str = shale_sql::SERVER_VERSION;

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            max_allowed_packet: 64 << 20,
            server_version: SERVER_VERSION.to_owned(),
            connect_timeout: Duration::from_secs(10),
            wait_timeout: Duration::from_secs(8 * 3600),
            interactive_timeout: Duration::from_secs(8 * 3600),
            max_connections: 151,
            net_write_timeout: Duration::from_secs(60),
            shutdown_timeout: Duration::from_secs(10),
            tls: None,
            rsa_keys: None,
            require_secure_transport: false,
            connection_control_failed_connections_threshold: 3,
            connection_control_min_connection_delay: Duration::from_secs(1),
            connection_control_max_connection_delay: Duration::from_millis(2_147_483_647),
        }
    }
}

/// What every connection shares.
pub(crate) struct Shared {
    pub backend: Arc<dyn Backend>,
    pub options: ServerOptions,
    pub started: Instant,
    /// Connections open now.
    pub connections: AtomicUsize,
    /// Accounts that may take `caching_sha2_password`'s fast path.
    pub sha2_cache: Sha2Cache,
    /// The backend's status counters (Connections, Bytes_sent, ...).
    counters: Option<Arc<StatusCounters>>,
    /// Delays logins from hosts with repeated failures.
    pub throttle: LoginThrottle,
    /// What an unknown user is checked against: a random password's hash per plugin.
    decoys: [Vec<u8>; 2],
    next_id: AtomicU32,
}

impl Shared {
    /// A decoy account for an unknown `user` (conn.rs `check_account`); no password matches
    /// it but a random one nobody knows, and the caller refuses it even then.
    pub fn decoy(&self, user: &str, plugin: &str) -> shale_sql::UserRecord {
        let sha2 = plugin == crate::auth::CACHING_SHA2;
        shale_sql::UserRecord {
            user: user.to_owned(),
            host: "%".into(),
            plugin: plugin.to_owned(),
            authentication_string: self.decoys[usize::from(sha2)].clone(),
        }
    }

    pub fn next_connection_id(&self) -> u32 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Adds to a status counter (SHOW GLOBAL STATUS), when the backend keeps them.
    pub fn count(&self, counter: Counter, n: u64) {
        if let Some(counters) = &self.counters {
            counters.add(counter, n);
        }
    }

    /// `max_connections` now: `SET GLOBAL` changes it live.
    pub fn max_connections(&self) -> usize {
        self.backend
            .global_number("max_connections")
            .map_or(self.options.max_connections, |n| n as usize)
    }

    /// `max_allowed_packet` now (`SET GLOBAL` changes it for connections that log in
    /// afterwards; each connection keeps the value it started with, as in MySQL).
    pub fn max_allowed_packet(&self) -> usize {
        self.backend
            .global_number("max_allowed_packet")
            .map_or(self.options.max_allowed_packet, |n| {
                usize::try_from(n).unwrap_or(usize::MAX)
            })
    }

    /// `net_write_timeout` now: `SET GLOBAL` changes it live.
    pub fn net_write_timeout(&self) -> Duration {
        self.backend
            .global_number("net_write_timeout")
            .map_or(self.options.net_write_timeout, Duration::from_secs)
    }

    /// How long a connection may idle: the session's own `wait_timeout` if it set one, else
    /// the global `wait_timeout` (`interactive_timeout` for interactive clients) now.
    pub fn wait_timeout(&self, interactive: bool, control: &ConnControl) -> Duration {
        let own = control.wait_timeout_secs.load(Ordering::Relaxed);
        if own > 0 {
            return Duration::from_secs(own);
        }
        let (name, default) = if interactive {
            ("interactive_timeout", self.options.interactive_timeout)
        } else {
            ("wait_timeout", self.options.wait_timeout)
        };
        self.backend
            .global_number(name)
            .map_or(default, Duration::from_secs)
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("options", &self.options)
            .field("connections", &self.connections)
            .finish_non_exhaustive()
    }
}

/// How a shutdown went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Connections still busy when the grace period ended (dropped).
    pub abandoned: usize,
}

/// A bound MySQL-protocol listener.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
}

impl Server {
    /// Listens on `addr` (port 0: any free port; see [`Server::local_addr`]).
    pub async fn bind(
        addr: SocketAddr,
        backend: Arc<dyn Backend>,
        options: ServerOptions,
    ) -> Result<Server, Error> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        let counters = backend.status_counters();
        let throttle = LoginThrottle::new(
            options.connection_control_failed_connections_threshold,
            options.connection_control_min_connection_delay,
            options.connection_control_max_connection_delay,
        );
        Ok(Server {
            listener,
            shared: Arc::new(Shared {
                counters,
                backend,
                options,
                started: Instant::now(),
                connections: AtomicUsize::new(0),
                sha2_cache: Sha2Cache::default(),
                throttle,
                decoys: {
                    let secret = crate::auth::new_scramble();
                    let secret = String::from_utf8_lossy(&secret).into_owned();
                    [
                        crate::auth::hash_password(crate::auth::NATIVE_PASSWORD, &secret),
                        crate::auth::hash_password(crate::auth::CACHING_SHA2, &secret),
                    ]
                },
                next_id: AtomicU32::new(1),
            }),
        })
    }

    /// The address actually listened on.
    pub fn local_addr(&self) -> Result<SocketAddr, Error> {
        self.listener.local_addr().map_err(Error::LocalAddr)
    }

    /// Serves until `shutdown` completes, then stops as the module doc describes.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> ShutdownReport {
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut tasks = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        let shared = self.shared.clone();
                        let stop = stop_rx.clone();
                        tasks.spawn(crate::conn::serve(stream, peer, shared, stop));
                    }
                    Err(error) => {
                        // Out of descriptors and the like: wait a little rather than spin.
                        eprintln!("shale-server: accept failed: {error}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            }
        }
        drop(self.listener);
        let _ = stop_tx.send(true);
        let deadline = tokio::time::sleep(self.shared.options.shutdown_timeout);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                () = &mut deadline => break,
                next = tasks.join_next() => if next.is_none() { break },
            }
        }
        let abandoned = tasks.len();
        tasks.shutdown().await;
        ShutdownReport { abandoned }
    }
}
