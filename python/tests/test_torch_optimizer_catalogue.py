"""The optimizer catalogue (examples/optimizers) through nsverify.torch.check_optimizer on real gloo ranks:
each entry's claims and diagnosis as its CATALOGUE record states them, on a tiny Llama-ish model whose
AutoTP shards are uneven (o_proj at tp 3), zero-width (q/k/v with 2 KV groups at tp 3 and 4) and fused (a
QKV matrix).

Every entry's claims at tp 2; the claims the correct and rounding ones make also at tp 3 and 4 and on
tp 2 x dp 2 (ZeRO and FSDP pieces). Every failing entry's diagnosis at tp 2 is its own, and no other
hypothesis matches.
"""
import functools

import numpy as np
import pytest

pytest.importorskip("torch")

import nsverify.torch as nt  # noqa: E402
import optimizers  # noqa: E402
from processes import rank_processes  # noqa: E402

P = nt.Param
PARAMS = [
    P("layers.0.self_attn.q_proj.weight", (16, 16), 0, heads=4, kv_heads=2),
    P("layers.0.self_attn.k_proj.weight", (8, 16), 0, heads=2),
    P("layers.0.self_attn.v_proj.weight", (8, 16), 0, heads=2),
    P("layers.0.self_attn.o_proj.weight", (16, 16), 1, heads=4, kv_heads=2),
    P("layers.0.mlp.gate_proj.weight", (24, 16), 0),
    P("layers.0.mlp.up_proj.weight", (24, 16), 0),
    P("layers.0.mlp.down_proj.weight", (16, 24), 1),
    P("layers.1.self_attn.qkv_proj.weight", (32, 16), 0, heads=4, kv_heads=2, fused="qkv"),
    P("layers.0.input_layernorm.weight", (16,)),
    P("layers.0.post_attention_layernorm.weight", (16,)),
]
MESHES = {"tp1": dict(tp=1), "tp2": dict(tp=2), "tp3": dict(tp=3), "tp4": dict(tp=4),
          "tp2xdp2-zero": dict(tp=2, dp=2, dp_partition="zero"), "tp2xdp2-fsdp": dict(tp=2, dp=2, dp_partition="fsdp")}
ENTRY = {e.module: e for e in optimizers.CATALOGUE}
TP_ENTRIES = [e for e in optimizers.CATALOGUE if e.tensor_parallel]
Q = "layers.0.self_attn.q_proj.weight"
NORMS = ("layers.0.input_layernorm.weight", "layers.0.post_attention_layernorm.weight")


@functools.lru_cache(maxsize=None)
def check(module, claim, mesh="tp2", reference=None):
    """check_optimizer on one entry: one draw of 2 steps (every entry's defect shows from step 1)."""
    entry = ENTRY[module]
    reference = reference or entry.reference
    ref = "tp1" if reference == "self" else ENTRY[reference].factory
    return nt.check_optimizer(entry.factory, PARAMS, claim=claim, reference=ref, steps=2, max_success=1, **MESHES[mesh])


def claims(entries):
    return [(e.module, claim, passes) for e in entries for claims, passes in ((e.must_pass, True), (e.must_fail, False))
            for claim in claims]


@pytest.mark.parametrize("module, claim, passes", claims(TP_ENTRIES), ids=str)
def test_each_entry_meets_its_claims_at_tp_2(module, claim, passes):
    result = check(module, claim)
    assert result.verdict == ("PASS" if passes else "FAIL"), str(result)


@pytest.mark.parametrize("mesh", [m for m in MESHES if m not in ("tp1", "tp2")])
@pytest.mark.parametrize("module, claim", [(e.module, c) for e in TP_ENTRIES for c in e.must_pass], ids=str)
def test_the_claims_the_correct_and_rounding_entries_make_hold_on_every_mesh(module, claim, mesh):
    result = check(module, claim, mesh)
    assert result.verdict == "PASS", str(result)


def statuses(found):
    return {h["hypothesis"]: (h["status"], h["measure"]) for h in found["hypotheses"]}


@pytest.mark.parametrize("module", [e.module for e in TP_ENTRIES if e.must_fail])
def test_each_failing_entry_gets_its_own_diagnosis_and_only_it(module):
    """The entry's hypothesis is the only one matched on every failing parameter, but where that hypothesis is not
    distinguishable there (then none matches); a rounding-only entry matches none."""
    entry = ENTRY[module]
    result = check(module, "exact")
    assert result.diagnosis, str(result)
    matched = []
    for name, found in result.diagnosis.items():
        if entry.diagnosis and statuses(found)[entry.diagnosis][0] == "not distinguishable":
            assert found["matched"] == [], (name, found)
            continue
        assert found["matched"] == ([entry.diagnosis] if entry.diagnosis else []), (name, found)
        matched.append(name)
    assert matched or not entry.diagnosis, str(result)


def test_decay_after_the_update_is_not_distinguishable_on_the_adamw_norms():
    """wd_wrong_side's norms fail too, but AdamW's lr*wd = 3e-5 moves them by lr*wd ||U|| ~ 3e-8, far below
    float32 rounding of weights near 1: the hypothesis says so instead of guessing."""
    diagnosis = check("wd_wrong_side", "exact").diagnosis
    for name in NORMS:
        status, measure = statuses(diagnosis[name])["weight decay applied after the update"]
        assert status == "not distinguishable" and "lr*wd too small" in measure, (name, diagnosis[name])


def test_per_shard_ns_is_neither_a_stale_head_count_nor_a_route():
    """The per-shard optimizer never reads spec.heads, so the stale-heads rerun is the per-shard rerun bit for bit:
    not distinguishable, not a second match; its shards' updates are NS, not AdamW's (k_proj, gate/up included)."""
    diagnosis = check("per_shard_muon", "exact").diagnosis
    for name, found in diagnosis.items():
        s = statuses(found)
        assert s["routed to the other group"][0] == "no match", (name, s)
        if "proj" in name and "mlp" not in name:
            assert s["stale head count"][0] == "not distinguishable" and "spec.heads" in s["stale head count"][1], s


class _RoutesMatricesToMuonOnTp(optimizers.gather_tp_muon.GatherTpMuon):
    """A TP factory that sends every matrix to Muon by its ndim, the declared AdamW ones included."""

    def uses_muon(self, param, spec):
        return spec.route == "muon" or (self.ctx.tp > 1 and param.ndim == 2)


def routes_matrices_to_muon_on_tp(named_params, ctx):
    return _RoutesMatricesToMuonOnTp(named_params, ctx)


def test_a_matrix_declared_adamw_and_sent_to_ns_is_routed_to_the_other_group():
    """The reverse of routed_to_adamw: the factory at tp = 1 with the matrix registered as route "muon" gives the TP
    run's bits."""
    params = [P("embed_tokens.weight", (16, 16), route="adamw"), PARAMS[0]]
    result = nt.check_optimizer(routes_matrices_to_muon_on_tp, params, reference=ENTRY["gather_tp_muon"].factory,
                                steps=2, tp=2)
    assert result.verdict == "FAIL" and set(result.diagnosis) == {"embed_tokens.weight"}, str(result)
    assert result.diagnosis["embed_tokens.weight"]["matched"] == ["routed to the other group"], str(result)


def test_the_gather_and_owner_muons_are_the_single_device_muon_bit_for_bit():
    for module in ("gather_tp_muon", "owner_tp_muon"):
        result = check(module, "exact", reference="single_device")
        assert result, str(result)


def test_the_single_device_muon_checks_nothing_at_tp_1_and_is_per_shard_ns_at_tp_2():
    alone = check("single_device", "exact", "tp1")
    assert alone.verdict == "NOTHING CHECKED" and "tp = 1" in alone.reason, str(alone)
    on_shards = check("single_device", "exact", "tp2")
    assert on_shards.verdict == "FAIL" and on_shards.diagnosis[Q]["matched"] == [ENTRY["per_shard_muon"].diagnosis], \
        str(on_shards)


def gaussian_gradients(step, name, shape, dp_rank):
    """Standard normal gradients, the setting of the seed's random-matrix figure."""
    return np.random.default_rng([step, dp_rank, sum(map(ord, name))]).standard_normal(shape)


def test_per_shard_muon_moves_a_llama_shaped_matrix_by_a_third_to_two_thirds():
    """DeepSpeed issue #8437 measured 0.39 (a Llama q_proj, tp 2) and 0.53 (one 256 x 256 matrix, gaussian)."""
    entry = ENTRY["per_shard_muon"]
    result = nt.check_optimizer(entry.factory, PARAMS, steps=1, tp=2, grads=gaussian_gradients)
    first_step = next(r for r in result.records if r["param"] == Q and r["step"] == 1)
    assert 0.3 <= first_step["rel_diff"] <= 0.7, first_step


def test_no_rank_process_outlives_the_checks():
    assert rank_processes() == []


def moonlight_local_shape_scale(named_params, ctx):
    return optimizers.local_shape_scale.LocalShapeScaleMuon(named_params, ctx, scale_rule="moonlight")


def moonlight_gather(named_params, ctx):
    return optimizers.gather_tp_muon.GatherTpMuon(named_params, ctx, scale_rule="moonlight")


def test_a_local_shape_scale_is_named_with_the_scale_rule_it_follows():
    """local_shape_scale under Moonlight's rule (0.2 sqrt(max(rows, cols))) against gather_tp_muon under the same
    rule: the local-shape hypothesis matches with Moonlight's rule on every failing matrix. Where the two rules
    change the scale by the same ratio (gate/up, 24 x 16 cut to 12 x 16: both sqrt(2/3)) both match; on down_proj
    (16 x 24 cut to 16 x 12: Keller's ratio sqrt(4/3), Moonlight's sqrt(2/3)) Moonlight's alone."""
    result = nt.check_optimizer(moonlight_local_shape_scale, PARAMS, claim="exact", reference=moonlight_gather, steps=2,
                                max_success=1, **MESHES["tp2"])
    assert "layers.0.mlp.down_proj.weight" in result.diagnosis, str(result)
    for name, found in result.diagnosis.items():
        status, measure = statuses(found)["whole-matrix NS, local-shape scale"]
        assert found["matched"] == ["whole-matrix NS, local-shape scale"], (name, found)
        assert status == "matches" and "moonlight 0.2 sqrt(max(rows, cols)): step" in measure, (name, measure)
        if name == "layers.0.mlp.down_proj.weight":
            assert "keller" not in measure, (name, measure)
    assert rank_processes() == []
