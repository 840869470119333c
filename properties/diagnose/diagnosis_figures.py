#!/usr/bin/python3
"""The diagnosis figures report.json shows (its "diagnosis" section: `nsv diagnose` on every run of
fixtures/runs), each recomputed here from the dumped tensors with numpy, an implementation that
shares nothing with the library's (analysis/src/diagnose.cpp) but Newton-Schulz itself:

  - each parameter's geometry: rows and cols of the weight, AutoTP's split axis by the matrix's role
    (q/k/v/gate/up column-parallel: rows; o/down row-parallel: cols), tp equal shard widths;
  - grad, weight and update: the candidate's shards put back together along that axis against the
    reference's tensor: rel_diff ||a - b|| / ||b||, cosine, norm ratio, max |a - b|, bit identity;
  - first_step (no momentum dumped);
  - each run's delta_rounding: u32 ((1 + [wd > 0]) ||w|| / ||delta|| + 3) + u_dump, the derivation
    of analysis/src/diagnose_bounds.cpp;
  - each fit's bound 3 e_own + e_delta + u32 from its own e_own, and `within` = rel_diff <= bound;
  - invariance_bound = input_difference + the two match bounds of the reference's semantics, and
    tp_invariant = ||u_cand - u_ref|| / ||u_ref|| <= invariance_bound, the updates recovered as
    u = -(delta + lr wd w) / lr.

  - each fit's rel_diff (the run's update against the semantics recomputed from the run's own
    gradient and momentum) and own_error (that recomputation in fp32 against the same in fp64), and
    each parameter's input_difference (the two runs' fp64 recomputations of the reference's match),
    with the semantics composed here: Nesterov's blend lerp(g, m, beta) as PyTorch's fused lerp,
    fmadd(beta - 1, m - g, m) rounded once to fp32 (emulated exactly in fp64, below); the shards of
    AutoTP's equal split, each head block of head_dim rows (q/k/v) for per-head NS; Muon's scale
    sqrt(max(1, rows / cols)) of the whole matrix's or the shard's shape, an fp32 product (the fp64
    recomputation is stored as fp32 before it, as the library stores every update); the set of
    semantics each parameter must have (per-head only where heads lie along the rows); and
    same_bits_as. Only Newton-Schulz itself is the library's (nsverify.ns, the reference kernel,
    checked against float64 and the SVD by its own catalogue): everything around it is numpy.

Tolerances: numpy and the library evaluate the same fp64 formulas in other orders. Each norm or dot
product over n terms is within gamma_n ~ n u64 of exact, relative, so a quotient of two of them
within (2n + 4) u64 and a product of three (cosine) within (3n + 6) u64; allowed: 4 (n + 2) u64 on
every figure, relative (max |a - b| and the bits compare exactly: a difference of two fp32 values
is exact in fp64 when their exponents are close, as they are here). The recomputed semantics are
the library's to the bit (the same fp32 operations on the same values), so their rel_diffs take the
same tolerance.

  diagnosis_figures.py REPORT_JSON FIXTURE_RUNS_DIR [--negative-control]
"""
import functools
import json
import struct
import sys
from pathlib import Path

import numpy as np

import nsverify

U32 = 2.0 ** -24
U64 = 2.0 ** -53
COLUMN_PARALLEL = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")
ROW_PARALLEL = ("o_proj", "down_proj")


@functools.lru_cache(maxsize=None)
def read_safetensors(path):
    """{name: float64 array} of a float32 safetensors file: an 8-byte length, a JSON header, the data.
    Read once per file: the runs share their gradients, momenta and weights, and the negative control
    checks the report 13 times more."""
    raw = Path(path).read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        if meta["dtype"] != "F32":
            raise SystemExit(f"{path}: tensor {name} is {meta['dtype']}; this check reads F32 dumps only")
        begin, end = meta["data_offsets"]
        out[name] = np.frombuffer(raw[8 + length + begin:8 + length + end], dtype="<f4").reshape(meta["shape"]).astype(np.float64)
    return out


def split_axis(name):
    role = name.split(".")[-2]
    if role in COLUMN_PARALLEL:
        return 0
    if role in ROW_PARALLEL:
        return 1
    raise SystemExit(f"{name}: no AutoTP rule written here for {role}")


def assembled(folder, kind, name, tp, axis):
    return np.concatenate([read_safetensors(folder / f"{kind}.rank{r}.safetensors")[name] for r in range(tp)], axis=axis)


def tolerance(n):
    return 4 * (n + 2) * U64


def close(got, want, n):
    return abs(got - want) <= tolerance(n) * abs(want)


def comparison(a, b):
    d = np.linalg.norm(a - b)
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return {"rel_diff": d / nb, "cosine": float(np.sum(a * b)) / (na * nb), "norm_ratio": na / nb,
            "max_abs_diff": float(np.max(np.abs(a - b))), "bit_identical": bool(np.array_equal(a, b))}


def check_comparison(problems, where, got, want, n):
    for key in ("rel_diff", "cosine", "norm_ratio"):
        if not close(got[key], want[key], n):
            problems.append(f"{where}.{key}: report {got[key]!r}, recomputed {want[key]!r}")
    for key in ("max_abs_diff", "bit_identical"):
        if got[key] != want[key]:
            problems.append(f"{where}.{key}: report {got[key]!r}, recomputed {want[key]!r}")


def delta_rounding(delta, weight, wd):
    d = np.linalg.norm(delta)
    return 0.0 if d == 0 else U32 * ((2.0 if wd > 0 else 1.0) * np.linalg.norm(weight) / d + 3.0)


def fma_fp32(a, b, c):
    """fp32 fmadd(a, b, c) of fp32 arrays, rounded once: a * b is exact in fp64 (24 + 24 bits), s = a * b + c
    rounds to fp64 with the error e (TwoSum, exact), and s to fp32 rounds once more. That second rounding
    differs from the single one only where s lies exactly halfway between two fp32 values and e != 0:
    the exact sum then lies on e's side of the midpoint."""
    p, c = a.astype(np.float64) * b.astype(np.float64), c.astype(np.float64)
    s = p + c
    bb = s - p
    e = (p - (s - bb)) + (c - bb)
    r = s.astype(np.float32)
    r64 = r.astype(np.float64)
    toward = np.nextafter(r, np.where(s > r64, np.float32(np.inf), np.float32(-np.inf))).astype(np.float64)
    tie = (s != r64) & (np.abs(s - r64) == np.abs(toward - s))
    return np.where(tie & (e != 0) & (np.sign(e) == np.sign(toward - s)), toward.astype(np.float32), r)


def check_fma_emulation():
    """A case where rounding twice differs from rounding once: a b = 2^-24 - 2^-60 (a, b = 2^-12 (1 -+ 2^-18)),
    c = 1 + 2^-23. The sum rounds to fp64 as the fp32 midpoint 1 + 2^-23 + 2^-24, which ties to even,
    1 + 2^-22; the exact sum lies below the midpoint, so fmadd gives 1 + 2^-23."""
    a, b = np.float32(2.0 ** -12 * (1 - 2.0 ** -18)), np.float32(2.0 ** -12 * (1 + 2.0 ** -18))
    got = fma_fp32(np.array([a]), np.array([b]), np.array([np.float32(1 + 2.0 ** -23)]))[0]
    if got != np.float32(1 + 2.0 ** -23):
        raise SystemExit(f"fma_fp32 rounds twice: {got!r}, expected 1 + 2^-23")


def nesterov_blend(grad, momentum, beta):
    """PyTorch's grad.lerp(momentum, beta) in fp32 (beta >= 0.5: fmadd(beta - 1, momentum - grad, momentum))."""
    if beta < 0.5:
        raise SystemExit(f"momentum {beta}: this check composes PyTorch's lerp for beta >= 0.5 only")
    g, m = grad.astype(np.float32), momentum.astype(np.float32)
    return fma_fp32(np.full(g.shape, np.float32(beta) - np.float32(1)), m - g, m)


def muon_scale(rows, cols):
    return np.float32(np.sqrt(rows / cols)) if rows > cols else None


def scaled(x32, rows, cols):
    """The NS result stored as fp32, times Muon's scale of a rows x cols shape as an fp32 product."""
    s = muon_scale(rows, cols)
    return x32 if s is None else x32 * s


def semantics_updates(blend, axis, tp, head_dim, ns_knobs, dtype):
    """{semantics key: the whole update (fp32 values as float64)} of every semantics of a Muon update on
    AutoTP's equal split into tp shards along axis, NS in `dtype`."""
    ns = lambda x: np.asarray(nsverify.ns(x, **dict(ns_knobs, dtype=dtype)), dtype=np.float64).astype(np.float32)
    rows, cols = blend.shape
    shards = np.split(blend, tp, axis=axis)
    whole = ns(blend)
    whole_shards = np.split(whole, tp, axis=axis)
    per_shard = [ns(s) for s in shards]
    out = {
        "whole": scaled(whole, rows, cols),
        "per_shard": np.concatenate([scaled(u, *s.shape) for u, s in zip(per_shard, shards)], axis=axis),
        "per_shard_global_scale": np.concatenate([scaled(u, rows, cols) for u in per_shard], axis=axis),
        "whole_local_scale": np.concatenate([scaled(u, *s.shape) for u, s in zip(whole_shards, shards)], axis=axis),
    }
    if head_dim:  # no scale: DeepSpeed's muon_update with heads scales no head block
        out["per_head"] = np.concatenate([ns(blend[h:h + head_dim]) for h in range(0, rows, head_dim)], axis=0)
    return {key: u.astype(np.float64) for key, u in out.items()}


@functools.lru_cache(maxsize=None)
def recomputed_updates(runs, tp, name, axis, head_dim, beta, knobs, dtype):
    """semantics_updates of parameter `name` from the gradient and momentum the run at tp dumped (tp 1: the
    reference). Computed once: the runs of one tp share their inputs, and the negative control checks the
    report 17 times more."""
    if tp == 1:
        inputs = {kind: read_safetensors(runs / "reference" / f"{kind}.safetensors")[name] for kind in ("grad", "momentum")}
    else:
        inputs = {kind: assembled(runs / f"tp{tp}", kind, name, tp, axis) for kind in ("grad", "momentum")}
    return semantics_updates(nesterov_blend(inputs["grad"], inputs["momentum"], beta), axis, tp, head_dim, dict(knobs), dtype)


def rel_diff(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def check_fits(problems, where, verdict, observed, u32, u64, n):
    """Each fit's rel_diff and own_error against the semantics recomputed here; the set of semantics; same_bits_as."""
    keys = [f["semantics"] for f in verdict["fits"]]
    if sorted(keys) != sorted(u32):
        problems.append(f"{where}.fits: semantics {keys}, expected {sorted(u32)}")
        return
    for i, fit in enumerate(verdict["fits"]):
        key = fit["semantics"]
        for figure, want in (("rel_diff", rel_diff(observed, u32[key])), ("own_error", rel_diff(u32[key], u64[key]))):
            if not close(fit[figure], want, n):
                problems.append(f"{where}.fits[{key}].{figure}: report {fit[figure]!r}, recomputed {want!r}")
        same = [earlier for earlier in keys[:i] if np.array_equal(u32[earlier], u32[key])]
        if fit["same_bits_as"] != same:
            problems.append(f"{where}.fits[{key}].same_bits_as: report {fit['same_bits_as']}, recomputed {same}")


def check_run(problems, where, verdict, delta, weight, wd, n):
    want = delta_rounding(delta, weight, wd)
    if not close(verdict["delta_rounding"], want, n):
        problems.append(f"{where}.delta_rounding: report {verdict['delta_rounding']!r}, recomputed {want!r}")
    for fit in verdict["fits"]:
        bound = 3 * fit["own_error"] + verdict["delta_rounding"] + U32
        if not close(fit["bound"], bound, 4):
            problems.append(f"{where}.fits[{fit['semantics']}].bound: report {fit['bound']!r}, 3 e_own + e_delta + u32 = {bound!r}")
        if fit["within"] != (fit["rel_diff"] <= fit["bound"]):
            problems.append(f"{where}.fits[{fit['semantics']}].within: {fit['within']} for rel_diff {fit['rel_diff']!r}, bound {fit['bound']!r}")


def problems_of(report, runs):
    problems, checked = [], 0
    check_fma_emulation()
    meta = json.loads((runs / "runs.json").read_text())
    lr, wd, beta = meta["muon"]["lr"], meta["muon"]["wd"], meta["muon"]["momentum"]
    if not meta["muon"]["nesterov"]:
        raise SystemExit(f"{runs / 'runs.json'}: runs without Nesterov: this check composes Nesterov's blend only")
    ref = {kind: read_safetensors(runs / "reference" / f"{kind}.safetensors") for kind in ("grad", "momentum", "weight", "delta")}
    cases = report["diagnosis"]["cases"]
    if not cases:
        problems.append("report.json's diagnosis has no case: nothing was checked")
    for case in cases:
        tp, run, d = case["tp"], case["run"], case["diagnosis"]
        folder = runs / f"tp{tp}"
        if not d["params"]:
            problems.append(f"tp{tp}/{run}: no parameter: nothing was checked")
        for p in d["params"]:
            name, where = p["name"], f"tp{tp}/{run}/{p['name']}"
            axis = split_axis(name)
            w_ref = ref["weight"][name]
            n = w_ref.size
            if (p["rows"], p["cols"], p["split_axis"]) != (*w_ref.shape, axis):
                problems.append(f"{where}: rows, cols, split_axis {p['rows']}, {p['cols']}, {p['split_axis']}; "
                                f"the dump and AutoTP's rule say {w_ref.shape[0]}, {w_ref.shape[1]}, {axis}")
            if p["shard_widths"] != [w_ref.shape[axis] // tp] * tp:
                problems.append(f"{where}.shard_widths: {p['shard_widths']}, expected {tp} of {w_ref.shape[axis] // tp}")
            cand = {kind: assembled(folder, kind, name, tp, axis) for kind in ("grad", "momentum", "weight")}
            cand["delta"] = assembled(folder / run, "delta", name, tp, axis)
            if p["first_step"]:
                problems.append(f"{where}.first_step: true, but both runs dump the momentum")
            check_comparison(problems, where + ".grad", p["grad"], comparison(cand["grad"], ref["grad"][name]), n)
            check_comparison(problems, where + ".weight", p["weight"], comparison(cand["weight"], w_ref), n)
            check_comparison(problems, where + ".update", p["update"], comparison(cand["delta"], ref["delta"][name]), n)
            check_run(problems, where + ".reference", p["reference"], ref["delta"][name], w_ref, wd, n)
            check_run(problems, where + ".candidate", p["candidate"], cand["delta"], cand["weight"], wd, n)
            knobs = {k: d["ns"][k] for k in ("kernel", "steps", "accumulate", "products")}
            head_dim = meta["model"]["head_dim"] if name.split(".")[-2] in ("q_proj", "k_proj", "v_proj") else 0
            recomputed = {}
            for side, run_tp, delta, weight in (("reference", 1, ref["delta"][name], w_ref),
                                                ("candidate", tp, cand["delta"], cand["weight"])):
                u32, u64 = (recomputed_updates(runs, run_tp, name, axis, head_dim, beta, tuple(sorted(knobs.items())), dtype)
                            for dtype in ("fp32", "fp64"))
                check_fits(problems, f"{where}.{side}", p[side], -(delta + lr * wd * weight) / lr, u32, u64, n)
                recomputed[side] = u64
            semantics = p["reference"].get("match") or "whole"
            want = rel_diff(recomputed["candidate"][semantics], recomputed["reference"][semantics])
            if not close(p["input_difference"], want, n):
                problems.append(f"{where}.input_difference: report {p['input_difference']!r}, recomputed {want!r}")
            bounds = [next(f["bound"] for f in p[side]["fits"] if f["semantics"] == semantics) for side in ("reference", "candidate")]
            invariance = p["input_difference"] + bounds[0] + bounds[1]
            if not close(p["invariance_bound"], invariance, 4):
                problems.append(f"{where}.invariance_bound: report {p['invariance_bound']!r}, d64 + both bounds = {invariance!r}")
            u_ref = -(ref["delta"][name] + lr * wd * w_ref) / lr
            u_cand = -(cand["delta"] + lr * wd * cand["weight"]) / lr
            distance = np.linalg.norm(u_cand - u_ref) / np.linalg.norm(u_ref)
            if abs(distance - p["invariance_bound"]) > tolerance(n) * p["invariance_bound"] and \
                    p["tp_invariant"] != (distance <= p["invariance_bound"]):
                problems.append(f"{where}.tp_invariant: {p['tp_invariant']}, but the updates differ by {distance!r} "
                                f"against the bound {p['invariance_bound']!r}")
            checked += 1
    return problems, checked


# What the negative control changes in a copy of the report, one at a time: each kind of figure
# this check recomputes, moved by far more than its tolerance.
def perturbations(report):
    p0 = ("diagnosis", "cases", 0, "diagnosis", "params", 0)
    for path, change in [
        (p0 + ("grad", "rel_diff"), lambda v: v * (1 + 1e-6)),
        (p0 + ("grad", "cosine"), lambda v: v - 1e-9),
        (p0 + ("weight", "norm_ratio"), lambda v: v + 1e-6),
        (p0 + ("update", "max_abs_diff"), lambda v: v * 2),
        (p0 + ("update", "bit_identical"), lambda v: not v),
        (p0 + ("split_axis",), lambda v: 1 - v),
        (p0 + ("shard_widths",), lambda v: v[::-1] if v[0] != v[-1] else [v[0] + 1] + v[1:]),
        (p0 + ("first_step",), lambda v: not v),
        (p0 + ("candidate", "delta_rounding"), lambda v: v * 1.01),
        (p0 + ("reference", "fits", 0, "bound"), lambda v: v * 1.01),
        (p0 + ("reference", "fits", 0, "rel_diff"), lambda v: v * (1 + 1e-6)),
        (p0 + ("candidate", "fits", 2, "own_error"), lambda v: v * (1 + 1e-6)),
        (p0 + ("candidate", "fits", 3, "same_bits_as"), lambda v: []),
        (p0 + ("input_difference",), lambda v: v * (1 + 1e-6)),
        (p0 + ("candidate", "fits", 0, "within"), lambda v: not v),
        (p0 + ("invariance_bound",), lambda v: v * 1.01),
        (p0 + ("tp_invariant",), lambda v: not v),
    ]:
        copy = json.loads(json.dumps(report))
        node = copy
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = change(node[path[-1]])
        yield "/".join(map(str, path[3:])), copy


def main(argv):
    negative = "--negative-control" in argv
    args = [a for a in argv if a != "--negative-control"]
    if len(args) != 2:
        raise SystemExit(__doc__.rsplit("\n\n", 1)[-1])
    report, runs = json.loads(Path(args[0]).read_text()), Path(args[1])
    if negative:
        unseen = [what for what, copy in perturbations(report) if not problems_of(copy, runs)[0]]
        for what in unseen:
            print("FAIL: a changed figure was not seen:", what)
        print("negative control: every changed figure seen" if not unseen else "")
        return 1 if unseen else 0
    problems, checked = problems_of(report, runs)
    for p in problems:
        print("FAIL:", p)
    print(f"diagnosis figures: {checked} parameters of {len(report['diagnosis']['cases'])} runs recomputed, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
