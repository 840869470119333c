"""Bad input to the Python API never crashes, hangs, allocates what it claims or yields silent garbage.

Each refusal case runs in its own interpreter (this file, run as a script with the case's name) under
a memory limit (RLIMIT_AS, 4 GiB unless NSV_CLI_MEMORY_LIMIT_KB says otherwise; 0 lifts it, for
sanitizer builds) and a time limit, in a folder holding a file that must come out unchanged. The
case must raise the exception type it names, with a message that names the argument and what is
allowed; a crash (a signal), a hang or another exception fails it. The "silent garbage" cases
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
MEMORY_LIMIT_KB = int(os.environ.get("NSV_CLI_MEMORY_LIMIT_KB", 4 << 20))


def _g(rows=16, cols=32, dtype=np.float32):
    return np.random.default_rng(0).standard_normal((rows, cols)).astype(dtype)


def _ok(G, steps):
    return G


# name: (exception type, regex the message must match, the call). The call runs in the child.
CASES = {
    # Empty matrices: a message, not a segfault.
    "singular_values of a 0x4 matrix": (ValueError, r"singular_values: the matrix is 0x4.*at least one row",
                                        lambda n: n.singular_values(np.zeros((0, 4)))),
    "polar_factor of a 0x0 matrix": (ValueError, r"polar_factor: the matrix is 0x0",
                                     lambda n: n.polar_factor(np.zeros((0, 0)))),
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
    """In the child: the limits, then the call; prints {"type", "message"} of what it raised."""
    import resource
    if MEMORY_LIMIT_KB > 0:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_KB << 10, MEMORY_LIMIT_KB << 10))
    import nsverify
    _, _, call = CASES[name]
    try:
        result = call(nsverify)
    except BaseException as e:  # noqa: BLE001 - the parent judges it
        print(json.dumps({"type": type(e).__name__, "message": str(e)}))
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


def test_numpy_bools_and_integers_are_accepted():
    import nsverify
    assert nsverify.autotp_layout(np.int64(16), np.int32(2)).widths == [8, 8]
    assert nsverify.ns_flops(np.int64(4), 4) == nsverify.ns_flops(4, 4)
    nsverify.audit(CONFIG, tp=2, measure=np.bool_(False))


if __name__ == "__main__":
    _run_case(sys.argv[1])
