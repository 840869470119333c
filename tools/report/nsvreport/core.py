"""What every document shares: the one Jinja environment, the filters that decide how numbers,
tables and paths are written, and the atomic write.

Every generated document of the repository is rendered through `environment()`; a template
formats a number with one of the filters below (`{{ x|fixed(2) }}`, `{{ x|general(3) }}`), never
with its own format string, so a number is written the same way in every document. A filter
given None writes "n/a" (a figure that was not measured).
"""

import argparse
import datetime
import functools
import os
import pathlib
import sys

TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


# ---- numbers (the only place that decides digits and units) ------------------------------------

def number(fn):
    """A number filter: None (not measured) is written n/a."""
    @functools.wraps(fn)
    def wrapped(v, *args, **kwargs):
        return "n/a" if v is None else fn(v, *args, **kwargs)
    return wrapped


# One-line formats; a filter with a rule of its own is a function below.
fixed = number(lambda v, digits=4: f"{v:.{digits}f}")
signed = number(lambda v, digits=4: f"{v:+.{digits}f}")
sci = number(lambda v: f"{v:.2e}")
general = number(lambda v, digits=None: f"{v:g}" if digits is None else f"{v:.{digits}g}")
mib = number(lambda b: f"{b / 1024 / 1024:g}")
percent_change = number(lambda ratio: f"{(ratio - 1) * 100:+.0f}%")
ms = number(lambda seconds: f"{seconds * 1e3:.1f} ms")            # a time in milliseconds, with its unit
signed_ms = number(lambda seconds: f"{seconds * 1e3:+.1f} ms")
pct = number(lambda fraction, digits=1: f"{fraction * 100:.{digits}f}%")
times = number(lambda ratio, digits=2: f"{ratio:.{digits}f}x")    # a ratio as a factor: 1.23x


@number
def short_sci(v):
    """7e-07 -> 7e-7, as the seed writes it."""
    mantissa, exponent = f"{v:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


@number
def rel(v):
    """A relative difference: exact zeros say so, tiny ones in scientific notation."""
    if v == 0.0:
        return "0 (exact)"
    if abs(v) < 1e-3:
        return sci(v)
    return fixed(v, 4)


@number
def size(b):
    """Bytes as the tables write them: B, KiB, MiB."""
    if b == 0:
        return "0"
    if b < 1024:
        return f"{b:.0f} B"
    if b < 1024 * 1024:
        return f"{b / 1024:.1f} KiB"
    return f"{b / 1024 / 1024:.2f} MiB"


# ---- text and tables ---------------------------------------------------------------------------

def and_join(items):
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def cell(v):
    """A value as a Markdown table cell: a | inside it escaped."""
    return str(v).replace("|", "\\|")


def row(cells):
    """One Markdown table row from its cells, each escaped by cell()."""
    return "| " + " | ".join(cell(c) for c in cells) + " |"


def relpath(path, start=None):
    """A path as the reader's command line would write it: relative to the working folder."""
    return os.path.relpath(path, start or os.getcwd())


FILTERS = dict(fixed=fixed, signed=signed, sci=sci, short_sci=short_sci, general=general, rel=rel, size=size, mib=mib,
               percent_change=percent_change, ms=ms, signed_ms=signed_ms, pct=pct, times=times, and_join=and_join,
               cell=cell, row=row, relpath=relpath)


def index_by(items, key):
    """A list of records as a dict keyed by one of their fields (a strategy name, say)."""
    return {item[key]: item for item in items}


@functools.lru_cache(maxsize=None)
def environment():
    """The Jinja environment of every document: templates/, undefined names an error, block tags
    leave no blank lines, Markdown output (no HTML escaping). Without Jinja2, says which package
    to install and exits with status 3."""
    try:
        import jinja2
    except ImportError as exc:  # pragma: no cover - depends on the machine
        print(f"Jinja2 is not available to {sys.executable} ({exc}); install python3-jinja2 (Debian: "
              f"apt-get install python3-jinja2) and rerun: {sys.executable} {' '.join(sys.argv)}")
        sys.exit(3)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env.filters.update(FILTERS)
    env.globals["index_by"] = index_by
    return env


def render(template, **context):
    return environment().get_template(template).render(**context)


# ---- files -------------------------------------------------------------------------------------

def without_machine_paths(text):
    """No machine's paths in committed data: the repository's root becomes '.', the temporary folder
    (where the checks save failures' arrays) '$TMPDIR'."""
    import tempfile
    text = text.replace(REPO + os.sep, "").replace(REPO, ".")
    return text.replace(tempfile.gettempdir().rstrip(os.sep) + os.sep, "$TMPDIR/")


def write_atomically(path, text):
    """Writes beside `path` and renames when complete: a failed run never leaves a half-written file."""
    path = os.fspath(path)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def today():
    """The date a document is rendered, as YYYY-MM-DD; SOURCE_DATE_EPOCH (seconds) fixes it, so
    a document can be rendered again as it was."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        return datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).date().isoformat()
    return datetime.date.today().isoformat()


def writer_parser(doc, folder, data_file):
    """The command line every check report's writer shares: --out (default reports/FOLDER) and
    --render-only (README.md from DATA_FILE, no check run); a writer adds its own options to it."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "reports", folder))
    ap.add_argument("--render-only", action="store_true", help=f"re-render README.md from {data_file}")
    return ap


def output_folder(args):
    """--out as a folder, made if missing."""
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    return out
