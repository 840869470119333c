#!/usr/bin/env bash
# `nsv step`'s text says what it was given and what its --json says, on generated gradients of a
# small layer, for one step and for two (momentum carried), two strategies and both scale sources:
#   - the first line says "Muon step" for one step and "Muon steps" for more, and the model's sizes;
#   - the second line names the tp, the strategy and fallback, the scale source, the kernel, the NS
#     step count, the dtype, lr and momentum given;
#   - one block per step ("step K"), one row per matrix of --json's, in its order, each with the
#     strategy that ran, its rel. diff as --json's to the printed digits, and "bit-identical" exactly
#     where --json says so.
# Usage: step_text.sh NSV_BINARY
set -u
nsv="$1"
exec /usr/bin/python3 - "$nsv" <<'PY'
import json, re, subprocess, sys

nsv = sys.argv[1]
failures = 0
for k, strategy, scale in [(1, "gather", "global"), (2, "shard", "local"), (3, "per_head", "global")]:
    args = [nsv, "step", "--generate", "--hidden", "64", "--heads", "4", "--kv-heads", "2", "--head-dim", "16",
            "--intermediate", "96", "--tp", "2", "--steps-k", str(k), "--strategy", strategy, "--scale-from", scale,
            "--lr", "0.03", "--momentum", "0.9", "--steps", "4"]
    text = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    data = json.loads(subprocess.run(args + ["--json"], capture_output=True, text=True, check=True).stdout)
    lines = text.splitlines()
    problems = []
    first = f"Muon step{'s' if k > 1 else ''} on generated Gaussian gradients (seed 0): model hidden 64, 4 heads x 16 (kv 2), intermediate 96"
    if lines[0] != first:
        problems.append(f"first line {lines[0]!r}, expected {first!r}")
    given = f"tp=1 vs tp=2, strategy {strategy} (fallback shard), AutoTP layout, scale from {scale} shape, gram NS 4 steps fp32, lr 0.03, momentum 0.9 nesterov"
    if lines[1] != given:
        problems.append(f"second line {lines[1]!r}, expected {given!r}")
    blocks = [i for i, line in enumerate(lines) if re.fullmatch(r"step \d+", line)]
    if [lines[i] for i in blocks] != [f"step {s}" for s in range(k)] or len(data["steps"]) != k:
        problems.append(f"step blocks {[lines[i] for i in blocks]} for {k} step(s), --json has {len(data['steps'])}")
    for s, start in enumerate(blocks):
        rows = [line.split() for line in lines[start + 2:start + 2 + len(data["steps"][s]["params"])]]
        for row, param in zip(rows, data["steps"][s]["params"]):
            where = f"step {s} {param['name']}"
            if row[0] != param["name"] or row[4] != param["strategy"]:
                problems.append(f"{where}: row {row[:5]} against --json's {param['name']} / {param['strategy']}")
            if abs(float(row[5]) - param["rel_diff"]) > 5e-5 * max(1.0, param["rel_diff"]):
                problems.append(f"{where}: rel_diff {row[5]} against --json's {param['rel_diff']}")
            if ("bit-identical" in row) != param["bit_identical"]:
                problems.append(f"{where}: 'bit-identical' {'shown' if 'bit-identical' in row else 'missing'}, --json says {param['bit_identical']}")
    print(f"steps {k}, {strategy}, scale {scale}: {'ok' if not problems else 'FAIL'}")
    for p in problems:
        print("FAIL:", p)
    failures += len(problems)
sys.exit(1 if failures else 0)
PY
