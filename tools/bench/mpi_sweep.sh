#!/usr/bin/env bash
# Sweep throughput over MPI processes: the same `nsv sweep` in one process on one thread and over
# 2 MPI processes, alternated (1, 2, 1, 2, ...) REPEATS times so both see the same machine load,
# each timed end to end (process start, MPI start-up and the final CSV included). Prints and
# writes OUT (default reports/mpi/sweep_throughput.json): every time, the medians and their ratio.
#
#   tools/bench/mpi_sweep.sh [--repeats 3] [--out FILE] [--nsv build/tools/nsv/nsv]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
repeats=3
out="$repo/reports/mpi/sweep_throughput.json"
NSV="${NSV_BUILD_DIR:-$repo/build}/tools/nsv/nsv"
while (($#)); do
  case "$1" in
    --repeats) repeats="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --nsv) NSV="$2"; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "mpi_sweep.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "${TMPDIR:-/tmp}/nsv-mpi-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
SWEEP=(sweep --shapes 256x256,384x512 --tp 1,2,4,8 --axis 0,1 --kernel gram,standard --strategy all
       --spectrum gaussian,lowrank:16 --seeds 1 --quiet)
seconds() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
one=() two=()
for ((i = 0; i < repeats; ++i)); do
  one+=("$(seconds "$NSV" "${SWEEP[@]}" --threads 1 --out "$work/one.csv")")
  two+=("$(seconds mpirun --oversubscribe -np 2 "$NSV" "${SWEEP[@]}" --out "$work/two.csv")")
  echo "repeat $((i + 1)): 1 process ${one[-1]} s, 2 processes ${two[-1]} s" >&2
done
cases=$(( $(wc -l <"$work/one.csv") - 1 ))
mkdir -p "$(dirname "$out")"
/usr/bin/python3 - "$out" "$cases" "$(nproc)" "${one[*]}" "${two[*]}" <<'PY'
import json, os, statistics, sys
out, cases, cores, one, two = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(), sys.argv[5].split()
one, two = [float(x) for x in one], [float(x) for x in two]
r = {"schema": "nsv.mpi_sweep_bench/1", "cases": cases, "cores": cores,
     "sweep": "--shapes 256x256,384x512 --tp 1,2,4,8 --axis 0,1 --kernel gram,standard --strategy all "
              "--spectrum gaussian,lowrank:16 --seeds 1",
     "one_process_seconds": one, "two_processes_seconds": two,
     "median_one": statistics.median(one), "median_two": statistics.median(two)}
r["speedup"] = r["median_one"] / r["median_two"]
tmp = out + ".tmp"
with open(tmp, "w") as f:
    json.dump(r, f, indent=1)
    f.write("\n")
os.replace(tmp, out)
print(f"{cases} cases: 1 process median {r['median_one']:.2f} s, 2 MPI processes median {r['median_two']:.2f} s: "
      f"{r['speedup']:.2f}x ({cores} cores)")
PY
