"""pytest-native checks (issue 29, item 2): assert_kernel raises AssertionError with the full report, and
the plugin adds each failure's replay, the seed and the saved arrays to pytest's report, for a bare
`assert check_kernel(...)` too. Run as a user would: pytest in a subprocess on a test file."""
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nsverify
import seeded_kernel_bugs

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"

USER_TESTS = textwrap.dedent("""
    import sys
    sys.path.insert(0, {examples!r})
    import nsverify
    import numpy_ns
    import seeded_kernel_bugs

    def test_assert_kernel_of_a_seeded_bug():
        nsverify.assert_kernel(seeded_kernel_bugs.nan_silently_zeroed, kernel="standard", max_success=20,
                               counterexamples={folder!r})

    def test_bare_assert_of_a_seeded_bug():
        assert nsverify.check_kernel(seeded_kernel_bugs.gram_restart_dropped, kernel="gram", max_success=20,
                                     counterexamples={folder!r})

    def test_a_correct_kernel():
        nsverify.assert_kernel(numpy_ns.standard_ns, kernel="standard", max_success=10)
""")


@pytest.fixture(scope="module")
def pytest_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("user")
    folder = d / "counterexamples"
    (d / "test_user.py").write_text(USER_TESTS.format(examples=str(EXAMPLES), folder=str(folder)))
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "nsverify.pytest_plugin", "-p", "no:cacheprovider",
                          "-W", "ignore::RuntimeWarning", str(d / "test_user.py")],
                         cwd=d, capture_output=True, text=True, env=dict(os.environ), timeout=300)
    print(run.stdout[-6000:])
    return run, folder


def test_the_failing_tests_fail_and_the_correct_one_passes(pytest_run):
    run, _ = pytest_run
    assert run.returncode == 1, run.stdout + run.stderr
    assert "2 failed, 1 passed" in run.stdout


def test_assert_kernel_shows_the_full_report_with_the_replay(pytest_run):
    run, folder = pytest_run
    out = run.stdout
    assert "CheckFailed" in out or "AssertionError" in out
    # the whole table (every property row), not a truncated repr
    assert "non_finite_input_gives_non_finite_output" in out and "agrees_with_the_reference_within_its_own_error" in out
    assert re.search(r"K8\s+non_finite_input_gives_non_finite_output\s+map\s+yes\s+fails", out)
    assert "replay: 'reproduce=" in out
    assert "seed: 20261130" in out
    assert f"counterexamples saved in: {folder}" in out


def test_the_plugin_section_names_replay_seed_and_arrays_for_a_bare_assert(pytest_run):
    run, folder = pytest_run
    out = run.stdout
    assert "nsverify: replay, seed and saved counterexamples" in out
    section = out[out.index("test_bare_assert_of_a_seeded_bug"):]
    assert "agrees_with_the_reference_within_its_own_error" in section and "replay: 'reproduce=" in section
    assert re.search(r"call 1 input: \S+\.npy", section) and re.search(r"call 1 reference: \S+\.npy", section)


def test_the_saved_arrays_load_and_hold_the_failing_case(pytest_run):
    _, folder = pytest_run
    files = sorted(folder.rglob("*.npy"))
    assert files, f"nothing saved in {folder}"
    inputs = [f for f in files if "non_finite" in f.name and f.name.endswith("call_1_input.npy")]
    outputs = [f for f in files if "non_finite" in f.name and f.name.endswith("call_1_output.npy")]
    assert inputs and outputs
    x, y = np.load(inputs[0]), np.load(outputs[0])
    assert x.dtype == np.float32 and not np.isfinite(x).all()   # the poisoned input fn was handed
    assert np.isfinite(y).all()                                 # the finite output the bug returned


def test_failures_never_overwrite_and_never_follow_links(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(ValueError, match="counterexamples: .* symbolic link"):
        nsverify.check_kernel(seeded_kernel_bugs.nan_silently_zeroed, kernel="standard", max_success=5,
                              properties=["non_finite_input_gives_non_finite_output"], counterexamples=link)
    with pytest.raises(ValueError, match="counterexamples: .*not a folder"):
        (tmp_path / "file").write_text("mine")
        nsverify.check_kernel(seeded_kernel_bugs.nan_silently_zeroed, kernel="standard", max_success=5,
                              properties=["non_finite_input_gives_non_finite_output"], counterexamples=tmp_path / "file")
    assert (tmp_path / "file").read_text() == "mine" and not any(target.iterdir())
    # two failing runs into one folder: two fresh subfolders, nothing replaced
    for _ in range(2):
        r = nsverify.check_kernel(seeded_kernel_bugs.nan_silently_zeroed, kernel="standard", max_success=5,
                                  properties=["non_finite_input_gives_non_finite_output"], counterexamples=tmp_path / "ce")
        assert not r and r.counterexample_folder.startswith(str(tmp_path / "ce"))
    assert len(list((tmp_path / "ce").iterdir())) == 2


def test_a_large_counterexample_prints_short_and_labelled():
    def wrong(G, steps):   # wrong only for large inputs
        return np.zeros_like(G) if G.size > 400 else seeded_kernel_bugs.ref.standard_ns(G, steps)
    r = nsverify.check_kernel(wrong, kernel="standard", max_success=30, shape=(32, 48),
                              properties=["agrees_with_the_reference_within_its_own_error"])
    text = r["agrees_with_the_reference_within_its_own_error"].explain()
    assert "case: 32x48" in text
    assert all(len(line) < 700 for line in text.splitlines()), text
    assert "saved call 1 input:" in text and "saved call 1 reference:" in text
