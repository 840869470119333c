"""nsverify's reference computations, with keyword signatures (the knobs of the ``nsv`` CLI)."""

from . import _nsverify as _core

#: The configuration schema of the library (nsv/config_schema.hpp): per field its default (None where
#: the library has none) and its choices ([] for free text; coeffs also takes a file of "a b c" lines).
CONFIG_SCHEMA = _core.config_schema()
#: NsConfig's defaults, by keyword: those of every front end (``nsv ns``, ``config``, ``ns``).
NS_DEFAULTS = {field: CONFIG_SCHEMA[field]["default"]
               for field in ("kernel", "steps", "dtype", "accumulate", "products", "coeffs", "restart_at")}
#: The checks' defaults (check_kernel, check_tp, ``nsv check``): NsConfig's, except products="full", deliberately:
#: a check compares the user's implementation with the reference bit for bit, and PyTorch (so any torch
#: Newton-Schulz) computes both triangles of the n x n products.
CHECK_DEFAULTS = dict(NS_DEFAULTS, products="full")
_BACKEND = CONFIG_SCHEMA["backend"]["default"]
_REDUCTION_ORDER = CONFIG_SCHEMA["reduction_order"]["default"]

NsConfig = _core.NsConfig
Layout = _core.Layout
rel_diff = _core.rel_diff
cosine = _core.cosine
norm_ratio = _core.norm_ratio
max_abs_diff = _core.max_abs_diff
compare_bits = _core.compare_bits
singular_values = _core.singular_values
polar_factor = _core.polar_factor
split = _core.split
assemble = _core.assemble
fused_layout = _core.fused_layout
head_aligned_sizes = _core.head_aligned_sizes
grain_sizes = _core.grain_sizes


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
    return _core.config(kernel, steps, dtype, accumulate, products, coeffs, restart_text(restart_at))


def restart_text(restart_at):
    """A restart list as ``nsv --restart-at`` reads it: 2 -> "2", [2, 4] -> "2,4", [] -> "none"."""
    if isinstance(restart_at, str):
        return restart_at
    if isinstance(restart_at, int):
        return str(restart_at)
    steps = [int(s) for s in restart_at]
    return ",".join(str(s) for s in steps) if steps else "none"


def ns(G, kernel=NS_DEFAULTS["kernel"], steps=NS_DEFAULTS["steps"], dtype=NS_DEFAULTS["dtype"],
       accumulate=NS_DEFAULTS["accumulate"], products=NS_DEFAULTS["products"], coeffs=NS_DEFAULTS["coeffs"],
       restart_at=NS_DEFAULTS["restart_at"], backend=_BACKEND):
    """Newton-Schulz of G (2-D, or a 3-D batch of independent matrices) by nsverify's reference.

    G: float32 or float64, any memory layout. Returns float32 (float64 for dtype="fp64") of G's shape.
    The knobs are those of ``nsv ns`` (see ``config``); backend "cpu" | "cuda" | "cuda-tf32" | "cuda-batched".
    """
    return _core.ns(G, config(kernel, steps, dtype, accumulate, products, coeffs, restart_at), backend)


def ns_flops(rows, cols, **knobs):
    """FLOPs of one NS call on a rows x cols matrix (plain-algorithm convention, kernels.hpp)."""
    return _core.ns_flops(config(**knobs), rows, cols)


def autotp_layout(dim, tp, axis=0, heads=0, kv_heads=0, grain=1):
    """AutoTP's layout of a split axis of length dim (DeepSpeed tp_shard.get_shard_size).

    Head-aligned on the KV groups when heads are given (kv_heads=0: no GQA), grain-based otherwise
    (grain 1 training, 64 inference). axis 0 splits rows (q/k/v, gate/up), 1 columns (o, down).
    """
    return _core.autotp_layout(dim, tp, axis, heads, kv_heads, grain)


def fused_qkv_layout(heads, kv_heads, head_dim, tp):
    """The layout of a fused [Q; K; V] matrix (rows (heads + 2 kv_heads) * head_dim): each part split
    head-aligned on the KV groups, each rank's three pieces concatenated."""
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
    return _core.run_strategy(G, strategy, tp, axis, heads, kv_heads, grain, target or "", reduction_order,
                              config(**knobs))


def plan_strategy(strategy, rows, cols, tp, axis=0, heads=0, kv_heads=0, grain=1, latency_us=5.0,
                  link_gbps=450.0, tflops=989.0, **knobs):
    """The cost model: per-rank FLOPs, bytes, messages, extra memory and alpha-beta time of a strategy
    on a rows x cols matrix (cost_model.hpp; defaults: one H200 and NVLink 4)."""
    return _core.plan_strategy(strategy, rows, cols, tp, axis, heads, kv_heads, grain, config(**knobs), latency_us,
                               link_gbps, tflops)


def audit(config_path, tp=8, grain=1, latency_us=5.0, link_gbps=450.0, tflops=989.0, measure=False,
          measure_max_elements=1 << 21, seed=0, dtype="fp16", **knobs):
    """Audit a Hugging Face Llama-family config.json: the dict of ``nsv audit --json`` (schema nsv.audit/1).
    dtype defaults to fp16, as ``nsv audit`` (DeepSpeed's gram NS on a GPU)."""
    return _core.audit(config_path, tp, grain, config(dtype=dtype, **knobs), latency_us, link_gbps, tflops, measure,
                       measure_max_elements, seed)
