"""nsverify.torch.check_tp's rank faults (skipped where torch is absent): a rank that raises, one that never
enters its collective, one whose process dies, one that returns the wrong shape, and a caller interrupted
mid-check, each reported as a failed case within the per-case time limit, and no process left behind."""
import os
import sys
import subprocess
import time

import pytest

pytest.importorskip("torch")

import nsverify.torch as nt  # noqa: E402
import seeded_torch_bugs  # noqa: E402
from processes import descendants, processes, rank_processes  # noqa: E402


@pytest.mark.parametrize("fault, words", [("rank_raises", "rank 1: raised RuntimeError: rank 1 ran out of memory"),
                                          ("rank_skips_collective", "did not answer within"),
                                          ("rank_aborts", "its process died (killed by SIGABRT)"),
                                          ("rank_exits", "rank 1: raised CallExited: the callable called sys.exit(0)"),
                                          ("rank_os_exits", "rank 1: raised CallExited: the callable called os._exit(0)"),
                                          ("rank_wrong_shape", "rank 1: rank_wrong_shape returned")])
def test_a_rank_fault_is_a_failed_case_within_the_limit_and_leaves_no_process(fault, words):
    limit = 2.0
    start = time.monotonic()
    result = nt.check_tp(getattr(seeded_torch_bugs, fault), world_size=2, claim="rounding", aspect_scale=True,
                         timeout=limit, kernel="standard", max_success=5, diagnosis_cases=0, max_dim=16)
    elapsed = time.monotonic() - start
    failed = [p for p in result.properties if p.status == "fails"]
    assert failed and words in failed[0].message, str(result)
    assert failed[0].counterexample and "tp 2" in str(failed[0].counterexample)
    env = result.environment
    if fault != "rank_wrong_shape":  # the others fail on the ranks: each such case ends within the limit
        assert env["failed_cases"] > 0 and env["slowest_failed_case_s"] <= limit + 1.5, env
    # The per-case limit is asserted above; the whole check's wall time (shrinking restarts the ranks after
    # each death or hang) only has to be finite: a generous bound, since a loaded 2-core machine is slow.
    assert elapsed < 300, f"{fault}: {elapsed:.0f} s"
    assert rank_processes() == []


def test_an_interrupted_caller_leaves_no_process():
    """A check killed by SIGINT mid-run: its ranks end with it (ps before and after)."""
    code = ("import nsverify.torch as nt, seeded_torch_bugs as b\n"
            "nt.check_tp(b.rank_skips_collective, world_size=2, claim='rounding', timeout=30, max_success=5)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, "-c", code], env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(descendants(child.pid)) < 4:  # forkserver, tracker, 2 ranks
        time.sleep(0.5)
    time.sleep(3)  # the cases run; rank 0 soon waits in an all_reduce rank 1 never enters
    before = descendants(child.pid)
    assert len(before) >= 4, before
    child.send_signal(2)
    child.wait(30)
    time.sleep(1)
    alive = {pid for pid, _, _ in processes()}
    assert not [(pid, cmd) for pid, cmd in before if pid in alive], "left behind"
