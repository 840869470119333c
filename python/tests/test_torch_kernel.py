"""nsverify.torch.check_kernel: the kernel catalogue on PyTorch kernels (skipped where torch is absent).

The transcription of DeepSpeed's kernel keeps the map's promises in fp32; the seeded bugs are caught by
K11 with the elements they changed; a dtype torch cannot run is reported as such; the accumulation
of the device's bf16 matmul is measured, not assumed."""
import pytest

torch = pytest.importorskip("torch")

import nsverify  # noqa: E402
import nsverify.torch as nt  # noqa: E402
import seeded_torch_bugs  # noqa: E402
import torch_public_ns  # noqa: E402

K11 = "input_is_left_untouched_and_not_aliased"


def deepspeed_standard(G, steps):
    return torch_public_ns.torch_ns.ns_standard(G, steps, G.dtype)


def test_import_nsverify_does_not_import_torch_support():
    import subprocess
    import sys
    code = "import sys, nsverify; assert 'nsverify.torch' not in sys.modules and 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_deepspeed_standard_in_fp32_keeps_the_map_promises():
    """The map (REF, K2-K5), repeatability and K11 hold; the bitwise K1/K7 and K8's 2^121 overflow of torch's
    fp32 norm do not (reports/torch/README.md)."""
    result = nt.check_kernel(deepspeed_standard, kernel="standard", dtype="fp32", max_success=40,
                             properties=["K2", "K3", "K4", "K5", "K10", "K11", "REF"])
    assert result, str(result)
    assert result[K11].status == "holds" and result[K11].cases_checked == 40
    assert result.environment["dtype"] == "fp32" and result.environment["torch"] == torch.__version__


def test_inplace_normalization_is_caught_by_k11_with_the_elements_it_changed():
    result = nt.check_kernel(seeded_torch_bugs.inplace_normalization, kernel="standard", dtype="fp32", properties=[K11])
    p = result[K11]
    assert not result and p.status == "fails", str(result)
    assert "the input after the call and before it" in p.message and "element(s) differ" in p.message
    assert p.detail["kind"] == "bits" and p.replay


def test_a_storage_swap_and_an_aliased_result_fail_k11():
    def data_swap(G, steps):
        G.data = G.data / (G.norm() + 1e-7)  # the caller's tensor now points at other memory
        return deepspeed_standard(G, steps)

    def returns_a_view(G, steps):
        return G.mul_(1.0)  # same values, same storage: the output is the input

    swapped = nt.check_kernel(data_swap, kernel="standard", dtype="fp32", properties=[K11])
    assert swapped[K11].status == "fails" and "other memory" in swapped[K11].message, str(swapped)
    aliased = nt.check_kernel(returns_a_view, kernel="standard", dtype="fp32", properties=[K11])
    assert aliased[K11].status == "fails" and "shares memory" in aliased[K11].message, str(aliased)


def test_the_tensor_is_handed_over_in_the_claimed_dtype():
    seen = set()

    def spy(G, steps):
        seen.add(G.dtype)
        return deepspeed_standard(G, steps)
    nt.check_kernel(spy, kernel="standard", dtype="bf16", properties=["K10"], max_success=5)
    assert seen == {torch.bfloat16}


def test_fp16_on_this_cpu_is_reported_as_not_supported_by_torch():
    try:
        nt.support("fp16", "cpu")
    except nt.DtypeNotSupported as e:
        assert "not supported by torch" in str(e) and "fp16" in str(e)
        with pytest.raises(nt.DtypeNotSupported):
            nt.check_kernel(deepspeed_standard, dtype="fp16")
    else:  # a torch with CPU fp16 GEMMs: then the check runs
        assert nt.check_kernel(deepspeed_standard, dtype="fp16", properties=["K10"], max_success=3) is not None


def test_accumulation_is_probed_and_stated():
    probe = nt.probe_accumulation("bf16", "cpu")
    assert probe.accumulate in ("fp32", "compute") and 0.0 <= probe.match_fp32 <= 1.0
    # a small product and a large one: a CPU torch may run them in different kernels (1.13 does)
    assert [p.shape for p in probe.shapes] == [(16, 16, 16), (64, 1024, 64)]
    assert (probe.accumulate == "fp32") == all(p.fp32_like() for p in probe.shapes)
    result = nt.check_kernel(deepspeed_standard, kernel="standard", dtype="bf16", properties=["K10"], max_success=3)
    assert f"accumulate={probe.accumulate}" in result.subject
    assert "accumulate in" in result.environment["accumulation"] and "16x16 by 16x16" in result.environment["accumulation"]


def test_replay_reruns_the_shrunk_case():
    first = nt.check_kernel(seeded_torch_bugs.inplace_normalization, kernel="standard", dtype="fp32", properties=[K11])
    again = nt.check_kernel(seeded_torch_bugs.inplace_normalization, kernel="standard", dtype="fp32",
                            replay=first[K11].replay)
    assert again[K11].status == "fails" and again[K11].counterexample == first[K11].counterexample


def test_numpy_checks_are_unchanged_by_the_adapter_refactor():
    import numpy_ns
    assert nsverify.check_kernel(numpy_ns.standard_ns, kernel="standard", properties=[K11, "K1"], max_success=20)
