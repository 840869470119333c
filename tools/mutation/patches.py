"""The hand-written mutants (properties/mutants/*.patch) as one more source of mutants for the
sampler: realistic one-line-class bugs (a wrong coefficient, the Gram restart dropped, the norm
taken per shard, ...), each a unified diff whose first line `# mutant: ...` says what bug it is.

A patch is applied to the scratch tree with `patch -p1 --forward` and reverted with `patch -R`;
it is judged by the same gate as a sampled site, but on the whole gate, so that its row lists
every test that kills it (they stay as regression cases: which properties catch this bug).
"""
from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path
from typing import Callable

FOLDER = "properties/mutants"


@dataclasses.dataclass(frozen=True)
class Patch:
    path: str   # relative to the repository root, e.g. properties/mutants/01_wrong_coefficient.patch
    what: str   # the bug, from its "# mutant:" line
    diff: str   # the patch itself

    @property
    def name(self) -> str:
        return Path(self.path).stem

    @property
    def key(self) -> str:
        return self.path

    def files(self) -> list[str]:
        """The files the patch changes (its +++ lines, without the b/ prefix)."""
        return [line[len("+++ b/"):].split("\t")[0] for line in self.diff.splitlines() if line.startswith("+++ b/")]


def load(root: Path, path: Path) -> Patch:
    text = path.read_text()
    what = next((line[len("# mutant: "):].strip() for line in text.splitlines() if line.startswith("# mutant: ")), "")
    if not what:
        raise ValueError(f"{path}: no '# mutant: WHAT' line says which bug the patch is")
    return Patch(str(path.resolve().relative_to(root.resolve())), what, text)


def all_patches(root: Path, chosen: list[Path] | None = None) -> list[Patch]:
    """The chosen patches, or every properties/mutants/*.patch, in name order."""
    paths = chosen or sorted((root / FOLDER).glob("*.patch"))
    return [load(root, Path(p).resolve()) for p in paths]


def _patch(tree: Path, patch: Patch, *flags: str) -> bool:
    return subprocess.run(["patch", "-s", "-p1", "-d", str(tree), *flags], input=patch.diff, text=True,
                          capture_output=True).returncode == 0


def apply(tree: Path, patch: Patch) -> Callable[[], None] | None:
    """Applies the patch to a tree; returns what reverts it, or None when it does not apply
    (then the tree is left as it was)."""
    if not _patch(tree, patch, "--dry-run", "--forward") or not _patch(tree, patch, "--forward"):
        return None

    def revert() -> None:
        if not _patch(tree, patch, "-R"):
            raise RuntimeError(f"{patch.path} does not revert cleanly from {tree}")
    return revert
