#!/usr/bin/env bash
# Sweep throughput over MPI processes, measured side by side, REPEATS rounds of four timings each
# (so that every arm sees the same machine load), each timed end to end:
#   one       the sweep in one process on one thread;
#   two       the same sweep over 2 MPI processes (process start, MPI start-up, the work pool, the
#             final CSV included);
#   ceiling   two copies of the one-process sweep started at once, each on half of the cases
#             (one spectrum each): what this machine gives two processes that never talk;
#   startup   `mpirun -np 2 nsv --help`: the fixed cost of an MPI job, whatever its sweep.
# Prints and writes OUT (default reports/mpi/sweep_throughput.json): every time, the medians and
# the ratios one/two (the speedup) and one/ceiling.
#
#   tools/bench/mpi_sweep.sh [--repeats 3] [--out FILE] [--nsv build/cli/nsv] [--shapes LIST]
#   (default shapes 512x512,512x1024: about 35 s in one process on this 2-core machine)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
repeats=3
out="$repo/reports/mpi/sweep_throughput.json"
NSV="${NSV_BUILD_DIR:-$repo/build}/cli/nsv"
shapes=512x512,512x1024
while (($#)); do
  case "$1" in
    --repeats) repeats="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --nsv) NSV="$2"; shift 2 ;;
    --shapes) shapes="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "mpi_sweep.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ $repeats =~ ^[1-9][0-9]*$ ]] || { echo "mpi_sweep.sh: --repeats needs a positive integer, got '$repeats'" >&2; exit 2; }
[ -x "$NSV" ] || { echo "mpi_sweep.sh: no nsv at $NSV (build first: ./tools/setup.sh, or pass --nsv)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "${TMPDIR:-/tmp}/nsv-mpi-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Two spectra, so that the ceiling arm can give each copy one of them: the same cases in all arms.
spectra=(gaussian lowrank:16)
both_spectra=$(IFS=,; echo "${spectra[*]}")
SWEEP=(sweep --shapes "$shapes" --tp 1,2,4,8 --axis 0,1 --kernel gram,standard --strategy all --seeds 1 --quiet)
seconds() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
pair() {  # both halves at once; the time until the later one ends
  "$NSV" "${SWEEP[@]}" --spectrum "${spectra[0]}" --threads 1 --out "$work/half1.csv" &
  local p=$!
  "$NSV" "${SWEEP[@]}" --spectrum "${spectra[1]}" --threads 1 --out "$work/half2.csv"
  wait "$p"
}
one=() two=() ceiling=() startup=()
for ((i = 0; i < repeats; ++i)); do
  one+=("$(seconds "$NSV" "${SWEEP[@]}" --spectrum "$both_spectra" --threads 1 --out "$work/one.csv")")
  two+=("$(seconds mpirun --oversubscribe -np 2 "$NSV" "${SWEEP[@]}" --spectrum "$both_spectra" --out "$work/two.csv")")
  ceiling+=("$(seconds pair)")
  startup+=("$(seconds mpirun --oversubscribe -np 2 "$NSV" --help)")
  echo "repeat $((i + 1)): 1 process ${one[-1]} s, 2 MPI processes ${two[-1]} s, 2 independent halves ${ceiling[-1]} s, MPI start-up ${startup[-1]} s" >&2
done
cases=$(( $(wc -l <"$work/one.csv") - 1 ))
mkdir -p "$(dirname "$out")"
sweep_text="${SWEEP[*]:1} --spectrum $both_spectra"
/usr/bin/python3 - "$out" "$cases" "$(nproc)" "$sweep_text" "${one[*]}" "${two[*]}" "${ceiling[*]}" "${startup[*]}" <<'PY'
import json, os, statistics, sys
out, cases, cores, sweep = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
arms = {name: [float(x) for x in sys.argv[5 + k].split()] for k, name in enumerate(["one", "two", "ceiling", "startup"])}
med = {k: statistics.median(v) for k, v in arms.items()}
r = {"schema": "nsv.mpi_sweep_bench/2", "cases": cases, "cores": cores, "sweep": sweep,
     "one_process_seconds": arms["one"], "two_processes_seconds": arms["two"],
     "two_independent_halves_seconds": arms["ceiling"], "mpi_startup_seconds": arms["startup"],
     "median_one": med["one"], "median_two": med["two"], "median_ceiling": med["ceiling"],
     "median_startup": med["startup"],
     "speedup": med["one"] / med["two"], "ceiling_speedup": med["one"] / med["ceiling"]}
tmp = out + ".tmp"
with open(tmp, "w") as f:
    json.dump(r, f, indent=1)
    f.write("\n")
os.replace(tmp, out)
print(f"{cases} cases: 1 process median {med['one']:.2f} s, 2 MPI processes {med['two']:.2f} s: {r['speedup']:.2f}x; "
      f"2 independent processes on half each {med['ceiling']:.2f} s: {r['ceiling_speedup']:.2f}x; "
      f"MPI start-up {med['startup']:.2f} s ({cores} cores)")
PY
