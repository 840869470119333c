"""Tensor-parallel Newton-Schulz and Muon updates in numpy, on AutoTP's shards (check_tp's
``fn(shards, spec)``), and seeded bugs in them.

allreduce_ns is the correct one: the whole matrix's standard NS computed without assembling it —
the Frobenius norm by a (simulated) all-reduce of the shards' squared norms, the Gram matrix over
the unsharded axis by an all-reduce of the shards' Grams (p(X X^T) X = X p(X^T X) lets either axis
be the split one), the polynomial replicated, every product with the shard local. It matches the
whole matrix within rounding (claim "rounding"), not bit for bit.
"""

import numpy as np

import numpy_ns as ref


def _allreduce_iteration(shards, axis, steps, normalize_each_shard=False):
    a, b, c = (np.float32(k) for k in ref.KELLER)
    X = [np.array(s, dtype=np.float32, order="C") for s in shards]
    if normalize_each_shard:
        X = [ref._normalized(x) if x.size else x for x in X]
    else:
        norm = np.float32(np.sqrt(sum(np.sum(np.square(x, dtype=np.float64)) for x in X)))
        X = [x / (norm + np.float32(ref.EPS)) for x in X]
    for _ in range(steps):
        # the Gram over the unsharded axis: rows split -> X^T X, columns split -> X X^T
        A = sum((x.T @ x) if axis == 0 else (x @ x.T) for x in X)
        B = b * A + c * A @ A  # (c A) A, as Python groups DeepSpeed's expression
        X = [a * x + ((x @ B) if axis == 0 else (B @ x)) for x in X]
    return X


def allreduce_ns(shards, spec):
    """The whole matrix's standard NS on the shards, with all-reduces (correct; claim "rounding")."""
    return _allreduce_iteration(shards, spec.axis, spec.steps)


def _muon_scale(rows, cols):
    return np.float32(np.sqrt(max(1.0, rows / cols))) if rows and cols else np.float32(1)


def autotp_muon_update(shards, spec):
    """DeepSpeed's AutoTP today: each rank runs Muon's NS on the shard it holds and scales it by
    sqrt(max(1, rows/cols)) of the shard's own shape."""
    return [ref.standard_ns(s, spec.steps) * _muon_scale(*s.shape) if s.size else np.zeros(s.shape, np.float32)
            for s in shards]


# ------------------------------------------------------------------------------------------------
# Seeded bugs (python/tests/test_seeded_bugs.py: each is caught, and by which property).

def norm_per_shard(shards, spec):
    """allreduce_ns that normalizes each shard by its own Frobenius norm (the scalar all-reduce forgotten)."""
    return _allreduce_iteration(shards, spec.axis, spec.steps, normalize_each_shard=True)


def per_shard_ns(shards, spec):
    """NS of each shard on its own (no communication), offered as if it were the whole matrix's NS."""
    return [ref.standard_ns(s, spec.steps) if s.size else np.zeros(s.shape, np.float32) for s in shards]


def local_aspect_scale(shards, spec):
    """A Muon update with the whole matrix's NS (all-reduce) but the aspect scale from the shard's shape."""
    return [x * _muon_scale(*x.shape) for x in _allreduce_iteration(shards, spec.axis, spec.steps)]


def allreduce_muon_update(shards, spec):
    """The correct TP Muon update: whole-matrix NS by all-reduce, the scale of the whole matrix's shape."""
    scale = _muon_scale(spec.rows, spec.cols)
    return [x * scale for x in _allreduce_iteration(shards, spec.axis, spec.steps)]


def per_head_ns(shards, spec):
    """Per-head NS (DeepSpeed's per_head_muon) on head-aligned row shards: each rank runs NS on each
    head_dim-row block of its shard, the head count taken from its own rows, and scales each head by
    sqrt(max(1, head_dim / in)) (SPEC 1.3). Exact against per-head NS of the whole matrix: every head
    is an independent matrix."""
    out = []
    for s in shards:
        scale = _muon_scale(spec.head_dim, s.shape[1])
        heads = [s[h:h + spec.head_dim] for h in range(0, s.shape[0], spec.head_dim)]
        out.append(np.concatenate([ref.standard_ns(h, spec.steps) * scale for h in heads]) if heads else
                   np.zeros(s.shape, np.float32))
    return out


def allgather_equal_buffers(shards, spec):
    """Whole-matrix NS by an all-gather into buffers the size of each rank's own shard, the result cut into
    tp equal chunks (NVIDIA Emerging-Optimizers' newton_schulz_tp(mode="duplicated"): empty_like(x)
    buffers, all_gather, cat, chunk): right where every shard has one size (Megatron), wrong on AutoTP's
    uneven shards. Simulated: each buffer keeps what fits of the sender's shard and zeros elsewhere (gloo
    itself aborts the rank whose buffer is too small: seeded_torch_bugs.py)."""
    tp = len(shards)
    out = []
    for mine in shards:
        pieces = []
        for theirs in shards:
            buffer = np.zeros(mine.shape, np.float32)
            rows, cols = min(mine.shape[0], theirs.shape[0]), min(mine.shape[1], theirs.shape[1])
            buffer[:rows, :cols] = theirs[:rows, :cols]
            pieces.append(buffer)
        whole = ref.standard_ns(np.concatenate(pieces, axis=spec.axis), spec.steps)
        chunk = -(-whole.shape[spec.axis] // tp)  # torch.chunk: ceil-sized chunks, the last one smaller
        begin = min(len(out) * chunk, whole.shape[spec.axis])
        out.append(np.ascontiguousarray(np.take(whole, range(begin, min(begin + chunk, whole.shape[spec.axis])),
                                                axis=spec.axis)))
    return out


# ------------------------------------------------------------------------------------------------
# TP x DP meshes (check_tp(dp=...)): fn(pieces, spec), one piece per mesh rank d * tp + t, each a
# DP rank's part of its TP shard (ZeRO: 1-D pieces of the flattened shard; FSDP2: blocks of rows).

def _tp_shards(pieces, spec):
    """Every TP rank's shard from its DP ranks' pieces (what an all-gather over each DP group restores)."""
    shards = []
    for t, shape in enumerate(spec.shapes):
        flat = [np.asarray(pieces[d * spec.tp + t], dtype=np.float32).reshape(-1) for d in range(spec.dp)]
        shards.append(np.concatenate(flat).reshape(shape))
    return shards


def _mesh_pieces(shards, spec):
    """Every mesh rank's piece of per-TP-rank results, in its piece's shape."""
    return [np.asarray(shards[r % spec.tp], dtype=np.float32).reshape(-1)[begin:end].reshape(spec.piece_shapes[r])
            for r, (begin, end) in enumerate(spec.pieces)]


def _whole(shards, spec):
    """The matrix from its TP shards (each rank's ranges of the split axis, in order)."""
    g = np.zeros((spec.rows, spec.cols), dtype=np.float32)
    for shard, ranges in zip(shards, spec.ranges):
        at = 0
        for begin, end in ranges:
            if spec.axis == 0:
                g[begin:end, :] = shard[at:at + end - begin, :]
            else:
                g[:, begin:end] = shard[:, at:at + end - begin]
            at += end - begin
    return g


def _tp_split(g, spec):
    """Every TP rank's shard of g."""
    return [np.concatenate([g[b:e, :] if spec.axis == 0 else g[:, b:e] for b, e in ranges], axis=spec.axis)
            if ranges else np.zeros(shape, np.float32) for ranges, shape in zip(spec.ranges, spec.shapes)]


def mesh_gather_ns(pieces, spec):
    """The whole matrix gathered over DP and TP, its NS on every rank, each rank's piece kept (correct: exact)."""
    return _mesh_pieces(_tp_split(ref.standard_ns(_whole(_tp_shards(pieces, spec), spec), spec.steps), spec), spec)


def mesh_dp_gather_allreduce_ns(pieces, spec):
    """The TP shards gathered over DP, then allreduce_ns over TP (correct: within rounding)."""
    return _mesh_pieces(_allreduce_iteration(_tp_shards(pieces, spec), spec.axis, spec.steps), spec)


def mesh_per_piece_ns(pieces, spec):
    """NS of each mesh rank's own piece (an FSDP2 block; a ZeRO piece as one row): FSDP or ZeRO combined
    with TP naively, offered as if it were the whole matrix's NS."""
    return [ref.standard_ns(np.atleast_2d(p), spec.steps).reshape(p.shape) if p.size else np.zeros(p.shape, np.float32)
            for p in pieces]


def mesh_dp_gather_per_shard_ns(pieces, spec):
    """The TP shards gathered over DP, then NS of each TP shard (AutoTP's shard path on the restored shards)."""
    return _mesh_pieces(per_shard_ns(_tp_shards(pieces, spec), spec), spec)
