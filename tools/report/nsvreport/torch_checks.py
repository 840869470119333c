"""reports/torch/README.md: what nsverify.torch's checks say about PyTorch code on real gloo ranks.

Rendered from DIR/results.json (tools/report/torch_checks_report.py runs the checks and writes it).
"""

import json
import os

from . import core

DEFAULT_DIR = os.path.join(core.REPO, "reports", "torch")


def render(out_dir):
    with open(os.path.join(out_dir, "results.json")) as f:
        data = json.load(f)
    return core.render("torch_report.md.j2", **data)


def add_arguments(parser):
    parser.add_argument("out_dir", nargs="?", default=DEFAULT_DIR, help="the folder of results.json (default reports/torch)")


def main(args):
    path = os.path.join(args.out_dir, "README.md")
    core.write_atomically(path, render(args.out_dir))
    print(f"wrote {path}")
    return 0
