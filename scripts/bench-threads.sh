#!/usr/bin/env bash
# Thread scaling against release RocksDB (issue 28): readrandom, seekrandom and
# readwhilewriting at 1, 2, 4 and 8 threads on one filled database per engine, and fillrandom
# with 1, 4 and 8 writers with and without sync, each engine in the same process through the
# peer harness (`shale bench --engines=shale,rocksdb`). Prints one table per run; the raw
# per-benchmark JSON lines stay in $OUT.
#
#   cargo build --release -p shale --features rocksdb-peer
#   BIN=target/release/shale OUT=threads-1 scripts/bench-threads.sh
#
# Knobs (environment): BIN, OUT (results directory), DB (database directory, on a disk file
# system), NUM (keys of the read database, 5M), SECS (seconds per read benchmark and per
# unsynced fill, 20), SYNC_SECS (seconds per synced fill, 15), READ_THREADS ("1 2 4 8"; " " runs no reads),
# WRITERS ("1 4 8"), ENGINES (shale,rocksdb), RWW_WRITE_RATE (readwhilewriting's writer,
# bytes per second, 2 MiB), SKIP_FILL=1 (reuse $DB/read from a run before).
#
# Each invocation gets its own --seed: a thread's key stream is derived from the seed and its
# thread number, so a read run with the fill's seed would read exactly the keys the fill
# wrote, in its order (every key found), and another thread count would not.
set -euo pipefail

BIN=${BIN:-target/release/shale}
OUT=${OUT:-bench-threads}
DB=${DB:-$OUT/db}
NUM=${NUM:-5000000}
SECS=${SECS:-20}
SYNC_SECS=${SYNC_SECS:-15}
READ_THREADS=${READ_THREADS:-"1 2 4 8"}
WRITERS=${WRITERS:-"1 4 8"}
ENGINES=${ENGINES:-shale,rocksdb}
RWW_WRITE_RATE=${RWW_WRITE_RATE:-2097152}

mkdir -p "$OUT"
COMMON=(--engines="$ENGINES" --key_size=16 --value_size=100 --compression_ratio=0.5
  --compression_type=lz4 --bloom_bits=10 --cache_size=268435456 --seek_nexts=10
  --histogram=1)

if [ "${SKIP_FILL:-0}" != 1 ]; then
  echo "== fill: $NUM keys per engine, then wait for compaction" >&2
  "$BIN" bench "${COMMON[@]}" --seed=28 --db="$DB/read" --num="$NUM" \
    --benchmarks=fillrandom,waitforcompaction --json_out="$OUT/fill.json" >"$OUT/fill.log"
fi

# Reads first, every thread count, on the database as the fill left it; then
# readwhilewriting, whose writer changes the database. Its writer is held to RWW_WRITE_RATE
# bytes per second so both engines' databases grow alike (an unthrottled writer writes more
# into the faster engine, which then reads a bigger database).
for t in $READ_THREADS; do
  echo "== reads: $t thread(s), $SECS s each" >&2
  "$BIN" bench "${COMMON[@]}" --seed=$((1000 + t)) --db="$DB/read" --num="$NUM" --use_existing_db \
    --threads="$t" --duration="$SECS" --benchmarks=readrandom,seekrandom \
    --json_out="$OUT/reads-$t.json" >"$OUT/reads-$t.log"
done
for t in $READ_THREADS; do
  echo "== readwhilewriting: $t reader(s) and one writer, $SECS s" >&2
  "$BIN" bench "${COMMON[@]}" --seed=$((1100 + t)) --db="$DB/read" --num="$NUM" --use_existing_db \
    --threads="$t" --duration="$SECS" --benchmarks=readwhilewriting \
    --benchmark_write_rate_limit="$RWW_WRITE_RATE" \
    --json_out="$OUT/rww-$t.json" >"$OUT/rww-$t.log"
done

for sync in 0 1; do
  secs=$SECS
  [ "$sync" = 1 ] && secs=$SYNC_SECS
  for w in $WRITERS; do
    echo "== fillrandom: $w writer(s), sync=$sync, $secs s" >&2
    # --num is per writer and is the key range each draws from; --duration ends the fill.
    "$BIN" bench "${COMMON[@]}" --seed=$((2000 + 10 * w + sync)) --db="$DB/fill" --num="$NUM" \
      --threads="$w" --sync="$sync" \
      --duration="$secs" --benchmarks=fillrandom \
      --json_out="$OUT/fill-w$w-sync$sync.json" >"$OUT/fill-w$w-sync$sync.log"
  done
done

python3 - "$OUT" <<'EOF'
import glob, json, os, sys
out = sys.argv[1]
rows = {}
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    name = os.path.basename(path)[:-5]
    if name == "fill":
        continue
    sync = " sync" if name.endswith("sync1") else ""
    for line in open(path):
        r = json.loads(line)
        key = (r["benchmark"] + sync, r["threads"])
        rows.setdefault(key, {})[r["engine"]] = r
print("| benchmark | threads | Shale ops/s | RocksDB ops/s | Shale/RocksDB | Shale p99 us | RocksDB p99 us | Shale p99.9 us | RocksDB p99.9 us |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
order = ["readrandom", "seekrandom", "readwhilewriting", "fillrandom", "fillrandom sync"]
for (bench, threads) in sorted(rows, key=lambda k: (order.index(k[0]) if k[0] in order else 99, k[1])):
    e = rows[(bench, threads)]
    s, r = e.get("shale"), e.get("rocksdb")
    f = lambda x, k: "" if x is None or x.get(k) is None else f"{x[k]:,.0f}" if k == "ops_per_sec" else f"{x[k]:.1f}"
    ratio = f"{s['ops_per_sec'] / r['ops_per_sec']:.2f}" if s and r and r["ops_per_sec"] else ""
    print(f"| {bench} | {threads} | {f(s,'ops_per_sec')} | {f(r,'ops_per_sec')} | {ratio} | "
          f"{f(s,'p99_micros')} | {f(r,'p99_micros')} | {f(s,'p999_micros')} | {f(r,'p999_micros')} |")
EOF
