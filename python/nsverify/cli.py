"""`nsv check` (and `python3 -m nsverify.cli`): the checks from the command line.

    nsv check --impl my_ns.py:newton_schulz --kind kernel --kernel standard [--json]
    nsv check --impl my_tp.py:update --kind tp --claim rounding --aspect-scale
    nsv check --impl my_tp.py:update --framework torch --kind tp --world-size 2   (fn(shard, spec, group) on gloo ranks)

Exit status: 0 if every required property holds, 1 if one does not, 2 if the implementation
cannot be loaded or run (a file that cannot be loaded, a function that is not there, a module or a
call that exits the process, a call past --call-timeout, a bad option), 3 if nothing was checked.

The implementation runs in a child process that the command supervises, so that it cannot end
the check: a module that calls sys.exit or os._exit at import, or a function that does so when
called, is reported as such (exit 2), never as a pass. A call that runs longer than --call-timeout
seconds stops the check (exit 2); every --progress seconds the command says how many calls it
has made.
"""

import argparse
import functools
import importlib.util
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
import warnings

from ._kernel import check_kernel
from ._reference import CHECK_DEFAULTS, CONFIG_SCHEMA, DP_PARTITION, DP_PARTITIONS, SHRINK_SECONDS
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
    try:
        spec.loader.exec_module(module)
    except SystemExit as e:
        raise ValueError(f"--impl: {path} called sys.exit({e.code!r}) while being imported: nothing was checked; "
                         "a module under test must not exit at import") from None
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 - the user's module: any error is "cannot load"
        raise ValueError(f"--impl: {path} raised {type(e).__name__} while being imported: {e}") from None
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
    p.add_argument("--dp", type=int, help="tp: a TP x DP mesh of this many DP ranks (1..64); fn gets one piece per mesh rank")
    p.add_argument("--dp-partition", default=DP_PARTITION, choices=DP_PARTITIONS,
                   help="tp with --dp: zero (ZeRO's flat pieces) | fsdp (FSDP2's rows)")
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
    p.add_argument("--shrink-seconds", type=float, default=SHRINK_SECONDS,
                   help="seconds a failing property may shrink its counterexample (0..3600; 0: the first failing case)")
    p.add_argument("--replay", help="a failure's replay string: run exactly that case again")
    p.add_argument("--json", action="store_true", help="the result as JSON on stdout")
    p.add_argument("--call-timeout", type=float, default=300.0,
                   help="seconds one call of the implementation may take before the check stops (exit 2)")
    p.add_argument("--progress", type=float, default=30.0,
                   help="seconds between progress lines on stderr (0: none)")
    p.add_argument("--_child", help=argparse.SUPPRESS)  # internal: the supervised child's progress file
    return p


#: nsv check's exit statuses: 0 every required property holds, 1 a property failed, 2 the
#: implementation cannot be loaded or run (or an argument is wrong), 3 nothing was checked (no
#: required property checked a single case: e.g. --claim none, which only diagnoses).
EXIT_STATUS = {"PASS": 0, "FAIL": 1, "NOTHING CHECKED": 3}


def _positive(flag, value, allow_zero=False):
    if not (value == value and value != float("inf") and (value >= 0 if allow_zero else value > 0)):
        raise ValueError(f"{flag} must be a finite number of seconds {'>= 0' if allow_zero else '> 0'}, got {value}")


def main(argv=None):
    args = parser().parse_args(argv)
    if args._child:
        return _child_main(args)
    try:
        _positive("--call-timeout", args.call_timeout)
        _positive("--progress", args.progress, allow_zero=True)
        if args.steps < 0 or args.steps > 1000:
            raise ValueError(f"--steps must be an integer between 0 and 1000, got {args.steps}")
    except ValueError as e:
        print(f"nsv check: error: {e}", file=sys.stderr)
        return 2
    return _supervise(args, list(sys.argv[1:] if argv is None else argv))


#: Progress record of the child: "CALLS START STATE" (STATE running | idle | exit CODE), CLOCK_MONOTONIC.
_RECORD = 96


def _supervise(args, argv):
    """Runs the check in a child and judges how it ended: only the child's own result counts."""
    with tempfile.TemporaryDirectory(prefix="nsv-check-") as tmp:
        progress = os.path.join(tmp, "progress")
        result = os.path.join(tmp, "result")
        with open(progress, "wb") as f:
            f.write(b"0 0 idle".ljust(_RECORD))
        child = subprocess.Popen([sys.executable, "-m", "nsverify.cli", *argv, "--_child", tmp])
        started = last_report = time.monotonic()
        try:
            while child.poll() is None:
                time.sleep(0.2)
                calls, since, state = _read_progress(progress)
                now = time.monotonic()
                if state == "running" and now - since > args.call_timeout:
                    child.kill()
                    child.wait()
                    print(f"nsv check: error: call {calls} of {args.impl} did not return within --call-timeout "
                          f"{args.call_timeout:g} s: the check was stopped (raise --call-timeout for a slow "
                          "implementation, or check it for a hang)", file=sys.stderr)
                    return 2
                if args.progress and now - last_report >= args.progress:
                    last_report = now
                    print(f"nsv check: {calls} call(s) of {args.impl} in {now - started:.0f} s"
                          + (f"; call {calls} running for {now - since:.0f} s" if state == "running" else ""),
                          file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            child.kill()
            child.wait()
            print("nsv check: interrupted", file=sys.stderr)
            return 130
        calls, _, state = _read_progress(progress)
        if state.startswith("exit"):
            print(f"nsv check: error: {args.impl} called sys.exit({state[5:]}) in call {calls}: the check cannot "
                  "run an implementation that exits; nothing was checked", file=sys.stderr)
            return 2
        try:
            with open(result) as f:
                return int(f.read())
        except (OSError, ValueError):
            how = f"signal {-child.returncode}" if child.returncode < 0 else f"exit status {child.returncode}"
            where = f"in call {calls}" if state == "running" else "outside any call (at import or between calls)"
            print(f"nsv check: error: the implementation ended the checking process ({how}, {where}) before a "
                  "result: os._exit, sys.exit or a crash in its code; nothing was checked", file=sys.stderr)
            return 2


def _read_progress(path):
    try:
        with open(path, "rb") as f:
            calls, since, state = f.read(_RECORD).decode().split(None, 2)
        return int(calls), float(since), state.strip()
    except (OSError, ValueError):
        return 0, 0.0, "idle"


class _Watched:
    """Every call of fn recorded in the progress file; SystemExit inside fn recorded and the child ended."""

    def __init__(self, folder):
        self.fd = os.open(os.path.join(folder, "progress"), os.O_WRONLY)
        self.calls = 0

    def record(self, state):
        os.pwrite(self.fd, f"{self.calls} {time.monotonic():.3f} {state}".encode().ljust(_RECORD), 0)

    def wrap(self, fn):
        @functools.wraps(fn)
        def call(*a, **k):
            self.calls += 1
            self.record("running")
            try:
                out = fn(*a, **k)
            except SystemExit as e:
                self.record(f"exit {e.code!r}")
                os._exit(2)
            self.record("idle")
            return out
        return call


def _child_main(args):
    """The check itself, in the supervised child; its status goes to the result file only when it ran to the end."""
    # K8 hands the implementation NaN, Inf and overflowing inputs on purpose: numpy's warnings
    # about them are expected, not news.
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends the child at once; the parent reports it
    status = _run_check(args)
    sys.stdout.flush()
    with open(os.path.join(args._child, "result"), "w") as f:
        f.write(str(status))
    return status


def _run_check(args):
    accumulate = args.accumulate or ("auto" if args.framework == "torch" else CHECK_DEFAULTS["accumulate"])
    knobs = dict(kernel=args.kernel, steps=args.steps, dtype=args.dtype, accumulate=accumulate,
                 products=args.products, coeffs=args.coeffs, restart_at=args.restart_at, max_success=args.max_success,
                 max_dim=args.max_dim, seed=args.seed, replay=args.replay, counterexamples=args.counterexamples,
                 shrink_seconds=args.shrink_seconds)
    try:
        # Each call recorded for the supervisor (time limit, progress, exits). A torch TP function runs
        # in rank processes, which look it up by module and name (the unwrapped function) and have
        # their own per-case time limit.
        fn = _Watched(args._child).wrap(load_function(args.impl))
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
            result = tp_check(fn, claim=args.claim, target=args.target, aspect_scale=args.aspect_scale, dp=args.dp,
                              dp_partition=args.dp_partition, **tp_knobs, **knobs)
    except (ValueError, TypeError, ImportError) as e:
        print(f"nsv check: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result.to_dict(), indent=2) if args.json else result)
    return EXIT_STATUS[result.verdict]


if __name__ == "__main__":
    sys.exit(main())
