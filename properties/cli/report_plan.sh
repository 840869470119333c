#!/usr/bin/env bash
# The committed report is the report the code runs (issue 13: mutants of the report's plan, such
# as a schedule study from step 0 or on other shapes, changed what `nsv report` measures with no
# test failing). Claims:
#   - `nsv report --print-plan` equals the "plan" that reports/report.json was generated with,
#     key by key: a plan changed without regenerating the report (tools/report.sh) fails here;
#   - --quick runs a subset of it: every list of the quick plan is a sub-list of the full plan's,
#     and its seed counts are no larger (what --help promises: fewer seeds and TP degrees).
# Negative control: the comparison reports a planted difference.
# Usage: report_plan.sh NSV_BINARY REPORT_JSON
set -u
nsv="$1" committed="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$nsv" report --print-plan >"$work/full.json" 2>"$work/err" || { echo "FAIL: nsv report --print-plan: $(head -c 300 "$work/err")"; exit 1; }
"$nsv" report --print-plan --quick >"$work/quick.json" 2>"$work/err" || { echo "FAIL: --print-plan --quick: $(head -c 300 "$work/err")"; exit 1; }
exec /usr/bin/python3 - "$work/full.json" "$work/quick.json" "$committed" <<'PY'
import json, sys

full, quick, report = (json.load(open(p)) for p in sys.argv[1:4])

def differences(a, b, where=""):
    """Every path at which two JSON values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{where}.{k}: only in the {'code' if k in a else 'committed report'}")
            else:
                out += differences(a[k], b[k], f"{where}.{k}")
        return out
    return [] if a == b else [f"{where}: code {json.dumps(a)[:120]}, committed {json.dumps(b)[:120]}"]

def not_smaller(q, f, where=""):
    """Where the quick plan is not within the full one."""
    if isinstance(q, dict):
        return [p for k in q for p in not_smaller(q[k], f.get(k), f"{where}.{k}")] if isinstance(f, dict) else [f"{where}: missing"]
    if isinstance(q, list):
        return [] if isinstance(f, list) and all(x in f for x in q) else [f"{where}: {q} not within {f}"]
    if where.endswith("seeds") or where.endswith("megatron_seeds"):
        return [] if q <= f else [f"{where}: {q} seeds, more than the full plan's {f}"]
    return [] if q == f else [f"{where}: {q} vs {f}"]

failed = 0
diff = differences(full, report["plan"])
for d in diff:
    print("FAIL: the code's plan differs from reports/report.json's (regenerate with tools/report.sh):", d)
failed += len(diff)
print(f"{'ok' if not diff else 'FAIL'}: nsv report --print-plan equals reports/report.json's plan ({len(full)} sections)")
wider = not_smaller(quick, full)
for w in wider:
    print("FAIL: --quick is not a subset of the full plan at", w)
failed += len(wider)
print(f"{'ok' if not wider else 'FAIL'}: the --quick plan is within the full plan")

# Negative control: one planted change is found, at its path.
planted = json.loads(json.dumps(full))
planted["schedules"]["max_steps"] = planted["schedules"]["max_steps"] + 1
found = differences(planted, report["plan"])
if len(found) != 1 or not found[0].startswith(".schedules.max_steps"):
    print("FAIL: negative control: a planted plan change was reported as", found)
    failed += 1
sys.exit(1 if failed else 0)
PY
