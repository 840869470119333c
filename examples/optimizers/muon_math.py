"""Muon's arithmetic, once for every optimizer of the catalogue: Newton-Schulz, momentum, the update's
scale, the decoupled weight-decay step, and AdamW for the parameters Muon does not take.

Written from the published algorithms (no code copied):
  Keller Jordan's Muon, github.com/KellerJordan/Muon, muon.py: `zeropower_via_newtonschulz5` (the quintic
    (3.4445, -4.7750, 2.0315), X / (||X||_F + 1e-7), the wide orientation), `muon_update` (momentum by
    lerp, Nesterov, the scale max(1, rows/cols) ** 0.5), `adam_update` and `MuonWithAuxAdam.step`
    (p *= 1 - lr * wd, then p -= lr * update).
  DeepSpeed's deepspeed/runtime/zero/muon/original_muon.py (`muon_update`, `SingleDeviceMuon`): the same
    arithmetic, in fp32 where the accelerator has no bf16.
  Moonlight (MoonshotAI, arXiv 2502.16982, `adjust_lr_for_muon`): the scale 0.2 * sqrt(max(A, B)), which
    matches the update's RMS to AdamW's.

Everything is float32, so that whether a tensor-parallel optimizer reproduces the single-device bits is a
property of its communication and decomposition, not of a precision it chose.
"""

import torch

#: Keller Jordan's quintic coefficients (muon.py, zeropower_via_newtonschulz5).
KELLER_COEFFS = (3.4445, -4.7750, 2.0315)
NS_STEPS = 5
NORM_EPS = 1e-7
SCALE_RULES = ("keller", "moonlight")


def newton_schulz5(G, steps=NS_STEPS):
    """Keller's quintic Newton-Schulz of a 2-D matrix in float32: normalized by its Frobenius norm, iterated
    in the wide orientation (rows <= cols) so that the Gram matrix X X^T is the smaller one."""
    a, b, c = KELLER_COEFFS
    X = G.float()
    tall = X.size(0) > X.size(1)
    if tall:
        X = X.mT
    X = X / (X.norm() + NORM_EPS)
    for _ in range(steps):
        A = X @ X.mT
        B = b * A + c * (A @ A)
        X = a * X + B @ X
    return X.mT.contiguous() if tall else X


def update_scale(shape, rule="keller"):
    """The factor Muon's orthogonalized update is multiplied by, from a matrix shape (rows, cols):
    Keller's max(1, rows/cols) ** 0.5 or Moonlight's 0.2 * sqrt(max(rows, cols)). An empty shape (a rank's
    zero-width shard) has nothing to scale: 1."""
    rows, cols = shape
    if not rows or not cols:
        return 1.0
    if rule == "keller":
        return max(1.0, rows / cols) ** 0.5
    if rule == "moonlight":
        return 0.2 * max(rows, cols) ** 0.5
    raise ValueError(f"scale rule must be one of {SCALE_RULES}, got {rule!r}")


def advance_momentum(buffer, grad, beta, nesterov):
    """Keller's muon_update before the orthogonalization: the buffer becomes the EMA lerp(buffer, grad,
    1 - beta) in place; the returned direction is lerp(grad, buffer, beta) with Nesterov, else the buffer.
    The gradient is left as it was (Keller's lerp_ writes into it; a checker reads it)."""
    buffer.lerp_(grad, 1 - beta)
    return torch.lerp(grad, buffer, beta) if nesterov else buffer.clone()


def decoupled_step(param, update, lr, weight_decay):
    """MuonWithAuxAdam's parameter step: decay first, W <- W (1 - lr wd), then W <- W - lr U."""
    param.mul_(1 - lr * weight_decay)
    param.add_(update.reshape(param.shape), alpha=-lr)


def adamw_direction(grad, state, betas, eps):
    """Keller's adam_update: both moments by lerp, bias-corrected at the state's step count (advanced here)."""
    if not state:
        state.update(exp_avg=torch.zeros_like(grad), exp_avg_sq=torch.zeros_like(grad), step=0)
    state["step"] += 1
    beta1, beta2 = betas
    state["exp_avg"].lerp_(grad, 1 - beta1)
    state["exp_avg_sq"].lerp_(grad.square(), 1 - beta2)
    first = state["exp_avg"] / (1 - beta1 ** state["step"])
    second = state["exp_avg_sq"] / (1 - beta2 ** state["step"])
    return first / (second.sqrt() + eps)
