"""The diagnosis of nsverify.torch.check_optimizer: for each failing parameter, which known TP-optimizer
defect its updates match, tested by rerunning the user's own factory at tp = 1 on transformed inputs
(a match is then bitwise where it can be), else by a stated measure.

  (1) per-shard NS, local-shape scale   the factory on the TP shards registered as parameters of their own
                                        shapes (DeepSpeed AutoTP today)
  (2) whole-matrix NS, local-shape scale  each TP block of the reference's NS part times a scale rule's
                                        local/full ratio (Keller, Moonlight, sqrt(rows/cols))
  (3) routed to the other group         the observed route (NS or elementwise) differs from the reference's
  (4) stale head count                  as (1), each shard's spec keeping the full model's head count
  (5) shard overwritten by another rank's  a TP rank's weights bit-identical to another's
  (6) NS skipped                        the update proportional to the reference's momentum
  (7) NS run twice                      the factory stepped once from zero weights with the reference's
                                        NS part as the gradient: NS(NS(M))
  (8) momentum advanced twice           the factory stepping twice per gradient, weights restored between

Measures where no bitwise match is possible: "nearer" = the TP run's weight changes are at least 10x
nearer (max rel_diff over steps) to the hypothesis' than to the reference's; (2) = every block's
NS part within a derived rounding tolerance of ratio x the reference's block (norm ratio and cosine
reported); (6) = cosine >= 0.999 with the momentum in every block and step (NS of a matrix with more
than one significant direction has cosine ||M||_* / (sqrt(r) ||M||_F) < 0.999 with it).
"""

import numpy as np

from .. import _reference as ref
from ._optimizer_compare import U_FP32, as2d, delta, ns_part, momentum_key
from ._optimizer_params import bits_equal, per_shard_params, stale_heads
from ._optimizer_runs import Inputs

PER_SHARD, WHOLE_LOCAL, ROUTED, STALE, OVERWRITTEN, SKIPPED, TWICE, DOUBLE_MOMENTUM = (
    "per-shard NS, local-shape scale", "whole-matrix NS, local-shape scale", "routed to the other group",
    "stale head count", "shard overwritten by another rank's", "NS skipped", "NS run twice", "momentum advanced twice")
#: Muon's scale rules f(rows, cols): Keller Jordan's, Moonlight's (Liu et al. 2025), and sqrt(rows/cols).
SCALE_RULES = {"keller sqrt(max(1, rows/cols))": lambda r, c: max(1.0, r / c) ** 0.5,
               "moonlight 0.2 sqrt(max(rows, cols))": lambda r, c: 0.2 * max(r, c) ** 0.5,
               "sqrt(rows/cols)": lambda r, c: (r / c) ** 0.5}
NEARER = 10.0
SKIPPED_COSINE = 0.999


def blocks(plan, p, x):
    """x (full) cut into its TP blocks: [(t, block)] for the non-empty shards."""
    if p.split is None:
        return [(0, x)]
    return [(t, s) for t, s in enumerate(plan.shards(p, np.ascontiguousarray(x))) if s.size]


def reassembled(run, stand_ins, plan, parent):
    """A per-shard run's weights per step put back into the parent's full shape."""
    return [plan.assemble(parent, [np.asarray(w[q.name]) for q in stand_ins])[0] for w in run.weights]


def against(case, p, weights):
    """A hypothesis run's weights per step against the TP run's: bitwise, else the "nearer" measure."""
    tp_w = case.tp_run.weights
    steps = len(tp_w) - 1
    if all(bits_equal(tp_w[s][p.name], weights[s]) for s in range(1, steps + 1)):
        return "matches", f"bit-identical weights at every step (1..{steps})"
    d = lambda w, s: as2d(w[s]).astype(np.float64) - as2d(w[s - 1]).astype(np.float64)
    hyp = max(ref.rel_diff(delta(case.tp_run, p.name, s), d(weights, s)) for s in range(1, steps + 1))
    base = max(ref.rel_diff(delta(case.tp_run, p.name, s), delta(case.ref_run, p.name, s)) for s in range(1, steps + 1))
    words = f"max rel_diff of ΔW to it {hyp:.3g}, to the reference {base:.3g}"
    return ("matches" if hyp * NEARER <= base else "no match"), words


def whole_local(case, p, lrwd):
    """(2): per scale rule, whether every TP block's NS part is ratio x the reference's block within tolerance."""
    if p.split is None:
        return "not applicable", "replicated: no local shape"
    if lrwd[0] is None:
        return "not testable", f"the NS part needs lr*wd, which could not be measured: {lrwd[1]}"
    shapes = case.tp_plan.local_shapes(p)
    found, words = [], []
    for rule, f in SCALE_RULES.items():
        ratios = {t: f(*shapes[t]) / f(*p.shape) for t in range(case.tp_plan.tp) if shapes[t][p.split]}
        if all(abs(r - 1) < 1e-12 for r in ratios.values()):
            words.append(f"{rule}: local and full scales equal on this layout")
            continue
        worst_excess, detail = 0.0, ""
        for s in range(1, len(case.tp_run.weights)):
            u_tp, u_ref = ns_part(case.tp_run, p.name, s, lrwd[0]), ns_part(case.ref_run, p.name, s, lrwd[0])
            w = [as2d(r.weights[k][p.name]) for r in (case.tp_run, case.ref_run) for k in (s, s - 1)]
            for (t, a), (_, b), *ws in zip(blocks(case.tp_plan, p, u_tp), blocks(case.tp_plan, p, u_ref),
                                           *(blocks(case.tp_plan, p, x) for x in w)):
                target = ratios[t] * b
                # τ: each run's measured NS part carries its two float32 roundings of W_t and the λ estimate's
                # error on W_{t-1} (2u ||W|| each, in the block), relative to the predicted block, plus the
                # scale product's own rounding (2u).
                tau = 2 * U_FP32 * sum(np.linalg.norm(x) for _, x in ws) / max(np.linalg.norm(target), 1e-300) + 2 * U_FP32
                rel = ref.rel_diff(a, target)
                worst_excess = max(worst_excess, rel / tau)
                detail = f"step {s} block {t}: norm ratio {ref.norm_ratio(a, b):.4g} (rule {ratios[t]:.4g}), " \
                         f"cosine {ref.cosine(a, b):.6f}, rel_diff {rel:.3g} vs tolerance {tau:.3g}"
        (found if worst_excess <= 1 else words).append(f"{rule}: {detail}")
    return ("matches", "; ".join(found)) if found else ("no match", "; ".join(words))


def overwritten(case, p):
    """(5): a TP rank's shard bit-identical to another rank's of the same shape after a step, when they differed
    at the start."""
    if case.tp_plan.tp == 1:
        return "not applicable", "tp = 1"
    start = case.tp_run.shards[0][p.name]
    for s in range(1, len(case.tp_run.shards)):
        sh = case.tp_run.shards[s][p.name]
        for i in range(len(sh)):
            for j in range(i + 1, len(sh)):
                if sh[i].size and bits_equal(sh[i], sh[j]) and not bits_equal(start[i], start[j]):
                    return "matches", f"after step {s} TP ranks {i} and {j} hold the same bits"
    return "no match", "no two TP ranks hold the same bits after any step"


def skipped(case, p, lrwd):
    """(6): the NS part proportional to the reference's momentum, block by block."""
    key = momentum_key(case.ref_run.states[1].get(p.name, {}))
    if key is None:
        return "not testable", "the reference holds no state tensor of this parameter's shape (its momentum)"
    worst = 1.0
    for s in range(1, len(case.tp_run.weights)):
        u = ns_part(case.tp_run, p.name, s, lrwd[0])
        m = as2d(case.ref_run.states[s][p.name][key]).astype(np.float64)
        for (_, a), (_, b) in zip(blocks(case.tp_plan, p, u), blocks(case.tp_plan, p, m)):
            worst = min(worst, ref.cosine(a, b))
    return ("matches" if worst >= SKIPPED_COSINE else "no match"), \
        f"least cosine of the update with the momentum {key!r} over blocks and steps: {worst:.6f}"


def twice(case, p, twice_run, lrwd):
    """(7): the TP run's first NS part against NS(NS(M)) (the factory's step on the reference's NS part)."""
    u_tp = ns_part(case.tp_run, p.name, 1, lrwd[0])
    u_twice = -delta(twice_run, p.name, 1)
    u_ref = ns_part(case.ref_run, p.name, 1, lrwd[0])
    c2, c1 = ref.cosine(u_tp, u_twice), ref.cosine(u_tp, u_ref)
    words = f"step 1: 1 - cosine to NS(NS(M)) {1 - c2:.3g}, to the reference's NS(M) {1 - c1:.3g}"
    return ("matches" if (1 - c2) * NEARER <= (1 - c1) else "no match"), words


def diagnose(case, failing, lrwd):
    """{name: {"hypotheses": [{hypothesis, status, measure}], "matched": [names]}} for the failing parameters."""
    params = [p for p in case.params if p.name in failing]
    out = {p.name: [] for p in params}
    shard_params = per_shard_params(params, case.tp_plan)
    shard_run = case.shard_run
    if shard_params and (shard_run is None or any(q.name not in shard_run.weights[0] for v in shard_params.values()
                                                  for q in v)):
        shard_run = case.run_variant("per-shard", shard_params)
    head_params = {n: v for n, v in shard_params.items() if v[0].parent.heads}
    stale_run = case.run_variant("stale heads", head_params, spec_of=lambda q, spec: stale_heads(spec, q.parent)
                                 if hasattr(q, "parent") else spec) if head_params else None
    double_run = case.run_reference(params, double_step=True)
    twice_inputs = Inputs({p.name: np.zeros(p.shape, np.float32) for p in params},
                          {p.name: [ns_part(case.ref_run, p.name, 1, lrwd[p.name][0]).reshape(p.shape).astype(np.float32)]
                           for p in params})
    twice_run = case.run_reference(params, inputs=twice_inputs, steps=1)
    for p in params:
        lw = lrwd[p.name]
        h = out[p.name]
        if p.name in shard_params and not isinstance(shard_run, str):
            h.append((PER_SHARD, *against(case, p, reassembled(shard_run, shard_params[p.name], case.tp_plan, p))))
        else:
            h.append((PER_SHARD, "not applicable" if p.name not in shard_params else "not testable",
                      "not a TP-split Muon parameter" if p.name not in shard_params else shard_run))
        h.append((WHOLE_LOCAL, *whole_local(case, p, lw)))
        (r_tp, why_tp), (r_ref, why_ref) = case.route("tp", p, lw[0]), case.route("ref", p, lw[0])
        if r_tp is None or r_ref is None:
            h.append((ROUTED, "not testable", f"route undecided: TP run {why_tp}; reference {why_ref}"))
        else:
            h.append((ROUTED, "matches" if r_tp != r_ref else "no match", f"TP run {r_tp} ({why_tp}); reference "
                      f"{r_ref} ({why_ref})"))
        if p.name in head_params and not isinstance(stale_run, str):
            h.append((STALE, *against(case, p, reassembled(stale_run, shard_params[p.name], case.tp_plan, p))))
        else:
            h.append((STALE, "not applicable" if p.name not in head_params else "not testable",
                      "no head count" if p.name not in head_params else stale_run))
        h.append((OVERWRITTEN, *overwritten(case, p)))
        h.append((SKIPPED, *skipped(case, p, lw)))
        h.append((TWICE, *(twice(case, p, twice_run, lw) if not isinstance(twice_run, str) else ("not testable", twice_run))))
        h.append((DOUBLE_MOMENTUM, *(against(case, p, [w[p.name] for w in double_run.weights]) if not isinstance(double_run, str)
                                     else ("not testable", double_run))))
    return {name: dict(hypotheses=[dict(hypothesis=a, status=b, measure=c) for a, b, c in h],
                       matched=[a for a, b, _ in h if b == "matches"]) for name, h in out.items()}
