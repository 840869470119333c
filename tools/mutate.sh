#!/usr/bin/env bash
# Mutation check: proves the gate catches realistic bugs.
#
# Copies the working tree (tracked and untracked files, no build outputs, no .git) to a scratch
# folder, builds it once, checks the unmutated gate passes, then for each properties/mutants/*.patch:
# applies it to the scratch copy, rebuilds incrementally, runs the gate, records which properties
# failed (killed the mutant), and reverts the patch. The working copy is never modified.
#
#   tools/mutate.sh [--scratch DIR] [--out reports/mutation_handwritten.md] [MUTANT.patch ...]
#
# Not part of the default gate: it runs the whole gate once per mutant (tens of minutes).
#
# The mechanical sample (mutants generated from the sources, chosen with a seed, scored in
# reports/mutation.md) is tools/mutation/sample.py; these forward to it:
#   tools/mutate.sh --sample N [--seed S] [--scratch DIR] [--time-budget SECONDS]
#   tools/mutate.sh --rerun-survivors | --render-only
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case "${1:-}" in
  --sample|--rerun-survivors|--render-only|--list) exec /usr/bin/python3 "$repo/tools/mutation/sample.py" "$@" ;;
esac
scratch="${TMPDIR:-/tmp}/nsv-mutants"
out="$repo/reports/mutation_handwritten.md"
mutants=()
while (($#)); do
  case "$1" in
    --scratch) scratch="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "mutate.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) mutants+=("$(realpath "$1")"); shift ;;
  esac
done
((${#mutants[@]})) || mapfile -t mutants < <(ls "$repo"/properties/mutants/*.patch)
case "$scratch" in "$repo"|"$repo"/*) echo "mutate.sh: the scratch folder must be outside the repository" >&2; exit 2 ;; esac

"$repo/tools/setup.sh" >/dev/null  # dependencies present, and the real tree builds
tree="$scratch/tree"
build="$scratch/build"
# A fresh copy each run; tar keeps modification times, so the scratch build stays incremental.
rm -rf "$tree" && mkdir -p "$tree"
(cd "$repo" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -x -C "$tree"
[ -f "$build/build.ninja" ] || cmake -S "$tree" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNSV_WITH_CUDA=OFF >/dev/null

run_gate() {  # $1: log file. Prints the failed Boost test cases (suite/case), one per line.
  ctest --test-dir "$build" -L gate -j "$(nproc)" --output-on-failure --timeout 900 >"$1" 2>&1 || true
  { grep -oE 'error: in "[^"]+"' "$1" || true; } | sed -E 's/error: in "([^"]+)"/\1/' | sort -u
  { grep -E '^\s*[0-9]+/[0-9]+ Test +#[0-9]+: .*(Failed|Timeout|Exception)' "$1" || true; } |
    sed -E 's/.*: ([^ ]+) .*/ctest:\1/' | sort -u
}

echo "mutate: building the unmutated copy in $build" >&2
cmake --build "$build" -j "$(nproc)" >/dev/null
baseline=$(run_gate "$scratch/baseline.log")
if [ -n "$baseline" ]; then
  echo "mutate: the unmutated gate fails; fix that first:" >&2
  echo "$baseline" >&2
  exit 1
fi

rows=()
killed_all=1
for m in "${mutants[@]}"; do
  name=$(basename "$m" .patch)
  what=$(sed -n 's/^# mutant: //p' "$m" | head -1)
  echo "mutate: $name - $what" >&2
  if ! patch -s -p1 -d "$tree" --forward <"$m"; then
    rows+=("| $name | $what | **patch does not apply** | |"); killed_all=0; continue
  fi
  if ! cmake --build "$build" -j "$(nproc)" >"$scratch/$name.build.log" 2>&1; then
    verdict="does not compile (not a valid mutant)"; killers=""
    killed_all=0
  else
    killers=$(run_gate "$scratch/$name.log" | paste -sd ';' - | sed 's/;/<br>/g')
    if [ -n "$killers" ]; then verdict="killed"; else verdict="**SURVIVED**"; killed_all=0; fi
  fi
  patch -s -p1 -R -d "$tree" <"$m"
  rows+=("| $name | $what | $verdict | $killers |")
done
cmake --build "$build" -j "$(nproc)" >/dev/null  # leave the scratch build unmutated

{
  echo "# Mutation check"
  echo
  echo "Each mutant is a realistic one-line-class bug, applied to a scratch copy of the tree; the"
  echo "gate (\`ctest -L gate\`) is run on it and the properties that failed are listed. A mutant"
  echo "that no property kills would be a hole in the gate."
  echo
  echo "Produced by \`tools/mutate.sh\` at commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
       "on $(date -u +%Y-%m-%d)."
  echo
  echo "| mutant | bug | verdict | killed by (Boost test cases / ctest tests) |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "mutate: wrote $out" >&2
[ "$killed_all" = 1 ]
