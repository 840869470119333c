"""OpenBLAS's thread count (lib/include/nsv/blas_threads.hpp): the reference's calls hold one thread
for their duration; the user's code runs on the process's own count, during a check and after it."""
import ctypes
import pathlib
import re

import numpy as np
import pytest

import nsverify


def openblas():
    """The OpenBLAS this process loaded (numpy's and nsverify's: one library, one thread count)."""
    maps = pathlib.Path("/proc/self/maps").read_text()
    paths = sorted(set(re.findall(r"/\S*libopenblas\S*\.so[\w.]*", maps)))
    if not paths:
        pytest.skip("no OpenBLAS loaded in this process")
    return ctypes.CDLL(paths[0])


def test_the_users_code_runs_on_the_processs_openblas_threads():
    ob = openblas()
    ob.openblas_set_num_threads(2)
    seen = []

    def kernel(g, steps):  # the reference itself, so that every property holds
        seen.append(ob.openblas_get_num_threads())
        return nsverify.ns(g, kernel="standard", steps=steps)

    result = nsverify.check_kernel(kernel, kernel="standard", shape=(24, 40), max_success=3,
                                   properties=["transpose_of_input_transposes_output_exactly",
                                               "agrees_with_the_reference_within_its_own_error"])
    assert result, result.table()
    assert seen and set(seen) == {2}  # the CPU backend pinned the process to 1 for good before
    assert ob.openblas_get_num_threads() == 2


def test_the_references_bits_do_not_depend_on_the_processs_openblas_threads():
    ob = openblas()
    g = np.random.default_rng(3).standard_normal((256, 640)).astype(np.float32)
    ob.openblas_set_num_threads(1)
    alone = nsverify.ns(g, kernel="standard")
    spectrum_alone = nsverify.singular_values(g)
    ob.openblas_set_num_threads(2)
    assert nsverify.ns(g, kernel="standard").tobytes() == alone.tobytes()
    assert nsverify.singular_values(g) == spectrum_alone
    assert ob.openblas_get_num_threads() == 2
