"""nsvreport: the one renderer of the repository's generated documents.

Data is written by the programs that measure (`nsv report`, tools/bench/run_all.sh,
tools/mpi_orders.sh, tools/report/python_checks_report.py, tools/mutation/sample.py); every document
is rendered from that data here, through one Jinja environment and one set of filters
(core.py), one module and one template (templates/) per document. See cli.py for the commands.
"""
