#!/usr/bin/env bash
# Runs `shale bench sst` and RocksDB's db_bench (Debian rocksdb-tools, 7.8.3) on the same
# machine with the same data shape, RUNS times each, and prints medians and ratios.
# Usage: scripts/bench-sst.sh [RUNS] [NUM]     (defaults: 3 runs, 1,000,000 keys)
# Needs: cargo; db_bench (apt-get install rocksdb-tools) for the anchor column.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
num=${2:-1000000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release -q -p shale
for i in $(seq "$runs"); do
  ./target/release/shale bench sst --num "$num" --dir "$work/shale" --json > "$work/shale-$i.json"
done
if command -v db_bench >/dev/null; then
  for i in $(seq "$runs"); do
    rm -rf "$work/rocksdb"
    # One sorted run of tables (fillseq + compact), then cached reads: the closest db_bench
    # shape to reading one table file. db_bench reads go through the whole DB (memtable,
    # version, table cache), so the ratio is indicative, not like for like.
    db_bench --benchmarks=fillseq,compact,readrandom,readseq,readreverse --num="$num" \
      --reads="$num" --key_size=16 --value_size=100 --compression_type=lz4 \
      --compression_ratio=0.5 --bloom_bits=10 --cache_size=268435456 --block_size=4096 \
      --threads=1 --target_file_size_base=1073741824 --db="$work/rocksdb" \
      > "$work/rocksdb-$i.txt" 2>&1
  done
fi

python3 - "$work" "$runs" <<'PY'
import json, re, statistics, sys, pathlib
work, runs = pathlib.Path(sys.argv[1]), int(sys.argv[2])
shale = [json.loads((work / f"shale-{i}.json").read_text()) for i in range(1, runs + 1)]
def med(values): return statistics.median(values)
def micros(phase): return med([r[phase]["micros_per_op"] for r in shale])
rows = {
    "write (1 table)": med([r["write"]["micros_per_op"] for r in shale]),
    "readrandom": micros("readrandom"),
    "readseq": micros("readseq"),
    "readreverse": micros("readreverse"),
}
rocks = {}
files = sorted(work.glob("rocksdb-*.txt"))
for name in ["fillseq", "readrandom", "readseq", "readreverse"]:
    vals = []
    for f in files:
        m = re.search(rf"^{name}\s*:\s*([0-9.]+) micros/op", f.read_text(), re.M)
        if m: vals.append(float(m.group(1)))
    if vals: rocks[name] = med(vals)
# A table writer against a whole DB fill is not comparable: no anchor for the write row.
anchor = {"write (1 table)": None, "readrandom": "readrandom", "readseq": "readseq", "readreverse": "readreverse"}
print(f"medians of {runs} runs, micros/op (lower is better)")
print(f"{'phase':<16} {'shale':>10} {'db_bench':>10} {'db_bench/shale':>15}")
for phase, ours in rows.items():
    theirs = rocks.get(anchor[phase]) if anchor[phase] else None
    ratio = f"{theirs / ours:.2f}x" if theirs else "-"
    print(f"{phase:<16} {ours:>10.3f} {theirs if theirs else float('nan'):>10.3f} {ratio:>15}")
print()
print("bloom false positives:", ", ".join(f"{r['bloom']['rate'] * 100:.4f}%" for r in shale))
for entry in shale[0]["sizes"]:
    print(f"size {entry['compression']:<10} {entry['file_size']:>11} bytes  {entry['ratio']:.3f} of raw")
PY
