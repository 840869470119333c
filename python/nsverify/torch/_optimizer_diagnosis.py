"""The diagnosis of nsverify.torch.check_optimizer: for each failing parameter, which known TP-optimizer
defect its updates match, tested by rerunning the user's own factory at tp = 1 on transformed inputs
(a match is then bitwise), else by a measure whose tolerance is derived from float32 rounding (written
next to it). A hypothesis' premise (can this case tell it apart at all?) is judged from the inputs and
the reference's reruns, never from the TP run under test: where it fails the status is "not
distinguishable", which is no match.

  (1) per-shard NS, local-shape scale   the factory on the TP shards registered as parameters of their own
                                        shapes (DeepSpeed AutoTP today): bitwise (else "nearer")
  (2) whole-matrix NS, local-shape scale  each TP block of the reference's NS part times a scale rule's
                                        local/full ratio (Keller, Moonlight, sqrt(rows/cols)): tolerance
  (3) routed to the other group         the factory with the parameter registered in the other group: a
                                        Muon matrix as a flat 1-D parameter routed "adamw" (an elementwise
                                        optimizer gives the same bits on the flattened tensor as on the
                                        matrix), an AdamW parameter as a matrix (a vector as 1 x n) routed
                                        "muon": bitwise
  (4) stale head count                  as (1), each shard's spec keeping the full model's head count (and
                                        `fused`): bitwise (else "nearer"); not distinguishable where the
                                        factory does not read spec.heads (the rerun is (1)'s bit for bit)
  (5) shard overwritten by another rank's  a TP rank's weights bit-identical to another's
  (6) NS skipped                        every TP block's NS part in the span of the step's gradient and
                                        the momentum (least squares): tolerance
  (7) NS run twice                      the factory stepped once from zero weights with the reference's
                                        NS part as the gradient: NS(NS(M)): "nearer"
  (8) momentum advanced twice           the factory stepping twice per gradient, weights restored between:
                                        bitwise
  (9) weight decay applied after the update  W'_t against (W'_{t-1} - U_t)(1 - lr wd) and the usual
                                        W'_{t-1}(1 - lr wd) - U_t, U_t the reference's NS part: tolerance

"nearer" (no bitwise form: the factory cannot be made to produce the hypothesis): the TP run's weight
changes at least 10x nearer (max rel_diff over steps) to the hypothesis run's than to the reference's.
The route observed from the update's spectrum (_optimizer_compare.observed_route) is reported with (3)
as information; it decides nothing.
"""

import copy

import numpy as np

from .. import _reference as ref
from ._optimizer_compare import U_FP32, as2d, delta, ns_part, momentum_key
from ._optimizer_params import Param, bits_equal, per_shard_params, stale_heads
from ._optimizer_runs import Inputs

PER_SHARD, WHOLE_LOCAL, ROUTED, STALE, OVERWRITTEN, SKIPPED, TWICE, DOUBLE_MOMENTUM, WD_AFTER = (
    "per-shard NS, local-shape scale", "whole-matrix NS, local-shape scale", "routed to the other group",
    "stale head count", "shard overwritten by another rank's", "NS skipped", "NS run twice", "momentum advanced twice",
    "weight decay applied after the update")
#: Muon's scale rules f(rows, cols): Keller Jordan's, Moonlight's (Liu et al. 2025), and sqrt(rows/cols).
SCALE_RULES = {"keller sqrt(max(1, rows/cols))": lambda r, c: max(1.0, r / c) ** 0.5,
               "moonlight 0.2 sqrt(max(rows, cols))": lambda r, c: 0.2 * max(r, c) ** 0.5,
               "sqrt(rows/cols)": lambda r, c: (r / c) ** 0.5}
NEARER = 10.0
u = U_FP32


def blocks(plan, p, x):
    """x (full) cut into its TP blocks: [(t, block)] for the non-empty shards."""
    if p.split is None:
        return [(0, x)]
    return [(t, s) for t, s in enumerate(plan.shards(p, np.ascontiguousarray(x))) if s.size]


def reassembled(run, stand_ins, plan, parent):
    """A per-shard run's weights per step put back into the parent's full shape."""
    return [plan.assemble(parent, [np.asarray(w[q.name]) for q in stand_ins])[0] for w in run.weights]


def same_bits(a, b, steps, shape=None):
    """Two runs' weights per step (lists, 0 = W_0) bit-identical at every step 1..steps (b reshaped to shape)."""
    return all(bits_equal(np.asarray(a[s]).reshape(shape or np.shape(a[s])),
                          np.asarray(b[s]).reshape(shape or np.shape(a[s]))) for s in range(1, steps + 1))


def weights_of(run, name):
    return [w[name] for w in run.weights]


def nearer(case, p, weights):
    """The "nearer" measure: (hyp, base) max rel_diff over steps of the TP run's ΔW to the hypothesis run's and to
    the reference's."""
    steps = len(case.tp_run.weights) - 1
    d = lambda w, s: as2d(w[s]).astype(np.float64) - as2d(w[s - 1]).astype(np.float64)
    hyp = max(ref.rel_diff(delta(case.tp_run, p.name, s), d(weights, s)) for s in range(1, steps + 1))
    base = max(ref.rel_diff(delta(case.tp_run, p.name, s), delta(case.ref_run, p.name, s)) for s in range(1, steps + 1))
    return hyp, base


def against(case, p, weights, bitwise_only=False):
    """A hypothesis run's weights per step against the TP run's: bitwise, else (unless bitwise_only) the "nearer"
    measure. Not distinguishable where the hypothesis run is the reference bit for bit."""
    steps = len(case.tp_run.weights) - 1
    if same_bits(weights, weights_of(case.ref_run, p.name), steps):
        return "not distinguishable", "the rerun is bit-identical to the reference"
    if same_bits(weights_of(case.tp_run, p.name), weights, steps):
        return "matches", f"bit-identical weights at every step (1..{steps})"
    hyp, base = nearer(case, p, weights)
    words = f"not bit-identical; max rel_diff of ΔW to it {hyp:.3g}, to the reference {base:.3g}"
    if bitwise_only:
        return "no match", words + " (a bitwise hypothesis: the factory itself produces it)"
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


class _Rerouted(Param):
    """A parameter registered in the other group for hypothesis (3): replicated at tp = 1, `shape` and `route` given
    (the declared shape's elements, row-major), the name kept."""

    def __init__(self, parent, shape, route):
        self.name, self.shape, self.split, self.route = parent.name, tuple(shape), None, route
        self.heads = self.kv_heads = self.fused = None
        self.parent = parent


def rerouted(p):
    """(3)'s registration of p: a Muon matrix flattened to (n,) routed "adamw"; an AdamW parameter as a matrix (its
    own 2-D shape, a vector as 1 x n) routed "muon"."""
    n = int(np.prod(p.shape))
    if p.resolved_route == "muon":
        return _Rerouted(p, (n,), "adamw")
    return _Rerouted(p, p.shape if len(p.shape) == 2 else (1, n), "muon")


def run_rerouted(case, params):
    """{name: (Run or the failure's message, the rerouted Param)}: one run per direction, so that a factory that
    cannot take a vector as a Muon matrix leaves the other direction testable."""
    out = {}
    for route in ("adamw", "muon"):
        qs = [q for q in map(rerouted, params) if q.route == route]
        if not qs:
            continue
        inputs = Inputs({q.name: case.inputs.weights[q.name].reshape(q.shape) for q in qs},
                        {q.name: [g.reshape(q.shape) for g in case.inputs.grads[q.name]] for q in qs})
        run = case.run_reference(qs, inputs=inputs)
        out.update({q.name: (run, q) for q in qs})
    return out


def routed(case, p, lw, rerun):
    """(3): the TP run's weights bit-identical to the factory's with p registered in the other group."""
    (r_tp, why_tp), (r_ref, why_ref) = case.route("tp", p, lw), case.route("ref", p, lw)
    seen = f"route observed (information): TP run {r_tp or 'undecided'} ({why_tp}); reference {r_ref or 'undecided'} " \
           f"({why_ref})"
    run, q = rerun
    if isinstance(run, str):
        return "not testable", f"{p.resolved_route} -> {q.route} as {q.shape}: {run}; {seen}"
    steps = len(case.tp_run.weights) - 1
    what = f"the factory with it registered as {'x'.join(map(str, q.shape))} routed {q.route!r}"
    if same_bits(weights_of(case.ref_run, p.name), weights_of(run, p.name), steps, q.shape):
        return "not distinguishable", f"{what} is bit-identical to the reference; {seen}"
    if same_bits(weights_of(case.tp_run, p.name), weights_of(run, p.name), steps, q.shape):
        return "matches", f"bit-identical to {what} at every step (1..{steps}); {seen}"
    return "no match", f"not bit-identical to {what}; {seen}"


def block_norms(*xs):
    return [float(np.linalg.norm(x)) for x in xs]


#: Least squares over {g, m} drops the directions of [g m] whose singular value is below this fraction of the
#: largest: float32 data (m_1 = fl((1 - β) g_1) is (1 - β) g_1 up to u per element) cannot tell such a direction from
#: the rounding of the other, and fitting it would give coefficients of the order 1/u.
SPAN_RCOND = 4 * U_FP32


def span_residual(x, g, m):
    """Least squares of x over {g, m} (flattened): (relative residual ||r|| / ||x||, |a| + |b|)."""
    A = np.stack([g.reshape(-1), m.reshape(-1)], axis=1)
    coef, *_ = np.linalg.lstsq(A, x.reshape(-1), rcond=SPAN_RCOND)
    r = x.reshape(-1) - A @ coef
    return float(np.linalg.norm(r) / np.linalg.norm(x)), float(np.sum(np.abs(coef)))


def span_check(run, p, plan, step, lw, g, m):
    """(6) on one run's step: per TP block (relative residual, tolerance).

    Tolerance. The hypothesis' step is W_t = fl(fl(c W_{t-1}) - fl(lr D)), c = fl32(1 - λ), D the float32
    evaluation of a g + b m (Nesterov's lerp(g, m, β), or m) at most three roundings deep (a scale after it one
    more). The measured NS part U = -(W_t - W_{t-1}) - λ W_{t-1} is then lr (a g + b m) up to: the two roundings
    of the step, u ||W_{t-1}|| + u ||W_t||; the λ estimate's error (<= u, see _optimizer_compare.lr_wd) times
    ||W_{t-1}||; fl(lr D) and the scale, 2u ||U||; D's own roundings, 3u (|a| + |b|)(||g|| + ||m||), a and b the
    fitted coefficients (lr included). Least squares leaves a residual no larger than that error, so the
    relative residual of a hypothesis update is <= τ = [u (2 ||W_{t-1}|| + ||W_t||) + 2u ||U|| +
    3u (|a| + |b|)(||g|| + ||m||)] / ||U|| in each block."""
    U = ns_part(run, p.name, step, lw)
    w0, w1 = (as2d(run.weights[k][p.name]).astype(np.float64) for k in (step - 1, step))
    out = []
    for (t, ub), (_, gb), (_, mb), (_, a0), (_, a1) in zip(*(blocks(plan, p, x) for x in (U, g, m, w0, w1))):
        nu = np.linalg.norm(ub)
        if nu == 0:  # no update where the gradient or the momentum is not zero: no step of theirs
            out.append((t, 0.0 if not (gb.any() or mb.any()) else float("inf"), 1.0))
            continue
        rel, coef = span_residual(ub, gb, mb)
        n0, n1, ng, nm = block_norms(a0, a1, gb, mb)
        tau = (u * (2 * n0 + n1) + 2 * u * nu + 3 * u * coef * (ng + nm)) / nu
        out.append((t, rel, tau))
    return out


def skipped(case, p, lw):
    """(6): every TP block's NS part in span{g_t, m_t} (the step's gradient and the momentum the TP run holds,
    else the reference's) within the rounding tolerance τ of span_check, at every step; premise: the reference's
    NS part lies outside it in some block (else a correct NS update is in that span too)."""
    if p.resolved_route != "muon":
        return "not applicable", "the reference routes it to the elementwise group: no NS to skip"
    if lw is None:
        return "not testable", "the NS part needs lr*wd, which could not be measured"
    key = momentum_key(case.ref_run.states[1].get(p.name, {}))
    if key is None:
        return "not testable", "the reference holds no state tensor of this parameter's shape (its momentum)"
    steps = len(case.tp_run.weights) - 1
    worst_tp, worst_ref, premise = (0.0, 1.0, ""), (0.0, 1.0, ""), False
    for s in range(1, steps + 1):
        g = as2d(case.inputs.grads[p.name][s - 1]).astype(np.float64)
        m_ref = as2d(case.ref_run.states[s][p.name][key]).astype(np.float64)
        m_tp = case.tp_run.states[s].get(p.name, {}).get(key)
        m_tp = m_ref if m_tp is None else as2d(m_tp).astype(np.float64)
        # τ >= 1: the block's update is within rounding of nothing (a residual is never above 1): it tells nothing
        # for the reference, and cannot carry a match for the TP run
        for t, rel, tau in span_check(case.ref_run, p, case.tp_plan, s, lw, g, m_ref):
            premise = premise or rel > tau < 1
            if rel / tau > worst_ref[0] / worst_ref[1]:
                worst_ref = (rel, tau, f"step {s} block {t}")
        for t, rel, tau in span_check(case.tp_run, p, case.tp_plan, s, lw, g, m_tp):
            if tau >= 1:
                rel = float("inf")
            if rel / tau >= worst_tp[0] / worst_tp[1]:
                worst_tp = (rel, tau, f"step {s} block {t}")
    tp_words = f"at most {worst_tp[0]:.3g} (tolerance {worst_tp[1]:.3g}, {worst_tp[2]})" if np.isfinite(worst_tp[0]) \
        else f"none: the update is zero or below rounding at {worst_tp[2]}, where the gradient is not"
    words = f"relative residual of the NS part over span{{g_t, {key}}} per TP block: TP run {tp_words}; reference " \
            f"{worst_ref[0]:.3g} (tolerance {worst_ref[1]:.3g}, {worst_ref[2]})"
    if not premise:
        return "not distinguishable", words + ": the reference's NS part is in that span too"
    return ("matches" if worst_tp[0] <= worst_tp[1] else "no match"), words


def wd_after(case, p, lw):
    """(9): per step, the TP weights W'_t against the candidate C = (W'_{t-1} - U_t)(1 - λ) and the usual
    V = W'_{t-1}(1 - λ) - U_t (U_t the reference's NS part, λ = lr*wd): a match when W'_t is within τ of C and
    not within τ of V at every step where the two are apart (||C - V|| = λ ||U_t|| > 2τ, judged on the
    reference's norms; none: "not distinguishable: lr*wd too small").

    Tolerance. The hypothesis' step is W'_t = fl(fl(W'_{t-1} - P_t) c), c = fl32(1 - λ), P_t the float32 lr U
    the reference applies in W_t = fl(fl(c W_{t-1}) - P_t). The measured U_t is P_t up to the reference's two
    roundings and the λ estimate's error (<= u): ||U_t - P_t|| <= u (2 ||W_{t-1}|| + ||W_t|| + ||U_t||) (the last
    for fused or separate fl(lr U)); the TP run's two roundings: u (||W'_{t-1}|| + ||U_t|| + ||W'_t||); C's λ
    against c: u (||W'_{t-1}|| + ||U_t||), and c ||U_t - P_t|| once more. Hence
    τ = 2u (2 ||W_{t-1}|| + ||W_t|| + ||W'_{t-1}|| + ||W'_t|| + 2 ||U_t||), the same for V."""
    if lw is None:
        return "not testable", "needs lr*wd, which could not be measured"
    if lw == 0:
        return "not distinguishable", "lr*wd is 0: decay before and after the update are the same"
    steps = len(case.tp_run.weights) - 1
    worst, tested, words = None, 0, []
    for s in range(1, steps + 1):
        U = ns_part(case.ref_run, p.name, s, lw)
        w_prev, w_now = (as2d(case.ref_run.weights[k][p.name]).astype(np.float64) for k in (s - 1, s))
        t_prev, t_now = (as2d(case.tp_run.weights[k][p.name]).astype(np.float64) for k in (s - 1, s))
        n = lambda x: float(np.linalg.norm(x))
        apart = lw * n(U)
        tau_premise = 2 * u * (3 * n(w_prev) + 3 * n(w_now) + 2 * n(U))
        if apart <= 2 * tau_premise:
            words.append(f"step {s}: lr*wd ||U|| = {apart:.3g} <= 2 x tolerance {tau_premise:.3g}")
            continue
        tested += 1
        tau = 2 * u * (2 * n(w_prev) + n(w_now) + n(t_prev) + n(t_now) + 2 * n(U))
        to_c = n(t_now - (t_prev - U) * (1 - lw))
        to_v = n(t_now - (t_prev * (1 - lw) - U))
        ok = to_c <= tau < to_v
        words.append(f"step {s}: ||W' - C|| {to_c:.3g}, ||W' - V|| {to_v:.3g}, tolerance {tau:.3g} (lr*wd ||U|| "
                     f"{apart:.3g})")
        worst = ok if worst is None else worst and ok
    if not tested:
        return "not distinguishable", "lr*wd too small: " + "; ".join(words)
    return ("matches" if worst else "no match"), "; ".join(words)


def twice_stand_ins(params, steps):
    """(7)'s parameters: per parameter and step a copy of it named "<name>#ns<step>" (its shape, split, heads,
    route), so that one run of one step from fresh state gives NS(NS(M_t)) for every step t."""
    out = {}
    for p in params:
        for s in range(1, steps + 1):
            q = copy.copy(p)
            q.name = f"{p.name}#ns{s}"
            out[(p.name, s)] = q
    return out


def run_twice(case, params, lrwd):
    """(7)'s run: the factory stepped once from zero weights with each step's reference NS part as the gradient."""
    steps = len(case.tp_run.weights) - 1
    stand_ins = twice_stand_ins(params, steps)
    inputs = Inputs({q.name: np.zeros(q.shape, np.float32) for q in stand_ins.values()},
                    {q.name: [ns_part(case.ref_run, name, s, lrwd[name][0]).reshape(q.shape).astype(np.float32)]
                     for (name, s), q in stand_ins.items()})
    return case.run_reference(list(stand_ins.values()), inputs=inputs, steps=1), stand_ins


def twice(case, p, twice_run, stand_ins, lrwd):
    """(7): the TP run's NS part against NS(NS(M_t)) (the factory's step on the reference's NS part) at every step:
    at least 10x nearer (1 - cosine) to it than to the reference's NS(M_t)."""
    words, ok = [], True
    for s in range(1, len(case.tp_run.weights)):
        u_tp = ns_part(case.tp_run, p.name, s, lrwd[0])
        u_twice = -delta(twice_run, stand_ins[(p.name, s)].name, 1)
        u_ref = ns_part(case.ref_run, p.name, s, lrwd[0])
        c2, c1 = ref.cosine(u_tp, u_twice), ref.cosine(u_tp, u_ref)
        ok = ok and (1 - c2) * NEARER <= (1 - c1)
        words.append(f"step {s}: 1 - cosine to NS(NS(M)) {1 - c2:.3g}, to the reference's NS(M) {1 - c1:.3g}")
    return ("matches" if ok else "no match"), "; ".join(words)


def diagnose(case, failing, lrwd):
    """{name: {"hypotheses": [{hypothesis, status, measure}], "matched": [names]}} for the failing parameters."""
    params = [p for p in case.params if p.name in failing]
    out = {p.name: [] for p in params}
    steps = len(case.tp_run.weights) - 1
    shard_params = per_shard_params(params, case.tp_plan)
    shard_run = case.shard_run
    if shard_params and (shard_run is None or any(q.name not in shard_run.weights[0] for v in shard_params.values()
                                                  for q in v)):
        shard_run = case.run_variant("per-shard", shard_params)
    head_params = {n: v for n, v in shard_params.items() if v[0].parent.heads}
    stale_run = case.run_variant("stale heads", head_params, spec_of=lambda q, spec: stale_heads(spec, q.parent)
                                 if hasattr(q, "parent") else spec) if head_params else None
    rerun = run_rerouted(case, params)
    double_run = case.run_reference(params, double_step=True)
    muon = [p for p in params if p.resolved_route == "muon"]
    twice_run, twice_params = run_twice(case, muon, lrwd) if muon else (None, {})
    for p in params:
        lw = lrwd[p.name]
        h = out[p.name]
        if p.name in shard_params and not isinstance(shard_run, str):
            h.append((PER_SHARD, *against(case, p, reassembled(shard_run, shard_params[p.name], case.tp_plan, p))))
        else:
            h.append((PER_SHARD, "not applicable" if p.name not in shard_params else "not testable",
                      "not a TP-split Muon parameter" if p.name not in shard_params else shard_run))
        h.append((WHOLE_LOCAL, *whole_local(case, p, lw)))
        h.append((ROUTED, *routed(case, p, lw[0], rerun[p.name])))
        if p.name in head_params and not isinstance(stale_run, str):
            stale = reassembled(stale_run, shard_params[p.name], case.tp_plan, p)
            if not isinstance(shard_run, str) and same_bits(
                    stale, reassembled(shard_run, shard_params[p.name], case.tp_plan, p), steps):
                h.append((STALE, "not distinguishable", "from per-shard NS: the stale-heads rerun is the per-shard "
                          "rerun bit for bit (the factory does not read spec.heads)"))
            else:
                h.append((STALE, *against(case, p, stale)))
        else:
            h.append((STALE, "not applicable" if p.name not in head_params else "not testable",
                      "no head count" if p.name not in head_params else stale_run))
        h.append((OVERWRITTEN, *overwritten(case, p)))
        h.append((SKIPPED, *skipped(case, p, lw[0])))
        if p.resolved_route != "muon":
            h.append((TWICE, "not applicable", "the reference routes it to the elementwise group: no NS"))
        elif isinstance(twice_run, str):
            h.append((TWICE, "not testable", twice_run))
        else:
            h.append((TWICE, *twice(case, p, twice_run, twice_params, lw)))
        h.append((DOUBLE_MOMENTUM, *(against(case, p, weights_of(double_run, p.name), bitwise_only=True)
                                     if not isinstance(double_run, str) else ("not testable", double_run))))
        h.append((WD_AFTER, *wd_after(case, p, lw[0])))
    return {name: dict(hypotheses=[dict(hypothesis=a, status=b, measure=c) for a, b, c in h],
                       matched=[a for a, b, _ in h if b == "matches"]) for name, h in out.items()}
