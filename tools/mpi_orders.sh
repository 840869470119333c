#!/usr/bin/env bash
# The Open MPI reduction-order table: for each of coll/tuned's all-reduce algorithms (forced with
# --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm K; K = 0 is Open MPI's
# own decision), each tp and message size, which simulated reduction order (rank, reverse, ring,
# tree) MPI_Allreduce's fp32 sums equal bit for bit, and otherwise how far they are (fp32 ULPs).
#
#   tools/mpi_orders.sh [--out reports/mpi] [--build build]
#
# Writes OUT/allreduce_orders.csv (one row per algorithm x tp x size) and OUT/allreduce_orders.json
# (the same with the Open MPI version), atomically. Loopback only, oversubscribed (tp up to 8 on
# any machine). ~1 minute.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$repo/reports/mpi"
build="${NSV_BUILD_DIR:-$repo/build}"
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "mpi_orders.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
probe="$build/tools/mpi_orders/nsv_mpi_orders"
[ -x "$probe" ] || { echo "mpi_orders.sh: $probe is missing: build first (tools/setup.sh)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
names=(default basic_linear nonoverlapping recursive_doubling ring segmented_ring rabenseifner)
mkdir -p "$out"
tmp=$(mktemp "$out/.allreduce_orders.XXXXXX")
trap 'rm -f "$tmp"' EXIT
for k in 0 1 2 3 4 5 6; do
  for tp in 2 3 4 8; do
    # small: 13 elements (52 B), large: 262147 elements (1 MiB; past the ring algorithms'
    # segment size), neither a multiple of tp so uneven blocks occur
    for n in 13 262147; do
      mca=()
      ((k > 0)) && mca=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm "$k")
      line=$(mpirun --oversubscribe -np "$tp" "${mca[@]}" "$probe" --elements "$n")
      printf '{"algorithm":%d,"name":"%s","result":%s}\n' "$k" "${names[$k]}" "$line" >>"$tmp"
      echo "mpi_orders: algorithm $k (${names[$k]}) tp $tp elements $n: $(echo "$line" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["matching_orders"])')" >&2
    done
  done
done
version=$(mpirun --version | head -1)
/usr/bin/python3 "$repo/tools/report/mpi_orders_table.py" "$tmp" "$version" "$out"
