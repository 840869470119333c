#!/usr/bin/env python3
"""Turns tools/mpi_orders.sh's probe lines into reports/mpi/allreduce_orders.{csv,json}, then
renders reports/mpi/README.md from the JSON (nsvreport.mpi; again later with
`python3 tools/report mpi reports/mpi`).

    mpi_orders_table.py LINES.jsonl "Open MPI version line" OUT_DIR

Each line: {"algorithm": K, "name": ..., "result": <nsv_mpi_orders JSON>}. Each file is written to
a temporary name and renamed, so a failed run leaves the previous one in place.
"""
import csv
import io
import json
import os
import sys

from nsvreport import core, mpi


def rows_of(lines_path):
    rows = []
    with open(lines_path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            res = rec["result"]
            row = {
                "algorithm": rec["algorithm"],
                "name": rec["name"],
                "tp": res["tp"],
                "elements": res["elements"],
                "bytes": res["bytes"],
                "matching_orders": " ".join(res["matching_orders"]) or "none",
            }
            for o in mpi.ORDERS:
                row[f"differing_{o}"] = res["differing_elements"][o]
                row[f"max_ulps_{o}"] = res["max_ulps"][o]
            rows.append(row)
    return rows


def main() -> int:
    lines_path, version, out_dir = sys.argv[1:4]
    rows = rows_of(lines_path)
    table = io.StringIO()
    w = csv.DictWriter(table, fieldnames=list(rows[0].keys()), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    core.write_atomically(os.path.join(out_dir, "allreduce_orders.csv"), table.getvalue())
    core.write_atomically(os.path.join(out_dir, "allreduce_orders.json"),
                          json.dumps({"schema": "nsv.mpi_orders/1", "mpi": version, "rows": rows}, indent=1) + "\n")
    mpi.write(out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
