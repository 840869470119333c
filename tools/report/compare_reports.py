#!/usr/bin/env python3
"""Compare two report folders, timings ignored: `python3 tools/report compare`, under its old path.

Usage: python3 tools/report/compare_reports.py OLD_DIR NEW_DIR [--readme]
"""
import sys

from nsvreport.cli import run

sys.exit(run("compare", sys.argv[1:]))
