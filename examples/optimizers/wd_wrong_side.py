"""Wrong: decoupled weight decay applied after the update, W <- (W - lr U)(1 - lr wd), instead of before.

Keller Jordan's muon.py (`p.mul_(1 - lr * weight_decay)` then `p.add_(update, alpha=-lr)`) and Moonlight's
step ("apply weight decay", then "apply update", MoonshotAI/Moonlight issue #22 quotes it) decay the
weight the update has not touched yet. Decaying afterwards also shrinks the update by (1 - lr wd): each
step ends lr^2 wd U away from the right weights. No public report of this order was found: a seeded defect.

The defect is in the algorithm, not in the tensor parallelism: caught against the correct Muon
(reference gather_tp_muon.py). The one defect against gather_tp_muon.py: `apply_update`'s order (for the
AdamW parameters as well, which share it).
Diagnosis it must get: "weight decay applied after the update" (the weights off by lr^2 wd U; the update
itself right) on the Muon matrices; on the AdamW norms, whose lr wd U lies below float32 rounding, "not
distinguishable" (they still fail exact).
Claim: fails exact against the correct reference (the difference is lr wd = 0.2% of the step at lr 0.02,
wd 0.1: small, but no rounding; the AdamW-routed norms differ too, which fails "rounding" as well).
"""

from .gather_tp_muon import GatherTpMuon


class WdWrongSideMuon(GatherTpMuon):
    def apply_update(self, param, update, lr, weight_decay):
        param.add_(update.reshape(param.shape), alpha=-lr)
        param.mul_(1 - lr * weight_decay)


def make_optimizer(named_params, ctx):
    return WdWrongSideMuon(named_params, ctx)
