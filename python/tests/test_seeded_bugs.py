"""Every seeded bug is caught, and by the property that names it (the checked-in report
reports/python/README.md quotes each shrunk counterexample)."""
import re

import pytest

import nsverify
import numpy_tp
from seeded_bug_catalog import KERNEL_BUGS, TP_BUGS


def assert_caught(result, prop):
    assert not result, f"the seeded bug passed:\n{result}"
    p = result[prop]
    assert p.status == "fails", f"{prop} did not catch it:\n{result}"
    assert p.required, f"{prop} caught it but does not decide the default check:\n{result}"
    assert p.counterexample and p.replay and p.message
    # the explanation is one header line, then indented lines: a multi-line counterexample (an Eigen
    # matrix prints with newlines) is put on one line and cut short
    for q in result.failures:
        assert all(line.startswith("  ") for line in q.explain().splitlines()[1:]), q.explain()
    # the counts describe the run up to the first failure, not the shrinking after it
    for q in result.properties:
        assert q.cases_checked <= q.cases, f"{q.name}: {q.cases_checked} checked of {q.cases} cases:\n{result}"
    return p


@pytest.mark.parametrize("fn, kwargs, prop", KERNEL_BUGS, ids=[b[0].__name__ for b in KERNEL_BUGS])
def test_kernel_bug_is_caught(fn, kwargs, prop):
    assert_caught(nsverify.check_kernel(fn, **kwargs), prop)


@pytest.mark.parametrize("fn, kwargs, prop", TP_BUGS, ids=[b[0].__name__ + "-" + b[1]["claim"] for b in TP_BUGS])
def test_tp_bug_is_caught(fn, kwargs, prop):
    p = assert_caught(nsverify.check_tp(fn, kernel="standard", **kwargs), prop)
    assert "tp" in p.detail["input"]


def test_norm_per_shard_matches_no_semantics():
    assert nsverify.check_tp(numpy_tp.norm_per_shard, claim="none", kernel="standard").diagnosis is None


def _elements(words):
    """The elements of the matrices a counterexample's input line names ("26x8 (tall), ...", "a batch of
    2 matrices: 9x16, 9x16")."""
    return sum(int(r) * int(c) for r, c in re.findall(r"(\d+)x(\d+)", words))


def test_shrinking_can_be_skipped_and_the_first_failure_is_real():
    fn, kwargs, prop = KERNEL_BUGS[0]
    first = assert_caught(nsverify.check_kernel(fn, **kwargs, shrink_seconds=0), prop)
    shrunk = assert_caught(nsverify.check_kernel(fn, **kwargs), prop)
    again = nsverify.check_kernel(fn, **kwargs, replay=first.replay)
    assert again[prop].status == "fails", "the unshrunk first failure does not replay as a failure"
    assert _elements(shrunk.detail["input"]) <= _elements(first.detail["input"])
