"""The renderer's commands, one per document (each re-renders from data already written; nothing
is measured here):

  python3 tools/report readme REPORT_DIR            REPORT_DIR/README.md from report.json (nsv report runs this)
  python3 tools/report figures REPORT_DIR           REPORT_DIR/figures/ from its CSV/JSON (needs matplotlib)
  python3 tools/report performance RESULTS_DIR [OUT]  reports/performance.md from tools/bench/run_all.sh's results
  python3 tools/report mpi [DIR]                    reports/mpi/README.md from allreduce_orders.json
  python3 tools/report python [DIR]                 reports/python/README.md from results.json (+ overhead.json)
  python3 tools/report torch [DIR]                  reports/torch/README.md from results.json
  python3 tools/report optimizers [DIR]             reports/optimizers/README.md from optimizers.json
  python3 tools/report mutation [--results ...]     reports/mutation.md and mutation_handwritten.md from results.jsonl
  python3 tools/report compare OLD_DIR NEW_DIR      two report folders, timings ignored (prints differences)

`python3 -m nsvreport ...` with PYTHONPATH=tools/report is the same. Exit status 3: Jinja2 (or,
for figures, matplotlib) is missing, and the message says which Debian package to install.
"""

import argparse
import importlib
import sys

COMMANDS = {
    "readme": ("readme", "REPORT_DIR/README.md from REPORT_DIR/report.json"),
    "figures": ("figures", "REPORT_DIR/figures/ from the report's CSV/JSON files"),
    "performance": ("performance", "reports/performance.md from tools/bench/run_all.sh's results"),
    "mpi": ("mpi", "reports/mpi/README.md from allreduce_orders.json"),
    "python": ("python_checks", "reports/python/README.md from results.json"),
    "torch": ("torch_checks", "reports/torch/README.md from results.json (nsverify.torch's checks)"),
    "optimizers": ("optimizer_checks", "reports/optimizers/README.md from optimizers.json (check_optimizer's catalogue)"),
    "mutation": ("mutation", "reports/mutation.md and reports/mutation_handwritten.md from the sampler's results"),
    "compare": ("compare", "compare two report folders, timings ignored"),
}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="tools/report", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    sub = parser.add_subparsers(dest="command", required=True, metavar="DOCUMENT")
    # Each document's module is imported only when its command runs: `readme` needs no matplotlib.
    wanted = argv[0] if argv and argv[0] in COMMANDS else None
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        if name == wanted:
            mod = importlib.import_module(f"nsvreport.{module}")
            mod.add_arguments(p)
            p.set_defaults(run=mod.main)
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.error(f"unknown document {args.command}")
    return args.run(args)


def run(command, argv):
    """Runs one command, for the shims that keep the old script paths: run("readme", sys.argv[1:])."""
    return main([command] + list(argv))
