"""Wrong: Muon's matrices routed to AdamW on TP ranks, because the route is decided by the tensor's shape.

DeepSpeed PR #8438 ("Muon is silently disabled under ZeRO-3 when the model is built with zero.Init"):
`set_optimizer_flags` tags `use_muon` by `p.ndim >= 2`, but a partitioned parameter's tensor is not the
layer's shape, so every parameter went to the AdamW branch; "Training runs, the loss falls". The TP form of
the same mistake: a route that checks the parameter is the whole 2-D matrix (`p.ndim == 2 and p.shape ==
spec.shape`, a guard that Muon needs the whole matrix) sends every TP-sharded matrix to AdamW, while at
tp = 1 the same matrices take Muon.

The one defect against gather_tp_muon.py: `uses_muon` reads the local tensor instead of spec.route. Under
data parallelism the pieces are no whole matrix at tp = 1 either (#8438's own case), so the reference is
the correct Muon (gather_tp_muon.py), not this factory at tp = 1.
Diagnosis it must get: "routed to the other group" (AdamW's elementwise update where Muon's was due).
Claim: fails exact.
"""

from .gather_tp_muon import GatherTpMuon


class RoutedToAdamWMuon(GatherTpMuon):
    def uses_muon(self, param, spec):
        return param.ndim == 2 and tuple(param.shape) == tuple(spec.shape)


def make_optimizer(named_params, ctx):
    return RoutedToAdamWMuon(named_params, ctx)
