#!/usr/bin/env python3
"""Turns tools/mpi_orders.sh's probe lines into reports/mpi/allreduce_orders.{csv,json} and
reports/mpi/README.md (rendered from the data through templates/mpi_orders.md.j2, Jinja2).

    mpi_orders_table.py LINES.jsonl "Open MPI version line" OUT_DIR

Each line: {"algorithm": K, "name": ..., "result": <nsv_mpi_orders JSON>}. Files are written to a
temporary name in OUT_DIR and renamed, so a failed run leaves the previous table in place.
"""
import csv
import json
import os
import sys
import tempfile

import jinja2

ORDERS = ["rank", "reverse", "ring", "tree", "ompi_ring"]


def main() -> int:
    lines_path, version, out_dir = sys.argv[1:4]
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
            for o in ORDERS:
                row[f"differing_{o}"] = res["differing_elements"][o]
                row[f"max_ulps_{o}"] = res["max_ulps"][o]
            rows.append(row)
    fields = list(rows[0].keys())
    fd, tmp_csv = tempfile.mkstemp(dir=out_dir, prefix=".csv.")
    with os.fdopen(fd, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    fd, tmp_json = tempfile.mkstemp(dir=out_dir, prefix=".json.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"schema": "nsv.mpi_orders/1", "mpi": version, "rows": rows}, f, indent=1)
        f.write("\n")
    fd, tmp_md = tempfile.mkstemp(dir=out_dir, prefix=".md.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(render(rows, version))
    os.replace(tmp_csv, os.path.join(out_dir, "allreduce_orders.csv"))
    os.replace(tmp_json, os.path.join(out_dir, "allreduce_orders.json"))
    os.replace(tmp_md, os.path.join(out_dir, "README.md"))
    return 0


def cell_text(row):
    if row["matching_orders"] != "none":
        return ", ".join(f"`{o}`" for o in row["matching_orders"].split())
    closest = min(ORDERS, key=lambda o: (row[f"max_ulps_{o}"], row[f"differing_{o}"]))
    return f"none (closest `{closest}`: {row[f'max_ulps_{closest}']} ULP, {row[f'differing_{closest}']} el. differ)"


def render(rows, version):
    columns = sorted({(r["tp"], r["elements"]) for r in rows})
    algorithms = []
    for k in sorted({r["algorithm"] for r in rows}):
        mine = {(r["tp"], r["elements"]): r for r in rows if r["algorithm"] == k}
        name = next(iter(mine.values()))["name"]
        algorithms.append({"k": k, "name": name, "cells": [cell_text(mine[c]) for c in columns], "rows": mine})
    from_3 = [r for r in rows if r["tp"] >= 3]
    matched = [r for r in from_3 if r["matching_orders"] != "none"]
    conclusions = []
    for a in algorithms:
        orders = sorted({r["matching_orders"] for r in a["rows"].values() if r["tp"] >= 3})
        conclusions.append(f"{a['name']} (K = {a['k']}) " + " or ".join(
            "none" if o == "none" else " = ".join(f"`{x}`" for x in o.split()) for o in orders))
    unmatched = [f"{r['name']} (K = {r['algorithm']}) at tp {r['tp']} with {r['elements']} elements" for r in from_3
                 if r["matching_orders"] == "none"]
    nccl_ring_matches = any("ring" in r["matching_orders"].split() for r in from_3)
    only_reduce_bcast = all(r["name"] == "nonoverlapping" for r in from_3 if r["matching_orders"] == "none")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    return env.get_template("mpi_orders.md.j2").render(
        mpi=version, orders=ORDERS, columns=columns, algorithms=algorithms, matched_cells=len(matched),
        cells_from_3=len(from_3), conclusions=conclusions, unmatched=unmatched, only_reduce_bcast=only_reduce_bcast,
        nccl_ring_matches=nccl_ring_matches)


if __name__ == "__main__":
    sys.exit(main())
