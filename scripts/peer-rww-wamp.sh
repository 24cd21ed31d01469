#!/usr/bin/env bash
# Write-amp of readwhilewriting with equal writers: Shale and release RocksDB (the peer
# harness) each fill their own database (fillrandom,overwrite at NUM keys, the issue 7 flags),
# reopen it, flush and wait for compactions (so both start with an empty memtable and no
# backlog), then run readwhilewriting for DURATION seconds with the writer limited to RATE
# bytes/s: both write the same user bytes, so their bytes written per user byte compare like
# with like. Prints `shale bench report` over the runs (w-amp column) and, per run, the bytes
# by source (WAL, flush, compaction) from --json_out.
#
# Why not the harness's own readwhilewriting row: there the writer runs as long as the reads,
# so the faster reader's writer writes less and stops at another point of the compaction cycle.
# Why flush first: RocksDB flushes the replayed WAL while it opens (not counted in the
# benchmark), Shale keeps it in the memtable and flushes it later (counted).
#
# Usage: scripts/peer-rww-wamp.sh [RUNS] [DURATION] [RATE] [NUM]
#   defaults: 2 runs, 45 s, 10000000 bytes/s (450 MB of user writes), 5,000,000 keys; a rate
#   the slower engine's writer cannot keep (a loaded machine) gives unequal user bytes: the
#   report then marks the w-amp ratio, and the table below shows the run that fell short
# SHALE=path to a shale binary built with the rocksdb-peer feature (default
#   target/release/shale; build: cargo build --release -p shale --features rocksdb-peer).
# KEEP=DIR keeps the outputs (fill-N.txt, rww-N.txt with stats and levelstats, rww-N.json).
# LIKE_DB_BENCH=1 runs Shale with --like_db_bench (db_bench's values for the Shale defaults it
# lacks, listed in the header); run both ways and report both.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-2}
duration=${2:-45}
rate=${3:-10000000}
num=${4:-5000000}
shale=${SHALE:-target/release/shale}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=${KEEP:-$work}
mkdir -p "$out"
: > "$out/load.txt"

flags=(--num="$num" --key_size=16 --value_size=100 --compression_ratio=0.5
  --compression_type=lz4 --bloom_bits=10 --cache_size=268435456 --threads=1 --seek_nexts=10
  --histogram=0 --engines=shale,rocksdb)
[[ ${LIKE_DB_BENCH:-0} == 1 ]] && flags+=(--like_db_bench)

for i in $(seq "$runs"); do
  db="$work/db-$i"
  echo "run $i: load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/load.txt"
  "$shale" bench "${flags[@]}" --seed=$((1000 + i)) --benchmarks=fillrandom,overwrite \
    --db="$db" > "$out/fill-$i.txt" 2> "$out/fill-$i.err"
  "$shale" bench "${flags[@]}" --seed=$((1000 + i)) --use_existing_db \
    --benchmarks=flush,waitforcompaction,levelstats,readwhilewriting,stats,levelstats \
    --duration="$duration" --benchmark_write_rate_limit="$rate" --db="$db" \
    --json_out="$out/rww-$i.json" > "$out/rww-$i.txt" 2> "$out/rww-$i.err"
  rm -rf "$db"
done

"$shale" bench report "$out"/rww-*.json
python3 - "$out" "$runs" <<'PY'
import json, sys
out, runs = sys.argv[1], int(sys.argv[2])
print("\nMB written by source (RocksDB's WAL ticker leaves out its 7-byte record headers;")
print("process = /proc/self/io write_bytes, what write-amp divides)")
print(f"{'run':>3} {'engine':<8} {'user':>8} {'WAL':>8} {'flush':>8} {'compact':>8} {'process':>8} {'w-amp':>6} {'size':>7}")
for i in range(1, runs + 1):
    for line in open(f"{out}/rww-{i}.json"):
        r = json.loads(line)
        mb = lambda k: (r.get(k) or 0) / 1e6
        print(f"{i:>3} {r['engine']:<8} {mb('user_bytes_written'):8.1f} {mb('engine_wal_bytes'):8.1f} "
              f"{mb('engine_flush_bytes'):8.1f} {mb('engine_compaction_bytes'):8.1f} "
              f"{mb('process_bytes_written'):8.1f} {r['write_amp']:6.3f} {mb('db_size_bytes'):7.1f}")
PY
