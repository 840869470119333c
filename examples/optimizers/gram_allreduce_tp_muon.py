"""Gram all-reduce tensor-parallel Muon: Newton-Schulz of the whole matrix without assembling it. The squared
Frobenius norm is all-reduced over ctx.tp_group, then every step the Gram matrix over the unsharded axis
(X^T X for a row split, X X^T for a column split) is the all-reduced sum of each shard's contribution, and
the quintic polynomial multiplies the local shard: X_t <- X_t (a I + b G + c G^2) for a row split,
(a I + b G + c G^2) X_t for a column split.

Megatron-LM's TensorParallelMuon "distributed" mode (PR #6380: NS "distributed over GTP via the small-Gram
all-reduce"; PR #6664: it "requires extra all-reduce during each NS step"; the NS itself is NVIDIA
Emerging-Optimizers', which Megatron-LM issue #2583 points to). In exact
arithmetic it is Keller's whole-matrix NS (X (aI + bX^TX + c(X^TX)^2) = (aI + bXX^T + c(XX^T)^2) X); in
float32 the Gram is a sum of tp partial products, added in another order than one product's, and the
polynomial runs on the other side for a tall matrix, so the bits differ from the single-device update.

Claim: rounding (not exact).
"""

import torch.distributed as dist

from . import muon_math, tp_comm
from .single_device import SingleDeviceMuon


def gram_allreduce_newton_schulz(shard, split, group, steps=muon_math.NS_STEPS):
    """Keller's quintic NS of the matrix whose shards along `split` the group's ranks hold; this rank's shard."""
    a, b, c = muon_math.KELLER_COEFFS
    X = shard.float()
    squares = (X * X).sum().reshape(1)
    dist.all_reduce(squares, group=group)
    X = X / (squares.sqrt() + muon_math.NORM_EPS)
    rows_split = split == 0
    for _ in range(steps):
        G = X.mT @ X if rows_split else X @ X.mT
        dist.all_reduce(G, group=group)
        B = b * G + c * (G @ G)
        X = a * X + (X @ B if rows_split else B @ X)
    return X


class GramAllReduceTpMuon(SingleDeviceMuon):
    def orthogonalize(self, direction, spec):
        shard = tp_comm.gather_dp_shard(direction, spec, self.ctx)
        if spec.split is None:
            update = self.newton_schulz(shard)
        else:
            update = gram_allreduce_newton_schulz(shard, spec.split, self.ctx.tp_group)
        return tp_comm.dp_piece(update * self.scale_of(spec), spec, self.ctx)


def make_optimizer(named_params, ctx):
    return GramAllReduceTpMuon(named_params, ctx)
