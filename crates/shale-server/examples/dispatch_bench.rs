//! Measures what it costs to hand one command from a connection's async task to synchronous
//! session code and get the reply back, for the two designs considered (command.rs): a
//! dedicated session thread per connection (a `sync_channel` there, a tokio channel back, as
//! the server does), and `tokio::task::spawn_blocking` per command with the session moved in
//! and out. `cargo run --release -p shale-server --example dispatch_bench [connections]`.

use std::time::Instant;

use tokio::sync::mpsc;

const COMMANDS: u32 = 50_000;

/// Stands in for a session: some state the command touches.
struct Session {
    counter: u64,
}

impl Session {
    fn run(&mut self, command: u64) -> Vec<u8> {
        self.counter = self.counter.wrapping_add(command);
        self.counter.to_le_bytes().to_vec()
    }
}

async fn dedicated_thread() {
    let (job_tx, job_rx) = std::sync::mpsc::sync_channel::<u64>(1);
    let (reply_tx, mut reply_rx) = mpsc::channel::<Vec<u8>>(4);
    let thread = std::thread::spawn(move || {
        let mut session = Session { counter: 0 };
        while let Ok(command) = job_rx.recv() {
            if reply_tx.blocking_send(session.run(command)).is_err() {
                break;
            }
        }
    });
    for i in 0..COMMANDS {
        job_tx.send(u64::from(i)).unwrap();
        std::hint::black_box(reply_rx.recv().await.unwrap());
    }
    drop(job_tx);
    thread.join().unwrap();
}

async fn spawn_blocking_per_command() {
    let mut session = Some(Session { counter: 0 });
    for i in 0..COMMANDS {
        let mut s = session.take().unwrap();
        let (s, reply) = tokio::task::spawn_blocking(move || {
            let reply = s.run(u64::from(i));
            (s, reply)
        })
        .await
        .unwrap();
        std::hint::black_box(reply);
        session = Some(s);
    }
}

fn main() {
    let connections: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    for (name, dedicated) in [("dedicated thread", true), ("spawn_blocking", false)] {
        let start = Instant::now();
        runtime.block_on(async {
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..connections {
                if dedicated {
                    tasks.spawn(dedicated_thread());
                } else {
                    tasks.spawn(spawn_blocking_per_command());
                }
            }
            while tasks.join_next().await.is_some() {}
        });
        let elapsed = start.elapsed();
        let total = f64::from(COMMANDS) * connections as f64;
        println!(
            "{name:>16}: {connections} connections, {:.2} us per command round trip, {:.0} commands/s",
            elapsed.as_secs_f64() * 1e6 / f64::from(COMMANDS),
            total / elapsed.as_secs_f64()
        );
    }
}
