#!/usr/bin/env bash
# The committed report is what the code renders (issue 13: no test ran `nsv report`, so a
# mutant that broke the README's rendering, the figures or report.json's write survived).
# On a copy of reports/, `nsv report --only sweeps` (the sweeps' statistics from their CSVs),
# `--only step`, `diagnosis`, `schedules`, `gram_stability`, `training` (no figures) and then
# `--only audits` rerun those sections, redraw the figures and render README.md again. Claims:
#   - each exits 0 and says what it wrote;
#   - report.json: every section but "run" (timings) equals the committed one, the rerun
#     sections included (each a deterministic function of the bundled fixtures);
#   - README.md equals the committed one, but for the lines that time these reruns
#     ("- audits (--only): S s");
#   - every figure the committed README shows exists again;
#   - with a plotting script that fails, the report still renders and says why (its exit status
#     and its message) in report.json and README.md.
# Negative control: the README comparison reports a planted change.
# Usage: report_rerender.sh NSV_BINARY REPORTS_DIR REPO_ROOT
set -u
nsv="$1" reports="$2" root="$3"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$reports" "$work/reports"
rm -rf "$work/reports/figures"
cd "$root" || exit 1  # the scripts' default paths (tools/plot_report.py, tools/report/...) are the repository's
# NSV_RERENDER_SECTIONS: a subset (tools/sanitize.sh's job reruns fewer under ASan; the others' engines run there
# in their own tests).
for section in ${NSV_RERENDER_SECTIONS:-sweeps step diagnosis schedules gram_stability training audits}; do
  plots=--no-plots
  [ "$section" = audits ] && plots=
  # shellcheck disable=SC2086 # $plots is one option or none
  if ! "$nsv" report --only "$section" $plots --quiet --out-dir "$work/reports" >"$work/out" 2>&1; then
    echo "FAIL: nsv report --only $section: $(tail -c 600 "$work/out")"
    exit 1
  fi
done
# A plotting script that fails: the report says so with the script's own words, and still renders.
mkdir -p "$work/failing"
cp "$reports/report.json" "$work/failing/"
printf 'import sys\nsys.exit("planted plot failure: no figures")\n' >"$work/fail_plot.py"
"$nsv" report --only audits --quiet --plot-script "$work/fail_plot.py" --out-dir "$work/failing" >"$work/failing.out" 2>&1
echo $? >"$work/failing.status"
exec /usr/bin/python3 - "$reports" "$work/reports" "$work/out" "$work/failing" <<'PY'
import json, os, re, sys

committed, rerun, out, failing = sys.argv[1:5]
failed = 0

def claim(ok, what):
    global failed
    print(("ok: " if ok else "FAIL: ") + what)
    failed += not ok

claim("wrote the audits section" in open(out).read(), "nsv report --only audits says what it wrote")
old, new = (json.load(open(os.path.join(d, "report.json"))) for d in (committed, rerun))
differing = sorted(k for k in set(old) | set(new) if k != "run" and old.get(k) != new.get(k))
claim(not differing, f"report.json equals the committed one but for its timings (differing sections: {differing})")

timing = re.compile(r"^- (sweeps|step|diagnosis|schedules|gram_stability|training|audits) \(--only\): [0-9.]+ s$")
def readme_difference(a, b):
    """The lines of b not in a and of a not in b, except the rerun's own timing line."""
    a_lines, b_lines = a.splitlines(), b.splitlines()
    extra = [l for l in b_lines if l not in a_lines and not timing.match(l)]
    missing = [l for l in a_lines if l not in b_lines]
    return extra, missing

committed_readme = open(os.path.join(committed, "README.md")).read()
extra, missing = readme_difference(committed_readme, open(os.path.join(rerun, "README.md")).read())
claim(not extra and not missing, f"README.md renders as committed (new lines {extra[:3]}, lost lines {missing[:3]})")
figures = re.findall(r"\]\((figures/[^)]+\.png)\)", committed_readme)
absent = [f for f in figures if not os.path.isfile(os.path.join(rerun, f))]
claim(figures and not absent, f"the {len(figures)} figures of the committed README are drawn again (absent: {absent[:3]})")

note = json.load(open(os.path.join(failing, "report.json")))["run"].get("plot_note", "")
claim(open(os.path.join(os.path.dirname(failing), "failing.status")).read().strip() == "0"
      and "planted plot failure: no figures" in note and "exit 1" in note,
      f"a failing plot script is reported with its exit status and its message (plot note: {note[:200]!r})")
claim("planted plot failure" in open(os.path.join(failing, "README.md")).read(), "README.md says why the figures are missing")

planted = committed_readme.replace("Timings of this run", "Timings of that run", 1)
claim(readme_difference(committed_readme, planted) != ([], []), "negative control: a changed README line is reported")
sys.exit(1 if failed else 0)
PY
