#!/usr/bin/env python3
"""Benchmark (not a timed test): the checks' own time per case beside the time spent in the user's
callable, per property, at pinned shapes.

check_kernel pins every drawn matrix to the shape (shape=...) and runs every property on the
numpy fp32 Newton-Schulz of examples/numpy_ns.py, one shape after another in one process. Per
property it reports seconds per case in total, in the callable (the user's code, GIL wait
included) and in nsverify (the rest: generating, converting, the reference's own NS where the
property needs it, the premises, comparing), and the ratio nsverify / callable.

    PYTHONPATH=build/python /usr/bin/python3 tools/bench/nsverify_overhead.py [--cases N]
        [--shapes 64x128,512x1024] [--json FILE]

tools/bench/run_all.sh runs it (stage `overhead`) and reports/performance.md shows the rows, beside
an earlier build's (OVERHEAD_BEFORE=its --json) where given.

The default shapes are the gate-sized 64x128 and 512x1024; --shapes 4096x4096,4096x14336
--cases 1 measures Llama-3-8B's layer shapes (about half a minute per callable call there).
"""

import argparse
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))

import nsverify  # noqa: E402
import numpy_ns  # noqa: E402


def measure(shape, cases):
    started = time.perf_counter()
    result = nsverify.check_kernel(numpy_ns.standard_ns, kernel="standard", shape=shape, max_success=cases)
    rows = []
    for p in result.properties:
        if p.cases == 0:
            continue
        total, inside = p.seconds / p.cases, p.seconds_in_callable / p.cases
        rows.append(dict(shape=f"{shape[0]}x{shape[1]}", property=p.name, code=p.code, status=p.status, cases=p.cases,
                         calls_per_case=p.calls / p.cases, total_s=total, callable_s=inside, nsverify_s=total - inside,
                         ratio=(total - inside) / inside if inside > 0 else None))
    print(f"{shape[0]}x{shape[1]}: {time.perf_counter() - started:.1f} s for the whole check", file=sys.stderr, flush=True)
    return rows


def ratio_text(row):
    return "-" if row["ratio"] is None else f"{row['ratio']:.2f}"


def write_new(path, text, option):
    try:
        with open(path, "x") as out:  # never overwrites a file nor follows a link to one
            out.write(text)
    except FileExistsError:
        sys.exit(f"{option}: {path} exists; name a new file")


def shapes_argument(text):
    """--shapes of the benchmarks here: ROWSxCOLS[,ROWSxCOLS...], each side at least 1."""
    try:
        shapes = [tuple(int(v) for v in s.split("x")) for s in text.split(",")]
    except ValueError:
        shapes = []
    if not shapes or any(len(s) != 2 or min(s) < 1 for s in shapes):
        raise argparse.ArgumentTypeError(f"expected ROWSxCOLS[,ROWSxCOLS...] with sides >= 1, got {text!r}")
    return shapes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=5, help="cases per property (default 5)")
    ap.add_argument("--shapes", type=shapes_argument, default=[(64, 128), (512, 1024)],
                    help="pinned shapes, ROWSxCOLS separated by commas (default 64x128,512x1024)")
    ap.add_argument("--json", help="also write the rows here (a new file)")
    args = ap.parse_args()
    rows = [r for shape in args.shapes for r in measure(shape, args.cases)]
    print(f"{'shape':>10}  {'code':>4}  {'property':<60} {'calls':>5} {'total ms':>10} {'callable ms':>11} "
          f"{'nsverify ms':>11} {'nsv/callable':>12}")
    for r in rows:
        ratio = ratio_text(r)
        print(f"{r['shape']:>10}  {r['code']:>4}  {r['property']:<60} {r['calls_per_case']:5.1f} {1e3 * r['total_s']:10.1f} "
              f"{1e3 * r['callable_s']:11.1f} {1e3 * r['nsverify_s']:11.1f} {ratio:>12}")
    if args.json:
        write_new(args.json, json.dumps(rows, indent=2) + "\n", "--json")


if __name__ == "__main__":
    main()
