"""Draw the figures of an nsverify report from the CSV/JSON files `nsv report` wrote.

Usage: /usr/bin/python3 tools/report figures reports/   (or tools/plot_report.py reports/, as `nsv report` runs it)

Reads   report.json (the strategy table: names, summaries and the baseline; the training study;
        parameters of the figures), sweep.csv, aspect_sweep.csv, spectrum_sweep.csv,
        amplification.csv, step.csv, audit/*.json, schedule_*.csv
Writes  figures/<name>.png and figures/<name>.svg for each figure whose input exists, and
        figures/index.json (name -> title, inputs).

Needs matplotlib (Debian: python3-matplotlib) and nothing else (the CSV files are read with the
standard library). Without matplotlib it prints a note and exits with status 3, which
`nsv report` turns into a clear "figures skipped" line in the README.
"""

import csv
import json
import os
import sys
from collections import defaultdict

from . import core

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.patches
    import matplotlib.ticker
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
except ImportError as exc:  # pragma: no cover - depends on the machine
    print(f"matplotlib is not available to {sys.executable} ({exc}); install python3-matplotlib "
          f"(Debian) and rerun: {sys.executable} {' '.join(sys.argv)}")
    sys.exit(3)

plt.rcParams.update({
    "figure.dpi": 110,
    "savefig.dpi": 110,
    "font.size": 10,
    "axes.titlesize": 10.5,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.fontsize": 8.5,
    "svg.hashsalt": "nsverify",  # stable SVG ids between runs
})

# Colours and markers by a strategy's position in the strategy table (report.json "strategies",
# from nsv's strategy records), so that a new strategy gets its own without an edit here. LIGHT[i]
# is the light tint of PALETTE[i] (the baseline's local-scale series of the step figure).
PALETTE = ["#d62728", "#1f77b4", "#9467bd", "#2ca02c", "#17becf", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]
LIGHT = ["#ff9896", "#aec7e8", "#c5b0d5", "#98df8a", "#9edae5", "#ffbb78", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d"]
MARKERS = ["o", "s", "D", "^", "v", "o", "P", "X", "*", "h"]


class Strategies:
    """The strategy table of report.json: names in order, colours and markers by position, and the
    baseline (the strategy that promises nothing: AutoTP's per-shard NS today)."""

    def __init__(self, records):
        self.records = records
        self.names = [r["name"] for r in records]
        self.baseline = next(r["name"] for r in records if r["promise"] == "inexact")

    def color(self, name):
        return PALETTE[self.names.index(name) % len(PALETTE)]

    def light(self, name):
        return LIGHT[self.names.index(name) % len(LIGHT)]

    def marker(self, name):
        return MARKERS[self.names.index(name) % len(MARKERS)]

    def label(self, name):
        """The strategy's name and what it does, for a legend (its record's summary)."""
        return f"{name}: {self.records[self.names.index(name)]['summary']}"


def load_report(out_dir):
    """report.json (the strategy table and the figures' parameters), or None when absent."""
    path = os.path.join(out_dir, "report.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def read_csv(path):
    if not os.path.exists(path):
        return None
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def ordered_unique(values):
    """The distinct values in order of first appearance (the sweep's own order)."""
    return list(dict.fromkeys(values))


def mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


class Figures:
    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.fig_dir = os.path.join(out_dir, "figures")
        os.makedirs(self.fig_dir, exist_ok=True)
        self.index = {}

    def save(self, fig, name, title, inputs):
        for ext in ("png", "svg"):
            path = os.path.join(self.fig_dir, f"{name}.{ext}")
            tmp = path + ".tmp"
            fig.savefig(tmp, format=ext, bbox_inches="tight", metadata={"Date": None} if ext == "svg" else None)
            os.replace(tmp, path)
        plt.close(fig)
        self.index[name] = {"title": title, "inputs": inputs}
        print(f"wrote figures/{name}.png and .svg")

    def write_index(self):
        """index.json: the figures drawn now, and those of the previous index whose files are still
        here though their input is not (a checkout without the uncommitted data, reports/README.md
        "Files"): the index lists every figure of the folder."""
        path = os.path.join(self.fig_dir, "index.json")
        kept = {}
        if os.path.exists(path):
            with open(path) as f:
                kept = {name: entry for name, entry in json.load(f).items()
                        if os.path.exists(os.path.join(self.fig_dir, f"{name}.png"))}
        core.write_atomically(path, json.dumps({**kept, **self.index}, indent=1, sort_keys=True) + "\n")


def divergence_vs_tp(figs, rows, strategies):
    rows = [r for r in rows if r["strategy"] == strategies.baseline and r["spectrum"] == "gaussian"]
    if not rows:
        return
    shapes = []
    for r in rows:
        s = f"{r['rows']}x{r['cols']}"
        if s not in shapes:
            shapes.append(s)
    fig, axes = plt.subplots(1, len(shapes), figsize=(3.3 * len(shapes), 3.6), sharey=True)
    axes = [axes] if len(shapes) == 1 else list(axes)
    ymax = 0
    for ax, shape in zip(axes, shapes):
        for axis, color in ((0, "#1f77b4"), (1, "#d62728")):
            for kernel, style, marker in (("gram", "-", "o"), ("standard", "--", "x")):
                acc = defaultdict(list)
                for r in rows:
                    if f"{r['rows']}x{r['cols']}" == shape and int(r["axis"]) == axis and r["kernel"] == kernel:
                        acc[int(r["tp"])].append(float(r["rel_diff_mean"]))
                tps = sorted(acc)
                ys = [mean(acc[t]) for t in tps]
                ymax = max(ymax, max(ys, default=0))
                ax.plot(tps, ys, style, color=color, marker=marker, ms=5,
                        label=f"dim-{axis} split, {kernel}")
        r0, c0 = (int(x) for x in shape.split("x"))
        kind = "square: both splits overlap" if r0 == c0 else ("wide" if c0 > r0 else "tall")
        ax.set_title(f"{shape} ({kind})")
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 2, 4, 8])
        ax.set_xticklabels(["1", "2", "4", "8"])
        ax.set_xlabel("tensor-parallel degree tp (ranks)")
    axes[0].set_ylabel("rel. difference of shard NS from whole NS\n(‖shard − block‖ / ‖block‖, dimensionless)")
    axes[0].set_ylim(0, ymax * 1.08)
    axes[0].legend(loc="upper left")
    fig.suptitle("AutoTP's per-shard NS diverges at every tp ≥ 2; cutting the long axis is worst "
                 "(gram and standard overlap: same map)", fontsize=11)
    fig.tight_layout()
    figs.save(fig, "divergence_vs_tp", "shard divergence vs tp, per split axis and kernel", ["sweep.csv"])


def divergence_vs_aspect(figs, rows):
    if not rows:
        return
    acc = defaultdict(list)
    ratio = defaultdict(list)
    for r in rows:
        aspect = int(r["cols"]) / int(r["rows"])
        key = (int(r["tp"]), int(r["axis"]), aspect)
        acc[key].append(float(r["rel_diff_mean"]))
        ratio[key].append(float(r["norm_ratio"]))
    tps = sorted({k[0] for k in acc})
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    colors = {2: "#1f77b4", 4: "#2ca02c", 8: "#d62728"}
    for tp in tps:
        for axis, style, marker in ((0, "-", "o"), (1, "--", "s")):
            xs = sorted(k[2] for k in acc if k[0] == tp and k[1] == axis)
            ax.plot(xs, [mean(acc[(tp, axis, x)]) for x in xs], style, marker=marker, ms=5,
                    color=colors.get(tp), label=f"tp={tp}, dim-{axis} split")
            ax2.plot(xs, [mean(ratio[(tp, axis, x)]) for x in xs], style, marker=marker, ms=5,
                     color=colors.get(tp), label=f"tp={tp}, dim-{axis} split")
    for a in (ax, ax2):
        a.set_xscale("log", base=2)
        xs = sorted({k[2] for k in acc})
        a.set_xticks(xs)
        a.set_xticklabels([f"{x:g}" if x >= 1 else f"1/{1 / x:g}" for x in xs])
        a.set_xlabel("aspect ratio cols/rows (log; 1/8 = 2048×256 … 8 = 256×2048)")
    ax.set_ylabel("rel. difference from whole NS (dimensionless)")
    ax.set_title("divergence: small when the short axis is cut,\nlarge and growing with tp when the long axis is cut")
    ax2.axhline(1.0, color="grey", lw=0.8)
    ax2.set_ylabel("norm ratio ‖NS(shard)‖ / ‖block of NS(whole)‖")
    ax2.set_title("why: cutting the long axis inflates the update's norm\n(each shard is orthogonalized to full norm on its own)")
    ax.legend(loc="upper center", ncol=2)
    fig.suptitle("Shard divergence vs aspect ratio (gram, Gaussian, 256 on the short side): "
                 "the axis you cut matters more than the matrix", fontsize=11)
    fig.tight_layout()
    figs.save(fig, "divergence_vs_aspect", "shard divergence vs aspect ratio", ["aspect_sweep.csv"])


def divergence_vs_spectrum(figs, rows):
    if not rows:
        return
    spectra = ordered_unique(r["spectrum"] for r in rows)
    tps = sorted({int(r["tp"]) for r in rows})
    fig, axes = plt.subplots(1, 2, figsize=(11.5, 4.2), sharey=True)
    width = 0.8 / len(tps)
    colors = {2: "#1f77b4", 4: "#2ca02c", 8: "#d62728"}
    for ax, axis in zip(axes, (0, 1)):
        for i, tp in enumerate(tps):
            ys, cs = [], []
            for sp in spectra:
                sel = [r for r in rows if r["spectrum"] == sp and int(r["tp"]) == tp and int(r["axis"]) == axis]
                ys.append(mean(float(r["rel_diff_mean"]) for r in sel))
                cs.append(mean(float(r["cosine"]) for r in sel))
            xs = [j + (i - (len(tps) - 1) / 2) * width for j in range(len(spectra))]
            bars = ax.bar(xs, ys, width, color=colors.get(tp), label=f"tp={tp}")
            for b, c in zip(bars, cs):
                ax.text(b.get_x() + b.get_width() / 2, b.get_height(), f"{c:.2f}", ha="center", va="bottom",
                        fontsize=6.5, rotation=90)
        ax.set_xticks(range(len(spectra)))
        ax.set_xticklabels(spectra, rotation=30, ha="right")
        ax.set_xlabel("gradient spectrum (512×1024)")
        ax.set_title(f"dim-{axis} split ({'short' if axis == 0 else 'long'} axis of the wide matrix)")
    axes[0].set_ylim(0, axes[0].get_ylim()[1] * 1.12)
    axes[0].set_ylabel("rel. difference from whole NS (dimensionless)\nlabels on bars: cosine")
    axes[0].legend(loc="upper left")
    fig.suptitle("Low-rank and steeply decaying spectra diverge far more than Gaussian ones once tp ≥ 4, "
                 "mostly in norm: their cosine (bar labels) stays high", fontsize=11)
    fig.tight_layout()
    figs.save(fig, "divergence_vs_spectrum", "shard divergence vs gradient spectrum", ["spectrum_sweep.csv"])


def step_strategies(figs, rows, strategies):
    if not rows:
        return
    tp = min(int(r["tp"]) for r in rows)
    sel = [r for r in rows if int(r["tp"]) == tp]
    params = []
    for r in sel:
        if r["param"] not in params:
            params.append(r["param"])
    base = strategies.baseline
    series = [(f"{base} (local scale)", base, "local", strategies.light(base))] + [
        (s, s, "global", strategies.color(s)) for s in strategies.names]
    floor = 1e-8
    fig, ax = plt.subplots(figsize=(12.5, 5.2))
    width = 0.8 / len(series)
    handles = []
    for i, (label, strategy, scale, color) in enumerate(series):
        xs, ys, exact_x, na_x = [], [], [], []
        for j, p in enumerate(params):
            hit = [r for r in sel if r["param"] == p and r["strategy_requested"] == strategy and r["scale_from"] == scale]
            if not hit:
                continue
            r = hit[0]
            x = j + (i - (len(series) - 1) / 2) * width
            if r["strategy_used"] != strategy:  # per_head fell back: not applicable to this matrix
                na_x.append(x)
            elif float(r["rel_diff"]) == 0.0:
                exact_x.append(x)
            else:
                xs.append(x)
                ys.append(float(r["rel_diff"]))
        ax.bar(xs, [y - floor for y in ys], width, bottom=floor, color=color)
        # Exact results cannot be drawn on a log axis: a marker at the floor in the strategy's
        # colour, labelled, stands for "exact (0)".
        ax.scatter(exact_x, [floor * 1.5] * len(exact_x), marker="v", s=40, color=color, edgecolor="black",
                   linewidth=0.6, zorder=5)
        for x in exact_x:
            ax.text(x, floor * 2.6, "exact (0)", rotation=90, ha="center", va="bottom", fontsize=6.5)
        for x in na_x:
            ax.text(x, floor * 1.3, "n/a", rotation=90, ha="center", va="bottom", fontsize=6.5, color="#555")
        handles.append(matplotlib.patches.Patch(color=color, label=label + (" (DeepSpeed today)" if scale == "local" else "")))
    handles.append(Line2D([], [], marker="v", color="grey", markeredgecolor="black", ls="", ms=7,
                          label="exact (0): bit-identical to tp=1"))
    ax.set_yscale("log")
    ax.set_ylim(floor, 5)
    ax.set_xticks(range(len(params)))
    ax.set_xticklabels(params)
    ax.set_xlabel("Muon parameter of the tiny Llama layer (real gradient, fixtures/grads)")
    ax.set_ylabel(f"update rel. difference tp={tp} vs tp=1 (dimensionless, log)")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8.5)
    ax.set_title(f"One Muon step at tp={tp}: {base} changes every matrix's update by 0.5-1; gather and owner are exact,\n"
                 f"the all-reduce strategies differ by ~1e-5 (rounding), per_head is exact for q/k/v only "
                 f"(n/a: no heads on dim 0).\nAll but '{base} (local scale)' take sqrt(rows/cols) from the global shape.")
    fig.tight_layout()
    figs.save(fig, "step_strategies", "strategy comparison per Llama parameter", ["step.csv"])


def amplification(figs, rows, report):
    """Noise amplification over NS steps, with a^k for the schedule's slope at 0 (report.json
    "amplification": a, the first coefficient)."""
    if not rows:
        return
    a = report.get("amplification", {}).get("a")
    spectra = ordered_unique(r["spectrum"] for r in rows)
    cols = [
        ("whole_amp", "whole NS: rank- vs reverse-order gradient", "black", "-", "o"),
        ("gram_allreduce_order_amp", "gram_allreduce: Gram all-reduce order", "#2ca02c", "-", "s"),
        ("gram_allreduce_vs_whole_amp", "gram_allreduce vs whole (standard loop)", "#2ca02c", "--", "s"),
        ("gram_restart_order_amp", "gram_restart_allreduce: all-reduce order", "#17becf", "-", "^"),
        ("gram_restart_vs_whole_amp", "gram_restart_allreduce vs whole (gram loop)", "#17becf", "--", "^"),
        ("kernel_err_standard_amp", "fp32 vs fp64 kernel error (standard)", "#7f7f7f", ":", "x"),
        ("kernel_err_gram_amp", "fp32 vs fp64 kernel error (gram)", "#bcbd22", ":", "x"),
    ]
    fig, axes = plt.subplots(1, len(spectra), figsize=(5.6 * len(spectra), 4.4), sharey=True)
    axes = [axes] if len(spectra) == 1 else list(axes)
    steps = sorted({int(r["ns_steps"]) for r in rows})
    for ax, sp in zip(axes, spectra):
        for col, label, color, style, marker in cols:
            ys = [mean(float(r[col]) for r in rows if r["spectrum"] == sp and int(r["ns_steps"]) == k) for k in steps]
            ax.plot(steps, ys, style, color=color, marker=marker, ms=5, label=label)
        if a:
            ax.plot(steps, [a ** k for k in steps], color="#d62728", lw=0.8, ls="-.", label=f"a^k = {a:g}^k (NS slope at 0)")
        ax.set_yscale("log")
        ax.set_xticks(steps)
        ax.set_xlabel("Newton-Schulz steps k")
        grad = mean(float(r["grad_rel_diff"]) for r in rows if r["spectrum"] == sp)
        ax.set_title(f"{sp} 512×1024, tp={rows[0]['tp']} (gradient-level diff {grad:.1e})")
    axes[0].set_ylabel("amplification: rel. diff of the NS output\n÷ rel. diff of the gradient (×, log scale)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.suptitle("Reduction-order noise grows through NS steps (fastest on low-rank inputs), but the all-reduce "
                 "strategies stay at the size of the kernel's own fp32 error", fontsize=11)
    fig.tight_layout(rect=(0, 0.17, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8.5, frameon=False)
    figs.save(fig, "amplification", "reduction-order noise amplification over NS steps", ["amplification.csv"])


def gram_stability(figs, rows, report):
    """The share of the grid's inputs on which Gram NS blows up, per restart list and step count,
    one panel per dtype; cells and colour bar both in percent."""
    if not rows:
        return
    grid = report.get("gram_stability", {}).get("grid")
    if not grid:
        return
    schedules = grid["restarts"] + ["standard"]
    steps = list(range(1, grid["max_steps"] + 1))
    dtypes = grid["dtypes"]
    cells = {}
    for r in rows:
        key = (r["dtype"], r["restart_at"] if r["kernel"] == "gram" else "standard", int(r["steps"]))
        n, b = cells.get(key, (0, 0))
        cells[key] = (n + int(r["seeds"]), b + int(r["blowups"]))
    names = {"none": "none (never)", "2": "{2} (DeepSpeed)", "standard": "standard kernel (control)"}
    fig, axes = plt.subplots(1, len(dtypes), figsize=(4.3 * len(dtypes), 0.4 * len(schedules) + 2.0), sharey=True)
    axes = [axes] if len(dtypes) == 1 else list(axes)
    for ax, d in zip(axes, dtypes):
        percent = [[100 * cells[(d, s, k)][1] / cells[(d, s, k)][0] if (d, s, k) in cells else float("nan") for k in steps]
                   for s in schedules]
        im = ax.imshow(percent, vmin=0, vmax=100, cmap="Reds", aspect="auto")
        for i, line in enumerate(percent):
            for j, v in enumerate(line):
                if v > 0:
                    ax.text(j, i, f"{v:.0f}" if v >= 1 else "<1", ha="center", va="center", fontsize=7.5,
                            color="white" if v > 50 else "black")
        ax.grid(False)
        ax.set_xticks(range(len(steps)), [str(k) for k in steps])
        ax.set_yticks(range(len(schedules)), [names.get(s, "{" + s + "}") for s in schedules])
        ax.set_xlabel("Newton-Schulz steps")
        ax.set_title(d)
    axes[0].set_ylabel("restart list: the Gram kernel restarts before these steps")
    fig.colorbar(im, ax=axes, shrink=0.8, label="inputs that blow up (%)")
    x_star = report["gram_stability"]["x_star"]
    fig.suptitle(f"Gram NS ({grid['coeffs']} coefficients): % of inputs that blow up (blank: none), i.e. give a "
                 f"non-finite X or ‖X‖_F > √min(m,n)·x*,\nx* = {x_star:.4g} the polynomial's repelling fixed point; "
                 f"per cell {len(grid['spectra'])} spectra × short sides {core.and_join(grid['short_sides'])} × aspect ratios "
                 f"{core.and_join(grid['aspects'])} × {grid['seeds']} seeds", fontsize=10.5, x=0.45)
    figs.save(fig, "gram_stability", "Gram NS blow-ups per dtype, restart list and step count", ["gram_stability.csv"])


def plain_log_ticks(axis):
    """A log axis ticked at 1, 2 and 5 times the powers of ten, written as plain numbers (a panel
    spanning about a decade otherwise shows one label, or none)."""
    axis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1, 2, 5), numticks=12))
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def tp_axis(ax, tps):
    """The x axis of a quantity against the tensor-parallel degree: log 2, one tick per tp."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(tps, [str(t) for t in tps])
    ax.minorticks_off()
    ax.set_xlabel("tensor-parallel degree tp (ranks)")


def bytes_vs_tp(figs, rows, strategies, report):
    """Bytes the busiest rank sends per strategy vs tp, for the matrix of report.json's
    "communication" section, in MiB as the README's table writes them."""
    comm = report.get("communication")
    if not comm:
        return
    sel = [r for r in rows if int(r["rows"]) == comm["rows"] and int(r["cols"]) == comm["cols"] and r["kernel"] == comm["kernel"]
           and r["spectrum"] == comm["spectrum"] and int(r["seed"]) == comm["seed"] and int(r["tp"]) >= 2]
    if not sel:
        return
    mib = 1024 * 1024
    whole = comm["whole_bytes"] / mib
    shape = f"{comm['rows']}×{comm['cols']}"
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    drawn = {}
    sent = [float(r["bytes_sent"]) / mib for r in sel if float(r["bytes_sent"]) > 0] + [whole]
    for ax, axis in zip(axes, comm["axes"]):
        zero, absent = [], []
        curves = {}
        for s in strategies.names:
            pts = sorted((int(r["tp"]), float(r["bytes_sent"]) / mib) for r in sel
                         if r["strategy"] == s and int(r["axis"]) == axis)
            if not pts:
                absent.append(s)
            elif all(b == 0 for _, b in pts):
                zero.append(s)
            else:
                curves[s] = pts
        # A curve that repeats an earlier one is drawn dashed and small inside the earlier one's
        # hollow marker, and says which it equals.
        same_as = {s: next((t for t in list(curves)[:list(curves).index(s)] if curves[t] == pts), None)
                   for s, pts in curves.items()}
        covered = {t for t in same_as.values() if t}
        for s, pts in curves.items():
            style = (dict(marker="o", ms=4, ls="--") if same_as[s] else
                     dict(marker="s", ms=9, ls="-", mfc="none") if s in covered else dict(marker="o", ms=5, ls="-"))
            label = strategies.label(s) + (f" (same bytes as {same_as[s]}: dashed, inside its square)" if same_as[s] else "")
            drawn[label] = ax.plot([p[0] for p in pts], [p[1] for p in pts], color=strategies.color(s), **style)[0]
        whole_line = ax.axhline(whole, color="grey", lw=0.9, ls=":")
        tp_axis(ax, comm["tps"])
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
        ax.set_ylim(min(sent) / 1.5, max(sent) * 1.5)
        note = [f"{', '.join(zero)}: 0 bytes sent"] * bool(zero) + [f"{', '.join(absent)}: does not apply"] * bool(absent)
        if note:
            ax.text(0.02, 0.97, "not drawn: " + "; ".join(note), transform=ax.transAxes, va="top", fontsize=8.5)
        unsharded = comm["cols"] if axis == 0 else comm["rows"]
        ax.set_title(f"dim-{axis} split of {shape}: Gram of the {unsharded}-long unsharded axis")
        ax.set_ylabel("MiB sent by the busiest rank (log scale)")
    axes[1].tick_params(labelleft=True)
    drawn[f"the whole {shape} fp32 matrix ({whole:g} MiB)"] = whole_line
    fig.suptitle(f"What exactness costs per {shape} fp32 matrix: gather/owner move (tp-1)/tp of it once; the all-reduce "
                 "strategies move a Gram per step,\nmore bytes here, least when the long axis is split (smaller Gram)",
                 fontsize=10.5)
    fig.tight_layout()
    fig.legend(list(drawn.values()), list(drawn), loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=1, fontsize=9,
               frameon=False)
    figs.save(fig, "bytes_vs_tp", "communication bytes vs tp per strategy", ["sweep.csv"])


# The mixed plan of the audits (totals.plans[].name) drawn beside the one-strategy plans (named after
# their strategy): per-head NS where it applies, the cheapest bit-identical strategy elsewhere.
MIXED_PLAN = "per_head+cheapest_bit_identical"


def plan_styles(strategies):
    """Style of each plan in the step-time figure: a one-strategy plan in its strategy's colour and
    marker, solid (the baseline dashed), the mixed plan dotted in the colour of its first strategy."""
    styles = {}
    for s in strategies.names:
        styles[s] = dict(color=strategies.color(s), marker=strategies.marker(s), ls="--" if s == strategies.baseline else "-")
    first = MIXED_PLAN.split("+")[0]
    if first in strategies.names:
        styles[MIXED_PLAN] = dict(color=strategies.color(first), marker=strategies.marker(first), ls=":")
    return styles


def load_audits(audit_dir):
    """The audits' JSON as {model: (model record, {plan: (description, [(tp, step time in ms)])})}."""
    audits = {}
    for name in sorted(os.listdir(audit_dir)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(audit_dir, name)) as f:
            try:
                j = json.load(f)
            except ValueError:
                continue
        model, plans = audits.setdefault(name.rsplit("_tp", 1)[0], (j["model"], {}))
        for plan in j["totals"]["plans"]:
            plans.setdefault(plan["name"], (plan["description"], []))[1].append((int(j["tp"]), plan["step_time_s"] * 1e3))
    return audits


def step_time_vs_tp(figs, out_dir, strategies):
    """Estimated optimizer-step time of each plan vs tp, from the audits' JSON (alpha-beta model):
    one panel per model, models with the same times sharing one."""
    audit_dir = os.path.join(out_dir, "audit")
    if not os.path.isdir(audit_dir):
        return
    audits = load_audits(audit_dir)
    preferred = ("llama-3-8b", "llama-3-70b", "qwen2.5-7b", "mistral-7b-v0.1", "gemma-2-9b", "phi-3-mini-4k-instruct",
                 "falcon-7b", "starcoder", "mixtral-8x7b-v0.1", "qwen1.5-moe-a2.7b")
    panels = {}  # the plans' times -> the models that have them
    for m in preferred:
        if m in audits:
            panels.setdefault(repr(sorted((p, sorted(v[1])) for p, v in audits[m][1].items())), []).append(m)
    if not panels:
        return
    styles = plan_styles(strategies)
    cols = min(len(panels), 3)
    rows = (len(panels) + cols - 1) // cols
    fig, grid = plt.subplots(rows, cols, figsize=(4.3 * cols, 3.5 * rows), squeeze=False)
    axes = [ax for row in grid for ax in row]
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    drawn = {}
    for ax, models in zip(axes, panels.values()):
        record, plans = audits[models[0]]
        for plan, style in styles.items():
            if plan in plans:
                description, pts = plans[plan][0], sorted(plans[plan][1])
                drawn[f"{plan}: {description}"] = ax.plot([p[0] for p in pts], [p[1] for p in pts], ms=5, **style)[0]
        tp_axis(ax, sorted({tp for _, pts in plans.values() for tp, _ in pts}))
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
        ax.set_ylabel("NS time per step (ms, log)")
        moe = f" (MoE, {record['num_experts']} experts)" if record["num_experts"] else ""
        ax.set_title(" = ".join(models) + moe + ("\n(the same shapes: the same times)" if len(models) > 1 else ""), fontsize=10)
    fig.suptitle("Estimated Muon NS time per optimizer step (H200 bf16 rate, NVLink, alpha-beta model of `nsv audit`):\n"
                 "owner (alone or with per-head q/k/v) gets faster with tp like AutoTP's inexact shard; gather and the "
                 "all-reduce plans do not.\nLines: dashed, "
                 f"`{strategies.baseline}` (AutoTP today, inexact); solid, one exact strategy for every matrix; "
                 "dotted, per-head NS on q/k/v and bit-identical elsewhere", fontsize=10.5)
    fig.tight_layout()
    fig.legend(list(drawn.values()), list(drawn), loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, fontsize=9,
               frameon=False)
    figs.save(fig, "step_time_vs_tp", "estimated optimizer-step time per strategy vs tp", ["audit/*.json"])


def schedules(figs, out_dir, report):
    """§6c: every built-in coefficient schedule over NS steps (schedule_*.csv), named in the legend
    with its origin (report.json "schedules")."""
    sweep = read_csv(os.path.join(out_dir, "schedule_sweep.csv"))
    amp = read_csv(os.path.join(out_dir, "schedule_amplification.csv"))
    bands = read_csv(os.path.join(out_dir, "schedule_bands.csv"))
    if not sweep or not amp or not bands:
        return
    names = ordered_unique(r["coeffs"] for r in sweep)
    origins = {s["name"]: s["origin"] for s in report.get("schedules", {}).get("schedules", [])}
    # schedules that share their first steps (keller and deepseekv4, you and quintic) overlap:
    # alternate solid and dashed lines so that both stay visible
    style = {n: (PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)], "-" if i % 2 == 0 else "--") for i, n in enumerate(names)}
    steps = sorted({int(r["steps"]) for r in sweep})
    tp_max = max(int(r["tp"]) for r in sweep)
    low = ordered_unique(r["spectrum"] for r in sweep)[-1]
    shard_shapes = " and ".join(ordered_unique(f"{r['rows']}×{r['cols']}" for r in sweep))
    amp_shape = f"{amp[0]['rows']}×{amp[0]['cols']}, tp={amp[0]['tp']}"
    x_min = min(float(r["x_min"]) for r in bands)
    band = {(r["schedule"], int(r["ns_steps"])): r for r in bands if float(r["x_min"]) == x_min}

    def in_basin(name, k):
        """False from the step after the band first crossed the next step's repelling fixed point."""
        return all(float(band[(name, j)]["band_hi"]) <= float(band[(name, j + 1)]["repelling_fixed_point"]) for j in range(1, k))

    def shard(name, spectrum):
        return [mean(float(r["rel_diff_mean"]) for r in sweep if r["coeffs"] == name and r["spectrum"] == spectrum
                     and int(r["tp"]) == tp_max and int(r["steps"]) == k) for k in steps]

    def amp_series(name, column, absolute):
        sel = [r for r in amp if r["schedule"] == name and r["spectrum"] == "gaussian"]
        return [mean(float(r[column]) * (float(r["grad_rel_diff"]) if absolute else 1.0)
                     for r in sel if int(r["ns_steps"]) == k) for k in steps]

    rel = "rel. difference (dimensionless)"
    both_axes = rel + ",\nmean of the two split axes"
    panels = [
        (f"`shard` vs whole-matrix NS: {shard_shapes} Gaussian, tp={tp_max}", lambda n: shard(n, "gaussian"), "linear",
         both_axes),
        (f"`shard` vs whole-matrix NS: {shard_shapes} {low}, tp={tp_max}", lambda n: shard(n, low), "linear", both_axes),
        (f"whole-matrix NS in fp32 vs fp64 (Gaussian, {amp_shape.split(',')[0]})",
         lambda n: amp_series(n, "kernel_err_standard_amp", True), "log", rel + ", log"),
        (f"`gram_allreduce` vs whole-matrix NS (Gaussian, {amp_shape})",
         lambda n: amp_series(n, "gram_allreduce_vs_whole_amp", True), "log", rel + ", log"),
        (f"whole-matrix NS, rank vs reverse summation order (Gaussian, {amp_shape})",
         lambda n: amp_series(n, "whole_amp", False), "log", "amplification: output rel. diff\n÷ gradient rel. diff (×, log)"),
        (f"rounding-free band: image of [{x_min:g}, 1] after k steps", None, "linear",
         "singular value of the output\n(solid/dashed: highest; dotted: lowest)"),
    ]
    fig, axes = plt.subplots(3, 2, figsize=(12, 12))
    for ax, (title, series, scale, ylabel) in zip(axes.flat, panels):
        for n in names:
            color, marker, line = style[n]
            ks = [k for k in steps if in_basin(n, k)]
            if series is None:
                ax.plot(ks, [float(band[(n, k)]["band_hi"]) for k in ks], line, color=color, marker=marker, ms=4, label=n)
                ax.plot(ks, [float(band[(n, k)]["band_lo"]) for k in ks], ":", color=color, marker=marker, ms=3)
            else:
                ys = series(n)
                ax.plot(ks, [ys[steps.index(k)] for k in ks], line, color=color, marker=marker, ms=4, label=n)
        ax.set_yscale(scale)
        ax.set_xticks(steps)
        ax.set_xlabel("Newton-Schulz steps k")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
    handles = axes.flat[0].get_legend_handles_labels()[0]
    labels = [f"{n}: {origins[n]}" if n in origins else n for n in names]
    fig.suptitle("Every published coefficient schedule under sharding (fp32, standard loop): `shard` diverges under all "
                 "of them;\nthe all-reduce strategy stays at the kernel's own fp32 error. A schedule is drawn only while "
                 "its rounding-free band\nstays in the basin of attraction (cubic5 leaves it when cycled past 5 steps).",
                 fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.985), h_pad=1.5)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, fontsize=9, frameon=False,
               title="Solid and dashed lines alternate between schedules only so that those with the same first steps "
                     "stay visible.", title_fontsize=9)
    figs.save(fig, "schedules", "coefficient schedules under sharding, over NS steps",
              ["schedule_sweep.csv", "schedule_amplification.csv", "schedule_bands.csv"])


def training_progress(figs, report):
    """§5c: the loss curves, `shard`'s update difference at each checkpoint, and how it goes with
    the gradient's effective rank (report.json "training")."""
    tr = report.get("training")
    if not tr or not tr.get("available"):
        return
    tps, models = tr["tps"], [m["name"] for m in tr["models"]]
    colors = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(models)}
    styles = ["-", "--", ":", "-."]
    fig, ((ax_loss, ax_div), (ax_first, ax_last)) = plt.subplots(2, 2, figsize=(12, 9))
    for m in tr["models"]:
        c = colors[m["name"]]
        ax_loss.plot(range(len(m["loss_per_step"])), m["loss_per_step"], color=c, lw=0.7, alpha=0.55,
                     label=f"{m['name']} ({m['layers']} layer{'s' if m['layers'] > 1 else ''}): train batch")
        ax_loss.plot([e["step"] for e in m["eval_loss"]], [e["loss"] for e in m["eval_loss"]], "o-", color=c, ms=3,
                     label=f"{m['name']}: held-out")
    for step in tr["models"][0]["checkpoint_steps"]:
        ax_loss.axvline(step, color="#7f7f7f", lw=0.6, ls=":")
    ax_loss.set_xlabel("training step (dotted: the dumped gradients)")
    ax_loss.set_ylabel("next-byte cross entropy (nats)")
    ax_loss.set_title("Muon training on Debian's license texts")
    ax_loss.legend(fontsize=7.5)

    for m in models:
        cks = [c for c in tr["checkpoints"] if c["model"] == m]
        steps = [c["step"] for c in cks]
        for k, tp in enumerate(tps):
            vals = [[p["shard_local"][k] for p in c["params"]] for c in cks]
            ax_div.plot(steps, [mean(v) for v in vals], styles[k % len(styles)], marker="o", ms=3.5, color=colors[m],
                        label=f"{m}, tp={tp}")
            ax_div.fill_between(steps, [min(v) for v in vals], [max(v) for v in vals], color=colors[m], alpha=0.07)
    ax_div.set_xscale("symlog", linthresh=10)
    ax_div.set_yscale("log")
    ticks = [0.25, 0.5, 1, 2, 4, 8]
    ax_div.set_yticks(ticks)
    ax_div.set_yticklabels([f"{t:g}" for t in ticks])
    ax_div.set_xlabel("training step of the gradient (symlog)")
    ax_div.set_ylabel("update rel. diff tp=N vs tp=1")
    ax_div.set_title("AutoTP today (`shard`, local scale): mean over the 7 matrices\n(band: min-max over them)")
    ax_div.legend(fontsize=7, ncol=2)

    checkpoint_steps = sorted({c["step"] for c in tr["checkpoints"]})
    for ax_rank, k in ((ax_first, 0), (ax_last, len(tps) - 1)):
        for c in tr["checkpoints"]:
            shade = 0.35 + 0.65 * checkpoint_steps.index(c["step"]) / max(1, len(checkpoint_steps) - 1)
            ax_rank.scatter([p["effective_rank_fraction"] for p in c["params"]], [p["shard_global"][k] for p in c["params"]],
                            color=colors[c["model"]], alpha=shade, s=18,
                            marker=MARKERS[checkpoint_steps.index(c["step"]) % len(MARKERS)])
        one = tr["correlation"][k]["rank_one_rel_diff"]
        ax_rank.axhline(one, color="#7f7f7f", lw=0.8, ls="--")
        ax_rank.annotate(f"rank one: sqrt(tp) - 1 = {one:.2f}", (1, one), xycoords=("axes fraction", "data"), ha="right",
                         va="bottom", fontsize=7.5, color="#555555")
        handles = [Line2D([], [], color="#555555", ls="", marker=MARKERS[i % len(MARKERS)], label=f"step {s}")
                   for i, s in enumerate(checkpoint_steps)]
        handles += [Line2D([], [], color=colors[m], ls="", marker="o", label=m) for m in models]
        ax_rank.legend(handles=handles, fontsize=7, loc="best")
        rho = tr["correlation"][k]["effective_rank_vs_shard_global"]
        ax_rank.set_xlabel("gradient's effective rank / min(rows, cols)")
        ax_rank.set_ylabel(f"`shard` rel. diff at tp={tps[k]} (global scale)")
        ax_rank.set_title(f"divergence vs spectrum at tp={tps[k]}, every gradient (Spearman {rho:+.2f})")
    fig.tight_layout()
    figs.save(fig, "training", "update difference and spectra of gradients along training", ["report.json", "training.csv"])


def add_arguments(parser):
    parser.add_argument("report_dir")


def main(args):
    out_dir = args.report_dir
    if not os.path.isdir(out_dir):
        print(f"{out_dir} is not a folder: run `nsv report --out-dir {out_dir}` first")
        return 2
    report = load_report(out_dir)
    if report is None:
        print(f"{out_dir}/report.json does not exist (it holds the strategy table): run `nsv report --out-dir {out_dir}` first")
        return 2
    strategies = Strategies(report["strategies"])
    figs = Figures(out_dir)
    sweep = read_csv(os.path.join(out_dir, "sweep.csv")) or []
    divergence_vs_tp(figs, sweep, strategies)
    divergence_vs_aspect(figs, read_csv(os.path.join(out_dir, "aspect_sweep.csv")))
    divergence_vs_spectrum(figs, read_csv(os.path.join(out_dir, "spectrum_sweep.csv")))
    step_strategies(figs, read_csv(os.path.join(out_dir, "step.csv")), strategies)
    amplification(figs, read_csv(os.path.join(out_dir, "amplification.csv")), report)
    gram_stability(figs, read_csv(os.path.join(out_dir, "gram_stability.csv")), report)
    bytes_vs_tp(figs, sweep, strategies, report)
    step_time_vs_tp(figs, out_dir, strategies)
    schedules(figs, out_dir, report)
    training_progress(figs, report)
    figs.write_index()
    if not figs.index:
        print(f"no report data in {out_dir}: nothing to draw")
        return 1
    return 0
