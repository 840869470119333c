"""The shipped numpy implementations pass everything they promise; the checks' own machinery
(replay, negative control of the exact comparator, results as objects) works from Python."""
import numpy as np
import pytest

import nsverify
import numpy_ns
import numpy_tp


@pytest.mark.parametrize("fn, kernel", [(numpy_ns.standard_ns, "standard"), (numpy_ns.gram_ns, "gram")])
def test_numpy_kernels_pass_every_kernel_property(fn, kernel):
    result = nsverify.check_kernel(fn, kernel=kernel, batched=True)
    assert result, str(result)
    applicable = [p for p in result.properties if p.status != "not applicable"]
    assert applicable and all(p.status == "holds" and p.cases_checked == p.cases == 100 for p in applicable)


def test_allreduce_tp_ns_is_within_rounding_of_the_whole_matrix():
    result = nsverify.check_tp(numpy_tp.allreduce_ns, claim="rounding", kernel="standard")
    assert result, str(result)
    assert result.diagnosis == "whole-matrix NS"


def test_allreduce_muon_update_has_the_global_aspect_scale():
    result = nsverify.check_tp(numpy_tp.allreduce_muon_update, claim="rounding", aspect_scale=True, kernel="standard")
    assert result, str(result)
    assert result.diagnosis == "whole-matrix NS, exact"  # the tp-1 optimizer's update, as nsv diagnose names it


def test_deepspeed_autotp_update_is_diagnosed_per_shard_with_local_scale():
    result = nsverify.check_tp(numpy_tp.autotp_muon_update, claim="none", aspect_scale=True, kernel="standard")
    assert result.verdict == "NOTHING CHECKED" and not result  # no claim: a diagnosis, not a pass
    assert result.diagnosis == "per-shard NS, local-shape scale"


def flaky_by_one_ulp():
    """Negative control of the exact comparator seen from Python: every second call moves one element
    by one ulp; K10 must report exactly that element, 1 ulp."""
    calls = {"n": 0}

    def kernel(G, steps):
        out = numpy_ns.standard_ns(G, steps)
        calls["n"] += 1
        if calls["n"] % 2 == 0 and out.size:
            out.flat[0] = np.nextafter(out.flat[0], np.float32(np.inf))
        return out
    return kernel


def test_a_one_ulp_difference_fails_the_repeat_property_with_its_element():
    result = nsverify.check_kernel(flaky_by_one_ulp(), kernel="standard", properties=["repeated_calls_give_the_same_bits"])
    p = result["repeated_calls_give_the_same_bits"]
    assert p.status == "fails" and not result
    assert p.detail["kind"] == "bits" and p.detail["ulps"] == 1 and p.detail["index"] == (0, 0)
    assert p.detail["mismatches"] == 1 and p.detail["a_hex"].startswith(("0x", "-0x"))


def test_replay_runs_exactly_the_shrunk_counterexample():
    import seeded_kernel_bugs
    first = nsverify.check_kernel(seeded_kernel_bugs.gram_restart_dropped)
    failed = [p for p in first.properties if p.status == "fails"][0]
    again = nsverify.check_kernel(seeded_kernel_bugs.gram_restart_dropped, replay=failed.replay)
    p = again[failed.name]
    assert p.status == "fails" and p.message == failed.message and p.counterexample == failed.counterexample
    assert all(q.status in ("not run", "not applicable") for q in again.properties if q.name != failed.name)


def test_required_decides_truthiness_and_unknown_names_are_value_errors():
    import seeded_kernel_bugs
    relaxed = nsverify.check_kernel(seeded_kernel_bugs.nan_silently_zeroed, kernel="standard", required=["K1", "REF"])
    assert relaxed and relaxed["non_finite_input_gives_non_finite_output"].status == "fails"
    with pytest.raises(ValueError, match="unknown property 'K99'"):
        nsverify.check_kernel(numpy_ns.standard_ns, required=["K99"])


def test_a_callable_that_raises_fails_with_its_exception():
    def broken(G, steps):
        raise RuntimeError("not implemented for this shape")
    result = nsverify.check_kernel(broken, properties=["K10"])
    assert not result
    assert "not implemented for this shape" in result["repeated_calls_give_the_same_bits"].message


def test_per_head_ns_on_head_aligned_shards_is_exact():
    result = nsverify.check_tp(numpy_tp.per_head_ns, claim="exact", target="per_head", kernel="standard")
    assert result, str(result)
    assert result.diagnosis == "per-head NS"


def per_piece_muon_update(pieces, spec):
    """Muon with FSDP or ZeRO, naively: every mesh rank orthogonalizes the piece it holds and scales it by
    the piece's own shape (a ZeRO piece as a 1 x n row)."""
    out = []
    for p in numpy_tp.mesh_per_piece_ns(pieces, spec):
        rows, cols = np.atleast_2d(p).shape
        out.append((p * np.float32(np.sqrt(max(1.0, rows / cols)))).astype(np.float32) if p.size else p)
    return out


@pytest.mark.parametrize("partition", ["fsdp", "zero"])
@pytest.mark.parametrize("fn, aspect_scale, named", [
    (numpy_tp.mesh_per_piece_ns, False, "NS of each mesh piece"),
    (per_piece_muon_update, True, "NS of each mesh piece, the piece's scale"),
])
def test_the_diagnosis_names_ns_of_each_mesh_piece(partition, fn, aspect_scale, named):
    result = nsverify.check_tp(fn, claim="none", aspect_scale=aspect_scale, kernel="standard", dp=2, dp_partition=partition)
    assert result.verdict == "NOTHING CHECKED" and result.diagnosis == named, str(result)


def test_a_dp_gather_is_not_named_ns_of_each_mesh_piece():
    result = nsverify.check_tp(numpy_tp.mesh_dp_gather_per_shard_ns, claim="none", kernel="standard", dp=2, dp_partition="fsdp")
    assert result.diagnosis == "per-shard NS", str(result)
