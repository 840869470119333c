"""nsverify.torch.check_optimizer on ranks an outside launcher started (torchrun, one machine or several):

    torchrun --nproc-per-node N*D -m nsverify.torch.launch FILE.py:FACTORY (--params PARAMS.json |
        --config MODEL.json [--layers L]) --tp N [--dp D] [--dp-partition zero|fsdp] [--steps S]
        [--claim exact|rounding|none] [--layout plain|megatron|deepspeed] [--seed S] [--max-success K]
        [--timeout T] [--backend gloo] [--json]

(torch 1.13: python3 -m torch.distributed.run --nproc_per_node ...). Each launched process is one rank:
it joins the launcher's world (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; env://), which must be tp x dp.

Design. Every process runs the same check_optimizer, with an executor (LaunchExecutor) in place of the
rank pools: a run of the factory is served on the processes of its world, then every reply is
all-gathered (all_gather_object) to every process, so that every process holds the same data, takes
the same decisions (draws, shrinking, control, diagnosis) and computes the same result; rank 0 prints it.
The worlds are subgroups of the launched one:
  "tp"   every process, mesh rank = global rank (d * tp + t), its TP and DP groups as in the pools;
  "ref"  global ranks 0..dp-1 (a tp = 1 mesh: each holds its DP piece of the full matrix), the others idle
         in the gather. Unlike the pools' reference world of its own, the default group is the launched
         world here: a factory that asks dist.get_world_size() without a group sees N*D in the reference
         too, so factories should use ctx's groups.
A rank that raises (SystemExit included) fails the run with every rank's message. A rank that hangs or dies
is not isolated as in the pools: the others wait in the gather until the group's timeout (--timeout), and
the launcher then ends the job. The exit status is 0 when the check passes, 1 otherwise (on every rank).
"""

import argparse
import datetime
import sys

from .. import _strict_json
from .._records import DEFAULTS, FIELDS, settings
from ..cli import settings_flags
from ._optimizer import run_from_cli
from ._optimizer_worker import Loader, mesh_groups, serve
from ._pool import RankFailure


class LaunchExecutor:
    """The two worlds on the launched processes (see the module's doc)."""

    def __init__(self, torch, dist, tp, dp):
        self.torch, self.dist, self.load = torch, dist, Loader()
        self.rank, self.size = dist.get_rank(), dist.get_world_size()
        if self.size != tp * dp:
            raise SystemExit(f"nsverify.torch.launch: the launcher started {self.size} processes; --tp {tp} x --dp {dp} "
                             f"needs {tp * dp}")
        self.groups = {"tp": mesh_groups(dist, tp, dp, list(range(self.size)), self.rank, whole=dist.group.WORLD),
                       "ref": mesh_groups(dist, 1, dp, list(range(dp)), self.rank)}
        self.failed = 0

    def run(self, world, jobs):
        g = self.groups[world]
        reply = serve(self.torch, self.dist, jobs[g.mesh_rank], g, self.load) if g is not None else None
        gathered = [None] * self.size
        self.dist.all_gather_object(gathered, reply)
        replies = gathered[:len(jobs)]
        if all(r["kind"] == "ok" for r in replies):
            return replies
        self.failed += 1
        raise RankFailure("raised", "; ".join(f"rank {r}: " + ("returned" if rep["kind"] == "ok" else rep["message"])
                                              for r, rep in enumerate(replies)) + f" ({world} world of the launched ranks)")

    def stats(self):
        return dict(failed_runs=self.failed, slowest_failed_run_s=None, restarts=0)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m nsverify.torch.launch", description=__doc__.split("\n\n")[0])
    ap.add_argument("impl", help="FILE.py:FACTORY, the make_optimizer(named_params, ctx) under test")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--params", help="a JSON file: a list of Param keyword dicts")
    src.add_argument("--config", help="a Hugging Face config.json (Param.from_config)")
    ap.add_argument("--layers", type=int, default=1)
    settings_flags(ap, kinds=("optimizer",))
    next(action for action in ap._actions if action.dest == "tp").required = True
    ap.add_argument("--json", action="store_true", help="print the result as strict JSON (rank 0; NaN and infinities "
                                                        "written null and listed in \"non_finite\", nsverify/_strict_json.py)")
    a = ap.parse_args(argv)
    import torch
    import torch.distributed as dist
    given = {k: v for k, v in vars(a).items() if k in FIELDS["optimizer"] and v is not None}
    s = DEFAULTS["optimizer"] | settings("optimizer", **given)
    dist.init_process_group(s["backend"], init_method="env://", timeout=datetime.timedelta(seconds=s["timeout"]))
    ex = LaunchExecutor(torch, dist, s["tp"], s["dp"] or 1)
    args = dict(given, impl=a.impl, _executor=ex)
    args.update(dict(config=a.config, layers=a.layers) if a.config else dict(params=a.params))
    result = run_from_cli(args)
    if ex.rank == 0:
        print(_strict_json.dumps(result.to_dict()) if a.json else result, flush=True)
    return 0 if result else 1


if __name__ == "__main__":
    sys.exit(main())
