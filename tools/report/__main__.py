"""`python3 tools/report DOCUMENT ...`: the renderer's commands (nsvreport/cli.py) without setting PYTHONPATH."""
import sys

from nsvreport.cli import main

sys.exit(main())
