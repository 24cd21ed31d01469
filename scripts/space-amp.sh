#!/usr/bin/env bash
# Space and write-amp of `shale bench` beside RocksDB's db_bench (Debian rocksdb-tools 7.8.3)
# after NUM random inserts and again after overwriting NUM random keys, with the same flags.
#
# Each tool runs three times, as three processes on one database directory:
#   1. --benchmarks=fillrandom,waitforcompaction,stats,levelstats
#   2. --use_existing_db=1 --benchmarks=overwrite,waitforcompaction,stats,levelstats
#   3. --use_existing_db=1 --benchmarks=compact,waitforcompaction,stats,levelstats
# Each waits for compaction before the figures are taken, so the sizes are those of a settled
# tree; the third flushes and compacts everything into the last level, which takes away the
# L0 files each tool leaves below its compaction trigger. After each phase the script records the directory size (du -b), the bytes of table
# files, and the bytes the process made the kernel write (write_bytes of /proc/<pid>/io,
# read as ru_oublock * 512 from wait4, threads included).
#
# Usage: scripts/space-amp.sh [NUM] [-- EXTRA FLAGS FOR BOTH]
#   default NUM 5,000,000. Common flags: 16-byte keys, 100-byte values, ratio 0.5, lz4,
#   bloom 10, one thread, seed 1. db_bench also gets
#   --level_compaction_dynamic_level_bytes=true (Shale always sizes levels dynamically).
# Env: DIR=path for the databases (default ./space-amp-data; must be on a real disk, not
# tmpfs, for write_bytes to count), KEEP=1 keeps them; SHALE_ONLY=1 skips db_bench,
# ROCKS_ONLY=1 skips shale (and its build);
# SHALE_FLAGS / ROCKS_FLAGS add flags to one side only; SHALE_FLAGS=--like_db_bench turns off
# the Shale defaults db_bench lacks (the header of each Shale run lists them): run both ways.
# Raw outputs go to $DIR/{shale,rocksdb}-{fill,overwrite}.txt (progress: .err).
set -euo pipefail
cd "$(dirname "$0")/.."
num=${1:-5000000}
shift $(( $# < 1 ? $# : 1 ))
[[ ${1:-} == -- ]] && shift
extra=("$@")
dir=${DIR:-$PWD/space-amp-data}
mkdir -p "$dir"

flags=(--num="$num" --key_size=16 --value_size=100 --compression_ratio=0.5
  --compression_type=lz4 --bloom_bits=10 --threads=1 --seed=1)
read -r -a shale_only <<< "${SHALE_FLAGS:-}"
read -r -a rocks_only <<< "${ROCKS_FLAGS:-}"

[[ -n ${ROCKS_ONLY:-} ]] || cargo build --release -q -p shale

# Runs a command, prints its stdout into $1 and "write_bytes seconds" on stdout.
measure() {
  local out=$1
  shift
  python3 - "$out" "$@" <<'PY'
import os, sys, time
out, argv = sys.argv[1], sys.argv[2:]
start = time.monotonic()
with open(out, "w") as f:
    pid = os.fork()
    if pid == 0:
        os.dup2(f.fileno(), 1)
        err = os.open(out[:-4] + ".err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(err, 2)
        os.execvp(argv[0], argv)
    _, status, usage = os.wait4(pid, 0)
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(f"{argv[0]} failed with status {status}; see {out}")
print(usage.ru_oublock * 512, f"{time.monotonic() - start:.0f}")
PY
}

sst_bytes() { find "$1" -name '*.sst' -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }

run_tool() {
  local name=$1 db=$2
  shift 2
  local cmd=("$@")
  rm -rf "$db"
  local phase benchmarks more
  for phase in fill overwrite compact; do
    case $phase in
      fill) benchmarks=fillrandom,waitforcompaction,stats,levelstats more=() ;;
      *) benchmarks=$phase,waitforcompaction,stats,levelstats more=(--use_existing_db=1) ;;
    esac
    read -r written seconds < <(measure "$dir/$name-$phase.txt" "${cmd[@]}" \
      --benchmarks="$benchmarks" "${more[@]}" --db="$db")
    printf '%-8s %-10s du_bytes %12d sst_bytes %12d write_bytes %12d seconds %5d\n' \
      "$name" "$phase" "$(du -sb "$db" | cut -f1)" "$(sst_bytes "$db")" "$written" "$seconds"
  done
}

user_bytes=$(( num * (16 + 100) ))
echo "user bytes per phase (num * (key + value)): $user_bytes"
if [[ -z ${ROCKS_ONLY:-} ]]; then
  run_tool shale "$dir/shale-db" ./target/release/shale bench "${flags[@]}" "${extra[@]}" \
    "${shale_only[@]}"
fi
if [[ -z ${SHALE_ONLY:-} ]]; then
  run_tool rocksdb "$dir/rocksdb-db" db_bench "${flags[@]}" \
    --level_compaction_dynamic_level_bytes=true "${extra[@]}" "${rocks_only[@]}"
fi
[[ -n ${KEEP:-} ]] || rm -rf "$dir/shale-db" "$dir/rocksdb-db"
