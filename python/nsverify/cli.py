"""`nsv check` (and `python3 -m nsverify.cli`): the checks from the command line.

    nsv check --impl my_ns.py:newton_schulz --kind kernel --kernel standard [--json]
    nsv check --impl my_tp.py:update --kind tp --claim rounding --aspect-scale
    nsv check --impl my_tp.py:update --framework torch --kind tp --world-size 2   (fn(shard, spec, group) on gloo ranks)

Exit status: 0 if every required property holds, 1 if one does not, 2 for a usage error (a file
that cannot be loaded, a function that is not there, a bad option).
"""

import argparse
import importlib.util
import json
import pathlib
import sys
import warnings

from ._kernel import check_kernel
from ._reference import CHECK_DEFAULTS, CONFIG_SCHEMA
from ._tp import check_tp


def load_function(impl):
    """FILE.py:FUNCTION -> the function; ValueError saying what to fix."""
    path, sep, name = impl.rpartition(":")
    if not sep or not path or not name:
        raise ValueError(f"--impl {impl!r}: expected FILE.py:FUNCTION")
    file = pathlib.Path(path)
    if not file.is_file():
        raise ValueError(f"--impl: {path}: no such file")
    sys.path.insert(0, str(file.resolve().parent))  # the file's own imports (its siblings)
    spec = importlib.util.spec_from_file_location(file.stem, file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ValueError(f"--impl: {path} has no function {name!r}")
    return fn


def parser():
    p = argparse.ArgumentParser(prog="nsv check", description=__doc__.split("\n\n")[0])
    p.add_argument("--impl", required=True, help="FILE.py:FUNCTION, the implementation under test")
    p.add_argument("--kind", required=True, choices=["kernel", "tp"],
                   help="kernel: fn(G, steps) -> array; tp: fn(shards, spec) -> list of arrays (torch: fn(shard, spec, group))")
    p.add_argument("--framework", default="numpy", choices=["numpy", "torch"],
                   help="torch: nsverify.torch's checks (tensors in --dtype on --device; tp on --world-size gloo ranks)")
    p.add_argument("--world-size", type=int, default=2, help="torch tp: the ranks of the process group")
    p.add_argument("--device", default="cpu", help="torch: the device fn's tensors are on")
    p.add_argument("--claim", default="exact", choices=["exact", "rounding", "none"], help="tp: what fn promises")
    p.add_argument("--target", default="whole", choices=CONFIG_SCHEMA["target"]["choices"], help="tp: the semantics promised")
    p.add_argument("--aspect-scale", action="store_true", help="tp: fn is a Muon update (whole-shape aspect scale)")
    # The knobs: the checks' defaults (NsConfig's, products "full"), the schema's choices.
    p.add_argument("--kernel", default=CHECK_DEFAULTS["kernel"], choices=CONFIG_SCHEMA["kernel"]["choices"])
    p.add_argument("--steps", type=int, default=CHECK_DEFAULTS["steps"])
    p.add_argument("--dtype", default=CHECK_DEFAULTS["dtype"], choices=CONFIG_SCHEMA["dtype"]["choices"])
    p.add_argument("--accumulate", choices=CONFIG_SCHEMA["accumulate"]["choices"] + ["auto"],
                   help=f"default {CHECK_DEFAULTS['accumulate']}; torch: auto (the device's matmul probed)")
    p.add_argument("--products", default=CHECK_DEFAULTS["products"], choices=CONFIG_SCHEMA["products"]["choices"])
    p.add_argument("--coeffs", default=CHECK_DEFAULTS["coeffs"])
    p.add_argument("--restart-at", default=CHECK_DEFAULTS["restart_at"],
                   help="gram kernel: the steps it restarts before, e.g. 2 or 2,4,6 (none: never)")
    p.add_argument("--batched", action="store_true", help="kernel: fn also takes 3-D batches")
    p.add_argument("--promise", default="map", choices=["map", "bitwise"],
                   help="kernel: what fn promises: map (the right function within derived bounds) or bitwise "
                        "(and reproducible bits: K1, K7, K10); --required overrides it")
    p.add_argument("--required", help="kernel: comma-separated property names or codes that decide the exit status")
    p.add_argument("--counterexamples", metavar="DIR",
                   help="a folder for the failures' arrays (.npy, in a fresh subfolder); default: a new temporary folder")
    p.add_argument("--max-success", type=int, default=100, help="cases per property")
    p.add_argument("--max-dim", type=int, default=48, help="largest side generated")
    p.add_argument("--seed", type=int, help="RapidCheck's seed (fixed by default)")
    p.add_argument("--replay", help="a failure's replay string: run exactly that case again")
    p.add_argument("--json", action="store_true", help="the result as JSON on stdout")
    return p


#: nsv check's exit statuses: 0 every required property holds, 1 a property failed, 2 the
#: implementation cannot be loaded or run (or an argument is wrong), 3 nothing was checked (no
#: required property checked a single case: e.g. --claim none, which only diagnoses).
EXIT_STATUS = {"PASS": 0, "FAIL": 1, "NOTHING CHECKED": 3}


def main(argv=None):
    args = parser().parse_args(argv)
    # K8 hands the implementation NaN, Inf and overflowing inputs on purpose: numpy's warnings
    # about them are expected, not news.
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    accumulate = args.accumulate or ("auto" if args.framework == "torch" else CHECK_DEFAULTS["accumulate"])
    knobs = dict(kernel=args.kernel, steps=args.steps, dtype=args.dtype, accumulate=accumulate,
                 products=args.products, coeffs=args.coeffs, restart_at=args.restart_at, max_success=args.max_success,
                 max_dim=args.max_dim, seed=args.seed, replay=args.replay, counterexamples=args.counterexamples)
    try:
        fn = load_function(args.impl)
        kernel_check, tp_check = check_kernel, check_tp
        if args.framework == "torch":
            import nsverify.torch as framework  # ImportError says how to install torch
            kernel_check, tp_check = framework.check_kernel, framework.check_tp
            knobs.update(device=args.device)
            tp_knobs = dict(world_size=args.world_size)
        else:
            tp_knobs = {}
        if args.kind == "kernel":
            required = args.required.split(",") if args.required else None
            result = kernel_check(fn, batched=args.batched, required=required, promise=args.promise, **knobs)
        else:
            result = tp_check(fn, claim=args.claim, target=args.target, aspect_scale=args.aspect_scale, **tp_knobs, **knobs)
    except (ValueError, ImportError) as e:
        print(f"nsv check: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result.to_dict(), indent=2) if args.json else result)
    return EXIT_STATUS[result.verdict]


if __name__ == "__main__":
    sys.exit(main())
