#!/usr/bin/env python3
"""Benchmark (not a timed test): `nsv audit` at the sizes that once ran for minutes, an earlier commit's build beside the current one.

    /usr/bin/python3 tools/bench/audit_scaling.py --against COMMIT [--build build] [--timeout 300]
        [--json FILE] [--markdown FILE]

Builds COMMIT as tools/bench/regression.py does (a worktree of its own under BUILD/regression/, kept), then
runs `nsv audit ... --json --quiet` of both builds on each case below, once each, under `timeout` and
/usr/bin/time (wall seconds, peak resident memory). Where both finish, every number of the two JSON
outputs is compared: integers (counts, bytes, FLOPs) must be equal, and times within 1e-12 relative (the
grouped sums add the same terms in another order). A first row times `nsv --help`, the fixed start-up of
each build, which every other row includes.
"""

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import regression  # noqa: E402  (the worktree builder beside this file)

ROOT = regression.ROOT
MODELS = ROOT / "fixtures" / "models"
RELATIVE = 1e-12


def huge_config(folder):
    """100,000 layers of 4,096 tiny routed experts: every size limit passes, 1.2e9 expert matrices per step."""
    c = json.loads((MODELS / "qwen1.5-moe-a2.7b.json").read_text())
    c.update(num_hidden_layers=100000, num_experts=4096, hidden_size=64, intermediate_size=64, moe_intermediate_size=64,
             shared_expert_intermediate_size=64, num_attention_heads=8, num_key_value_heads=8, vocab_size=128)
    path = folder / "moe-100k-layers-4096-experts.json"
    path.write_text(json.dumps(c))
    return path


def cases(folder):
    llama, qwen, huge = MODELS / "llama-3-8b.json", MODELS / "qwen1.5-moe-a2.7b.json", huge_config(folder)
    return [
        ("Llama-3-8B tp 8 x dp 256", llama, ["--tp", "8", "--dp", "256"]),
        ("Llama-3-8B tp 8 x dp 2048", llama, ["--tp", "8", "--dp", "2048"]),
        ("Llama-3-8B tp 8 x dp 8192", llama, ["--tp", "8", "--dp", "8192"]),
        ("Qwen1.5-MoE-A2.7B tp 1024", qwen, ["--tp", "1024"]),
        ("100,000 layers x 4,096 experts, tp 8", huge, ["--tp", "8"]),
    ]


def run(nsv, args, timeout, out_json):
    """Wall seconds, peak KB, exit status and the JSON (None unless it finished with 0)."""
    with tempfile.NamedTemporaryFile("r") as times, open(out_json, "w") as out:
        p = subprocess.run(["/usr/bin/time", "-o", times.name, "-f", "%e %M", "timeout", str(timeout), str(nsv), *args],
                           stdout=out, stderr=subprocess.PIPE, text=True)
        fields = times.read().split()[-2:]
    wall, peak = (float(fields[0]), int(fields[1])) if len(fields) == 2 else (float("nan"), 0)
    status = "finished" if p.returncode == 0 else ("timed out" if p.returncode == 124 else f"exit {p.returncode}")
    message = p.stderr.strip().splitlines()[-1] if p.returncode not in (0, 124) and p.stderr.strip() else ""
    return {"seconds": wall, "peak_kb": peak, "status": status, "message": message}


def compare(a, b, path="", found=None):
    """[values compared, bit-equal, differences beyond the rule]"""
    found = found if found is not None else [0, 0, []]
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        for k in a:
            compare(a[k], b[k], f"{path}.{k}", found)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            compare(x, y, f"{path}[{i}]", found)
    elif isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        found[2].append(f"{path}: structure differs")
    else:
        found[0] += 1
        found[1] += a == b
        close = isinstance(a, float) and isinstance(b, float) and abs(a - b) <= RELATIVE * max(abs(a), abs(b))
        if a != b and not close:
            found[2].append(f"{path}: {a!r} vs {b!r}")
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog="\n".join(__doc__.splitlines()[2:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--against", required=True, help="the earlier commit (e.g. the last landing before the audits were grouped)")
    ap.add_argument("--build", default=str(ROOT / "build"), help="the current build folder (default build/)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds each run may take before it is stopped (default 300)")
    ap.add_argument("--json", help="write the figures here (a new file)")
    ap.add_argument("--markdown", help="write the table here (a new file; for reports/performance.md)")
    a = ap.parse_args()
    if a.timeout < 1:
        raise SystemExit(f"audit_scaling.py: --timeout must be at least 1 second, got {a.timeout}")
    sha = regression.commit_of(a.against)
    build_root = pathlib.Path(a.build).resolve()
    current = build_root / "cli" / "nsv"
    if not current.exists():
        raise SystemExit(f"audit_scaling.py: --build {a.build}: no cli/nsv there; build it first (tools/setup.sh)")
    _, earlier_dir = regression.earlier_build(sha, build_root, ["nsv"])
    builds = {sha[:10]: regression.nsv_binary(earlier_dir), "current": current}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        rows.append({"case": "start-up (nsv --help)",
                     **{name: run(nsv, ["--help"], a.timeout, folder / "help.txt") for name, nsv in builds.items()}})
        for case, config, args in cases(folder):
            row = {"case": case}
            outputs = {}
            for name, nsv in builds.items():
                out = folder / f"{name}.json"
                row[name] = run(nsv, ["audit", "--config", str(config), *args, "--json", "--quiet"], a.timeout, out)
                print(f"   {case} {name}: {row[name]['status']} {row[name]['seconds']} s", file=sys.stderr)
                outputs[name] = json.loads(out.read_text()) if row[name]["status"] == "finished" else None
            earlier, now = outputs[sha[:10]], outputs["current"]
            if earlier is not None and now is not None:
                values, equal, differ = compare(earlier, now)
                row["totals"] = (f"identical: {values} values, {equal} bit-equal, the rest within {RELATIVE:g}"
                                 if not differ else f"DIFFER in {len(differ)} of {values}: {differ[0]}")
            else:
                row["totals"] = "not compared (a run did not finish)"
            rows.append(row)
    header = (f"`nsv audit --json --quiet` of {sha[:10]}'s build and of the current one, one run each on one machine, "
              f"each stopped after {a.timeout} s; wall seconds and peak resident memory from /usr/bin/time.\n\n"
              f"| case | {sha[:10]} | current | totals |\n|---|---|---|---|\n")

    def cell(r):
        text = f"{r['seconds']:.2f} s, {r['peak_kb'] / 1024:.0f} MB" if r["status"] == "finished" else r["status"]
        if r["status"] == "timed out":
            text = f"> {a.timeout} s (stopped)"
        return text + (f": {r['message']}" if r["message"] else "")

    table = header + "".join(f"| {r['case']} | {cell(r[sha[:10]])} | {cell(r['current'])} | {r.get('totals', '')} |\n"
                             for r in rows)
    print(table)
    if a.json:
        regression.write_new(a.json, json.dumps({"against": sha, "rows": rows}, indent=1) + "\n", "--json")
    if a.markdown:
        regression.write_new(a.markdown, table, "--markdown")


if __name__ == "__main__":
    main()
