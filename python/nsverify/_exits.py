"""The user's code may not end the check: a call of sys.exit (SystemExit, any code) or os._exit inside
it is a failed case with its message, so that a check whose callable exits can never end the user's
script with status 0 having checked nothing. KeyboardInterrupt still stops the check.

os._exit is replaced for the duration of the call, and only the thread that runs the call is refused:
the checker's own threads (a rank's watch on its caller) keep the real one. A process ended from C
(abort, a crash) is beyond this: nsv check supervises its child for that.
"""

import contextlib
import os
import threading


class CallExited(Exception):
    """The user's code called sys.exit or os._exit during a check."""


_real_exit = os._exit


@contextlib.contextmanager
def exits_as_failures():
    """Within the block, sys.exit and os._exit (on this thread) raise CallExited instead of ending the process."""
    caller = threading.get_ident()

    def refused_exit(status):
        if threading.get_ident() != caller:
            _real_exit(status)
        raise CallExited(f"the callable called os._exit({status!r}): a checked function must return its result, "
                         "not end the process")

    previous = os._exit
    os._exit = refused_exit
    try:
        yield
    except SystemExit as e:
        raise CallExited(f"the callable called sys.exit({e.code!r}) (raised SystemExit): a checked function must "
                         "return its result, not end the process") from None
    finally:
        os._exit = previous


def exits_refused(fn, *args, **kwargs):
    """fn(*args, **kwargs) within exits_as_failures()."""
    with exits_as_failures():
        return fn(*args, **kwargs)
