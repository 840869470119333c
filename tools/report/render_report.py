#!/usr/bin/env python3
"""Render an nsverify report's README.md from the data `nsv report` wrote.

Usage: /usr/bin/python3 tools/report/render_report.py REPORT_DIR [--seed-reference FILE]

Reads   REPORT_DIR/report.json (every statistic the prose cites, by section), the seed's reference
        figures (default: fixtures/seed_reference.json of this checkout), and which figures exist
        in REPORT_DIR/figures/.
Writes  REPORT_DIR/README.md from templates/README.md.j2 (atomically: a failed run leaves the old
        file in place).

Every number of the README comes from report.json or from the seed fixture; how it is written
(digits, units, "0 (exact)") is decided by the filters below, and the comparison with the seed
(differences, the ±tolerance check) by seed_view(). Needs Jinja2 (Debian: python3-jinja2);
without it, prints which package to install and exits with status 3.
"""

import argparse
import json
import math
import os
import sys

try:
    import jinja2
except ImportError as exc:  # pragma: no cover - depends on the machine
    print(f"Jinja2 is not available to {sys.executable} ({exc}); install python3-jinja2 (Debian: "
          f"apt-get install python3-jinja2) and rerun: {sys.executable} {' '.join(sys.argv)}")
    sys.exit(3)

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SEED_REFERENCE = os.path.join(HERE, "..", "..", "fixtures", "seed_reference.json")


# ---- number formatting (the only place that decides digits and units) ----------------------------

def fixed(v, digits=4):
    return f"{v:.{digits}f}"


def signed(v, digits=4):
    return f"{v:+.{digits}f}"


def sci(v):
    return f"{v:.2e}"


def short_sci(v):
    """7e-07 -> 7e-7, as the seed writes it."""
    mantissa, exponent = f"{v:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def general(v, digits=None):
    return f"{v:g}" if digits is None else f"{v:.{digits}g}"


def rel(v):
    """A relative difference: exact zeros say so, tiny ones in scientific notation."""
    if v == 0.0:
        return "0 (exact)"
    if abs(v) < 1e-3:
        return sci(v)
    return fixed(v, 4)


def size(b):
    """Bytes as the tables write them: B, KiB, MiB."""
    if b == 0:
        return "0"
    if b < 1024:
        return f"{b:.0f} B"
    if b < 1024 * 1024:
        return f"{b / 1024:.1f} KiB"
    return f"{b / 1024 / 1024:.2f} MiB"


def mib(b):
    return f"{b / 1024 / 1024:g}"


def percent_change(ratio):
    return f"{(ratio - 1) * 100:+.0f}%"


def ms(seconds):
    """A time of the audits' cost model in milliseconds."""
    return f"{seconds * 1e3:.1f} ms"


def signed_ms(seconds):
    return f"{seconds * 1e3:+.1f} ms"


def pct(fraction):
    return f"{fraction * 100:.1f}%"


def and_join(items):
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


FILTERS = dict(fixed=fixed, signed=signed, sci=sci, short_sci=short_sci, general=general, rel=rel, size=size, mib=mib,
               percent_change=percent_change, and_join=and_join, ms=ms, signed_ms=signed_ms, pct=pct)


# ---- the comparison with the seed's figures ----------------------------------------------------

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


# ---- rendering ---------------------------------------------------------------------------------

def figure_link(out_dir, run):
    def figure(stem, alt):
        if run.get("plot_note") or not os.path.exists(os.path.join(out_dir, "figures", f"{stem}.png")):
            return ""
        return f"\n![{alt}](figures/{stem}.png)\n\n*Figure: `figures/{stem}.png` (also `.svg`).*\n"
    return figure


def index_by(items, key):
    """A list of records as a dict keyed by one of their fields (a strategy name, say)."""
    return {item[key]: item for item in items}


def render(out_dir, report, ref):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(HERE, "templates")),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, autoescape=False)
    env.filters.update(FILTERS)
    env.globals["index_by"] = index_by
    checks = index_by(report["strategy_checks"]["per_strategy"], "strategy")
    return env.get_template("README.md.j2").render(
        r=report, run=report["run"], plan=report["plan"], strategies=report["strategies"], checks=checks,
        seed=seed_view(report, ref), figure=figure_link(out_dir, report["run"]))


def main(argv):
    parser = argparse.ArgumentParser(description="Render REPORT_DIR/README.md from REPORT_DIR/report.json.")
    parser.add_argument("report_dir")
    parser.add_argument("--seed-reference", default=DEFAULT_SEED_REFERENCE,
                        help="the seed's reference figures (default: fixtures/seed_reference.json)")
    args = parser.parse_args(argv[1:])
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
    text = render(args.report_dir, report, ref)
    path = os.path.join(args.report_dir, "README.md")
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
