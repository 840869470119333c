"""REPORT_DIR/README.md, the report `nsv report` writes, from REPORT_DIR/report.json.

Reads   REPORT_DIR/report.json (every statistic the prose cites, by section), the seed's reference
        figures (default: fixtures/seed_reference.json of this checkout), and which figures exist
        in REPORT_DIR/figures/.
Writes  REPORT_DIR/README.md from templates/readme/README.md.j2, one template per section.

Every number of the README comes from report.json or from the seed fixture; how it is written is
decided by the shared filters (core.py), and the comparison with the seed (differences, the
±tolerance check) by seed_view().
"""

import json
import math
import os

from . import core

DEFAULT_SEED_REFERENCE = os.path.join(core.REPO, "fixtures", "seed_reference.json")


def implied_rel_diff(cosine, norm_ratio):
    """The relative difference two vectors with this cosine and norm ratio have: sqrt(1 + ρ² - 2ρ·cos)."""
    return math.sqrt(max(0.0, 1 + norm_ratio * norm_ratio - 2 * norm_ratio * cosine))


def seed_view(report, ref):
    """The seed tables of §1 and the real-gradient comparison of §5, nsv's cells next to the seed's."""
    tables = ref["kernel_tables"]
    tol = tables["tolerance"]["value"]
    cells = {(c["shape"], c["kernel"], c["tp"], c["axis"]): c for c in report["seed_tables"]["cells"]}
    wide, square = tables["wide"], tables["square"]
    deltas = []

    rows = []
    for c in wide["cells"]:
        key = (c["kernel"], c["tp"])
        if not rows or (rows[-1]["kernel"], rows[-1]["tp"]) != key:
            rows.append({"kernel": c["kernel"], "tp": c["tp"], "axes": []})
        nsv = cells[(wide["shape"], c["kernel"], c["tp"], c["axis"])]["rel_diff"]
        delta = nsv["mean"] - c["rel_diff"]
        deltas.append(delta)
        rows[-1]["axes"].append({"axis": c["axis"], "seed": c["rel_diff"], "nsv": nsv, "delta": delta})
    for r in rows:
        r["within"] = all(abs(a["delta"]) <= tol for a in r["axes"])

    square_rows = []
    for kernel in square["kernels"]:
        cell = cells[(square["shape"], kernel, square["tp"], square["axis"])]
        ranks = [{"seed": s, "nsv": n} for s, n in zip(square["rank_rel_diff"], cell["ranks"])]
        deltas += [r["nsv"]["mean"] - r["seed"] for r in ranks]
        square_rows.append({"kernel": kernel, "ranks": ranks, "mean": cell["rel_diff"]["mean"],
                            "within": all(abs(r["nsv"]["mean"] - r["seed"]) <= tol for r in ranks)})

    # The seed's own gram-vs-standard gaps, cell by cell.
    by_key = {(c["kernel"], c["tp"], c["axis"]): c["rel_diff"] for c in wide["cells"]}
    gaps = [abs(v - by_key[("standard", tp, axis)]) for (k, tp, axis), v in by_key.items()
            if k == "gram" and ("standard", tp, axis) in by_key]

    step = ref["real_gradient"]["deepspeed"]
    seed_ratio = step["norm_tp2"] / step["norm_tp1"]
    nsv_step = report["step"]
    implied = implied_rel_diff(nsv_step["headline"]["cosine"], seed_ratio) if nsv_step["available"] else None
    return {
        "tolerance": tol,
        "agreement": tables["gaussian_agreement"]["value"],
        "wide": wide, "wide_rows": rows, "wide_axes": [a["axis"] for a in rows[0]["axes"]],
        "square": square, "square_rows": square_rows,
        "all_within": all(r["within"] for r in rows + square_rows),
        "max_abs_delta": max(abs(d) for d in deltas),
        "kernel_gaps": {"min": min(gaps), "max": max(gaps)},
        "gradient_rel_diff": ref["gradient_rel_diff"]["value"],
        "step": step, "step_norm_ratio": seed_ratio, "torch": ref["real_gradient"]["torch_minimal"],
        "implied_rel_diff": implied,
    }


def figure_link(out_dir, run):
    def figure(stem, alt):
        if run.get("plot_note") or not os.path.exists(os.path.join(out_dir, "figures", f"{stem}.png")):
            return ""
        return f"\n![{alt}](figures/{stem}.png)\n\n*Figure: `figures/{stem}.png` (also `.svg`).*\n"
    return figure


def render(out_dir, report, ref):
    checks = core.index_by(report["strategy_checks"]["per_strategy"], "strategy")
    return core.render("readme/README.md.j2", r=report, run=report["run"], plan=report["plan"],
                       strategies=report["strategies"], checks=checks, seed=seed_view(report, ref),
                       figure=figure_link(out_dir, report["run"]))


def add_arguments(parser):
    parser.add_argument("report_dir")
    parser.add_argument("--seed-reference", default=DEFAULT_SEED_REFERENCE,
                        help="the seed's reference figures (default: fixtures/seed_reference.json)")


def main(args):
    data = os.path.join(args.report_dir, "report.json")
    if not os.path.exists(data):
        print(f"{data} does not exist: run `nsv report --out-dir {args.report_dir}` first")
        return 2
    with open(data) as f:
        report = json.load(f)
    if report.get("schema") != "nsv.report/1":
        print(f"{data} is not an nsv report (schema {report.get('schema')!r}, expected 'nsv.report/1')")
        return 2
    with open(args.seed_reference) as f:
        ref = json.load(f)
    path = os.path.join(args.report_dir, "README.md")
    core.write_atomically(path, render(args.report_dir, report, ref))
    print(f"wrote {path}")
    return 0
