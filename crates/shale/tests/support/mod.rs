//! Servers for the end-to-end tests: Shale's (`shale serve`) and `MariaDB`'s, each on a free
//! port of 127.0.0.1 with its own data directory under the test's scratch folder, stopped by
//! PID when dropped; and the mariadb command-line client to talk to them.

#![allow(dead_code)] // each test binary uses its own part of this module

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A fresh, empty folder for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("shale-e2e-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether `program args` runs and succeeds. A missing client skips the test (it prints
/// SKIPPED and the caller returns), except under CI=true, where .ci/run installs every client
/// and a missing one is a failure.
pub fn have(program: &str, args: &[&str]) -> bool {
    let found = Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "`{program}` is missing in CI; .ci/run must install it"
        );
        eprintln!("SKIPPED: `{program}` is not usable here");
    }
    found
}

/// Runs a `PyMySQL` script (the system python's, which has the module) with PORT set to
/// `port`; returns its stdout, asserting it succeeded.
pub fn pymysql(port: u16, script: &str) -> String {
    let out = Command::new("/usr/bin/python3")
        .args(["-c", script])
        .env("PORT", port.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A port nobody listens on now (the OS picks it; a race with another process is possible
/// but harmless for tests: the server then fails to start and says so).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running server process, stopped (SIGTERM, then SIGKILL after 60 s) when dropped.
#[derive(Debug)]
pub struct Server {
    pub name: &'static str,
    pub port: u16,
    pub datadir: PathBuf,
    child: Child,
    log: PathBuf,
}

impl Server {
    /// Starts `command`, its output going to a log beside `datadir`, and waits until it
    /// listens on `port` (0: until it prints the port it chose; see [`Server::wait_banner`]).
    fn spawn(name: &'static str, port: u16, datadir: PathBuf, command: &mut Command) -> Server {
        let log = datadir.with_extension("log");
        let file = std::fs::File::create(&log).unwrap();
        let child = command
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name} ({command:?}): {e}"));
        let mut server = Server {
            name,
            port,
            datadir,
            child,
            log,
        };
        if port == 0 {
            server.wait_banner(Duration::from_secs(60));
        } else {
            server.wait_listening(Duration::from_secs(60));
        }
        server
    }

    /// Panics with the log if the process has exited.
    fn assert_running(&mut self, when: &str) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "{} exited ({status}) {when}:\n{}",
                self.name,
                self.log_text()
            );
        }
    }

    /// Waits for `shale serve`'s "listening on 127.0.0.1:PORT" line and takes the port from
    /// it. The server binds port 0, so no other process can hold the port it was given.
    fn wait_banner(&mut self, timeout: Duration) {
        const BANNER: &str = "shale serve: listening on 127.0.0.1:";
        let deadline = Instant::now() + timeout;
        loop {
            self.assert_running("before listening");
            let port = self.log_text().lines().find_map(|line| {
                let rest = line.strip_prefix(BANNER)?;
                rest.split(' ').next()?.parse::<u16>().ok()
            });
            if let Some(port) = port {
                self.port = port;
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not print where it listens within {timeout:?}:\n{}",
                self.name,
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until something accepts connections on `port` and the process is still running.
    /// A connection whose local and remote ends are the same socket is TCP's self-connect
    /// (the kernel picked the probed port as the probe's own port while nobody listened):
    /// it proves nothing and holds the port the server needs, so it is dropped and retried.
    fn wait_listening(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            self.assert_running("before listening");
            if let Ok(stream) = TcpStream::connect(("127.0.0.1", self.port)) {
                let self_connect = stream.local_addr().ok() == stream.peer_addr().ok();
                drop(stream);
                if !self_connect {
                    // A server that lost the port to another process exits at its bind; the
                    // listener we reached would then be someone else's.
                    std::thread::sleep(Duration::from_millis(200));
                    self.assert_running("after something listened on its port");
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "{} did not listen on 127.0.0.1:{} within {timeout:?}:\n{}",
                self.name,
                self.port,
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Runs `sql` through the mariadb client in batch mode (tab-separated, no column names),
    /// in database `db` if given: stdout, or the client's error text.
    pub fn query(&self, db: Option<&str>, sql: &str) -> Result<String, String> {
        let mut command = Command::new("mariadb");
        command.args([
            "-h127.0.0.1",
            &format!("-P{}", self.port),
            "-uroot",
            "--batch",
            "--skip-column-names",
            "--connect-timeout=10",
        ]);
        if let Some(db) = db {
            command.arg(format!("-D{db}"));
        }
        let output = command
            .arg("-e")
            .arg(sql)
            .stdin(Stdio::null())
            .output()
            .expect("the mariadb client (apt-get install mariadb-client; .ci/run does)");
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
        }
    }

    /// Stops the server by its PID: SIGTERM, then SIGKILL if it is still running after 60 s.
    pub fn stop(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts `shale serve` on a free port with an empty root password.
pub fn start_shale(dir: &Path) -> Server {
    start_shale_with(dir, &[])
}

/// [`start_shale`] with more `shale serve` flags.
pub fn start_shale_with(dir: &Path, extra: &[&str]) -> Server {
    let datadir = dir.join("shale-data");
    Server::spawn(
        "shale",
        0,
        datadir.clone(),
        Command::new(env!("CARGO_BIN_EXE_shale"))
            .args([
                "serve",
                &format!("--datadir={}", datadir.display()),
                "--bind=127.0.0.1",
                "--port=0",
                "--initialize-insecure",
            ])
            .args(extra),
    )
}

/// Initializes a `MariaDB` data directory and starts `mariadbd` on a free port (binary log off;
/// root without a password). `MariaDB` refuses to run as root unless told `--user=root`.
pub fn start_mariadb(dir: &Path) -> Server {
    std::fs::create_dir_all(dir).unwrap();
    let datadir = dir.join("mariadb-data");
    let install = Command::new("mariadb-install-db")
        .args([
            "--no-defaults",
            &format!("--datadir={}", datadir.display()),
            "--user=root",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
        ])
        .output()
        .expect("mariadb-install-db (apt-get install mariadb-server; .ci/run does)");
    assert!(
        install.status.success(),
        "mariadb-install-db failed:\n{}",
        String::from_utf8_lossy(&install.stderr)
    );
    let port = free_port();
    Server::spawn(
        "mariadb",
        port,
        datadir.clone(),
        Command::new("mariadbd").args([
            "--no-defaults",
            &format!("--datadir={}", datadir.display()),
            "--user=root",
            "--bind-address=127.0.0.1",
            &format!("--port={port}"),
            &format!("--socket={}", dir.join("mariadb.sock").display()),
            &format!("--pid-file={}", dir.join("mariadb.pid").display()),
            "--skip-log-bin",
            "--innodb-buffer-pool-size=64M",
            // Debian's config file says utf8mb4; --no-defaults would leave latin1.
            "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_general_ci",
        ]),
    )
}
