"""pytest-native checks: assert_kernel / assert_tp raise AssertionError whose message is the whole report."""

from ._kernel import check_kernel
from ._tp import check_tp


class CheckFailed(AssertionError):
    """A failing check: the message is the full report (table, every failure with its shrunk case, the
    saved arrays, the replay strings, the seed); ``result`` is the CheckResult."""

    def __init__(self, result):
        super().__init__(f"\n{result}")
        self.result = result


def _assert(result):
    if not result:
        raise CheckFailed(result)
    return result


def assert_kernel(fn, **kwargs):
    """check_kernel(fn, **kwargs); raises CheckFailed (an AssertionError) with the full report unless it
    passes (a verdict of FAIL or NOTHING CHECKED). Returns the CheckResult when it passes.

        def test_my_ns():
            nsverify.assert_kernel(my_ns, kernel="standard", dtype="bf16", accumulate="compute")
    """
    return _assert(check_kernel(fn, **kwargs))


def assert_tp(fn, **kwargs):
    """check_tp(fn, **kwargs); raises CheckFailed (an AssertionError) with the full report (the diagnosis
    included) unless it passes. Returns the TpCheckResult when it passes."""
    return _assert(check_tp(fn, **kwargs))
