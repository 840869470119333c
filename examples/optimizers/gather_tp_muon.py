"""Whole-matrix tensor-parallel Muon: every TP rank all-gathers the momentum, runs Newton-Schulz of the full
matrix, scales by the full shape and keeps its own slice.

This is Megatron-LM's TensorParallelMuon in its "duplicated" mode (NS by NVIDIA Emerging-Optimizers; PR
#6664: it "all-gathers the full matrix and runs Newton-Schulz"; PR #6380, for the GTP axis: "all-gather
along the GTP dim, run whole-matrix Newton-Schulz redundantly on every GTP rank, slice the local shard back
out"). PR #6380 made "duplicated" the default because "blockwise" (NS of each shard) moves the update rule
with the parallelism config, while "duplicated" and "distributed" orthogonalize the whole matrix and are
TP-invariant. The arithmetic is Keller Jordan's (single_device.py), so the update
is the single-device one bit for bit: the all-gather moves bits, NS runs on the same full matrix in the same
order on every rank, and slicing is exact.

Under data parallelism (ctx.dp_partition "zero" or "fsdp") a rank holds a piece of its TP shard: the pieces
are all-gathered over ctx.dp_group first, and the rank keeps its piece of the result. Fused QKV shards are
put back to their parts by spec.ranges; zero-width shards send nothing but padding.

Claim: exact, at every tp, even, uneven and zero-width shards, with and without dp.
"""

from . import tp_comm
from .single_device import SingleDeviceMuon


class GatherTpMuon(SingleDeviceMuon):
    def orthogonalize(self, direction, spec):
        shard = tp_comm.gather_dp_shard(direction, spec, self.ctx)
        full = tp_comm.gather_tp_matrix(shard, spec, self.ctx)
        update = self.newton_schulz(full) * self.scale_of(spec)
        return tp_comm.dp_piece(tp_comm.tp_slice(update, spec, self.ctx.tp_rank), spec, self.ctx)


def make_optimizer(named_params, ctx):
    return GatherTpMuon(named_params, ctx)
