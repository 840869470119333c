"""nsverify.torch.check_optimizer on real gloo ranks (skipped where torch is absent): a whole-matrix (gather)
TP Muon passes claim="exact" on uneven and zero-width AutoTP shards at tp 2 and 3 and on tp 2 x dp 2
(ZeRO and FSDP pieces); single-device Muon run per shard fails and is diagnosed as per-shard NS; rank
faults fail within the limit leaving no process; DTensor is refused on torch < 2; replay reruns the
failing case; Param.from_config splits as nsv audit does.

The optimizers under test are defined here: Newton-Schulz in float32 (Keller Jordan's quintic, 5 steps,
X / (||X|| + 1e-7), transposed when tall), so that exactness is a property of the communication."""
import math
import sys
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.distributed as dist  # noqa: E402

import nsverify  # noqa: E402
import nsverify.torch as nt  # noqa: E402
from processes import rank_processes  # noqa: E402

KELLER = (3.4445, -4.7750, 2.0315)
LLAMA = dict(hidden_size=16, intermediate_size=20, num_attention_heads=4, num_key_value_heads=2, vocab_size=64)


def newton_schulz(G, steps=5):
    if G.numel() == 0:
        return torch.zeros_like(G)
    a, b, c = KELLER
    X = G.float()
    tall = X.shape[0] > X.shape[1]
    X = X.T if tall else X
    X = X / (X.norm() + 1e-7)
    for _ in range(steps):
        A = X @ X.T
        X = a * X + (b * A + c * A @ A) @ X
    return X.T if tall else X


def all_gather_padded(t, sizes, group):
    """Every rank's flat tensor, gloo's equal-size all_gather padded to the longest, trimmed back."""
    buf = torch.zeros(max(1, max(sizes)))
    buf[:t.numel()] = t.reshape(-1)
    out = [torch.empty_like(buf) for _ in sizes]
    dist.all_gather(out, buf, group=group)
    return [o[:n] for o, n in zip(out, sizes)]


def gather(x, spec, ctx):
    """The whole matrix from this rank's piece: its TP shard over DP, then the shards over TP at their ranges."""
    shard = x
    if ctx.dp > 1:
        row = math.prod(spec.local_shape[1:]) if ctx.dp_partition == "fsdp" else 1
        shard = torch.cat(all_gather_padded(x, [(e - b) * row for b, e in spec.pieces], ctx.dp_group))
        shard = shard.reshape(spec.local_shape)
    if spec.split is None or ctx.tp == 1:
        return shard
    parts = all_gather_padded(shard, [math.prod(s) for s in spec.local_shapes], ctx.tp_group)
    full = torch.empty(spec.shape)
    for t, part in enumerate(parts):
        block, offset = part.reshape(spec.local_shapes[t]), 0
        for b, e in spec.ranges[t]:
            full.narrow(spec.split, b, e - b).copy_(block.narrow(spec.split, offset, e - b))
            offset += e - b
    return full


def keep_local(u, spec, ctx):
    """This rank's piece of a whole-matrix update."""
    if spec.split is not None and ctx.tp > 1:  # a zero-width shard has no range
        u = torch.cat([u.narrow(spec.split, b, e - b) for b, e in spec.ranges[ctx.tp_rank]] or [u.new_zeros(spec.local_shape)],
                      spec.split)
    if ctx.dp == 1:
        return u
    b, e = spec.piece
    return u.reshape(-1)[b:e] if ctx.dp_partition == "zero" else u[b:e]


class Muon(torch.optim.Optimizer):
    """Muon (momentum, NS, Keller's scale sqrt(max(1, rows/cols)), decoupled decay) on route "muon", AdamW on the
    rest. whole=True: NS of the gathered whole matrix, this rank's piece kept; whole=False: single-device Muon,
    NS of whatever tensor the rank holds (DeepSpeed AutoTP's per-shard update when the tensor is a shard)."""

    def __init__(self, named, ctx, whole, lr=0.02, momentum=0.95, wd=0.01):
        self.ctx, self.whole, self.specs = ctx, whole, {id(p): ctx.specs[n] for n, p in named}
        super().__init__([p for _, p in named], dict(lr=lr, momentum=momentum, wd=wd))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                spec, st, g = self.specs[id(p)], self.state[p], p.grad
                p.mul_(1 - group["lr"] * group["wd"])
                if spec.route == "muon":
                    buf = st.setdefault("momentum_buffer", torch.zeros_like(p))
                    buf.mul_(group["momentum"]).add_(g)
                    full = gather(buf, spec, self.ctx) if self.whole else buf
                    u = newton_schulz(full) * max(1.0, full.shape[0] / max(1, full.shape[1])) ** 0.5
                    p.add_(keep_local(u, spec, self.ctx) if self.whole else u, alpha=-group["lr"])
                else:
                    m, v = st.setdefault("exp_avg", torch.zeros_like(p)), st.setdefault("exp_avg_sq", torch.zeros_like(p))
                    st["step"] = t = st.get("step", 0) + 1
                    m.mul_(0.9).add_(g, alpha=0.1)
                    v.mul_(0.999).addcmul_(g, g, value=0.001)
                    p.addcdiv_(m / (1 - 0.9 ** t), (v / (1 - 0.999 ** t)).sqrt() + 1e-8, value=-1e-3)


def gather_muon(named, ctx):
    return Muon(named, ctx, whole=True)


def single_device_muon(named, ctx):
    return Muon(named, ctx, whole=False)


def megatron_gather_muon(named, ctx):
    """gather_muon, after checking the attributes layout="megatron" promises."""
    for name, p in named:
        split = ctx.specs[name].split is not None and ctx.tp > 1
        assert (p.tensor_model_parallel, p.partition_dim, p.partition_stride) == (split, ctx.specs[name].split
                                                                                  if split else -1, 1), name
    return gather_muon(named, ctx)


class _Faulty(Muon):
    def step(self):
        if self.ctx.tp_rank == 1 and not self.ctx.is_reference:
            if self.fault == "hang":
                time.sleep(3600)
            if self.fault == "exit":
                sys.exit(0)
            raise RuntimeError("rank 1 ran out of memory")
        return super().step()


def hangs_in_step(named, ctx):
    opt = _Faulty(named, ctx, whole=True)
    opt.fault = "hang"
    return opt


def exits_in_step(named, ctx):
    opt = _Faulty(named, ctx, whole=True)
    opt.fault = "exit"
    return opt


def raises_in_step(named, ctx):
    opt = _Faulty(named, ctx, whole=True)
    opt.fault = "raise"
    return opt


def layer():
    return nt.Param.from_config(LLAMA)


def zero_width(result):
    return [p["name"] for p in result.parameters if any(0 in s for s in p["local_shapes"])]


@pytest.mark.parametrize("tp", [2, 3])
def test_gather_muon_is_exact_on_uneven_and_zero_width_autotp_shards(tp):
    result = nt.check_optimizer(megatron_gather_muon if tp == 2 else gather_muon, layer(), tp=tp, steps=2,
                                layout="megatron" if tp == 2 else "plain", strategy="gather")
    assert result, str(result)
    assert result.verdict == "PASS" and not result.diagnosis
    control = result.negative_control
    assert control["ulp_self_test"]["flagged"] and any(control["per_shard"].values()), str(result)
    if tp == 3:  # k/v_proj: 2 KV groups on 3 ranks leave rank 2 an (0, 16) shard; the MLP's 20 rows are uneven
        assert {"layers.0.self_attn.k_proj.weight", "layers.0.self_attn.v_proj.weight"} <= set(zero_width(result))
        gate = next(p for p in result.parameters if p["name"].endswith("gate_proj.weight"))
        assert len({tuple(s) for s in gate["local_shapes"]}) > 1
    assert all(r["bit_identical"] and r["state_identical"] for r in result.records)
    steps = result.collectives_summary()["tp"][0]
    assert set(steps) == {1, 2} and all("all_gather" in calls for calls in steps.values()), steps
    # beside the cost model: one all-gather per TP-split Muon matrix per step, as the gather strategy plans it
    assert result.plan["equal"] and result.plan["planned"][0] == {"all_gather": 7}, result.plan
    assert rank_processes() == []


def test_a_strategy_plan_is_refused_on_a_mesh():
    with pytest.raises(ValueError, match="strategy= compares each step's TP collectives"):
        nt.check_optimizer(gather_muon, layer(), tp=2, dp=2, strategy="gather")


@pytest.mark.parametrize("partition", ["zero", "fsdp"])
def test_gather_muon_is_exact_on_tp_2_x_dp_2(partition):
    params = [p for p in layer() if "k_proj" in p.name or "o_proj" in p.name or "input_layernorm" in p.name]
    result = nt.check_optimizer(gather_muon, params, tp=2, dp=2, dp_partition=partition, steps=2)
    assert result, str(result)
    assert result.environment["world_size"] == 4 and result.environment["reference_world"] == 2
    assert len(result.collectives["tp"]) == 4 and len(result.collectives["reference"]) == 2


def seeded_gradients(step, name, shape, dp_rank):
    return np.random.default_rng([step, len(name), dp_rank]).standard_normal(shape)


def test_single_device_muon_per_shard_fails_and_is_diagnosed_per_shard_ns():
    params = nt.Param.from_config(dict(LLAMA, hidden_size=32, intermediate_size=48))
    result = nt.check_optimizer(single_device_muon, params, tp=2, steps=2, grads=seeded_gradients)
    assert not result and result.verdict == "FAIL", str(result)
    q = "layers.0.self_attn.q_proj.weight"
    assert q in result.diagnosis, str(result)
    # per-shard NS and nothing else on every failing matrix (this Muon never reads spec.heads: a stale head count is
    # not distinguishable from it)
    assert all(d["matched"] == ["per-shard NS, local-shape scale"] for d in result.diagnosis.values()), str(result)
    # Derived: the step-1 weight change of each TP-split Muon parameter differs from the reference's by what
    # per-shard NS does to that gradient (the decay lr*wd*W_0 is in both, so it cancels in the difference).
    spec = next(p for p in params if p.name == q)
    G = torch.from_numpy(seeded_gradients(1, q, spec.shape, 0).astype(np.float32))
    lay = nsverify.autotp_layout(spec.shape[0], 2, 0, spec.heads, spec.kv_heads)
    blocks = [newton_schulz(torch.from_numpy(b)) * max(1.0, b.shape[0] / b.shape[1]) ** 0.5
              for b in nsverify.split(G.numpy(), lay)]
    whole = newton_schulz(G) * max(1.0, spec.shape[0] / spec.shape[1]) ** 0.5
    expected = nsverify.rel_diff(torch.cat(blocks).double().numpy(), whole.double().numpy())
    got = next(r for r in result.records if r["param"] == q and r["step"] == 1)["rel_diff"]
    assert 0.3 <= expected <= 0.7 and got == pytest.approx(expected, rel=0.05), (got, expected)
    # the elementwise parts are untouched by the sharding: the norms (AdamW, replicated) do not fail, so the
    # shrunk case reported holds the TP-split matrices alone
    assert set(result.diagnosis) == {p.name for p in params if p.split is not None}, str(result)
    # each row of the table shows its own parameter's weight-change differences, step by step
    rows = result.table().splitlines()[2:]
    assert len(rows) == len(result.parameters) >= 2, result.table()
    for p, row in zip(result.parameters, rows):
        own = ["-" if r["rel_diff"] is None else f"{r['rel_diff']:.2g}" for r in result.records if r["param"] == p["name"]]
        assert own and row.startswith(p["name"]) and f"  {' '.join(own)}  " in row, (p["name"], own, row)
    # replay reruns exactly the reported (shrunk) case: the failing parameters, up to the failing step
    again = nt.check_optimizer(single_device_muon, params, tp=2, steps=2, grads=seeded_gradients, replay=result.replay)
    assert not again and [r["rel_diff"] for r in again.records] == [r["rel_diff"] for r in result.records]
    assert rank_processes() == []


def test_single_device_muon_at_tp_1_checks_nothing():
    result = nt.check_optimizer(single_device_muon, layer()[:2], tp=1, steps=1)
    assert result.verdict == "NOTHING CHECKED" and "tp = 1" in result.reason, str(result)


@pytest.mark.parametrize("factory, words", [(raises_in_step, "RuntimeError: rank 1 ran out of memory"),
                                            (hangs_in_step, "did not answer within"),
                                            (exits_in_step, "CallExited: the callable called sys.exit(0)")])
def test_a_rank_fault_in_step_fails_within_the_limit_and_leaves_no_process(factory, words):
    limit = 3.0
    start = time.monotonic()
    result = nt.check_optimizer(factory, layer()[:2], tp=2, steps=1, timeout=limit)
    elapsed = time.monotonic() - start
    assert result.verdict == "FAIL" and words in result.fault, str(result)
    assert result.environment["slowest_failed_run_s"] <= limit + 1.5
    assert elapsed < 60, elapsed
    assert rank_processes() == []


def test_dtensor_layout_is_refused_on_torch_1():
    if int(torch.__version__.split(".")[0]) >= 2:
        pytest.skip("DTensor exists on torch >= 2")
    with pytest.raises(ValueError, match=r"DTensor needs torch >= 2.*this is torch 1\."):
        nt.check_optimizer(gather_muon, layer(), layout="dtensor")


def test_rounding_claim_waits_for_the_bound_binding():
    if getattr(nsverify, "tp_rounding_bound", None) is not None:
        result = nt.check_optimizer(gather_muon, layer()[:4], tp=2, steps=2, claim="rounding", kernel="standard")
        assert result, str(result)
    else:
        with pytest.raises(NotImplementedError, match="tp_rounding_bound"):
            nt.check_optimizer(gather_muon, layer(), claim="rounding")


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="claim must be one of"):
        nt.check_optimizer(gather_muon, layer(), claim="bitwise")
    with pytest.raises(ValueError, match="world_size must be tp x dp = 4"):
        nt.check_optimizer(gather_muon, layer(), tp=2, dp=2, world_size=2)
    with pytest.raises(ValueError, match="split of 'x' must be None for a 1-D parameter"):
        nt.Param("x", (4,), split=0)


def test_from_config_splits_as_nsv_audit(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(__import__("json").dumps(dict(LLAMA, architectures=["LlamaForCausalLM"], model_type="llama",
                                                  num_hidden_layers=1, max_position_embeddings=64)))
    for tp in (2, 3):
        audit = nsverify.audit(str(path), tp=tp)
        ours = {p.name.split(".")[-2]: p for p in nt.Param.from_config(str(path)) if p.split is not None}
        assert set(ours) == {m["name"] for m in audit["parameters"]}
        for m in audit["parameters"]:
            p = ours[m["name"]]
            widths = list(nsverify.autotp_layout(p.shape[p.split], tp, p.split, p.heads or 0, p.kv_heads or 0).widths)
            assert (p.shape, p.split, widths) == ((m["rows"], m["cols"]), m["split_axis"], m["shard_sizes"]), (m, p)


def test_the_rounding_claim_holds_where_both_runs_agree_exactly_at_a_zero_bound():
    """A parameter that stays zero in both runs (zero weights, zero momentum: NS(0) = 0): the TP run's
    cumulative change equals the reference's and the bound is 0; equal is within the bound, so the claim
    holds (a correct optimizer with a zero-initialized matrix must not fail)."""
    from types import SimpleNamespace
    from nsverify.torch._optimizer_compare import rounding_bound
    zero = np.zeros((4, 6), np.float32)
    run = SimpleNamespace(states={t: {"w": {"momentum_buffer": zero}} for t in range(3)},
                          weights={t: {"w": zero} for t in range(3)})
    out = rounding_bound(SimpleNamespace(name="w"), None, run, run, 2, (0.0, None),
                         lambda G, layout, **knobs: {"value": 0.5}, {})
    assert out["status"] == "holds", out
    assert [(s["measured"], s["bound"]) for s in out["steps"]] == [(0.0, 0.0), (0.0, 0.0)], out
