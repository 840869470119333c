"""Well-known public Newton-Schulz routines, transcribed from their published algorithms as
nsverify.torch.check_kernel callables: fn(G: torch.Tensor, steps) -> torch.Tensor.

Each is our own transcription of the published algorithm (the source file and commit named at
each function), with one change everywhere: the compute dtype is a parameter (`dtype`) instead of
the hard-coded bfloat16, so that the same algorithm runs in bf16 and in fp32. Everything else is
kept as published, including what the checks may find: in-place operations on the input,
eps added or clamped, fused addmm, the transpose as a view, what they accept (2-D or batched,
which input dtypes). reports/torch/README.md is what the properties say about each
(tools/report/torch_checks_report.py).
"""

import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tools" / "bench"))

import torch_ns  # noqa: E402  (DeepSpeed's two kernels, transcribed in tools/bench/torch_ns.py)

KELLER = torch_ns.KELLER  # (3.4445, -4.7750, 2.0315)
# Emerging-Optimizers' default "quintic" coefficients (nsverify's "you" schedule), one triple per step, cycled
QUINTIC = [(4.0848, -6.8946, 2.9270), (3.9505, -6.3029, 2.6377), (3.7418, -5.5913, 2.3037), (2.8769, -3.1427, 1.2046),
           (2.8366, -3.0525, 1.2012)]


def keller_jordan(G, steps, dtype=torch.bfloat16):
    """Keller Jordan's zeropower_via_newtonschulz5 (github.com/KellerJordan/Muon, muon.py at 1430c34):
    cast, transpose a tall matrix as a view (mT), X / (||X||_F + 1e-7) per matrix, steps of
    A = X X^T; B = b A + c A A; X = a X + B X; batched over leading dimensions."""
    a, b, c = KELLER
    X = G.to(dtype)
    if G.size(-2) > G.size(-1):
        X = X.mT
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + 1e-7)
    for _ in range(steps):
        A = X @ X.mT
        B = b * A + c * A @ A
        X = a * X + B @ X
    if G.size(-2) > G.size(-1):
        X = X.mT
    return X


def pytorch_muon(G, steps, dtype=torch.bfloat16, eps=1e-7):
    """PyTorch's torch.optim.Muon kernel, _zeropower_via_newtonschulz (torch/optim/_muon.py, torch >= 2.9;
    pytorch/pytorch at b5ee4d7): 2-D only; ortho = grad.bfloat16() (the input itself when it already
    is bf16), its transpose as a view when tall, then ortho.div_(ortho.norm().clamp(min=eps)) in place;
    steps of gram = X X^T; gram_update = addmm(gram, gram, gram, beta=b, alpha=c);
    X = addmm(X, gram_update, X, beta=a)."""
    if G.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    a, b, c = KELLER
    ortho = G.to(dtype)
    if G.size(0) > G.size(1):
        ortho = ortho.T
    ortho.div_(ortho.norm().clamp(min=eps))
    for _ in range(steps):
        gram = ortho @ ortho.T
        gram_update = torch.addmm(gram, gram, gram, beta=b, alpha=c)
        ortho = torch.addmm(ortho, gram_update, ortho, beta=a)
    if G.size(0) > G.size(1):
        ortho = ortho.T
    return ortho


def moonlight(G, steps, dtype=torch.bfloat16):
    """Moonshot AI's Moonlight zeropower_via_newtonschulz5 (github.com/MoonshotAI/Moonlight,
    examples/toy_train.py at abaa96e; Keller Jordan's, 2-D): X = G.bfloat16(), X.T when tall,
    X / (X.norm() + 1e-7), the same loop."""
    assert len(G.shape) == 2
    a, b, c = KELLER
    X = G.to(dtype)
    if G.size(0) > G.size(1):
        X = X.T
    X = X / (X.norm() + 1e-7)
    for _ in range(steps):
        A = X @ X.T
        B = b * A + c * A @ A
        X = a * X + B @ X
    if G.size(0) > G.size(1):
        X = X.T
    return X


def emerging_optimizers(G, steps, dtype=torch.bfloat16, eps=1e-7):
    """NVIDIA Emerging-Optimizers' newton_schulz (emerging_optimizers/orthogonalized_optimizers/muon_utils.py
    at a045ea1), default coefficients "quintic" (cycled), no TP group: the input must be float32 (it
    raises otherwise); transposed as a view when tall; X = F.normalize(x, p=2, dim=(-2, -1), eps)
    (x / max(||x||_F, eps)) in fp32; in bf16 (torch.get_float32_matmul_precision() == "medium")
    X.to(bfloat16) after the normalization; steps of A = X X^T; B = addmm(A, A, A, alpha=c, beta=b);
    X = addmm(X, B, X, alpha=1, beta=a); X.to(float32)."""
    if G.ndim < 2:
        raise ValueError("Input tensor x must have at least 2 dimensions since Muon is not for 1d parameters.")
    if G.dtype != torch.float32:
        raise ValueError(f"Input tensor x must be in float32, got {G.dtype}")
    x = G.mT if G.size(-2) > G.size(-1) else G
    X = torch.nn.functional.normalize(x, p=2, dim=(-2, -1), eps=eps)
    X = X.to(dtype)
    for i in range(steps):
        a, b, c = QUINTIC[i % len(QUINTIC)]
        A = X @ X.mT
        B = torch.addmm(A, A, A, alpha=c, beta=b)
        X = torch.addmm(X, B, X, alpha=1.0, beta=a)
    X = X.to(torch.float32)
    return X.mT if G.size(-2) > G.size(-1) else X


def deepspeed_standard(G, steps):
    """DeepSpeed's zeropower_via_newtonschulz5 (tools/bench/torch_ns.py) computing in the dtype it is handed:
    the kernel `nsv check --framework torch --kind kernel --dtype fp32|bf16` points at in the README."""
    with torch.no_grad():
        return torch_ns.ns_standard(G, steps, G.dtype)


def _in(dtype, routine):
    def fn(G, steps):
        with torch.no_grad():
            return routine(G, steps, dtype=torch_ns.dtype_of(dtype))
    fn.__name__ = fn.__qualname__ = f"{routine.__name__}[{dtype}]"
    return fn


def _deepspeed(kernel):
    def routine(G, steps, dtype):
        return torch_ns.KERNELS[kernel](G, steps, dtype)
    routine.__name__ = f"deepspeed_{kernel}"
    return routine


#: (name, source, the routine, the check's knobs that say what it computes, whether it takes 3-D batches,
#:  the dtype it must be handed: None = the compute dtype)
ROUTINES = [
    ("Keller Jordan zeropower_via_newtonschulz5", "KellerJordan/Muon muon.py @1430c34", keller_jordan,
     dict(kernel="standard"), True, None),
    ("PyTorch torch.optim.Muon _zeropower_via_newtonschulz", "pytorch/pytorch torch/optim/_muon.py @b5ee4d7",
     pytorch_muon, dict(kernel="standard"), False, None),
    ("DeepSpeed zeropower_via_newtonschulz5", "deepspeed/runtime/zero/muon/original_muon.py (tools/bench/torch_ns.py)",
     _deepspeed("standard"), dict(kernel="standard"), True, None),
    ("DeepSpeed zeropower_via_gram_newtonschulz", "deepspeed/runtime/zero/muon/original_muon.py (tools/bench/torch_ns.py)",
     _deepspeed("gram"), dict(kernel="gram"), True, None),
    ("Moonlight zeropower_via_newtonschulz5", "MoonshotAI/Moonlight examples/toy_train.py @abaa96e", moonlight,
     dict(kernel="standard"), False, None),
    ("Emerging-Optimizers newton_schulz (quintic)", "NVIDIA-NeMo/Emerging-Optimizers muon_utils.py @a045ea1",
     emerging_optimizers, dict(kernel="standard", coeffs="you"), False, "fp32"),
]


def runs(dtypes=("bf16", "fp32")):
    """[(name, source, dtype, fn, check_kernel knobs)] for every routine in every dtype."""
    out = []
    for name, source, routine, knobs, batched, input_dtype in ROUTINES:
        for dtype in dtypes:
            out.append((name, source, dtype, _in(dtype, routine),
                        dict(knobs, dtype=dtype, batched=batched, input_dtype=input_dtype)))
    return out
