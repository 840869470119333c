"""nsverify.torch.check_tp: the TP claims and the diagnosis on real torch.distributed ranks."""

import collections
import types

import numpy as np

from .. import _nsverify as _core
from .._kernel import _name, given_settings
from .._records import DEFAULTS, NS_KNOBS, settings
from .._reference import autotp_layout, config as _config, plan_strategy, split
from .._tp import TpCheckResult, tp_result
from ._kernel import environment, resolve_accumulate
from ._pool import RankFailure, RankPool
from ._probe import support
from ._tensors import tidy

#: Collective names as the cost model counts them (nsv's Collective: all_gather, all_reduce, all_to_all).
_KIND = {"all_gather_into_tensor": "all_gather", "_all_gather_base": "all_gather", "all_gather_coalesced": "all_gather",
         "all_reduce_coalesced": "all_reduce", "all_to_all_single": "all_to_all"}


def rank_spec(spec, rank, world_size):
    """The spec fn(shard, spec, group) gets on `rank`: the check's spec (tp, axis, rows, cols, rule, heads,
    kv_heads, head_dim, grain, fused_qkv, ranges, shapes, kernel, steps, dtype, coeffs, and on a mesh dp,
    dp_partition, mesh_rank_order, pieces, piece_shapes) and rank, world_size, sizes (each TP rank's width
    along the split axis), shard_shape (this rank's TP shard), fused ("qkv" or None); on a mesh also
    tp_rank, dp_rank and piece_shape (this rank's piece)."""
    d = dict(vars(spec))
    t = rank % spec.tp
    d.update(rank=rank, world_size=world_size, sizes=[shape[spec.axis] for shape in spec.shapes],
             shard_shape=tuple(spec.shapes[t]), fused="qkv" if spec.fused_qkv else None)
    if spec.dp is not None:
        d.update(tp_rank=t, dp_rank=rank // spec.tp, piece_shape=tuple(spec.piece_shapes[rank]))
    return types.SimpleNamespace(**d)


def mesh_size(spec):
    """The ranks a case runs on: tp, or tp x dp on a mesh."""
    return spec.tp * (spec.dp or 1)


def layout_words(spec):
    return (f"{spec.rows}x{spec.cols} axis {spec.axis} {spec.rule}"
            + (f" heads {spec.heads}/{spec.kv_heads}" if spec.heads else "") + (f" {spec.grain}" if spec.rule == "grain" else "")
            + f", tp {spec.tp}, widths {[shape[spec.axis] for shape in spec.shapes]}"
            + (f", dp {spec.dp} ({spec.dp_partition})" if spec.dp else ""))


class RankResults(list):
    """Each rank's result; `aliased`: whether each shares its shard's storage (read by the S-untouched property)."""

    def __init__(self, results, aliased):
        super().__init__(results)
        self.aliased = aliased


class Runner:
    """fn(shards, spec) for the C++ checks, run on the pool's ranks; keeps each tp = world size case's collectives."""

    def __init__(self, pool):
        self.pool = pool
        self.records = []
        self.fail_fast = False  # set for the diagnosis: after a hang, its cases fail at once

    def __call__(self, shards, spec):
        if self.fail_fast and self.pool.hang:
            raise RankFailure("hung", f"not run: an earlier case hung ({self.pool.hang})")
        ranks = mesh_size(spec)
        replies = self.pool.run(shards, [rank_spec(spec, r, self.pool.world_size) for r in range(ranks)], ranks)
        for shard, reply in zip(shards, replies):
            if reply["shard_after"] is not None:
                np.copyto(shard, reply["shard_after"])  # what the rank left in its shard, for S-untouched
        if ranks == self.pool.world_size:
            self.records.append(dict(layout=layout_words(spec), rows=spec.rows, cols=spec.cols, axis=spec.axis, rule=spec.rule,
                                     heads=spec.heads, kv_heads=spec.kv_heads, grain=spec.grain, tp=spec.tp, dp=spec.dp,
                                     ranks=[reply["calls"] for reply in replies]))
        return RankResults([reply["result"] for reply in replies], [reply["aliased"] for reply in replies])


def tally(calls):
    """{kind: count} and the payload bytes of one rank's calls."""
    counts = collections.Counter(_KIND.get(name, name) for name, _ in calls)
    return dict(sorted(counts.items())), sum(b for _, b in calls)


def ring_bytes(calls, tp):
    """The bytes a rank sends for its all-reduces in the cost model's ring (2 (p-1)/p of each payload,
    lib/src/communicator.cpp), or None if it issued another kind of collective."""
    if any(_KIND.get(name, name) != "all_reduce" for name, _ in calls):
        return None
    return sum(0 if tp <= 1 else 2 * (tp - 1) * b // tp for _, b in calls)


def compare_with_plan(record, strategy, knobs):
    """A recorded case's collectives beside the cost model's plan of `strategy` on the same layout."""
    if record["rule"] == "fused_qkv":
        return None  # the plan's layouts are one matrix's; a fused [Q;K;V] is three
    heads = record["heads"] if record["rule"] != "grain" else 0
    kv = record["kv_heads"] if record["rule"] != "grain" else 0
    plan = plan_strategy(strategy, record["rows"], record["cols"], record["tp"], axis=record["axis"], heads=heads,
                         kv_heads=kv, grain=record["grain"], **knobs)
    planned = {k: v for k, v in sorted(plan["collectives"].items()) if v}
    ranks = []
    for r, calls in enumerate(record["ranks"]):
        counts, payload = tally(calls)
        ranks.append(dict(rank=r, calls=counts, payload_bytes=payload, ring_bytes=ring_bytes(calls, record["tp"]),
                          planned_calls=planned, planned_bytes=plan["ranks"][r]["bytes_sent"]))
    equal = all(rk["calls"] == planned and rk["ring_bytes"] in (None, rk["planned_bytes"]) for rk in ranks)
    return dict(layout=record["layout"], strategy=strategy, equal=equal, ranks=ranks)


class TorchTpCheckResult(TpCheckResult):
    """check_tp's result on real ranks: the claim's properties and the diagnosis (as nsverify.check_tp's),
    the environment, and per case the collectives each rank issued (``collectives``), beside the cost
    model's plan when a strategy was named (``plan``: one comparison per case, ``plan_summary()``)."""

    def __init__(self, subject, properties, target, candidates, cases, environment, collectives, plan):
        for p in properties:
            p.message = tidy(p.message)
        cases = [dict(c, error=tidy(c["error"])) for c in cases]
        super().__init__(subject, properties, target, candidates, cases)
        self.environment = environment
        self.collectives = collectives
        self.plan = plan

    def collectives_summary(self):
        """Per rank: the calls per case ({kind: count} -> number of cases) over the tp = world size cases."""
        per_rank = collections.defaultdict(collections.Counter)
        for record in self.collectives:
            for r, calls in enumerate(record["ranks"]):
                counts, _ = tally(calls)
                per_rank[r][", ".join(f"{k} x{v}" for k, v in counts.items()) or "none"] += 1
        return {r: dict(c) for r, c in sorted(per_rank.items())}

    def plan_summary(self):
        compared = [c for c in self.plan if c is not None]
        return dict(cases=len(compared), equal=sum(c["equal"] for c in compared),
                    first_difference=next((c for c in compared if not c["equal"]), None))

    def __str__(self):
        env = self.environment
        lines = [super().__str__(),
                 f"environment: torch {env['torch']}, {env['world_size']} {env['backend']} ranks on {env['device']}; "
                 f"{env['accumulation']}"]
        for r, patterns in self.collectives_summary().items():
            lines.append(f"rank {r} collectives per case: " + "; ".join(f"{p} ({n} cases)" for p, n in patterns.items()))
        if self.plan:
            s = self.plan_summary()
            lines.append(f"cost model ({env['strategy']}): {s['equal']}/{s['cases']} cases equal")
        return "\n".join(lines)

    __repr__ = __str__

    def to_dict(self):
        d = super().to_dict()
        d.update(environment=self.environment, collectives_summary=self.collectives_summary(),
                 plan_summary=self.plan_summary() if self.plan else None)
        return d


_T = DEFAULTS["torch_tp"]


def check_tp(fn, world_size=_T["world_size"], backend=_T["backend"], claim=_T["claim"], target=_T["target"],
             aspect_scale=_T["aspect_scale"], uneven=_T["uneven"], zero_width=_T["zero_width"], fused=None, axis=None,
             shape=None, heads=_T["heads"], kv_heads=_T["kv_heads"], dp=None, dp_partition=_T["dp_partition"],
             kernel=_T["kernel"], steps=_T["steps"], dtype=_T["dtype"], accumulate=_T["accumulate"], input_dtype=None,
             device=_T["device"], products=_T["products"], coeffs=_T["coeffs"], restart_at=_T["restart_at"],
             max_dim=_T["max_dim"], max_success=_T["max_success"], max_size=_T["max_size"],
             diagnosis_cases=_T["diagnosis_cases"], seed=None, replay=None, timeout=_T["timeout"], strategy=None,
             threads=_T["threads"], counterexamples=None, shrink_seconds=_T["shrink_seconds"]):
    """Check ``fn(shard: torch.Tensor, spec, group) -> torch.Tensor`` on world_size real processes.

    The ranks form a torch.distributed process group (backend "gloo") on the loopback. On each case
    every rank calls the unmodified fn with its shard exactly as AutoTP lays it out (in `dtype`, or
    input_dtype, on `device`), `group` the process group of the case's ranks and `spec` a
    types.SimpleNamespace: tp, rank, world_size, axis, rows, cols, sizes (every rank's width along
    the axis), shard_shape, ranges, shapes, rule, heads, kv_heads, head_dim, grain, fused ("qkv" or
    None), fused_qkv, kernel, steps, dtype, coeffs. Each rank returns its result (the shard's shape);
    the results are gathered and judged by the claims and the diagnosis of nsverify.check_tp (see
    its help: claim "exact" | "rounding" | "none", target "whole" | "per_head", aspect_scale for a
    Muon update), with the same records, shrinking and replay. Cases are drawn at tp = world_size;
    the exact claim's second half and "computes the target" run fn on the whole matrix at tp = 1
    (rank 0 alone, `group` a group of one rank): use `group` (and spec.tp, spec.rank) in fn, not
    the default group.

    A TP x DP mesh (FSDP or ZeRO combined with TP): dp=N starts world_size x N processes, mesh rank
    d * world_size + t, and hands each its piece of its TP shard (dp_partition "zero": 1-D, the
    shard's row-major elements cut into ceil(n / N); "fsdp": ceil(rows / N) whole rows; see
    nsverify.check_tp). `group` is then a namespace of groups: mesh (every rank), tp (this rank's TP
    group) and dp (this rank's DP group); spec adds dp, dp_partition, pieces, piece_shapes, tp_rank,
    dp_rank, piece_shape. fn returns its piece's result, of the piece's shape. The tp-1 case runs
    rank 0 alone with dp = 1 (the three groups its group of one). strategy= compares one-axis plans,
    so it is refused with dp.

    Scope: uneven=False draws equal shards only, zero_width=False no empty shard, fused=True only
    fused [Q;K;V] layers (False: none), axis 0/1 only that split, shape=(rows, cols) your layer
    (with heads/kv_heads: split by KV groups as AutoTP splits attention).

    S-untouched (claims exact and rounding): every rank's shard keeps its bits and storage, and no
    rank's result shares its shard's storage.

    How fn reaches the ranks: by reference (each rank imports its module) where it lives in a module they can
    import; by value (cloudpickle: its code and what it closes over and uses) where it does not: fn defined in
    a script's, a notebook's or a REPL's __main__ (also `python3 - < script.py`), a lambda, a closure. The
    caller's __main__ is never run on a rank, so a script without an `if __name__ == "__main__":` guard runs
    its top level once. What cannot be sent (fn closing over a lock, an open file, a socket) is a
    RankStartError, before any rank starts, naming it and saying what to change.

    Failures are failed cases, never a hang: a rank that raises, returns something else than a
    tensor, does not answer within `timeout` seconds (a collective another rank never entered), or
    whose process dies (an abort inside gloo), fails the case with every rank's state in the
    message; the ranks are then restarted. After a hang the diagnosis' cases fail at once. The
    processes end with the check (and with the caller, also when it is interrupted or killed).

    Collectives: each rank's calls of torch.distributed's collectives (all_reduce, all_gather,
    all_gather_into_tensor, reduce_scatter, broadcast, all_to_all, send/recv, ...) during fn are
    recorded per case, with their payload bytes (``result.collectives``, ``collectives_summary()``);
    with strategy= (e.g. "gram_allreduce", "gather", "shard") they are compared, case by case, with
    nsverify's cost model for that strategy on the same layout (``result.plan``).

    dtype/accumulate as nsverify.torch.check_kernel (accumulate="auto": probed). threads: torch
    threads per rank. Returns a TorchTpCheckResult (truthy only if the claim's properties hold).
    """
    s = settings("torch_tp", **given_settings(locals(), restart_at))
    if s["dp"] is not None and s["strategy"] is not None:
        raise ValueError("strategy= compares a one-axis plan of the cost model with the collectives; with dp= there is "
                         "none to compare: leave strategy unset (the audit's mesh plans: nsv audit --dp)")
    dtype, device, input_dtype, dp = s["dtype"], s["device"], s["input_dtype"], s["dp"]
    support(dtype, str(device))
    s["accumulate"], words = resolve_accumulate(s["accumulate"], dtype, str(device))
    knobs = {k: s[k] for k in NS_KNOBS}
    cfg = _config(**knobs)
    name = _name(fn)
    pool = RankPool(fn, s["world_size"] * (dp or 1), s["backend"], s["timeout"], dtype, input_dtype, device, s["threads"],
                    mesh=None if dp is None else (s["world_size"], dp))
    runner = Runner(pool)
    try:
        out = _core.check_tp(runner, name, "torch_tp", dict(s, diagnosis_cases=0))
        if not s["replay"] and s["diagnosis_cases"] > 0:
            runner.fail_fast = True
            out["diagnosis"] = _core.check_tp(runner, name, "torch_tp", dict(s, claim="none"))["diagnosis"]
    finally:
        pool.close()
    env = dict(environment(dtype, device, input_dtype or dtype, words), world_size=pool.world_size, dp=dp, backend=s["backend"],
               timeout_s=s["timeout"], restarts=max(0, pool.restarts - 1), strategy=s["strategy"],
               failed_cases=len(pool.failures), slowest_failed_case_s=max(pool.failures, default=None))
    plan = [compare_with_plan(r, s["strategy"], knobs) for r in runner.records] if s["strategy"] else []
    return tp_result(out, name, s, cfg, result_type=TorchTpCheckResult, environment=env, collectives=runner.records,
                     plan=plan)


def run_tp(fn, G, world_size=_T["world_size"], axis=0, heads=0, kv_heads=0, grain=1, backend=_T["backend"],
           kernel=_T["kernel"], steps=_T["steps"], dtype=_T["dtype"], input_dtype=None, device=_T["device"],
           coeffs=_T["coeffs"], timeout=_T["timeout"], strategy=None, accumulate="fp32", products=_T["products"],
           restart_at=_T["restart_at"]):
    """fn on one layout of G (AutoTP's split of `axis` into world_size ranks by heads/kv_heads or the grain
    rule): {"layout", "outputs" (each rank's block, numpy), "calls" (each rank's collectives), "plan"
    (the comparison with `strategy`'s cost model, if named)}."""
    _core.require_ns_matrix(G, "G")  # the library's input limits, before the copy below
    G = np.ascontiguousarray(G, dtype=np.float64 if dtype == "fp64" else np.float32)
    rows, cols = G.shape
    layout = autotp_layout(G.shape[axis], world_size, axis=axis, heads=heads, kv_heads=kv_heads, grain=grain)
    shards = [np.ascontiguousarray(s, dtype=G.dtype) for s in split(G, layout)]
    shapes = [s.shape for s in shards]
    rule = "grain" if heads == 0 else ("head_aligned" if kv_heads in (0, heads) else "gqa_q_proj")
    spec = types.SimpleNamespace(tp=world_size, axis=axis, rows=rows, cols=cols, rule=rule, heads=heads,
                                 kv_heads=kv_heads or heads, head_dim=rows // heads if heads and axis == 0 else 0, grain=grain,
                                 fused_qkv=False, ranges=[[(p[0], p[1]) for p in rank] for rank in layout.ranks],
                                 shapes=shapes, kernel=kernel, steps=steps, dtype=dtype, coeffs=coeffs, dp=None)
    pool = RankPool(fn, world_size, backend, timeout, dtype, input_dtype, device)
    try:
        runner = Runner(pool)
        outputs = runner(shards, spec)
    finally:
        pool.close()
    record = runner.records[0]
    knobs = dict(kernel=kernel, steps=steps, dtype=dtype, accumulate=accumulate, products=products, coeffs=coeffs,
                 restart_at=restart_at)
    return dict(layout=record["layout"], outputs=list(outputs), calls=record["ranks"],
                plan=compare_with_plan(record, strategy, knobs) if strategy else None)
