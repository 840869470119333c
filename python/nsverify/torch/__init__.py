"""nsverify.torch: nsverify's properties pointed at PyTorch implementations (needs python3-torch;
``import nsverify`` does not).

    check_kernel(fn, kernel=..., steps=..., dtype="bf16", device="cpu", accumulate="auto", ...)
        fn(G: torch.Tensor, steps) -> torch.Tensor, G in the claimed dtype on the device. Every
        kernel property of nsverify.check_kernel, bounds derived for the dtype; K11 also checks that
        G keeps its storage and that the result shares none of it.
    check_tp(fn, world_size=2, backend="gloo", claim="exact", target="whole", uneven=True, ...)
        fn(shard: torch.Tensor, spec, group) -> torch.Tensor, run unmodified on world_size real
        processes forming a process group on the loopback, each rank handed its shard as AutoTP lays
        it out. The claims and the diagnosis of nsverify.check_tp, a per-case time limit (a rank that
        raises, hangs or dies is a failed case with its message), the collectives each rank issued,
        and the cost model's plan beside them (strategy=).
    run_tp(fn, G, world_size, ...)       fn on one layout: each rank's block and collectives
    check_optimizer(make_optimizer, params, tp=2, dp=None, claim="exact", layout="plain", steps=3, ...)
        make_optimizer(named_params, ctx) -> optimizer, a whole (Muon) optimizer run on real TP (x DP) gloo
        ranks, each rank's parameters its AutoTP shards (or DP pieces of them), gradients injected, against
        the same factory at tp = 1: weights and state per parameter and step (bit-identical, or within the
        derived rounding bound), a per-shard negative control, the collectives per rank and step, and a
        diagnosis of each failing parameter by the factory's own reruns. assert_optimizer raises CheckFailed.
    Param(name, shape, split=None, route="auto", heads=None, kv_heads=None, fused=None)
    Param.from_config(config, layers=1)  the parameters of a Llama/Qwen/Mistral-style config.json
    python -m nsverify.torch.launch FILE.py:FACTORY ... under torchrun: the same check on launched ranks
    probe_accumulation(dtype, device)    how the device's matmul accumulates in the dtype (measured)
    support(dtype, device)               raises DtypeNotSupported where torch cannot run the dtype
    shutdown()                           end the ranks' forkserver (it otherwise ends with the caller)

    import nsverify.torch

    def test_my_tp_update():
        result = nsverify.torch.check_tp(my_update, world_size=2, claim="rounding", aspect_scale=True)
        assert result, result
"""

try:
    import torch as _torch  # noqa: F401 - the one place that says torch is missing
except ImportError as e:  # pragma: no cover - exercised where torch is absent
    raise ImportError("nsverify.torch needs PyTorch: on Debian `apt-get install python3-torch`, and run "
                      "/usr/bin/python3 (the rest of nsverify does not need it)") from e

from ._kernel import TorchCheckResult, TorchKernel, check_kernel
from ._pool import RankFailure, RankStartError, shutdown
from ._probe import AccumulationProbe, DtypeNotSupported, probe_accumulation, support
from ._tp import TorchTpCheckResult, check_tp, run_tp
from ._optimizer import assert_optimizer, check_optimizer, run_from_cli
from ._optimizer_params import Param
from ._optimizer_result import OptimizerCheckResult

__all__ = ["check_kernel", "check_tp", "run_tp", "check_optimizer", "assert_optimizer", "Param", "OptimizerCheckResult",
           "probe_accumulation", "support", "shutdown", "TorchKernel",
           "TorchCheckResult", "TorchTpCheckResult", "AccumulationProbe", "DtypeNotSupported", "RankFailure",
           "RankStartError"]
