"""The reference through Python: numpy in and out, the knobs of `nsv ns`, errors as ValueError."""
import json
import pathlib

import numpy as np
import pytest

import nsverify


def gaussian(rows, cols, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal((rows, cols)).astype(dtype)


def test_version_is_a_string():
    assert isinstance(nsverify.__version__, str) and nsverify.__version__


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ns_gives_the_same_bits_for_every_memory_layout(dtype):
    g = gaussian(12, 20, dtype=dtype)
    base = nsverify.ns(g, kernel="standard")
    fortran = nsverify.ns(np.asfortranarray(g), kernel="standard")
    view = nsverify.ns(np.ascontiguousarray(g.T).T, kernel="standard")  # a transposed view
    assert base.dtype == np.float32 and base.shape == g.shape
    assert base.tobytes() == fortran.tobytes() == view.tobytes()


def test_ns_of_a_batch_is_each_matrix_alone():
    batch = np.stack([gaussian(8, 16, seed=s) for s in range(3)])
    out = nsverify.ns(batch, dtype="bf16", kernel="gram")
    assert out.shape == batch.shape
    for g, x in zip(batch, out):
        assert nsverify.ns(g, dtype="bf16", kernel="gram").tobytes() == x.tobytes()


def test_fp64_output_is_float64():
    assert nsverify.ns(gaussian(4, 6), dtype="fp64").dtype == np.float64


@pytest.mark.parametrize("call, message", [
    (lambda: nsverify.ns(gaussian(4, 4), steps=-1), "steps must be between 0 and 1000, got -1"),
    (lambda: nsverify.ns(gaussian(4, 4), kernel="cubic"), "kernel must be one of standard, gram; got 'cubic'"),
    (lambda: nsverify.ns(np.zeros((2, 2), dtype=np.int64)), "G: expected a float32 or float64 array, got dtype int64"),
    (lambda: nsverify.ns(np.zeros(3, dtype=np.float32)), "G: expected a 2-D matrix or a 3-D batch"),
    (lambda: nsverify.autotp_layout(64, 0), "tp must be at least 1, got 0"),
    (lambda: nsverify.autotp_layout(64, 2, heads=5), "heads"),
    (lambda: nsverify.audit("no/such/config.json"), "no/such/config.json"),
])
def test_bad_arguments_raise_value_error_with_the_cli_message(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_config_schema_defaults_are_nsconfigs_and_the_keywords():
    schema = nsverify.config_schema()
    cfg = nsverify.config()  # every keyword at its default
    for field in ("kernel", "steps", "dtype", "accumulate", "products", "coeffs"):
        assert schema[field]["default"] == getattr(cfg, field), field
    assert schema["restart_at"]["default"] == ",".join(map(str, cfg.restart_at))
    assert schema["kernel"]["choices"] == ["standard", "gram"]
    assert schema["dtype"]["choices"] == ["fp64", "fp32", "bf16", "fp16"]  # aliases (float32) parse, unlisted
    assert nsverify.config(dtype="float32").dtype == "fp32"
    assert [s["name"] for s in nsverify.strategies()] == schema["strategy"]["choices"]
    assert schema["target"]["default"] is None and schema["backend"]["default"] == "cpu"


def test_autotp_layout_is_head_aligned_with_zero_width_ranks():
    layout = nsverify.autotp_layout(16, 3, heads=8, kv_heads=2)  # 2 KV groups over 3 ranks
    assert layout.widths == [8, 8, 0]
    shards = nsverify.split(gaussian(16, 4), layout)
    assert [s.shape for s in shards] == [(8, 4), (8, 4), (0, 4)]
    assert np.array_equal(nsverify.assemble(shards, layout), gaussian(16, 4))


def test_fused_qkv_layout_splits_each_part():
    layout = nsverify.fused_qkv_layout(heads=4, kv_heads=2, head_dim=2, tp=2)
    assert layout.dim == (4 + 2 * 2) * 2
    assert layout.ranks[0] == [(0, 4), (8, 10), (12, 14)]


def test_run_strategy_reports_the_fields_of_nsv_shard_json():
    g = gaussian(32, 16)
    run = nsverify.run_strategy(g, "gather", 4, axis=0, kernel="gram")
    assert run["bit_identical"] is True and run["collectives"]["all_gather"] == 1
    assert {"rank", "rows", "cols", "rel_diff", "bytes_sent", "flops"} <= set(run["ranks"][0])
    assert np.array_equal(nsverify.assemble(run["outputs"], run["layout"]), run["target_result"])
    shard = nsverify.run_strategy(g, "shard", 4, axis=0)
    assert shard["rel_diff_max"] > 0.1  # S6: AutoTP today diverges


def test_plan_strategy_counts_what_run_strategy_issues():
    plan = nsverify.plan_strategy("gram_allreduce", 32, 16, 4, kernel="standard")
    run = nsverify.run_strategy(gaussian(32, 16), "gram_allreduce", 4, kernel="standard")
    assert plan["collectives"] == run["collectives"]
    assert [r["bytes_sent"] for r in plan["ranks"]] == [r["bytes_sent"] for r in run["ranks"]]


def test_audit_is_the_json_of_nsv_audit():
    config = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "models" / "llama-3-8b.json"
    audit = nsverify.audit(str(config), tp=8)
    assert audit["schema"] == "nsv.audit/1"
    assert json.loads(json.dumps(audit)) == audit


def test_metrics():
    a, b = gaussian(5, 7, 1), gaussian(5, 7, 2)
    assert nsverify.rel_diff(a, a) == 0.0
    bits = nsverify.compare_bits(a, np.nextafter(a, np.inf, dtype=np.float32), "fp32")
    assert not bits["identical"] and bits["mismatches"] == a.size and bits["ulps"] == 1
    assert nsverify.cosine(a, b) < 1.0
    assert len(nsverify.singular_values(a)) == 5
