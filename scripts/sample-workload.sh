#!/usr/bin/env bash
# Loads sample data into a running `shale serve` and runs a short workload against it:
# sysbench 1.0.20's tables (prepare), then 20 seconds of oltp_read_write, then a peek with the
# mariadb client. The server must be up (README: `cargo run --release -p shale -- serve`).
#
# Usage: scripts/sample-workload.sh [PORT] [DATADIR]   (defaults: 3306, ./shale-data)
# Env: TABLES (2), TABLE_SIZE (10000), THREADS (2), TIME (20).
set -euo pipefail
port=${1:-3306}
datadir=${2:-shale-data}
password=""
if [[ -r "$datadir/root-password" ]]; then
  password=$(<"$datadir/root-password")
fi
for tool in sysbench mariadb; do
  command -v "$tool" >/dev/null || {
    echo "$tool not found: apt-get install sysbench mariadb-client" >&2
    exit 1
  }
done
client=(mariadb -h127.0.0.1 -P"$port" -uroot)
[[ -n "$password" ]] && client+=(-p"$password")
"${client[@]}" -e "CREATE DATABASE IF NOT EXISTS sbtest"
sb=(sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" --mysql-user=root
  --mysql-password="$password" --mysql-db=sbtest --tables="${TABLES:-2}"
  --table-size="${TABLE_SIZE:-10000}")
"${sb[@]}" oltp_read_write cleanup >/dev/null
"${sb[@]}" oltp_read_write prepare
"${sb[@]}" --threads="${THREADS:-2}" --time="${TIME:-20}" --report-interval=5 oltp_read_write run
"${client[@]}" sbtest -e "SELECT COUNT(*) AS rows_in_sbtest1 FROM sbtest1; SELECT id, k, pad FROM sbtest1 WHERE id BETWEEN 1 AND 5"
