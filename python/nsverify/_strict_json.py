"""JSON as RFC 8259 defines it, for the Python front ends' ``--json``: Python's json writes NaN and the
infinities as the non-standard ``NaN`` and ``Infinity``, which strict parsers (jq, JavaScript's
JSON.parse, Go) refuse. Here each is written ``null``, and the document's ``non_finite`` says which:
it maps the JSON Pointer (RFC 6901) of each such number to "NaN", "Infinity" or "-Infinity" ({} when
every number is finite), so a null that was a NaN is not mistaken for a missing value.
"""

import json
import math


def dumps(document, **kwargs):
    """The dict `document` as strict JSON, with its "non_finite" field added; kwargs: json.dumps's."""
    found = {}
    clean = _finite(document, "", found)
    clean["non_finite"] = found
    return json.dumps(clean, allow_nan=False, **kwargs)


def _finite(value, pointer, found):
    if isinstance(value, float) and not math.isfinite(value):
        found[pointer] = "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
        return None
    if isinstance(value, dict):
        return {key: _finite(v, f"{pointer}/{_escaped(str(key))}", found) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v, f"{pointer}/{i}", found) for i, v in enumerate(value)]
    return value


def _escaped(key):
    """A key as one JSON Pointer reference token (RFC 6901: "~" as "~0", "/" as "~1")."""
    return key.replace("~", "~0").replace("/", "~1")
