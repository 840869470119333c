"""Wrong: the whole matrix's Newton-Schulz, gathered correctly, scaled by the shape of the local shard.

Muon's scale belongs to the matrix (Keller's max(1, rows/cols) ** 0.5 in muon.py's muon_update, Moonlight's
0.2 * sqrt(max(A, B))); taken from the TP shard instead, it changes with tp wherever the shard's aspect
differs from the matrix's: under Keller's rule a row-split tall matrix (gate/up 24 x 16: sqrt(1.5) whole, 1 on
a 12 x 16 shard) and a column-split one (down 16 x 24: 1 whole, sqrt(4/3) on a 16 x 12 shard, o_proj 16 x 16:
1 whole, sqrt(2) on 16 x 8). DeepSpeed's AutoTP scales by the local shape along with its per-shard NS
(DeepSpeed issue #8437); this variant isolates the scale.

The one defect against gather_tp_muon.py: `scale_of` reads spec.local_shape.
Diagnosis it must get: "whole-matrix NS, local-shape scale" (the direction right, the norm off by the
ratio of the two scales) on the matrices whose shard aspect differs.
Claim: fails exact.
"""

from . import muon_math
from .gather_tp_muon import GatherTpMuon


class LocalShapeScaleMuon(GatherTpMuon):
    def scale_of(self, spec):
        return muon_math.update_scale(spec.local_shape, self.scale_rule)


def make_optimizer(named_params, ctx):
    return LocalShapeScaleMuon(named_params, ctx)
