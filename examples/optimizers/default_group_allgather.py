"""Wrong: Keller's round-robin parameter all-gather on the default group, under tensor parallelism.

Keller Jordan's distributed Muon (github.com/KellerJordan/Muon, muon.py, `Muon.step` and
`MuonWithAuxAdam.step`) spreads the Muon parameters round-robin over the ranks and then shares each updated
parameter with `dist.all_gather(params_pad[base_i:base_i + world_size], params_pad[base_i + rank])` on the
default group: rank i % world_size's copy of parameter i overwrites every other rank's. That is right for
data-parallel replicas, which hold the same tensor, and wrong for TP ranks, which hold different shards of
it: after a step every rank holds the owner's shard (with two TP ranks, both ranks hold identical shards).

Here the update itself is gather_tp_muon.py's, correct on every rank, and the one defect is Keller's
synchronization after it, on the default group. (gloo's all_gather takes tensors of one size, so Keller's
all_gather into the parameters themselves could not run on uneven shards; here the flat tensors are padded
to the whole matrix's size, and the overwrite happens at every layout: a longer source's head, or a
shorter one's zero padding.)

Diagnosis it must get: "shard overwritten by another rank's" (identical shards across TP ranks).
Claim: fails exact (at dp = 1 the default group is the TP group).
"""

import math

import torch
import torch.distributed as dist

from . import tp_comm
from .gather_tp_muon import GatherTpMuon


class DefaultGroupAllGatherMuon(GatherTpMuon):
    @torch.no_grad()
    def step(self, closure=None):
        loss = super().step(closure)
        world = dist.get_world_size()
        muon = [p for g in self.param_groups if g["use_muon"] for p in g["params"]]
        for i, p in enumerate(muon):
            whole = math.prod(self.spec_of[p].shape)
            copies = tp_comm.all_gather_flat(p.reshape(-1), [whole] * world, group=None)
            p.copy_(copies[i % world][:p.numel()].reshape(p.shape))
        return loss


def make_optimizer(named_params, ctx):
    return DefaultGroupAllGatherMuon(named_params, ctx)
