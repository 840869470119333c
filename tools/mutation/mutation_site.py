"""One mutant of one line: what sites.py (C++) and python_sites.py (Python) enumerate and sample.py
applies, judges and records."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Site:
    path: str       # relative to the repository root, '/'-separated
    line: int       # 1-based
    operator: str
    before: str     # the whole line, unmutated
    after: str      # the whole line, mutated

    @property
    def key(self) -> str:
        """Identifies the mutant across runs while the line is unchanged (not its number)."""
        return f"{self.path}|{self.operator}|{self.before.strip()}|{self.after.strip()}"
