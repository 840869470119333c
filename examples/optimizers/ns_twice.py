"""Wrong: Newton-Schulz applied twice per optimizer step.

DeepSpeed issue #8443 (fixed by PR #8600): under ZeRO-3 Muon ran inside the gradient reduce, once per
micro-batch; with gradient_accumulation_steps 4 the issue counts 16 Newton-Schulz calls where 4 were due,
and the weights 1e-1 away from the ZeRO-2 run's. Here the simplest form of a second orthogonalization in a step: NS of
the first NS's output (Keller's quintic does not converge to the polar factor, its singular values land in
about [0.7, 1.2], so a second pass moves them again).

The defect is in the algorithm, not in the tensor parallelism: the optimizer is the same at every tp, so it
passes a comparison with itself at tp = 1 and is caught against the correct Muon (reference
gather_tp_muon.py, single_device.py's update at tp = 1).
The one defect against gather_tp_muon.py: `newton_schulz` runs twice.
Diagnosis it must get: "NS run twice" (NS of NS).
Claim: fails exact against the correct reference.
"""

from .gather_tp_muon import GatherTpMuon


class NsTwiceMuon(GatherTpMuon):
    def newton_schulz(self, X):
        return super().newton_schulz(super().newton_schulz(X))


def make_optimizer(named_params, ctx):
    return NsTwiceMuon(named_params, ctx)
