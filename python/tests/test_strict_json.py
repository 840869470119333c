"""Every `--json` writes one strict JSON document (RFC 8259) and nothing else on standard output: NaN and
infinities as null (never the non-standard NaN / Infinity), no progress line, no print of the
implementation under test (at import or in a call: `nsv check` sends those to standard error).

The commands are those the gate's tests run with --json (properties/cli/*.sh, diagnose_cli.sh,
model_config_props.cpp, test_cli.py), plus runs whose results hold NaN on purpose.
"""
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
EXAMPLES = ROOT / "examples"
NSV = os.environ.get("NSV_BINARY")

pytestmark = pytest.mark.skipif(not NSV, reason="NSV_BINARY (the nsv executable) not set: run through ctest")

CONFIG = str(FIXTURES / "models" / "tiny-llama.json")
RUNS = FIXTURES / "runs"
GENERATED_LAYER = ["--generate", "--hidden", "16", "--heads", "4", "--kv-heads", "2", "--head-dim", "4",
                   "--intermediate", "32", "--tp", "2"]
# An fp16 iteration that overflows: 900^2 is past fp16's 65504 (cli_errors.sh's coeffs_big.txt).
BLOWUP = ["--kernel", "standard", "--dtype", "fp16", "--steps", "3", "--coeffs", "{work}/coeffs_big.txt"]

#: name: (the nsv arguments, "{work}" standing for the test's folder; whether the result must hold a null
#: that stands for a non-finite number).
COMMANDS = {
    "ns": (["ns", "--input", "{work}/good.npy", "--json"], False),
    "ns, a non-finite result (--allow-non-finite)": (["ns", "--input", "{work}/good.npy", *BLOWUP, "--allow-non-finite",
                                                      "--json"], True),
    "shard": (["shard", "--shape", "8x16", "--tp", "2", "--json"], False),
    "shard gather, uneven shards": (["shard", "--shape", "16x12", "--tp", "3", "--strategy", "gather", "--json"], False),
    "shard --fused": (["shard", "--shape", "48x32", "--fused", "qkv:glm", "--heads", "4", "--kv-heads", "2",
                       "--strategy", "gather", "--kernel", "gram", "--json"], False),
    "sweep, with progress": (["sweep", "--shapes", "8x8,16x8", "--tp", "1,2", "--json"], False),
    "sweep, non-finite results": (["sweep", "--shapes", "16x32", "--tp", "2", "--strategy", "gather", *BLOWUP, "--quiet",
                                   "--json"], True),
    "audit": (["audit", "--config", CONFIG, "--tp", "2", "--json"], False),
    "audit --dp": (["audit", "--config", CONFIG, "--tp", "2", "--dp", "2", "--json"], False),
    "diagnose": (["diagnose", "--config", CONFIG, "--tp", "2", "--kernel", "standard",
                  "--muon", "lr=0.02,momentum=0.95,nesterov=true,wd=0", "--reference", str(RUNS / "reference"),
                  "--candidate", f"{RUNS / 'tp2'},{RUNS / 'tp2' / 'per_head'}", "--json"], False),
    "step": (["step", *GENERATED_LAYER, "--json"], False),
    "step --fallback owner": (["step", *GENERATED_LAYER, "--fallback", "owner", "--json"], False),
    "report --print-plan": (["report", "--print-plan", "--quick"], False),
}

#: An implementation that prints at import and in every call, through Python and through descriptor 1.
PRINTING = '''
import os, sys
sys.path.insert(0, {examples!r})
from numpy_ns import standard_ns
print("print at import")
os.write(1, b"descriptor 1 at import\\n")

def ns(G, steps):
    print("print in a call")
    os.write(1, b"descriptor 1 in a call\\n")
    return standard_ns(G, steps)
'''

#: An implementation whose results are NaN everywhere: the check's measured figures are NaN.
ALL_NAN = '''
import numpy as np

def ns(G, steps):
    return np.full(np.shape(G), np.nan, np.float32)
'''


def strict(text):
    """text as one JSON document, refusing NaN, Infinity and -Infinity (json.loads accepts them)."""
    return json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"non-standard JSON: {c}")))


def nulls(value):
    """How many nulls the document holds."""
    if value is None:
        return 1
    if isinstance(value, dict):
        return sum(nulls(v) for v in value.values())
    if isinstance(value, list):
        return sum(nulls(v) for v in value)
    return 0


def at(document, pointer):
    """The value at a JSON Pointer (RFC 6901)."""
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        document = document[int(token)] if isinstance(document, list) else document[token]
    return document


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    folder = tmp_path_factory.mktemp("strict_json")
    np.save(folder / "good.npy", np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32))
    (folder / "coeffs_big.txt").write_text("900 0 0\n")
    return folder


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_nsv_json_is_strict_and_alone_on_stdout(name, work):
    args, holds_non_finite = COMMANDS[name]
    run = subprocess.run([NSV, *[a.replace("{work}", str(work)) for a in args]], capture_output=True, text=True,
                         cwd=work, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    document = strict(run.stdout)
    if holds_non_finite:
        assert nulls(document) > 0, "the run was meant to hold a non-finite number, written null"


def nsv_check(impl, work, *more):
    run = subprocess.run([NSV, "check", "--impl", impl, "--kind", "kernel", "--kernel", "standard", "--max-success", "10",
                          "--json", *more], capture_output=True, text=True, cwd=work, timeout=600)
    return run, strict(run.stdout)


def test_nsv_check_json_sends_the_implementations_prints_to_stderr(work):
    impl = work / "printing_ns.py"
    impl.write_text(PRINTING.format(examples=str(EXAMPLES)))
    run, document = nsv_check(f"{impl}:ns", work)
    assert run.returncode == 0, run.stderr[-2000:]
    assert document["verdict"] == "PASS" and document["non_finite"] == {}
    for line in ("print at import", "descriptor 1 at import", "print in a call", "descriptor 1 in a call"):
        assert line in run.stderr and line not in run.stdout


def test_nsv_check_json_writes_non_finite_figures_as_null_and_lists_them(work):
    impl = work / "all_nan_ns.py"
    impl.write_text(ALL_NAN)
    run, document = nsv_check(f"{impl}:ns", work)
    assert run.returncode == 1, run.stderr[-2000:]
    assert document["non_finite"], "an all-NaN kernel's figures hold NaN: they must be listed"
    for pointer, value in document["non_finite"].items():
        assert value in ("NaN", "Infinity", "-Infinity") and at(document, pointer) is None, (pointer, value)


def test_strict_dumps_lists_each_non_finite_number_by_json_pointer():
    from nsverify import _strict_json
    text = _strict_json.dumps({"a": [1.0, float("nan")], "b/c": {"~d": float("-inf")}, "e": float("inf"), "f": "NaN"})
    assert strict(text) == {"a": [1.0, None], "b/c": {"~d": None}, "e": None, "f": "NaN",
                            "non_finite": {"/a/1": "NaN", "/b~1c/~0d": "-Infinity", "/e": "Infinity"}}
