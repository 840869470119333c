"""Moving a matrix between its tensor-parallel shards, its data-parallel pieces and the whole, on gloo.

A rank's TP shard is spec.local_shape, cut along spec.split (0 rows, 1 columns) at spec.ranges[tp_rank]: one
(begin, end) piece for a plain split, three for a fused QKV matrix (its Q, K and V parts), none for a
zero-width shard (AutoTP's head-aligned rule gives a rank no KV group when tp exceeds their count). Under
data parallelism each rank holds spec.piece of its TP shard: a flat [begin, end) of its row-major elements
("zero") or its rows [begin, end) ("fsdp").

gloo's all_gather, gather and scatter take tensors of one size, so every collective here sends the flat
tensor padded to the largest of the group and each receiver cuts it back to the sender's length: uneven
and zero-width shards travel like any other. A length of zero is padded to one element, because what an
empty tensor does in a collective is the backend's business (Dion's FSDP2 path met zero-size local shards
in production: microsoft/dion PR #83).
"""

import math

import torch
import torch.distributed as dist


def tp_shard_shape(spec, t):
    """TP rank t's shard shape: the full shape with the split axis cut to that rank's width."""
    if spec.split is None:
        return tuple(spec.shape)
    shape = list(spec.shape)
    shape[spec.split] = spec.sizes[t]
    return tuple(shape)


def _padded(flat, length):
    out = torch.zeros(max(1, length), dtype=flat.dtype)
    out[:flat.numel()] = flat
    return out


def all_gather_flat(flat, lengths, group):
    """Every group rank's 1-D tensor, lengths[i] long on group rank i, in group-rank order."""
    padded = _padded(flat, max(lengths))
    slots = [torch.empty_like(padded) for _ in lengths]
    dist.all_gather(slots, padded, group=group)
    return [slot[:n] for slot, n in zip(slots, lengths)]


def global_rank_of_tp_rank(ctx, t):
    """The global rank of TP rank t in this rank's TP group: a mesh row is tp consecutive ranks (d * tp + t)."""
    return dist.get_rank() - ctx.tp_rank + t


def _place(full, shard, spec, t):
    """Copy TP rank t's shard into its ranges of the full matrix."""
    at = 0
    for begin, end in spec.ranges[t]:
        full.narrow(spec.split, begin, end - begin).copy_(shard.narrow(spec.split, at, end - begin))
        at += end - begin


def assemble_tp(shards, spec):
    """The full matrix from every TP rank's shard (fused QKV: each rank's pieces to their parts)."""
    if spec.split is None:
        return shards[0]
    full = torch.empty(tuple(spec.shape), dtype=shards[0].dtype)
    for t, shard in enumerate(shards):
        _place(full, shard, spec, t)
    return full


def gather_tp_matrix(shard, spec, ctx):
    """The full matrix on every rank of the TP group: one all-gather of the flat shards."""
    if spec.split is None:
        return shard
    shapes = [tp_shard_shape(spec, t) for t in range(ctx.tp)]
    flats = all_gather_flat(shard.reshape(-1), [math.prod(s) for s in shapes], ctx.tp_group)
    return assemble_tp([flat.reshape(s) for flat, s in zip(flats, shapes)], spec)


def tp_slice(full, spec, t):
    """TP rank t's shard of a full matrix: its ranges along the split axis, concatenated."""
    if spec.split is None:
        return full
    pieces = [full.narrow(spec.split, begin, end - begin) for begin, end in spec.ranges[t]]
    return torch.cat(pieces, dim=spec.split) if pieces else torch.empty(tp_shard_shape(spec, t), dtype=full.dtype)


def gather_to_tp_owner(shard, spec, ctx, owner):
    """The full matrix on TP rank `owner` (None elsewhere): one gather of the flat shards to it."""
    if spec.split is None:
        return shard if ctx.tp_rank == owner else None
    shapes = [tp_shard_shape(spec, t) for t in range(ctx.tp)]
    lengths = [math.prod(s) for s in shapes]
    padded = _padded(shard.reshape(-1), max(lengths))
    slots = [torch.empty_like(padded) for _ in lengths] if ctx.tp_rank == owner else None
    dist.gather(padded, slots, dst=global_rank_of_tp_rank(ctx, owner), group=ctx.tp_group)
    if ctx.tp_rank != owner:
        return None
    return assemble_tp([slot[:n].reshape(s) for slot, n, s in zip(slots, lengths, shapes)], spec)


def scatter_from_tp_owner(full, spec, ctx, owner):
    """This rank's shard of the matrix TP rank `owner` holds (`full`, None elsewhere): one scatter."""
    if spec.split is None:
        return full if ctx.tp_rank == owner else _broadcast_whole(full, spec, ctx, owner)
    shapes = [tp_shard_shape(spec, t) for t in range(ctx.tp)]
    longest = max(math.prod(s) for s in shapes)
    slots = None
    if ctx.tp_rank == owner:
        slots = [_padded(tp_slice(full, spec, t).reshape(-1), longest) for t in range(ctx.tp)]
    received = torch.empty(max(1, longest), dtype=torch.float32)
    dist.scatter(received, slots, src=global_rank_of_tp_rank(ctx, owner), group=ctx.tp_group)
    mine = shapes[ctx.tp_rank]
    return received[:math.prod(mine)].reshape(mine)


def _broadcast_whole(full, spec, ctx, owner):
    """A replicated matrix (split None) from its owner to the other TP ranks."""
    whole = full if full is not None else torch.empty(tuple(spec.shape), dtype=torch.float32)
    dist.broadcast(whole, src=global_rank_of_tp_rank(ctx, owner), group=ctx.tp_group)
    return whole


def _flat_bounds(spec, ctx):
    """This rank's DP piece as a flat [begin, end) of its TP shard's row-major elements."""
    begin, end = spec.piece
    if ctx.dp_partition == "fsdp":
        row = math.prod(spec.local_shape[1:])
        return begin * row, end * row
    return begin, end


def gather_dp_shard(piece, spec, ctx):
    """This rank's whole TP shard from its DP group's pieces (the piece itself when there is no DP partition):
    the pieces' bounds, then the pieces, each all-gathered and put at its flat offset."""
    if ctx.dp_partition is None or spec.piece is None:
        return piece.reshape(spec.local_shape)
    begin, end = _flat_bounds(spec, ctx)
    bounds = [torch.empty(2, dtype=torch.int64) for _ in range(ctx.dp)]
    dist.all_gather(bounds, torch.tensor([begin, end], dtype=torch.int64), group=ctx.dp_group)
    spans = [(int(b[0]), int(b[1])) for b in bounds]
    flats = all_gather_flat(piece.reshape(-1), [e - b for b, e in spans], ctx.dp_group)
    shard = torch.empty(math.prod(spec.local_shape), dtype=piece.dtype)
    for (b, e), flat in zip(spans, flats):
        shard[b:e] = flat
    return shard.reshape(spec.local_shape)


def dp_piece(shard, spec, ctx):
    """This rank's DP piece of a TP-shard-shaped tensor (the tensor itself when there is no DP partition)."""
    if ctx.dp_partition is None or spec.piece is None:
        return shard
    begin, end = _flat_bounds(spec, ctx)
    return shard.reshape(-1)[begin:end].reshape(spec.piece_shape)
