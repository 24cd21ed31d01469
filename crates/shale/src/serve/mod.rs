//! `shale serve`: the MySQL-compatible server over a data directory.
//!
//! Start-up: open (creating if missing) the Instance in `--datadir`, create `root@localhost`
//! on first start (random password printed once and kept in `<datadir>/root-password`, mode
//! 0600; or an empty one with `--initialize-insecure`), the TLS certificates and RSA keys
//! (`certs`), write `<datadir>/shale.pid`, listen, and print the address and the client
//! command to connect.
//!
//! Shutdown on SIGTERM or SIGINT: stop accepting, let running commands finish within the grace
//! period, close the Instance, remove the PID file.

mod certs;
pub mod config;
mod datadir;
mod metrics;
mod open_files;

use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use shale_engine::Durability;
use shale_server::{Backend, Server, ServerOptions};
use shale_sql::{Instance, InstanceOptions, IsolationLevel};

use crate::output::Failure;

/// Flags of `shale serve`.
// Each bool is an independent on/off command-line flag, as mysqld's are; no state machine hides
// among them.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Read options from a my.cnf-style FILE ([shale] and [mysqld] sections, the same names
    /// as these flags); the command line overrides it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The data directory (created and initialized on first start).
    #[arg(long, value_name = "DIR", default_value = "shale-data")]
    pub datadir: PathBuf,
    /// The address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// The TCP port; 0 picks a free one (the one chosen is printed).
    #[arg(long, value_name = "PORT", default_value_t = 3306)]
    pub port: u16,
    /// On first start, create root@localhost with an empty password instead of a random one.
    #[arg(long)]
    pub initialize_insecure: bool,
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = 64 << 20,
        help = "Largest packet a client may send, in bytes (MySQL's max_allowed_packet)"
    )]
    pub max_allowed_packet: usize,
    /// The isolation level sessions start with: REPEATABLE-READ (snapshot isolation, write
    /// conflicts fail with 1213) or READ-COMMITTED.
    #[arg(long, value_name = "LEVEL", default_value = "REPEATABLE-READ", value_parser = parse_isolation)]
    pub transaction_isolation: IsolationLevel,
    /// Seconds that shutdown waits for running commands.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub shutdown_timeout: u64,
    /// Bytes of uncompressed blocks the engine caches (`MyRocks`' `rocksdb_block_cache_size`,
    /// `InnoDB`'s buffer pool).
    #[arg(long, value_name = "BYTES", default_value_t = 512 << 20)]
    pub block_cache_size: usize,
    /// Read table files with `O_DIRECT`, bypassing the page cache (`MyRocks`'
    /// `rocksdb_use_direct_reads`): size `--block-cache-size` for the working set. Fixed at
    /// start; the server refuses to start where the file system refuses `O_DIRECT`.
    #[arg(long)]
    pub use_direct_reads: bool,
    /// Table files the engine keeps open (`MyRocks`' `rocksdb_max_open_files`): -2, the
    /// default, is half the process's open-file limit (`ulimit -n`); -1 keeps every table
    /// open and pinned (fastest reads; one descriptor per table file); else at least 16.
    /// Fixed at start; shown as `shale_max_open_files`.
    #[arg(long, value_name = "N", default_value_t = open_files::AUTO, allow_hyphen_values = true,
          value_parser = open_files::parse)]
    pub max_open_files: i64,
    /// Write the table files of flushes and compactions with `O_DIRECT` (`MyRocks`'
    /// `rocksdb_use_direct_io_for_flush_and_compaction`). Fixed at start.
    #[arg(long)]
    pub use_direct_io_for_flush_and_compaction: bool,
    /// The server's TLS certificate (PEM; the chain, server first). Default: the data
    /// directory's server-cert.pem, generated with a CA (ca.pem) on first start.
    #[arg(long, value_name = "FILE", requires = "ssl_key")]
    pub ssl_cert: Option<PathBuf>,
    /// The private key of --ssl-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "ssl_cert")]
    pub ssl_key: Option<PathBuf>,
    /// A CA (PEM) that client certificates must chain to, when a client presents one.
    #[arg(long, value_name = "FILE")]
    pub ssl_ca: Option<PathBuf>,
    /// Connections beyond this many are refused with error 1040 (MySQL's `max_connections`).
    #[arg(long, value_name = "N", default_value_t = 151)]
    pub max_connections: usize,
    /// Seconds an idle connection is kept (MySQL's `wait_timeout`).
    #[arg(long, value_name = "SECONDS", default_value_t = 28800)]
    pub wait_timeout: u64,
    /// Seconds an idle interactive client (the mariadb shell) is kept (`interactive_timeout`).
    #[arg(long, value_name = "SECONDS", default_value_t = 28800)]
    pub interactive_timeout: u64,
    /// Seconds a client has to complete the handshake and log in (`connect_timeout`).
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub connect_timeout: u64,
    /// Refuse connections that do not use TLS (error 3159), as MySQL's
    /// `require_secure_transport=ON`.
    #[arg(long)]
    pub require_secure_transport: bool,
    /// Failed logins from one host before its next attempts are delayed (MySQL's
    /// `connection_control_failed_connections_threshold`; 0 turns the delays off).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub connection_control_failed_connections_threshold: u32,
    /// The first delay, in milliseconds (`connection_control_min_connection_delay`); each
    /// further failure adds a second.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub connection_control_min_connection_delay: u64,
    /// The longest delay, in milliseconds (`connection_control_max_connection_delay`).
    #[arg(long, value_name = "MS", default_value_t = 2_147_483_647)]
    pub connection_control_max_connection_delay: u64,
    /// When a COMMIT is acknowledged (`InnoDB`'s `innodb_flush_log_at_trx_commit`): `sync`
    /// (=1, after the log is fsynced), `flush` (=2, after it is written to the OS; fsync
    /// about once a second) or `buffered` (=0, written and fsynced about once a second).
    #[arg(long, value_name = "MODE", default_value = "sync", value_parser = parse_durability)]
    pub durability: Durability,
    /// Bytes per second flushes and compactions may write (`MyRocks`'
    /// `rocksdb_rate_limiter_bytes_per_sec`; 0, the default, does not limit). Also
    /// `SET GLOBAL shale_rate_limiter_bytes_per_sec`.
    #[arg(long, value_name = "BYTES")]
    pub rate_limiter_bytes_per_sec: Option<u64>,
    /// Bytes a memtable holds before it is flushed (default 64 MiB). Also `SET GLOBAL
    /// shale_write_buffer_size`.
    #[arg(long, value_name = "BYTES")]
    pub write_buffer_size: Option<u64>,
    /// L0 files at which writes are slowed down (default 20).
    #[arg(long, value_name = "N")]
    pub level0_slowdown_writes_trigger: Option<u64>,
    /// L0 files at which writes stop until compaction catches up (default 36).
    #[arg(long, value_name = "N")]
    pub level0_stop_writes_trigger: Option<u64>,
    /// Pending compaction bytes at which writes are slowed down (default 64 GiB; 0: never).
    #[arg(long, value_name = "BYTES")]
    pub soft_pending_compaction_bytes_limit: Option<u64>,
    /// Pending compaction bytes at which writes stop (default 256 GiB; 0: never).
    #[arg(long, value_name = "BYTES")]
    pub hard_pending_compaction_bytes_limit: Option<u64>,
    /// Background jobs: one flush thread and N-1 compaction threads (2 to 64, default 2;
    /// `MyRocks`' `rocksdb_max_background_jobs`). Also `SET GLOBAL shale_max_background_jobs`.
    #[arg(long, value_name = "N")]
    pub max_background_jobs: Option<u64>,
    /// Re-estimate a table's index statistics in the background once a tenth of its rows
    /// changed: ON (the default) or OFF (`innodb_stats_auto_recalc`). Also `SET GLOBAL
    /// shale_stats_auto_recalc`.
    #[arg(long, value_name = "ON|OFF", value_parser = parse_on_off)]
    pub stats_auto_recalc: Option<bool>,
    /// Serve the GLOBAL status counters at http://127.0.0.1:PORT/metrics in Prometheus's
    /// format (`mysqld_exporter`'s metric names); 0 picks a free port (printed).
    #[arg(long, value_name = "PORT")]
    pub metrics_port: Option<u16>,
    /// Append every statement clients send to `<datadir>/general.log` (MySQL's `general_log`).
    #[arg(long)]
    pub general_log: bool,
    /// Append statements slower than `--long-query-time` to `<datadir>/slow.log`, with their
    /// plan (MySQL's `slow_query_log`).
    #[arg(long)]
    pub slow_query_log: bool,
    /// Seconds after which a statement is slow (`Slow_queries`, the slow log); sessions may
    /// `SET long_query_time` for themselves.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub long_query_time: f64,
    /// The only directory LOAD DATA INFILE may read server files from (MySQL's
    /// `secure_file_priv`); without it, LOAD DATA of a server file is refused (1290).
    #[arg(long, value_name = "DIR")]
    pub secure_file_priv: Option<PathBuf>,
    /// Allow LOAD DATA LOCAL INFILE (the global `local_infile`; OFF by default, as MySQL 8;
    /// `SET GLOBAL local_infile = 1` also turns it on).
    #[arg(long)]
    pub local_infile: bool,
}

fn parse_durability(text: &str) -> Result<Durability, String> {
    Durability::from_name(&text.to_ascii_lowercase())
        .ok_or_else(|| "expected sync, flush or buffered".into())
}

fn parse_on_off(text: &str) -> Result<bool, String> {
    match text.to_ascii_uppercase().as_str() {
        "ON" | "1" | "TRUE" => Ok(true),
        "OFF" | "0" | "FALSE" => Ok(false),
        _ => Err("expected ON or OFF".into()),
    }
}

fn parse_isolation(text: &str) -> Result<IsolationLevel, String> {
    match text.to_ascii_uppercase().replace('_', "-").as_str() {
        "REPEATABLE-READ" => Ok(IsolationLevel::RepeatableRead),
        "READ-COMMITTED" => Ok(IsolationLevel::ReadCommitted),
        _ => Err("expected REPEATABLE-READ or READ-COMMITTED".into()),
    }
}

fn sql_failure(what: &str, error: &shale_sql::SqlError) -> Failure {
    Failure::error(format!("{what}: {error}"))
}

pub fn run(args: &ServeArgs) -> Result<(), Failure> {
    std::fs::create_dir_all(&args.datadir)
        .map_err(|e| Failure::error(format!("cannot create {}: {e}", args.datadir.display())))?;
    let mut options = InstanceOptions {
        transaction_isolation: args.transaction_isolation,
        ..InstanceOptions::default()
    };
    options.store.engine.block_cache_capacity = args.block_cache_size;
    options.store.engine.durability = args.durability;
    options.store.engine.use_direct_reads = args.use_direct_reads;
    options.store.engine.max_open_files = open_files::engine_limit(args.max_open_files);
    options.store.engine.use_direct_io_for_flush_and_compaction =
        args.use_direct_io_for_flush_and_compaction;
    let instance = Instance::open(&args.datadir, options)
        .map_err(|e| sql_failure(&format!("opening {}", args.datadir.display()), &e))?;
    apply_engine_options(&instance, args)?;
    if let Some(on) = args.stats_auto_recalc {
        instance.set_stats_auto_recalc(on);
    }
    instance
        .open_query_logs(args.general_log, args.slow_query_log)
        .map_err(|e| sql_failure("opening the query logs", &e))?;
    instance.set_secure_file_priv(args.secure_file_priv.clone());
    instance.set_local_infile(args.local_infile);
    let generated = datadir::ensure_root(&instance, &args.datadir, args.initialize_insecure)?;
    if let Some(password) = &generated {
        // Before listening, so that a failed bind does not hide it.
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "Created root@localhost with password: {password}\n\
             (shown once; also stored in {}, readable only by you)",
            args.datadir.join(datadir::ROOT_PASSWORD_FILE).display()
        )?;
        out.flush()?;
    }
    let tls_files = if let (Some(cert), Some(key)) = (&args.ssl_cert, &args.ssl_key) {
        certs::TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: args.ssl_ca.clone(),
        }
    } else {
        certs::ensure_certificates(&args.datadir)?;
        certs::TlsFiles {
            cert: args.datadir.join(certs::SERVER_CERT),
            key: args.datadir.join(certs::SERVER_KEY),
            client_ca: args.ssl_ca.clone(),
        }
    };
    let tls = certs::tls_config(&tls_files)?;
    let rsa_keys = certs::ensure_rsa_keys(&args.datadir)?;
    let pid_file = datadir::PidFile::write(&args.datadir)?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("shale-serve")
        .build()
        .map_err(|e| Failure::error(format!("cannot start the runtime: {e}")))?;
    let options = server_options(args, tls, rsa_keys);
    publish_live_settings(&instance, args);
    let backend: Arc<dyn Backend> = Arc::new(instance.clone());
    let weak_instance = Arc::downgrade(&instance);
    let report = runtime.block_on(async {
        let metrics = match args.metrics_port {
            Some(port) => Some(metrics::start(port, weak_instance).await?),
            None => None,
        };
        let server = Server::bind(SocketAddr::new(args.bind, args.port), backend, options)
            .await
            .map_err(|e| Failure::error(e.to_string()))?;
        let addr = server
            .local_addr()
            .map_err(|e| Failure::error(e.to_string()))?;
        announce(args, &tls_files, addr)?;
        let report = server.run(shutdown_signal()).await;
        if let Some(task) = metrics {
            task.abort();
        }
        Ok::<_, Failure>(report)
    });
    // The runtime's blocking threads may still hold a session until they finish.
    runtime.shutdown_timeout(Duration::from_secs(args.shutdown_timeout));
    let report = report?;
    if report.abandoned > 0 {
        eprintln!(
            "shale serve: {} connection(s) were still busy after {}s and were dropped",
            report.abandoned, args.shutdown_timeout
        );
    }
    instance
        .close()
        .map_err(|e| sql_failure("closing the data directory", &e))?;
    drop(pid_file);
    eprintln!("shale serve: stopped");
    Ok(())
}

/// The engine options `serve` takes beside the block cache and durability (each also a live
/// SQL variable, so SET PERSIST writes them as these options). The keyspace ones are applied
/// to the open engine: an existing database reopens with the keyspace options its OPTIONS file
/// holds, so only a live change after the open makes the flags (and SET PERSIST) take effect.
fn apply_engine_options(instance: &Instance, args: &ServeArgs) -> Result<(), Failure> {
    let flags = [
        ("rate_limit_bytes_per_sec", args.rate_limiter_bytes_per_sec),
        ("write_buffer_size", args.write_buffer_size),
        (
            "level0_slowdown_writes_trigger",
            args.level0_slowdown_writes_trigger,
        ),
        (
            "level0_stop_writes_trigger",
            args.level0_stop_writes_trigger,
        ),
        (
            "soft_pending_compaction_bytes_limit",
            args.soft_pending_compaction_bytes_limit,
        ),
        (
            "hard_pending_compaction_bytes_limit",
            args.hard_pending_compaction_bytes_limit,
        ),
        ("max_background_jobs", args.max_background_jobs),
    ];
    let values: Vec<(&str, String)> = flags
        .iter()
        .filter_map(|(name, value)| value.map(|v| (*name, v.to_string())))
        .collect();
    let changes: Vec<(&str, &str)> = values.iter().map(|(n, v)| (*n, v.as_str())).collect();
    instance
        .set_engine_options(&changes)
        .map_err(|e| sql_failure("applying the engine options", &e))
}

/// The server's options from the command line (TLS and RSA keys already loaded).
fn server_options(
    args: &ServeArgs,
    tls: Arc<rustls::ServerConfig>,
    rsa_keys: shale_server::RsaKeyPair,
) -> ServerOptions {
    ServerOptions {
        max_allowed_packet: args.max_allowed_packet,
        shutdown_timeout: Duration::from_secs(args.shutdown_timeout),
        tls: Some(tls),
        rsa_keys: Some(Arc::new(rsa_keys)),
        require_secure_transport: args.require_secure_transport,
        max_connections: args.max_connections,
        wait_timeout: Duration::from_secs(args.wait_timeout),
        interactive_timeout: Duration::from_secs(args.interactive_timeout),
        connect_timeout: Duration::from_secs(args.connect_timeout),
        connection_control_failed_connections_threshold: args
            .connection_control_failed_connections_threshold,
        connection_control_min_connection_delay: Duration::from_millis(
            args.connection_control_min_connection_delay,
        ),
        connection_control_max_connection_delay: Duration::from_millis(
            args.connection_control_max_connection_delay,
        ),
        ..ServerOptions::default()
    }
}

/// The live settings' startup values, where `SET GLOBAL` changes them and `@@global.x`
/// shows them (the server reads them at each use).
fn publish_live_settings(instance: &Instance, args: &ServeArgs) {
    let started_with = [
        ("max_connections", args.max_connections as u64),
        ("max_allowed_packet", args.max_allowed_packet as u64),
        ("wait_timeout", args.wait_timeout),
        ("interactive_timeout", args.interactive_timeout),
        ("connect_timeout", args.connect_timeout),
    ];
    for (name, value) in started_with {
        instance.set_global(name, shale_sql::Value::UInt(value));
    }
    // The engine's live options (durability, block cache, ...) are published by
    // `Instance::open` from what the engine runs with.
    instance.set_global(
        "long_query_time",
        shale_sql::Value::Double(args.long_query_time),
    );
    for (name, on) in [
        ("general_log", args.general_log),
        ("slow_query_log", args.slow_query_log),
        ("shale_use_direct_reads", args.use_direct_reads),
        (
            "shale_use_direct_io_for_flush_and_compaction",
            args.use_direct_io_for_flush_and_compaction,
        ),
    ] {
        instance.set_global(name, shale_sql::Value::Int(i64::from(on)));
    }
}

/// Tells the person where the server is and how to connect.
fn announce(args: &ServeArgs, tls: &certs::TlsFiles, addr: SocketAddr) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    let ca = if args.ssl_cert.is_none() {
        format!(
            " (clients verify it with --ssl-ca={})",
            args.datadir.join(certs::CA_CERT).display()
        )
    } else {
        String::new()
    };
    writeln!(out, "TLS certificate: {}{ca}", tls.cert.display())?;
    writeln!(
        out,
        "shale serve: listening on {addr} (datadir {}, pid {})",
        args.datadir.display(),
        std::process::id()
    )?;
    let host = if addr.ip().is_unspecified() {
        "127.0.0.1".to_owned()
    } else {
        addr.ip().to_string()
    };
    writeln!(
        out,
        "Connect with: mariadb -h{host} -P{} -uroot -p",
        addr.port()
    )?;
    out.flush()?;
    Ok(())
}

/// Completes on SIGTERM or SIGINT (Ctrl-C).
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    eprintln!("shale serve: shutting down");
}
