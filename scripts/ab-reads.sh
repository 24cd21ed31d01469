#!/usr/bin/env bash
# Point-lookup A/B of two `shale` binaries on one filled database (docs/benchmarks.md, "Reads
# without shared writes"). Each run reads a fresh copy of DB; the variants alternate.
#
# Usage: BEFORE=bin AFTER=bin DB=dir scripts/ab-reads.sh
#   DB: a database filled by `shale bench` with the flags below (scripts/callgrind-ops.sh's
#       KEEP_DB=DIR makes one: 200,000 random writes flushed to one table).
#   ROUNDS (default 5), READS per run (default 5,000,000), THREADS (default "1 2").
#   AFTER runs twice: --open_files=-1 (tables pinned) and --open_files=1000 (table cache).
# Prints "round threads benchmark variant <bench result line>"; take medians of ops/sec.
set -euo pipefail
: "${BEFORE:?} ${AFTER:?} ${DB:?}"
flags=(--num=200000 --key_size=16 --value_size=100 --compression_ratio=0.5 --compression_type=lz4
  --bloom_bits=10 --cache_size=268435456 --seek_nexts=10 --seed=1001 --use_existing_db
  --reads="${READS:-5000000}")
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
for round in $(seq 1 "${ROUNDS:-5}"); do
  for threads in ${THREADS:-1 2}; do
    for bench in readrandom seekrandom; do
      for variant in before after-unl after-1000; do
        rm -rf "$copy/db"
        cp -r "$DB" "$copy/db"
        case $variant in
          before) bin=$BEFORE; extra=() ;;
          after-unl) bin=$AFTER; extra=(--open_files=-1) ;;
          after-1000) bin=$AFTER; extra=(--open_files=1000) ;;
        esac
        line=$("$bin" bench --benchmarks="$bench" "${flags[@]}" "${extra[@]}" --threads="$threads" \
          --db="$copy/db" 2>&1 | tr '\r' '\n' | grep -E "^$bench +:" | head -1)
        echo "$round $threads $bench $variant $line"
      done
    done
  done
done
