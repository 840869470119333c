"""reports/python/README.md: what nsverify's checks say about the shipped implementations.

Rendered from DIR/results.json (tools/report/python_checks_report.py runs the checks and writes it) and,
when present, DIR/overhead.json (tools/bench/nsverify_overhead.py --json).
"""

import json
import os

from . import core

DEFAULT_DIR = os.path.join(core.REPO, "reports", "python")


def render(out_dir):
    with open(os.path.join(out_dir, "results.json")) as f:
        data = json.load(f)
    overhead = os.path.join(out_dir, "overhead.json")
    if os.path.exists(overhead):
        with open(overhead) as f:
            data["overhead"] = json.load(f)
    else:
        data["overhead"] = []
    return core.render("python_report.md.j2", **data)


def add_arguments(parser):
    parser.add_argument("out_dir", nargs="?", default=DEFAULT_DIR, help="the folder of results.json (default reports/python)")


def main(args):
    path = os.path.join(args.out_dir, "README.md")
    core.write_atomically(path, render(args.out_dir))
    print(f"wrote {path}")
    return 0
