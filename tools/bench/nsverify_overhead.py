#!/usr/bin/env python3
"""Benchmark (not a timed test): the checks' own overhead per case, beside the time spent in the
user's callable, at 64x128 and 512x1024.

check_kernel pins every drawn matrix to the shape (shape=...), runs a few properties with the
numpy kernel of examples/numpy_ns.py, and reports per property: seconds per case in total, in the
callable (the user's code, GIL wait included), and in nsverify (the rest: generating, converting,
the reference's own NS in fp32 and fp64 where the property needs it, comparing). K5 is left out
at 512x1024 (its long-double SVD oracle is minutes per case there).

    PYTHONPATH=build/python /usr/bin/python3 tools/bench/nsverify_overhead.py [--cases N] [--json FILE]
"""

import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))

import nsverify  # noqa: E402
import numpy_ns  # noqa: E402

PROPERTIES = ["repeated_calls_give_the_same_bits", "transpose_of_input_transposes_output_exactly",
              "orthogonal_transformations_commute_within_rounding", "agrees_with_the_reference_within_its_own_error"]


def measure(shape, cases):
    result = nsverify.check_kernel(numpy_ns.standard_ns, kernel="standard", shape=shape, max_success=cases,
                                   properties=PROPERTIES)
    rows = []
    for p in result.properties:
        if p.status != "holds":
            continue
        total, inside = p.seconds / p.cases, p.seconds_in_callable / p.cases
        rows.append(dict(shape=f"{shape[0]}x{shape[1]}", property=p.name, code=p.code, cases=p.cases,
                         calls_per_case=p.calls / p.cases, total_s=total, callable_s=inside, nsverify_s=total - inside))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=10, help="cases per property")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    rows = measure((64, 128), args.cases) + measure((512, 1024), args.cases)
    print(f"{'shape':>9}  {'code':>4}  {'property':<52} {'calls':>5} {'total ms':>9} {'callable ms':>11} {'nsverify ms':>11}")
    for r in rows:
        print(f"{r['shape']:>9}  {r['code']:>4}  {r['property']:<52} {r['calls_per_case']:5.1f} {1e3 * r['total_s']:9.2f} "
              f"{1e3 * r['callable_s']:11.2f} {1e3 * r['nsverify_s']:11.2f}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
