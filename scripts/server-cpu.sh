#!/bin/bash
# Server CPU per statement under one sysbench test, split into user and system time, with an
# optional perf profile: what docs/server.md "How it runs" quotes.
#
#   scripts/server-cpu.sh [TEST] [SECONDS] [SHALE_BINARY]      (PERF=1 also records perf.data)
#   scripts/server-cpu.sh oltp_point_select 10 target/release/shale
#
# Starts `shale serve` on 127.0.0.1 on a free port in its own data directory (prepared once
# with 4 tables x 250,000 rows and kept in $DATADIR for the next run), warms up for 3 s, runs
# the test with 4 threads, prints sysbench's summary and the server's utime/stime per
# transaction from /proc, and stops the server by its PID.
set -euo pipefail
TEST=${1:-oltp_point_select}
SECONDS_RUN=${2:-10}
BIN=${3:-target/release/shale}
DATADIR=${DATADIR:-/tmp/shale-server-cpu}
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN" serve --datadir="$DATADIR" --bind=127.0.0.1 --port="$PORT" --initialize-insecure \
  --block-cache-size=1073741824 > "$DATADIR.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.2; done
SB=(sysbench "$TEST" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$PORT"
  --mysql-user=root --mysql-db=sbtest --tables=4 --table-size=250000 --threads=4)
if [ ! -f "$DATADIR/.sysbench-prepared" ]; then
  mariadb -h127.0.0.1 -P"$PORT" -uroot -e "CREATE DATABASE IF NOT EXISTS sbtest"
  "${SB[@]}" prepare > /dev/null
  touch "$DATADIR/.sysbench-prepared"
fi
"${SB[@]}" --time=3 run > /dev/null
PERF_PID=
if [ -n "${PERF:-}" ]; then
  perf record -F 499 --call-graph=dwarf,8192 -p $PID -o perf.data -- sleep "$SECONDS_RUN" \
    > /dev/null 2>&1 &
  PERF_PID=$!
fi
read -r U0 S0 < <(awk '{print $14, $15}' /proc/$PID/stat)
OUT=$("${SB[@]}" --time="$SECONDS_RUN" run)
read -r U1 S1 < <(awk '{print $14, $15}' /proc/$PID/stat)
[ -n "$PERF_PID" ] && wait "$PERF_PID"
echo "$OUT" | grep -E "transactions:|queries:|95th"
TXNS=$(echo "$OUT" | awk '/transactions:/ {print $2}')
HZ=$(getconf CLK_TCK)
awk -v u=$((U1 - U0)) -v s=$((S1 - S0)) -v n="$TXNS" -v hz="$HZ" 'BEGIN {
  printf "server CPU per transaction: %.1f us user + %.1f us system = %.1f us\n",
    u / hz / n * 1e6, s / hz / n * 1e6, (u + s) / hz / n * 1e6 }'
