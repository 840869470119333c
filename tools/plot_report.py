#!/usr/bin/env python3
"""Draw a report's figures: `python3 tools/report figures`, under the path `nsv report` (--plot-script) runs.

Usage: /usr/bin/python3 tools/plot_report.py REPORT_DIR
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "report"))
from nsvreport.cli import run  # noqa: E402

sys.exit(run("figures", sys.argv[1:]))
