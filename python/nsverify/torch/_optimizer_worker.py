"""One rank of nsverify.torch.check_optimizer: the user's optimizer factory run for some steps on this
rank's parameters, with the gradients the checker hands it.

A run (`run_job`) presents each local tensor as a parameter (layout "plain", "megatron", "deepspeed" or
the user's callable), calls make_optimizer(named_params, ctx), and for each step sets every .grad,
calls step() with torch.distributed's collectives recorded (_worker.Recorder), and reads back every
parameter and the optimizer's state tensors of the parameter's shape. The same function serves the
rank processes of the check's pools (`main`, started by _pool.RankPool with this module as its worker)
and the processes torchrun starts (nsverify.torch.launch).
"""

import time
import types

from .._exits import exits_as_failures
from . import _worker


class RunError(RuntimeError):
    """What went wrong on this rank outside the user's code (a shape the run does not hold, ...)."""


def mesh_groups(dist, tp, dp, members, rank, whole=None):
    """The groups of a tp x dp mesh on the global ranks `members` (mesh rank d * tp + t = members[i]):
    (group, tp_group, dp_group, mesh rank) of `rank`, or None where it is not a member. Every process of
    the default group calls it with the same arguments (dist.new_group is collective)."""
    group = whole if whole is not None else dist.new_group(list(members))
    tps = [dist.new_group([members[d * tp + t] for t in range(tp)]) for d in range(dp)]
    dps = [dist.new_group([members[d * tp + t] for d in range(dp)]) for t in range(tp)]
    if rank not in members:
        return None
    m = list(members).index(rank)
    return types.SimpleNamespace(group=group, tp_group=tps[m // tp], dp_group=dps[m % tp], mesh_rank=m)


def gather_full(torch, dist, shard, spec, ctx):
    """The whole parameter from every TP rank's shard (uneven and zero-width shards padded to the longest
    for gloo's equal-size all_gather, then placed at their ranges): DeepSpeed's gather_params."""
    sizes = [int(torch.tensor(s).prod()) for s in spec.local_shapes]
    buf = torch.zeros(max(1, max(sizes)), dtype=shard.dtype)
    buf[:shard.numel()] = shard.detach().reshape(-1)
    out = [torch.empty_like(buf) for _ in sizes]
    dist.all_gather(out, buf, group=ctx.tp_group)
    full = torch.empty(spec.shape, dtype=shard.dtype)
    for t, (g, n) in enumerate(zip(out, sizes)):
        block, offset = g[:n].reshape(spec.local_shapes[t]), 0
        for b, e in spec.ranges[t]:
            full.narrow(spec.split, b, e - b).copy_(block.narrow(spec.split, offset, e - b))
            offset += e - b
    return full


def local_of(torch, full, spec, tp_rank):
    """This TP rank's shard of a whole parameter: its ranges along the split axis, concatenated (none: zero-width)."""
    pieces = [full.narrow(spec.split, b, e - b) for b, e in spec.ranges[tp_rank]]
    return torch.cat(pieces, dim=spec.split).contiguous() if pieces else full.new_zeros(spec.local_shapes[tp_rank])


def present(torch, dist, layout, local, full, spec, ctx):
    """This rank's tensor as the nn.Parameter the optimizer gets, in `layout`'s presentation."""
    if callable(layout):
        p = layout(torch.from_numpy(full.copy()), spec, ctx)
        if not isinstance(p, torch.nn.Parameter):
            raise RunError(f"layout({spec.name!r}) returned {type(p).__name__}, not a torch.nn.Parameter")
        if tuple(p.shape) != tuple(local.shape):
            raise RunError(f"layout({spec.name!r}) returned shape {tuple(p.shape)}; this rank holds {tuple(local.shape)}")
        if not torch.equal(p.detach().float().cpu(), torch.from_numpy(local)):
            raise RunError(f"layout({spec.name!r}) returned a parameter whose values are not this rank's "
                           f"{'piece' if spec.piece else 'shard'} of the full tensor")
        return p
    p = torch.nn.Parameter(torch.from_numpy(local.copy()))
    split = spec.split is not None and ctx.tp > 1
    if layout == "megatron":
        # Megatron-Core's tensor_parallel/layers.py: set_tensor_model_parallel_attributes(tensor, True, dim, 1) on
        # split weights; set_defaults_if_not_set_tensor_model_parallel_attributes (False, -1, 1) on the others.
        p.tensor_model_parallel = split
        p.partition_dim = spec.split if split else -1
        p.partition_stride = 1
    elif layout == "deepspeed" and split:
        # DeepSpeed AutoTP's TensorParallel_Layer.config_tp_params (deepspeedai/DeepSpeed,
        # deepspeed/module_inject/layers.py at b93244d): the weight of a replaced module gets
        # tensor_model_parallel and ds_is_replaced_module, and the layer's gather_params / _tp_partition
        # (the whole weight into .data, the old shard kept as .data_partition; and back). Here they
        # gather on ctx.tp_group, uneven shards included; with dp they are absent (a piece has no gather).
        p.tensor_model_parallel = True
        p.ds_is_replaced_module = True
        if not ctx.dp_partition:
            def gather_params(params_list):
                with torch.no_grad():
                    for q in params_list:
                        q.data_partition = q.data
                        q.data = gather_full(torch, dist, q.data, ctx.specs[names[id(q)]], ctx)

            def tp_partition(params_list):
                with torch.no_grad():
                    for q in params_list:
                        q.data = local_of(torch, q.data, ctx.specs[names[id(q)]], ctx.tp_rank)
            names = ctx._names
            p.gather_params, p._tp_partition = gather_params, tp_partition
    return p


def state_tensors(torch, opt, p):
    """The optimizer's state tensors of p's shape ({key: numpy}), read from opt.state[p] where it has one."""
    state = getattr(opt, "state", None)
    try:
        entry = state.get(p) if state is not None else None
    except TypeError:
        entry = None
    if not isinstance(entry, dict):
        return {}
    return {str(k): read(torch, v) for k, v in sorted(entry.items(), key=lambda kv: str(kv[0]))
            if torch.is_tensor(v) and tuple(v.shape) == tuple(p.shape)}


def read(torch, t):
    """A tensor's values as numpy: float64 kept, every other float dtype widened to float32 (exactly)."""
    t = t.detach().cpu()
    return (t if t.dtype == torch.float64 else t.float()).numpy().copy()


def run_job(torch, dist, job, groups, load):
    """One rank's run of a factory (the reply the checker reads): per step the parameters, state and calls."""
    ctx = types.SimpleNamespace(tp=job["tp"], dp=job["dp"] or 1, dp_partition=job["dp_partition"],
                                rank=groups.mesh_rank, world_size=job["tp"] * (job["dp"] or 1),
                                tp_rank=groups.mesh_rank % job["tp"], dp_rank=groups.mesh_rank // job["tp"],
                                tp_group=groups.tp_group, dp_group=groups.dp_group, group=groups.group,
                                is_reference=job["is_reference"],
                                specs={e["spec"]["name"]: types.SimpleNamespace(**e["spec"]) for e in job["entries"]})
    ctx._names = {}
    layout = load(job["layout"]) if isinstance(job["layout"], dict) else job["layout"]
    named = []
    for e in job["entries"]:
        p = present(torch, dist, layout, e["init"], e.get("full"), ctx.specs[e["spec"]["name"]], ctx)
        ctx._names[id(p)] = e["spec"]["name"]
        named.append((e["spec"]["name"], p))
    recorder = _worker.Recorder(dist)
    start = time.perf_counter()
    with recorder:
        opt = load(job["factory"])(list(named), ctx)
    setup_s = time.perf_counter() - start  # the factory's time (tools/bench/optimizer_check.py reads it)
    if not (callable(getattr(opt, "step", None)) and callable(getattr(opt, "zero_grad", None))):
        raise RunError(f"make_optimizer returned {type(opt).__name__}, which has no step() and zero_grad()")
    setup_calls, steps = recorder.calls, []
    for s in range(job["steps"]):
        opt.zero_grad()
        grads = [torch.from_numpy(e["grads"][s]).reshape(p.shape).to(p.dtype) for (_, p), e in zip(named, job["entries"])]
        for (_, p), g in zip(named, grads):
            p.grad = g.clone()
        recorder = _worker.Recorder(dist)
        start = time.perf_counter()
        with recorder:
            if job.get("double_step"):  # hypothesis (8): the state advanced twice, the weights once
                saved = [p.detach().clone() for _, p in named]
                opt.step()
                with torch.no_grad():
                    for (_, p), w, g in zip(named, saved, grads):
                        p.copy_(w)
                        p.grad = g.clone()
            opt.step()
        step_s = time.perf_counter() - start  # the optimizer's step() alone, collectives included
        values, state = {}, {}
        for (name, p), e in zip(named, job["entries"]):
            if tuple(p.shape) != tuple(e["init"].shape):
                raise RunError(f"after step {s + 1}, {name!r} has shape {tuple(p.shape)}; this rank holds "
                               f"{tuple(e['init'].shape)} (the optimizer replaced the parameter's data)")
            values[name] = read(torch, p)
            state[name] = state_tensors(torch, opt, p)
        steps.append(dict(values=values, state=state, calls=recorder.calls, step_s=step_s))
    return dict(kind="ok", steps=steps, setup_calls=setup_calls, setup_s=setup_s,
                calls=[c for step in steps for c in step["calls"]])


def serve(torch, dist, job, groups, load):
    """run_job, with whatever the user's code raised (sys.exit and os._exit included: a failure, not an exit) as
    the reply."""
    start = time.perf_counter()
    try:
        with exits_as_failures():
            return run_job(torch, dist, job, groups, load)
    except Exception as e:  # noqa: BLE001 - what the rank raised is the run's failure
        return _worker.raised_reply(e, [], start)


class Loader:
    """The user's functions (factories, a layout callable) from their references, each loaded once."""

    def __init__(self):
        self.cache = {}

    def __call__(self, ref):
        key = (ref["pickled"], ref["by_value"], ref["module"], ref["qualname"], ref["file"])
        if key not in self.cache:
            self.cache[key] = _worker.load_function(ref)
        return self.cache[key]


def main(rank, world_size, port, conn, caller, settings, fn_ref):
    """The rank process of check_optimizer's pools (the protocol of _pool.RankPool: a ready message, then one
    reply per job; `fn_ref` the factory, loaded at start so that a factory the ranks cannot load fails there)."""
    load = Loader()

    def loaded():
        import torch
        load(fn_ref)
        return torch

    def make_groups(dist):
        tp, dp = settings["mesh"]
        return mesh_groups(dist, tp, dp, list(range(world_size)), rank, whole=dist.group.WORLD)

    def serve_job(dist, torch, groups, message):
        job, _, _ = message
        return serve(torch, dist, job, groups, load)

    _worker.run_rank(rank, world_size, port, conn, caller, settings, loaded, make_groups, serve_job)
