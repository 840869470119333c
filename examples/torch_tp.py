"""Tensor-parallel Muon updates in PyTorch, written as a rank runs them: nsverify.torch.check_tp's
fn(shard: torch.Tensor, spec, group) -> torch.Tensor, run unmodified on real torch.distributed ranks.

autotp_muon_update      DeepSpeed AutoTP today (deepspeed/runtime/zero/muon/original_muon.py's
                        muon_update on the shard a rank holds): Newton-Schulz of the local shard
                        (DeepSpeed's zeropower_via_newtonschulz5, tools/bench/torch_ns.py) and Muon's
                        scale sqrt(max(1, rows/cols)) of the local shape. It issues no collective:
                        every rank works alone, which is what the diagnosis finds ("per-shard NS,
                        local-shape scale") and what the cost model's `shard` plan says (none).
gram_allreduce_update   the whole matrix's update without assembling it: the squared Frobenius norm
                        all-reduced (fp32), then every step the Gram matrix over the unsharded axis
                        all-reduced (the polynomial replicated, every product with the shard local),
                        and the scale of the whole matrix's shape. The structure of NVIDIA
                        Emerging-Optimizers' newton_schulz_tp(mode="distributed")
                        (emerging_optimizers/orthogonalized_optimizers/muon_utils.py at a045ea1:
                        distributed_normalize_p2, then an all_reduce of X X^T per step), written with
                        DeepSpeed's arithmetic (X / (||X|| + 1e-7), B = b A + c A A) and Keller
                        Jordan's coefficients. nsverify's `gram_allreduce` strategy: 1 + steps
                        all-reduces, within the S5 bound of the whole-matrix update (claim "rounding").
"""

import pathlib
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tools" / "bench"))

import torch_ns  # noqa: E402

A_COEF, B_COEF, C_COEF = torch_ns.KELLER


def muon_scale(rows, cols):
    return max(1.0, rows / cols) ** 0.5 if rows and cols else 1.0


def autotp_muon_update(shard, spec, group):
    """DeepSpeed AutoTP's Muon update on this rank's shard: NS of the shard, the shard's own aspect scale."""
    with torch.no_grad():
        update = torch_ns.ns_standard(shard, spec.steps, torch_ns.dtype_of(spec.dtype))
        return update * muon_scale(*shard.shape)


def all_reduce(A, group):
    """The sum over the group's ranks; in fp32 where the backend cannot reduce A's dtype (gloo in torch 1.13
    has no bf16 or fp16 all-reduce: "Invalid scalar type"), so such a Gram travels as fp32."""
    if A.dtype in (torch.bfloat16, torch.float16) and dist.get_backend(group) == "gloo":
        wide = A.float()
        dist.all_reduce(wide, group=group)
        return wide.to(A.dtype)
    dist.all_reduce(A, group=group)
    return A


def gram_allreduce_ns(shard, spec, group, normalize=None):
    """Standard NS of the whole matrix, on the shards: one all-reduce for the norm, one per step for the Gram."""
    a, b, c = A_COEF, B_COEF, C_COEF
    dtype = torch_ns.dtype_of(spec.dtype)
    X = shard.float()
    squares = (X * X).sum().reshape(1)  # the squared norm in fp32, as nsverify's model sends it
    dist.all_reduce(squares, group=group)
    X = (normalize or (lambda x, n: x / n))(X, squares.sqrt() + 1e-7).to(dtype)
    rows_split = spec.axis == 0  # the Gram over the unsharded axis: X^T X for a row split, X X^T for a column split
    for _ in range(spec.steps):
        A = all_reduce(X.mT @ X if rows_split else X @ X.mT, group)
        B = b * A + c * A @ A
        X = a * X + (X @ B if rows_split else B @ X)
    return X


def gram_allreduce_update(shard, spec, group):
    """The whole-matrix Muon update by Gram all-reduces, scaled by the whole matrix's shape."""
    with torch.no_grad():
        return gram_allreduce_ns(shard, spec, group) * muon_scale(spec.rows, spec.cols)


# ------------------------------------------------------------------------------------------------
# TP x DP meshes (nsverify.torch.check_tp(dp=...)): fn(piece, spec, groups), this rank's piece of its TP
# shard, groups.tp / groups.dp / groups.mesh its process groups.

def dp_all_gather_shard(piece, spec, groups):
    """This rank's TP shard from its DP group's pieces: one all-gather of the pieces padded to the longest
    (gloo's all_gather takes equal sizes), each trimmed back to its length, in DP order."""
    lengths = [end - begin for begin, end in (spec.pieces[d * spec.tp + spec.tp_rank] for d in range(spec.dp))]
    flat = piece.reshape(-1)
    padded = torch.zeros(max(1, max(lengths)), dtype=piece.dtype)
    padded[:flat.numel()] = flat
    gathered = [torch.empty_like(padded) for _ in lengths]
    dist.all_gather(gathered, padded, group=groups.dp)
    return torch.cat([g[:n] for g, n in zip(gathered, lengths)]).reshape(spec.shard_shape)


def fsdp_tp_gram_allreduce_ns(piece, spec, groups):
    """FSDP or ZeRO + TP done right: the TP shard restored over DP, the whole matrix's NS by Gram
    all-reduces over TP (gram_allreduce_ns), this rank's piece of the result kept (claim "rounding")."""
    with torch.no_grad():
        out = gram_allreduce_ns(dp_all_gather_shard(piece, spec, groups), spec, groups.tp)
        begin, end = spec.pieces[spec.rank]
        return out.reshape(-1)[begin:end].reshape(spec.piece_shape)


def per_piece_ns(piece, spec, groups):
    """FSDP or ZeRO + TP combined naively: NS of the piece this rank holds (a ZeRO piece as one row)."""
    with torch.no_grad():
        block = piece if piece.dim() == 2 else piece.reshape(1, -1)
        return torch_ns.ns_standard(block, spec.steps, torch_ns.dtype_of(spec.dtype)).reshape(piece.shape)
