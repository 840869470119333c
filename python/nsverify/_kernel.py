"""check_kernel: nsverify's kernel properties, run on your Newton-Schulz."""

from . import _args
from . import _nsverify as _core
from ._adapters import NumpyKernel
from ._deadline import LimitedKernel
from ._records import DEFAULT_SEED, DEFAULTS, FIELDS, NS_KNOBS, settings
from ._reference import config as _config, restart_text
from ._results import CheckResult, PropertyResult

_K = DEFAULTS["kernel"]


def kernel_properties():
    """The kernel properties check_kernel runs: [{"code", "name", "claim", "promise", "needs"}]."""
    return _core.kernel_properties()


def check_kernel(fn, kernel=_K["kernel"], steps=_K["steps"], dtype=_K["dtype"], accumulate=_K["accumulate"],
                 products=_K["products"], coeffs=_K["coeffs"], restart_at=_K["restart_at"], batched=_K["batched"],
                 required=None, properties=None, max_success=_K["max_success"], max_size=_K["max_size"],
                 max_dim=_K["max_dim"], shape=None, seed=None, replay=None, promise=_K["promise"], counterexamples=None,
                 shrink_seconds=_K["shrink_seconds"], timeout=_K["timeout"]):
    """Run nsverify's kernel properties on ``fn(G: np.ndarray, steps: int) -> np.ndarray``.

    fn is your Newton-Schulz: it receives a float32 C-ordered matrix (float64 when dtype="fp64";
    with batched=True also 3-D batches of equally shaped matrices) and returns an array of the same
    shape (float32 or float64; anything numpy.asarray turns into one). The knobs (kernel, steps,
    dtype, accumulate, products, coeffs, restart_at, as ``nsv ns``) say which of the reference's
    computations fn claims to be; ``steps`` is passed to fn.

    Properties (the reference's own, properties/kernel_*.cpp; inputs from the same RapidCheck
    generators: square, wide, tall, extreme-aspect and vector shapes up to max_dim, gaussian,
    low-rank, power-law, ill-conditioned and integer spectra, power-of-two scales):
      K1   NS(G^T) = NS(G)^T bit for bit (non-square G; not with accumulate="compute", where PyTorch
           sums a tall input's X @ X.mT in the dtype and a wide one's in fp32)
      K7   a 3-D batch gives each matrix's own bits                    (batched=True)
      K10  same bits on a repeated call, at another batch position (batched=True), and for a
           matrix stored at another memory offset
      K2   NS(2^k G) = NS(G) bit for bit where the scaling is exact and eps is absorbed
      K3   NS(U G V^T) = U NS(G) V^T within B(G) + B(UGV^T)
      K4   NS(P G Q) = P NS(G) Q within B(G) + B(PGQ)
      K5   the singular values of NS(G) lie in the rounding-widened band of the scalar map
      K8   NS(0) = 0; a NaN/Inf input gives a non-finite output; tiny and huge magnitudes are exact,
           flagged non-finite, or the documented zero of an overflowing norm
      REF  agreement with the reference of the same kernel, dtype and schedule.
    B(G) is the a-priori rounding bound of checks/tolerances.hpp, S_kernel (steps + 1) L(G)
    (u_dtype + sqrt(n) u_acc): the rounded results per step, magnified at most L(G) times (the
    Frechet derivative of NS at G) by the rest of the iteration. A bounded claim is skipped (and the
    case classified) where an output diverged outside the configuration's first-order regime.

    REF's bound, derived from the reference's own error against the float64 oracle (no tuned
    number): the measured figure is rel_diff(fn(G), NS_fp64(G)), the reference in float64 (the map,
    to ~1e-14). In fp32 the bound is 2 S, S the reference's own fp32 distance to that map (max over
    G and two row/column permutations of G, equivalent evaluations): your kernel and the reference
    are two draws of one rounding-noise process around the map, so their distances to it are alike
    (the golden_fp32 row of tolerances.hpp, which bounds DeepSpeed's own outputs the same way). In
    bf16/fp16 with fp32 accumulation it is 2 (u_dtype/u_fp32) S_fp32 (row golden_bf16: to first order
    the error is linear in the unit roundoff of the stored results); with accumulate="compute" 2 S in
    the configured dtype; in fp64 (no own error to scale by) 2 B(G) between yours and the reference.
    Claimed for sides >= 16 (below, a handful of roundings varies by more than 2x between draws).

    promise   what fn promises, which chooses the properties that decide the result (every property
              is run and reported; each row of the table shows its promise):
              "map" (default): fn computes the right function, within the derived bounds: REF, K2,
                K3, K4, K5, K7 within rounding (batched=True), K8 and K11 (input untouched). A correct
                kernel passes whatever order its GEMMs sum in.
              "bitwise": also reproducible bits, as the reference's kernels promise: K1 (transpose),
                K7 exact (batch = loop), K10 (repeat, batch position, memory offset).
    required  names (or codes, e.g. {"K1", "REF"}) of the properties that decide the result,
              instead of the promise's set. The others are run and reported.
    properties  run only these names (or codes); the others are "not run".
    max_success, max_size, max_dim, seed  RapidCheck's cases per property, its size parameter, the
              largest side generated (8..4096) and its seed (fixed by default).
    shrink_seconds  how long a failing property may spend shrinking its counterexample after the first
              failure (default 5; 0..3600): then the smallest failing case found so far is reported.
              0 reports the first failing case as found (a large input that fails, at once).
    timeout   seconds one call of fn may take (default 300; 0: no limit): a call past it raises
              nsverify.CallTimeout inside fn (SIGALRM in the main thread; elsewhere the check stops
              waiting), and its case fails naming the limit; the check goes on.
    shape     (rows, cols): draw every matrix of this shape (your layer's), instead of any shape up to
              max_dim; at most 2^26 elements (4096 x 14336 fits). K1 does not apply to a square one,
              REF not to a short side below 16. Above 128 x 128 elements a matrix is its structure
              plus a seed, and shrinks by structure. How long max_success=1 takes at 4096 x 14336,
              and fn's share of it: see reports/performance.md, target (g).
    replay    a replay string from a failure: runs exactly that shrunk case again (with the same fn
              and arguments).
    counterexamples  a folder for the failures' arrays (created if missing): each failing property's
              case is saved as .npy files (what fn was handed and returned at each call of the case,
              and the reference's output on the same input), in a fresh subfolder, never
              overwriting a file; None (default): a new temporary folder. The paths are in the report
              and in each PropertyResult's ``files``.

    Returns a CheckResult: truthy only if every required property holds; ``print`` it for the
    table; ``result["name"]`` is one PropertyResult.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a callable fn(G, steps) -> array, got {type(fn).__name__}")
    s = settings("kernel", **given_settings(locals(), restart_at))
    cfg = _config(**{k: s[k] for k in NS_KNOBS})
    return run_kernel_check(NumpyKernel(fn, cfg.steps), _name(fn), s, cfg)


def given_settings(arguments, restart_at, not_settings=("fn",)):
    """A check's arguments as its record's settings: every argument but the implementation under test (and
    the other `not_settings`), the restart list in the record's text form."""
    return {k: v for k, v in arguments.items() if k not in not_settings} | dict(restart_at=restart_text(restart_at))


def _name(fn):
    return getattr(fn, "__qualname__", repr(fn))


def run_kernel_check(adapter, name, s, cfg, result_type=CheckResult, **extra):
    """The kernel catalogue on any framework's adapter (nsverify/_adapters.py) with the typed settings `s`
    of a kernel record (nsverify/_records.py): a result_type(subject, properties, **extra), with its seed,
    promise and the failures' arrays saved."""
    table = kernel_properties()
    selected = _select(s["properties"], table)
    wanted = _select(s["required"], table) if s["required"] is not None else promised(s["promise"], table)
    core = {k: v for k, v in s.items() if k in FIELDS["kernel"]} | dict(accumulate=cfg.accumulate)
    outcomes = _core.check_kernel(LimitedKernel(adapter, s["timeout"]), name, "kernel", core, selected or [])
    results = [PropertyResult.from_core(o, required=wanted is None or o["name"] in wanted) for o in outcomes]
    subject = f"check_kernel({name}: {cfg.kernel} {cfg.dtype} accumulate={cfg.accumulate} {cfg.coeffs} steps={cfg.steps})"
    result = result_type(subject, results, **extra)
    seed = DEFAULT_SEED if s["seed"] is None else s["seed"]
    _finish(result, cfg, seed, None if s["required"] is not None else s["promise"], s["counterexamples"])
    return result


def _finish(result, cfg, seed, promise, counterexamples):
    """The seed, the promise and the failures' arrays saved (nsverify/_counterexamples.py)."""
    import numpy as np
    from ._counterexamples import save_failures
    result.seed, result.promise = seed, promise
    save_failures(result, counterexamples, reference=lambda g: _core.ns(g, cfg, "cpu"),
                  dtype=np.float64 if cfg.dtype == "fp64" else np.float32)


def promised(promise, table):
    """The property names a promise requires: "map" those whose promise is "map", "bitwise" every one."""
    return [p["name"] for p in table if promise == "bitwise" or p["promise"] == "map"]


def _select(names, table):
    """Property names from names or codes; ValueError naming an unknown one."""
    if names is None:
        return None
    if isinstance(names, str):
        names = [names]
    out = []
    for n in names:
        hits = [p["name"] for p in table if n in (p["name"], p["code"])]
        if not hits:
            known = ", ".join(sorted({p["code"] for p in table} | {p["name"] for p in table}))
            raise ValueError(f"unknown property {n!r}; known: {known}")
        out += hits
    return out
