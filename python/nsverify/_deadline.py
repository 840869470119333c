"""A time limit on each call of the user's code in the checks that run it in this process (check_kernel,
check_tp, nsverify.torch.check_kernel): a call past the limit raises CallTimeout inside it, so that
the case fails with the limit named and the check goes on, instead of hanging.

In the main thread the limit is SIGALRM's (signal.setitimer): the handler raises in the user's code at
its next bytecode, and interrupts a sleep or a blocking wait. A call that stays inside one C function
(a BLAS call) ends that function first. Outside the main thread signals cannot reach the call: it runs
in a daemon thread of its own, and the check stops waiting at the limit (the thread is left to finish).
"""

import signal
import threading

from ._exits import exits_refused


class CallTimeout(Exception):
    """The user's code did not return within the check's time limit."""


def _message(seconds):
    return (f"the call did not return within the check's time limit of {seconds:g} s (timeout=; a slow "
            f"implementation: raise it; 0: no limit)")


def limited(seconds, fn, *args):
    """fn(*args), raising CallTimeout if it runs longer than `seconds` (0: no limit), and CallExited
    (nsverify/_exits.py) if it calls sys.exit or os._exit."""
    if not seconds:
        return exits_refused(fn, *args)
    if threading.current_thread() is threading.main_thread():
        return _with_alarm(seconds, exits_refused, (fn,) + args)
    return _in_a_thread(seconds, exits_refused, (fn,) + args)


def _with_alarm(seconds, fn, args):
    armed = [True]

    def expire(signum, frame):
        # a SIGALRM delivered after the call returned but before the timer was cleared is ignored
        if armed[0]:
            raise CallTimeout(_message(seconds))

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _in_a_thread(seconds, fn, args):
    outcome = {}

    def run():
        try:
            outcome["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed back to the checking thread as it is
            outcome["error"] = e

    worker = threading.Thread(target=run, daemon=True, name="nsverify user call")
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise CallTimeout(_message(seconds))
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


class LimitedKernel:
    """A kernel adapter (nsverify/_adapters.py) whose every call is limited to `seconds`."""

    def __init__(self, adapter, seconds):
        self.adapter, self.seconds = adapter, seconds

    def call(self, x):
        return limited(self.seconds, self.adapter.call, x)

    def call_at_offset(self, x, offset):
        return limited(self.seconds, self.adapter.call_at_offset, x, offset)

    def call_observed(self, x):
        return limited(self.seconds, self.adapter.call_observed, x)


def limited_function(fn, seconds):
    """fn with each call limited to `seconds`; its name kept for the report."""
    def call(*args):
        return limited(seconds, fn, *args)
    call.__qualname__ = getattr(fn, "__qualname__", repr(fn))
    return call
