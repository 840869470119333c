#!/usr/bin/env bash
# A sweep spread over MPI processes (`mpirun -np N nsv sweep ...`) against the single-process one,
# and its resume after a kill -9:
#   1. the sweep in one process on one thread                      -> one.csv
#   2. the same sweep over 2 MPI processes, uninterrupted          -> mpi.csv == one.csv
#   2b. ranks started with different --steps                       -> refused by every rank, no file
#   3. over 2 processes, one rank killed with SIGKILL half-way     -> resume over 2 processes:
#      exactly the missing cases run, and the file == one.csv
#   4. the same with mpirun itself killed                          -> likewise
# "==" is every column but `seconds` (the last one: wall time), which legitimately differs.
#
# Usage: properties/cli/check_mpi_sweep.sh [--quick] [path/to/nsv]   (--quick: steps 1 and 2 only, for the gate)
set -euo pipefail
quick=0
if [[ ${1:-} == --quick ]]; then quick=1; shift; fi
NSV=${1:-${NSV:-build/cli/nsv}}
[[ -x $NSV ]] || { echo "check_mpi_sweep: no nsv binary at $NSV (build it, or pass its path)" >&2; exit 2; }
NSV=$(realpath "$NSV")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nsv-mpi-sweep.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

if ((quick)); then
  SWEEP=(sweep --shapes 48x64,96x32 --tp 1,2,4 --axis 0,1 --kernel gram,standard --strategy all --seeds 2 --quiet)
else
  SWEEP=(sweep --shapes 256x256,512x1024 --tp 1,2,4,8 --axis 0,1 --kernel gram,standard --strategy all
         --spectrum gaussian,lowrank:16 --seeds 1 --quiet)
fi
fail=0
pass() { echo "PASS: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
strip_seconds() { awk -F, 'BEGIN{OFS=","} {NF=NF-1; print}' "$1"; }
same_as_one() {
  if cmp -s <(strip_seconds "$WORK/one.csv") <(strip_seconds "$1"); then
    pass "$2: $(basename "$1") == one.csv ($(wc -l <"$1") lines, same order, same bytes but seconds)"
  else
    bad "$2: $(basename "$1") differs from one.csv:"
    diff <(strip_seconds "$WORK/one.csv") <(strip_seconds "$1") | head -5
  fi
}

echo "== 1. one process, one thread"
"$NSV" "${SWEEP[@]}" --threads 1 --out "$WORK/one.csv" | tail -1
total=$(( $(wc -l <"$WORK/one.csv") - 1 ))

echo "== 2. two MPI processes"
mpirun --oversubscribe -np 2 "$NSV" "${SWEEP[@]}" --out "$WORK/mpi.csv" | tail -1
same_as_one "$WORK/mpi.csv" "2 processes"
echo "== 2b. ranks started with different arguments (rank 1: --steps 3) are refused, nothing written"
if mpirun --oversubscribe -np 1 "$NSV" "${SWEEP[@]}" --steps 5 --out "$WORK/mix.csv" : \
     -np 1 "$NSV" "${SWEEP[@]}" --steps 3 --out "$WORK/mix.csv" >"$WORK/mix.log" 2>&1; then
  bad "ranks with different --steps ran"
elif ! grep -q "rank 1 of 2 was started with another plan than rank 0: steps is \[3\] there and \[5\] on rank 0" "$WORK/mix.log"; then
  bad "ranks with different --steps: not refused by name: $(tail -c 400 "$WORK/mix.log")"
elif [[ -e $WORK/mix.csv || -e $WORK/mix.csv.partial ]]; then
  bad "ranks with different --steps: a file was written"
else
  pass "ranks with different --steps refused, nothing written"
fi
((quick)) && { ((fail == 0)) && echo "ALL CHECKS PASSED" || echo "SOME CHECKS FAILED"; exit "$fail"; }

# The pid of world rank $1 of the running sweep job (its environment names its rank).
rank_pid() {
  local p
  for p in $(pgrep -f "$NSV sweep"); do
    [[ $(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -x "OMPI_COMM_WORLD_RANK=$1") ]] && { echo "$p"; return; }
  done
}

kill_half_way() {  # $1: name, $2: what to kill (rank1 | mpirun)
  local name=$1 victim=$2 out="$WORK/$1.csv"
  mpirun --oversubscribe -np 2 "$NSV" "${SWEEP[@]}" --out "$out" >"$WORK/$name.log" 2>&1 &
  local launcher=$! rows=0
  while kill -0 "$launcher" 2>/dev/null; do
    rows=0
    [[ -f $out.partial ]] && rows=$(( $(wc -l <"$out.partial") - 1 ))
    (( rows >= total / 2 )) && break
    sleep 0.05
  done
  local pid=$launcher
  [[ $victim == rank1 ]] && pid=$(rank_pid 1)
  if [[ -n $pid ]] && kill -9 "$pid" 2>/dev/null; then
    wait "$launcher" 2>/dev/null || true
    # No rank may outlive the job and keep writing while the resume runs.
    for _ in $(seq 100); do pgrep -f "$NSV sweep" >/dev/null || break; sleep 0.1; done
    pgrep -f "$NSV sweep" >/dev/null && bad "$name: a rank outlived the killed job" && pkill -9 -f "$NSV sweep"
    rows=$(( $(wc -l <"$out.partial") - 1 ))
    (( rows < total )) && pass "$name: killed $victim (pid $pid) with $rows of $total rows written" \
      || bad "$name: the sweep finished before the kill"
  else
    wait "$launcher" || true
    bad "$name: the sweep finished before it could be killed (make it larger)"
  fi
  local done_rows=$(( $(wc -l <"$out.partial") - 1 ))
  mpirun --oversubscribe -np 2 "$NSV" "${SWEEP[@]}" --out "$out" --resume >"$WORK/$name.resume.log"
  local ran
  ran=$(sed -nE 's/^[0-9]+ cases: ([0-9]+) run, ([0-9]+) resumed.*/\1 \2/p' "$WORK/$name.resume.log")
  [[ $ran == "$(( total - done_rows )) $done_rows" ]] && pass "$name: the resume ran exactly the $(( total - done_rows )) missing cases and kept $done_rows" \
    || bad "$name: ran/resumed = '$ran', expected $(( total - done_rows )) run and $done_rows resumed"
  same_as_one "$out" "$name after --resume"
}

echo "== 3. one rank killed with SIGKILL half-way, then --resume"
kill_half_way rank_killed rank1
echo "== 4. mpirun killed with SIGKILL half-way, then --resume"
kill_half_way mpirun_killed mpirun

((fail == 0)) && echo "ALL CHECKS PASSED" || echo "SOME CHECKS FAILED"
exit "$fail"
