"""Result objects of the checks: one PropertyResult per property, a CheckResult for the whole check."""

import dataclasses
from typing import Optional


@dataclasses.dataclass
class PropertyResult:
    """One property of a check.

    status   "holds" | "fails" | "inconclusive" (RapidCheck gave up: too many discarded cases) |
             "not applicable" (e.g. batch properties of a kernel that takes no 3-D batches) |
             "not run" (left out by ``properties=`` or ``replay=``)
    cases    successful cases RapidCheck ran (before the failure, for a failing property)
    message  why it failed: the worst element (index, both values in hexfloat, ULP distance) for an
             exact claim, the measured figure, its bound and the bound's derivation for a bounded one
    counterexample  the shrunk case, as RapidCheck shows each drawn value: [(type, value), ...]
    detail   the same as data: {"input", "kind": "bits"|"bound"|"predicate", "shape", "index", "a",
             "b", "a_hex", "b_hex", "ulps", "measured", "bound", "derivation"} (what applies)
    replay   pass as ``replay=`` to the same check (same function, same arguments) to run exactly the
             shrunk counterexample again
    """
    code: str
    name: str
    claim: str
    status: str
    required: bool = True
    cases: int = 0
    message: str = ""
    counterexample: list = dataclasses.field(default_factory=list)
    detail: Optional[dict] = None
    replay: str = ""
    classes: dict = dataclasses.field(default_factory=dict)
    seconds: float = 0.0
    seconds_in_callable: float = 0.0
    calls: int = 0

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
        """The failure in words: property, message, shrunk counterexample, replay."""
        lines = [f"{self.code} {self.name} {self.status.upper()}: {self.claim}"]
        if self.message:
            lines.append(f"  {self.message}")
        for kind, value in self.counterexample:
            lines.append(f"  counterexample: {kind}: {value}")
        if self.detail and self.detail.get("input"):
            lines.append(f"  input: {self.detail['input']}")
        if self.replay:
            lines.append(f"  replay: {self.replay!r}")
        return "\n".join(lines)


def _table(rows, header):
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


class CheckResult:
    """The result of check_kernel or check_tp: truthy only if every required property holds.

    ``assert result`` in pytest prints the table (``repr``) with every failure explained.
    """

    def __init__(self, subject, properties):
        self.subject = subject
        self.properties = list(properties)

    def __bool__(self):
        return all(p.holds for p in self.properties if p.counts)

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
        rows = [[p.code, p.name, "yes" if p.required else "no", p.status, p.cases,
                 f"{p.seconds:.2f}" if p.seconds else ""] for p in self.properties]
        return _table(rows, ["code", "property", "required", "status", "cases", "seconds"])

    def __str__(self):
        verdict = "PASS" if self else "FAIL"
        parts = [f"{self.subject}: {verdict}", self.table()]
        for p in self.properties:
            if p.status in ("fails", "inconclusive"):
                parts.append(p.explain())
        return "\n".join(parts)

    __repr__ = __str__

    def to_dict(self):
        return {"subject": self.subject, "holds": bool(self),
                "properties": [dataclasses.asdict(p) for p in self.properties]}
