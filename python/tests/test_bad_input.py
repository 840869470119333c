"""Bad input to the Python API never crashes, hangs, allocates what it claims or yields silent garbage.

Each refusal case runs in its own interpreter (this file, run as a script with the case's name) under
a memory limit (RLIMIT_AS, 4 GiB unless NSV_CLI_MEMORY_LIMIT_KB says otherwise; 0 lifts it, for
sanitizer builds) and a time limit, in a folder holding a file that must come out unchanged. The
case must raise the exception type it names, with a message that names the argument and what is
allowed, and its interpreter's peak resident memory must stay under 1 GiB (a refusal is made from
the shape, before a copy); a crash (a signal), a hang or another exception fails it. The "silent garbage" cases
check values: they must come out right, not merely without an error.
"""
import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "fixtures"
CONFIG = str(FIXTURES / "models" / "tiny-llama.json")
TIME_LIMIT_S = 60
REFUSAL_PEAK_RSS_KB = 1 << 20
MEMORY_LIMIT_KB = int(os.environ.get("NSV_CLI_MEMORY_LIMIT_KB", 4 << 20))


def _g(rows=16, cols=32, dtype=np.float32):
    return np.random.default_rng(0).standard_normal((rows, cols)).astype(dtype)


def _ok(G, steps):
    return G


def _view(*shape, dtype=np.float32):
    """An array of `shape` that holds one element: numpy's broadcast view."""
    return np.broadcast_to(np.ones((), dtype), shape)


def _overflowing(rows=16, cols=32):
    """Finite fp32 values whose Frobenius norm (3e37 * sqrt(512), about 6.8e38) overflows fp32."""
    return np.full((rows, cols), 3e37, np.float32)


def _run_tp(n, G):
    import nsverify.torch
    return nsverify.torch.run_tp(lambda shard, spec, group: shard, G, world_size=2)


# The library's input limits (nsv/input_limits.hpp), as `nsv` applies them.
HUGE = r"a 1000000x1000000 matrix holds 1000000000000 elements, more than the 4294967296 \(2\^32, 65536x65536\) one call takes"
HUGE_BATCH = (r"G: a batch of 100000 matrices of 1000x1000 holds 100000000000 elements, more than the 4294967296 .*"
              r"split the batch into calls of at most 4294 matrices")
OVERFLOW = r"G: the Frobenius norm 6\.788e\+38 overflows fp32, the dtype the gram kernel normalizes in, so the result would be all zeros"


# name: (exception type, regex the message must match, the call). The call runs in the child.
CASES = {
    # Empty matrices and batches: refused by every entry point that runs NS or a spectrum, one message.
    "singular_values of a 0x4 matrix": (ValueError, r"a: an empty matrix \(0x4\) has no Newton-Schulz and no spectrum: give at "
                                        r"least one row and one column", lambda n: n.singular_values(np.zeros((0, 4)))),
    "polar_factor of a 0x0 matrix": (ValueError, r"a: an empty matrix \(0x0\) has no Newton-Schulz",
                                     lambda n: n.polar_factor(np.zeros((0, 0)))),
    "ns of a 0x5 matrix": (ValueError, r"G: an empty matrix \(0x5\) has no Newton-Schulz and no spectrum: give at least one row",
                           lambda n: n.ns(np.zeros((0, 5), np.float32))),
    "ns of a (0, 4, 4) batch": (ValueError, r"G: an empty batch \(0 matrices of 4x4\) has no Newton-Schulz and no spectrum: give "
                                r"at least one matrix of at least one row and one column",
                                lambda n: n.ns(np.zeros((0, 4, 4), np.float32))),
    "ns of a (2, 4, 0) batch": (ValueError, r"G: an empty batch \(2 matrices of 4x0\)", lambda n: n.ns(np.zeros((2, 4, 0)))),
    "run_strategy of a 0x5 matrix": (ValueError, r"G: an empty matrix \(0x5\) has no Newton-Schulz",
                                     lambda n: n.run_strategy(np.zeros((0, 5), np.float32), "gather", 2)),
    "tp_rounding_bound of a 0x5 matrix": (ValueError, r"G: an empty matrix \(0x5\)",
                                          lambda n: n.tp_rounding_bound(np.zeros((0, 5)), n.autotp_layout(16, 2))),
    "torch run_tp of a 0x5 matrix": (ValueError, r"G: an empty matrix \(0x5\)", lambda n: _run_tp(n, np.zeros((0, 5)))),
    # Sizes, from the shape, before a value is copied (the views below hold one element each).
    "ns of a 10^6 x 10^6 view": (ValueError, "G: " + HUGE + ": give a smaller matrix", lambda n: n.ns(_view(10 ** 6, 10 ** 6))),
    "ns of a 10^5 x 1000 x 1000 batch": (ValueError, HUGE_BATCH, lambda n: n.ns(_view(10 ** 5, 1000, 1000))),
    "ns of a 4000 x 1000 x 1000 batch (memory)": (
        ValueError, r"G asks for 4000 matrices of 1000x1000 \(Newton-Schulz in float64\), which needs about [0-9.]+ GiB, more "
                    r"than the [0-9.]+ GiB this process may use \(physical memory and ulimit\): choose a smaller size",
        lambda n: n.ns(_view(4000, 1000, 1000))),
    "run_strategy of a 10^6 x 10^6 view": (ValueError, "G: " + HUGE, lambda n: n.run_strategy(_view(10 ** 6, 10 ** 6), "gather", 2)),
    "polar_factor of a 10^6 x 10^6 view": (ValueError, "a: " + HUGE, lambda n: n.polar_factor(_view(10 ** 6, 10 ** 6))),
    "singular_values of a 10^6 x 10^6 view": (ValueError, "a: " + HUGE, lambda n: n.singular_values(_view(10 ** 6, 10 ** 6))),
    "rel_diff of a 10^6 x 10^6 view": (ValueError, "b: " + HUGE, lambda n: n.rel_diff(_g(), _view(10 ** 6, 10 ** 6))),
    "split of a 10^6 x 10^6 view": (ValueError, "G: " + HUGE,
                                    lambda n: n.split(_view(10 ** 6, 10 ** 6), n.autotp_layout(10 ** 6, 2))),
    "big-endian 10^6 x 10^6 view": (ValueError, "G: " + HUGE, lambda n: n.ns(_view(10 ** 6, 10 ** 6, dtype=">f4"))),
    "torch run_tp of a 10^6 x 10^6 view": (ValueError, "G: " + HUGE, lambda n: _run_tp(n, _view(10 ** 6, 10 ** 6))),
    # Inputs NS cannot normalize: refused as `nsv ns` refuses them, not an all-zero or NaN result.
    "ns of a finite matrix whose norm overflows fp32": (ValueError, OVERFLOW, lambda n: n.ns(_overflowing())),
    "ns of a batch whose second matrix overflows": (ValueError, r"G\[1\]: the Frobenius norm 6\.788e\+38 overflows fp32",
                                                    lambda n: n.ns(np.stack([_g(), _overflowing()]))),
    "ns(kernel='standard', dtype='fp16') past fp16's norm": (
        ValueError, r"G: the Frobenius norm 1\.131e\+05 overflows fp16, the dtype the standard kernel normalizes in",
        lambda n: n.ns(np.full((16, 32), 5000, np.float32), kernel="standard", dtype="fp16")),
    "ns(allow_unnormalizable=True) of a 10^6 x 10^6 view": (ValueError, "G: " + HUGE,
                                                           lambda n: n.ns(_view(10 ** 6, 10 ** 6), allow_unnormalizable=True)),
    "ns(allow_unnormalizable='yes')": (TypeError, r"allow_unnormalizable must be True or False, got 'yes'",
                                       lambda n: n.ns(_g(), allow_unnormalizable="yes")),
    "ns of a NaN matrix": (ValueError, r"G: the matrix holds NaN or Inf.*Clean the input first",
                           lambda n: n.ns(np.where(np.eye(16, 32) > 0, np.nan, _g()).astype(np.float32))),
    "run_strategy of a finite matrix whose norm overflows": (ValueError, OVERFLOW,
                                                             lambda n: n.run_strategy(_overflowing(), "shard", 2)),
    "tp_rounding_bound of an Inf matrix": (ValueError, r"G: the matrix holds NaN or Inf",
                                           lambda n: n.tp_rounding_bound(np.full((16, 32), np.inf), n.autotp_layout(16, 2))),
    # assemble checks every shard against the layout before copying (it read out of bounds).
    "assemble: a short shard": (ValueError, r"shards\[1\] is 1x5, but rank 1's shard .* is 8x32",
                                lambda n: n.assemble([np.zeros((8, 32)), np.zeros((1, 5))], n.autotp_layout(16, 2))),
    "assemble: too few shards": (ValueError, r"one matrix per rank: the layout has 2 rank\(s\), got 1",
                                 lambda n: n.assemble([np.zeros((8, 32))], n.autotp_layout(16, 2))),
    "assemble: shards not a list": (TypeError, r"shards must be a list of arrays",
                                    lambda n: n.assemble(np.zeros((16, 32)), n.autotp_layout(16, 2))),
    "split: layout a string": (TypeError, r"layout must be a Layout",
                               lambda n: n.split(_g(), "autotp")),
    # Strict typing: no truthy strings, no digit-picking from a shape string.
    "check_kernel(batched='False')": (TypeError, r"batched must be True or False, got 'False' \(str\)",
                                      lambda n: n.check_kernel(_ok, batched="False")),
    "check_tp(aspect_scale='no')": (TypeError, r"aspect_scale must be True or False, got 'no' \(str\)",
                                    lambda n: n.check_tp(lambda s, spec: s, aspect_scale="no")),
    "ns(restart_at=[1001])": (ValueError, r"restart_at\[\] must be an integer between 0 and 1000, got 1001",
                              lambda n: n.ns(_g(), kernel="gram", restart_at=[2, 1001])),
    "ns(restart_at=1001)": (ValueError, r"restart_at must be an integer between 0 and 1000, got 1001",
                            lambda n: n.ns(_g(), kernel="gram", restart_at=1001)),
    "audit(measure='yes')": (TypeError, r"measure must be True or False, got 'yes'",
                             lambda n: n.audit(CONFIG, measure="yes")),
    "check_kernel(shape='16x16')": (TypeError, r"shape must be \(rows, cols\), two integers .*got '16x16' \(str\)",
                                    lambda n: n.check_kernel(_ok, shape="16x16")),
    "check_kernel(shape=(16,))": (TypeError, r"shape must be \(rows, cols\)",
                                  lambda n: n.check_kernel(_ok, shape=(16,))),
    "check_kernel(shape=(16.0, 16))": (TypeError, r"shape\[0\] \(rows\) must be an integer between 1 and 67108864, got 16.0",
                                       lambda n: n.check_kernel(_ok, shape=(16.0, 16))),
    "check_kernel(shape=(0, 16))": (ValueError, r"shape\[0\] \(rows\) must be an integer between 1 and 67108864, got 0",
                                    lambda n: n.check_kernel(_ok, shape=(0, 16))),
    "check_kernel(shape=(100000, 1000))": (ValueError, r"shape must be two sides of at least 1 with at most 67108864 elements "
                                           r"\(2\^26, e.g. 4096 x 16384\), got 100000x1000",
                                           lambda n: n.check_kernel(_ok, shape=(100000, 1000))),
    "check_kernel(max_dim='48')": (TypeError, r"max_dim must be an integer between 8 and 4096, got '48'",
                                   lambda n: n.check_kernel(_ok, max_dim="48")),
    "check_kernel(required=5)": (TypeError, r"required must be None, a property name or code, or a list",
                                 lambda n: n.check_kernel(_ok, required=5)),
    "check_kernel(fn=None)": (TypeError, r"fn must be a callable", lambda n: n.check_kernel(None)),
    "check_tp(claim=1)": (TypeError, r"claim must be one of 'exact', 'rounding', 'none', got 1 \(int\)",
                          lambda n: n.check_tp(lambda s, spec: s, claim=1)),
    "check_tp(claim='exactly')": (ValueError, r"claim must be one of 'exact', 'rounding', 'none', got 'exactly'",
                                  lambda n: n.check_tp(lambda s, spec: s, claim="exactly")),
    "check_tp(max_tp=1000)": (ValueError, r"max_tp must be an integer between 1 and 64, got 1000",
                              lambda n: n.check_tp(lambda s, spec: s, max_tp=1000)),
    "check_tp(dp=0)": (ValueError, r"dp must be an integer between 1 and 64, got 0",
                       lambda n: n.check_tp(lambda s, spec: s, dp=0)),
    "check_tp(dp=2.0)": (TypeError, r"dp must be an integer",
                         lambda n: n.check_tp(lambda s, spec: s, dp=2.0)),
    "check_tp(dp_partition='rows')": (ValueError, r"dp_partition must be one of 'zero', 'fsdp', got 'rows'",
                                      lambda n: n.check_tp(lambda s, spec: s, dp=2, dp_partition="rows")),
    "ns(steps='5')": (TypeError, r"steps must be an integer, got '5' \(str\)",
                      lambda n: n.ns(_g(), steps="5")),
    "ns(steps=True)": (TypeError, r"steps must be an integer.*got True \(bool\)", lambda n: n.ns(_g(), steps=True)),
    "ns(kernel=1)": (TypeError, r"kernel must be a string, got 1 \(int\)", lambda n: n.ns(_g(), kernel=1)),
    "ns(backend=3)": (TypeError, r"backend must be a string", lambda n: n.ns(_g(), backend=3)),
    "config(restart_at=['2'])": (TypeError, r"restart_at\[\] must be an integer",
                                 lambda n: n.config(kernel="gram", restart_at=["2"])),
    "audit(config_path=123)": (TypeError, r"config_path must be a string", lambda n: n.audit(123)),
    "ns of a string": (ValueError, r"G: expected a float32 or float64 array", lambda n: n.ns("16x16")),
    # Limits in the library, shared with the command line, before any allocation.
    "autotp_layout(tp=100000)": (ValueError, r"tp must be between 1 and 4096, got 100000",
                                 lambda n: n.autotp_layout(16, 100000)),
    "core autotp_layout(tp=100000)": (ValueError, r"tp must be between 1 and 4096, got 100000",
                                      lambda n: n._nsverify.autotp_layout(16, 100000, 0, 0, 0, 1)),
    "core grain_sizes(tp=2^30)": (ValueError, r"tp must be between 1 and 4096",
                                  lambda n: n._nsverify.grain_sizes(16, 1 << 30, 1)),
    "run_strategy(tp=10^9)": (ValueError, r"tp must be between 1 and 4096",
                              lambda n: n.run_strategy(_g(), "gather", 10 ** 9)),
    "audit(measure_max_elements=2^40)": (ValueError, r"measure_max_elements must be an integer between 1 and 1073741824",
                                         lambda n: n.audit(CONFIG, measure=True, measure_max_elements=1 << 40)),
    "core audit(measure_max_elements=2^40)": (
        ValueError, r"measure_max_elements must be between 1 and 1073741824",
        lambda n: n._nsverify.audit(CONFIG, 2, 1, n.config(), 5.0, 450.0, 989.0, True, 1 << 40, 0)),
    "core audit(tp=5000)": (ValueError, r"tp must be between 1 and 1024, got 5000",
                            lambda n: n._nsverify.audit(CONFIG, 5000, 1, n.config(), 5.0, 450.0, 989.0, False, 1024, 0)),
    # Counts that would wrap 64 bits are refused, not wrapped.
    "ns_flops(10^7, 10^7)": (ValueError, r"NS FLOP count of a 10000000x10000000 matrix does not fit in 64 bits",
                             lambda n: n.ns_flops(10 ** 7, 10 ** 7)),
    "plan_strategy(10^7 x 10^7)": (ValueError, r"does not fit in 64 bits",
                                   lambda n: n.plan_strategy("gather", 10 ** 7, 10 ** 7, 2)),
    "ns_flops(rows=-1)": (ValueError, r"rows must be an integer >= 0, got -1", lambda n: n.ns_flops(-1, 4)),
    "plan_strategy(latency_us='5')": (TypeError, r"latency_us must be a number, got '5'",
                                      lambda n: n.plan_strategy("gather", 16, 16, 2, latency_us="5")),
    "run_strategy(axis=2)": (ValueError, r"axis must be an integer between 0 and 1, got 2",
                             lambda n: n.run_strategy(_g(), "gather", 2, axis=2)),
    "check_kernel(shrink_seconds=-1)": (ValueError, r"shrink_seconds must be a number between 0 and 3600, got -1",
                                        lambda n: n.check_kernel(lambda G, steps: G, shrink_seconds=-1)),
    "check_tp(shrink_seconds='5')": (TypeError, r"shrink_seconds must be a number, got '5'",
                                     lambda n: n.check_tp(lambda shards, spec: shards, shrink_seconds="5")),
    "compare_bits(ulp_dtype=32)": (TypeError, r"ulp_dtype must be a string",
                                   lambda n: n.compare_bits(_g(), _g(), ulp_dtype=32)),
}


def _run_case(name):
    """In the child: the limits, then the call; prints {"type", "message", "peak_rss_kb"} of what it raised."""
    import resource
    if MEMORY_LIMIT_KB > 0:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_KB << 10, MEMORY_LIMIT_KB << 10))
    import nsverify
    _, _, call = CASES[name]
    try:
        result = call(nsverify)
    except BaseException as e:  # noqa: BLE001 - the parent judges it
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        print(json.dumps({"type": type(e).__name__, "message": str(e), "peak_rss_kb": peak}))
        return
    print(json.dumps({"type": None, "message": repr(result)[:500]}))


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_refused_saying_what_to_fix(name, tmp_path):
    expected, pattern, _ = CASES[name]
    precious = tmp_path / "precious.txt"
    precious.write_text("precious\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    run = subprocess.run([sys.executable, __file__, name], capture_output=True, text=True, cwd=tmp_path,
                         timeout=TIME_LIMIT_S, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 0, f"exit {run.returncode} (a crash or a kill): {run.stderr[-2000:]}"
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["type"] == expected.__name__, f"expected {expected.__name__}, got {got}"
    assert re.search(pattern, got["message"]), f"message {got['message']!r} does not match /{pattern}/"
    assert "incompatible function arguments" not in got["message"], "a pybind11 signature dump"
    assert got["peak_rss_kb"] < REFUSAL_PEAK_RSS_KB, f"peak resident memory {got['peak_rss_kb']} KiB: work began"
    assert precious.read_text() == "precious\n" and sorted(p.name for p in tmp_path.iterdir()) == before


# Silent garbage: values that must come out right.

def test_split_and_assemble_keep_float64():
    import nsverify
    G = np.random.default_rng(1).standard_normal((16, 32)) * (1 + 1e-12)
    layout = nsverify.autotp_layout(16, 3)
    shards = nsverify.split(G, layout)
    assert all(s.dtype == np.float64 for s in shards)
    back = nsverify.assemble(shards, layout)
    assert back.dtype == np.float64 and np.array_equal(back, G)
    assert nsverify.split(G.astype(np.float32), layout)[0].dtype == np.float32


def test_big_endian_arrays_are_read_by_value():
    import nsverify
    G = _g(dtype=np.float64)
    assert np.array_equal(nsverify.ns(G.astype(">f8"), dtype="fp64"), nsverify.ns(G, dtype="fp64"))
    assert np.array_equal(nsverify.ns(G.astype(">f4")), nsverify.ns(G.astype(np.float32)))
    layout = nsverify.autotp_layout(16, 2)
    assert np.array_equal(nsverify.assemble(nsverify.split(G.astype(">f8"), layout), layout), G)


def test_nan_outputs_never_pass_a_claim():
    """A TP function that returns NaN everywhere reproduces its own NaN bits at every tp (compare_bits
    compares bits, and S-exact reports that honestly), but it does not compute the target: S-target
    fails, with a NaN distance, and the check fails."""
    import nsverify
    nan_everywhere = lambda shards, spec: [np.full(np.shape(x), np.nan, np.float32) for x in shards]
    r = nsverify.check_tp(nan_everywhere, claim="exact", kernel="standard", max_success=10, diagnosis_cases=2)
    assert r.verdict == "FAIL"
    assert r["tp_1_result_computes_the_target_within_rounding"].status == "fails"
    assert "= nan" in r["tp_1_result_computes_the_target_within_rounding"].message


def test_allow_unnormalizable_returns_the_kernels_own_answer():
    """Opted in, ns computes what it refuses by default, and gives what the kernel gives (K8's semantics):
    NaN for a non-finite input, the zero matrix for a finite one whose norm overflows."""
    import nsverify
    poisoned = _g()
    poisoned[3, 4] = np.inf
    assert np.isnan(nsverify.ns(poisoned, allow_unnormalizable=True)).all()
    assert not nsverify.ns(_overflowing(), allow_unnormalizable=True).any()
    assert np.array_equal(nsverify.ns(_g(), allow_unnormalizable=True), nsverify.ns(_g()))


def test_numpy_bools_and_integers_are_accepted():
    import nsverify
    assert nsverify.autotp_layout(np.int64(16), np.int32(2)).widths == [8, 8]
    assert nsverify.ns_flops(np.int64(4), 4) == nsverify.ns_flops(4, 4)
    nsverify.audit(CONFIG, tp=2, measure=np.bool_(False))


if __name__ == "__main__":
    _run_case(sys.argv[1])
