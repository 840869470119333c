"""Strict checks of the public functions' arguments, made before anything reaches the C++ core.

Python's truthiness and int() are too forgiving for a verification tool: bool("False") is True,
int("16x16"[0]) is 1, and a wrong type reaching pybind11 is answered with a dump of every overload's
C++ signature. Every check here raises TypeError (a value of the wrong type) or ValueError (the
right type, out of range) with a message that names the argument, the allowed values and what was
given. The ranges themselves are the library's (it validates again, for every front end).
"""

import numbers

import numpy as np


def _given(value):
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} ({type(value).__name__})"


def boolean(name, value):
    """True or False (or a numpy bool); never a string such as "False" or "no", nor a number."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {_given(value)}")


def integer(name, value, lo=None, hi=None):
    """An int (or numpy integer; not a bool, a float or a string) in [lo, hi]."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer{_range(lo, hi)}, got {_given(value)}")
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ValueError(f"{name} must be an integer{_range(lo, hi)}, got {value}")
    return value


def optional_integer(name, value, lo=None, hi=None):
    return None if value is None else integer(name, value, lo, hi)


def number(name, value):
    """A real number (int or float, not a bool or a string); the library checks its range."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {_given(value)}")
    return float(value)


def text(name, value, choices=None):
    """A str; with choices, one of them."""
    allowed = f"one of {', '.join(repr(c) for c in choices)}" if choices else "a string"
    if not isinstance(value, str):
        raise TypeError(f"{name} must be {allowed}, got {_given(value)}")
    if choices and value not in choices:
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return value


def optional_text(name, value, choices=None):
    return None if value is None else text(name, value, choices)


def shape(name, value, hi=None):
    """(rows, cols): a tuple or list of two positive integers (at most hi where given); never a string
    such as "16x16"."""
    wanted = f"{name} must be (rows, cols), two integers {'between 1 and ' + str(hi) if hi else 'of at least 1'}, e.g. (16, 32)"
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{wanted}; got {_given(value)}")
    return integer(f"{name}[0] (rows)", value[0], 1, hi), integer(f"{name}[1] (cols)", value[1], 1, hi)


def names(name, value):
    """None, a name, or a list/tuple/set of names (property names or codes)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise TypeError(f"{name} must be None, a property name or code, or a list of them, got {_given(value)}")


def sequence(name, value):
    """A list or tuple (of arrays)."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list of arrays (one per rank), got {_given(value)}")
    return list(value)


def _range(lo, hi):
    if lo is not None and hi is not None:
        return f" between {lo} and {hi}"
    if lo is not None:
        return f" >= {lo}"
    if hi is not None:
        return f" <= {hi}"
    return ""
