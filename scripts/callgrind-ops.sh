#!/usr/bin/env bash
# Instructions per operation of `shale bench` workloads under callgrind (docs/benchmarks.md,
# "Profiles: instructions per operation"). Instruction counts do not depend on the machine's
# load, so a change can be measured on a shared machine where wall-clock times cannot.
#
# Usage: scripts/callgrind-ops.sh OUT_DIR [NUM] [BENCHMARKS] [READS]
#   defaults: 200,000 keys; fillrandom,fillseq,readrandom,seekrandom,readseq; READS = NUM
#   (--reads for the read benchmarks, and the divisor of Ir/op for them)
#   FILL=fillrandom,overwrite fills the read database with those benchmarks instead of
#   fillrandom alone (several flushes and compactions: tables on more than one level).
#   BIN=PATH runs that binary instead of building target/release/shale.
#   CACHE=BYTES sets --cache_size (default 268435456, which holds all of a 200,000-key
#   database; a few MiB makes the reads miss the block cache).
#   EXTRA="FLAGS" adds flags to every run (e.g. EXTRA=--open_files=1000).
#   KEEP_DB=DIR keeps a copy of the filled read database in DIR and reads a copy of DIR when
#   it exists, so runs before and after a read-side change read the same table files.
# Fill benchmarks start from a fresh database; the others read one database filled first
# (natively, fillrandom then flush, so reads go to a table) with --use_existing_db.
# Only the benchmark threads' work is counted (--toggle-collect on workloads::run_thread):
# not the open, the WAL replay or background flushes. readwhilewriting counts its readers
# only (workloads::read_random), so Ir/op is the cost of a get while the writer fills the
# memtable; valgrind runs one thread at a time, so how far the writer gets between two gets
# follows its scheduler, and the figure moves by a few percent from run to run. Prints "NAME Ir=TOTAL Ir/op=N" and keeps
# OUT_DIR/NAME.cg for callgrind_annotate (--inclusive=yes for the call tree).
# Needs: valgrind (apt-get install valgrind), cargo.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/callgrind-ops.sh OUT_DIR [NUM] [BENCHMARKS]}
num=${2:-200000}
benchmarks=${3:-fillrandom,fillseq,readrandom,seekrandom,readseq}
reads=${4:-$num}
fill=${FILL:-fillrandom}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(--num="$num" --key_size=16 --value_size=100 --compression_ratio=0.5
  --compression_type=lz4 --bloom_bits=10 --cache_size="${CACHE:-268435456}" --threads=1
  --seek_nexts=10 --seed=1001)
# shellcheck disable=SC2206 # EXTRA is a list of flags, split on spaces.
if [[ -n ${EXTRA:-} ]]; then flags+=($EXTRA); fi
if [[ -n ${BIN:-} ]]; then
  bin=$BIN
else
  cargo build --release -q -p shale
  bin=./target/release/shale
fi
filled=
for name in ${benchmarks//,/ }; do
  case $name in
    fillseq | fillrandom) db=$work/fresh; extra=(); ops=$num; rm -rf "$db" ;;
    *)
      db=$work/read
      if [[ -z $filled && -n ${KEEP_DB:-} && -d $KEEP_DB ]]; then
        cp -r "$KEEP_DB" "$db"
        filled=1
      elif [[ -z $filled ]]; then
        "$bin" bench --benchmarks="$fill",flush,waitforcompaction "${flags[@]}" --db="$db" \
          > /dev/null 2>&1
        if [[ -n ${KEEP_DB:-} ]]; then cp -r "$db" "$KEEP_DB"; fi
        filled=1
      fi
      extra=(--use_existing_db --reads="$reads"); ops=$reads ;;
  esac
  toggle='*workloads*run_thread*'
  if [[ $name == readwhilewriting ]]; then toggle='*workloads*read_random*'; fi
  valgrind --tool=callgrind --toggle-collect="$toggle" \
    --callgrind-out-file="$out/$name.cg" \
    "$bin" bench --benchmarks="$name" "${flags[@]}" --db="$db" "${extra[@]}" \
    > "$out/$name.txt" 2> "$out/$name.err"
  ir=$(grep -m1 'Collected :' "$out/$name.err" | awk '{print $NF}')
  echo "$name Ir=$ir Ir/op=$((ir / ops))"
done
