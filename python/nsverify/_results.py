"""Result objects of the checks: one PropertyResult per property, a CheckResult for the whole check."""

import dataclasses
from typing import Optional


@dataclasses.dataclass
class PropertyResult:
    """One property of a check.

    status   "holds" | "fails" | "nothing checked" (every case lay outside the property's premise) |
             "inconclusive" (RapidCheck gave up: too many discarded cases) |
             "not applicable" (e.g. batch properties of a kernel that takes no 3-D batches) |
             "not run" (left out by ``properties=`` or ``replay=``)
    promise  "map" (the right function) or "bitwise" (reproducible bits)
    cases    successful cases RapidCheck ran (before the failure, for a failing property)
    cases_checked  of those, the cases inside the property's premise (the ones that asserted something)
    worst_ratio    the largest measured/bound of its bounded assertions (the margin the bound left)
    message  why it failed: the worst element (index, both values in hexfloat, ULP distance) for an
             exact claim, the measured figure, its bound and the bound's derivation for a bounded one
    counterexample  the shrunk case, as RapidCheck shows each drawn value: [(type, value), ...]
    detail   the same as data: {"input", "kind": "bits"|"bound"|"predicate", "shape", "index", "a",
             "b", "a_hex", "b_hex", "ulps", "measured", "bound", "derivation", "matrices"} (what applies;
             "matrices": the failing case's input, output and reference as float64 arrays)
    replay   pass as ``replay=`` to the same check (same function, same arguments) to run exactly the
             shrunk counterexample again
    files    the failing case's arrays saved as .npy (``counterexamples=``): {label: path}, e.g.
             "input", "call 1 output" (what fn returned), "call 1 reference" (the reference on that input)
    """
    code: str
    name: str
    claim: str
    status: str
    required: bool = True
    promise: str = ""
    cases: int = 0
    cases_checked: int = 0
    worst_ratio: float = 0.0
    message: str = ""
    counterexample: list = dataclasses.field(default_factory=list)
    detail: Optional[dict] = None
    replay: str = ""
    classes: dict = dataclasses.field(default_factory=dict)
    seconds: float = 0.0
    seconds_in_callable: float = 0.0
    calls: int = 0
    files: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_core(cls, d, required):
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(required=required, **{k: v for k, v in d.items() if k in fields and k != "required"})

    @property
    def holds(self):
        return self.status == "holds"

    @property
    def counts(self):
        """Whether this property decides the check: required and run on at least one case."""
        return self.required and self.status not in ("not applicable", "not run")

    def explain(self):
        """The failure in words: property, message, the shrunk case (labelled, abbreviated when large),
        the saved arrays, the replay."""
        lines = [f"{self.code} {self.name} {self.status.upper()}: {self.claim}"]
        if self.message:
            lines.append(f"  {_short(self.message, 600)}")
        if self.detail and self.detail.get("input"):
            lines.append(f"  case: {self.detail['input']}")
        for kind, value in self.counterexample:
            lines.append(f"  drawn {_type_label(kind)}: {_short(value, 160)}")
        for label, path in self.files.items():
            lines.append(f"  saved {label}: {path}")
        if self.replay:
            lines.append(f"  replay: {self.replay!r}")
        return "\n".join(lines)


def _short(text, limit):
    """text on one line, cut to `limit` characters with the length left out said."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else f"{text[:limit]} ... ({len(text) - limit} more characters)"


def _type_label(kind):
    """RapidCheck's C++ type name in words: std::vector<std::vector<long>> -> vector<vector<long>>."""
    return str(kind).replace("std::", "").replace("nsv::checks::", "").replace("nsv::", "")


def _table(rows, header):
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


class CheckResult:
    """The result of check_kernel or check_tp: truthy only if every required property that applies
    holds and at least one of them checked a case ("nothing checked" is not a pass).

    ``assert result`` in pytest prints the table (``repr``) with every failure explained.
    """

    def __init__(self, subject, properties):
        self.subject = subject
        self.properties = list(properties)
        self.seed = None                   # RapidCheck's seed of the run
        self.promise = None                # check_kernel: the preset that chose the required set
        self.counterexample_folder = None  # where the failures' arrays were saved (None: nothing failed)
        self._reason = None                # a check's own words for its verdict (check_optimizer's)
        _notify(self)

    def __bool__(self):
        return self.verdict == "PASS"

    @property
    def verdict(self):
        """"PASS", "FAIL", or "NOTHING CHECKED" (no required property checked a single case)."""
        counted = [p for p in self.properties if p.counts]
        if any(not p.holds and p.status != "nothing checked" for p in counted):
            return "FAIL"
        if not any(p.holds and p.cases_checked > 0 for p in counted):
            return "NOTHING CHECKED"
        return "PASS" if all(p.holds for p in counted) else "FAIL"

    @property
    def reason(self):
        """Why the verdict is NOTHING CHECKED, in words (None for another verdict unless a check states its
        reason): no property was required (and why), or each required property's cases all lay outside its
        premise."""
        if self._reason is not None or self.verdict != "NOTHING CHECKED":
            return self._reason
        counted = [p for p in self.properties if p.counts]
        if not counted:
            return self._why_nothing_required()
        return "every case lay outside the premise of each required property: " + "; ".join(
            f"{p.code} {p.name} checked {p.cases_checked} of {p.cases} cases" + (f" ({_short(p.message, 300)})" if p.message else "")
            for p in counted)

    @reason.setter
    def reason(self, words):
        self._reason = words

    def _why_nothing_required(self):
        left_out = [p.code for p in self.properties if p.required and p.status == "not run"]
        return ("no required property ran" + (f" ({', '.join(left_out)} left out by properties= or replay=)" if left_out else "")
                if self.properties else "the check asserts no property")

    def __getitem__(self, name):
        for p in self.properties:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def failures(self):
        """The required properties that did not hold."""
        return [p for p in self.properties if p.counts and not p.holds]

    def table(self):
        rows = [[p.code, p.name, p.promise, "yes" if p.required else "no", p.status,
                 f"{p.cases_checked}/{p.cases}" if p.status not in ("not run", "not applicable") else "",
                 f"{p.seconds:.2f}" if p.seconds else ""] for p in self.properties]
        return _table(rows, ["code", "property", "promise", "required", "status", "checked/cases", "seconds"])

    def __str__(self):
        parts = [f"{self.subject}: {self.verdict}" + (f" ({self.reason})" if self.reason else ""), self.table()]
        for p in self.properties:
            if p.status in ("fails", "inconclusive", "nothing checked"):
                parts.append(p.explain())
        if self.seed is not None:
            parts.append(f"seed: {self.seed} (seed= reruns every property on the same cases)")
        if self.counterexample_folder:
            parts.append(f"counterexamples saved in: {self.counterexample_folder}")
        return "\n".join(parts)

    __repr__ = __str__

    def to_dict(self):
        return {"subject": self.subject, "holds": bool(self), "verdict": self.verdict, "reason": self.reason, "seed": self.seed,
                "promise": self.promise, "counterexamples": self.counterexample_folder,
                "properties": [_jsonable(dataclasses.asdict(p)) for p in self.properties]}


def _jsonable(d):
    """A property's dict with its failure's arrays replaced by their shapes (saved as .npy separately)."""
    detail = d.get("detail")
    if detail and "matrices" in detail:
        d["detail"] = dict(detail, matrices={name: list(a.shape) for name, a in detail["matrices"].items()})
    return d


#: Callables told of every CheckResult created (nsverify.pytest_plugin collects a test's results with it).
_observers = []


def _notify(result):
    for observer in list(_observers):
        observer(result)
