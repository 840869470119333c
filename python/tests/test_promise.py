"""check_kernel's promises (issue 29, item 1): "map" (default) requires the right function within
derived bounds, "bitwise" adds bit-reproducibility; a correct kernel that is not bit-reproducible
passes the first and fails the second, a seeded bug fails both."""
import numpy as np
import pytest

import nsverify
import numpy_ns
import seeded_kernel_bugs
from plain_numpy_ns import plain_ns

BITWISE_ONLY = {"K1", "K10"}


def test_every_row_has_a_promise_and_the_bitwise_codes_are_not_required_by_map():
    table = nsverify.kernel_properties()
    assert {p["promise"] for p in table} == {"map", "bitwise"}
    required = set(nsverify._kernel.promised("map", table))
    assert all(p["promise"] == "map" for p in table if p["name"] in required)
    assert not any(p["code"] in BITWISE_ONLY for p in table if p["name"] in required)
    assert "batched_matches_loop_within_rounding" in required and "batched_equals_loop_exactly" not in required
    assert set(nsverify._kernel.promised("bitwise", table)) == {p["name"] for p in table}


def test_the_table_shows_each_rows_promise():
    r = nsverify.check_kernel(numpy_ns.standard_ns, kernel="standard", max_success=5)
    header = str(r).splitlines()[1]
    assert "promise" in header.split()
    assert any(line.split()[:3] == ["K1", "transpose_of_input_transposes_output_exactly", "bitwise"] for line in str(r).splitlines())


def test_a_correct_kernel_that_is_not_bit_reproducible_passes_map_and_fails_bitwise():
    r = nsverify.check_kernel(plain_ns, kernel="standard")
    assert r.verdict == "PASS", str(r)
    assert r.promise == "map"
    bitwise = nsverify.check_kernel(plain_ns, kernel="standard", promise="bitwise")
    assert bitwise.verdict == "FAIL", str(bitwise)
    assert bitwise.failures and all(p.promise == "bitwise" for p in bitwise.failures), str(bitwise)


def test_a_seeded_batch_bug_fails_the_map_promise_by_its_map_property():
    r = nsverify.check_kernel(seeded_kernel_bugs.batch_shares_one_norm, kernel="standard", batched=True)
    assert r.verdict == "FAIL", str(r)
    p = r["batched_matches_loop_within_rounding"]
    assert p.required and p.status == "fails" and p.detail["kind"] == "bound"


def test_required_overrides_the_promise_and_a_bad_promise_names_the_choices():
    r = nsverify.check_kernel(plain_ns, kernel="standard", promise="bitwise", required=["REF"])
    assert r and r.promise is None
    with pytest.raises(ValueError, match=r"promise must be one of 'map', 'bitwise', got 'exact'"):
        nsverify.check_kernel(numpy_ns.standard_ns, promise="exact")

