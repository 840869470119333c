"""nsverify's pytest plugin: a failing test's report gets an "nsverify" section for every check that
failed during it, with the replay string of each failure, the seed and the saved counterexample
arrays; a bare ``assert nsverify.check_kernel(...)`` (whose assertion pytest shows as one truncated
line) then shows the full report too.

Load it with ``pytest -p nsverify.pytest_plugin``, or in a conftest.py:
    pytest_plugins = ["nsverify.pytest_plugin"]
(installed with pip, it is also registered as the pytest11 entry point "nsverify", so it loads by itself).
"""

import pytest

from . import _results



def _failed(result):
    return not result


def section(results):
    """The text of the report section for a test's failing checks."""
    parts = []
    for r in results:
        if not _failed(r):
            continue
        lines = [f"{r.subject}: {r.verdict}"]
        for p in r.properties:
            if p.counts and not p.holds:
                lines.append(f"  {p.code} {p.name}: {p.status}")
                if p.replay:
                    lines.append(f"    replay: {p.replay!r}")
                for label, path in p.files.items():
                    lines.append(f"    {label}: {path}")
        lines.append(f"  seed: {r.seed}")
        if r.counterexample_folder:
            lines.append(f"  counterexamples: {r.counterexample_folder}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    seen = []
    _results._observers.append(seen.append)
    try:
        yield
    finally:
        _results._observers.remove(seen.append)
        item._nsverify_results = seen


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or not report.failed:
        return
    results = getattr(item, "_nsverify_results", [])
    text = section(results)
    if not text:
        return
    # The full report of a check the test asserted bare (pytest shows its repr cut to one line).
    from ._assertions import CheckFailed
    raised = call.excinfo is not None and isinstance(call.excinfo.value, CheckFailed)
    if not raised:
        text = "\n\n".join(str(r) for r in results if _failed(r)) + "\n\n" + text
    report.sections.append(("nsverify: replay, seed and saved counterexamples", text))
