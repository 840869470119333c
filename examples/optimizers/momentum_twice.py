"""Wrong: the momentum buffer advanced twice per optimizer step with the same gradient.

DeepSpeed issue #8443 (fixed by PR #8600): under ZeRO-3 with gradient_accumulation_steps n "the momentum
buffer is advanced n times per step". Here n = 2 with the step's gradient both times: the buffer is
beta^2 m + (1 - beta^2) g instead of beta m + (1 - beta) g.

The defect is in the algorithm, not in the tensor parallelism: caught against the correct Muon
(reference gather_tp_muon.py), not against itself at tp = 1. The one defect against gather_tp_muon.py:
`advance_momentum` runs twice.
Diagnosis it must get: "momentum advanced twice" (the momentum state differs from one EMA step).
Claim: fails exact against the correct reference.
"""

from .gather_tp_muon import GatherTpMuon


class MomentumTwiceMuon(GatherTpMuon):
    def advance_momentum(self, buffer, grad, group):
        super().advance_momentum(buffer, grad, group)
        return super().advance_momentum(buffer, grad, group)


def make_optimizer(named_params, ctx):
    return MomentumTwiceMuon(named_params, ctx)
