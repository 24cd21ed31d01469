#!/usr/bin/env bash
# Writes a seed corpus for every cargo-fuzz target in fuzz/ (fuzz/README.md, "Seed corpus"),
# from real code paths: each crate's fuzz smoke test builds valid inputs with the writers the
# product uses (tables with every codec, checksum, index version and filter kind; a real
# database's WALs, MANIFESTs, CURRENT, OPTIONS files, blob files and tables with blob
# references; the batches and edits their records carry; rows and table definitions as the
# catalog encodes them; the packets real MySQL clients send), checks that they decode, and
# with SHALE_FUZZ_SEEDS set writes them to <dir>/<target>/.
#
# Usage: scripts/fuzz-seeds.sh [DIR]        (default: fuzz/corpus, where cargo fuzz looks)
# Then:  cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run table -- -max_total_time=60
# Needs: cargo. The server seeds need the mariadb client or /usr/bin/python3 with PyMySQL
# (recorded through a relay); without them that test writes none.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-$PWD/fuzz/corpus}
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
mkdir -p "$dir"
export CARGO_PROFILE_DEV_DEBUG=0 CARGO_PROFILE_TEST_DEBUG=0
export SHALE_FUZZ_SEEDS=$dir
cargo test -q -p shale-sst --features testing --test fuzz_smoke
cargo test -q -p shale-engine --test fuzz_smoke
cargo test -q -p shale-table --test fuzz_smoke
cargo test -q -p shale-server --test fuzz_seeds
for target in fuzz/fuzz_targets/*.rs; do
  name=$(basename "$target" .rs)
  count=$(find "$dir/$name" -type f 2>/dev/null | wc -l)
  printf '%-18s %5d seeds\n' "$name" "$count"
  if [[ $count -eq 0 ]]; then
    echo "no seeds for $name" >&2
    exit 1
  fi
done
