"""nsverify's reference computations, with keyword signatures (the knobs of the ``nsv`` CLI)."""

import os

from . import _args
from . import _nsverify as _core

#: The configuration schema of the library (nsv/config_schema.hpp): per field its default (None where
#: the library has none) and its choices ([] for free text; coeffs also takes a file of "a b c" lines).
CONFIG_SCHEMA = _core.config_schema()
#: NsConfig's defaults, by keyword: those of every front end (``nsv ns``, ``config``, ``ns``).
NS_DEFAULTS = {field: CONFIG_SCHEMA[field]["default"]
               for field in ("kernel", "steps", "dtype", "accumulate", "products", "coeffs", "restart_at")}
_BACKEND = CONFIG_SCHEMA["backend"]["default"]
_REDUCTION_ORDER = CONFIG_SCHEMA["reduction_order"]["default"]
#: How check_tp(dp=...) partitions each TP shard over the DP ranks by default, and the choices.
DP_PARTITION = CONFIG_SCHEMA["dp_partition"]["default"]
DP_PARTITIONS = tuple(CONFIG_SCHEMA["dp_partition"]["choices"])

NsConfig = _core.NsConfig
Layout = _core.Layout
rel_diff = _core.rel_diff
cosine = _core.cosine
norm_ratio = _core.norm_ratio
max_abs_diff = _core.max_abs_diff
singular_values = _core.singular_values
polar_factor = _core.polar_factor
#: The largest tensor-parallel degree the library accepts (nsv shard/sweep --tp).
MAX_TP = 4096
#: Counts (heads, grain) the library accepts: 1 .. 2^20, as ``nsv``'s flags.
MAX_COUNT = 1 << 20


def compare_bits(a, b, ulp_dtype="fp32"):
    """Element by element, bit for bit: {"identical", "mismatches", worst "row", "col", "a", "b", "ulps",
    "description"}. ulp_dtype: "fp64" | "fp32" | "bf16" |
    "fp16", the format the ULP distance is counted in."""
    return _core.compare_bits(a, b, _args.text("ulp_dtype", ulp_dtype))


def split(G, layout):
    """Each rank's shard of G (2-D) under layout: float64 in, float64 out; float32 otherwise."""
    return _core.split(G, _layout("layout", layout))


def assemble(shards, layout):
    """The whole matrix from one shard per rank, each of its rank's shape under layout (checked)."""
    return _core.assemble(_args.sequence("shards", shards), _layout("layout", layout))


def fused_layout(axis, part_sizes):
    """A layout from per-part, per-rank sizes: part_sizes[part][rank]."""
    axis = _args.integer("axis", axis, 0, 1)
    if not isinstance(part_sizes, (list, tuple)) or not all(isinstance(p, (list, tuple)) for p in part_sizes):
        raise TypeError(f"part_sizes must be a list of lists of sizes (part_sizes[part][rank]), got {part_sizes!r}")
    return _core.fused_layout(axis, [[_args.integer("part_sizes[][]", x, 0) for x in p] for p in part_sizes])


def head_aligned_sizes(dim, kv_groups, tp):
    """Each rank's width of a dim-long axis split on kv_groups head groups."""
    return _core.head_aligned_sizes(_args.integer("dim", dim, 0), _args.integer("kv_groups", kv_groups, 1, MAX_COUNT),
                                    _args.integer("tp", tp))


def grain_sizes(dim, tp, grain):
    """Each rank's width of a dim-long axis split in units of grain (the last rank takes the rest)."""
    return _core.grain_sizes(_args.integer("dim", dim, 0), _args.integer("tp", tp),
                             _args.integer("grain", grain, 1, MAX_COUNT))


def _layout(name, layout):
    if not isinstance(layout, Layout):
        raise TypeError(f"{name} must be a Layout (from autotp_layout, fused_qkv_layout or fused_layout), "
                        f"got {type(layout).__name__}")
    return layout


def config_schema():
    """The library's configuration schema: {field: {"default": ..., "choices": [...]}} for the NS knobs and the
    backend, reduction order, fused kind, strategy and target (default None where the library has none; choices []
    for free text; coeffs also takes a file)."""
    return _core.config_schema()


def config(kernel=NS_DEFAULTS["kernel"], steps=NS_DEFAULTS["steps"], dtype=NS_DEFAULTS["dtype"],
           accumulate=NS_DEFAULTS["accumulate"], products=NS_DEFAULTS["products"], coeffs=NS_DEFAULTS["coeffs"],
           restart_at=NS_DEFAULTS["restart_at"]):
    """The validated NsConfig of ``nsv ns``'s knobs.

    kernel      "standard" | "gram" (DeepSpeed's zeropower_via_newtonschulz5 / _via_gram_newtonschulz)
    steps       NS steps, 0..1000
    dtype       compute dtype: "fp64" | "fp32" | "bf16" | "fp16"
    accumulate  GEMM accumulation: "fp32" (tensor cores, cuBLAS) | "compute" (PyTorch's CPU bf16/fp16 GEMM)
    products    "symmetric" (upper triangle of the n x n products, mirrored) | "full" (PyTorch's bits)
    coeffs      a built-in schedule ("keller", "you", "quintic", "polar_express", "cans", "aol", "deepseekv4",
                "cubic5"; Emerging-Optimizers' "simple" = "keller") | a file of "a b c" lines
    restart_at  gram kernel: the steps it restarts before, an int or an increasing list (2, [2, 4, 6],
                "2,4,6"; steps outside 1..steps-1, [] or "none": never)
    """
    return _core.config(_args.text("kernel", kernel), _args.integer("steps", steps), _args.text("dtype", dtype),
                        _args.text("accumulate", accumulate), _args.text("products", products),
                        _args.text("coeffs", coeffs), restart_text(restart_at))


def restart_text(restart_at):
    """A restart list as ``nsv --restart-at`` reads it: 2 -> "2", [2, 4] -> "2,4", [] -> "none"."""
    if isinstance(restart_at, str):
        return restart_at
    if not isinstance(restart_at, (list, tuple)):
        return str(_args.integer("restart_at", restart_at, 0, 1000))
    steps = [_args.integer("restart_at[]", s, 0, 1000) for s in restart_at]
    return ",".join(str(s) for s in steps) if steps else "none"


def ns(G, kernel=NS_DEFAULTS["kernel"], steps=NS_DEFAULTS["steps"], dtype=NS_DEFAULTS["dtype"],
       accumulate=NS_DEFAULTS["accumulate"], products=NS_DEFAULTS["products"], coeffs=NS_DEFAULTS["coeffs"],
       restart_at=NS_DEFAULTS["restart_at"], backend=_BACKEND, allow_unnormalizable=False):
    """Newton-Schulz of G (2-D, or a 3-D batch of independent matrices) by nsverify's reference.

    G: float32 or float64, any memory layout. Returns float32 (float64 for dtype="fp64") of G's shape.
    The knobs are those of ``nsv ns`` (see ``config``); backend "cpu" | "cuda" | "cuda-tf32" | "cuda-batched".
    ValueError, as ``nsv ns`` refuses them: an empty G, one past the library's input limits (2^32 elements
    in one call, the memory this process may use), and one NS cannot normalize: holding NaN or Inf, or
    whose Frobenius norm overflows the dtype the kernel normalizes in (the result would be all zeros).
    allow_unnormalizable=True computes the last kind anyway and returns what the kernel gives (NaN, or
    the zeros of an overflowing norm, as DeepSpeed's kernels): for studies of blow-ups, and for the
    reference offered as a kernel under test (K8 hands a kernel such inputs).
    """
    return _core.ns(G, config(kernel, steps, dtype, accumulate, products, coeffs, restart_at), _args.text("backend", backend),
                    _args.boolean("allow_unnormalizable", allow_unnormalizable))


def ns_flops(rows, cols, **knobs):
    """FLOPs of one NS call on a rows x cols matrix (plain-algorithm convention, kernels.hpp)."""
    return _core.ns_flops(config(**knobs), _args.integer("rows", rows, 0), _args.integer("cols", cols, 0))


def autotp_layout(dim, tp, axis=0, heads=0, kv_heads=0, grain=1):
    """AutoTP's layout of a split axis of length dim (DeepSpeed tp_shard.get_shard_size).

    Head-aligned on the KV groups when heads are given (kv_heads=0: no GQA), grain-based otherwise
    (grain 1 training, 64 inference). axis 0 splits rows (q/k/v, gate/up), 1 columns (o, down).
    """
    return _core.autotp_layout(_args.integer("dim", dim, 0), _args.integer("tp", tp),
                               _args.integer("axis", axis, 0, 1), _args.integer("heads", heads, 0, MAX_COUNT),
                               _args.integer("kv_heads", kv_heads, 0, MAX_COUNT), _args.integer("grain", grain, 1, MAX_COUNT))


def fused_qkv_layout(heads, kv_heads, head_dim, tp):
    """The layout of a fused [Q; K; V] matrix (rows (heads + 2 kv_heads) * head_dim): each part split
    head-aligned on the KV groups, each rank's three pieces concatenated."""
    heads, kv_heads = _args.integer("heads", heads, 1, MAX_COUNT), _args.integer("kv_heads", kv_heads, 1, MAX_COUNT)
    head_dim, tp = _args.integer("head_dim", head_dim, 1, MAX_COUNT), _args.integer("tp", tp)
    q, kv = heads * head_dim, kv_heads * head_dim
    sizes = [head_aligned_sizes(q, kv_heads, tp), head_aligned_sizes(kv, kv_heads, tp),
             head_aligned_sizes(kv, kv_heads, tp)]
    return fused_layout(0, sizes)


def strategies():
    """The strategy records: name, target, promise, summary (the one table every front end reads)."""
    return _core.strategies()


def run_strategy(G, strategy, tp, axis=0, heads=0, kv_heads=0, grain=1, target=None, reduction_order=_REDUCTION_ORDER,
                 **knobs):
    """Run one strategy on tp simulated ranks and compare each rank with its target.

    Returns the fields of ``nsv shard --json`` (rel_diff_mean, rel_diff_max, bit_identical, collectives,
    ranks[] with bytes and FLOPs), plus "outputs" (each rank's block), "target_result" and "layout".
    knobs: those of ``config``.
    """
    return _core.run_strategy(G, _args.text("strategy", strategy), _args.integer("tp", tp),
                              _args.integer("axis", axis, 0, 1), _args.integer("heads", heads, 0, MAX_COUNT),
                              _args.integer("kv_heads", kv_heads, 0, MAX_COUNT), _args.integer("grain", grain, 1, MAX_COUNT),
                              _args.optional_text("target", target) or "", _args.text("reduction_order", reduction_order),
                              config(**knobs))


def plan_strategy(strategy, rows, cols, tp, axis=0, heads=0, kv_heads=0, grain=1, latency_us=5.0,
                  link_gbps=450.0, tflops=989.0, **knobs):
    """The cost model: per-rank FLOPs, bytes, messages, extra memory and alpha-beta time of a strategy
    on a rows x cols matrix (cost_model.hpp; defaults: one H200 and NVLink 4)."""
    return _core.plan_strategy(_args.text("strategy", strategy), _args.integer("rows", rows, 1),
                               _args.integer("cols", cols, 1), _args.integer("tp", tp),
                               _args.integer("axis", axis, 0, 1), _args.integer("heads", heads, 0, MAX_COUNT),
                               _args.integer("kv_heads", kv_heads, 0, MAX_COUNT), _args.integer("grain", grain, 1, MAX_COUNT),
                               config(**knobs), _args.number("latency_us", latency_us),
                               _args.number("link_gbps", link_gbps), _args.number("tflops", tflops))


def audit(config_path, tp=8, grain=1, latency_us=5.0, link_gbps=450.0, tflops=989.0, measure=False,
          measure_max_elements=1 << 21, seed=0, dtype="fp16", **knobs):
    """Audit a Hugging Face Llama-family config.json: the dict of ``nsv audit --json`` (schema nsv.audit/1).
    dtype defaults to fp16, as ``nsv audit`` (DeepSpeed's gram NS on a GPU)."""
    if isinstance(config_path, os.PathLike):
        config_path = os.fspath(config_path)
    return _core.audit(_args.text("config_path", config_path), _args.integer("tp", tp, 1, 1024),
                       _args.integer("grain", grain, 1, MAX_COUNT), config(dtype=dtype, **knobs),
                       _args.number("latency_us", latency_us), _args.number("link_gbps", link_gbps),
                       _args.number("tflops", tflops), _args.boolean("measure", measure),
                       _args.integer("measure_max_elements", measure_max_elements, 1, 1 << 30),
                       _args.integer("seed", seed, 0, 1 << 53))
