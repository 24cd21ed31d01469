//! Seeds for the `server_packet` fuzz target (fuzz/README.md), recorded from real clients: the
//! mariadb command-line client (libmariadb) and `PyMySQL` talk to a server through a relay
//! that keeps every byte they send. Each client packet is run through the target's entry
//! point here, and with `SHALE_FUZZ_SEEDS=<dir>` written to `<dir>/server_packet/`
//! (scripts/fuzz-seeds.sh): each payload as it is (handshake responses, `COM_QUERY`,
//! `COM_INIT_DB`, `COM_PING`, multi-statements), and each framed packet behind a zero byte (the
//! target frames what follows its first byte).

mod support;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use shale_fs::{FileSystem, OsFs};
use shale_server::testing::fuzz_client_packet;
use support::{have, mariadb, python, start, text};

/// Bytes each finished client connection sent.
type Recorded = Arc<Mutex<Vec<Vec<u8>>>>;

/// A relay on a free port to `server` that records what each client sends.
fn relay(server: SocketAddr) -> (SocketAddr, Recorded) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let recorded = Recorded::default();
    let record = recorded.clone();
    thread::spawn(move || {
        for client in listener.incoming() {
            let (Ok(mut client), Ok(mut upstream)) = (client, TcpStream::connect(server)) else {
                continue;
            };
            let (mut from_server, mut to_client) =
                (upstream.try_clone().unwrap(), client.try_clone().unwrap());
            thread::spawn(move || {
                let _ = std::io::copy(&mut from_server, &mut to_client);
                let _ = to_client.shutdown(Shutdown::Write);
            });
            let record = record.clone();
            thread::spawn(move || {
                let mut sent = Vec::new();
                let mut buffer = [0u8; 8192];
                while let Ok(n @ 1..) = client.read(&mut buffer) {
                    sent.extend_from_slice(&buffer[..n]);
                    if upstream.write_all(&buffer[..n]).is_err() {
                        break;
                    }
                }
                let _ = upstream.shutdown(Shutdown::Write);
                record.lock().unwrap().push(sent);
            });
        }
    });
    (addr, recorded)
}

/// Waits until `connections` client connections have ended.
fn wait_for(recorded: &Recorded, connections: usize) -> Vec<Vec<u8>> {
    let start = Instant::now();
    while recorded.lock().unwrap().len() < connections {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the relay saw {} of {connections} connections end",
            recorded.lock().unwrap().len()
        );
        thread::sleep(Duration::from_millis(10));
    }
    recorded.lock().unwrap().clone()
}

/// The packets of one connection's client bytes: (framed packet, payload).
fn packets(mut bytes: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    while bytes.len() >= 4 {
        let len = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], 0]) as usize;
        let Some(framed) = bytes.get(..4 + len) else {
            break;
        };
        out.push((framed.to_vec(), framed[4..].to_vec()));
        bytes = &bytes[4 + len..];
    }
    out
}

const PYMYSQL_SCRIPT: &str = r#"
import os, pymysql
from pymysql.constants import CLIENT
port = int(os.environ["PORT"])
c = pymysql.connect(host="127.0.0.1", port=port, user="root", password="pw", database="db1",
                    client_flag=CLIENT.MULTI_STATEMENTS)
cur = c.cursor()
cur.execute("select mixed")
cur.execute("begin")
cur.executemany("insert into t values (%s, %s)", [(1, "a"), (2, "b")])
c.commit()
cur.execute("select 1; select mixed")
c.ping()
c.select_db("other")
c.close()
"#;

#[test]
fn real_clients_packets_make_server_packet_seeds() {
    let server = start(64 << 20);
    let (addr, recorded) = relay(server);
    let mut connections = 0;
    let mut clients = Vec::new();
    if have("mariadb", "--version") {
        let out = mariadb(addr, "root", "pw", "select mixed; select 1; use db1");
        assert!(out.status.success(), "{}", text(&out.stderr));
        connections += 1;
        clients.push("mariadb");
    }
    if have("/usr/bin/python3", "-cimport pymysql") {
        let out = python(addr, PYMYSQL_SCRIPT);
        assert!(out.status.success(), "{}", text(&out.stderr));
        connections += 1;
        clients.push("PyMySQL");
    }
    let mut seeds = Vec::new();
    for sent in wait_for(&recorded, connections) {
        let packets = packets(&sent);
        // The first packet is the handshake response, naming the user.
        let (_, response) = packets.first().expect("a handshake response");
        assert!(response.windows(5).any(|w| w == b"root\0"), "{response:?}");
        assert!(
            packets
                .iter()
                .any(|(_, payload)| payload.first() == Some(&0x03)),
            "a COM_QUERY among {} packets",
            packets.len()
        );
        for (framed, payload) in packets {
            let mut behind_zero = vec![0];
            behind_zero.extend_from_slice(&framed);
            for seed in [payload, behind_zero] {
                fuzz_client_packet(&seed);
                seeds.push(seed);
            }
        }
    }
    println!("{} seeds from {clients:?}", seeds.len());
    seeds.sort();
    seeds.dedup();
    if let Ok(dir) = std::env::var("SHALE_FUZZ_SEEDS") {
        let fs = OsFs::new();
        let target_dir = Path::new(&dir).join("server_packet");
        fs.create_dir_all(&target_dir).unwrap();
        for (i, seed) in seeds.iter().enumerate() {
            let mut file = fs.create(&target_dir.join(format!("seed-{i:04}"))).unwrap();
            file.append(seed).unwrap();
            file.sync_data().unwrap();
        }
    }
}
