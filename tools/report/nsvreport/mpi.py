"""reports/mpi/README.md: Open MPI's all-reduce algorithms against the simulated reduction orders,
rendered from DIR/allreduce_orders.json (tools/mpi_orders.sh writes it, through
tools/report/mpi_orders_table.py)."""

import json
import os

from . import core

DEFAULT_DIR = os.path.join(core.REPO, "reports", "mpi")
ORDERS = ["rank", "reverse", "ring", "tree", "ompi_ring"]


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
    return core.render("mpi_orders.md.j2", mpi=version, orders=ORDERS, columns=columns, algorithms=algorithms,
                       matched_cells=len(matched), cells_from_3=len(from_3), conclusions=conclusions, unmatched=unmatched,
                       only_reduce_bcast=only_reduce_bcast, nccl_ring_matches=nccl_ring_matches)


def write(out_dir):
    with open(os.path.join(out_dir, "allreduce_orders.json"), encoding="utf-8") as f:
        data = json.load(f)
    path = os.path.join(out_dir, "README.md")
    core.write_atomically(path, render(data["rows"], data["mpi"]))
    return path


def add_arguments(parser):
    parser.add_argument("out_dir", nargs="?", default=DEFAULT_DIR, help="the folder of allreduce_orders.json (default reports/mpi)")


def main(args):
    print(f"wrote {write(args.out_dir)}")
    return 0
