"""Runs of an optimizer factory for nsverify.torch.check_optimizer: the jobs each rank gets, where they
run (a pool of rank processes per world, or the ranks torchrun started), and a run's replies assembled
into full tensors per step.

Two worlds: "tp", the tp x dp mesh under test, and "ref", a world of its own of dp ranks (tp = 1) for the
reference and every hypothesis, so that a factory that asks the default group's size sees the
reference's world size there.
"""

import numpy as np

from ._pool import RankPool
from . import _optimizer_worker


class OptimizerPool(RankPool):
    """A RankPool whose ranks serve optimizer runs (_optimizer_worker.main) on a tp x dp mesh."""
    worker = staticmethod(_optimizer_worker.main)


class PoolExecutor:
    """The two worlds as pools of rank processes on the loopback (each started on its first run, restarted
    after a failure; a run that raises, hangs or dies is a RankFailure within `timeout`)."""

    def __init__(self, factory, tp, dp, backend, timeout, threads):
        self.pools = {"tp": OptimizerPool(factory, tp * (dp or 1), backend, timeout, threads=threads, mesh=(tp, dp or 1)),
                      "ref": OptimizerPool(factory, dp or 1, backend, timeout, threads=threads, mesh=(1, dp or 1))}

    def run(self, world, jobs):
        pool = self.pools[world]
        return pool.run(jobs, [None] * len(jobs), pool.world_size)

    def stats(self):
        pools = self.pools.values()
        return dict(failed_runs=sum(len(p.failures) for p in pools),
                    slowest_failed_run_s=max((f for p in pools for f in p.failures), default=None),
                    restarts=sum(max(0, p.restarts - 1) for p in pools))

    def close(self):
        for pool in self.pools.values():
            pool.close()


class Inputs:
    """One draw's full tensors: W_0 and the gradient of each step (1-based), by parameter name."""

    def __init__(self, weights, grads):
        self.weights, self.grads = weights, grads

    def with_shards(self, shard_params, plan):
        """The same inputs with each per-shard stand-in given its TP shard of its parent's tensors."""
        weights, grads = dict(self.weights), dict(self.grads)
        for parent, stand_ins in shard_params.items():
            p = stand_ins[0].parent
            w = plan.shards(p, self.weights[parent])
            g = [plan.shards(p, x) for x in self.grads[parent]]
            for t, q in enumerate(stand_ins):
                weights[q.name] = np.ascontiguousarray(w[t])
                grads[q.name] = [np.ascontiguousarray(x[t]) for x in g]
        return Inputs(weights, grads)


def jobs(plan, params, inputs, steps, factory, layout, is_reference, double_step=False, spec_of=None, full=False):
    """Each mesh rank's job: its tensors (piece or shard) of W_0 and of each step's gradient, its specs."""
    n = plan.tp * (plan.dp or 1)
    held = {p.name: (plan.held(p, inputs.weights[p.name]), [plan.held(p, g) for g in inputs.grads[p.name][:steps]])
            for p in params}
    out = []
    for m in range(n):
        entries = []
        for p in params:
            spec = plan.spec(p, m)
            entries.append(dict(spec=spec_of(p, spec) if spec_of else spec, init=held[p.name][0][m],
                                grads=[g[m] for g in held[p.name][1]], full=inputs.weights[p.name] if full else None))
        out.append(dict(tp=plan.tp, dp=plan.dp, dp_partition=plan.partition if plan.dp else None, entries=entries,
                        steps=steps, factory=factory, layout=layout, is_reference=is_reference,
                        double_step=double_step))
    return out


class Run:
    """A run's replies assembled: per step (0 = W_0) each parameter's full weights, per step (1-based) its
    state tensors by key, each TP rank's shard, every rank's collectives, and where replicated copies differ.

    weights[s][name]   full float32 weights after step s
    shards[s][name]    each TP rank's shard after step s
    states[s][name]    {key: full tensor}, the state tensors of the parameter's shape every rank holds
    state_notes[name]  keys some ranks lack (not compared), in words
    replicated[name]   [(step, [TP ranks whose copy differs from TP rank 0's])]
    calls[s][rank]     the collectives rank issued in step s + 1 ([(name, payload bytes)]); setup_calls[rank]
    """

    def __init__(self, plan, params, inputs, replies, steps):
        self.plan = plan
        self.weights = [{p.name: inputs.weights[p.name] for p in params}]
        self.shards = [{p.name: plan.shards(p, inputs.weights[p.name]) for p in params}]
        self.states, self.state_notes, self.replicated = [{}], {}, {}
        for s in range(steps):
            weights, shards, states = {}, {}, {}
            for p in params:
                tp_shards = plan.tp_shards(p, [r["steps"][s]["values"][p.name] for r in replies])
                weights[p.name], differ = plan.assemble(p, tp_shards)
                shards[p.name] = tp_shards
                if differ:
                    self.replicated.setdefault(p.name, []).append((s + 1, differ))
                states[p.name] = self._states(p, [r["steps"][s]["state"][p.name] for r in replies],
                                              [r["steps"][s]["values"][p.name] for r in replies])
            self.weights.append(weights)
            self.shards.append(shards)
            self.states.append(states)
        self.calls = [[r["steps"][s]["calls"] for r in replies] for s in range(steps)]
        self.setup_calls = [r["setup_calls"] for r in replies]

    def _states(self, p, per_rank, values):
        keys = sorted({k for st in per_rank for k in st})
        out = {}
        for key in keys:
            # an empty piece (a zero-width shard) may have no state: its elements are none of the tensor's
            held = [st.get(key, np.zeros(v.shape, np.float32) if v.size == 0 else None) for st, v in zip(per_rank, values)]
            missing = [m for m, h in enumerate(held) if h is None]
            if missing:
                self.state_notes.setdefault(p.name, set()).add(f"{key!r} missing on mesh ranks {missing}")
                continue
            out[key] = self.plan.assemble(p, self.plan.tp_shards(p, held))[0]
        return out

