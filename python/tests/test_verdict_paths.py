"""Every verdict path through every kernel front end: the same implementations, the same choice of
properties, and the same statuses and verdict from nsverify.check_kernel (numpy), nsverify.torch.check_kernel
(torch tensors; skipped without torch) and `nsv check --kind kernel --json` (exit status 0 / 1 / 3).

  PASS             one property holds, one is not applicable to this callable (K6 runs other
                   configurations than the callable's own), every other is not run (left out) or,
                   where this callable cannot take it at all, not applicable
  FAIL             a wrong kernel (identity) fails REF
  NOTHING CHECKED  the only property chosen is not applicable: nothing was checked, and the result
                   says why
(The per-property "nothing checked" status, a property whose every case lies outside its premise,
is reached by properties/property_run_props.cpp on run_property, which every front end calls.)"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import nsverify

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")
sys.path.insert(0, EXAMPLES)
from numpy_ns import standard_ns  # noqa: E402

NSV = os.environ.get("NSV_BINARY")
HOLDS = "zero_matrix_maps_to_zero"
NOT_APPLICABLE = "gram_matches_standard_to_1e12_in_fp64"  # K6: needs configurations other than fn's own
REF = "agrees_with_the_reference_within_its_own_error"
EXIT = {"PASS": 0, "FAIL": 1, "NOTHING CHECKED": 3}

# (case, implementation, chosen properties, expected statuses of the chosen, verdict)
CASES = [
    ("pass", "standard_ns", [HOLDS, NOT_APPLICABLE], {HOLDS: "holds", NOT_APPLICABLE: "not applicable"}, "PASS"),
    ("fail", "identity", [REF], {REF: "fails"}, "FAIL"),
    ("nothing", "standard_ns", [NOT_APPLICABLE], {NOT_APPLICABLE: "not applicable"}, "NOTHING CHECKED"),
]
SETTINGS = dict(kernel="standard", max_success=3, shrink_seconds=0)


def identity(G, steps):
    return np.array(G, copy=True)


def numpy_front_end(impl, chosen):
    fn = standard_ns if impl == "standard_ns" else identity
    r = nsverify.check_kernel(fn, properties=chosen, **SETTINGS)
    return r.verdict, {p.name: p.status for p in r.properties}, r.reason


def torch_front_end(impl, chosen):
    torch = pytest.importorskip("torch")
    import nsverify.torch as nt

    def fn(G, steps):
        X = G.float().numpy()  # torch's check draws bf16 by default: numpy computes in fp32, handed back in G's dtype
        out = standard_ns(X, steps) if impl == "standard_ns" else identity(X, steps)
        return torch.from_numpy(np.asarray(out, dtype=np.float32)).to(G.dtype)
    r = nt.check_kernel(fn, properties=chosen, **SETTINGS)
    return r.verdict, {p.name: p.status for p in r.properties}, r.reason


def cli_front_end(impl, chosen, tmp_path):
    if not NSV:
        pytest.skip("NSV_BINARY (the nsv executable) not set: run through ctest")
    impl_file = tmp_path / "impl.py"
    impl_file.write_text(f"import sys\nsys.path.insert(0, {EXAMPLES!r})\nfrom numpy_ns import standard_ns\n"
                         "import numpy as np\n\ndef identity(G, steps):\n    return np.array(G, copy=True)\n")
    run = subprocess.run([NSV, "check", "--impl", f"{impl_file}:{impl}", "--kind", "kernel", "--kernel", "standard",
                          "--properties", ",".join(chosen), "--max-success", "3", "--json"],
                         capture_output=True, text=True, timeout=600)
    doc = json.loads(run.stdout)
    assert run.returncode == EXIT[doc["verdict"]], (run.returncode, doc["verdict"], run.stderr[-2000:])
    return doc["verdict"], {p["name"]: p["status"] for p in doc["properties"]}, doc.get("reason")


@pytest.mark.parametrize("front_end", ["numpy", "torch", "cli"])
@pytest.mark.parametrize("case, impl, chosen, statuses, verdict", CASES, ids=[c[0] for c in CASES])
def test_each_verdict_path_is_reached_and_reported_alike(front_end, case, impl, chosen, statuses, verdict, tmp_path):
    got_verdict, got, reason = (numpy_front_end(impl, chosen) if front_end == "numpy" else
                                torch_front_end(impl, chosen) if front_end == "torch" else
                                cli_front_end(impl, chosen, tmp_path))
    assert got_verdict == verdict, (got_verdict, got)
    for name, status in statuses.items():
        assert got[name] == status, (name, got[name])
    left_out = [s for n, s in got.items() if n not in chosen]  # not run, or not applicable whatever was chosen
    assert "not run" in left_out and set(left_out) <= {"not run", "not applicable"}, got
    assert (reason is not None) == (verdict == "NOTHING CHECKED"), reason
