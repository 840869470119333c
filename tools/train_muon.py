"""Gradients from training (tools/make_grads.py --train): the seed's minimal Llama and a 4-layer one,
trained with Muon on a packaged text corpus, their gradients dumped at several points of training.

Corpus. The license texts of Debian's base-files package (/usr/share/common-licenses: Apache-2.0,
Artistic, BSD, CC0-1.0, GFDL-1.2/1.3, GPL-1/2/3, LGPL-2/2.1/3, MPL-1.1/2.0; the three symlinks
GFDL, GPL, LGPL are left out as duplicates), read in name order and joined by a blank line. Why
these: base-files is Essential, so every Debian machine has the same bytes (their sha256 are
recorded, and a mismatch is refused rather than silently training on other text); 237 KB of
plain-ASCII English prose, of which 300 steps of 8 x 128 tokens draw about 1.4 passes over the
training part (the held-out loss stops improving near step 200), and nothing to download. Tokens are bytes (all < 128, so vocab 128 is
exact; a byte >= 128 would be mapped to '?'). The last 10% of the joined text is held out: the
training windows start in the first 90%, a fixed set of 16 windows of the rest gives the eval loss.

Optimizer. Muon on every decoder-layer matrix (q/k/v/o, gate/up/down), written from DeepSpeed's
deepspeed/runtime/zero/muon/original_muon.py at commit edaa7221267243c7be7fb49c5d5f5c4fb97b4641:
  newton_schulz   zeropower_via_newtonschulz5, lines 37-65: keller's (a, b, c) = (3.4445, -4.7750,
                  2.0315) (line 48), transpose a tall matrix (52-53), X / (||X||_F + 1e-7) (56),
                  5 steps of A = X X^T, B = b A + c A A, X = a X + B X (58-61), in float32 (the
                  compute dtype where the accelerator has no bf16, line 50);
  muon_update     lines 146-164: momentum.lerp_(grad, 1 - beta) (148), Nesterov
                  update = grad.lerp_(momentum, beta) (149), NS (160), update *= max(1,
                  rows / cols)**0.5 of the whole matrix (161), beta = 0.95;
  the step        SingleDeviceMuonWithAuxAdam.step, lines 425-426: p.mul_(1 - lr * wd),
                  p.add_(update, alpha=-lr).
AdamW on the embedding, the RMSNorm weights and lm_head: adam_update, lines 267-272, and the step
of lines 440-441, betas (0.9, 0.95) and eps 1e-10 (the defaults of lines 395-397).

What is dumped. The gradient at step t is the one computed at the weights after t updates (step 0:
at init), taken before the optimizer touches it (muon_update overwrites grad in place). Per model
and dumped step, one folder that `nsv step --grads` reads as it is:
    <model>/ckpt<ttt>/step0/<name>.npy   the seven matrices of the dumped layer
    <model>/ckpt<ttt>/grads.json         model dims, layer, training step, files
and training.json at the top: corpus, seeds, hyper-parameters, loss curves, torch version, command.
Storage is float16 (a float32 layer is 2.5 MB per dump; 8 dumps would be 20 MB): each matrix is
first multiplied by the power of two 2^k that puts its largest magnitude in [1, 2) (exact in
float32), so that nearly every entry is a normal float16 and the only rounding is float16's own
(relative error <= 2^-11 per entry; the measured Frobenius-relative error of every file is in
grads.json). k is recorded. Muon's update does not depend on the gradient's scale (NS normalizes
it; the 1e-7 of the normalization is 1e-9 of these norms), nor do the spectral measures of the
report, so the stored matrices are used as they are.
"""

import hashlib
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench"))
# The docstring's newton_schulz is torch_ns.ns_standard, the coefficients torch_ns.KELLER (the
# docstring is recorded in training.json, so it keeps its words).
import torch_ns  # noqa: E402

CORPUS_DIR = "/usr/share/common-licenses"
# name -> sha256 of the texts of Debian 12's base-files (12.4+deb12u11) (the corpus is refused if any differs).
CORPUS_FILES = {
    "Apache-2.0": "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30",
    "Artistic": "b7fd9b73ea99602016a326e0b62e6646060d18febdd065ceca8bb482208c3d88",
    "BSD": "5d588eb3b157d52112afea935c88a7ff9efddc1e2d95a42c25d3b96ad9055008",
    "CC0-1.0": "a2010f343487d3f7618affe54f789f5487602331c0a8d03f49e9a7c547cf0499",
    "GFDL-1.2": "d8e94ae5fdb5433fcae2961aeb1a8cf17174d6f4a0465d24bf37dd8a038bd439",
    "GFDL-1.3": "110535522396708cea37c72a802c5e7e81391139f5f7985631c93ef242b206a4",
    "GPL-1": "d77d235e41d54594865151f4751e835c5a82322b0e87ace266567c3391a4b912",
    "GPL-2": "8177f97513213526df2cf6184d8ff986c675afb514d4e68a404010521b880643",
    "GPL-3": "3972dc9744f6499f0f9b2dbf76696f2ae7ad8af9b23dde66d6af86c9dfb36986",
    "LGPL-2": "681e386e44a19d7d0674b4320272c90e66b6610b741e7e6305f8219c42e85366",
    "LGPL-2.1": "dc626520dcd53a22f727af3ee42c770e56c97a64fe3adb063799d8ab032fe551",
    "LGPL-3": "e3a994d82e644b03a792a930f574002658412f62407f5fee083f2555c5f23118",
    "MPL-1.1": "f849fc26a7a99981611a3a370e83078deb617d12a45776d6c4cada4d338be469",
    "MPL-2.0": "fab3dd6bdab226f1c08630b1dd917e11fcb4ec5e1e020e2c16f83a0a13863e85",
}

MATRICES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def read_corpus(np):
    """The joined texts as uint8 tokens, and what was read (name, bytes, sha256)."""
    parts, record = [], []
    for name in sorted(CORPUS_FILES):
        path = os.path.join(CORPUS_DIR, name)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise SystemExit("make_grads.py --train: cannot read the corpus file %s (%s); it comes with Debian's "
                             "base-files package" % (path, e.strerror))
        digest = sha256_bytes(data)
        if digest != CORPUS_FILES[name]:
            raise SystemExit("make_grads.py --train: %s has sha256 %s, expected %s (another base-files version?): "
                             "the fixtures would not be reproducible" % (path, digest, CORPUS_FILES[name]))
        parts.append(data)
        record.append(dict(name=name, bytes=len(data), sha256=digest))
    tokens = np.frombuffer(b"\n\n".join(parts), dtype=np.uint8).copy()
    tokens[tokens >= 128] = ord("?")
    return tokens, record


def muon_update(torch, grad, momentum, beta, ns_steps=5, nesterov=True):
    """original_muon.py:146-164 (whole-matrix path). Overwrites grad, as DeepSpeed's does."""
    momentum.lerp_(grad, 1 - beta)
    update = grad.lerp_(momentum, beta) if nesterov else momentum
    update = torch_ns.ns_standard(update, ns_steps, torch.float32)
    update *= max(1, grad.size(-2) / grad.size(-1)) ** 0.5
    return update


def adam_update(grad, buf1, buf2, step, betas, eps):
    """original_muon.py:267-272."""
    buf1.lerp_(grad, 1 - betas[0])
    buf2.lerp_(grad.square(), 1 - betas[1])
    buf1c = buf1 / (1 - betas[0] ** step)
    buf2c = buf2 / (1 - betas[1] ** step)
    return buf1c / (buf2c.sqrt() + eps)


class MuonWithAuxAdam:
    """SingleDeviceMuonWithAuxAdam.step (original_muon.py:404-443) for two fixed groups."""

    def __init__(self, torch, muon_params, adam_params, hp):
        self.torch, self.hp = torch, hp
        self.muon = [(p, torch.zeros_like(p)) for p in muon_params]
        self.adam = [(p, torch.zeros_like(p), torch.zeros_like(p)) for p in adam_params]
        self.steps = 0

    def step(self):
        hp = self.hp
        with self.torch.no_grad():
            for p, mom in self.muon:
                u = muon_update(self.torch, p.grad, mom, hp["momentum"], hp["ns_steps"], hp["nesterov"])
                p.mul_(1 - hp["muon_lr"] * hp["weight_decay"])
                p.add_(u.reshape(p.shape), alpha=-hp["muon_lr"])
            self.steps += 1
            for p, m1, m2 in self.adam:
                u = adam_update(p.grad, m1, m2, self.steps, hp["adam_betas"], hp["adam_eps"])
                p.mul_(1 - hp["adam_lr"] * hp["weight_decay"])
                p.add_(u, alpha=-hp["adam_lr"])


def layer_matrices(model, layer):
    lay = model.layers[layer]
    return {n: getattr(lay.self_attn if n in ATTENTION else lay.mlp, n).weight for n in MATRICES}


def batch_of(torch, tokens, starts, seq_len):
    idx = starts[:, None] + torch.arange(seq_len + 1)[None, :]
    return tokens[idx]


def loss_of(torch, model, batch, vocab):
    logits = model(batch[:, :-1])
    return torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), batch[:, 1:].reshape(-1))


def save_fp16(np, path, g):
    """g * 2^k as float16, k putting max |g| in [1, 2); what was stored and how close it is."""
    a = g.detach().cpu().numpy().astype(np.float32)
    peak = float(np.abs(a).max())
    k = -math.floor(math.log2(peak)) if peak > 0 else 0
    scaled = a * np.float32(2.0 ** k)  # exact: a power of two, far from float32's range limits
    stored = np.ascontiguousarray(scaled.astype(np.float16))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path, stored)
    s64, x64 = stored.astype(np.float64), scaled.astype(np.float64)
    with open(path, "rb") as f:
        digest = sha256_bytes(f.read())
    return dict(shape=list(stored.shape), dtype="float16", scale_exponent=k, sha256=digest,
                fro_norm=float(np.linalg.norm(s64)),
                fp16_rel_error=float(np.linalg.norm(s64 - x64) / np.linalg.norm(x64)),
                subnormal_fraction=float(np.mean((stored != 0) & (np.abs(s64) < 2.0 ** -14))))


def train_model(torch, np, build_model, init_weights, dims, name, layer, tokens, hp, seed, out_dir, dump_at):
    """Trains one model; writes its dump folders; returns its training record."""
    gen = torch.Generator().manual_seed(seed)
    model = build_model(torch, dims)
    init_weights(torch, model, gen, dims["initializer_range"])
    model.train()
    muon_params = [p for n, p in model.named_parameters() if p.ndim == 2 and "layers." in n]
    adam_params = [p for n, p in model.named_parameters() if not (p.ndim == 2 and "layers." in n)]
    opt = MuonWithAuxAdam(torch, muon_params, adam_params, hp)
    vocab, S, B = dims["vocab_size"], hp["seq_len"], hp["batch"]
    split = int(len(tokens) * 0.9)
    corpus = torch.from_numpy(tokens.astype(np.int64))
    # Same batches for every model: their own generator, seeded independently of the init.
    data_gen = torch.Generator().manual_seed(seed + 2)
    eval_starts = split + torch.randint(0, len(tokens) - split - S - 1, (16,), generator=data_gen)
    eval_batch = batch_of(torch, corpus, eval_starts, S)
    mats = layer_matrices(model, layer)
    losses, evals, dumps = [], [], []
    for t in range(hp["steps"] + 1):
        starts = torch.randint(0, split - S - 1, (B,), generator=data_gen)
        opt_zero(model)
        loss = loss_of(torch, model, batch_of(torch, corpus, starts, S), vocab)
        loss.backward()
        losses.append(float(loss.item()))
        if t % hp["eval_every"] == 0:
            with torch.no_grad():
                evals.append(dict(step=t, loss=float(loss_of(torch, model, eval_batch, vocab).item())))
        if t in dump_at:
            dumps.append(write_dump(np, out_dir, name, dims, layer, t, mats, losses[-1]))
        if t < hp["steps"]:
            opt.step()
    return dict(name=name, layers=dims["num_hidden_layers"], dumped_layer=layer, init_seed=seed,
                loss_per_step=losses, eval_loss=evals, checkpoints=dumps)


def opt_zero(model):
    for p in model.parameters():
        p.grad = None


def write_dump(np, out_dir, model_name, dims, layer, step, mats, loss):
    folder = "%s/ckpt%03d" % (model_name, step)
    files = {}
    for n in MATRICES:
        rel = "step0/%s.npy" % n
        files[rel] = save_fp16(np, os.path.join(out_dir, folder, rel), mats[n].grad)
    desc = dict(
        description=("Gradient of layer %d's seven Muon matrices of a %d-layer Llama after %d Muon training steps "
                     "(tools/make_grads.py --train), float16 .npy, each scaled by 2^scale_exponent"
                     % (layer, dims["num_hidden_layers"], step)),
        generator="tools/make_grads.py --train", model=dims, layer=layer, training_step=step, loss=loss,
        names=list(MATRICES), files=files)
    with open(os.path.join(out_dir, folder, "grads.json"), "w") as f:
        json.dump(desc, f, indent=1)
        f.write("\n")
    return dict(step=step, folder=folder, loss=loss)


def run_training(torch, np, build_model, init_weights, base_dims, args, command):
    """Both models, training.json; returns the files written (relative to args.train)."""
    tokens, corpus = read_corpus(np)
    hp = dict(steps=args.train_steps, batch=args.train_batch, seq_len=args.train_seq_len, eval_every=10,
              muon_lr=args.muon_lr, momentum=0.95, nesterov=True, ns_steps=5, ns="standard (zeropower_via_newtonschulz5)",
              ns_dtype="float32", coeffs=list(torch_ns.KELLER), adam_lr=args.adam_lr, adam_betas=[0.9, 0.95], adam_eps=1e-10,
              weight_decay=0.0)
    dump_at = sorted({int(s) for s in args.dump_at.split(",")})
    if not dump_at or dump_at[0] < 0 or dump_at[-1] > hp["steps"]:
        raise SystemExit("make_grads.py --train: --dump-at %s must lie in 0..--train-steps %d" % (args.dump_at, hp["steps"]))
    models = []
    for name, layers, layer in (("llama1", 1, 0), ("llama4", 4, args.llama4_layer)):
        dims = dict(base_dims, num_hidden_layers=layers)
        if not 0 <= layer < layers:
            raise SystemExit("make_grads.py --train: --llama4-layer %d is not a layer of a %d-layer model" % (layer, layers))
        models.append(train_model(torch, np, build_model, init_weights, dims, name, layer, tokens, hp, args.seed,
                                  args.train, dump_at))
        print("%s: loss %.4f -> %.4f over %d steps" % (name, models[-1]["loss_per_step"][0],
                                                       models[-1]["loss_per_step"][-1], hp["steps"]))
    meta = dict(
        description=__doc__.strip().split("\n")[0],
        layout=__doc__.strip(),
        command=command, generator="tools/make_grads.py --train (tools/train_muon.py)",
        seed=args.seed, data_seed=args.seed + 2,
        seeds_note=("each model's weights from torch.Generator().manual_seed(seed) in module order (the 1-layer "
                    "model's init is that of fixtures/grads/weights); the batch windows and the eval windows from "
                    "manual_seed(seed + 2), the same for both models"),
        corpus=dict(folder=CORPUS_DIR, package="base-files", files=corpus, tokens=int(len(tokens)),
                    train_tokens=int(len(tokens) * 0.9), tokenizer="bytes (all < 128 = vocab_size)"),
        hyper=hp, dump_at=dump_at,
        loss="next-token cross entropy, mean over batch*seq_len tokens; eval: 16 fixed held-out windows",
        models=models, torch_version=torch.__version__, numpy_version=np.__version__,
        deterministic="torch.use_deterministic_algorithms(True), one torch and one BLAS thread, float32 on the CPU")
    with open(os.path.join(args.train, "training.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    return 0
