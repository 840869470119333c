"""nsverify.torch.check_tp on real gloo ranks (skipped where torch is absent): the shipped TP updates
diagnosed and within their bounds, their collectives equal to the cost model's plan, the seeded TP
bugs caught (rank faults: test_torch_faults.py)."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

import nsverify.torch as nt  # noqa: E402
import seeded_torch_bugs  # noqa: E402
import torch_tp  # noqa: E402
from processes import rank_processes  # noqa: E402

EXACT = "tp_result_equals_its_own_tp_1_result_bit_for_bit"
S5 = "tp_result_is_within_the_s5_bound_of_the_target"
UNTOUCHED = "tp_shards_are_left_untouched_and_not_aliased"
FAST = dict(kernel="standard", max_success=15, diagnosis_cases=6, max_dim=24)


@pytest.mark.parametrize("world_size", [2, 4])
def test_autotp_per_shard_update_is_per_shard_ns_with_the_local_scale(world_size):
    result = nt.check_tp(torch_tp.autotp_muon_update, world_size=world_size, claim="none", aspect_scale=True,
                         strategy="shard", **FAST)
    assert result.verdict == "NOTHING CHECKED" and result.diagnosis == "per-shard NS, local-shape scale", str(result)
    assert result.collectives and all(calls == [] for r in result.collectives for calls in r["ranks"])
    assert result.plan_summary()["equal"] == result.plan_summary()["cases"] > 0


@pytest.mark.parametrize("world_size", [2, 4])
def test_gram_allreduce_update_is_within_the_s5_bound_and_issues_the_planned_collectives(world_size):
    result = nt.check_tp(torch_tp.gram_allreduce_update, world_size=world_size, claim="rounding", aspect_scale=True,
                         strategy="gram_allreduce", **FAST)
    assert result, str(result)
    assert result.diagnosis == "whole-matrix NS, exact"
    assert result[S5].cases_checked == 15 and result[UNTOUCHED].status == "holds"
    summary = result.plan_summary()
    assert summary["cases"] > 0 and summary["equal"] == summary["cases"], summary["first_difference"]
    assert set(result.collectives_summary()[0]) == {"all_reduce x6"}  # 1 norm + 5 Gram all-reduces per case
    assert rank_processes() == []


def test_allgather_into_equal_buffers_fails_on_uneven_shards_only():
    even = nt.check_tp(seeded_torch_bugs.allgather_equal_buffers, world_size=2, claim="exact", uneven=False,
                       zero_width=False, fused=False, **FAST)  # a fused [Q;K;V] shard is not a contiguous block either
    assert even, str(even)
    uneven = nt.check_tp(seeded_torch_bugs.allgather_equal_buffers, world_size=2, claim="exact", timeout=3,
                         **dict(FAST, max_success=10, diagnosis_cases=0))
    p = uneven[EXACT]
    assert p.status == "fails", str(uneven)
    assert "rank" in p.message and ("died" in p.message or "bit-identical" in p.message or "returned" in p.message)


def test_inplace_shard_normalization_is_caught_by_s_untouched():
    result = nt.check_tp(seeded_torch_bugs.inplace_shard_normalization, world_size=2, claim="rounding", aspect_scale=True,
                         **FAST)
    p = result[UNTOUCHED]
    assert not result and p.status == "fails" and "shard after the call and before it" in p.message, str(result)
    assert result[S5].status == "holds"  # the update is right: only the shard was changed


def test_replay_reruns_the_failing_layout_on_the_same_world_size():
    first = nt.check_tp(seeded_torch_bugs.inplace_shard_normalization, world_size=2, claim="rounding", aspect_scale=True,
                        **FAST)
    again = nt.check_tp(seeded_torch_bugs.inplace_shard_normalization, world_size=2, claim="rounding", aspect_scale=True,
                        replay=first[UNTOUCHED].replay, **FAST)
    assert again[UNTOUCHED].status == "fails" and again[UNTOUCHED].message == first[UNTOUCHED].message
    assert again.cases == [] and again.collectives  # no diagnosis on a replay


def test_cli_reaches_the_torch_checks():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    impl = os.path.join(root, "examples", "torch_tp.py") + ":gram_allreduce_update"
    out = subprocess.run([sys.executable, "-m", "nsverify.cli", "--impl", impl, "--framework", "torch", "--kind", "tp",
                          "--world-size", "2", "--claim", "rounding", "--aspect-scale", "--kernel", "standard",
                          "--max-success", "10", "--max-dim", "16"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 gloo ranks" in out.stdout and "PASS" in out.stdout


@pytest.mark.parametrize("dp_partition", ["zero", "fsdp"])
def test_fsdp_or_zero_with_tp_on_a_2x2_mesh_of_real_ranks(dp_partition):
    """On tp 2 x dp 2 gloo ranks: restoring the TP shard over DP and then the Gram all-reduce over TP is
    within rounding of the whole matrix's NS; NS of each rank's piece (the naive combination) is not."""
    right = nt.check_tp(torch_tp.fsdp_tp_gram_allreduce_ns, world_size=2, dp=2, dp_partition=dp_partition, claim="rounding",
                        kernel="standard", max_success=10, diagnosis_cases=4, max_dim=24)
    assert right, right
    assert right.environment["world_size"] == 4
    assert right.diagnosis == "whole-matrix NS", right
    naive = nt.check_tp(torch_tp.per_piece_ns, world_size=2, dp=2, dp_partition=dp_partition, claim="rounding",
                        kernel="standard", max_success=10, diagnosis_cases=0, max_dim=24)
    assert not naive
    failing = {p.name for p in naive.properties if p.status == "fails"}
    assert failing & {"tp_result_is_within_the_s5_bound_of_the_target", "tp_1_result_computes_the_target_within_rounding"}, naive


def test_a_mesh_check_refuses_a_one_axis_plan_comparison():
    with pytest.raises(ValueError, match="strategy=.*dp="):
        nt.check_tp(torch_tp.per_piece_ns, world_size=2, dp=2, strategy="gather")
