"""Nothing vacuous: a checked function that calls sys.exit (any code) or os._exit fails its case with that
message, in every front end (check_kernel, check_tp, nsv check, a `python -c` script), so that a check can
never end its caller with status 0 having checked nothing; Ctrl-C (KeyboardInterrupt) still stops the
check; a NOTHING CHECKED verdict says why. (The torch ranks: test_torch_faults.py, test_torch_optimizer.py.)"""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import nsverify

NSV = os.environ.get("NSV_BINARY")
QUICK = dict(properties=["REF"], max_success=3, shrink_seconds=0)


def _exits(code):
    def fn(G, steps):
        sys.exit(code)
    return fn


def _os_exits(G, steps):
    os._exit(0)


@pytest.mark.parametrize("code", [0, 1, None, "bye"])
@pytest.mark.parametrize("timeout", [0, 30])
def test_sys_exit_in_the_kernel_fails_the_case_with_its_message(code, timeout):
    result = nsverify.check_kernel(_exits(code), timeout=timeout, **QUICK)
    ref = result["agrees_with_the_reference_within_its_own_error"]
    assert result.verdict == "FAIL" and ref.status == "fails", str(result)
    assert f"called sys.exit({code!r})" in ref.message and "CallExited" in ref.message, ref.message


@pytest.mark.parametrize("timeout", [0, 30])
def test_os_exit_in_the_kernel_fails_the_case_and_the_process_lives_on(timeout):
    result = nsverify.check_kernel(_os_exits, timeout=timeout, **QUICK)
    ref = result["agrees_with_the_reference_within_its_own_error"]
    assert result.verdict == "FAIL" and "called os._exit(0)" in ref.message, str(result)
    assert os._exit.__name__ == "_exit", "os._exit was not given back"


def test_an_exit_is_a_failure_outside_the_main_thread_too():
    box = {}
    worker = threading.Thread(target=lambda: box.update(r=nsverify.check_kernel(_exits(0), **QUICK)))
    worker.start()
    worker.join(120)
    assert box["r"].verdict == "FAIL" and "called sys.exit(0)" in str(box["r"])


def test_sys_exit_in_a_tp_function_fails_the_claim():
    def update(shards, spec):
        sys.exit(0)
    result = nsverify.check_tp(update, claim="exact", max_success=3, diagnosis_cases=0, shrink_seconds=0)
    assert result.verdict == "FAIL", str(result)
    assert any("called sys.exit(0)" in p.message for p in result.failures), str(result)


def test_keyboard_interrupt_still_stops_the_check():
    def interrupted(G, steps):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        nsverify.check_kernel(interrupted, **QUICK)


def test_a_script_whose_function_exits_ends_non_zero_with_the_message():
    code = ("import sys, nsverify\n"
            "nsverify.assert_kernel(lambda G, steps: sys.exit(0), properties=['REF'], max_success=3, shrink_seconds=0)\n"
            "print('the check passed')\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode != 0, run.stdout + run.stderr
    assert "called sys.exit(0)" in run.stderr and "the check passed" not in run.stdout, run.stderr[-2000:]


@pytest.mark.skipif(not NSV, reason="NSV_BINARY not set")
@pytest.mark.parametrize("body, words", [("import sys\ndef f(G, steps): sys.exit(0)\n", "called sys.exit(0)"),
                                         ("import os\ndef f(G, steps): os._exit(0)\n", "called os._exit(0)")])
def test_nsv_check_fails_an_implementation_that_exits_in_a_call(tmp_path, body, words):
    impl = tmp_path / "impl.py"
    impl.write_text(body)
    run = subprocess.run([NSV, "check", "--impl", f"{impl}:f", "--kind", "kernel", "--max-success", "5"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 1, f"exit {run.returncode}: {run.stdout[-1500:]} {run.stderr[-1500:]}"
    assert words in run.stdout and "FAIL" in run.stdout, run.stdout[-2000:]


def test_nothing_checked_says_why():
    result = nsverify.check_tp(lambda shards, spec: shards, claim="none", max_success=3, diagnosis_cases=2)
    assert result.verdict == "NOTHING CHECKED"
    assert result.reason.startswith("claim='none' asserts no property"), result.reason
    assert result.reason in str(result) and result.to_dict()["reason"] == result.reason


def test_nothing_checked_names_the_diagnosis_cases_that_did_not_run():
    def broken(shards, spec):
        raise RuntimeError("cannot start")
    result = nsverify.check_tp(broken, claim="none", max_success=3, diagnosis_cases=2)
    assert result.verdict == "NOTHING CHECKED"
    assert "of the diagnosis' 2 cases did not run" in result.reason and "cannot start" in result.reason, result.reason


def test_a_verdict_other_than_nothing_checked_has_no_reason():
    result = nsverify.check_kernel(lambda G, steps: np.asarray(G), **QUICK)
    assert result.verdict == "FAIL" and result.reason is None
