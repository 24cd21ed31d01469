//! `shale serve --metrics-port N`: the GLOBAL status variables over HTTP (`GET /metrics` on
//! 127.0.0.1) in Prometheus's text exposition format, named as `mysqld_exporter` names them, so
//! a MySQL dashboard can be pointed at it.
//!
//! Deliberately tiny: one request per connection (`Connection: close`), requests up to
//! [`MAX_REQUEST`] bytes read within [`REQUEST_TIMEOUT`]; anything but `GET /metrics` gets 404
//! (405 for another method on it). No web framework: this is the whole of the HTTP it needs.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Weak};
use std::time::Duration;

use shale_sql::Instance;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::output::Failure;

const MAX_REQUEST: usize = 8 * 1024;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Status variables that are levels, not counters.
const GAUGES: [&str; 2] = ["Threads_connected", "Threads_running"];

/// Listens on 127.0.0.1:`port` (0: any free port), prints where, and serves scrapes on a
/// task of its own until it is aborted.
pub async fn start(port: u16, instance: Weak<Instance>) -> Result<JoinHandle<()>, Failure> {
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .await
        .map_err(|e| {
            Failure::error(format!(
                "cannot listen on 127.0.0.1:{port} for metrics: {e}"
            ))
        })?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::error(e.to_string()))?;
    println!("shale serve: metrics on http://{addr}/metrics");
    Ok(tokio::spawn(serve(listener, instance)))
}

/// Serves scrapes until the task is dropped. Holds the instance weakly: a scrape after the
/// instance closed gets 503, and the instance's close never waits for this task.
async fn serve(listener: TcpListener, instance: Weak<Instance>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let instance = instance.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(REQUEST_TIMEOUT, answer(stream, &instance)).await;
        });
    }
}

async fn answer(mut stream: TcpStream, instance: &Weak<Instance>) -> std::io::Result<()> {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 || request.len() + n > MAX_REQUEST {
            return Ok(());
        }
        request.extend_from_slice(&buf[..n]);
    }
    let line = request.split(|&b| b == b'\r').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split(' ');
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let (status, body) = match (method, path) {
        ("GET", "/metrics") => match instance.upgrade() {
            Some(instance) => ("200 OK", exposition(&instance)),
            None => ("503 Service Unavailable", "shutting down\n".to_owned()),
        },
        (_, "/metrics") => ("405 Method Not Allowed", "GET only\n".to_owned()),
        _ => ("404 Not Found", "try /metrics\n".to_owned()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

/// The text exposition of every GLOBAL status variable: `Com_x` as
/// `mysql_global_status_commands_total{command="x"}`, the rest as
/// `mysql_global_status_<name in lower case>`, plus `mysql_up` and the live settings
/// `mysql_global_variables_max_connections` and `..._wait_timeout`.
pub fn exposition(instance: &Arc<Instance>) -> String {
    let mut out = String::new();
    out.push_str(
        "# HELP mysql_up Whether the server answers.\n# TYPE mysql_up gauge\nmysql_up 1\n",
    );
    let status = instance.global_status();
    out.push_str(
        "# HELP mysql_global_status_commands_total Statements run, by Com_ counter.\n\
         # TYPE mysql_global_status_commands_total counter\n",
    );
    for (name, value) in &status {
        if let Some(command) = name.strip_prefix("Com_") {
            let _ = writeln!(
                out,
                "mysql_global_status_commands_total{{command=\"{command}\"}} {value}"
            );
        }
    }
    for (name, value) in &status {
        if name.starts_with("Com_") || value.parse::<f64>().is_err() {
            continue;
        }
        let metric = format!("mysql_global_status_{}", name.to_ascii_lowercase());
        let kind = if GAUGES.contains(&name.as_str()) {
            "gauge"
        } else {
            "untyped"
        };
        let _ = writeln!(
            out,
            "# HELP {metric} Generic metric from SHOW GLOBAL STATUS.\n# TYPE {metric} {kind}\n\
             {metric} {value}"
        );
    }
    for name in ["max_connections", "wait_timeout"] {
        if let Some(value) = instance.global_number(name) {
            let metric = format!("mysql_global_variables_{name}");
            let _ = writeln!(
                out,
                "# HELP {metric} Generic gauge metric from SHOW GLOBAL VARIABLES.\n\
                 # TYPE {metric} gauge\n{metric} {value}"
            );
        }
    }
    out
}
