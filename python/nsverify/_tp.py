"""check_tp: your tensor-parallel Newton-Schulz (or Muon update) on AutoTP's shards."""

import dataclasses

import numpy as np

from . import _nsverify as _core
from ._deadline import limited_function
from ._kernel import given_settings
from ._records import DEFAULT_SEED, DEFAULTS, NS_KNOBS, settings
from ._reference import _layout, config as _config
from ._results import CheckResult, PropertyResult, _short, _table


@dataclasses.dataclass
class Candidate:
    """One semantics a TP result can have, and how the outputs compare with it over the diagnosis cases.

    matched: cases where the outputs are bit-identical to it or within its rounding bound 2 S + N1.
    key: the semantics' key in nsverify's table (the keys of ``nsv diagnose --json``).
    """
    semantics: str
    key: str
    cases: int
    matched: int
    bit_identical: int
    median_distance: float
    max_distance: float


class TpCheckResult(CheckResult):
    """check_tp's result: the claim's property (truthy only if it holds) and the diagnosis.

    diagnosis   the semantics the outputs match in every diagnosis case (ties: the one applicable to more
                cases, then the smaller median distance), e.g. "per-shard NS, local-shape scale"; None
                when no semantics matches every case
    candidates  every semantics with its matched cases and distances (rel_diff of the assembled
                outputs to it), nearest first
    cases       per diagnosis case: the layout, the error the function raised there (if any), and the
                distance to each semantics
    """

    def __init__(self, subject, properties, target, candidates, cases):
        super().__init__(subject, properties)
        self.target = target
        # every case matched first (the most cases first: per-head NS applies to head layouts only)
        self.candidates = sorted(candidates, key=lambda c: (c.matched < c.cases, -c.matched, c.median_distance))
        self.cases = cases
        first = self.candidates[0] if self.candidates else None
        self.diagnosis = first.semantics if first and first.cases and first.matched == first.cases else None

    def _why_nothing_required(self):
        failed = [c for c in self.cases if c.get("error")]
        why = "claim='none' asserts no property: the diagnosis only"
        if failed:
            why += (f"; and {len(failed)} of the diagnosis' {len(self.cases)} cases did not run "
                    f"(case {failed[0]['case']}: {_short(failed[0]['error'], 400)})")
        return why

    def diagnosis_table(self):
        rows = [[c.semantics, f"{c.matched}/{c.cases}", c.bit_identical, f"{c.median_distance:.3g}",
                 f"{c.max_distance:.3g}"] for c in self.candidates]
        return _table(rows, ["semantics", "matched", "bit-identical", "median rel_diff", "max rel_diff"])

    def __str__(self):
        head = super().__str__()
        words = self.diagnosis or "none of the semantics (nearest: " + (
            self.candidates[0].semantics if self.candidates else "?") + ")"
        return f"{head}\ntarget: {self.target}\ndiagnosis: the outputs compute {words}\n{self.diagnosis_table()}"

    __repr__ = __str__

    def to_dict(self):
        d = super().to_dict()
        d.update(target=self.target, diagnosis=self.diagnosis,
                 candidates=[dataclasses.asdict(c) for c in self.candidates], cases=self.cases)
        return d


_T = DEFAULTS["tp"]


def check_tp(fn, claim=_T["claim"], target=_T["target"], aspect_scale=_T["aspect_scale"], kernel=_T["kernel"],
             steps=_T["steps"], dtype=_T["dtype"], accumulate=_T["accumulate"], products=_T["products"],
             coeffs=_T["coeffs"], restart_at=_T["restart_at"], max_tp=_T["max_tp"], max_dim=_T["max_dim"], dp=None,
             dp_partition=_T["dp_partition"], max_success=_T["max_success"], max_size=_T["max_size"],
             diagnosis_cases=_T["diagnosis_cases"], seed=None, replay=None, counterexamples=None,
             shrink_seconds=_T["shrink_seconds"], timeout=_T["timeout"]):
    """Check ``fn(shards: list[np.ndarray], spec) -> list[np.ndarray]``, your tensor-parallel NS.

    fn receives the shards of a matrix exactly as AutoTP lays them out (float32, rank order; a rank
    past the KV groups gets a zero-width shard) and returns each rank's result, of its shard's shape.
    spec is a types.SimpleNamespace: tp, axis (0 rows / 1 cols), rows, cols, rule ("grain",
    "head_aligned", "gqa_q_proj", "gqa_kv_proj", "fused_qkv"), heads, kv_heads, head_dim (> 0: whole
    heads of head_dim rows along dim 0), grain, fused_qkv, ranges (each rank's (begin, end) pieces of
    the split axis), shapes (each rank's shard shape), kernel, steps, dtype, coeffs.

    dp      a TP x DP mesh (FSDP or ZeRO combined with TP): every case's TP shards are partitioned
            again over dp data-parallel ranks (1..64), and fn receives one piece per mesh rank instead
            of one shard per TP rank, in mesh-rank order d * tp + t (the TP group of one DP index is
            tp consecutive ranks), and returns one result per piece, of the piece's shape.
            dp_partition says how: "zero" (ZeRO-3's rule, each parameter's own partition: the shard
            flattened in row-major order and cut into pieces of ceil(N / dp) elements, handed as 1-D
            arrays; a piece can cut a row; ZeRO-1/2's partition of the whole flattened group, padded
            to a multiple of 2 dp, is not modelled) or "fsdp"
            (FSDP2's Shard(0): ceil(rows / dp) whole rows, handed as 2-D blocks); trailing pieces are
            shorter or empty. spec then also holds dp, dp_partition, mesh_rank_order, pieces (each mesh
            rank's (begin, end) in its TP shard's row-major elements) and piece_shapes; the tp-1 case
            of the exact claim is the whole matrix on one rank with dp = 1. None (the default): TP
            alone, spec.dp None.

    Layouts drawn (checks/sharding/layout_generators.hpp): tp 1..max_tp and beyond (zero-width
    ranks), both axes, the grain rule with grain 1, 64 or any, head-aligned shards, GQA q/k/v
    projections, fused [Q;K;V]; sides up to max_dim (4 max_dim for stacked heads).

    claim   "exact": two properties, reported as two rows so that a failure says which half broke:
              tp-invariance: every rank's block has the bits of fn's own result with the whole
              matrix on one rank (tp 1), so the result does not depend on the sharding; and
              computes the target: fn's tp-1 result is the target within 2 S (two evaluations of one
              map; S as below). A tp-invariant function that computes something else (the identity,
              zeros, a constant) fails the second.
            "rounding": computes the target (as above), and the assembled result at any tp is within
              the S5 bound 2 S + N1 of the target, S the computation's own error (max over equivalent
              evaluations: the whole matrix, three permutations of it, both all-reduce loops with the
              whole matrix on one rank, and both loops on this layout on the permuted inputs), N1 the reduction noise one step of the all-reduce loops adds on
              this layout (sides >= 16).
            "none": no claim; only the diagnosis (the verdict is then "NOTHING CHECKED", falsy).
    target  "whole" (NS of the unsharded matrix, its blocks) or "per_head" (NS of each head).
    aspect_scale  True when fn is a Muon update: the target is then multiplied by Muon's
            sqrt(max(1, rows/cols)) of the whole matrix's shape.
    The knobs (kernel, steps, dtype, accumulate, products, coeffs, restart_at) say which kernel the
    target runs (those of ``nsv ns``).

    Whatever the claim, the result carries a diagnosis over diagnosis_cases sampled layouts: which
    semantics the outputs match, named as ``nsv diagnose`` names them (one table, nsv/semantics.hpp):
    for NS results "whole-matrix NS", "per-shard NS", "per-head NS"; for Muon updates
    (aspect_scale=True) "whole-matrix NS, exact" (the tp-1 optimizer), "per-shard NS, local-shape
    scale" (DeepSpeed's AutoTP today), "per-shard NS, global-shape scale", "whole-matrix NS,
    local-shape scale", "per-head NS"; on a mesh (dp >= 2) also "NS of each mesh piece" (Muon
    updates: "NS of each mesh piece, the piece's scale"; FSDP or ZeRO combined with Muon naively,
    a ZeRO piece orthogonalized as a 1 x n row); and the distance to each. A layout on which fn
    raises is listed with its error.

    counterexamples  a folder for the failures' arrays (the input, fn's assembled output and the
            target as .npy, in a fresh subfolder, never overwriting a file); None: a new temporary folder.
    shrink_seconds  how long a failing property may shrink its counterexample (default 5; 0..3600; 0:
            the first failing case as found), as nsverify.check_kernel.
    timeout  seconds one call of fn may take (default 300; 0: no limit), as nsverify.check_kernel.
    max_success, max_size, seed, replay  RapidCheck's cases per property, its size parameter, its seed
            (fixed by default) and a failure's replay string, as nsverify.check_kernel.

    Returns a TpCheckResult: truthy only if every property of the claim holds and checked a case.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a callable fn(shards, spec) -> list of arrays, got {type(fn).__name__}")
    s = settings("tp", **given_settings(locals(), restart_at))
    cfg = _config(**{k: s[k] for k in NS_KNOBS})
    name = getattr(fn, "__qualname__", repr(fn))
    return tp_result(_core.check_tp(limited_function(fn, s["timeout"]), name, "tp", s), name, s, cfg)


def tp_result(out, name, s, cfg, result_type=TpCheckResult, **extra):
    """A result_type(subject, properties, target, candidates, cases, **extra) from the core's check_tp dict,
    with its seed and the failures' arrays saved (in the settings' `counterexamples`, or a new temporary
    folder)."""
    properties = [PropertyResult.from_core(p, required=True) for p in out["properties"]]
    diagnosis = out["diagnosis"] or {"candidates": [], "cases": []}
    candidates = [Candidate(**c) for c in diagnosis["candidates"]]
    subject = f"check_tp({name}: claim {s['claim']}, target {out['target']}; {cfg.kernel} {cfg.dtype} steps={cfg.steps})"
    result = result_type(subject, properties, out["target"], candidates, diagnosis["cases"], **extra)
    from ._counterexamples import save_failures
    result.seed = DEFAULT_SEED if s["seed"] is None else s["seed"]
    save_failures(result, s["counterexamples"], dtype=np.float64 if cfg.dtype == "fp64" else np.float32)
    return result


def tp_rounding_bound(G, layout, **knobs):
    """The TP catalogue's bound for NS of the whole matrix G computed on `layout`'s shards (S5, the bound
    check_tp's "rounding" claim asserts): {"s", "n1", "value": 2 S + N1, "derivation"}. S is the
    computation's own error (the largest rel_diff to float64 among equivalent evaluations), N1 the noise
    one step of the all-reduce loops adds on this layout. knobs: those of nsverify.config."""
    return _core.tp_bound(G, _layout("layout", layout), _config(**knobs))
