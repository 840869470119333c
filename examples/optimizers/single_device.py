"""Muon on one device, AdamW for the rest: the semantics every optimizer of the catalogue is held to.

Keller Jordan's MuonWithAuxAdam (github.com/KellerJordan/Muon, muon.py; DeepSpeed keeps a copy as
deepspeed/runtime/zero/muon/original_muon.py, whose SingleDeviceMuon is the same loop without the
round-robin): two parameter groups, Muon's and AdamW's; for a Muon parameter the momentum, Newton-Schulz of
the whole matrix, the scale of its shape, and the decoupled step W <- W (1 - lr wd) - lr U; for the others
Adam's bias-corrected direction and the same step at AdamW's learning rate. Which parameters take Muon is
ctx.specs[name].route ("muon" | "adamw"), decided by whoever sharded the model (1-D norms go to AdamW).

Correct at tp = 1 only: it orthogonalizes whatever tensor a rank holds, so on a TP shard it is the
per-shard defect (per_shard_muon.py). Every other optimizer of the catalogue is this class with its
orthogonalization (or one other step) replaced: the steps are methods so that each variant overrides
exactly the one it changes.
"""

import torch

from . import muon_math

#: The hyperparameters of every optimizer in the catalogue (Muon's group: Keller's defaults but for a weight decay
#: of 0.1, so that the order of decay and update shows; AdamW's group: MuonWithAuxAdam's defaults).
HYPERPARAMETERS = dict(lr=0.02, momentum=0.95, weight_decay=0.1, nesterov=True, scale_rule="keller",
                       adam_lr=3e-4, adam_betas=(0.9, 0.95), adam_eps=1e-10)


class SingleDeviceMuon(torch.optim.Optimizer):
    """MuonWithAuxAdam on the parameters this rank holds, named, with ctx (the catalogue's factory arguments)."""

    def __init__(self, named_params, ctx, **overrides):
        unknown = set(overrides) - set(HYPERPARAMETERS)
        if unknown:
            raise TypeError(f"unknown hyperparameters {sorted(unknown)}; known: {sorted(HYPERPARAMETERS)}")
        h = dict(HYPERPARAMETERS, **overrides)
        self.ctx = ctx
        self.scale_rule = h["scale_rule"]
        self.spec_of = {}
        muon, adamw = [], []
        # The order given, never Keller's sort by size: a TP rank's local sizes are not its neighbours', and the
        # collectives of the TP variants must come in the same order on every rank.
        for name, p in named_params:
            spec = ctx.specs[name]
            self.spec_of[p] = spec
            (muon if self.uses_muon(p, spec) else adamw).append(p)
        groups = [dict(params=muon, use_muon=True, lr=h["lr"], momentum=h["momentum"], nesterov=h["nesterov"],
                       weight_decay=h["weight_decay"]),
                  dict(params=adamw, use_muon=False, lr=h["adam_lr"], betas=h["adam_betas"], eps=h["adam_eps"],
                       weight_decay=h["weight_decay"])]
        super().__init__([g for g in groups if g["params"]], {})

    def uses_muon(self, param, spec):
        """Muon for the parameters the model's sharding routed to it."""
        return spec.route == "muon"

    def advance_momentum(self, buffer, grad, group):
        return muon_math.advance_momentum(buffer, grad, group["momentum"], group["nesterov"])

    def newton_schulz(self, X):
        return muon_math.newton_schulz5(X)

    def scale_of(self, spec):
        """The update's scale, from the shape of the matrix the optimizer stands for: the whole one."""
        return muon_math.update_scale(spec.shape, self.scale_rule)

    def orthogonalize(self, direction, spec):
        """The Muon update of the tensor this rank holds: here the whole matrix."""
        return self.newton_schulz(direction) * self.scale_of(spec)

    def apply_update(self, param, update, lr, weight_decay):
        muon_math.decoupled_step(param, update, lr, weight_decay)

    def muon_update(self, param, grad, group):
        state = self.state[param]
        if not state:
            state["momentum_buffer"] = torch.zeros_like(grad)
        direction = self.advance_momentum(state["momentum_buffer"], grad, group)
        return self.orthogonalize(direction, self.spec_of[param])

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                # A missing gradient steps as a zero one (Keller's "force synchronization"): the TP variants'
                # collectives must run on every rank.
                grad = p.grad if p.grad is not None else torch.zeros_like(p)
                if group["use_muon"]:
                    update = self.muon_update(p, grad, group)
                else:
                    update = muon_math.adamw_direction(grad, self.state[p], group["betas"], group["eps"])
                self.apply_update(p, update, group["lr"], group["weight_decay"])
        return loss


def make_optimizer(named_params, ctx):
    return SingleDeviceMuon(named_params, ctx)
