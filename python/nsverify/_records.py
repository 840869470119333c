"""The check records (checks/check_record.hpp), read once from the core: every check's settings with
their name, type, default, range or choices and help. The Python signatures take their defaults from
here (``DEFAULTS[kind][field]``), ``settings`` types the given values strictly and has the core
validate them against the same record, and ``nsv check`` builds its flags from it (cli.py)."""

import numbers
import os

import numpy as np

from . import _args
from . import _nsverify as _core

#: {kind: {"name", "summary", "fields": [{"name", "type", "default", "nullable", "min", "max", "choices", "help"}]}}
RECORDS = {r["name"]: r for r in _core.check_records()}
#: {kind: {field: record field}}
FIELDS = {kind: {f["name"]: f for f in r["fields"]} for kind, r in RECORDS.items()}
#: {kind: {field: default}}: the defaults of every check's signature
DEFAULTS = {kind: {name: f["default"] for name, f in fields.items()} for kind, fields in FIELDS.items()}
#: The fixed RapidCheck seed where none is given (the record's default).
DEFAULT_SEED = DEFAULTS["kernel"]["seed"]
#: The knobs of the NS configuration a check claims (the fields ns_config_of reads).
NS_KNOBS = ("kernel", "steps", "dtype", "accumulate", "products", "coeffs", "restart_at")


def _bound(value):
    """A record's limit as Python's int (the seed's 2^64 - 1 arrives as the float 2^64)."""
    return min(int(value), (1 << 64) - 1)


def typed(field, value):
    """value checked against one record field's type, range and choices: TypeError for the wrong type,
    ValueError out of range, each naming the argument and what it allows. Numpy scalars become Python's."""
    name, kind = field["name"], field["type"]
    if value is None and (field["nullable"] or field["default"] is None):
        return None
    if kind == "integer":
        return _args.integer(name, value, _bound(field["min"]), _bound(field["max"]))
    if kind == "number":
        number = _args.number(name, value)
        if not field["min"] <= number <= field["max"]:
            raise ValueError(f"{name} must be a number between {field['min']:g} and {field['max']:g}, got {number!r}")
        return number
    if kind == "boolean":
        return _args.boolean(name, value)
    if kind == "choice":
        return _args.text(name, value, field["choices"])
    if kind == "text":
        return _args.text(name, os.fspath(value) if isinstance(value, os.PathLike) else value)
    if kind == "shape":
        return list(_args.shape(name, value, _bound(field["max"])))
    if kind == "names":
        return _args.names(name, value)
    if kind == "callable":
        return value if callable(value) else _args.text(f"{name} (or a callable)", value, field["choices"])
    raise AssertionError(f"a record field of unknown type {kind!r}")


def settings(kind, **given):
    """The given settings of a `kind` check typed strictly, then validated by the core against the
    record (ValueError naming the field): a dict of the given fields, ready for the core's check."""
    fields = FIELDS[kind]
    out = {}
    for name, value in given.items():
        if name not in fields:
            raise TypeError(f"{name!r} is not a setting of the {kind} check; its settings: {', '.join(fields)}")
        if isinstance(value, np.generic) and isinstance(value, (numbers.Number, np.bool_)):
            value = value.item()
        out[name] = typed(fields[name], value)
    _core.check_settings(kind, out)
    return out
