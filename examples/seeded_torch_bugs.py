"""Seeded bugs in PyTorch Newton-Schulz kernels and TP updates, each one that nsverify.torch must
catch (python/tests/test_torch_*.py names the property; reports/torch/README.md shows each
shrunk counterexample), and the rank faults check_tp must report as failed cases, never hangs.
"""

import os
import sys

import torch
import torch.distributed as dist

import torch_public_ns
import torch_tp

# ---- kernels: fn(G, steps) ---------------------------------------------------------------------


def inplace_normalization(G, steps):
    """Keller Jordan's NS that normalizes the caller's tensor in place (G.div_), as an optimizer that wants
    to save a copy might: the gradient (or the momentum buffer) is changed behind the caller's back."""
    G.div_(G.norm() + 1e-7)
    return torch_public_ns.keller_jordan(G, steps, dtype=G.dtype)


# ---- TP updates: fn(shard, spec, group) --------------------------------------------------------


def allgather_equal_buffers(shard, spec, group):
    """Whole-matrix NS by gathering the shards into buffers the size of this rank's own and cutting the
    result into tp equal chunks: NVIDIA Emerging-Optimizers' newton_schulz_tp(mode="duplicated")
    (muon_utils.py at a045ea1: [torch.empty_like(x) for _ in range(tp)], all_gather, cat, chunk), correct
    where every shard has one size (Megatron) and wrong on AutoTP's uneven shards: gloo aborts the
    rank whose buffer is too small (SIGABRT), the others read past what they were sent."""
    with torch.no_grad():
        tp = dist.get_world_size(group)
        pieces = [torch.empty_like(shard) for _ in range(tp)]
        dist.all_gather(pieces, shard, group=group)
        whole = torch.cat(pieces, dim=spec.axis)
        update = torch_public_ns.keller_jordan(whole, spec.steps, dtype=torch.float32)
        return update.chunk(tp, dim=spec.axis)[dist.get_rank(group)].contiguous()


def inplace_shard_normalization(shard, spec, group):
    """gram_allreduce_update that divides its shard by the global norm in place (shard.div_): the update is
    right, the rank's gradient is not."""
    with torch.no_grad():
        X = torch_tp.gram_allreduce_ns(shard, spec, group, normalize=lambda x, n: shard.div_(n).float())
        return X * torch_tp.muon_scale(spec.rows, spec.cols)


# ---- rank faults: check_tp reports each as a failed case within its time limit -----------------


def rank_raises(shard, spec, group):
    """The Gram all-reduce update on every rank but rank 1 (of tp >= 2), which raises before its first
    collective: rank 0 is left waiting in its all_reduce."""
    if spec.tp > 1 and spec.rank == 1:
        raise RuntimeError("rank 1 ran out of memory (injected)")
    return torch_tp.gram_allreduce_update(shard, spec, group)


def rank_skips_collective(shard, spec, group):
    """Rank 1 (of tp >= 2) returns its shard's NS without entering the Gram all-reduces: rank 0 waits
    for it forever (a deadlock, but for the case's time limit)."""
    if spec.tp > 1 and spec.rank == 1:
        return torch_tp.autotp_muon_update(shard, spec, group)
    return torch_tp.gram_allreduce_update(shard, spec, group)


def rank_aborts(shard, spec, group):
    """Rank 1 (of tp >= 2) dies (SIGABRT) before its collective, as a process taken down inside a collective
    library is."""
    if spec.tp > 1 and spec.rank == 1:
        os.abort()
    return torch_tp.gram_allreduce_update(shard, spec, group)


def rank_exits(shard, spec, group):
    """Rank 1 (of tp >= 2) calls sys.exit(0) before its collective, as a script's stray exit would."""
    if spec.tp > 1 and spec.rank == 1:
        sys.exit(0)
    return torch_tp.gram_allreduce_update(shard, spec, group)


def rank_os_exits(shard, spec, group):
    """Rank 1 (of tp >= 2) calls os._exit(0) before its collective."""
    if spec.tp > 1 and spec.rank == 1:
        os._exit(0)
    return torch_tp.gram_allreduce_update(shard, spec, group)


def rank_wrong_shape(shard, spec, group):
    """Rank 1 (of tp >= 2) returns its update with one row too many (the whole matrix's row count mixed up
    with the shard's): a result that cannot be assembled into the layout."""
    update = torch_tp.autotp_muon_update(shard, spec, group)
    if spec.tp > 1 and spec.rank == 1:
        return torch.cat([update, update[:1]]) if update.shape[0] else torch.zeros(1, update.shape[1])
    return update
