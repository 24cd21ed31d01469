#!/usr/bin/env bash
# Runs the same benchmarks with the same flags through `shale bench` and RocksDB's db_bench
# (Debian rocksdb-tools 7.8.3, built with assertions on), RUNS times each, alternating, and
# prints the median micros/op, ops/sec and P99 of each side by side with ratios.
#
# Usage: scripts/bench-db.sh [RUNS] [NUM] [BENCHMARKS] [-- EXTRA FLAGS FOR BOTH]
#   defaults: 3 runs, 1,000,000 keys,
#   fillseq,fillrandom,overwrite,readrandom,readseq,seekrandom,readwhilewriting
# Common flags (both tools): 16-byte keys, 100-byte values, ratio 0.5, lz4, bloom 10,
# 256 MiB cache, 1 thread, seek_nexts 10, histogram on, one fixed seed per run.
# KEEP=DIR keeps every raw output in DIR, with shale-N.json (--json_out) and the db_bench
# report CSV rocksdb-N.csv (10-second intervals; db_bench rewrites it for each benchmark, so it
# holds the last one's), ready for:
#   shale bench report DIR/shale-*.json DIR/rocksdb-*.txt --svg_dir=DIR/charts
# Like for like: Shale has defaults db_bench lacks (memtable bloom filter, idle compaction, ...;
# every Shale run's header lists them). LIKE_DB_BENCH=1 runs Shale with --like_db_bench, which
# sets db_bench's values; run the comparison both ways and report both (docs/benchmarks.md,
# "Defaults that differ from db_bench"). SHALE_FLAGS adds other flags to Shale only.
# Needs: cargo, python3; db_bench (apt-get install rocksdb-tools) for the anchor column.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
num=${2:-1000000}
benchmarks=${3:-fillseq,fillrandom,overwrite,readrandom,readseq,seekrandom,readwhilewriting}
shift $(( $# < 3 ? $# : 3 ))
[[ ${1:-} == -- ]] && shift
extra=("$@")
read -r -a shale_only <<< "${SHALE_FLAGS:-}"
[[ ${LIKE_DB_BENCH:-0} == 1 ]] && shale_only+=(--like_db_bench)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=${KEEP:-$work}
mkdir -p "$out"
: > "$out/load.txt"

flags=(--benchmarks="$benchmarks" --num="$num" --key_size=16 --value_size=100
  --compression_ratio=0.5 --compression_type=lz4 --bloom_bits=10 --cache_size=268435456
  --threads=1 --seek_nexts=10 --histogram=1 --report_interval_seconds=10)

cargo build --release -q -p shale
have_db_bench=$(command -v db_bench || true)
for i in $(seq "$runs"); do
  seed=$((1000 + i))
  echo "shale run $i: load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/load.txt"
  rm -rf "$work/shale-db"
  ./target/release/shale bench "${flags[@]}" --seed="$seed" --db="$work/shale-db" \
    --json_out="$out/shale-$i.json" "${extra[@]}" ${shale_only[@]+"${shale_only[@]}"} \
    > "$out/shale-$i.txt" 2> "$work/shale-$i.err" || { cat "$work/shale-$i.err" >&2; exit 1; }
  rm -rf "$work/shale-db"
  if [[ -n $have_db_bench ]]; then
    rm -rf "$work/rocksdb"
    echo "db_bench run $i: load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/load.txt"
    db_bench "${flags[@]}" --seed="$seed" --db="$work/rocksdb" \
      --report_file="$out/rocksdb-$i.csv" "${extra[@]}" \
      > "$out/rocksdb-$i.txt" 2> "$work/rocksdb-$i.err" || { cat "$work/rocksdb-$i.err" >&2; exit 1; }
    rm -rf "$work/rocksdb"
  fi
done

python3 - "$out" "$runs" "$benchmarks" <<'PY'
import re, statistics, sys, pathlib
out, runs, names = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")
line = re.compile(r"^(\w+)\s*:\s*([0-9.]+) micros/op (\d+) ops/sec")
pct = re.compile(r"^Percentiles: P50: ([0-9.]+) P75: ([0-9.]+) P99: ([0-9.]+)")
def parse(path):
    results, current = {}, None
    for text in path.read_text().splitlines():
        m = line.match(text)
        if m:
            current = m.group(1)
            results[current] = {"micros": float(m.group(2)), "ops": int(m.group(3))}
            continue
        m = pct.match(text)
        if m and current:
            results[current]["p99"] = float(m.group(3))
            current = None
    return results
def medians(prefix):
    files = [out / f"{prefix}-{i}.txt" for i in range(1, runs + 1)]
    parsed = [parse(f) for f in files if f.exists()]
    table = {}
    for name in names:
        rows = [p[name] for p in parsed if name in p]
        if rows:
            table[name] = {k: statistics.median([r[k] for r in rows if k in r])
                           for k in ("micros", "ops", "p99") if any(k in r for r in rows)}
    return table
shale, rocks = medians("shale"), medians("rocksdb")
print(f"medians of {runs} runs; ratio = shale ops/sec / db_bench ops/sec (> 1: Shale faster)")
print(f"{'benchmark':<17} {'shale us/op':>11} {'db_bench us/op':>14} {'shale ops/s':>12} "
      f"{'db_bench ops/s':>14} {'ratio':>6} {'shale P99':>9} {'db_bench P99':>12}")
for name in names:
    s, r = shale.get(name), rocks.get(name)
    if not s:
        continue
    fmt = lambda d, k, w, f: f"{d[k]:>{w}{f}}" if d and k in d else f"{'-':>{w}}"
    ratio = f"{s['ops'] / r['ops']:>5.2f}x" if r and r.get("ops") else f"{'-':>6}"
    print(f"{name:<17} {fmt(s,'micros',11,'.3f')} {fmt(r,'micros',14,'.3f')} "
          f"{fmt(s,'ops',12,'.0f')} {fmt(r,'ops',14,'.0f')} {ratio} "
          f"{fmt(s,'p99',9,'.2f')} {fmt(r,'p99',12,'.2f')}")
print()
print("load average (1, 5, 15 min) before each run; the machine is shared, so read the ratios")
print("against it:")
print((out / "load.txt").read_text(), end="")
PY
