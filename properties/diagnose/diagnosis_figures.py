#!/usr/bin/python3
"""The diagnosis figures report.json shows (its "diagnosis" section: `nsv diagnose` on every run of
fixtures/runs), each recomputed here from the dumped tensors with numpy, an implementation that
shares nothing with the library's (analysis/src/diagnose.cpp):

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

Tolerances: numpy and the library evaluate the same fp64 formulas in other orders. Each norm or dot
product over n terms is within gamma_n ~ n u64 of exact, relative, so a quotient of two of them
within (2n + 4) u64 and a product of three (cosine) within (3n + 6) u64; allowed: 4 (n + 2) u64 on
every figure, relative (max |a - b| and the bits compare exactly: a difference of two fp32 values
is exact in fp64 when their exponents are close, as they are here). What this does not recompute:
each fit's rel_diff and own_error and the input_difference, which need the semantics recomputed
by the reference (the diagnose_runs properties check the verdicts they give).

  diagnosis_figures.py REPORT_JSON FIXTURE_RUNS_DIR [--negative-control]
"""
import functools
import json
import struct
import sys
from pathlib import Path

import numpy as np

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
    meta = json.loads((runs / "runs.json").read_text())
    lr, wd = meta["muon"]["lr"], meta["muon"]["wd"]
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
            semantics = p["reference"].get("match") or "whole"
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
