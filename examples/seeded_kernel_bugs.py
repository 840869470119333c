"""Seeded bugs in the numpy kernels (numpy_ns.py): realistic one-line mistakes, each one that
check_kernel must catch (python/tests/test_seeded_bugs.py names the property that does)."""

import numpy as np

import numpy_ns as ref


def transpose_rule_inverted(G, steps=5):
    """Gram NS that transposes *wide* matrices instead of tall ones (`<` for `>`), so the Gram loop
    runs on the large, rank-deficient Gram of the long side."""
    X = np.array(G, dtype=np.float32, order="C")
    transposed = X.shape[0] < X.shape[1]
    if transposed:
        X = np.ascontiguousarray(X.T)
    X = ref._normalized(X)
    X = ref._standard_loop(X, steps) if X.shape[0] == X.shape[1] else ref._gram_loop(X, steps)
    return np.ascontiguousarray(X.T) if transposed else X


def gram_restart_dropped(G, steps=5):
    """Gram NS whose restart never happens (restart_at past the last step): Q keeps accumulating."""
    X, transposed = ref._wide(G)
    X = ref._normalized(X)
    X = ref._standard_loop(X, steps) if X.shape[0] == X.shape[1] else ref._gram_loop(X, steps, restart_at=steps)
    return np.ascontiguousarray(X.T) if transposed else X


def batch_shares_one_norm(G, steps=5):
    """Standard NS of a batch that normalizes every matrix by the norm of the whole batch."""
    G = np.asarray(G, dtype=np.float32)
    if G.ndim == 2:
        return ref.standard_ns(G, steps)
    norm = np.float32(np.sqrt(np.sum(np.square(G, dtype=np.float64))))
    out = []
    for g in G:
        X, transposed = ref._wide(g)
        X = ref._standard_loop(X / (norm + np.float32(ref.EPS)), steps)
        out.append(np.ascontiguousarray(X.T) if transposed else X)
    return np.stack(out)


def nan_silently_zeroed(G, steps=5):
    """Standard NS that "cleans" its input with nan_to_num, turning a NaN gradient into a finite update."""
    return ref.standard_ns(np.nan_to_num(np.asarray(G, dtype=np.float32), nan=0.0, posinf=0.0, neginf=0.0), steps)


def inplace_normalization(G, steps=5):
    """Standard NS that normalizes the caller's array in place (G /= ||G||) to save a copy: the gradient (or
    the momentum buffer) it was handed is changed behind the caller's back."""
    G = np.asarray(G)
    G /= np.float32(np.sqrt(np.sum(np.square(G, dtype=np.float64)))) + np.float32(ref.EPS)
    X, transposed = ref._wide(G)
    X = ref._standard_loop(X, steps)
    return np.ascontiguousarray(X.T) if transposed else X
