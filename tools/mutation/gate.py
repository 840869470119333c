"""The gate's tests, run the way the mutation sampler needs them: two at a time (one per core,
a test asking for two processors alone), in an order that kills a mutant soonest, stopping at
the first failure.

Stopping at the first failure gives the same verdict as the whole gate (a mutant is killed when
any gate test fails), in a fraction of the time. Each test runs through `ctest -R ^name$`, so it
gets exactly the environment, arguments and skip rules the gate gives it.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path


@dataclasses.dataclass
class GateTest:
    name: str
    processors: int
    timeout_s: float       # the gate's own TIMEOUT for the test
    baseline_s: float = 0  # measured on the unmutated build
    kills: int = 0         # mutants this test has killed so far: the tests that kill often run first


def gate_tests(build: Path) -> list[GateTest]:
    listing = subprocess.run(["ctest", "--test-dir", str(build), "-L", "gate", "--show-only=json-v1"],
                             check=True, capture_output=True, text=True).stdout
    tests = []
    for t in json.loads(listing)["tests"]:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        tests.append(GateTest(t["name"], int(props.get("PROCESSORS", 1)), float(props.get("TIMEOUT", 1500))))
    return tests


@dataclasses.dataclass
class Outcome:
    failed: str | None   # the first failing test, "name (timeout)" when it ran past its limit
    seconds: float
    durations: dict[str, float]
    failures: list[str] = dataclasses.field(default_factory=list)  # every failing test, in the order they failed


def failing_cases(outcome: Outcome, log_dir: Path) -> list[str]:
    """What killed a mutant, in full: the Boost test cases that failed (suite/case, from the
    failing tests' logs), then ctest:NAME for each failing test."""
    names = sorted({f.split(" (")[0] for f in outcome.failures})
    cases = set()
    for name in names:
        log = log_dir / f"{name}.log"
        if log.exists():
            cases.update(re.findall(r'error: in "([^"]+)"', log.read_text(errors="replace")))
    return sorted(cases) + [f"ctest:{name}" for name in names]


def _limit(test: GateTest) -> float:
    """A test that runs ten times its unmutated time (at least two minutes) has hung or slowed
    beyond use: it counts as failing, as the gate's own time-out would make it fail later.
    Never more than the gate's own time-out."""
    if test.baseline_s <= 0:
        return test.timeout_s
    return min(test.timeout_s, max(120.0, 10 * test.baseline_s))


def _order(tests: list[GateTest]) -> list[GateTest]:
    # Most kills per second of run time first; unmeasured or never-killing tests by duration.
    return sorted(tests, key=lambda t: (-(t.kills + 0.01) / max(t.baseline_s, 0.05), t.name))


def run(build: Path, tests: list[GateTest], cores: int, stop_at_first_failure: bool, log_dir: Path) -> Outcome:
    """Runs the tests; returns the first failure (or None) and each finished test's duration."""
    pending = _order(tests)
    running: dict[str, tuple[subprocess.Popen, float, GateTest]] = {}
    durations: dict[str, float] = {}
    failed = None
    failures: list[str] = []
    start = time.monotonic()
    log_dir.mkdir(parents=True, exist_ok=True)

    def used() -> int:
        return sum(t.processors for _, _, t in running.values())

    def stop_all() -> None:
        for proc, _, _ in running.values():
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        running.clear()

    while pending or running:
        while pending and (not running or used() + min(pending[0].processors, cores) <= cores):
            test = pending.pop(0)
            log = open(log_dir / f"{test.name}.log", "w")
            proc = subprocess.Popen(["ctest", "--test-dir", str(build), "-R", f"^{re.escape(test.name)}$",
                                     "--output-on-failure", "--no-tests=error", "--timeout", str(int(test.timeout_s))],
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            running[test.name] = (proc, time.monotonic(), test)
        time.sleep(0.1)
        for name, (proc, began, test) in list(running.items()):
            if name not in running:  # stopped with the others after a failure
                continue
            elapsed = time.monotonic() - began
            code = proc.poll()
            if code is None and elapsed > _limit(test):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                code, name_shown = -1, f"{name} (timeout after {elapsed:.0f} s)"
            elif code is None:
                continue
            else:
                name_shown = name
            del running[name]
            durations[name] = elapsed
            if code != 0:
                failures.append(name_shown)
            if code != 0 and failed is None:
                failed = name_shown
                if stop_at_first_failure:
                    stop_all()
                    pending.clear()
    return Outcome(failed, time.monotonic() - start, durations, failures)
