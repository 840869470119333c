"""Every verdict path through every TP front end: the same updates, claims and statuses from
nsverify.check_tp (numpy shards), nsverify.torch.check_tp (2 gloo ranks), and `nsv check --kind tp --json`
with either framework (exit status 0 / 1 / 3).

  PASS             the whole-matrix Muon update by all-reduces, claimed within rounding: every property of
                   the claim holds
  FAIL             AutoTP's per-shard update claimed within rounding: S5 fails, and the tp-1 half holds
                   (one rank holds the whole matrix)
  not run          that failure's replay runs S5 alone, which fails again; the claim's others are not run
  NOTHING CHECKED  claim "none": no property is asserted, the result says so, and the diagnosis names the
                   semantics
  not applicable   a pinned shape below S5's smallest side (16; the torch record alone pins a shape): S5 is
                   not applicable, the claim's others hold, PASS
(No TP property has a premise, so no TP case is left out of one: the per-property "nothing checked" status is
reached by properties/property_run_props.cpp on run_property, which every front end calls.)

Every path runs through both Python front ends and the numpy CLI. `nsv check --framework torch` runs FAIL and
the pinned shape's PASS: what it adds to nsverify.torch.check_tp (the torch record's settings, the rank
function looked up by module, a torch result's JSON and exit status) is on both, while the replay, "none" and
the exit statuses are the CLI's own code for either framework (nsverify/cli.py), which the numpy column runs.
Each torch CLI path starts an interpreter, torch and its gloo ranks anew (several seconds)."""
import json
import os
import subprocess

import pytest

import nsverify

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")
NSV = os.environ.get("NSV_BINARY")
TARGET = "tp_1_result_computes_the_target_within_rounding"
S5 = "tp_result_is_within_the_s5_bound_of_the_target"
UNTOUCHED = "tp_shards_are_left_untouched_and_not_aliased"
EXIT = {"PASS": 0, "FAIL": 1, "NOTHING CHECKED": 3}
# Each front end's correct and per-shard update, in examples/.
IMPLS = {"numpy": {"right": "allreduce_muon_update", "wrong": "autotp_muon_update"},
         "torch": {"right": "gram_allreduce_update", "wrong": "autotp_muon_update"}}
SETTINGS = dict(aspect_scale=True, kernel="standard", max_success=4, shrink_seconds=0)

# (path, implementation, claim, replay the failure's S5, pinned shape, expected statuses, verdict)
PATHS = [
    ("pass", "right", "rounding", False, None, {TARGET: "holds", S5: "holds", UNTOUCHED: "holds"}, "PASS"),
    ("fail", "wrong", "rounding", False, None, {TARGET: "holds", S5: "fails", UNTOUCHED: "holds"}, "FAIL"),
    ("not_run", "wrong", "rounding", True, None, {TARGET: "not run", S5: "fails", UNTOUCHED: "not run"}, "FAIL"),
    ("nothing", "wrong", "none", False, None, {}, "NOTHING CHECKED"),
    ("not_applicable", "right", "rounding", False, (8, 24),
     {TARGET: "holds", S5: "not applicable", UNTOUCHED: "holds"}, "PASS"),
]


def python_front_end(framework, impl, claim, replay, shape):
    """(verdict, {name: status}, reason, diagnosis) from check_tp of the framework's module."""
    if framework == "torch":
        pytest.importorskip("torch")
        import nsverify.torch as check_module
        import torch_tp as updates
        extra = dict(world_size=2, max_dim=24, diagnosis_cases=6 if claim == "none" else 0, shape=shape)
    else:
        import numpy_tp as updates
        check_module = nsverify
        extra = dict(max_dim=24, diagnosis_cases=6 if claim == "none" else 0)
    fn = getattr(updates, IMPLS[framework][impl])
    r = check_module.check_tp(fn, claim=claim, **SETTINGS, **extra)
    if replay:
        r = check_module.check_tp(fn, claim=claim, replay=r[S5].replay, **SETTINGS, **extra)
    return r.verdict, {p.name: p.status for p in r.properties}, r.reason, r.diagnosis


def cli_front_end(framework, impl, claim, replay, shape):
    if not NSV:
        pytest.skip("NSV_BINARY (the nsv executable) not set: run through ctest")
    if framework == "torch":
        pytest.importorskip("torch")
    module = "torch_tp.py" if framework == "torch" else "numpy_tp.py"
    args = [NSV, "check", "--impl", f"{EXAMPLES}/{module}:{IMPLS[framework][impl]}", "--kind", "tp", "--framework",
            framework, "--claim", claim, "--aspect-scale", "--kernel", "standard", "--max-success", "4", "--max-dim", "24",
            "--shrink-seconds", "0", "--diagnosis-cases", "6" if claim == "none" else "0", "--json"]
    if framework == "torch":
        args += ["--world-size", "2"] + (["--shape", f"{shape[0]}x{shape[1]}"] if shape else [])

    def run(extra):
        done = subprocess.run(args + extra, capture_output=True, text=True, timeout=600)
        doc = json.loads(done.stdout)
        assert done.returncode == EXIT[doc["verdict"]], (done.returncode, doc["verdict"], done.stderr[-2000:])
        return doc
    doc = run([])
    if replay:
        doc = run(["--replay", next(p["replay"] for p in doc["properties"] if p["name"] == S5)])
    return doc["verdict"], {p["name"]: p["status"] for p in doc["properties"]}, doc.get("reason"), doc.get("diagnosis")


TORCH_CLI_PATHS = ("fail", "not_applicable")
# (front end, framework, path): the numpy record draws its shapes, so only the torch record pins one.
RUNS = [(front_end, framework, path) for path in PATHS for framework in ("numpy", "torch")
        for front_end in ("python", "cli")
        if not (path[4] and framework == "numpy") and not (front_end == "cli" and framework == "torch"
                                                              and path[0] not in TORCH_CLI_PATHS)]


@pytest.mark.parametrize("front_end, framework, path", RUNS, ids=[f"{r[2][0]}-{r[1]}-{r[0]}" for r in RUNS])
def test_each_tp_verdict_path_is_reached_and_reported_alike(front_end, framework, path):
    _, impl, claim, replay, shape, statuses, verdict = path
    got_verdict, got, reason, diagnosis = (python_front_end if front_end == "python" else cli_front_end)(
        framework, impl, claim, replay, shape)
    assert got_verdict == verdict, (got_verdict, got, reason)
    assert got == statuses, got  # exactly the claim's properties, each with its status
    assert (reason is not None) == (verdict == "NOTHING CHECKED"), reason
    if verdict == "NOTHING CHECKED":
        assert "asserts no property" in reason, reason
        assert diagnosis == "per-shard NS, local-shape scale", diagnosis


def test_the_numpy_record_refuses_a_pinned_shape():
    """The not-applicable path is the torch record's alone: the numpy one says it has no such setting."""
    import numpy_tp
    with pytest.raises(TypeError, match="shape"):
        nsverify.check_tp(numpy_tp.allreduce_muon_update, claim="rounding", shape=(8, 24))
    if NSV:
        done = subprocess.run([NSV, "check", "--impl", f"{EXAMPLES}/numpy_tp.py:allreduce_muon_update", "--kind", "tp",
                               "--shape", "8x24"], capture_output=True, text=True, timeout=600)
        assert done.returncode == 2 and "--shape" in done.stderr, done.stderr[-2000:]

