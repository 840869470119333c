"""Muon training runs of the tiny Llama at tp = 1, 2, 4, dumped as safetensors (tools/make_grads.py --runs).

What a run is. Three Muon steps on three token batches. The first two run at tp = 1 (whole-matrix
Muon on all seven matrices of layer 0; embeddings, norms and lm_head frozen, as Muon leaves them
to another optimizer): a shared checkpoint, so that every run below starts from the same weights
and momenta, as the seed's comparison did ("same model, seed and batch"). The third step is the
one dumped; it is taken
  - at tp = 1 (the reference): whole-matrix Muon;
  - at tp = 2 and 4, with the forward and backward passes run tensor-parallel (column-parallel
    q/k/v/gate/up: each rank's output block from its row shard; row-parallel o/down: the ranks'
    partial products summed in rank order, the all-reduce), so the gradients carry the
    reduction-order noise of a real TP run, and the optimizer under three semantics:
      shard     AutoTP today: NS of each rank's shard, aspect scale from the shard's shape;
      gather    NS of the all-gathered matrix, each rank keeps its block, scale from the
                whole shape (the tp = 1 optimizer);
      per_head  per-head NS (DeepSpeed PR #8384) on q/k/v, each head block of the shard on its
                own, scale from the head block; o_proj and the MLP as in gather.

What is dumped (float32 safetensors, written by save_safetensors below: the `safetensors`
package is not a Debian package, and the format is a length, a JSON header and the bytes), for
the matrices of --dump-params (default q_proj and o_proj: attention's column- and row-parallel
matrix; all seven would be 2.5x the size), under their Hugging Face names
(model.layers.0.self_attn.q_proj.weight):
    reference/{grad,momentum,weight,delta}.safetensors            tp = 1
    tp{N}/{grad,momentum,weight}.rank{R}.safetensors              tp = N, shared by the semantics
    tp{N}/{shard,gather,per_head}/delta.rank{R}.safetensors       w_after - w_before per semantics
    runs.json                                                     how they were made
grad: the step's gradient; momentum: the momentum buffer after the step; weight: the weights
before it; delta: w_after - w_before, in fp32 as the optimizer stepped.

NS is DeepSpeed's standard kernel (zeropower_via_newtonschulz5, SPEC 1.1) in fp32, 5 steps,
keller coefficients: diagnose these runs with `--kernel standard`.
"""

import json
import math
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench"))
import torch_ns  # noqa: E402  (the torch transcription of DeepSpeed's NS, and its coefficients)

ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")
ROW_PARALLEL = ("o_proj", "down_proj")


def save_safetensors(path, tensors, metadata=None):
    """tensors: name -> float32 numpy array. The Hugging Face layout: u64 LE header length, the
    JSON header (padded with spaces to 8 bytes), the data in header order."""
    import numpy as np
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def newton_schulz(torch, g):
    """DeepSpeed's zeropower_via_newtonschulz5 in fp32, batched over leading dims (5 steps):
    tools/bench/torch_ns.py's ns_standard, with c * (A @ A) where DeepSpeed writes (c * A) @ A
    (square_first): fixtures/runs were made so, and the difference is rounding."""
    return torch_ns.ns_standard(g, 5, torch.float32, square_first=True)


def aspect(rows, cols):
    return max(1.0, rows / cols) ** 0.5


def split_sizes(dim, tp):
    # AutoTP's grain-1 rule; every split of this model is even (8 heads, 8 KV groups).
    return [dim // tp + (1 if r < dim % tp else 0) for r in range(tp)]


def axis_of(name):
    return 1 if name in ROW_PARALLEL else 0


def shard(t, name, tp):
    return list(t.split(split_sizes(t.shape[axis_of(name)], tp), dim=axis_of(name)))


def tp_forward(torch, model, dims, mats, tokens):
    """The decoder with each Muon matrix given as its list of rank shards."""
    F = torch.nn.functional
    H, hd = dims["num_attention_heads"], dims["head_dim"]
    B, S = tokens.shape
    inv_freq = 1.0 / (dims["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    freqs = torch.outer(torch.arange(S, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[None, None], emb.sin()[None, None]
    mask = torch.full((S, S), float("-inf")).triu(1)

    def column(x, name):
        return torch.cat([F.linear(x, w) for w in mats[name]], dim=-1)

    def row(x, name):
        parts = x.split([w.shape[1] for w in mats[name]], dim=-1)
        out = F.linear(parts[0], mats[name][0])
        for p, w in zip(parts[1:], mats[name][1:]):
            out = out + F.linear(p, w)  # the all-reduce, in rank order
        return out

    def rotate_half(x):
        return torch.cat((-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]), dim=-1)

    layer = model.layers[0]
    x = model.embed_tokens(tokens)
    h = layer.input_layernorm(x)
    q = column(h, "q_proj").view(B, S, H, hd).transpose(1, 2)
    k = column(h, "k_proj").view(B, S, H, hd).transpose(1, 2)
    v = column(h, "v_proj").view(B, S, H, hd).transpose(1, 2)
    q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
    probs = torch.softmax((q @ k.transpose(-2, -1)) / math.sqrt(hd) + mask, dim=-1)
    x = x + row((probs @ v).transpose(1, 2).reshape(B, S, H * hd), "o_proj")
    h = layer.post_attention_layernorm(x)
    x = x + row(F.silu(column(h, "gate_proj")) * column(h, "up_proj"), "down_proj")
    return model.lm_head(model.norm(x))


def gradients(torch, model, dims, weights, tokens, tp):
    """Per matrix, the rank shards' gradients of one TP forward/backward at these weights."""
    mats = {n: [s.detach().clone().requires_grad_(True) for s in shard(w, n, tp)] for n, w in weights.items()}
    logits = tp_forward(torch, model, dims, mats, tokens)
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, dims["vocab_size"]), tokens[:, 1:].reshape(-1))
    loss.backward()
    return {n: [s.grad.detach() for s in shards] for n, shards in mats.items()}, float(loss.item())


def orthogonalize(torch, blends, name, semantics, dims):
    """The update each rank applies (before -lr), from its blend shard."""
    tp = len(blends)
    if semantics == "per_head" and name in ("q_proj", "k_proj", "v_proj"):
        hd = dims["head_dim"]
        out = []
        for b in blends:
            heads = b.reshape(b.shape[0] // hd, hd, b.shape[1])
            out.append(newton_schulz(torch, heads).reshape(b.shape) * aspect(hd, b.shape[1]))
        return out
    if semantics == "shard":
        return [newton_schulz(torch, b) * aspect(*b.shape) for b in blends]
    whole = torch.cat(blends, dim=axis_of(name))
    u = newton_schulz(torch, whole) * aspect(*whole.shape)
    return shard(u, name, tp)


def muon_step(torch, weights, momenta, grads, name, semantics, dims, lr, beta):
    """Shards of (momentum after, w_before, delta) of one Muon step (DeepSpeed's muon_update, Nesterov)."""
    blends, moms = [], []
    for m, g in zip(momenta, grads):
        m = m.clone().lerp_(g, 1 - beta)
        moms.append(m)
        blends.append(g.lerp(m, beta))
    updates = orthogonalize(torch, blends, name, semantics, dims)
    deltas = []
    for w, u in zip(weights, updates):
        w_after = w.clone().add_(u, alpha=-lr)
        deltas.append(w_after - w)
    return moms, deltas


def make_runs(torch, np, model, dims, muon_names, batches, out, lr, beta, dump_params, tps):
    hf = {n: "model.layers.0.%s.%s.weight" % ("self_attn" if n in ATTENTION else "mlp", n) for n in muon_names}
    layer = model.layers[0]
    weights = {n: getattr(layer.self_attn if n in ATTENTION else layer.mlp, n).weight.detach().clone() for n in muon_names}
    for p in model.parameters():
        p.requires_grad_(False)  # frozen outside the Muon matrices; the TP forward's shards are the leaves
    momenta = {n: torch.zeros_like(w) for n, w in weights.items()}
    losses = []
    for tokens in batches[:-1]:  # the shared checkpoint: whole-matrix Muon at tp = 1
        g, loss = gradients(torch, model, dims, weights, tokens, 1)
        losses.append(loss)
        for n in muon_names:
            moms, deltas = muon_step(torch, [weights[n]], [momenta[n]], g[n], n, "gather", dims, lr, beta)
            momenta[n], weights[n] = moms[0], weights[n] + deltas[0]

    def dump(path, per_name):
        save_safetensors(os.path.join(out, path), {hf[n]: t.numpy() for n, t in per_name.items()})

    files = []
    for tp in [1] + tps:
        g, loss = gradients(torch, model, dims, weights, batches[-1], tp)
        losses.append(loss)
        w_shards = {n: shard(weights[n], n, tp) for n in dump_params}
        m_shards = {n: shard(momenta[n], n, tp) for n in dump_params}
        for semantics in (["gather"] if tp == 1 else ["shard", "gather", "per_head"]):
            steps = {n: muon_step(torch, w_shards[n], m_shards[n], g[n], n, semantics, dims, lr, beta) for n in dump_params}
            for r in range(tp):
                suffix = "" if tp == 1 else ".rank%d" % r
                folder = "reference" if tp == 1 else "tp%d" % tp
                kinds = {"grad": {n: g[n][r] for n in dump_params}, "weight": {n: w_shards[n][r] for n in dump_params},
                         "momentum": {n: steps[n][0][r] for n in dump_params}}
                if semantics == "gather" or tp == 1:
                    for kind, per_name in kinds.items():
                        files.append("%s/%s%s.safetensors" % (folder, kind, suffix))
                        dump(files[-1], per_name)
                delta_dir = folder if tp == 1 else "%s/%s" % (folder, semantics)
                files.append("%s/delta%s.safetensors" % (delta_dir, suffix))
                dump(files[-1], {n: steps[n][1][r] for n in dump_params})
    return files, losses
