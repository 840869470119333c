"""Wrong: no Newton-Schulz on TP-split parameters; their momentum is applied as the update.

DeepSpeed issue #8441 ("Muon runs no Newton-Schulz at ZeRO stage 0 ... the plainest Muon config trains
with SGD"; "There is no error, no warning, and the loss goes down"), and the rule behind it that issue
#8461 quotes: `MuonWithAuxAdam.step` decides by shape whether it was handed a matrix to orthogonalize or a
partition "the gradient already holds the update" for. Here the same test on a TP shard: a tensor whose
shape is not the matrix's is taken as already orthogonalized, so every TP-split matrix steps with
momentum SGD, and the same matrices take Muon at tp = 1.

The one defect against gather_tp_muon.py: `orthogonalize` returns the momentum direction for a shard.
Diagnosis it must get: "NS skipped" (the update is the Nesterov momentum).
Claim: fails exact.
"""

from .gather_tp_muon import GatherTpMuon


class NsSkippedMuon(GatherTpMuon):
    def orthogonalize(self, direction, spec):
        if tuple(spec.local_shape) != tuple(spec.shape):
            return direction
        return super().orthogonalize(direction, spec)


def make_optimizer(named_params, ctx):
    return NsSkippedMuon(named_params, ctx)
