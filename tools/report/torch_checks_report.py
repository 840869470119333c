#!/usr/bin/env python3
"""Writes reports/torch/: what nsverify.torch's checks say about PyTorch code, on real gloo ranks.

  results.json  every check's result (properties, shrunk counterexamples, replay strings, diagnoses,
                collectives, the ps listings of the fault runs), as the results' to_dict() give them
  README.md     rendered from results.json: `python3 tools/report torch reports/torch`
                (tools/report/nsvreport/torch_checks.py)

Sections: the environment (torch, the probed bf16 accumulation, fp16's support); the TP updates of
examples/torch_tp.py on 2 and 4 gloo ranks (diagnosis, claim, collectives beside the cost model's
plan); the seeded bugs of examples/seeded_torch_bugs.py with their shrunk counterexamples; the rank
faults (a rank that raises, one that never enters its collective, one that dies), each with its
time and the process listing before, during and after; the public Newton-Schulz routines of
examples/torch_public_ns.py in bf16 and fp32, every property. tools/report.sh runs this when
/usr/bin/python3 imports torch (about 4 minutes on 2 cores).

    PYTHONPATH=build/python /usr/bin/python3 tools/report/torch_checks_report.py [--out reports/torch] [--render-only]
"""

import json
import os
import pathlib
import sys
import threading
import time
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))  # the kernels, TP functions and bug catalogues it checks (nsvreport: this folder)

from nsvreport import core, torch_checks  # noqa: E402

#: The cases of each check: small, so that the report stays minutes on 2 cores.
TP_KNOBS = dict(kernel="standard", max_success=30, diagnosis_cases=12, max_dim=32)
KERNEL_CASES = 40
FAULT_LIMIT_S = 2.0


def call(check, name, knobs):
    """The call as Python source: check(name, k=v, ...)."""
    return f"{check}({name}" + "".join(f", {k}={v!r}" for k, v in knobs.items()) + ")"


def summary(result):
    """A result's dict without the per-case distances of the diagnosis (the candidates' tallies carry them)
    and without the per-case collectives (the summaries carry them)."""
    d = result.to_dict()
    d.pop("cases", None)
    return d


def environment_section():
    import torch
    import nsverify.torch as nt
    probe = nt.probe_accumulation("bf16", "cpu")
    try:
        nt.support("fp16", "cpu")
        fp16 = "supported"
    except nt.DtypeNotSupported as e:
        fp16 = str(e)
    return dict(torch=torch.__version__, accumulation=probe.words(), accumulate=probe.accumulate,
                match_fp32=probe.match_fp32, fp16=fp16)


def tp_section():
    import nsverify.torch as nt
    import torch_tp
    runs = []
    for world_size in (2, 4):
        for name, fn, knobs in (("autotp_muon_update", torch_tp.autotp_muon_update,
                                 dict(claim="none", aspect_scale=True, strategy="shard")),
                                ("gram_allreduce_update", torch_tp.gram_allreduce_update,
                                 dict(claim="rounding", aspect_scale=True, strategy="gram_allreduce"))):
            start = time.monotonic()
            result = nt.check_tp(fn, world_size=world_size, **knobs, **TP_KNOBS)
            runs.append(dict(name=name, world_size=world_size, knobs=knobs, seconds=time.monotonic() - start,
                             call=call("check_tp", name, dict(world_size=world_size, **knobs)),
                             result=summary(result)))
    return runs


def plan_section():
    """Each shipped update on one fixed uneven layout per world size: every rank's collectives beside the plan."""
    import numpy as np
    import nsverify.torch as nt
    import torch_tp
    G = np.random.default_rng(7).standard_normal((30, 20)).astype(np.float32)
    out = []
    for world_size in (2, 4):
        for name, fn, strategy in (("autotp_muon_update", torch_tp.autotp_muon_update, "shard"),
                                   ("gram_allreduce_update", torch_tp.gram_allreduce_update, "gram_allreduce")):
            r = nt.run_tp(fn, G, world_size=world_size, axis=0, strategy=strategy, kernel="standard")
            out.append(dict(name=name, world_size=world_size, strategy=strategy, layout=r["layout"], plan=r["plan"]))
    return out


def bug_section():
    import nsverify.torch as nt
    import seeded_torch_bugs as bugs
    runs = (
        ("inplace_normalization", bugs.inplace_normalization, "check_kernel", dict(kernel="standard", dtype="fp32"),
         "input_is_left_untouched_and_not_aliased"),
        ("inplace_normalization", bugs.inplace_normalization, "check_kernel", dict(kernel="standard", dtype="bf16"),
         "input_is_left_untouched_and_not_aliased"),
        ("allgather_equal_buffers", bugs.allgather_equal_buffers, "check_tp",
         dict(world_size=2, claim="exact", uneven=True, zero_width=False, fused=False, timeout=5.0),
         "tp_result_equals_its_own_tp_1_result_bit_for_bit"),
        ("allgather_equal_buffers", bugs.allgather_equal_buffers, "check_tp",
         dict(world_size=2, claim="exact", timeout=5.0), "tp_result_equals_its_own_tp_1_result_bit_for_bit"),
        ("allgather_equal_buffers", bugs.allgather_equal_buffers, "check_tp",
         dict(world_size=2, claim="exact", uneven=False, zero_width=False, fused=False), None),
        ("inplace_shard_normalization", bugs.inplace_shard_normalization, "check_tp",
         dict(world_size=2, claim="rounding", aspect_scale=True), "tp_shards_are_left_untouched_and_not_aliased"),
    )
    out = []
    for name, fn, check, knobs, expected in runs:
        start = time.monotonic()
        if check == "check_kernel":
            result = nt.check_kernel(fn, max_success=KERNEL_CASES, **knobs)
        else:
            result = nt.check_tp(fn, **knobs, **TP_KNOBS)
        out.append(dict(name=name, doc=fn.__doc__, check=check, knobs=knobs, expected=expected, call=call(check, name, knobs),
                        seconds=time.monotonic() - start, result=summary(result)))
    return out


def _listing(rows, root):
    """ps rows [(pid, ppid, cmd)] of root's descendants, each with its role instead of its command line (no
    paths): the forkserver and the resource tracker are root's children, the ranks the forkserver's (forked
    from it, so their command line is the forkserver's)."""
    servers = {pid for pid, ppid, cmd in rows if ppid == root and "forkserver" in cmd}

    def role(pid, ppid, cmd):
        if ppid in servers:
            return "rank process (forked by the forkserver)"
        if pid in servers:
            return "multiprocessing forkserver (torch preloaded)"
        if "resource_tracker" in cmd:
            return "multiprocessing resource tracker"
        return "other"
    return [dict(pid=pid, ppid=ppid, role=role(pid, ppid, cmd)) for pid, ppid, cmd in rows]


def fault_section():
    import nsverify.torch as nt
    import seeded_torch_bugs as bugs
    from processes import descendants, processes
    me = os.getpid()
    out = []
    for name in ("rank_raises", "rank_skips_collective", "rank_aborts", "rank_wrong_shape"):
        fn = getattr(bugs, name)
        nt.shutdown()  # a clean slate: the listing before shows what this check starts
        before = [(pid, ppid, cmd) for pid, ppid, cmd in processes() if pid in {p for p, _ in descendants(me)}]
        seen, stop = {}, threading.Event()

        def sample():
            while not stop.is_set():
                kids = {p for p, _ in descendants(me)}
                for pid, ppid, cmd in processes():
                    if pid in kids and not cmd.startswith("ps "):
                        seen.setdefault(pid, (pid, ppid, cmd))
                stop.wait(0.2)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        start = time.monotonic()
        result = nt.check_tp(fn, world_size=2, claim="rounding", aspect_scale=True, timeout=FAULT_LIMIT_S,
                             kernel="standard", max_success=10, diagnosis_cases=3, max_dim=16)
        seconds = time.monotonic() - start
        stop.set()
        sampler.join()
        after_check = [r for r in processes() if r[0] in {p for p, _ in descendants(me)} and not r[2].startswith("ps ")]
        nt.shutdown()
        time.sleep(0.5)
        after_shutdown = [r for r in processes() if r[0] in {p for p, _ in descendants(me)} and not r[2].startswith("ps ")]
        alive = {pid for pid, _, _ in processes()}
        out.append(dict(name=name, doc=fn.__doc__, limit_s=FAULT_LIMIT_S, seconds=seconds, result=summary(result),
                        before=_listing(before, me), during=_listing(sorted(seen.values()), me),
                        after_check=_listing(after_check, me), after_shutdown=_listing(after_shutdown, me),
                        left_behind=sorted(pid for pid in seen if pid in alive)))
    return out


def public_section():
    import torch
    import nsverify.torch as nt
    import torch_public_ns
    torch.set_num_threads(1)
    out = []
    for name, source, dtype, fn, knobs in torch_public_ns.runs():
        start = time.monotonic()
        result = nt.check_kernel(fn, max_success=KERNEL_CASES, **knobs)
        shown = {k: v for k, v in knobs.items() if v is not None}
        out.append(dict(name=name, source=source, dtype=dtype, knobs=shown, call=call("check_kernel", "fn", shown),
                        seconds=time.monotonic() - start, result=result.to_dict()))
    return out


def main():
    ap = core.writer_parser(__doc__, "torch", "results.json")
    args = ap.parse_args()
    out = core.output_folder(args)
    if not args.render_only:
        import nsverify
        warnings.filterwarnings("ignore", category=RuntimeWarning)  # K8's NaN/Inf inputs, on purpose
        sections = {}
        started = time.monotonic()
        for key, section in (("environment", environment_section), ("tp", tp_section), ("plans", plan_section),
                             ("bugs", bug_section), ("faults", fault_section), ("public", public_section)):
            t = time.monotonic()
            sections[key] = section()
            print(f"torch_checks_report: {key} in {time.monotonic() - t:.0f} s", file=sys.stderr)
        data = dict(version=nsverify.__version__, seconds=time.monotonic() - started, tp_knobs=TP_KNOBS,
                    kernel_cases=KERNEL_CASES, **sections)
        core.write_atomically(out / "results.json", core.without_machine_paths(json.dumps(data, indent=1)) + "\n")
    core.write_atomically(out / "README.md", torch_checks.render(str(out)))


if __name__ == "__main__":
    main()
