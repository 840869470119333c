#!/usr/bin/env python3
"""Benchmark (not a timed test): the least time any REF with a measured bound can take, against the
user's callable (issue 31).

REF bounds an implementation's distance to the float64 map by 2 S, S the reference's own error:
whatever S is made of, it needs the float64 map (one float64 run, of either kernel: both compute the
same map) and at least one run of the reference in the configuration under test. This script times,
side by side in one process, per call: the callable (examples/numpy_ns.py's fp32 standard NS, numpy
on the machine's OpenBLAS threads, as tools/bench/nsverify_overhead.py runs it), one fp32 reference
run and the float64 runs (nsverify.ns: its large products on both cores). It prints the medians and
two floors in units of the callable: one fp32 run plus the cheaper float64 run (any measured S), and
three fp32 runs plus it (REF's S: G and two permutations).

    PYTHONPATH=build/python /usr/bin/python3 tools/bench/ref_floor.py [--shapes 512x1024,1024x4096] [--repeat 5]
        [--json FILE]

tools/bench/run_all.sh runs it (stages overhead and layer) for reports/performance.md.

tools/bench/ref_bounds.cpp (nsv_ref_bounds) measures the other side: how much looser the a-priori
bound, which needs no reference run, is than 2 S.
"""

import argparse
import json
import pathlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))

import nsverify  # noqa: E402
import numpy_ns  # noqa: E402
from nsverify_overhead import shapes_argument, write_new  # noqa: E402 (this folder: the script's own)


def median_ms(call, repeat):
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append(1e3 * (time.perf_counter() - started))
    return statistics.median(times)


def repeat_argument(text):
    if not text.isdigit() or not 1 <= int(text) <= 100:
        raise argparse.ArgumentTypeError(f"expected a whole number of calls 1..100, got {text!r}")
    return int(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", type=shapes_argument, default=[(512, 1024), (1024, 4096)],
                        help="ROWSxCOLS,... (default 512x1024,1024x4096)")
    parser.add_argument("--repeat", type=repeat_argument, default=5,
                        help="calls per measurement, 1..100; the median is shown (default 5)")
    parser.add_argument("--json", help="also write the rows here (a new file)")
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    rows_out = []
    for rows, cols in args.shapes:
        g32 = rng.standard_normal((rows, cols)).astype(np.float32)
        g64 = g32.astype(np.float64)
        ms = {
            "callable": median_ms(lambda: numpy_ns.standard_ns(g32), args.repeat),
            "fp32": median_ms(lambda: nsverify.ns(g64, kernel="standard", dtype="fp32"), args.repeat),
            "fp64 standard": median_ms(lambda: nsverify.ns(g64, kernel="standard", dtype="fp64"), args.repeat),
            "fp64 gram": median_ms(lambda: nsverify.ns(g64, kernel="gram", dtype="fp64"), args.repeat),
        }
        oracle = min(ms["fp64 standard"], ms["fp64 gram"])
        row = dict(shape=f"{rows}x{cols}", callable_ms=ms["callable"], fp32_ms=ms["fp32"], fp64_standard_ms=ms["fp64 standard"],
                   fp64_gram_ms=ms["fp64 gram"], any_s_floor=(ms["fp32"] + oracle) / ms["callable"],
                   ref_s_floor=(3 * ms["fp32"] + oracle) / ms["callable"])
        rows_out.append(row)
        print(f"{row['shape']}: " + ", ".join(f"{k} {v:.1f} ms" for k, v in ms.items())
              + f"; floor, one fp32 run + the float64 map: {row['any_s_floor']:.2f}x the callable"
              + f"; three fp32 runs + it (REF's S): {row['ref_s_floor']:.2f}x", flush=True)
    if args.json:
        write_new(args.json, json.dumps(rows_out, indent=2) + "\n", "--json")


if __name__ == "__main__":
    main()
