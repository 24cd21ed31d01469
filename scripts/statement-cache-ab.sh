#!/usr/bin/env bash
# Runs sysbench's oltp_insert against one `shale serve` with the statement cache on and off in
# turn (SET GLOBAL shale_statement_cache; each sysbench run connects anew, so it takes the
# global value), and prints each run's transactions per second and the server's CPU
# milliseconds per transaction, then each mode's median. Alternating the modes on one server
# keeps a busy machine's noise out of the ratio.
#
#   scripts/statement-cache-ab.sh [SHALE_BINARY] [RUNS_PER_MODE] [SECONDS] [THREADS]
#
# Needs sysbench and the mariadb client. The server binds 127.0.0.1 on a free port with its
# own data directory under a temporary directory, and is stopped by its PID.
set -euo pipefail

shale=${1:-target/release/shale}
runs=${2:-3}
seconds=${3:-20}
threads=${4:-4}
tables=4
table_size=50000

work=$(mktemp -d /tmp/statement-cache-ab.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$shale" serve --datadir="$work/data" --bind=127.0.0.1 --port="$port" --initialize-insecure \
    >"$work/server.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$work"' EXIT

sql() { mariadb -h127.0.0.1 -P"$port" -uroot -N -e "$1"; }
for _ in $(seq 100); do
    sql "SELECT 1" >/dev/null 2>&1 && break
    kill -0 "$pid" || { cat "$work/server.log"; exit 1; }
    sleep 0.1
done
sql "CREATE DATABASE sbtest"
common=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" --mysql-user=root
    --mysql-db=sbtest --tables="$tables" --table-size="$table_size")
sysbench oltp_insert "${common[@]}" --threads="$tables" prepare >/dev/null

cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
ticks_per_second=$(getconf CLK_TCK)
declare -A tps_list cpu_list
for run in $(seq "$runs"); do
    for mode in 1 0; do
        sql "SET GLOBAL shale_statement_cache = $mode"
        before=$(cpu_ticks)
        out=$(sysbench oltp_insert "${common[@]}" --threads="$threads" --time="$seconds" run)
        after=$(cpu_ticks)
        txns=$(echo "$out" | awk '/transactions:/ {print $2}')
        tps=$(echo "$out" | awk -F'[(]' '/transactions:/ {split($2, a, " "); print a[1]}')
        cpu_ms=$(python3 -c "print(round(($after - $before) * 1000 / $ticks_per_second / max($txns, 1), 4))")
        echo "run $run cache=$mode: $tps tps, $cpu_ms server CPU ms/txn"
        tps_list[$mode]+="$tps "
        cpu_list[$mode]+="$cpu_ms "
    done
done
median() { python3 -c "import statistics, sys; print(statistics.median(map(float, sys.argv[1:])))" $1; }
on_tps=$(median "${tps_list[1]}"); off_tps=$(median "${tps_list[0]}")
on_cpu=$(median "${cpu_list[1]}"); off_cpu=$(median "${cpu_list[0]}")
echo "median: cache on $on_tps tps, $on_cpu CPU ms/txn; cache off $off_tps tps, $off_cpu CPU ms/txn"
python3 -c "print(f'on/off: {$on_tps / $off_tps:.2f}x tps, {$on_cpu / $off_cpu:.2f}x CPU per transaction')"
