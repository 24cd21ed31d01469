//! TLS and `caching_sha2_password` full authentication with real clients (mariadb, PyMySQL)
//! and byte by byte: the `SSLRequest` switch, certificate verification against the CA,
//! `require_secure_transport`, the clear password over TLS, the RSA public-key exchange on
//! plain connections, and the fast path only for accounts proven since the server started.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use shale_server::{rsa_encrypt_password, sha2_scramble_response, ServerOptions};
use support::{have, rsa_keys, start_with, test_tls, text};

fn scratch(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("shale-server-tls-{name}"))
}

/// A server with TLS (certificates under a scratch directory named `name`) and RSA keys;
/// returns its address and the CA file.
fn start_tls(name: &str, require_secure_transport: bool) -> (SocketAddr, PathBuf) {
    let (tls, ca) = test_tls(&scratch(name));
    let addr = start_with(ServerOptions {
        connect_timeout: Duration::from_secs(5),
        tls: Some(tls),
        rsa_keys: Some(rsa_keys()),
        require_secure_transport,
        ..ServerOptions::default()
    });
    (addr, ca)
}

fn mariadb(addr: SocketAddr, user: &str, password: &str, ssl: &[&str], sql: &str) -> Output {
    Command::new("mariadb")
        .args([
            "--no-defaults",
            "--protocol=TCP",
            "-h127.0.0.1",
            &format!("-P{}", addr.port()),
            &format!("-u{user}"),
            &format!("--password={password}"),
            "--batch",
        ])
        .args(ssl)
        .args(["-e", sql])
        .output()
        .expect("run mariadb")
}

#[test]
fn mariadb_verifies_the_certificate_and_sends_the_password_over_tls() {
    if !have("mariadb", "--version") {
        return;
    }
    let (addr, ca) = start_tls("mariadb", false);
    let ca_arg = format!("--ssl-ca={}", ca.display());
    let verify = ["--ssl", ca_arg.as_str(), "--ssl-verify-server-cert"];
    // First login of a caching_sha2 account: full authentication, clear password over TLS.
    let out = mariadb(addr, "sha", "pw2", &verify, "select 1; \\s");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("1\n1\n"), "{stdout}");
    let ssl_line = stdout.lines().find(|l| l.starts_with("SSL:")).unwrap();
    assert!(ssl_line.contains("Cipher in use is TLS_"), "{ssl_line}");
    let out = mariadb(addr, "sha", "wrong", &verify, "select 1");
    assert!(
        text(&out.stderr).contains("ERROR 1045 (28000)"),
        "{}",
        text(&out.stderr)
    );
    // A native account over TLS, and a plain connection still allowed.
    let out = mariadb(addr, "root", "pw", &verify, "select 1");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = mariadb(addr, "root", "pw", &["--ssl=0"], "\\s");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("SSL:\t\t\tNot in use"),
        "{}",
        text(&out.stdout)
    );
    // A CA that did not sign the server's certificate fails verification.
    let (_, other_ca) = test_tls(&scratch("mariadb-other"));
    let other = format!("--ssl-ca={}", other_ca.display());
    let out = mariadb(
        addr,
        "root",
        "pw",
        &["--ssl", other.as_str(), "--ssl-verify-server-cert"],
        "select 1",
    );
    assert!(!out.status.success(), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("2026"), "{}", text(&out.stderr));
}

#[test]
fn require_secure_transport_refuses_plain_connections_with_3159() {
    if !have("mariadb", "--version") {
        return;
    }
    let (addr, ca) = start_tls("require", true);
    let out = mariadb(addr, "root", "pw", &["--ssl=0"], "select 1");
    assert!(
        text(&out.stderr).contains("ERROR 3159 (HY000)")
            && text(&out.stderr).contains("--require_secure_transport=ON"),
        "{}",
        text(&out.stderr)
    );
    let ca_arg = format!("--ssl-ca={}", ca.display());
    let out = mariadb(addr, "root", "pw", &["--ssl", ca_arg.as_str()], "select 1");
    assert!(out.status.success(), "{}", text(&out.stderr));
}

const PYMYSQL_SCRIPT: &str = r#"
import os, pymysql
port = int(os.environ["PORT"])
ssl = {"ca": os.environ["CA"]} if os.environ.get("CA") else None
def connect(password):
    return pymysql.connect(host="127.0.0.1", port=port, user="sha", password=password, ssl=ssl)
try:
    connect("wrong")
    raise SystemExit("wrong password accepted")
except pymysql.err.OperationalError as e:
    assert e.args[0] == 1045, e.args
c = connect("pw2")
cur = c.cursor()
cur.execute("select 1")
assert cur.fetchall() == ((1,),)
if ssl:
    assert c._sock.version().startswith("TLS"), c._sock.version()
c.close()
# The account is now cached: the fast path.
connect("pw2").close()
print("ok")
"#;

fn pymysql(addr: SocketAddr, ca: Option<&Path>) -> Output {
    let mut command = Command::new("/usr/bin/python3");
    command
        .arg("-c")
        .arg(PYMYSQL_SCRIPT)
        .env("PORT", addr.port().to_string());
    if let Some(ca) = ca {
        command.env("CA", ca);
    }
    command.output().expect("run python3")
}

fn have_pymysql_with_rsa() -> bool {
    let ok = Command::new("/usr/bin/python3")
        .args(["-c", "import pymysql, cryptography"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        support::skip_outside_ci(
            "PyMySQL with cryptography is not installed (apt-get install python3-pymysql \
             python3-cryptography)",
        );
    }
    ok
}

#[test]
fn pymysql_full_authentication_over_tls_and_with_rsa() {
    if !have_pymysql_with_rsa() {
        return;
    }
    // Separate servers: each starts with an empty cache, so each first login is a full one.
    let (addr, ca) = start_tls("pymysql-tls", false);
    let out = pymysql(addr, Some(&ca));
    assert_eq!(
        text(&out.stdout),
        "ok\n",
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let (addr, _) = start_tls("pymysql-rsa", false);
    let out = pymysql(addr, None);
    assert_eq!(
        text(&out.stdout),
        "ok\n",
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// A byte-level client for the connection phase.
struct Raw {
    stream: TcpStream,
    scramble: Vec<u8>,
    capabilities: u32,
}

const SSL: u32 = 1 << 11;
const CLIENT: u32 = (1 << 9) | (1 << 15) | (1 << 19); // PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH

impl Raw {
    fn connect(addr: SocketAddr) -> Raw {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut raw = Raw {
            stream,
            scramble: Vec::new(),
            capabilities: 0,
        };
        let (_, hello) = raw.read();
        let version_end = hello.iter().position(|&b| b == 0).unwrap();
        let caps_at = version_end + 1 + 4 + 9;
        let low = u16::from_le_bytes([hello[caps_at], hello[caps_at + 1]]);
        let high = u16::from_le_bytes([hello[caps_at + 5], hello[caps_at + 6]]);
        raw.capabilities = u32::from(low) | u32::from(high) << 16;
        raw.scramble = hello[version_end + 5..version_end + 13].to_vec();
        let rest = version_end + 13 + 1 + 2 + 1 + 2 + 2 + 1 + 10;
        raw.scramble.extend_from_slice(&hello[rest..rest + 12]);
        raw
    }

    fn read(&mut self) -> (u8, Vec<u8>) {
        let mut header = [0u8; 4];
        self.stream.read_exact(&mut header).unwrap();
        let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
        let mut payload = vec![0; len];
        self.stream.read_exact(&mut payload).unwrap();
        (header[3], payload)
    }

    fn write(&mut self, seq: u8, payload: &[u8]) {
        let mut out = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        out.push(seq);
        out.extend_from_slice(payload);
        self.stream.write_all(&out).unwrap();
    }

    /// Sends a `caching_sha2_password` `HandshakeResponse41` for `sha` with `password`'s scramble.
    fn respond_sha2(&mut self, password: &str) {
        let mut p = CLIENT.to_le_bytes().to_vec();
        p.extend_from_slice(&(1u32 << 24).to_le_bytes());
        p.push(45);
        p.extend_from_slice(&[0; 23]);
        p.extend_from_slice(b"sha\0");
        let auth = sha2_scramble_response(password, &self.scramble);
        p.push(auth.len() as u8);
        p.extend_from_slice(&auth);
        p.extend_from_slice(b"caching_sha2_password\0");
        self.write(1, &p);
    }
}

fn error_code(packet: &[u8]) -> u16 {
    assert_eq!(packet[0], 0xFF, "not an ERR packet: {packet:?}");
    u16::from_le_bytes([packet[1], packet[2]])
}

#[test]
fn sha2_fast_path_only_after_a_full_authentication_with_rsa() {
    let addr = support::start(1 << 20);
    // The cache is empty: full authentication, asking for the public key.
    let mut c = Raw::connect(addr);
    assert_eq!(c.capabilities & SSL, 0, "SSL offered without TLS");
    c.respond_sha2("pw2");
    assert_eq!(c.read(), (2, vec![0x01, 0x04]));
    c.write(3, &[0x02]);
    let (seq, key) = c.read();
    assert_eq!((seq, key[0]), (4, 0x01));
    let pem = std::str::from_utf8(&key[1..]).unwrap();
    assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----"), "{pem}");
    let scramble = c.scramble.clone();
    c.write(5, &rsa_encrypt_password(pem, "pw2", &scramble).unwrap());
    let (seq, ok) = c.read();
    assert_eq!((seq, ok[0]), (6, 0x00), "{ok:?}");

    // Cached now: fast_auth_success, then OK.
    let mut c = Raw::connect(addr);
    c.respond_sha2("pw2");
    assert_eq!(c.read(), (2, vec![0x01, 0x03]));
    assert_eq!(c.read().1[0], 0x00);

    // A wrong scramble is not a fast-path failure but a full authentication; a clear password
    // on a plain connection is refused even when right.
    let mut c = Raw::connect(addr);
    c.respond_sha2("wrong");
    assert_eq!(c.read(), (2, vec![0x01, 0x04]));
    c.write(3, b"pw2\0");
    assert_eq!(error_code(&c.read().1), 1045);

    // The right password encrypted for the wrong scramble fails too.
    let mut c = Raw::connect(addr);
    c.respond_sha2("wrong");
    assert_eq!(c.read().1, [0x01, 0x04]);
    c.write(3, &[0x02]);
    let (_, key) = c.read();
    let pem = std::str::from_utf8(&key[1..]).unwrap();
    c.write(
        5,
        &rsa_encrypt_password(pem, "pw2", b"01234567890123456789").unwrap(),
    );
    assert_eq!(error_code(&c.read().1), 1045);

    // An SSLRequest to a server without TLS: Bad handshake.
    let mut c = Raw::connect(addr);
    let mut p = (CLIENT | SSL).to_le_bytes().to_vec();
    p.extend_from_slice(&(1u32 << 24).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0; 23]);
    c.write(1, &p);
    assert_eq!(error_code(&c.read().1), 1043);
}

#[test]
fn the_handshake_offers_ssl_only_with_tls() {
    let (addr, _) = start_tls("offer", false);
    let c = Raw::connect(addr);
    assert_ne!(c.capabilities & SSL, 0);
}
