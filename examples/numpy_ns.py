"""Newton-Schulz in plain numpy (float32): DeepSpeed's two kernels (SPEC 1.1, 1.2), written so that
their results depend only on the input values.

Both kernels: cast to float32, transpose a tall matrix into its own contiguous storage (a
transposed *view* would reach the GEMMs with other strides, and so other summation orders, than
the wide matrix it equals), normalize by the Frobenius norm (summed in float64, rounded to
float32) plus eps, iterate with the keller coefficients, transpose back. A 3-D input is a batch of
independent matrices, each computed alone.

This is the implementation that must pass everything it promises (python/tests/test_examples.py).
"""

import numpy as np

KELLER = (3.4445, -4.7750, 2.0315)
EPS = 1e-7


def _wide(G):
    """float32, C order, wide (or square): (X, transposed)."""
    X = np.array(G, dtype=np.float32, order="C")
    if X.shape[0] > X.shape[1]:
        return np.ascontiguousarray(X.T), True
    return X, False


def _normalized(X):
    norm = np.float32(np.sqrt(np.sum(np.square(X, dtype=np.float64))))
    return X / (norm + np.float32(EPS))


def _standard_loop(X, steps, coeffs=KELLER):
    a, b, c = (np.float32(k) for k in coeffs)
    for _ in range(steps):
        A = X @ X.T
        B = b * A + c * A @ A  # (c A) A, as Python groups DeepSpeed's expression
        X = a * X + B @ X
    return X


def _gram_loop(X, steps, coeffs=KELLER, restart_at=2):
    a, b, c = (np.float32(k) for k in coeffs)
    R = X @ X.T
    Q = None
    for i in range(steps):
        if i == restart_at and i != 0:
            X = Q @ X
            R = X @ X.T
            Q = None
        Z = b * R + c * R @ R
        if Q is None:
            Q = Z.copy()
            Q[np.diag_indices_from(Q)] += a
        else:
            Q = a * Q + Z @ Q
        if i < steps - 1 and i + 1 != restart_at:
            RZ = a * R + Z @ R
            R = a * RZ + Z @ RZ
    return X if Q is None else Q @ X


def _per_matrix(kernel):
    def run(G, steps=5):
        G = np.asarray(G)
        if G.ndim == 3:
            return np.stack([kernel(g, steps) for g in G]) if len(G) else np.zeros(G.shape, np.float32)
        return kernel(G, steps)
    run.__name__ = run.__qualname__ = kernel.__name__
    run.__doc__ = kernel.__doc__
    return run


@_per_matrix
def standard_ns(G, steps):
    """DeepSpeed's zeropower_via_newtonschulz5 in numpy float32."""
    X, transposed = _wide(G)
    X = _standard_loop(_normalized(X), steps)
    return np.ascontiguousarray(X.T) if transposed else X


@_per_matrix
def gram_ns(G, steps):
    """DeepSpeed's zeropower_via_gram_newtonschulz in numpy float32 (the standard loop on square matrices)."""
    X, transposed = _wide(G)
    X = _normalized(X)
    X = _standard_loop(X, steps) if X.shape[0] == X.shape[1] else _gram_loop(X, steps)
    return np.ascontiguousarray(X.T) if transposed else X
