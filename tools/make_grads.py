#!/usr/bin/env python3
"""Generate realistic Muon gradient fixtures from a minimal Llama decoder (pure PyTorch).

The model reproduces the shape used in the seed issue (seed/muon-autotp-issue.txt):
hidden 256, 8 attention heads of head_dim 32 (num_kv_heads 8, i.e. no GQA), intermediate 512,
vocab 128, 1 decoder layer. It is written out by hand (transformers is not needed) following
HF's LlamaForCausalLM:

    token embedding -> [ RMSNorm -> causal MHA with RoPE -> residual
                         RMSNorm -> SwiGLU MLP -> residual ] x 1 -> final RMSNorm -> lm_head

- RMSNorm: x * rsqrt(mean(x^2) + 1e-6) * weight, weight initialised to ones.
- RoPE: theta 10000, HF "rotate_half" convention (first half / second half of each head).
- Attention: q_proj/k_proj/v_proj/o_proj without bias, softmax(QK^T / sqrt(head_dim)) with a
  causal mask.
- MLP: down_proj(silu(gate_proj(x)) * up_proj(x)), no bias.
- lm_head untied from the embedding.
- Every Linear weight is [out, in] like nn.Linear; Linear and Embedding weights are drawn from
  N(0, 0.02^2) (HF Llama's initializer_range), in that module order, from one seeded generator.
- Loss: next-token cross entropy (logits[:, :-1] against tokens[:, 1:]), mean over tokens. At
  init the logits are nearly uniform, so the loss is ~ ln(128) = 4.852.

Everything runs in float32 on the CPU, deterministically (torch.use_deterministic_algorithms,
one torch thread, and OPENBLAS_NUM_THREADS=1 set before torch loads, because Debian's torch
calls OpenBLAS, whose pool ignores torch.set_num_threads), so rerunning the command reproduces the files bit for bit on the same torch build.

The three-step sequence (default --sequence fixed-weights): the weights stay at their initial
values and three different random token batches (batch 0, 1, 2, each B x S uniform tokens) give
the three gradients. Why not SGD steps: the fixtures feed Muon's momentum under different
sharding strategies, and each strategy produces a *different* update. A gradient sequence that
depended on some other optimizer's trajectory (SGD) would be no more "real" for any of them, and
one that depended on Muon's own update would differ per strategy. Gradients taken at a fixed point
on independent batches are strategy-independent, have realistic structure (same low-rank-ish
spectra as training gradients at that point) and still differ from step to step, which is what
the momentum EMA needs. `--sequence sgd` is available for comparison: it takes plain SGD steps
(--lr) on the *same* three batches between the gradients instead.

Outputs (under --out, default fixtures/grads):
    step{0,1,2}/<name>.npy   gradients, float32, C order, shape [out, in]
    weights/<name>.npy       the initial weights of the same matrices
    grads.json               how they were made (seed, dims, losses, shapes, torch version, command)
for name in q_proj k_proj v_proj o_proj gate_proj up_proj down_proj (layer 0).

--runs DIR: Muon training runs at tp = 1, 2, 4 dumped for `nsv diagnose` (tools/muon_runs.py).
--train DIR: this model and a 4-layer one trained with Muon (AdamW for the rest) for 300 steps on
Debian's license texts, their gradients dumped at steps 0, 10, 100, 300 (tools/train_muon.py; the
checked-in fixtures/training). The default outputs above are unchanged by either.
"""

import argparse
import hashlib
import json
import math
import os
import platform
import shlex
import sys

MUON_NAMES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

DIMS = dict(
    hidden_size=256,
    num_attention_heads=8,
    num_key_value_heads=8,
    head_dim=32,
    intermediate_size=512,
    vocab_size=128,
    num_hidden_layers=1,
    rms_norm_eps=1e-6,
    rope_theta=10000.0,
    initializer_range=0.02,
    tie_word_embeddings=False,
    attention_bias=False,
    mlp_bias=False,
)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=("Build a minimal 1-layer Llama (hidden 256, 8 heads x 32, intermediate 512, "
                     "vocab 128) in pure PyTorch, and save the gradients of layer 0's seven Muon "
                     "matrices for a 3-step sequence, plus their initial weights, as float32 .npy."),
        epilog=("Example: /usr/bin/python3 tools/make_grads.py --out fixtures/grads\n"
                "Requires PyTorch and NumPy (Debian: apt-get install python3-torch python3-numpy)."),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="fixtures/grads",
                   help="output directory (default: %(default)s)")
    p.add_argument("--seed", type=int, default=1234,
                   help="seed for the weight init and the token batches (default: %(default)s)")
    p.add_argument("--batch", type=int, default=4, help="sequences per batch (default: %(default)s)")
    p.add_argument("--seq-len", type=int, default=64, help="tokens per sequence (default: %(default)s)")
    p.add_argument("--steps", type=int, default=3,
                   help="number of gradient steps to save as step0..step{N-1} (default: %(default)s)")
    p.add_argument("--sequence", choices=["fixed-weights", "sgd"], default="fixed-weights",
                   help=("fixed-weights: weights stay at init, a new batch per step (default); "
                         "sgd: a plain SGD step with --lr between steps, a new batch per step"))
    p.add_argument("--lr", type=float, default=0.05,
                   help="SGD learning rate for --sequence sgd (default: %(default)s)")
    p.add_argument("--runs", metavar="DIR",
                   help=("instead of gradients: Muon training runs at tp=1 and --tps under three semantics, "
                         "dumped as safetensors into DIR (tools/muon_runs.py; e.g. fixtures/runs)"))
    p.add_argument("--tps", default="2,4", help="--runs: tensor-parallel degrees (default: %(default)s)")
    p.add_argument("--dump-params", default="q_proj,o_proj",
                   help="--runs: the matrices to dump (default: %(default)s)")
    p.add_argument("--muon-lr", type=float, default=0.02, help="--runs, --train: Muon learning rate (default: %(default)s)")
    p.add_argument("--train", metavar="DIR",
                   help=("instead of gradients: train the 1-layer model and a 4-layer one with Muon on Debian's license "
                         "texts and dump gradients during training into DIR (tools/train_muon.py; e.g. fixtures/training)"))
    p.add_argument("--train-steps", type=int, default=300, help="--train: optimizer steps (default: %(default)s)")
    p.add_argument("--dump-at", default="0,10,100,300",
                   help="--train: the steps whose gradients are dumped (default: %(default)s)")
    p.add_argument("--train-batch", type=int, default=8, help="--train: sequences per batch (default: %(default)s)")
    p.add_argument("--train-seq-len", type=int, default=128, help="--train: tokens per sequence (default: %(default)s)")
    p.add_argument("--adam-lr", type=float, default=3e-3,
                   help="--train: AdamW learning rate of the embedding, norms and lm_head (default: %(default)s)")
    p.add_argument("--llama4-layer", type=int, default=3,
                   help="--train: the layer of the 4-layer model whose gradients are dumped (default: %(default)s)")
    return p.parse_args(argv)


def import_torch():
    # Debian's torch runs GEMMs on the system OpenBLAS, whose thread pool ignores
    # torch.set_num_threads and is sized from these variables when the library loads. Pin it to
    # one thread so the bits do not depend on the machine's core count.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    try:
        import numpy  # noqa: F401  (checked here, used in main)
        import torch
    except ImportError as e:
        sys.stderr.write(
            "make_grads.py: cannot import %s (%s).\n"
            "It needs PyTorch and NumPy: on Debian run `apt-get install python3-torch python3-numpy`"
            " and use /usr/bin/python3.\n" % (e.name or "a module", e))
        sys.exit(2)
    return torch


def build_model(torch, dims=DIMS):
    nn = torch.nn
    F = torch.nn.functional
    d = dims
    H, hd, D = d["num_attention_heads"], d["head_dim"], d["hidden_size"]
    KV = d["num_key_value_heads"]

    class RMSNorm(nn.Module):
        def __init__(self, dim, eps):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))
            self.eps = eps

        def forward(self, x):
            var = x.pow(2).mean(-1, keepdim=True)
            return self.weight * (x * torch.rsqrt(var + self.eps))

    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = nn.Linear(D, H * hd, bias=False)
            self.k_proj = nn.Linear(D, KV * hd, bias=False)
            self.v_proj = nn.Linear(D, KV * hd, bias=False)
            self.o_proj = nn.Linear(H * hd, D, bias=False)

        def forward(self, x, cos, sin, mask):
            B, S, _ = x.shape
            q = self.q_proj(x).view(B, S, H, hd).transpose(1, 2)
            k = self.k_proj(x).view(B, S, KV, hd).transpose(1, 2)
            v = self.v_proj(x).view(B, S, KV, hd).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            if KV != H:  # GQA: repeat KV heads (not used at the default dims)
                k = k.repeat_interleave(H // KV, dim=1)
                v = v.repeat_interleave(H // KV, dim=1)
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(hd) + mask
            probs = torch.softmax(scores, dim=-1)
            out = (probs @ v).transpose(1, 2).reshape(B, S, H * hd)
            return self.o_proj(out)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            I = d["intermediate_size"]
            self.gate_proj = nn.Linear(D, I, bias=False)
            self.up_proj = nn.Linear(D, I, bias=False)
            self.down_proj = nn.Linear(I, D, bias=False)

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class DecoderLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm = RMSNorm(D, d["rms_norm_eps"])
            self.self_attn = Attention()
            self.post_attention_layernorm = RMSNorm(D, d["rms_norm_eps"])
            self.mlp = MLP()

        def forward(self, x, cos, sin, mask):
            x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
            return x + self.mlp(self.post_attention_layernorm(x))

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(d["vocab_size"], D)
            self.layers = nn.ModuleList([DecoderLayer() for _ in range(d["num_hidden_layers"])])
            self.norm = RMSNorm(D, d["rms_norm_eps"])
            self.lm_head = nn.Linear(D, d["vocab_size"], bias=False)

        def forward(self, tokens):
            B, S = tokens.shape
            inv_freq = 1.0 / (d["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
            pos = torch.arange(S, dtype=torch.float32)
            freqs = torch.outer(pos, inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos()[None, None], emb.sin()[None, None]
            mask = torch.full((S, S), float("-inf")).triu(1)
            x = self.embed_tokens(tokens)
            for layer in self.layers:
                x = layer(x, cos, sin, mask)
            return self.lm_head(self.norm(x))

    return Llama()


def init_weights(torch, model, gen, std):
    # HF LlamaPreTrainedModel._init_weights: Linear and Embedding ~ N(0, std), norms = 1.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.Linear, torch.nn.Embedding)):
                m.weight.copy_(torch.randn(m.weight.shape, generator=gen, dtype=torch.float32) * std)


def command_line(argv):
    """The command as run from the repository root."""
    return " ".join(shlex.quote(a) for a in
                    [sys.executable, "tools/make_grads.py"] + list(argv if argv is not None else sys.argv[1:]))


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def main(argv=None):
    args = parse_args(argv)
    torch = import_torch()
    import numpy as np

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    torch.set_default_dtype(torch.float32)

    gen = torch.Generator().manual_seed(args.seed)
    model = build_model(torch)
    init_weights(torch, model, gen, DIMS["initializer_range"])
    model.train()
    layer = model.layers[0]
    mats = {n: getattr(layer.self_attn if n.endswith(("q_proj", "k_proj", "v_proj", "o_proj"))
                       else layer.mlp, n).weight for n in MUON_NAMES}

    if args.runs:
        return write_runs(args, argv, torch, np, model)
    if args.train:
        import train_muon
        os.makedirs(args.train, exist_ok=True)
        return train_muon.run_training(torch, np, build_model, init_weights, DIMS, args, command_line(argv))

    os.makedirs(args.out, exist_ok=True)
    files = {}

    def save(rel, t):
        path = os.path.join(args.out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        a = np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32, copy=False))
        np.save(path, a)
        files[rel] = dict(shape=list(a.shape), dtype="float32", sha256=sha256(path),
                          fro_norm=float(np.linalg.norm(a.astype(np.float64))))

    for n in MUON_NAMES:
        save("weights/%s.npy" % n, mats[n])

    # Token batches come from their own generator (seeded seed+1) so that changing the number
    # of steps or the init does not shift the batches.
    tok_gen = torch.Generator().manual_seed(args.seed + 1)
    batches = [torch.randint(0, DIMS["vocab_size"], (args.batch, args.seq_len), generator=tok_gen)
               for _ in range(args.steps)]

    losses = []
    for step, tokens in enumerate(batches):
        model.zero_grad(set_to_none=True)
        logits = model(tokens)
        loss = torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, DIMS["vocab_size"]), tokens[:, 1:].reshape(-1))
        loss.backward()
        losses.append(float(loss.item()))
        for n in MUON_NAMES:
            save("step%d/%s.npy" % (step, n), mats[n].grad)
        if args.sequence == "sgd":
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(p.grad, alpha=-args.lr)
        print("step %d  loss %.6f" % (step, losses[-1]))

    cmd = command_line(argv)
    meta = dict(
        description=("Gradients of layer 0's seven Muon matrices of a minimal 1-layer Llama "
                     "decoder (tools/make_grads.py), float32 C-order .npy, shape [out, in]."),
        command=cmd,
        generator="tools/make_grads.py",
        seed=args.seed,
        token_seed=args.seed + 1,
        batch=args.batch,
        seq_len=args.seq_len,
        tokens="uniform random integers in [0, vocab_size), one fresh B x S batch per step",
        steps=args.steps,
        sequence=args.sequence,
        sequence_note=("fixed-weights: all gradients taken at the initial weights (weights/), one "
                       "different batch per step; strategy-independent input for Muon momentum."
                       if args.sequence == "fixed-weights" else
                       "sgd: plain SGD step (lr=%g, all parameters) between gradients; weights/ "
                       "holds the weights of step 0 only." % args.lr),
        lr=args.lr if args.sequence == "sgd" else None,
        loss="next-token cross entropy, mean over batch*(seq_len-1) tokens",
        loss_per_step=losses,
        loss_expected_at_init=math.log(DIMS["vocab_size"]),
        model=dict(DIMS, architecture=(
            "embed -> [RMSNorm -> causal MHA (RoPE, rotate_half) -> +res; RMSNorm -> SwiGLU -> +res]"
            " -> RMSNorm -> lm_head"), init="Linear/Embedding N(0, 0.02^2), RMSNorm weights 1"),
        names=MUON_NAMES,
        layer=0,
        shapes={n: list(mats[n].shape) for n in MUON_NAMES},
        roles={"q_proj": "column-parallel (dim 0), 8 heads on dim 0",
               "k_proj": "column-parallel (dim 0), 8 KV heads on dim 0",
               "v_proj": "column-parallel (dim 0), 8 KV heads on dim 0",
               "o_proj": "row-parallel (dim 1), heads on dim 1",
               "gate_proj": "column-parallel (dim 0)", "up_proj": "column-parallel (dim 0)",
               "down_proj": "row-parallel (dim 1)"},
        dtype="float32",
        device="cpu",
        deterministic=True,
        num_threads=1,
        blas_threads_env="OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=MKL_NUM_THREADS=1 (set by the script)",
        torch_version=torch.__version__,
        numpy_version=np.__version__,
        python_version=platform.python_version(),
        files=files,
    )
    with open(os.path.join(args.out, "grads.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=False)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(args.out, r)) for r in files)
    print("wrote %d arrays (%.1f KiB) and grads.json to %s" % (len(files), total / 1024.0, args.out))
    return 0


def write_runs(args, argv, torch, np, model):
    import muon_runs
    tok_gen = torch.Generator().manual_seed(args.seed + 1)
    batches = [torch.randint(0, DIMS["vocab_size"], (args.batch, args.seq_len), generator=tok_gen)
               for _ in range(args.steps)]
    tps = [int(t) for t in args.tps.split(",")]
    dump_params = args.dump_params.split(",")
    beta = 0.95
    files, losses = muon_runs.make_runs(torch, np, model, DIMS, MUON_NAMES, batches, args.runs, args.muon_lr, beta,
                                        dump_params, tps)
    cmd = command_line(argv)
    meta = dict(
        description=muon_runs.__doc__.strip().split("\n")[0],
        layout=muon_runs.__doc__.strip(),
        command=cmd, generator="tools/make_grads.py --runs (tools/muon_runs.py)",
        seed=args.seed, token_seed=args.seed + 1, batch=args.batch, seq_len=args.seq_len, steps=args.steps,
        dumped_step=args.steps - 1, model=DIMS, tps=tps, dump_params=dump_params,
        muon=dict(lr=args.muon_lr, momentum=beta, nesterov=True, wd=0.0, ns="standard", ns_steps=5, ns_dtype="fp32",
                  coeffs="keller", eps=1e-7),
        loss_per_forward=losses, torch_version=torch.__version__, numpy_version=np.__version__,
        files={f: sha256(os.path.join(args.runs, f)) for f in files},
        diagnose=("nsv diagnose --config fixtures/models/tiny-llama.json --tp N --kernel standard "
                  "--reference fixtures/runs/reference --candidate fixtures/runs/tpN,fixtures/runs/tpN/SEMANTICS"))
    with open(os.path.join(args.runs, "runs.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(args.runs, f)) for f in files)
    print("wrote %d safetensors files (%.1f KiB) and runs.json to %s" % (len(files), total / 1024.0, args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
