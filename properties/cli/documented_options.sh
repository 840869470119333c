#!/usr/bin/env bash
# Documented options do what their --help says, at their limits (issue 13: mutation survivors
# showed options that could vanish or move a bound with no test failing):
#   - every range `--help` prints as [lo - hi] is inclusive: hi is accepted, hi + 1 refused;
#   - nsv shard --json has exactly the keys README lists;
#   - the sweep's norm-overflow rule is exact at fp16's largest finite value;
#   - a sweep row's traffic and FLOPs are the maxima over ranks of nsv shard's per-rank figures;
#   - the commands that take one tensor-parallel degree (shard, step, sweep, diagnose) take the
#     same ones: their --help ranges for --tp agree;
#   - the generated-model options of `nsv step` shape the model: with --kv-heads K and
#     --head-dim D, k_proj and v_proj have K x D rows (Llama's layout, README "nsv step");
#   - the sweep's progress bar, on a terminal only, starts at 0/N and ends at N/N.
# Usage: documented_options.sh NSV_BINARY
set -u
nsv="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

# A range's upper limit accepted, one past it refused with the option named.
at_limit() {  # $1 option, $2 limit, rest: the command before the option
  local option="$1" limit="$2"; shift 2
  if "$@" "$option" "$limit" >"$work/out" 2>&1; then ok "$option $limit accepted"; else bad "$option $limit refused: $(head -c 200 "$work/out")"; fi
  if "$@" "$option" $((limit + 1)) >"$work/out" 2>&1; then
    bad "$option $((limit + 1)) accepted"
  elif grep -q -- "$option" "$work/out"; then
    ok "$option $((limit + 1)) refused, naming $option"
  else
    bad "$option $((limit + 1)) refused without naming the option: $(head -c 200 "$work/out")"
  fi
}
sweep=("$nsv" sweep --shapes 4x4 --tp 1 --strategy shard --quiet --out "$work/s.csv")
at_limit --steps 1000 "${sweep[@]}"
at_limit --steps 1000 "$nsv" step --generate --hidden 8 --heads 2 --kv-heads 2 --head-dim 4 --intermediate 8 --tp 2 --json

# Every command that takes one tensor-parallel degree accepts the same ones: a matrix `nsv shard`
# takes at --tp N, `nsv step`, `nsv sweep` and `nsv diagnose` take too (their --help ranges agree).
tp_range() {  # $1 command: the range its --help prints for --tp
  # "[1 - 4096]" (CLI::Range) or "[1, 4096]" (integer_in): the two limits, as "1 4096"
  "$nsv" "$1" --help 2>&1 | grep -E -- '^ *--tp ' | grep -oE '\[[0-9]+( -|,) [0-9]+\]' | head -1 | tr -d '[],-' | tr -s ' '
}
want=$(tp_range shard)
for command in step sweep diagnose; do
  got=$(tp_range "$command")
  [ -n "$want" ] && [ "$got" = "$want" ] && ok "$command --tp range $got, as shard's" || bad "$command --tp range '$got', shard's '$want'"
done

# nsv shard --json has exactly the keys README's "stable schema" lists (its top level, config,
# and every rank's), no more and no fewer.
if "$nsv" shard --shape 8x16 --tp 2 --json >"$work/shard.json" 2>"$work/err"; then
  /usr/bin/python3 - "$work/shard.json" >"$work/schema" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
want = {
    "top": "rel_diff_mean rel_diff_max bit_identical collectives promise target comm shard_sizes input shape strategy "
           "tp axis fused grain heads kv_heads head_dim reduction_order config ranks",
    "config": "kernel dtype accumulate products coeffs steps restart_at",
    "rank": "rank rows cols rel_diff cosine norm_ratio bytes_sent bytes_received messages flops extra_memory_bytes bit_identical",
}
# .get: a missing config or ranks is reported as missing keys, not as a crash of this check
got = {"top": set(d), "config": set(d.get("config", {})), "rank": set().union(*(set(r) for r in d.get("ranks", [])))}
for part, keys in want.items():
    extra, missing = sorted(got[part] - set(keys.split())), sorted(set(keys.split()) - got[part])
    print(("ok" if not extra and not missing else "FAIL") + f": nsv shard --json {part} keys (undocumented {extra}, missing {missing})")
PY
  # all three verdicts, or the check stopped early (a traceback), which must not read as a pass
  if [ "$(grep -c -E '^(ok|FAIL): ' "$work/schema")" != 3 ]; then
    bad "the shard schema check did not finish: $(tail -c 300 "$work/schema")"
  elif grep -q FAIL "$work/schema"; then
    bad "$(grep FAIL "$work/schema")"
  else
    ok "nsv shard --json has the documented schema"
  fi
else
  bad "nsv shard --json failed: $(head -c 300 "$work/err")"
fi

# README "Bad input": a matrix whose norm overflows the dtype the kernel normalizes in is skipped
# by the sweep. At the limit it does not overflow: a norm of exactly fp16's largest finite value
# (65504) runs; the next float32 norm that fp16 rounds to infinity (65520) is skipped.
/usr/bin/python3 -c "
import numpy as np, sys
for name, top in (('edge', 65504), ('over', 65520)):
    a = np.zeros((4, 4), dtype=np.float32); a[0, 0] = top; np.save(sys.argv[1] + '/' + name + '.npy', a)" "$work"
for name in edge over; do
  "$nsv" sweep --shapes 4x4 --spectrum "file:$work/$name.npy" --dtype fp16 --kernel standard --tp 1 --strategy shard \
    --quiet --out "$work/$name.csv" >"$work/$name.out" 2>&1
done
[ "$(wc -l <"$work/edge.csv")" -eq 2 ] && ok "a norm of 65504 runs in fp16" || bad "a norm of 65504 (fp16's largest) did not run: $(head -c 300 "$work/edge.out")"
grep -q "norm overflows" "$work/over.out" && ok "a norm of 65520 is skipped as overflowing fp16" || bad "a norm of 65520 was not skipped: $(head -c 300 "$work/over.out")"

# README "Files": a sweep row's bytes sent and received, messages and FLOPs are the maxima over
# ranks of what `nsv shard --json` reports per rank for the same case (uneven shards: 6, 5, 5 rows).
"$nsv" sweep --shapes 16x12 --tp 3 --strategy gather --quiet --out "$work/max.csv" >/dev/null 2>&1
"$nsv" shard --shape 16x12 --tp 3 --strategy gather --json >"$work/max.json" 2>/dev/null
maxima=$(/usr/bin/python3 -c '
import csv, json, sys
row = list(csv.DictReader(open(sys.argv[1])))[0]
ranks = json.load(open(sys.argv[2]))["ranks"]
keys = ("bytes_sent", "bytes_received", "messages", "flops")
print(" ".join(f"{k}:{row[k]}/{max(r[k] for r in ranks)}" for k in keys if int(row[k]) != max(r[k] for r in ranks)) or "same")' "$work/max.csv" "$work/max.json" 2>&1)
[ "$maxima" = same ] && ok "sweep rows carry the per-rank maxima of nsv shard" || bad "sweep row vs max over ranks (sweep/shard): $maxima"

# The generated model has the shape its options give it.
if "$nsv" step --generate --hidden 16 --heads 4 --kv-heads 2 --head-dim 4 --intermediate 32 --tp 2 --json >"$work/step.json" 2>"$work/err"; then
  rows=$(/usr/bin/python3 -c '
import json, sys
params = {p["name"]: p for p in json.load(open(sys.argv[1]))["steps"][0]["params"]}
print(" ".join(str(params[n]["rows"]) + "x" + str(params[n]["cols"]) for n in ("q_proj", "k_proj", "v_proj", "gate_proj")))' "$work/step.json")
  # q: heads x head_dim = 16 rows; k, v: kv_heads x head_dim = 8; gate: intermediate 32; all by hidden 16.
  [ "$rows" = "16x16 8x16 8x16 32x16" ] && ok "generated model shapes: $rows" || bad "generated model shapes: $rows, expected 16x16 8x16 8x16 32x16"
else
  bad "nsv step --generate with --kv-heads failed: $(head -c 300 "$work/err")"
fi
# nsv step --fallback takes the strategies exact for the whole matrix (and shard, today's path),
# the ones meant for the matrices per_head does not apply to: owner is taken, per_head refused.
gen=(step --generate --hidden 16 --heads 4 --kv-heads 2 --head-dim 4 --intermediate 32 --tp 2 --strategy per_head)
"$nsv" "${gen[@]}" --fallback owner --json >/dev/null 2>"$work/err" && ok "--fallback owner is taken" || bad "--fallback owner refused: $(head -c 300 "$work/err")"
if "$nsv" "${gen[@]}" --fallback per_head --json >/dev/null 2>"$work/err"; then bad "--fallback per_head was taken"
else grep -q "fallback" "$work/err" && ok "--fallback per_head is refused, naming the option" || bad "--fallback per_head: $(head -c 300 "$work/err")"; fi

# README "nsv sweep": a progress bar on a terminal. Under a pseudo-terminal (script(1)) its first
# draw, forced when the work starts, shows 0/N and its last, forced when it ends, N/N (N: the
# cases, 2 shapes x 2 degrees); the draws between depend on time and are not counted. In a pipe
# nothing is drawn. script(1) gets /dev/null as input: with none at all (CI's) it gives up.
bar=(sweep --shapes 4x4,8x8 --tp 1,2 --strategy shard)
script -qec "$(printf '%q ' "$nsv" "${bar[@]}" --out "$work/bar.csv")" /dev/null >"$work/bar.tty" 2>&1 </dev/null
draws=$(tr '\r' '\n' <"$work/bar.tty" | grep -aoE 'cases \[[#.]+\] [0-9]+/[0-9]+' | sed 's/.*\] //')
first=$(head -1 <<<"$draws") last=$(tail -1 <<<"$draws")
[ "$first" = 0/4 ] && [ "$last" = 4/4 ] && ok "the progress bar starts at 0/4 and ends at 4/4 on a terminal" ||
  bad "the progress bar's first and last draws on a terminal: '$first', '$last' (want 0/4, 4/4): $(head -c 300 "$work/bar.tty")"
"$nsv" "${bar[@]}" --out "$work/bar-pipe.csv" 2>&1 | grep -aq 'cases \[' && bad "a progress bar was drawn into a pipe" || ok "no progress bar in a pipe"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
