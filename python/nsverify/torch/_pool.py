"""The ranks of nsverify.torch.check_tp: world_size processes forming a torch.distributed process group
on the loopback, started once per check and reused for every case.

Processes are started by multiprocessing's forkserver with torch preloaded (a rank starts in well
under a second, so the pool can be restarted after a failure without making shrinking slow); the
forkserver itself (and multiprocessing's resource tracker) stays while the caller runs (``shutdown()``
ends them, and they end with the caller).

A case is sent to the ranks that take part (all of them at tp = world size, rank 0 alone at
tp = 1) and waited for up to the per-case time limit. Whatever goes wrong on a rank becomes a
RankFailure naming every rank's state: what a rank raised, a rank that did not answer in time (a
collective another rank never entered, a deadlock, a loop), a rank whose process died (an abort
inside the collective library: the others then see "connection reset"), with the tail of its
stderr. After a failure the ranks are killed and a fresh group is started for the next case,
unless every rank answered having issued the same collectives (nothing left in flight).

The user's function reaches the ranks as function_ref sends it: by reference (each rank imports its
module) where it lives in a module the ranks can import, by value (cloudpickle) where it does not: a
function of __main__ (a script, a REPL, a notebook cell, standard input), a lambda, a closure. The
caller's __main__ is never run on a rank, so a script without a main guard runs its top level once.
"""

import atexit
import contextlib
import functools
import importlib.util
import inspect
import io
import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import multiprocessing.spawn
import os
import pickle
import shutil
import signal
import socket
import sys
import tempfile
import time
import weakref

from . import _worker

#: Seconds a failing case still waits for the other ranks' own messages ("connection reset", ...).
GRACE_S = 1.0
#: The longest single wait while a case runs (the deadline is checked between waits).
POLL_S = 0.5
_PRELOAD = ["torch", "torch.distributed", "nsverify.torch._worker", "nsverify.torch._tensors"]
_LIVE = weakref.WeakSet()


class RankFailure(RuntimeError):
    """A case the ranks did not complete. kind: "raised" | "hung" | "died"; the message names each rank's state."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


class RankStartError(ValueError):
    """The ranks could not start (the function cannot be loaded on them, the backend is missing, ...)."""


def function_ref(fn):
    """How a rank finds the user's callable fn (read by _worker.load_function). By reference where the rank can
    import it: plain pickle (a module's function, a picklable object of a module's classes), else its module and
    qualified name (a file loaded by path under its own name, nsv check --impl FILE.py:FUNC: its folder is on
    the rank's sys.path). By value (cloudpickle: its code and what it closes over and uses) where it cannot: a
    function of __main__ (a script, a REPL, a notebook, standard input), a lambda, a closure. A rank never runs
    the caller's __main__. RankStartError, naming what to change, where fn can be sent neither way."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    ref = dict(pickled=None, by_value=None, module=module, qualname=qualname or repr(fn), file=None,
               sys_path=list(sys.path))
    try:
        buffer = io.BytesIO()
        _NoMainPickler(buffer).dump(fn)
        ref["pickled"] = buffer.getvalue()
        return ref
    except Exception:  # noqa: BLE001 - not by plain pickle: by name or by value
        pass
    if _named_in_module(fn):
        try:
            ref["file"] = inspect.getsourcefile(fn)
        except TypeError:
            pass
        return ref
    ref["by_value"] = _by_value(fn, _display(fn))
    return ref


class _NoMainPickler(pickle.Pickler):
    """Plain pickle refusing what it would send as a reference into __main__: the ranks do not run the caller's
    __main__, so such a reference (a function, a class, an instance of one) would not resolve there."""

    def reducer_override(self, obj):
        try:
            in_main = getattr(obj, "__module__", None) == "__main__"
        except Exception:  # noqa: BLE001 - an object whose attributes raise: let pickle judge it
            in_main = False
        if in_main:
            raise pickle.PicklingError(f"{obj!r} is defined in __main__")
        return NotImplemented


def _named_in_module(fn):
    """Whether a rank can find fn as module.qualname: a function or class named at a module's top level (or in a
    class), its module neither __main__ nor unknown, and importable by name."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not (inspect.isfunction(fn) or inspect.isclass(fn) or inspect.isbuiltin(fn)) or not module or not qualname:
        return False
    if module == "__main__" or "<" in qualname:  # "<locals>", "<lambda>": no name to look up
        return False
    try:
        return module in sys.modules or importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _by_value(fn, name):
    """fn pickled by value (cloudpickle); RankStartError saying what to change where it cannot be."""
    try:
        import cloudpickle
    except ImportError:
        raise RankStartError(f"{name} cannot be imported on the ranks (it is defined in __main__, or is a lambda or "
                             f"a closure), and sending it by value needs cloudpickle: apt-get install "
                             f"python3-cloudpickle (or pip install cloudpickle), or move {name} to a module the ranks "
                             f"can import") from None
    try:
        return cloudpickle.dumps(fn)
    except Exception as e:  # noqa: BLE001 - whatever cloudpickle refuses: the message names the culprit
        raise RankStartError(_unsendable(fn, name, e, cloudpickle)) from e


def _display(fn):
    """fn's name in messages: its qualified name from its innermost defining function on, a partial's function's,
    else its class's."""
    if isinstance(fn, functools.partial):
        return f"partial({_display(fn.func)})"
    qualname = getattr(fn, "__qualname__", None)
    return qualname.rsplit("<locals>.", 1)[-1] if qualname else f"the {_type_name(fn)} object"


def _type_name(value):
    t = type(value)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _held(fn):
    """What a callable carries to the ranks by value, as (how, name, value): a function's closure, the globals its
    code names (nested code included) and its defaults; a method's object; a partial's function and arguments;
    another object's attributes."""
    if inspect.ismethod(fn):
        yield "is a method of", "", fn.__self__
        fn = fn.__func__
    if isinstance(fn, functools.partial):
        yield "is a partial of", "", fn.func
        for i, value in enumerate(fn.args):
            yield "binds the argument", f"#{i + 1}", value
        for var, value in fn.keywords.items():
            yield "binds the argument", var, value
        return
    code = getattr(fn, "__code__", None)
    if code is None:
        for var, value in getattr(fn, "__dict__", {}).items():
            yield "has the attribute", var, value
        return
    for var, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            yield "closes over", var, cell.cell_contents
        except ValueError:  # a cell not filled yet
            pass
    names, codes = [], [code]
    while codes:
        c = codes.pop()
        names += [n for n in c.co_names if n not in names]
        codes += [k for k in c.co_consts if inspect.iscode(k)]
    glob = getattr(fn, "__globals__", {})
    for var in names:
        if var in glob:
            yield "uses the global", var, glob[var]
    defaults = fn.__defaults__ or ()
    for var, value in zip(code.co_varnames[code.co_argcount - len(defaults):code.co_argcount], defaults):
        yield "has the default", var, value
    for var, value in (fn.__kwdefaults__ or {}).items():
        yield "has the default", var, value


def _culprit(fn, cloudpickle, seen):
    """(the callable holding it, how, name, value) of the first thing fn carries that cannot be pickled, looking
    into the callables it carries; None where none is found."""
    seen.add(id(fn))
    for how, var, value in _held(fn):
        try:
            cloudpickle.dumps(value)
        except Exception:  # noqa: BLE001 - this one cannot be sent: look inside a callable, else it is the culprit
            if callable(value) and not isinstance(value, type) and id(value) not in seen:
                deeper = _culprit(value, cloudpickle, seen)
                if deeper:
                    return deeper
            return fn, how, var, value
    return None


_FIXES = {"closes over": "define {var} inside {holder}", "uses the global": "create {var} inside {holder}",
          "has the default": "create {var} inside {holder}", "binds the argument": "create it inside {inner} instead",
          "has the attribute": "create {var} inside the call", "is a method of": "use a plain function"}


def _unsendable(fn, name, error, cloudpickle):
    """What cannot be sent and what to change, for RankStartError."""
    # Moving helps a function only: a method's object, a partial's arguments, an object's attributes would be
    # pickled as they are from a module too.
    move = f", or move {name} to a module the ranks can import" if inspect.isfunction(fn) else ""
    found = _culprit(fn, cloudpickle, set())
    if found is None:
        return (f"{name} cannot be sent to the ranks by value ({type(error).__name__}: {error}): leave out of it what "
                f"cannot be pickled{move}")
    holder, how, var, value = found
    inner = _display(getattr(holder, "func", holder))
    holder = _display(holder)
    kind = _type_name(value)
    what = f"{holder} {how} {var} (a {kind})" if var else f"{holder} {how} a {kind}"
    detail = "" if kind.rsplit(".", 1)[-1] in str(error) else f" ({error})"
    via = f"{name} needs {holder}, and " if holder != name else ""
    fix = _FIXES.get(how, "leave it out").format(var=var or "it", holder=holder, inner=inner)
    return f"{via}{what}, which cannot be sent to the ranks{detail}: {fix}{move}"


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _context():
    """The forkserver context, its server started with one BLAS/OpenMP thread (the ranks share the cores)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(_PRELOAD)
    saved = {v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    os.environ.update({v: "1" for v in saved})
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        for v, old in saved.items():
            if old is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = old
    return ctx


@contextlib.contextmanager
def _without_main():
    """Start processes without re-importing the caller's __main__ in them (what multiprocessing does by
    default, so that a script without an `if __name__ == "__main__"` guard would run again on every rank):
    the ranks need the user's function only, which they load themselves (function_ref)."""
    original = multiprocessing.spawn.get_preparation_data

    def prepared(name):
        data = original(name)
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
        return data
    multiprocessing.spawn.get_preparation_data = prepared
    try:
        yield
    finally:
        multiprocessing.spawn.get_preparation_data = original


def shutdown():
    """End every pool's ranks and the forkserver (which otherwise lives as long as the caller)."""
    for pool in list(_LIVE):
        pool.close()
    server = getattr(multiprocessing.forkserver, "_forkserver", None)
    if server is not None and getattr(server, "_forkserver_pid", None) and hasattr(server, "_stop"):
        server._stop()
    tracker = getattr(multiprocessing.resource_tracker, "_resource_tracker", None)
    if tracker is not None and getattr(tracker, "_pid", None) and hasattr(tracker, "_stop"):
        tracker._stop()


atexit.register(shutdown)


class RankPool:
    """world_size rank processes running fn(shard, spec, group); see the module's doc."""

    #: The rank process's entry point (check_optimizer's pool serves its runs with its own worker).
    worker = staticmethod(_worker.main)

    def __init__(self, fn, world_size, backend="gloo", timeout=10.0, dtype="fp32", input_dtype=None, device="cpu",
                 threads=1, start_timeout=180.0, mesh=None):
        self.world_size = int(world_size)
        # mesh: (tp, dp) of a TP x DP mesh of world_size = tp * dp ranks (fn's `group` is then the mesh's groups)
        self.settings = dict(backend=backend, timeout=float(timeout), dtype=dtype, input_dtype=input_dtype or dtype,
                             device=str(device), threads=int(threads), mesh=mesh)
        self.fn_ref = function_ref(fn)
        self.start_timeout = start_timeout
        self.procs, self.conns = [], []
        self.logs = None
        self.restarts = 0
        self.hang = None  # the message of a case that hung: the diagnosis then fails fast (see check_tp)
        self.failures = []  # seconds from sending each failed case to its RankFailure, time spent frozen excepted
        _LIVE.add(self)

    # ---- lifetime -------------------------------------------------------------------------------

    def start(self):
        ctx = _context()
        for attempt in range(3):
            self.logs = tempfile.mkdtemp(prefix="nsverify-ranks-")
            port = _free_port()
            for rank in range(self.world_size):
                ours, theirs = ctx.Pipe()
                settings = dict(self.settings, stderr=os.path.join(self.logs, f"rank{rank}.stderr"))
                p = ctx.Process(target=self.worker, name=f"nsverify-rank{rank}", daemon=True,
                                args=(rank, self.world_size, port, theirs, os.getpid(), settings, self.fn_ref))
                with _without_main():
                    p.start()
                theirs.close()
                self.procs.append(p)
                self.conns.append(ours)
            problems = self._await_ready()
            if not problems:
                return
            self.close()
            if not any("address already in use" in m.lower() for m in problems) or attempt == 2:
                raise RankStartError(f"the {self.world_size} {self.settings['backend']} ranks could not start: "
                                     + "; ".join(problems))

    def _await_ready(self):
        deadline = time.monotonic() + self.start_timeout
        pending, problems = set(range(self.world_size)), []
        while pending and time.monotonic() < deadline:
            for c in multiprocessing.connection.wait([self.conns[r] for r in pending], deadline - time.monotonic()):
                r = self.conns.index(c)
                pending.discard(r)
                try:
                    reply = c.recv()
                except (EOFError, OSError):
                    reply = dict(kind="failed to start", message=self._death(r))
                if reply["kind"] != "ready":
                    problems.append(f"rank {r}: {reply['message']}")
            if problems:
                break
        if pending and not problems:
            problems.append(f"ranks {sorted(pending)} not ready within {self.start_timeout:g} s")
        return problems

    def close(self):
        """Kill the ranks (the processes this pool started) and forget them; the next case starts fresh ones."""
        for c in self.conns:
            try:
                c.send(None)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 0.5
        for p in self.procs:
            p.join(max(0.0, deadline - time.monotonic()))
        for p in self.procs:
            if p.is_alive():
                p.kill()
            p.join(2.0)
        for c in self.conns:
            c.close()
        self.procs, self.conns = [], []
        if self.logs:
            shutil.rmtree(self.logs, ignore_errors=True)
            self.logs = None

    def pids(self):
        return [p.pid for p in self.procs]

    # ---- one case -------------------------------------------------------------------------------

    def run(self, shards, specs, tp):
        """Each rank's reply (a dict, kind "ok") for the case; raises RankFailure when any rank did not complete."""
        if tp not in (1, self.world_size):
            raise ValueError(f"the ranks run tp 1 or tp {self.world_size}, not tp {tp}")
        if not self.procs:
            self.restarts += 1
            self.start()
        ranks = list(range(tp))
        sent = time.monotonic()
        for r in ranks:
            self.conns[r].send((shards[r], specs[r], tp))
        deadline = sent + self.settings["timeout"]
        replies, pending, frozen = {}, set(ranks), 0.0
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            asked, before = min(left, POLL_S), time.monotonic()
            ready = multiprocessing.connection.wait([self.conns[r] for r in pending], asked)
            # Time this process spent stopped or unscheduled (a SIGSTOP of the process tree, a suspended
            # machine) is not the ranks' time: a wait that overran what it asked for by over a second
            # moves the deadline by the overrun, so that a frozen tree is not reported as a hung case.
            overrun = time.monotonic() - before - asked
            if overrun > 1.0:
                deadline += overrun
                frozen += overrun
            for c in ready:
                r = self.conns.index(c)
                pending.discard(r)
                try:
                    replies[r] = c.recv()
                except (EOFError, OSError):
                    replies[r] = dict(kind="died", message=self._death(r), calls=[])
            if any(rep["kind"] != "ok" for rep in replies.values()):
                deadline = min(deadline, time.monotonic() + GRACE_S)
        if not pending and all(rep["kind"] == "ok" for rep in replies.values()):
            return [replies[r] for r in ranks]
        failure = self._failure(replies, pending, tp)
        self.failures.append(time.monotonic() - sent - frozen)
        in_step = not pending and len({tuple(rep.get("calls", ())) for rep in replies.values()}) == 1
        if failure.kind != "raised" or not in_step:
            self.close()
        if failure.kind == "hung":
            self.hang = str(failure)
        raise failure

    def _death(self, rank):
        p = self.procs[rank]
        p.join(1.0)
        code = p.exitcode
        how = (f"killed by {signal.Signals(-code).name}" if code is not None and code < 0 else
               f"exit status {code}" if code is not None else "gone")
        tail = ""
        if self.logs:
            try:
                with open(os.path.join(self.logs, f"rank{rank}.stderr"), errors="replace") as f:
                    text = " ".join(f.read().split())
                tail = f"; its stderr ends: {text[-300:]!r}" if text else ""
            except OSError:
                pass
        return f"its process died ({how}){tail}"

    def _failure(self, replies, pending, tp):
        parts = []
        for r in range(tp):
            rep = replies.get(r)
            if rep is None:
                parts.append(f"rank {r} did not answer within {self.settings['timeout']:g} s (hung: a collective another "
                             f"rank never entered, a deadlock or a loop)")
            elif rep["kind"] == "ok":
                parts.append(f"rank {r} returned")
            elif rep["kind"] == "raised" and rep.get("seconds", 0) >= 0.9 * self.settings["timeout"]:
                parts.append(f"rank {r} waited {rep['seconds']:.1f} s and raised {rep['message']}")
            else:
                parts.append(f"rank {r}: " + ("raised " if rep["kind"] == "raised" else "") + rep["message"])
        kinds = {rep["kind"] for rep in replies.values()}
        # a rank that raised only when the group's own timeout (the case limit) expired was kept waiting
        waited = any(rep["kind"] == "raised" and rep.get("seconds", 0) >= 0.9 * self.settings["timeout"]
                     for rep in replies.values())
        kind = "died" if "died" in kinds else "hung" if pending or waited else "raised"
        group = f"tp {tp} on a {self.world_size}-rank {self.settings['backend']} group"
        return RankFailure(kind, f"{'; '.join(parts)} ({group}, case limit {self.settings['timeout']:g} s)")
