"""Owner tensor-parallel Muon: each Muon matrix has one owner TP rank (round-robin by its index among the Muon
parameters), which gathers the full momentum, runs Newton-Schulz and scatters each rank its slice back.

The layer-sharded design of Megatron-LM (issue #6676, PR #6683: "each weight gets one NS home ...
all_to_all exchanges assemble the full matrix there, the identical full-matrix NS runs ..., and reverse
exchanges scatter the result back", bit-identical to duplicated mode) and of Paddle's ShardingV3 Muon
(PR #78122: each 2-D parameter owned by one rank, round-robin). It does the NS of gather_tp_muon.py once
per matrix instead of tp times; the bits are the same because the owner runs the same NS on the same
full matrix. Here with gloo's gather and scatter on ctx.tp_group, whose destination and source are global
ranks (this rank's TP group is the mesh row d * tp + t).

Claim: exact, at every tp, even, uneven and zero-width shards, with and without dp.
"""

from . import tp_comm
from .single_device import SingleDeviceMuon


class OwnerTpMuon(SingleDeviceMuon):
    def __init__(self, named_params, ctx, **overrides):
        super().__init__(named_params, ctx, **overrides)
        muon_names = [self.spec_of[p].name for g in self.param_groups if g["use_muon"] for p in g["params"]]
        self.owner_of = {name: i % ctx.tp for i, name in enumerate(muon_names)}

    def orthogonalize(self, direction, spec):
        owner = self.owner_of[spec.name]
        shard = tp_comm.gather_dp_shard(direction, spec, self.ctx)
        full = tp_comm.gather_to_tp_owner(shard, spec, self.ctx, owner)
        update = self.newton_schulz(full) * self.scale_of(spec) if full is not None else None
        mine = tp_comm.scatter_from_tp_owner(update, spec, self.ctx, owner)
        return tp_comm.dp_piece(mine, spec, self.ctx)


def make_optimizer(named_params, ctx):
    return OwnerTpMuon(named_params, ctx)
