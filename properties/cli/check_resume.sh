#!/usr/bin/env bash
# Demonstrates that `nsv sweep --resume` survives a kill -9 in the middle of a sweep:
#   1. run a sweep uninterrupted                         -> full.csv
#   2. run the same sweep again and kill -9 it half-way  -> killed.csv.partial (the rows done so
#      far; killed.csv itself is only written, atomically, by a run that completes), and check
#      that a killed run over an existing file leaves that file as it was
#   3. also tear the last row of a copy in half, as a crash inside a write would -> torn.csv.partial
#   4. resume both with --resume, and check that exactly the missing cases ran
#   5. compare with full.csv: identical except the `seconds` column (the last one: wall time,
#      the only column that legitimately differs between runs).
# `--strategy all` is every strategy of the record table; per_head is skipped (no --heads). The
# fused column is part of the case key: gate_up cases are their own rows (dim 0 only).
# Also checks that bad input leaves an existing output file untouched, and that the rows do not
# depend on the thread count.
#
# Usage: properties/cli/check_resume.sh [path/to/nsv]     (default: $NSV or build/cli/nsv)
# Exit status 0 when every check passes.
set -euo pipefail

NSV=${1:-${NSV:-build/cli/nsv}}
[[ -x $NSV ]] || { echo "check_resume: no nsv binary at $NSV (build it, or pass its path)" >&2; exit 2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nsv-resume.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

SWEEP=(sweep --shapes 256x256,512x1024 --tp 1,2,4,8 --axis 0,1 --kernel gram,standard
       --strategy all --spectrum gaussian,lowrank:16 --fused none,gate_up
       --seeds 1 --quiet)
fail=0
pass() { echo "PASS: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

# The CSV without its last column (seconds).
strip_seconds() { awk -F, 'BEGIN{OFS=","} {NF=NF-1; print}' "$1"; }

echo "== 1. uninterrupted run"
t0=$(date +%s.%N)
"$NSV" "${SWEEP[@]}" --threads 2 --out "$WORK/full.csv" >"$WORK/full.log"
t1=$(date +%s.%N)
total=$(( $(wc -l <"$WORK/full.csv") - 1 ))
printf '%d cases in %.1f s\n' "$total" "$(echo "$t1 - $t0" | bc)"

echo "== 2. the same sweep, killed with SIGKILL once about half of the rows are written"
echo "precious" >"$WORK/killed.csv"  # an existing file the killed run must leave alone
"$NSV" "${SWEEP[@]}" --threads 2 --out "$WORK/killed.csv" >"$WORK/killed.log" 2>&1 &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
  rows=0
  [[ -f $WORK/killed.csv.partial ]] && rows=$(( $(wc -l <"$WORK/killed.csv.partial") - 1 ))
  (( rows >= total / 2 )) && break
  sleep 0.05
done
if kill -9 "$pid" 2>/dev/null; then
  wait "$pid" 2>/dev/null || true
  rows=$(( $(wc -l <"$WORK/killed.csv.partial") - 1 ))
  echo "killed pid $pid with $rows of $total rows written"
  (( rows < total )) && pass "the sweep was interrupted part-way ($rows/$total rows)" || bad "the sweep finished before the kill"
else
  wait "$pid" || true
  bad "the sweep finished before it could be killed (make it larger)"
fi
[[ $(cat "$WORK/killed.csv") == precious ]] && pass "the existing killed.csv was left as it was by the killed run" \
  || bad "the killed run changed the existing killed.csv"
rm "$WORK/killed.csv"

echo "== 3. a torn last row, as a crash inside write(2) would leave"
cp "$WORK/killed.csv.partial" "$WORK/torn.csv.partial"
# Remove the last complete row and put back only its first half (no newline).
last=$(tail -n 1 "$WORK/torn.csv.partial")
head -n -1 "$WORK/torn.csv.partial" >"$WORK/torn.tmp"
printf '%s' "${last:0:$(( ${#last} / 2 ))}" >>"$WORK/torn.tmp"
mv "$WORK/torn.tmp" "$WORK/torn.csv.partial"
echo "torn.csv.partial ends in: ...$(tail -c 40 "$WORK/torn.csv.partial")   (no newline)"
done_killed=$(( $(wc -l <"$WORK/killed.csv.partial") - 1 ))
done_torn=$(( $(wc -l <"$WORK/torn.csv.partial") - 1 ))  # complete lines only

echo "== 4. resume both"
"$NSV" "${SWEEP[@]}" --out "$WORK/killed.csv" --resume | tee "$WORK/resume1.log" | grep -E "cases|dropped"
"$NSV" "${SWEEP[@]}" --out "$WORK/torn.csv" --resume | tee "$WORK/resume2.log" | grep -E "cases|dropped"
grep -q "dropped a partial last line" "$WORK/resume2.log" && pass "the torn last row was detected and dropped" \
  || bad "the torn row was not reported"
# The resumed runs ran exactly the cases missing from the partial files (the summary line says
# "N cases: R run, K resumed ...").
for pair in "resume1:$done_killed" "resume2:$done_torn"; do
  log=${pair%%:*} done=${pair##*:}
  ran=$(sed -nE 's/^[0-9]+ cases: ([0-9]+) run, ([0-9]+) resumed.*/\1 \2/p' "$WORK/$log.log")
  [[ $ran == "$(( total - done )) $done" ]] && pass "$log ran exactly the $(( total - done )) missing cases and kept $done" \
    || bad "$log: ran/resumed = '$ran', expected $(( total - done )) run and $done resumed"
done
for f in killed torn; do
  [[ -e $WORK/$f.csv.partial ]] && bad "$f.csv.partial was left behind by a completed run" || pass "$f.csv.partial removed on completion"
done

echo "== 5. compare with the uninterrupted run (every column but seconds)"
for f in killed torn; do
  if cmp -s <(strip_seconds "$WORK/full.csv") <(strip_seconds "$WORK/$f.csv"); then
    pass "$f.csv after --resume == full.csv ($(wc -l <"$WORK/$f.csv") lines, same row order, same bytes but seconds)"
  else
    bad "$f.csv differs from full.csv:"
    diff <(strip_seconds "$WORK/full.csv") <(strip_seconds "$WORK/$f.csv") | head -5
  fi
done
if cmp -s "$WORK/full.csv" "$WORK/killed.csv"; then
  echo "note: even the seconds column matched (unusual)"
else
  echo "note: the seconds column differs, as documented (wall time of each case)"
fi

echo "== 6. bad input: clear message, non-zero exit, output untouched"
cp "$WORK/full.csv" "$WORK/keep.csv"
for args in "--kernel bogus" "--tp 0" "--shapes 512by1024" "--spectrum lowrank:x" "--strategy nope"; do
  # shellcheck disable=SC2086
  if "$NSV" sweep --shapes 256x256 --out "$WORK/keep.csv" $args >"$WORK/bad.log" 2>&1; then
    bad "'$args' was accepted"
  elif cmp -s "$WORK/full.csv" "$WORK/keep.csv"; then
    pass "'$args' -> exit non-zero, file untouched: $(head -c 150 "$WORK/bad.log" | tr '\n' ' ')"
  else
    bad "'$args' modified the output file"
  fi
done

echo "== 7. thread-count independence: the same sweep on 1 thread"
"$NSV" "${SWEEP[@]}" --threads 1 --out "$WORK/one.csv" >/dev/null
if cmp -s <(strip_seconds "$WORK/full.csv") <(strip_seconds "$WORK/one.csv"); then
  pass "1 thread == 2 threads (every column but seconds)"
else
  bad "1 thread and 2 threads differ"
fi

(( fail == 0 )) && echo "ALL CHECKS PASSED" || echo "SOME CHECKS FAILED"
exit "$fail"
