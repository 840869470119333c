"""nsverify: property-based verification of Muon's Newton-Schulz orthogonalization under tensor
parallelism, pointed at anyone's implementation.

The package exposes nsverify's C++ reference and its property checks to Python:

Reference (nsverify's own computations, the GIL released while they run)
    ns(G, kernel=..., steps=..., dtype=..., accumulate=..., products=..., coeffs=..., restart_at=...)
        Newton-Schulz of a 2-D matrix or a 3-D batch, every knob of ``nsv ns``.
    config_schema()
        Every knob's default and choices, as the library (and so ``nsv``) defines them.
    autotp_layout, fused_qkv_layout, split, assemble, head_aligned_sizes, grain_sizes
        AutoTP's shard rules and the split of a matrix into per-rank shards.
    strategies(), run_strategy(G, strategy, tp, ...)
        Every strategy on in-process ranks: per-rank outputs, the ledger, the comparison with the
        target (the fields of ``nsv shard --json``).
    plan_strategy(...), audit(config_path, ...)
        The cost model, and the model audit (the JSON of ``nsv audit --json``, schema nsv.audit/1).
    rel_diff, cosine, norm_ratio, max_abs_diff, compare_bits, singular_values, polar_factor
        The metrics.

Checks of *your* implementation (the suite's RapidCheck generators, shrinking and replay)
    check_kernel(fn, ...)  fn(G: np.ndarray, steps: int) -> np.ndarray
    check_tp(fn, ...)      fn(shards: list[np.ndarray], spec) -> list[np.ndarray]
    tp_rounding_bound(G, layout, ...)  the bound check_tp's "rounding" claim asserts, for one matrix
Both return a result that is truthy only if every required property holds, prints as a table,
and carries, for each failure, the shrunk counterexample, its arrays saved as .npy and a replay
string. check_kernel's ``promise`` says what decides: "map" (default: the right function within
derived bounds) or "bitwise" (and reproducible bits).
    assert_kernel(fn, ...), assert_tp(fn, ...)
        The same, raising AssertionError with the full report (for pytest):

    def test_my_newton_schulz():
        nsverify.assert_kernel(my_ns, kernel="standard", dtype="fp32")

``pytest -p nsverify.pytest_plugin`` adds each failure's replay, the seed and the saved arrays to
pytest's report. ``nsverify.hypothesis_strategies``: the generators as Hypothesis strategies.

Bad arguments raise ValueError with the messages of the ``nsv`` command line.
"""

from ._reference import (NsConfig, Layout, assemble, audit, autotp_layout, compare_bits, config, config_schema,
                         cosine, fused_layout, fused_qkv_layout, grain_sizes, head_aligned_sizes, max_abs_diff,
                         norm_ratio, ns, ns_flops, plan_strategy, polar_factor, rel_diff, run_strategy,
                         singular_values, split, strategies)
from ._results import CheckResult, PropertyResult
from ._kernel import check_kernel, kernel_properties
from ._tp import Candidate, TpCheckResult, check_tp, tp_rounding_bound
from ._assertions import CheckFailed, assert_kernel, assert_tp
from ._deadline import CallTimeout
from ._exits import CallExited

__version__ = "0.1.0"

__all__ = [
    "__version__", "ns", "config", "config_schema", "NsConfig", "ns_flops", "Layout", "autotp_layout", "fused_layout",
    "fused_qkv_layout", "head_aligned_sizes", "grain_sizes", "split", "assemble", "strategies", "run_strategy",
    "plan_strategy", "audit", "rel_diff", "cosine", "norm_ratio", "max_abs_diff", "compare_bits",
    "singular_values", "polar_factor", "check_kernel", "kernel_properties", "check_tp", "tp_rounding_bound", "CheckResult",
    "PropertyResult", "TpCheckResult", "Candidate", "assert_kernel", "assert_tp", "CheckFailed", "CallTimeout",
    "CallExited",
]
