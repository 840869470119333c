"""Keller Newton-Schulz as most people write it in numpy: correct maths, not bit-reproducible.

A tall matrix is transposed as a *view*, so BLAS sees other strides (and sums in another order)
than for the wide matrix it equals, and the norm is numpy's float32 norm (it overflows at 2^121).
It computes the right map: check_kernel's default promise="map" passes it; promise="bitwise"
fails it on K1 (transpose bits) and K8's extreme magnitudes (python/tests/test_promise.py).
"""
import numpy as np

KELLER = (3.4445, -4.7750, 2.0315)


def plain_ns(G, steps):
    X = np.asarray(G, dtype=np.float32)
    tall = X.shape[0] > X.shape[1]
    if tall:
        X = X.T
    X = X / (np.linalg.norm(X) + np.float32(1e-7))
    a, b, c = (np.float32(k) for k in KELLER)
    for _ in range(steps):
        A = X @ X.T
        X = a * X + (b * A + c * A @ A) @ X
    return X.T if tall else X
