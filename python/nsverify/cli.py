"""`nsv check` (and `python3 -m nsverify.cli`): the checks from the command line.

    nsv check --impl my_ns.py:newton_schulz --kind kernel --kernel standard [--json]
    nsv check --impl my_tp.py:update --kind tp --claim rounding --aspect-scale
    nsv check --impl my_tp.py:update --framework torch --kind tp --world-size 2   (fn(shard, spec, group) on gloo ranks)
    nsv check --impl my_muon.py:make_optimizer --kind optimizer --config config.json --tp 2 [--dp 2]

With --json, standard output holds one strict JSON document (RFC 8259) and nothing else: what the
implementation prints, at import, in its calls or in its rank processes, goes to standard error, and
NaN and infinities are written null and listed by JSON Pointer in the document's "non_finite"
(nsverify/_strict_json.py).

Exit status: 0 if every required property holds, 1 if one does not, 2 if the implementation
cannot be loaded or run (a file that cannot be loaded, a function that is not there, a module that
exits at import, a process ended from C, a call past --call-timeout, a bad option), 3 if nothing
was checked.

A function that calls sys.exit or os._exit fails its case, as any error does (exit 1). The
implementation runs in a child process that the command supervises, so that nothing else can end
the check either: a module that exits at import, or code that ends the process from C (abort, a
crash), is reported as such (exit 2), never as a pass. A call that runs longer than --call-timeout
seconds stops the check (exit 2), naming the call's input; every --progress seconds the command
says how many calls it has made and which input the running one was handed (G 512x1024, a TP
layout).
"""

import argparse
import functools
import importlib.util
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
import warnings

import nsverify
from . import _strict_json
from ._records import FIELDS, settings


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


#: The check record each --kind and --framework runs (nsverify/_records.py).
RECORD_OF = {("kernel", "numpy"): "kernel", ("kernel", "torch"): "torch_kernel", ("tp", "numpy"): "tp",
             ("tp", "torch"): "torch_tp", ("optimizer", "torch"): "optimizer"}
#: The flags that are the command's own, not a check's settings.
OWN_FLAGS = ("impl", "kind", "framework", "json", "call_timeout", "progress", "_child", "params", "config", "layers",
             "reference_impl")


def _shape(text):
    rows, sep, cols = text.partition("x")
    if not sep or not rows.isdigit() or not cols.isdigit():
        raise argparse.ArgumentTypeError(f"expected ROWSxCOLS, e.g. 512x1024; got {text!r}")
    return int(rows), int(cols)


def _names(text):
    return [n for n in text.split(",") if n]


def settings_flags(p, kinds=None):
    """One flag per setting of the check records `kinds` (None: every one), its type, choices and help from the
    record; its default None, so that a check given no flag takes its own record's default (listed in the help)."""
    by_name = {}
    for kind, fields in FIELDS.items():
        if kinds is not None and kind not in kinds:
            continue
        for name, field in fields.items():
            by_name.setdefault(name, []).append((kind, field))
    for name, entries in by_name.items():
        field = entries[0][1]
        kinds = ", ".join(kind for kind, _ in entries)
        defaults = {repr(f["default"]) for _, f in entries}
        default_words = (f"default {defaults.pop()}" if len(defaults) == 1 else
                         "defaults " + "; ".join(f"{k} {f['default']!r}" for k, f in entries))
        words = f"{field['help']} [{kinds}; {default_words}]"
        choices = sorted({c for _, f in entries for c in f["choices"]}, key=lambda c: min(
            f["choices"].index(c) if c in f["choices"] else 99 for _, f in entries))
        flag = "--" + name.replace("_", "-")
        if field["type"] == "boolean":
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=words)
            continue
        typed = dict(integer=int, number=float, shape=_shape, names=_names).get(field["type"], str)
        kwargs = dict(choices=choices) if field["type"] == "choice" or (field["type"] == "callable" and choices) else {}
        p.add_argument(flag, type=typed, default=None, help=words, **kwargs)


def parser():
    p = argparse.ArgumentParser(prog="nsv check", description=__doc__.split("\n\n")[0])
    p.add_argument("--impl", required=True, help="FILE.py:FUNCTION, the implementation under test")
    p.add_argument("--kind", required=True, choices=sorted({k for k, _ in RECORD_OF}),
                   help="kernel: fn(G, steps) -> array; tp: fn(shards, spec) -> list of arrays (torch: fn(shard, spec, "
                        "group)); optimizer (torch): make_optimizer(named_params, ctx)")
    p.add_argument("--framework", default="numpy", choices=["numpy", "torch"],
                   help="torch: nsverify.torch's checks (tensors in --dtype on --device; tp on --world-size gloo ranks)")
    settings_flags(p)
    optimizer = p.add_argument_group("the optimizer's parameters (--kind optimizer: one of --params and --config)")
    optimizer.add_argument("--params", metavar="FILE.json",
                           help="a JSON list of nsverify.torch.Param keywords: name, shape, split, route, heads, kv_heads, fused")
    optimizer.add_argument("--config", metavar="MODEL.json", help="a Hugging Face config.json: its layers' parameters, "
                           "split by AutoTP's rules (nsverify.torch.Param.from_config)")
    optimizer.add_argument("--layers", type=int, default=1, help="with --config: how many layers (default 1)")
    optimizer.add_argument("--reference-impl", metavar="FILE.py:FACTORY",
                           help="a second factory as the reference (default: the same factory at tp = 1)")
    p.add_argument("--json", action="store_true",
                   help="the result as strict JSON (RFC 8259) on stdout, alone: the implementation's own prints go to "
                        "stderr; NaN and infinities are written null and listed in \"non_finite\" by JSON Pointer")
    p.add_argument("--call-timeout", type=float, default=300.0,
                   help="seconds one call of the implementation may take before the check stops (exit 2)")
    p.add_argument("--progress", type=float, default=30.0,
                   help="seconds between progress lines on stderr, each naming the running call's input (0: none)")
    p.add_argument("--_child", help=argparse.SUPPRESS)  # internal: the supervised child's progress file
    return p


def as_flag_words(message):
    """A record's message about a field ("max_dim must be ...") in the command line's words ("--max-dim must be ...")."""
    name, sep, rest = message.partition(" ")
    fields = {n for f in FIELDS.values() for n in f}
    return f"--{name.replace('_', '-')}{sep}{rest}" if name in fields else message


def check_settings(args):
    """The record the arguments name and the settings given for it (flags not given are left to the
    record's defaults); ValueError for a flag the record has no field for."""
    framework = "torch" if args.kind == "optimizer" else args.framework
    record = RECORD_OF.get((args.kind, framework))
    if record is None:
        raise ValueError(f"--kind {args.kind} runs with --framework torch only")
    given = {k: v for k, v in vars(args).items() if k not in OWN_FLAGS and v is not None}
    foreign = sorted(k for k in given if k not in FIELDS[record])
    if foreign:
        raise ValueError(f"{', '.join('--' + k.replace('_', '-') for k in foreign)}: not a setting of the {record} check "
                         f"(--kind {args.kind} --framework {framework})")
    return record, given


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
        record, given = check_settings(args)
        settings(record, **given)  # a bad value refused before any child starts
    except (ValueError, TypeError) as e:
        print(f"nsv check: error: {as_flag_words(str(e))}", file=sys.stderr)
        return 2
    return _supervise(args, list(sys.argv[1:] if argv is None else argv))


#: Progress record of the child: "CALLS START STATE" (STATE "idle", or "running" and the call's input in
#: words), START on CLOCK_MONOTONIC.
_RECORD = 160


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
                running, case = _running(state)
                if running and now - since > args.call_timeout:
                    child.kill()
                    child.wait()
                    print(f"nsv check: error: call {calls}{case} of {args.impl} did not return within --call-timeout "
                          f"{args.call_timeout:g} s: the check was stopped (raise --call-timeout for a slow "
                          "implementation, or check it for a hang)", file=sys.stderr)
                    return 2
                if args.progress and now - last_report >= args.progress:
                    last_report = now
                    print(f"nsv check: {calls} call(s) of {args.impl} in {now - started:.0f} s"
                          + (f"; call {calls}{case} running for {now - since:.0f} s" if running else ""),
                          file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            child.kill()
            child.wait()
            print("nsv check: interrupted", file=sys.stderr)
            return 130
        calls, _, state = _read_progress(progress)
        try:
            with open(result) as f:
                return int(f.read())
        except (OSError, ValueError):
            how = f"signal {-child.returncode}" if child.returncode < 0 else f"exit status {child.returncode}"
            running, case = _running(state)
            where = f"in call {calls}{case}" if running else "outside any call (at import or between calls)"
            print(f"nsv check: error: the implementation ended the checking process ({how}, {where}) before a "
                  "result: os._exit at import, an abort or a crash in its code; nothing was checked", file=sys.stderr)
            return 2


def _running(state):
    """(whether a call is running, " (its input in words)" or "")."""
    words = state.split(None, 1)
    running = bool(words) and words[0] == "running"
    return running, f" ({words[1]})" if running and len(words) > 1 else ""


def _case_words(args):
    """The input of a call in a few words, for the progress line: a kernel's matrix or batch, a TP
    function's layout."""
    first = args[0] if args else None
    spec = args[1] if len(args) > 1 else None
    if hasattr(first, "shape"):
        shape = tuple(first.shape)
        return ("G " + "x".join(map(str, shape)) if len(shape) == 2 else
                f"a batch of {shape[0]} x " + "x".join(map(str, shape[1:])))
    if all(hasattr(spec, a) for a in ("rows", "cols", "tp", "axis")):
        return (f"{spec.rows}x{spec.cols} on tp {spec.tp}, axis {spec.axis}"
                + (f", dp {spec.dp}" if getattr(spec, "dp", None) else ""))
    return ""


def _read_progress(path):
    try:
        with open(path, "rb") as f:
            calls, since, state = f.read(_RECORD).decode().split(None, 2)
        return int(calls), float(since), state.strip()
    except (OSError, ValueError):
        return 0, 0.0, "idle"


class _Watched:
    """Every call of fn recorded in the progress file (the parent's --call-timeout and --progress read it)."""

    def __init__(self, folder):
        self.fd = os.open(os.path.join(folder, "progress"), os.O_WRONLY)
        self.calls = 0

    def record(self, state):
        line = f"{self.calls} {time.monotonic():.3f} {state}".encode()[:_RECORD]
        os.pwrite(self.fd, line.ljust(_RECORD), 0)

    def wrap(self, fn):
        @functools.wraps(fn)
        def call(*a, **k):
            self.calls += 1
            self.record(f"running {_case_words(a)}")
            try:
                return fn(*a, **k)
            finally:
                self.record("idle")
        return call


def _child_main(args):
    """The check itself, in the supervised child; its status goes to the result file only when it ran to the end."""
    # K8 hands the implementation NaN, Inf and overflowing inputs on purpose: numpy's warnings
    # about them are expected, not news.
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends the child at once; the parent reports it
    if args.json:
        # Standard output holds the JSON alone: from here to the end of the child (the user's module,
        # its calls, the rank processes it starts, its exit handlers) descriptor 1 is standard error,
        # and the JSON goes to the real standard output, kept aside.
        sys.stdout.flush()
        json_out = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)
    status, result = _run_check(args)
    if result is not None and args.json:
        with json_out:
            json_out.write(_strict_json.dumps(result.to_dict(), indent=2) + "\n")
    elif result is not None:
        print(result)
    sys.stdout.flush()
    with open(os.path.join(args._child, "result"), "w") as f:
        f.write(str(status))
    return status


def _run_check(args):
    """(exit status, the result object; None when the check could not run, the reason on stderr)."""
    try:
        record, given = check_settings(args)
        if record == "optimizer":  # the factory runs on the ranks, each step within --timeout
            import nsverify.torch as torch_checks
            result = torch_checks.run_from_cli(dict(given, impl=args.impl, params=args.params, config=args.config,
                                                      layers=args.layers, reference_impl=args.reference_impl))
            return EXIT_STATUS[result.verdict], result
        # Each call recorded for the supervisor (time limit, progress, exits). A torch TP function runs
        # in rank processes, which look it up by module and name (the unwrapped function) and have
        # their own per-case time limit.
        fn = _Watched(args._child).wrap(load_function(args.impl))
        if record.startswith("torch_") or record == "optimizer":
            import nsverify.torch as framework  # ImportError says how to install torch
        else:
            framework = nsverify
        check = {"kernel": framework.check_kernel, "torch_kernel": framework.check_kernel, "tp": framework.check_tp,
                 "torch_tp": framework.check_tp}[record]
        result = check(fn, **given)
    except (ValueError, TypeError, ImportError) as e:
        print(f"nsv check: error: {e}", file=sys.stderr)
        return 2, None
    return EXIT_STATUS[result.verdict], result


if __name__ == "__main__":
    sys.exit(main())
