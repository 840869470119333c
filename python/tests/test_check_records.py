"""The check records against everything that restates them (as Hypothesis checks its exports against its
registry): every check's signature, `nsv check`'s flags, the property codes the docstrings name, and the
paths ARCHITECTURE.md names. A field added to a record and forgotten anywhere fails here."""

import inspect
import os
import re

import pytest

import nsverify
from nsverify import _records, cli

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _checks():
    """{record: the check function that takes it}; the torch ones where torch is installed."""
    out = {"kernel": nsverify.check_kernel, "tp": nsverify.check_tp}
    try:
        import nsverify.torch as nt
    except ImportError:
        return out
    out.update(torch_kernel=nt.check_kernel, torch_tp=nt.check_tp)
    if hasattr(nt, "check_optimizer"):
        out["optimizer"] = nt.check_optimizer
    return out


@pytest.mark.parametrize("record", sorted(_checks()))
def test_each_signature_is_its_record(record):
    fn = _checks()[record]
    # after the implementation under test (and an optimizer's parameter list); "_"-names are internal
    params = {n: p for n, p in list(inspect.signature(fn).parameters.items())[1:]
              if n != "params" and not n.startswith("_")}
    fields = _records.FIELDS[record]
    assert set(params) == set(fields), f"{fn.__qualname__}: only in the signature {set(params) - set(fields)}, " \
                                       f"only in the record {set(fields) - set(params)}"
    for name, p in params.items():
        field = fields[name]
        if p.default is None and (field["nullable"] or field["default"] is None):
            continue  # None: the record's default, or "absent" where the record has none
        assert p.default == field["default"], \
            f"{fn.__qualname__}({name}=...): signature {p.default!r}, record {field['default']!r}"


def test_every_record_field_is_a_flag_of_nsv_check_with_the_records_choices():
    actions = {a.dest: a for a in cli.parser()._actions}
    for record, fields in _records.FIELDS.items():
        for name, field in fields.items():
            assert name in actions, f"{record}.{name} has no flag in nsv check"
            if field["type"] == "choice":
                assert set(field["choices"]) <= set(actions[name].choices), f"--{name}: {actions[name].choices}"
    own = set(cli.OWN_FLAGS) | {"help"}
    fields = {n for f in _records.FIELDS.values() for n in f}
    assert {d for d in actions if d not in own} == fields, "a flag of nsv check that no record has"
    for dest, action in actions.items():
        if action.choices is not None and dest in fields:
            union = {c for f in _records.FIELDS.values() if dest in f for c in f[dest]["choices"]}
            assert set(action.choices) == union, f"--{dest}: {sorted(action.choices)} against the records' {sorted(union)}"


def test_a_flag_the_chosen_check_lacks_is_refused():
    with pytest.raises(ValueError, match="--max-tp: not a setting of the kernel check"):
        cli.check_settings(cli.parser().parse_args(["--impl", "x.py:f", "--kind", "kernel", "--max-tp", "4"]))


def test_settings_are_validated_by_the_record_with_the_field_named():
    with pytest.raises(ValueError, match="max_success must be an integer between 1 and 100000"):
        _records.settings("kernel", max_success=0)
    with pytest.raises(TypeError, match="uneven must be True or False"):
        _records.settings("torch_tp", uneven="no")
    with pytest.raises(ValueError, match="claim must be one of 'exact', 'rounding', 'none'"):
        _records.settings("tp", claim="roughly")
    with pytest.raises(TypeError, match="'max_tp' is not a setting of the kernel check"):
        _records.settings("kernel", max_tp=3)


def test_the_core_refuses_what_python_would_not_have_passed():
    """The core validates the same record for every front end: a value that skipped Python's typing."""
    with pytest.raises(ValueError, match="max_dim"):
        nsverify._nsverify.check_settings("tp", {"max_dim": 7})
    with pytest.raises(ValueError, match="claim"):
        nsverify._nsverify.check_settings("tp", {"claim": True})


def test_every_property_code_a_docstring_names_exists():
    codes = {p["code"] for p in nsverify.kernel_properties()}
    for fn in [nsverify.check_kernel, *_checks().values()]:
        named = set(re.findall(r"\b(K\d+|REF)\b", inspect.getdoc(fn) or ""))
        assert named <= codes, f"{fn.__qualname__}'s docstring names {sorted(named - codes)}, not in the catalogue"


def test_every_path_architecture_names_exists():
    text = open(os.path.join(REPO, "ARCHITECTURE.md"), encoding="utf-8").read()
    missing = []
    for quoted in re.findall(r"`([^`\s]+)`", text):
        for path in re.split(r",\s*", quoted):
            if ("/" not in path or re.search(r"[<>*{}()=$:]", path) or path.startswith(("-", "nsv/", "nsverify/"))
                    or re.fullmatch(r"nsv\.\w+/\d+", path)):
                continue  # not a repository path: an include path, a pattern, a flag, a module, a JSON schema
            if not os.path.exists(os.path.join(REPO, path.rstrip("/"))):
                missing.append(path)
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"


@pytest.mark.parametrize("record", sorted(_checks()))
def test_every_argument_of_each_check_is_documented(record):
    fn = _checks()[record]
    doc = _documentation(fn)
    undocumented = [n for n in list(inspect.signature(fn).parameters)[1:]
                    if not n.startswith("_") and not re.search(rf"\b{n}\b", doc)]
    assert not undocumented, f"help({fn.__qualname__}) does not say what {undocumented} mean"


def _documentation(fn):
    """fn's docstring and, where it defers to another check's help ("as nsverify.check_kernel"), that one's."""
    doc, seen = inspect.getdoc(fn) or "", {fn}
    for other in (nsverify.check_tp, nsverify.check_kernel):
        if f"nsverify.{other.__name__}" in doc and other not in seen:
            seen.add(other)
            doc += inspect.getdoc(other)
    return doc
