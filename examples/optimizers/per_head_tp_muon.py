"""Per-head tensor-parallel Muon: the attention projections whose rows stack heads (q, k, v, fused QKV: a
head_dim, and a split that is not the column axis, along which o_proj's heads run) are orthogonalized head
by head, each head's head_dim x cols block by itself with its own shape's scale; the other matrices as
gather_tp_muon.py.

DeepSpeed PR #8384 ("[muon] Per-head Newton-Schulz for attention projections": view [H * hd, in] as H
matrices hd x in, NS each). Under tensor parallelism it needs no collective for those matrices: AutoTP's
head-aligned split gives each rank whole heads (whole KV groups), so the heads of a rank's shard are the
same blocks, with the same bits, as in the whole matrix, provided their number is counted on the shard
(rows / head_dim). Under data parallelism the TP shard's pieces are gathered first.

Claim: exact, at every tp, even, uneven and zero-width shards, with and without dp (stale_head_count.py is
its defect).
"""

import torch

from . import muon_math, tp_comm
from .gather_tp_muon import GatherTpMuon


def stacks_heads(spec):
    return bool(spec.head_dim) and spec.split != 1


class PerHeadTpMuon(GatherTpMuon):
    def head_count(self, shard, spec):
        """The heads this rank's shard holds."""
        return shard.shape[0] // spec.head_dim

    def orthogonalize(self, direction, spec):
        if not stacks_heads(spec):
            return super().orthogonalize(direction, spec)
        shard = tp_comm.gather_dp_shard(direction, spec, self.ctx)
        if shard.numel() == 0:  # a zero-width shard: no heads here
            return tp_comm.dp_piece(shard.clone(), spec, self.ctx)
        heads = self.head_count(shard, spec)
        rows = shard.shape[0]
        if rows % heads:  # DeepSpeed's _per_head_orthogonalize checks the same
            raise ValueError(f"{spec.name}: {rows} rows do not split into {heads} heads")
        blocks = [block.contiguous() for block in shard.split(rows // heads)]
        update = torch.cat([self.newton_schulz(b) * muon_math.update_scale(b.shape, self.scale_rule) for b in blocks])
        return tp_comm.dp_piece(update, spec, self.ctx)


def make_optimizer(named_params, ctx):
    return PerHeadTpMuon(named_params, ctx)
