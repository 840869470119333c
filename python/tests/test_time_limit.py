"""The checks' time limit on the user's code (timeout=): a call that never returns fails its case with the
limit named, within about the limit, and the check goes on; a limit of 0 is none; a call in another thread
is limited too."""

import threading
import time

import numpy as np

import nsverify


def _sleeps(G, steps):
    time.sleep(3600)
    return G


def _sleeps_on_shards(shards, spec):
    time.sleep(3600)
    return shards


def test_a_kernel_that_never_returns_fails_within_the_limit():
    start = time.monotonic()
    result = nsverify.check_kernel(_sleeps, properties=["REF"], max_success=2, shrink_seconds=0, timeout=0.3)
    assert time.monotonic() - start < 30, "the limit did not stop the call"
    assert not result
    ref = result["agrees_with_the_reference_within_its_own_error"]
    assert ref.status == "fails"
    assert "time limit of 0.3 s" in ref.message and "CallTimeout" in ref.message


def test_a_tp_function_that_never_returns_fails_within_the_limit():
    start = time.monotonic()
    result = nsverify.check_tp(_sleeps_on_shards, max_success=2, diagnosis_cases=0, shrink_seconds=0, timeout=0.3)
    assert time.monotonic() - start < 30
    assert not result
    assert any("time limit of 0.3 s" in p.message for p in result.properties if p.status == "fails")


def test_a_call_within_the_limit_passes_and_leaves_no_alarm_behind():
    def ns(G, steps):
        return nsverify.ns(G, dtype="fp32", products="full")
    result = nsverify.check_kernel(ns, properties=["K2", "REF"], max_success=5, timeout=60)
    assert result, result
    time.sleep(0.1)  # a stray SIGALRM would raise here


def test_the_limit_holds_outside_the_main_thread():
    out = {}

    def check():
        out["result"] = nsverify.check_kernel(_sleeps, properties=["REF"], max_success=1, shrink_seconds=0, timeout=0.3)
    worker = threading.Thread(target=check)
    start = time.monotonic()
    worker.start()
    worker.join(60)
    assert not worker.is_alive() and time.monotonic() - start < 30
    assert not out["result"]


def test_zero_is_no_limit_and_a_negative_limit_is_refused():
    import pytest
    assert nsverify.check_kernel(lambda G, steps: nsverify.ns(G, dtype="fp32", products="full"), properties=["K2"],
                                 max_success=3, timeout=0)
    with pytest.raises(ValueError, match="timeout must be a number between 0 and 86400"):
        nsverify.check_kernel(_sleeps, timeout=-1)
    assert np.isfinite(nsverify._records.DEFAULTS["kernel"]["timeout"])
