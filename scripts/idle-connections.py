#!/usr/bin/env python3
"""Resident memory per idle connection of a running `shale serve` (docs/server.md, "Limits").

Usage: /usr/bin/python3 scripts/idle-connections.py PORT PID N [CA]

Opens one warm-up connection, reads the server's VmRSS, then opens N connections as root with
an empty password (start the server with --initialize-insecure and --max-connections above N),
runs SELECT 1 on each so every session thread has worked once, leaves them idle for a second,
and reads VmRSS and the thread count again. With CA (the datadir's ca.pem) the connections use
TLS. Needs PyMySQL (/usr/bin/python3 has it).
"""
import os
import resource
import sys
import time

import pymysql

port, pid, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ssl = {"ca": sys.argv[4]} if len(sys.argv) > 4 else None
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 1024, n + 1024))


def rss_kib():
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SystemExit("no VmRSS")


def threads():
    return len(os.listdir(f"/proc/{pid}/task"))


def connect():
    return pymysql.connect(host="127.0.0.1", port=port, user="root", password="", ssl=ssl)


warm = connect()
warm.cursor().execute("SELECT 1")
warm.close()
time.sleep(0.5)
before, threads_before = rss_kib(), threads()
conns = []
for _ in range(n):
    c = connect()
    c.cursor().execute("SELECT 1")
    conns.append(c)
time.sleep(1)
after, threads_after = rss_kib(), threads()
print(
    f"{n} idle connections: RSS {before} KiB -> {after} KiB, "
    f"{(after - before) / n:.1f} KiB each; threads {threads_before} -> {threads_after}"
)
for c in conns:
    c.close()
