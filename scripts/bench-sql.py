#!/usr/bin/env python3
"""Server benchmarks: sysbench 1.0.20 against MariaDB (InnoDB and MyRocks) and Shale, side by side.

Each engine runs as its own server on 127.0.0.1, on a free port, in its own data directory under
--workdir, and is stopped by its PID. Engines alternate test by test and run by run, so a busy
machine hurts them alike. Per engine and test it records TPS, QPS, p95 and p99 latency (from
sysbench's histogram), CPU seconds per transaction and bytes written per transaction (the server
process's /proc counters over the run), the database size after prepare and after the runs, and
the server's peak resident memory; it prints medians and Shale's ratios to each peer, and writes
every run to --out as JSON lines.

Examples (docs/benchmarks.md, "Server benchmarks"):
  scripts/bench-sql.py --engines=innodb,myrocks,shale --tables=4 --table-size=250000 \\
      --threads=4 --time=60 --runs=3 --tests=oltp_point_select,oltp_read_write
  scripts/bench-sql.py --engines=innodb,myrocks --time=5 --runs=1 --table-size=10000
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

DEFAULT_TESTS = (
    "oltp_point_select,oltp_read_only,oltp_read_write,oltp_write_only,oltp_update_index,"
    "oltp_update_non_index,oltp_delete,oltp_insert,select_random_ranges"
)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dir_bytes(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except FileNotFoundError:
                pass
    return total


def proc_counters(pid):
    """(cpu seconds, bytes written to storage, peak RSS bytes) of a live process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    write_bytes = 0
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("write_bytes:"):
                write_bytes = int(line.split()[1])
    peak = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) * 1024
    return cpu, write_bytes, peak


def wait_for_port(port, proc, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode} before listening; see its log")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"{what} did not listen on 127.0.0.1:{port} within {timeout}s")


class Server:
    """One database server under test: start, client command line, stop by PID."""

    name = "?"

    def __init__(self, workdir, cache_mb):
        self.dir = os.path.join(workdir, self.name)
        self.datadir = os.path.join(self.dir, "data")
        self.cache_mb = cache_mb
        self.port = free_port()
        self.proc = None
        self.log = None

    def mysql_args(self):
        return ["-h127.0.0.1", f"-P{self.port}", "-uroot"]

    def sysbench_args(self):
        return [
            "--db-driver=mysql",
            "--mysql-host=127.0.0.1",
            f"--mysql-port={self.port}",
            "--mysql-user=root",
            "--mysql-password=",
            "--mysql-db=sbtest",
        ]

    def sql(self, statement):
        subprocess.run(["mariadb", *self.mysql_args(), "-e", statement], check=True)

    def start(self):
        if os.path.exists(self.dir):
            shutil.rmtree(self.dir)
        os.makedirs(self.dir)
        self.init()
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.proc = subprocess.Popen(self.command(), stdout=self.log, stderr=subprocess.STDOUT)
        wait_for_port(self.port, self.proc, self.name)
        self.sql("CREATE DATABASE IF NOT EXISTS sbtest")

    def stop(self):
        if self.proc is None:
            return
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None
        self.log.close()

    def size(self):
        return dir_bytes(self.datadir)

    def init(self):
        pass

    def command(self):
        raise NotImplementedError


class MariaDb(Server):
    """MariaDB from Debian's packages, binary log off, durable commits."""

    def init(self):
        subprocess.run(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={self.datadir}",
                "--user=root",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def common(self):
        return [
            "mariadbd",
            "--no-defaults",
            f"--datadir={self.datadir}",
            "--user=root",
            "--bind-address=127.0.0.1",
            f"--port={self.port}",
            f"--socket={self.dir}/mysqld.sock",
            f"--pid-file={self.dir}/mysqld.pid",
            "--skip-log-bin",
            "--max-connections=1000",
            "--max-prepared-stmt-count=1000000",
        ]


class InnoDb(MariaDb):
    name = "innodb"
    engine = "innodb"

    def command(self):
        return self.common() + [
            f"--innodb-buffer-pool-size={self.cache_mb}M",
            "--innodb-flush-log-at-trx-commit=1",
            "--innodb-log-file-size=512M",
        ]

    def size(self):
        # The tables' own files (file-per-table); the redo log and system tablespace are
        # preallocated and would hide the data's size.
        return dir_bytes(os.path.join(self.datadir, "sbtest"))


class MyRocks(MariaDb):
    name = "myrocks"
    engine = "rocksdb"

    def command(self):
        return self.common() + [
            "--plugin-load-add=ha_rocksdb.so",
            "--default-storage-engine=rocksdb",
            f"--rocksdb-block-cache-size={self.cache_mb * 1024 * 1024}",
            "--rocksdb-flush-log-at-trx-commit=1",
            # The InnoDB pool is unused here; keep it at its minimum so memory compares fairly.
            "--innodb-buffer-pool-size=8M",
        ]

    def size(self):
        return dir_bytes(os.path.join(self.datadir, "#rocksdb"))


class Shale(Server):
    name = "shale"
    engine = "innodb"  # what sysbench writes in CREATE TABLE; Shale stores it as Shale

    def __init__(self, workdir, cache_mb, binary):
        super().__init__(workdir, cache_mb)
        self.binary = binary

    def command(self):
        return [
            self.binary,
            "serve",
            f"--datadir={self.datadir}",
            "--bind=127.0.0.1",
            f"--port={self.port}",
            "--initialize-insecure",
            f"--block-cache-size={self.cache_mb * 1024 * 1024}",
        ]


def histogram_percentiles(output, wanted):
    """Percentiles (ms) from sysbench's --histogram block."""
    buckets = []
    in_histogram = False
    for line in output.splitlines():
        if "Latency histogram" in line:
            in_histogram = True
            continue
        if in_histogram:
            parts = line.split("|")
            if len(parts) == 2 and parts[1].strip().split():
                try:
                    value = float(parts[0].strip())
                    count = int(parts[1].split()[-1])
                except ValueError:
                    continue
                buckets.append((value, count))
            elif buckets and not line.strip():
                break
    total = sum(c for _, c in buckets)
    result = {}
    for p in wanted:
        target = total * p / 100.0
        seen = 0
        result[p] = None
        for value, count in buckets:
            seen += count
            if seen >= target:
                result[p] = value
                break
    return result


def parse_sysbench(output):
    def field(label):
        for line in output.splitlines():
            if line.strip().startswith(label):
                return line
        raise SystemExit(f"sysbench printed no '{label}' line:\n{output}")

    transactions = int(field("transactions:").split()[1])
    tps = float(field("transactions:").split("(")[1].split()[0])
    queries = int(field("queries:").split()[1])
    qps = float(field("queries:").split("(")[1].split()[0])
    errors = int(field("ignored errors:").split()[2])
    pct = histogram_percentiles(output, (95, 99))
    return {
        "transactions": transactions,
        "tps": tps,
        "queries": queries,
        "qps": qps,
        "ignored_errors": errors,
        "p95_ms": pct[95],
        "p99_ms": pct[99],
    }


def sysbench(server, test, args, phase):
    command = [
        "sysbench",
        test,
        *server.sysbench_args(),
        f"--mysql-storage-engine={server.engine}",
        f"--tables={args.tables}",
        f"--table-size={args.table_size}",
        f"--threads={args.threads if phase == 'run' else min(args.tables, 4)}",
        f"--time={args.time}",
        "--histogram=on",
        "--report-interval=0",
        phase,
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", default="innodb,myrocks,shale")
    parser.add_argument("--tests", default=DEFAULT_TESTS)
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--table-size", type=int, default=250000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--time", type=int, default=60, help="seconds per run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cache-mb", type=int, default=1024, help="buffer pool / block cache")
    parser.add_argument("--workdir", default="/tmp/shale-bench-sql")
    parser.add_argument("--out", default=None, help="JSON lines file (default WORKDIR/results.jsonl)")
    parser.add_argument("--shale", default="target/release/shale", help="the shale binary")
    parser.add_argument("--report", metavar="JSONL", help="only summarize an earlier run's results")
    parser.add_argument("--svg", metavar="PREFIX", help="also write PREFIX-tps.svg and PREFIX-wbytes.svg charts")
    args = parser.parse_args()

    if args.report:
        with open(args.report) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        runs = [r for r in rows if "test" in r]
        engines = list(dict.fromkeys(r["engine"] for r in runs))
        tests = list(dict.fromkeys(r["test"] for r in runs))
        summarize(runs, engines, tests, [r for r in rows if r.get("phase") == "prepare"])
        if args.svg:
            write_charts(runs, engines, tests, args.svg)
        return 0

    for tool in ("sysbench", "mariadb", "mariadbd", "mariadb-install-db"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} not found: apt-get install sysbench mariadb-server mariadb-client mariadb-plugin-rocksdb")
    os.makedirs(args.workdir, exist_ok=True)
    out_path = args.out or os.path.join(args.workdir, "results.jsonl")
    out = open(out_path, "w")

    servers = []
    for name in args.engines.split(","):
        if name == "innodb":
            servers.append(InnoDb(args.workdir, args.cache_mb))
        elif name == "myrocks":
            servers.append(MyRocks(args.workdir, args.cache_mb))
        elif name == "shale":
            if not os.access(args.shale, os.X_OK):
                raise SystemExit(f"no shale binary at {args.shale}: cargo build --release -p shale")
            servers.append(Shale(args.workdir, args.cache_mb, os.path.abspath(args.shale)))
        else:
            raise SystemExit(f"unknown engine '{name}' (innodb, myrocks, shale)")

    tests = args.tests.split(",")
    rows = []
    prepares = []
    try:
        for server in servers:
            server.start()
            started = time.time()
            sysbench(server, "oltp_common", args, "prepare")
            record = {
                "engine": server.name,
                "phase": "prepare",
                "seconds": time.time() - started,
                "rows": args.tables * args.table_size,
                "size_bytes": server.size(),
            }
            prepares.append(record)
            print(json.dumps(record), flush=True)
            out.write(json.dumps(record) + "\n")
        for run in range(args.runs):
            for test in tests:
                for server in servers:
                    cpu0, written0, _ = proc_counters(server.proc.pid)
                    output = sysbench(server, test, args, "run")
                    cpu1, written1, peak = proc_counters(server.proc.pid)
                    record = {"engine": server.name, "test": test, "run": run, **parse_sysbench(output)}
                    txns = max(record["transactions"], 1)
                    record["cpu_s_per_txn"] = (cpu1 - cpu0) / txns
                    record["write_bytes_per_txn"] = (written1 - written0) / txns
                    record["peak_rss_bytes"] = peak
                    record["size_bytes"] = server.size()
                    rows.append(record)
                    print(json.dumps(record), flush=True)
                    out.write(json.dumps(record) + "\n")
    finally:
        for server in servers:
            server.stop()
        out.close()

    summarize(rows, [s.name for s in servers], tests, prepares)
    if args.svg:
        write_charts(rows, [s.name for s in servers], tests, args.svg)


COLORS = {"innodb": "#4e79a7", "myrocks": "#f28e2b", "shale": "#59a14f"}


def bar_chart(path, title, unit, tests, engines, value):
    """A grouped horizontal bar chart (one group per test, one bar per engine) as plain SVG."""
    bar, gap, label_width, width = 14, 10, 190, 760
    height = 60 + len(tests) * (len(engines) * bar + gap) + 30
    values = [value(e, t) for t in tests for e in engines]
    top = max([v for v in values if v is not None] or [1])
    lines = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="10" y="22" font-size="15" font-weight="bold">{title}</text>',
    ]
    for i, engine in enumerate(engines):
        x = 10 + i * 110
        lines.append(f'<rect x="{x}" y="32" width="12" height="12" fill="{COLORS.get(engine, "#999")}"/>')
        lines.append(f'<text x="{x + 16}" y="43">{engine}</text>')
    y = 60
    for test in tests:
        lines.append(f'<text x="10" y="{y + len(engines) * bar / 2 + 4}">{test}</text>')
        for engine in engines:
            v = value(engine, test)
            if v is not None:
                w = (width - label_width - 90) * v / top
                lines.append(f'<rect x="{label_width}" y="{y}" width="{w:.1f}" height="{bar - 2}" fill="{COLORS.get(engine, "#999")}"/>')
                lines.append(f'<text x="{label_width + w + 4:.1f}" y="{y + bar - 4}">{v:.3g} {unit}</text>')
            y += bar
        y += gap
    lines.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_charts(rows, engines, tests, prefix):
    def median_of(metric):
        def value(engine, test):
            values = [r[metric] for r in rows if r["engine"] == engine and r["test"] == test and r.get(metric) is not None]
            return statistics.median(values) if values else None
        return value

    tps = median_of("tps")
    base = engines[0]

    def relative_tps(engine, test):
        a, b = tps(engine, test), tps(base, test)
        return None if a is None or not b else a / b

    bar_chart(
        f"{prefix}-tps.svg",
        f"sysbench throughput relative to {base} (median tps; higher is better)",
        "x",
        tests,
        engines,
        relative_tps,
    )
    bar_chart(
        f"{prefix}-wbytes.svg",
        "Bytes written to storage per transaction (median; lower is better)",
        "B",
        [t for t in tests if any((median_of("write_bytes_per_txn")(e, t) or 0) > 0 for e in engines)],
        engines,
        median_of("write_bytes_per_txn"),
    )
    print(f"charts: {prefix}-tps.svg {prefix}-wbytes.svg")


def summarize(rows, engines, tests, prepares):
    if prepares:
        print("\nPrepare (load) per engine")
        print("| engine | rows | seconds | size after prepare (bytes) |")
        print("|---|---|---|---|")
        for p in prepares:
            print(f"| {p['engine']} | {p['rows']} | {p['seconds']:.1f} | {p['size_bytes']} |")
    metrics = ("tps", "qps", "p95_ms", "p99_ms", "cpu_s_per_txn", "write_bytes_per_txn", "size_bytes", "peak_rss_bytes")

    def median(engine, test, metric):
        values = [r[metric] for r in rows if r["engine"] == engine and r["test"] == test and r[metric] is not None]
        return statistics.median(values) if values else None

    print("\nMedians per engine and test")
    print("| test | engine | " + " | ".join(metrics) + " |")
    print("|---|---|" + "---|" * len(metrics))
    for test in tests:
        for engine in engines:
            cells = []
            for metric in metrics:
                value = median(engine, test, metric)
                cells.append("-" if value is None else f"{value:.6g}")
            print(f"| {test} | {engine} | " + " | ".join(cells) + " |")
    if "shale" in engines:
        for peer in (e for e in engines if e != "shale"):
            print(f"\nShale / {peer} (higher is better for tps/qps; lower for the rest)")
            print("| test | " + " | ".join(metrics) + " |")
            print("|---|" + "---|" * len(metrics))
            for test in tests:
                cells = []
                for metric in metrics:
                    a, b = median("shale", test, metric), median(peer, test, metric)
                    cells.append("-" if a is None or not b else f"{a / b:.2f}")
                print(f"| {test} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())
