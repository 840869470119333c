"""Counterexamples as data: every failing property's arrays saved as .npy files.

A failing case carries the matrices it noted (checks/assertions.hpp: note_matrix): the drawn input,
and for a user's callable every call of the case, what fn was handed and what it returned
("call 1 input", "call 1 output", ...); REF adds the reference's output on the same input, check_tp
the assembled output and the target. Here each becomes one .npy file, and for each call's input
the reference's output on it is computed and saved beside it ("call 1 reference"), so that a
debugger has the three arrays side by side.

Files are never overwritten and links never followed: with no folder given, a fresh folder is
made by tempfile.mkdtemp; in a folder the user names (created if missing, refused if it is a
symbolic link or not a folder), each check writes into a fresh subfolder of it, made by mkdtemp
(its name starts with the check's name), and each file is created with O_EXCL | O_NOFOLLOW.
"""

import io
import os
import re
import tempfile

import numpy as np

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


def _slug(text, limit=60):
    return re.sub(r"[^A-Za-z0-9]+", "_", str(text)).strip("_")[:limit] or "x"


def folder_for(counterexamples, subject):
    """A fresh folder for one check's files: inside `counterexamples` (a path) or a new temporary one (None).

    ValueError naming the argument when the path is unusable."""
    prefix = "nsverify-" + _slug(subject.split(":")[0], 40) + "-"
    if counterexamples is None:
        return tempfile.mkdtemp(prefix=prefix)
    if not isinstance(counterexamples, (str, os.PathLike)):
        raise ValueError(f"counterexamples: must be a folder path (str or os.PathLike) or None, got "
                         f"{type(counterexamples).__name__}")
    path = os.fspath(counterexamples)
    if os.path.islink(path):
        raise ValueError(f"counterexamples: {path} is a symbolic link; give the folder itself (links are not followed)")
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"counterexamples: {path} exists and is not a folder")
    os.makedirs(path, exist_ok=True)
    return tempfile.mkdtemp(prefix=prefix, dir=path)


def write_npy(folder, name, array):
    """array as folder/name.npy, created exclusively (never overwriting, never through a link): its path."""
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    stem, n = _slug(name, 100), 0
    while True:
        path = os.path.join(folder, f"{stem}{'' if n == 0 else '-' + str(n)}.npy")
        try:
            fd = os.open(path, _FLAGS, 0o644)
        except FileExistsError:
            n += 1
            continue
        with os.fdopen(fd, "wb") as f:
            f.write(buffer.getvalue())
        return path


def save_failures(result, counterexamples, reference=None, dtype=np.float32):
    """Save the arrays of every failing property of `result` (a CheckResult), set each property's
    ``files`` and the result's ``counterexample_folder``. Nothing is written when nothing failed.

    reference  fn(input array) -> the reference's output on it, or None (check_tp: its target is noted)
    dtype      the dtype fn was handed (float32; float64 for an fp64 check): inputs and outputs are
               saved in it (the values are exactly those: the case's matrices hold them in float64)
    """
    failing = [p for p in result.properties if p.status == "fails" and p.detail and p.detail.get("matrices")]
    if not failing:
        return None
    folder = folder_for(counterexamples, result.subject)
    for p in failing:
        prefix = f"{p.code}-{_slug(p.name, 50)}"
        for label, matrix in p.detail["matrices"].items():
            p.files[label] = write_npy(folder, f"{prefix}-{label}", np.asarray(matrix).astype(dtype))
            if reference is not None and label.endswith(" input"):
                ref_label = label[: -len(" input")] + " reference"
                try:
                    ref = reference(np.asarray(matrix).astype(dtype))
                except Exception as e:  # the reference refuses non-finite inputs: say so, save nothing
                    p.files[ref_label] = f"(not computed: {e})"
                    continue
                p.files[ref_label] = write_npy(folder, f"{prefix}-{ref_label}", np.asarray(ref).astype(dtype))
    result.counterexample_folder = folder
    return folder
