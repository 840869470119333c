"""One rank of nsverify.torch's process group: the process the pool (_pool.py) starts per rank.

It joins the group on the loopback, creates the groups of tp = world size and tp = 1 (every rank
must call dist.new_group), and then serves cases: the user's fn(shard, spec, group) on this rank's
shard, with torch.distributed's collectives recorded for the duration of the call. It answers
each case with the result (numpy), what fn left in its shard, whether the result shares the
shard's storage, and the collectives; or with what fn raised.

It ends when the pool says so, when the pipe to the pool closes, or when the process that runs
the check is gone (a watchdog thread, and the kernel's parent-death signal: no rank outlives the
check, also when the caller is killed). SIGINT is ignored: Ctrl-C is the caller's, which then
ends its ranks.
"""

import ctypes
import datetime
import importlib
import importlib.util
import os
import pickle
import signal
import sys
import threading
import time
import traceback

from .._exits import exits_as_failures

#: The collectives recorded while fn runs, and which argument carries the tensors this rank hands over
#: (index, keyword): its bytes are the call's payload.
COLLECTIVES = {
    "all_reduce": (0, "tensor"), "all_reduce_coalesced": (0, "tensors"), "all_gather": (1, "tensor"),
    "all_gather_into_tensor": (1, "input_tensor"), "_all_gather_base": (1, "input_tensor"),
    "all_gather_coalesced": (1, "input_tensor_list"), "all_gather_object": (1, "obj"), "reduce_scatter": (1, "input_list"),
    "reduce_scatter_tensor": (1, "input"), "_reduce_scatter_base": (1, "input"), "broadcast": (0, "tensor"),
    "broadcast_object_list": (0, "object_list"), "all_to_all": (1, "input_tensor_list"), "all_to_all_single": (1, "input"),
    "reduce": (0, "tensor"), "gather": (0, "tensor"), "scatter": (1, "scatter_list"), "send": (0, "tensor"),
    "recv": (0, "tensor"), "isend": (0, "tensor"), "irecv": (0, "tensor"), "barrier": (None, None),
}


def _payload(args, kwargs, where):
    index, keyword = where
    if index is None:
        return 0
    value = kwargs.get(keyword, args[index] if len(args) > index else None)
    values = value if isinstance(value, (list, tuple)) else [value]
    return sum(v.element_size() * v.numel() for v in values if hasattr(v, "element_size"))


class Recorder:
    """torch.distributed's collectives wrapped, for the duration of a `with`: each call appended to
    `calls` as (name, payload bytes). Calls through names bound before (``from torch.distributed import
    all_reduce``) are not seen."""

    def __init__(self, dist):
        self.dist = dist
        self.calls = []

    def __enter__(self):
        self.originals = {n: getattr(self.dist, n) for n in COLLECTIVES if hasattr(self.dist, n)}
        for name, f in self.originals.items():
            setattr(self.dist, name, self._wrapped(name, f))
        return self

    def __exit__(self, *exc):
        for name, f in self.originals.items():
            setattr(self.dist, name, f)

    def _wrapped(self, name, f):
        def call(*args, **kwargs):
            self.calls.append((name, _payload(args, kwargs, COLLECTIVES[name])))
            return f(*args, **kwargs)
        call.__wrapped__ = f
        return call


def load_function(ref):
    """The user's callable from the pool's reference (_pool.function_ref): sent by value (cloudpickle's bytes,
    which pickle reads), else unpickled by reference, else imported by module and qualified name, else loaded
    from its module's source file (a module loaded by path, `nsv check --impl FILE.py:FUNC`)."""
    for entry in ref["sys_path"]:
        if entry not in sys.path:
            sys.path.append(entry)
    if ref["by_value"] is not None:
        try:
            return pickle.loads(ref["by_value"])
        except Exception as e:  # noqa: BLE001 - a rank that cannot rebuild it: said with the reason
            raise RuntimeError(f"cannot load {ref['qualname']} on the rank: unpickling it by value (cloudpickle): "
                               f"{e!r}") from e
    errors = []
    if ref["pickled"] is not None:
        try:
            return pickle.loads(ref["pickled"])
        except Exception as e:  # noqa: BLE001 - each way is tried, the errors reported together
            errors.append(f"unpickling: {e!r}")
    module = None
    if ref["module"] and ref["module"] != "__main__":
        try:
            module = importlib.import_module(ref["module"])
        except Exception as e:  # noqa: BLE001
            errors.append(f"import {ref['module']}: {e!r}")
    # Executing the file is importing a module here (function_ref names a file only for a module's function): a
    # __main__ script is never executed on a rank, since its top level is the user's program (its functions travel
    # by value).
    if module is None and ref["file"] and ref["module"] != "__main__":
        try:
            sys.path.insert(0, os.path.dirname(os.path.abspath(ref["file"])))
            spec = importlib.util.spec_from_file_location("_nsverify_user_module", ref["file"])
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except Exception as e:  # noqa: BLE001
            errors.append(f"loading {ref['file']}: {e!r}")
            module = None
    if module is not None:
        obj = module
        try:
            for part in ref["qualname"].split("."):
                obj = getattr(obj, part)
            return obj
        except AttributeError as e:
            errors.append(repr(e))
    raise RuntimeError(f"cannot load {ref['qualname']} on the rank: " + "; ".join(errors))


def _die_with_parent():
    """SIGKILL when the parent (the forkserver, which ends with the caller) dies (Linux)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _watch(caller):
    while True:
        time.sleep(0.5)
        try:
            os.kill(caller, 0)
        except ProcessLookupError:
            os._exit(3)
        except PermissionError:
            pass


def raised_reply(error, calls, start):
    """The pool's reply for what the user's code raised: its type, message and innermost line."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f" (at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    return dict(kind="raised", message=f"{type(error).__name__}: {error}{where}", calls=calls,
                seconds=time.perf_counter() - start)


def serve_case(dist, fn, rank, shard, spec, group, settings):
    """fn on this rank's shard: the reply for the pool."""
    from ._tensors import Observed, numpy_dtype, shares_storage, to_numpy, to_tensor, torch_dtype
    out_dtype = numpy_dtype(settings["dtype"])
    t = to_tensor(shard, torch_dtype(settings["input_dtype"]), settings["device"])
    seen = Observed(t)
    recorder = Recorder(dist)
    start = time.perf_counter()
    try:
        with recorder, exits_as_failures():
            out = fn(t, spec, group)
        result = to_numpy(out, f"rank {rank}'s result", out_dtype)
        after, changed = seen.input_after(shard, out_dtype)
    except Exception as e:  # noqa: BLE001 - what the user's code raised is the case's failure
        return raised_reply(e, recorder.calls, start)
    aliased = out.numel() > 0 and shares_storage(out, seen.span)
    return dict(kind="ok", result=result, shard_after=after if changed else None, changed=changed, aliased=bool(aliased),
                calls=recorder.calls, seconds=time.perf_counter() - start)


def _mesh_groups(dist, rank, world_size, mesh, groups):
    """On a TP x DP mesh (mesh rank d * tp + t): fn's `group` is a namespace of the whole mesh's group (mesh),
    this rank's TP group (tp: the tp ranks of its DP index) and DP group (dp: the dp ranks of its TP index);
    at tp = 1 all three are rank 0's group of one. Every rank creates every group, in the same order."""
    import types
    tp, dp = mesh
    tp_groups = [dist.new_group([d * tp + t for t in range(tp)]) for d in range(dp)]
    dp_groups = [dist.new_group([d * tp + t for d in range(dp)]) for t in range(tp)]
    one = groups[1]
    return {world_size: types.SimpleNamespace(mesh=groups[world_size], tp=tp_groups[rank // tp], dp=dp_groups[rank % tp]),
            1: types.SimpleNamespace(mesh=one, tp=one, dp=one)}


def run_rank(rank, world_size, port, conn, caller, settings, load, make_groups, serve):
    """A rank process's life under the pool's protocol (_pool.RankPool): guarded to end with the caller, its
    stderr in the pool's file, the user's code loaded (`load()`, before the group, so that code the ranks
    cannot load fails at the start), the group joined on the loopback and its subgroups made
    (`make_groups(dist)`), then "ready", then one reply `serve(dist, loaded, groups, message)` per message
    until the pool says stop or the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    if settings.get("stderr"):  # the pool quotes its tail when the process dies
        fd = os.open(settings["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
    threading.Thread(target=_watch, args=(caller,), daemon=True).start()
    try:
        import torch
        import torch.distributed as dist
        torch.set_num_threads(settings["threads"])
        loaded = load()
        # the group's own timeout bounds its start (a loaded machine) as well as its collectives: generous, since
        # the pool ends a case at its time limit itself
        dist.init_process_group(settings["backend"], init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world_size,
                                timeout=datetime.timedelta(seconds=max(120.0, 4 * settings["timeout"])))
        groups = make_groups(dist)
    except Exception as e:  # noqa: BLE001 - reported to the pool, which raises it
        conn.send(dict(kind="failed to start", message=f"{type(e).__name__}: {e}"))
        os._exit(1)
    conn.send(dict(kind="ready"))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            break
        if message is None:
            break
        try:
            conn.send(serve(dist, loaded, groups, message))
        except (BrokenPipeError, OSError):
            break
    # No dist.destroy_process_group(): it waits for ranks that may be gone.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def main(rank, world_size, port, conn, caller, settings, fn_ref):
    def make_groups(dist):
        groups = {world_size: dist.new_group(list(range(world_size))), 1: dist.new_group([0])}
        return _mesh_groups(dist, rank, world_size, settings["mesh"], groups) if settings.get("mesh") else groups

    def serve(dist, fn, groups, message):
        shard, spec, tp = message
        return serve_case(dist, fn, rank, shard, spec, groups[tp], settings)

    run_rank(rank, world_size, port, conn, caller, settings, lambda: load_function(fn_ref), make_groups, serve)
