"""The comparisons of nsverify.torch.check_optimizer: a TP run against the tp = 1 reference per parameter
and step (nsverify's metrics and compare_bits), the route a parameter's update took, the comparison
engine's own 1-ULP self-test, lr * wd measured from the user's factory, and the rounding claim's bound.
"""


import numpy as np

from .. import _reference as ref

#: fp32's unit roundoff 2^-24: one rounding of a float32 result x is off by at most U_FP32 |x|.
U_FP32 = 2.0 ** -24
#: The route observed (see route_of; information in the table and the diagnosis, it decides no hypothesis: (3) is
#: judged by rerunning the factory, _optimizer_diagnosis.routed): the gradient's spectrum must spread at least this
#: much for a verdict...
SPREAD_DECIDABLE = 3.0
#: ...and an NS update spreads at most this much: the quintic NS leaves every singular value above 1/480
#: of the largest (a = 3.4445 per step, five steps: 3.44^5 > 480) inside Keller's band [0.68, 1.13],
#: a spread below 1.7; 2 leaves a margin for other schedules' bands.
SPREAD_NS = 2.0


def as2d(x):
    x = np.asarray(x)
    return x.reshape(1, -1) if x.ndim == 1 else x


def finite(x):
    return None if x is None or not np.isfinite(x) else float(x)


def delta(run, name, step):
    """ΔW_t = W_t - W_{t-1}: the float32 weights subtracted in float64 (exact)."""
    return as2d(run.weights[step][name]).astype(np.float64) - as2d(run.weights[step - 1][name]).astype(np.float64)


def ns_part(run, name, step, lrwd):
    """U_t = -(ΔW_t + lr*wd W_{t-1}): the update without its decoupled weight decay (-ΔW_t when lr*wd is unknown)."""
    d = delta(run, name, step)
    return -(d + (lrwd or 0.0) * as2d(run.weights[step - 1][name]).astype(np.float64))


def metrics(a, b):
    """rel_diff, cosine, norm_ratio of a against b (2-D float64)."""
    return dict(rel_diff=finite(ref.rel_diff(a, b)), cosine=finite(ref.cosine(a, b)), norm_ratio=finite(ref.norm_ratio(a, b)))


def bits(a, b):
    d = ref.compare_bits(as2d(a).astype(np.float64), as2d(b).astype(np.float64), "fp32")
    return dict(bit_identical=bool(d["identical"]), mismatches=int(d["mismatches"]), max_ulps=d["ulps"],
                worst=None if d["identical"] else d["description"])


def compare_step(p, tp_run, ref_run, step, compare_state):
    """The record of one parameter at one step: ΔW's metrics, the weights' bits, each state tensor's bits."""
    name = p.name
    a, b = tp_run.weights[step][name], ref_run.weights[step][name]
    rec = dict(param=name, step=step, **metrics(delta(tp_run, name, step), delta(ref_run, name, step)), **bits(a, b))
    rec["replicated_ranks_differ"] = next((r for s, r in tp_run.replicated.get(name, []) if s == step), [])
    states = {}
    if compare_state:
        ta, tb = tp_run.states[step][name], ref_run.states[step][name]
        for key in sorted(set(ta) | set(tb)):
            if key not in ta or key not in tb:
                states[key] = dict(bit_identical=False, missing_in="the TP run" if key not in ta else "the reference")
                continue
            states[key] = dict(bits(ta[key], tb[key]), rel_diff=finite(ref.rel_diff(as2d(ta[key]).astype(np.float64),
                                                                                    as2d(tb[key]).astype(np.float64))))
    rec["state"] = states
    rec["state_identical"] = all(s["bit_identical"] for s in states.values())
    return rec


def spread(x, top=None):
    """σ_1 / σ_r over the top r singular values (r = top, or those above 1% of σ_1)."""
    s = np.asarray(ref.singular_values(x))
    if s.size == 0 or s[0] == 0:
        return None, 0
    r = top or int(np.sum(s >= 0.01 * s[0]))
    return float(s[0] / s[r - 1]) if s[r - 1] > 0 else float("inf"), r


def route_of(update, gradient):
    """"muon" (NS ran on it), "adamw" (elementwise) or None (undecided), from the first step's update
    against the gradient: NS makes every singular value of the update above ~1/480 of the largest
    nearly equal (spread σ_1/σ_r <= SPREAD_NS over the gradient's r significant directions), an
    elementwise update keeps roughly the gradient's spread. Decided only where the gradient's own spread is
    >= SPREAD_DECIDABLE (a nearly flat gradient looks the same either way) and the matrix has two sides >= 2."""
    if update.ndim != 2 or min(update.shape) < 2:
        return None, "a vector or a single row: no spectrum"
    g_spread, r = spread(gradient)
    if g_spread is None or g_spread < SPREAD_DECIDABLE:
        return None, f"the gradient's spectrum is already flat (spread {g_spread or 0:.2g} < {SPREAD_DECIDABLE:g})"
    u_spread, _ = spread(update, top=r)
    if u_spread is None:
        return None, "the update is zero"
    return ("muon" if u_spread <= SPREAD_NS else "adamw"), f"update spread {u_spread:.3g} over the gradient's top {r} " \
                                                           f"(gradient {g_spread:.3g})"


def observed_route(update, gradient, cuts):
    """route_of for a run's update, where NS may have run on each TP block apart (per-shard NS): when the whole
    looks elementwise, the blocks (cuts: [(update block, gradient block)]) decide: "adamw" if one is, "muon" if
    the decidable ones are NS-flat, undecided if none is decidable."""
    route, why = route_of(update, gradient)
    if route != "adamw" or len(cuts) < 2:
        return route, why
    per = [route_of(u, g) for u, g in cuts]
    if any(r == "adamw" for r, _ in per):
        return route, why
    words = "; ".join(w for _, w in per)
    return ("muon", f"NS on each TP block apart: {words}") if any(r == "muon" for r, _ in per) else \
        (None, f"elementwise as a whole, blocks undecided: {words}")


def ulp_self_test(params, ref_run):
    """The comparison engine must flag the reference's first step with one element moved by one ULP:
    raises AssertionError if compare_bits calls that bit-identical (a comparison that cannot see one ULP
    could pass anything)."""
    for p in params:
        w = np.array(ref_run.weights[1][p.name], dtype=np.float32, copy=True)
        flat = w.reshape(-1)
        idx = np.flatnonzero(np.isfinite(flat))
        if idx.size == 0:
            continue
        i = int(idx[0])
        flat[i] = np.nextafter(flat[i], np.float32(np.inf))
        got = bits(w, ref_run.weights[1][p.name])
        if got["bit_identical"] or got["max_ulps"] != 1:
            raise AssertionError(f"check_optimizer's comparison did not flag a 1-ULP change of {p.name!r} at element "
                                 f"{i}: {got}")
        return dict(param=p.name, element=i, flagged=True, words=got["worst"])
    raise AssertionError("check_optimizer's self-test found no finite weight to perturb in the reference's run")


def lr_wd(probe_run, name):
    """lr * wd measured from one step of the factory with zero gradients from fresh state: the update is then
    the decoupled decay alone, ΔW = -lr*wd W_0, so lr*wd = -<ΔW, W_0> / ||W_0||^2. (None, why) when not finite
    or when the step did more than decay (ΔW not parallel to W_0 within 1e-3)."""
    w0 = as2d(probe_run.weights[0][name]).astype(np.float64)
    d = delta(probe_run, name, 1)
    value = -float(np.sum(d * w0) / np.sum(w0 * w0))
    if not np.isfinite(value):
        return None, "the zero-gradient step left non-finite weights"
    rest = np.linalg.norm(d + value * w0)
    if rest > 1e-3 * max(np.linalg.norm(d), 1e-30) and np.linalg.norm(d) > 0:
        return None, f"a zero-gradient step moved the weights by more than decay (residual {rest:.3g})"
    return value, None


def momentum_key(states):
    """The state tensor taken as Muon's momentum: a key naming momentum, else exp_avg, else the only one."""
    for word in ("momentum", "exp_avg"):
        keys = [k for k in states if word in k and "sq" not in k]
        if keys:
            return keys[0]
    return next(iter(states)) if len(states) == 1 else None


def rounding_bound(p, layout, tp_run, ref_run, steps, lrwd, bound_fn, knobs):
    """The rounding claim for a Muon-routed parameter: per step, ||(W'_t - W_0) - (W_t - W_0)|| against its bound.

    Derivation. With λ = lr*wd, the reference's step is W_t = fl((1 - λ) W_{t-1} - U_t), U_t its NS part
    (the scale and lr times NS of the momentum G_t); the TP run's is W'_t = fl((1 - λ) W'_{t-1} - U'_t). The
    TP run's momentum is the reference's bit for bit (the elementwise part, checked), so U'_t and U_t are
    NS of the same G_t on the TP layout and on the whole matrix: ||U'_t - U_t|| <= value_t ||U_t||, value_t
    the S5 bound 2 S + N1 of nsverify.tp_rounding_bound(G_t, layout) relative to the NS
    result (the scale and lr multiply both alike). Each fl() is two float32 roundings (the decay product and
    the sum), each off by at most u |result| elementwise, so by u ||W|| in norm: 2u ||W'_t|| + 2u ||W_t||
    for both runs. The error e_t = W'_t - W_t = (1 - λ) e_{t-1} - (U'_t - U_t) + rounding, and 0 <= λ <= 1
    only shrinks old errors, so ||e_t|| <= Σ_{k<=t} [value_k ||U_k|| + 2u (||W'_k|| + ||W_k||)]: the
    cumulative weight change W_t - W_0 of the TP run stays within that of the reference's."""
    name = p.name
    key = momentum_key(ref_run.states[1][name]) if ref_run.states[1].get(name) else None
    if key is None:
        return dict(status="nothing checked", reason="the reference's optimizer holds no state tensor of this "
                    "parameter's shape to take as its momentum G (the matrix the NS bound is derived for)")
    if lrwd[0] is None:
        return dict(status="nothing checked", reason=f"lr*wd could not be measured: {lrwd[1]}")
    total, rows = 0.0, []
    for t in range(1, steps + 1):
        G = as2d(ref_run.states[t][name][key]).astype(np.float64)
        b = bound_fn(G, layout, **knobs)
        w_ref, w_tp = (as2d(r.weights[t][name]).astype(np.float64) for r in (ref_run, tp_run))
        total += b["value"] * np.linalg.norm(ns_part(ref_run, name, t, lrwd[0])) + \
            2 * U_FP32 * (np.linalg.norm(w_tp) + np.linalg.norm(w_ref))
        measured = float(np.linalg.norm(w_tp - w_ref))
        rows.append(dict(step=t, measured=measured, bound=total, derivation=b.get("derivation")))
        if not measured <= total:
            return dict(status="fails", steps=rows, momentum=key,
                        reason=f"step {t}: ||ΔW_tp_cum - ΔW_ref_cum|| = {measured:.3g} > bound {total:.3g}")
    return dict(status="holds", steps=rows, momentum=key)
