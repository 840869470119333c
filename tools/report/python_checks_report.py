#!/usr/bin/env python3
"""Writes reports/python/: what nsverify's checks say about the shipped implementations.

  results.json  every check's result (properties, cases, shrunk counterexamples, replay strings,
                diagnoses), as CheckResult.to_dict() gives it
  README.md     rendered from results.json (and overhead.json, written by
                tools/bench/nsverify_overhead.py --json) by the report renderer:
                `python3 tools/report python reports/python` (tools/report/nsvreport/python_checks.py)

Sections: the numpy kernels and TP updates (which must pass what they promise), every seeded bug
with its shrunk counterexample, and DeepSpeed's two kernels transcribed to PyTorch (CPU, fp32 and
bf16), run when torch imports: a finding about a real implementation, reported as it comes out.

    PYTHONPATH=build/python /usr/bin/python3 tools/report/python_checks_report.py [--out reports/python] [--render-only]
"""

import json
import pathlib
import sys
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))  # the kernels, TP functions and bug catalogues it checks (nsvreport: this folder)

from nsvreport import core, python_checks  # noqa: E402


def kernel_section(nsverify):
    import numpy_ns
    return [dict(name=name, knobs=knobs, result=nsverify.check_kernel(fn, batched=True, **knobs).to_dict())
            for name, knobs, fn in (("numpy standard fp32", dict(kernel="standard", promise="bitwise"), numpy_ns.standard_ns),
                                    ("numpy gram fp32", dict(kernel="gram", promise="bitwise"), numpy_ns.gram_ns))]


def summary(result):
    """A TP result without its per-case distances (the candidates' tallies carry them)."""
    d = result.to_dict()
    d.pop("cases", None)
    return d


def tp_section(nsverify):
    import numpy_tp
    runs = (("allreduce_ns", dict(claim="rounding"), numpy_tp.allreduce_ns),
            ("allreduce_muon_update", dict(claim="rounding", aspect_scale=True), numpy_tp.allreduce_muon_update),
            ("autotp_muon_update (DeepSpeed's AutoTP today)", dict(claim="none", aspect_scale=True),
             numpy_tp.autotp_muon_update))
    return [dict(name=name, knobs=knobs, result=summary(nsverify.check_tp(fn, kernel="standard", **knobs)))
            for name, knobs, fn in runs]


def bug_section(nsverify):
    from seeded_bug_catalog import KERNEL_BUGS, TP_BUGS
    out = []
    for fn, knobs, prop in KERNEL_BUGS:
        out.append(dict(name=fn.__name__, doc=fn.__doc__, check="check_kernel", knobs=knobs, expected=prop,
                        result=nsverify.check_kernel(fn, **knobs).to_dict()))
    for fn, knobs, prop in TP_BUGS:
        out.append(dict(name=fn.__name__, doc=fn.__doc__, check="check_tp", knobs=dict(kernel="standard", **knobs),
                        expected=prop, result=summary(nsverify.check_tp(fn, kernel="standard", **knobs))))
    return out


def deepspeed_section(nsverify):
    try:
        import torch
        import deepspeed_torch
    except ImportError as e:
        return dict(available=False, why=str(e), runs=[])
    torch.set_num_threads(1)
    kernels = deepspeed_torch.kernels()
    runs = [dict(name=name, knobs=knobs, result=nsverify.check_kernel(fn, batched=True, **knobs).to_dict())
            for name, knobs, fn in kernels]
    bf16 = next(knobs["accumulate"] for _, knobs, _ in kernels if knobs["dtype"] == "bf16")
    return dict(available=True, torch=torch.__version__, bf16_accumulate=bf16, runs=runs)


def main():
    ap = core.writer_parser(__doc__, "python", "results.json")
    args = ap.parse_args()
    out = core.output_folder(args)
    if not args.render_only:
        import nsverify
        warnings.filterwarnings("ignore", category=RuntimeWarning)  # K8's NaN/Inf inputs, on purpose
        data = dict(version=nsverify.__version__, kernels=kernel_section(nsverify), tp=tp_section(nsverify),
                    bugs=bug_section(nsverify), deepspeed=deepspeed_section(nsverify))
        core.write_atomically(out / "results.json", core.without_machine_paths(json.dumps(data, indent=1)) + "\n")
    core.write_atomically(out / "README.md", python_checks.render(out))


if __name__ == "__main__":
    main()
