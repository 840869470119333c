#!/usr/bin/env python3
"""Time PyTorch's own CPU Newton-Schulz: DeepSpeed's two kernels re-implemented in torch.

Kernels (SPEC §1.1, §1.2), coefficients (a, b, c) = (3.4445, -4.7750, 2.0315):

  standard  (zeropower_via_newtonschulz5)
      X = G.to(dtype); transpose if rows > cols; X = X / (||X||_F + 1e-7)
      steps x:  A = X X^T;  B = b A + c A A;  X = a X + B X;   transpose back.
      (c A A is evaluated as Python does, (c A) A, in both kernels, as DeepSpeed writes it.)

  gram      (zeropower_via_gram_newtonschulz, restart_at = 2)
      X = G / (||G||_F + 1e-7) in float32 (or G's dtype if wider), then cast to dtype;
      transpose if rows > cols; if the result is square, run the standard loop; otherwise
      R = X X^T; Q = none; for i in 0..steps-1:
          if i == restart: X = Q X; R = X X^T; Q = none
          Z = b R + c R R
          Q = Z + a I  if Q is none  else  a Q + Z Q
          if i < steps-1 and i+1 != restart: RZ = a R + Z R; R = a RZ + Z RZ
      result Q X, or X^T Q^T if the input was tall.

FLOP counts (the plain algorithm, for one p x q matrix with p = min dim, q = max dim, and a GEMM
of [m,k]x[k,n] counted as 2mkn):
  standard: steps * (4 p^2 q + 2 p^3)       (X X^T and B X: 2p^2q each; A A: 2p^3)
  gram (p < q; square inputs run the standard loop and are counted as standard):
      2 Grams (start and restart)             2 p^2 q each
      2 applications of Q (restart and end)   2 p^2 q each
      p x p products, 2 p^3 each:
          per step 1 for the polynomial (R R),
          1 for Q's update (Z Q) except on the first step after a (re)start,
          2 for R's update (Z R, Z RZ) except before the restart and after the last step.
      With steps 5, restart 2: 8 p^2 q + (5 + 3 + 6) * 2 p^3 = 8 p^2 q + 28 p^3.
Elementwise work (scaling, adds) is not counted.

The SGEMM reference is torch.mm on fp32 [p, q] x [q, p] (the Gram shape, 2 p^2 q FLOPs), timed
the same way, at the same thread count.

Usage:
  /usr/bin/python3 tools/bench/torch_ns.py --threads 1 --shapes 256x256,512x1024 --repeat 5
  /usr/bin/python3 tools/bench/torch_ns.py --check-golden /work/shared/golden/deepspeed

Note on bf16: PyTorch's CPU bf16 GEMM has two paths. With oneDNN ("mkldnn", torch's default
where the CPU supports it, e.g. AVX512-BF16 on this project's AMD EPYC box) it accumulates in
fp32 (product error ~1.7e-3 at any inner dimension; NS ~3-5% from fp32 on Gaussian inputs).
With oneDNN disabled (--mkldnn off, torch.backends.mkldnn.flags(enabled=False)) it falls back
to torch's native kernel, which accumulates in bf16 (3.8e-2 at k=1024; NS 10-20% from fp32).
DeepSpeed's golden bf16 files were made on the fallback path: --check-golden runs the bf16 cases
with oneDNN off and reproduces them bit for bit. Records carry the "mkldnn" setting.
"""

import argparse
import json
import os
import statistics
import sys
import time

# Keller Jordan's (a, b, c), DeepSpeed's: the one coefficient table of the torch transcriptions
# (tools/muon_runs.py and tools/train_muon.py import it, with ns_standard).
KELLER = (3.4445, -4.7750, 2.0315)
A_COEF, B_COEF, C_COEF = KELLER
DEFAULT_SHAPES = "256x256,512x1024,1024x1024,1024x4096,4096x4096"


def pin_blas_threads(threads):
    """Must run before torch is imported. Debian's torch calls the system BLAS (OpenBLAS), whose
    thread pool ignores torch.set_num_threads and starts one thread per core; only the
    environment variable read at load time limits it."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        old = os.environ.get(var)
        if old is not None and old != str(threads):
            sys.stderr.write("torch_ns.py: overriding %s=%s with %d (--threads)\n" % (var, old, threads))
        os.environ[var] = str(threads)


def blas_info():
    """Which BLAS torch is running on and its thread count, as far as it can be found out."""
    import ctypes
    for name in ("libopenblas.so.0", "libopenblas.so"):
        try:
            lib = ctypes.CDLL(name)
            return dict(blas="openblas", blas_threads=int(lib.openblas_get_num_threads()))
        except (OSError, AttributeError):
            continue
    return dict(blas="unknown", blas_threads=None)


def import_torch():
    try:
        import torch
    except ImportError as e:
        sys.stderr.write("torch_ns.py: cannot import torch (%s). On Debian: "
                         "`apt-get install python3-torch`, and run with /usr/bin/python3.\n" % e)
        sys.exit(2)
    return torch


torch = None  # set in main() / load()


def load():
    global torch
    if torch is None:
        torch = import_torch()
    return torch


def dtype_of(name):
    t = load()
    return {"fp32": t.float32, "fp64": t.float64, "bf16": t.bfloat16, "fp16": t.float16}[name]


def ns_standard(G, steps=5, dtype=None, square_first=False):
    """DeepSpeed zeropower_via_newtonschulz5 (2-D or batched). square_first: B = b A + c (A A)
    instead of DeepSpeed's (c A) A, which rounds differently; tools/muon_runs.py made
    fixtures/runs so, and keeps it to reproduce them bit for bit."""
    a, b, c = A_COEF, B_COEF, C_COEF
    X = G.to(dtype) if dtype is not None else G
    tall = G.size(-2) > G.size(-1)
    if tall:
        X = X.mT
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + 1e-7)
    for _ in range(steps):
        A = X @ X.mT
        B = b * A + c * (A @ A) if square_first else b * A + c * A @ A
        X = a * X + B @ X
    if tall:
        X = X.mT
    return X


def ns_gram(G, steps=5, dtype=None, restart_at=2):
    """DeepSpeed zeropower_via_gram_newtonschulz (2-D or batched), per SPEC §1.2."""
    t = load()
    a, b, c = A_COEF, B_COEF, C_COEF
    norm_dtype = G.dtype if G.dtype == t.float64 else t.float32
    Gn = G.to(norm_dtype)
    X = Gn / (Gn.norm(dim=(-2, -1), keepdim=True) + 1e-7)
    X = X.to(dtype) if dtype is not None else X.to(G.dtype)
    tall = G.size(-2) > G.size(-1)
    if tall:
        X = X.mT
    n, m = X.size(-2), X.size(-1)
    if n == m:
        for _ in range(steps):
            A = X @ X.mT
            B = b * A + c * A @ A
            X = a * X + B @ X
    else:
        I = t.eye(n, device=X.device).to(X.dtype)  # torch 1.13 has no bf16 eye
        R = X @ X.mT
        Q = None
        for i in range(steps):
            if i == restart_at:
                X = Q @ X
                R = X @ X.mT
                Q = None
            # Python precedence: `c * R @ R` is (c*R) @ R, as written in DeepSpeed; c*(R@R)
            # rounds differently (1e-6 off at 5 steps, 5e-2 at 10 steps on a 128x512 input).
            Z = b * R + c * R @ R
            Q = (Z + a * I) if Q is None else (a * Q + Z @ Q)
            if i < steps - 1 and i + 1 != restart_at:
                RZ = a * R + Z @ R
                R = a * RZ + Z @ RZ
        # Tall input: X^T Q^T (SPEC §1.2), not (Q X)^T -- same for 2-D, but batched
        # tall inputs round differently (5e-8 off DeepSpeed's golden for 4x64x32).
        return X.mT @ Q.mT if tall else Q @ X
    if tall:
        X = X.mT
    return X


KERNELS = {"standard": ns_standard, "gram": ns_gram}


def flops(kernel, rows, cols, steps=5, restart_at=2):
    p, q = min(rows, cols), max(rows, cols)
    if kernel == "sgemm":
        return 2 * p * p * q
    if kernel == "standard" or p == q:
        return steps * (4 * p * p * q + 2 * p ** 3)
    # gram
    rect = 2 * 2 * p * p * q + 2 * 2 * p * p * q  # 2 Grams + 2 applications of Q
    small = 0
    first_after_start = True
    for i in range(steps):
        if i == restart_at:
            first_after_start = True
        small += 1                       # R R
        if not first_after_start:
            small += 1                   # Z Q
        first_after_start = False
        if i < steps - 1 and i + 1 != restart_at:
            small += 2                   # Z R, Z RZ
    return rect + small * 2 * p ** 3


def time_call(fn, repeat, warmup):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), min(ts)


def parse_shapes(s):
    out = []
    for tok in s.split(","):
        tok = tok.strip().lower()
        if not tok:
            continue
        try:
            r, c = tok.split("x")
            out.append((int(r), int(c)))
        except ValueError:
            raise SystemExit("torch_ns.py: bad shape %r (expected ROWSxCOLS, e.g. 512x1024)" % tok)
    return out


def check_golden(golden_dir, threads):
    """One-off numerical check against DeepSpeed's own outputs (not part of the timing path).

    fp32/fp64 cases run as timed (oneDNN setting irrelevant: fp32 GEMMs go to OpenBLAS); bf16
    cases run with oneDNN disabled, the path the golden files were made on. Pass: relative
    Frobenius difference < 1e-5 for every case except rank-deficient inputs (see below)."""
    import numpy as np
    t = load()
    t.set_num_threads(threads)
    man = json.load(open(os.path.join(golden_dir, "manifest.json")))
    worst = {"fp": 0.0, "bf16": 0.0, "ill": 0.0}
    count = {"fp": 0, "bf16": 0, "ill": 0}
    for case in man["cases"]:
        if case.get("kind") != "ns" or case.get("compute_dtype") not in ("fp32", "fp64", "bf16"):
            continue
        G = t.from_numpy(np.load(os.path.join(golden_dir, case["input"])))
        ref = np.load(os.path.join(golden_dir, case["output"])).astype(np.float64)
        bf16 = case["compute_dtype"] == "bf16"
        with t.backends.mkldnn.flags(enabled=not bf16):
            out = KERNELS[case["kernel"]](G, steps=case["steps"],
                                          dtype=dtype_of(case["compute_dtype"])).float().numpy()
        if case.get("output_has_nan") or not np.isfinite(ref).all():
            rel = 0.0 if not np.isfinite(out).all() else float("inf")
        else:
            den = np.linalg.norm(ref)
            rel = float(np.linalg.norm(out.astype(np.float64) - ref) / den) if den > 0 else \
                float(np.abs(out).max())
        # Rank-deficient input: the output in the near-null space is rounding noise grown by up
        # to a^steps (3.4445^5 ~ 490, ^10 ~ 2.4e5), so any change of GEMM blocking (e.g. the
        # BLAS thread count) moves it. Reported, not gated.
        group = "ill" if str(case.get("generator", "")).startswith("lowrank") else \
            ("bf16" if bf16 else "fp")
        worst[group] = max(worst[group], rel)
        count[group] += 1
        print("%-30s %-8s %-4s s%-2d %-10s rel %.2e%s" % (
            case["output"], case["kernel"], case["compute_dtype"], case["steps"],
            "x".join(map(str, case["shape"])), rel, "  (rank-deficient)" if group == "ill" else ""))
    print("fp32/fp64: %d cases, worst relative Frobenius difference %.2e (pass < 1e-5)"
          % (count["fp"], worst["fp"]))
    print("bf16 (oneDNN off): %d cases, worst %.2e (pass < 1e-5)" % (count["bf16"], worst["bf16"]))
    print("rank-deficient (lowrank): %d cases, worst %.2e -- not gated: NS amplifies rounding in\n"
          "  the near-null space by up to a^steps; bit-exact only at the golden's OpenBLAS thread\n"
          "  count (--threads 2 reproduces every golden file bit for bit on the dev box)."
          % (count["ill"], worst["ill"]))
    return max(worst["fp"], worst["bf16"])


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Time DeepSpeed's NS kernels (standard, gram) in PyTorch on the CPU.",
        epilog="FLOP counts" + __doc__.split("FLOP counts", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=1,
                   help="torch.set_num_threads and OPENBLAS/OMP_NUM_THREADS (default 1)")
    p.add_argument("--shapes", default=DEFAULT_SHAPES,
                   help="comma-separated ROWSxCOLS list (default %(default)s)")
    p.add_argument("--dtypes", default="fp32",
                   help="comma-separated compute dtypes from fp32,fp64,bf16 (default fp32)")
    p.add_argument("--kernels", default="standard,gram", help="comma-separated (default %(default)s)")
    p.add_argument("--steps", type=int, default=5, help="NS steps (default 5)")
    p.add_argument("--repeat", type=int, default=5, help="timed calls per case (median reported)")
    p.add_argument("--warmup", type=int, default=1, help="untimed calls first (default 1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the Gaussian input")
    p.add_argument("--mkldnn", choices=["on", "off"], default="on",
                   help=("oneDNN for bf16 GEMMs: on = torch's default (fp32 accumulation on CPUs "
                         "with bf16 support), off = native fallback (bf16 accumulation)"))
    p.add_argument("--no-sgemm", action="store_true", help="skip the torch.mm reference")
    p.add_argument("--json", metavar="FILE", help="write records as JSON ('-' for stdout)")
    p.add_argument("--check-golden", metavar="DIR",
                   help="instead of timing, compare against DeepSpeed golden outputs in DIR")
    args = p.parse_args(argv)

    pin_blas_threads(args.threads)
    t = load()
    binfo = blas_info()
    if binfo["blas_threads"] is not None and binfo["blas_threads"] != args.threads:
        sys.stderr.write("torch_ns.py: warning: %s runs %d threads, not %d\n"
                         % (binfo["blas"], binfo["blas_threads"], args.threads))
    if args.check_golden:
        worst = check_golden(args.check_golden, args.threads)
        return 0 if worst < 1e-5 else 1

    t.set_num_threads(args.threads)
    t.backends.mkldnn.enabled = (args.mkldnn == "on")
    shapes = parse_shapes(args.shapes)
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
    for d in dtypes:
        if d not in ("fp32", "fp64", "bf16"):
            raise SystemExit("torch_ns.py: unknown dtype %r (fp32, fp64, bf16)" % d)
    for k in kernels:
        if k not in KERNELS:
            raise SystemExit("torch_ns.py: unknown kernel %r (standard, gram)" % k)
    gen = t.Generator().manual_seed(args.seed)
    records = []
    for (rows, cols) in shapes:
        G = t.randn(rows, cols, generator=gen, dtype=t.float32)
        sgemm = None
        if not args.no_sgemm:
            pdim, qdim = min(rows, cols), max(rows, cols)
            L = t.randn(pdim, qdim, generator=gen)
            Rt = t.randn(qdim, pdim, generator=gen)
            s, _ = time_call(lambda: t.mm(L, Rt), args.repeat, args.warmup)
            sgemm = flops("sgemm", rows, cols) / s / 1e9
        for dname in dtypes:
            dt = dtype_of(dname)
            for k in kernels:
                fn = KERNELS[k]
                s, smin = time_call(lambda: fn(G, steps=args.steps, dtype=dt), args.repeat,
                                    args.warmup)
                fl = flops(k, rows, cols, steps=args.steps)
                records.append(dict(shape=[rows, cols], kernel=k, dtype=dname,
                                    threads=args.threads, steps=args.steps,
                                    seconds_median=s, seconds_min=smin, flops=fl, gflops=fl / s / 1e9,
                                    sgemm_gflops=sgemm, repeat=args.repeat,
                                    mkldnn=args.mkldnn, torch_version=t.__version__,
                                    **binfo))
                r = records[-1]
                print("%-11s %-8s %-4s thr %-2d  %10.4f s  %8.2f GFLOP/s  (sgemm %s)" % (
                    "%dx%d" % (rows, cols), k, dname, args.threads, s, r["gflops"],
                    "%.2f" % sgemm if sgemm is not None else "-"), file=sys.stderr, flush=True)

    # Human table
    print("\ntorch %s, CPU, %d thread(s) (%s threads: %s), %d steps, median of %d (warm-up %d);"
          " GFLOP/s from the median" % (t.__version__, args.threads, binfo["blas"],
                                        binfo["blas_threads"], args.steps, args.repeat, args.warmup))
    hdr = "%-11s %-9s %-5s %12s %12s %10s %12s %9s" % (
        "shape", "kernel", "dtype", "s (median)", "s (min)", "GFLOP/s", "SGEMM GF/s", "% SGEMM")
    print(hdr)
    print("-" * len(hdr))
    for r in records:
        pct = 100.0 * r["gflops"] / r["sgemm_gflops"] if r["sgemm_gflops"] else float("nan")
        print("%-11s %-9s %-5s %12.5f %12.5f %10.2f %12s %9.1f" % (
            "%dx%d" % tuple(r["shape"]), r["kernel"], r["dtype"], r["seconds_median"],
            r["seconds_min"], r["gflops"],
            "%.2f" % r["sgemm_gflops"] if r["sgemm_gflops"] else "-", pct))
    if args.json:
        txt = json.dumps(records, indent=1)
        if args.json == "-":
            print(txt)
        else:
            with open(args.json, "w") as f:
                f.write(txt + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
