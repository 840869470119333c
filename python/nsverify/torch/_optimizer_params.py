"""The parameters of nsverify.torch.check_optimizer: what the user declares (Param), each rank's spec of
it (AutoTP's shard, then the DP piece), and the cut and assembly of full tensors along those lines.

Shards follow AutoTP's rules through nsverify's own tables (autotp_layout / fused_qkv_layout, the same
as ``nsv audit`` and check_tp): head-aligned on the KV groups where heads are given (a rank past the
KV groups holds a zero-width shard), the grain rule (grain 1, training) otherwise. A DP piece cuts a TP
shard again as check_tp(dp=) does: "zero" = the shard's row-major elements in pieces of ceil(N / dp),
handed as 1-D tensors; "fsdp" = ceil(rows / dp) whole rows (dim 0; a 1-D tensor's elements).
"""

import json
import os

import numpy as np

from .. import _args
from .._reference import MAX_COUNT, assemble, autotp_layout, fused_qkv_layout, split

ROUTES = ("auto", "muon", "adamw")
FUSED = ("qkv",)
#: The longest side a declared parameter may have (the checker holds every step's full weights in memory).
MAX_SIDE = 1 << 16


class Param:
    """One parameter of the model the optimizer steps.

    name      unique, e.g. "layers.0.self_attn.q_proj.weight"
    shape     (rows, cols) or (n,) of the full (unsharded) parameter
    split     None (replicated: every TP rank holds all of it), 0 (rows: q/k/v, gate/up; column-parallel)
              or 1 (columns: o, down; row-parallel); 2-D parameters only
    route     "auto" (2-D -> "muon", else "adamw"), "muon" or "adamw": the group the optimizer is meant
              to put it in (ctx.specs[name].route tells the factory; the check compares what it observes)
    heads, kv_heads  the attention heads along the split axis: AutoTP then splits head-aligned on the
              kv_heads groups (kv_heads None: heads); None: the grain rule
    fused     None or "qkv": a fused [Q; K; V] (rows (heads + 2 kv_heads) * head_dim), each part split
              head-aligned and each rank's three pieces concatenated
    """

    def __init__(self, name, shape, split=None, route="auto", heads=None, kv_heads=None, fused=None):
        self.name = _args.text("name", name)
        if not name or ":" in name or "," in name:
            raise ValueError(f"name must be a non-empty string without ':' or ',' (a replay string lists names), got {name!r}")
        if isinstance(shape, (str, bytes)) or not isinstance(shape, (tuple, list)) or len(shape) not in (1, 2):
            raise TypeError(f"shape of {name!r} must be (rows, cols) or (n,), positive integers, got {shape!r}")
        self.shape = tuple(_args.integer(f"shape of {name!r}", s, 1, MAX_SIDE) for s in shape)
        if split is not None:
            split = _args.integer(f"split of {name!r}", split, 0, 1)
            if len(self.shape) != 2:
                raise ValueError(f"split of {name!r} must be None for a 1-D parameter (AutoTP splits matrices), got {split}")
        self.split = split
        self.route = _args.text(f"route of {name!r}", route, ROUTES)
        self.heads = _args.optional_integer(f"heads of {name!r}", heads, 1, MAX_COUNT)
        self.kv_heads = _args.optional_integer(f"kv_heads of {name!r}", kv_heads, 1, MAX_COUNT)
        self.fused = _args.optional_text(f"fused of {name!r}", fused, FUSED)
        if (self.heads or self.kv_heads or self.fused) and split is None:
            raise ValueError(f"{name!r}: heads, kv_heads and fused describe a split axis; give split=0 or 1")
        if self.kv_heads and not self.heads:
            raise ValueError(f"{name!r}: kv_heads={self.kv_heads} needs heads")
        if self.fused and (split != 0 or not self.heads):
            raise ValueError(f"{name!r}: fused='qkv' is a row split (split=0) with heads (and kv_heads)")
        kv = self.kv_heads or self.heads
        if self.heads and self.heads % kv:
            raise ValueError(f"{name!r}: heads={self.heads} is not a multiple of kv_heads={kv}")
        if self.heads:
            units = self.heads + 2 * kv if self.fused else self.heads
            if self.shape[split] % units:
                raise ValueError(f"{name!r}: the split axis ({self.shape[split]}) is not a whole number of heads ({units})")

    @property
    def resolved_route(self):
        return self.route if self.route != "auto" else ("muon" if len(self.shape) == 2 else "adamw")

    @property
    def head_dim(self):
        if not self.heads:
            return None
        kv = self.kv_heads or self.heads
        return self.shape[self.split] // (self.heads + 2 * kv if self.fused else self.heads)

    def to_dict(self):
        return dict(name=self.name, shape=list(self.shape), split=self.split, route=self.route, heads=self.heads,
                    kv_heads=self.kv_heads, fused=self.fused)

    def __repr__(self):
        extra = "".join(f", {k}={v!r}" for k, v in (("heads", self.heads), ("kv_heads", self.kv_heads),
                                                   ("fused", self.fused)) if v)
        return f"Param({self.name!r}, {self.shape}, split={self.split}, route={self.route!r}{extra})"

    @classmethod
    def from_config(cls, model_config, layers=1):
        """The Muon-relevant parameters of `layers` decoder layers of a Llama/Qwen/Mistral-style Hugging Face
        config (a dict or the path to config.json): per layer q_proj (rows split head-aligned on the KV
        groups), k_proj/v_proj (rows, one head per KV group), o_proj (columns, head-aligned), gate_proj/up_proj
        (rows, grain rule), down_proj (columns, grain rule), input_layernorm/post_attention_layernorm (1-D,
        replicated, AdamW). AutoTP splits every attention projection on the model's num_key_value_heads
        (DeepSpeed tp_shard.py get_shard_size; analysis/src/architectures.cpp), the MLP by the grain rule."""
        if isinstance(model_config, (str, os.PathLike)):
            with open(model_config) as f:
                model_config = json.load(f)
        if not isinstance(model_config, dict):
            raise TypeError(f"model_config must be a dict or the path of a config.json, got {type(model_config).__name__}")
        layers = _args.integer("layers", layers, 1, 1024)

        def field(key, default=None):
            value = model_config.get(key, default)
            if value is None:
                raise ValueError(f"model_config has no {key!r} (a Llama/Qwen/Mistral-style config is needed)")
            return _args.integer(f"model_config[{key!r}]", value, 1, MAX_SIDE)

        hidden, inter = field("hidden_size"), field("intermediate_size")
        heads = field("num_attention_heads")
        kv = field("num_key_value_heads", heads)
        head_dim = field("head_dim", hidden // heads) if model_config.get("head_dim") is not None else hidden // heads
        if heads % kv:
            raise ValueError(f"num_attention_heads ({heads}) is not a multiple of num_key_value_heads ({kv})")
        out = []
        for i in range(layers):
            pre = f"layers.{i}."
            out += [cls(pre + "self_attn.q_proj.weight", (heads * head_dim, hidden), 0, heads=heads, kv_heads=kv),
                    cls(pre + "self_attn.k_proj.weight", (kv * head_dim, hidden), 0, heads=kv),
                    cls(pre + "self_attn.v_proj.weight", (kv * head_dim, hidden), 0, heads=kv),
                    cls(pre + "self_attn.o_proj.weight", (hidden, heads * head_dim), 1, heads=heads, kv_heads=kv),
                    cls(pre + "mlp.gate_proj.weight", (inter, hidden), 0),
                    cls(pre + "mlp.up_proj.weight", (inter, hidden), 0),
                    cls(pre + "mlp.down_proj.weight", (hidden, inter), 1),
                    cls(pre + "input_layernorm.weight", (hidden,)),
                    cls(pre + "post_attention_layernorm.weight", (hidden,))]
        return out


def params_list(params):
    """The declared parameters, checked: a non-empty list of Param (or dicts of Param's keywords), names unique."""
    if isinstance(params, Param):
        params = [params]
    if not isinstance(params, (list, tuple)) or not params:
        raise TypeError(f"params must be a non-empty list of nsverify.torch.Param, got {params!r:.80}")
    out = [p if isinstance(p, Param) else Param(**p) if isinstance(p, dict) else None for p in params]
    if any(p is None for p in out):
        raise TypeError("params must hold nsverify.torch.Param objects (or dicts of their keywords)")
    names = [p.name for p in out]
    if len(set(names)) != len(names):
        raise ValueError(f"params: names must be unique, {sorted({n for n in names if names.count(n) > 1})} repeat")
    return out


def layout_of(param, tp):
    """AutoTP's Layout of a split parameter at tp (None for a replicated one)."""
    if param.split is None:
        return None
    if param.fused:
        return fused_qkv_layout(param.heads, param.kv_heads or param.heads, param.head_dim, tp)
    return autotp_layout(param.shape[param.split], tp, axis=param.split, heads=param.heads or 0,
                         kv_heads=param.kv_heads or 0)


def pieces_of(local_shape, dp, partition):
    """Each DP rank's (begin, end) of a TP shard: row-major elements ("zero") or rows ("fsdp")."""
    n = int(np.prod(local_shape)) if partition == "zero" else local_shape[0]
    chunk = -(-n // dp)
    return [(min(d * chunk, n), min((d + 1) * chunk, n)) for d in range(dp)]


def piece_shape(local_shape, piece, partition):
    return (piece[1] - piece[0],) if partition == "zero" else (piece[1] - piece[0],) + tuple(local_shape[1:])


class Plan:
    """Every parameter's layout at one tp (x dp): specs per mesh rank, and the cut/assembly of full tensors."""

    def __init__(self, params, tp, dp, partition):
        self.params, self.tp, self.dp, self.partition = params, tp, dp, partition
        self.layouts = {p.name: layout_of(p, tp) for p in params}

    def local_shapes(self, p):
        lay = self.layouts[p.name]
        if lay is None:
            return [p.shape] * self.tp
        return [tuple(w if a == p.split else p.shape[a] for a in range(2)) for w in lay.widths]

    def spec(self, p, mesh_rank):
        """The SimpleNamespace fields ctx.specs[name] holds on `mesh_rank` (see check_optimizer's doc)."""
        t, d = mesh_rank % self.tp, mesh_rank // self.tp
        lay = self.layouts[p.name]
        shapes = self.local_shapes(p)
        fields = dict(name=p.name, shape=p.shape, split=p.split, sizes=None if lay is None else list(lay.widths),
                      ranges=None if lay is None else [[tuple(r) for r in rank] for rank in lay.ranks],
                      local_shape=shapes[t], local_shapes=shapes, heads=p.heads, kv_heads=p.kv_heads or p.heads,
                      head_dim=p.head_dim, fused=p.fused, route=p.resolved_route, piece=None, piece_shape=None, pieces=None)
        if self.dp:
            pieces = pieces_of(shapes[t], self.dp, self.partition)
            fields.update(piece=pieces[d], piece_shape=piece_shape(shapes[t], pieces[d], self.partition), pieces=pieces)
        return fields

    def held_shape(self, p, mesh_rank):
        s = self.spec(p, mesh_rank)
        return tuple(s["piece_shape"] if self.dp else s["local_shape"])

    def shards(self, p, full):
        """Each TP rank's shard of a full tensor (float32 or float64 kept)."""
        lay = self.layouts[p.name]
        if lay is None:
            return [full] * self.tp
        return [np.ascontiguousarray(s) for s in split(full, lay)]

    def held(self, p, full):
        """Each mesh rank's tensor of a full one: its TP shard, or its DP piece of it."""
        out = []
        shards = self.shards(p, full)
        for m in range(self.tp * (self.dp or 1)):
            shard = shards[m % self.tp]
            if not self.dp:
                out.append(shard)
                continue
            b, e = pieces_of(shard.shape, self.dp, self.partition)[m // self.tp]
            out.append(np.ascontiguousarray(shard.reshape(-1)[b:e] if self.partition == "zero" else shard[b:e]))
        return out

    def tp_shards(self, p, held):
        """Each TP rank's shard from every mesh rank's tensor (its DP pieces put back together)."""
        shapes = self.local_shapes(p)
        shards = []
        for t in range(self.tp):
            mine = [np.asarray(held[d * self.tp + t]) for d in range(self.dp or 1)]
            if not self.dp:
                shards.append(mine[0].reshape(shapes[t]))
            elif self.partition == "zero":
                shards.append(np.concatenate([x.reshape(-1) for x in mine]).reshape(shapes[t]))
            else:
                shards.append(np.concatenate([x.reshape((-1,) + tuple(shapes[t][1:])) for x in mine]).reshape(shapes[t]))
        return shards

    def assemble(self, p, shards):
        """The full tensor from the TP shards, and the TP ranks whose replicated copy differs from TP rank
        0's bits ([] for a split parameter)."""
        lay = self.layouts[p.name]
        if lay is None:
            return shards[0], [t for t in range(1, self.tp) if not bits_equal(shards[t], shards[0])]
        return np.asarray(assemble([np.ascontiguousarray(s) for s in shards], lay)), []


def bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def per_shard_params(params, plan):
    """The per-shard stand-ins of each TP-split Muon parameter: its TP shards registered as separate
    parameters of their own shapes ({name: [Param per TP rank]}): the negative control's and hypothesis
    (1)'s decomposition. Zero-width shards are kept (the TP run's ranks hold them too)."""
    out = {}
    for p in params:
        if p.split is None or p.resolved_route != "muon" or plan.tp == 1:
            continue
        out[p.name] = [_ShardParam(f"{p.name}#shard{t}", shape, p) for t, shape in enumerate(plan.local_shapes(p))]
    return out


class _ShardParam(Param):
    """A TP shard as a parameter of its own (replicated at tp = 1, route muon); `parent` the full one."""

    def __init__(self, name, shape, parent):
        self.name, self.shape, self.split, self.route = name, tuple(shape), None, "muon"
        self.heads = self.kv_heads = self.fused = None
        self.parent = parent


def stale_heads(spec_fields, parent):
    """Hypothesis (4)'s spec: a shard's own shape but the full model's head count and head geometry (`fused`
    kept: a fused QKV shard's stale count is the fused matrix's heads + 2 kv_heads)."""
    return dict(spec_fields, heads=parent.heads, kv_heads=parent.kv_heads or parent.heads, head_dim=parent.head_dim,
                fused=parent.fused)
