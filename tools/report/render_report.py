#!/usr/bin/env python3
"""Render REPORT_DIR/README.md from REPORT_DIR/report.json: `python3 tools/report readme`, under the
path `nsv report` (--render-script) and the README call.

Usage: /usr/bin/python3 tools/report/render_report.py REPORT_DIR [--seed-reference FILE]
"""
import sys

from nsvreport.cli import run

sys.exit(run("readme", sys.argv[1:]))
