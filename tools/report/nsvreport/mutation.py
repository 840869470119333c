"""reports/mutation.md (the mechanical sample's score) and reports/mutation_handwritten.md (the
hand-written patches of properties/mutants/), both from the rows the mutation sampler
(tools/mutation/sample.py) appends to reports/mutation/results.jsonl, and the hand triage of
survivors (reports/mutation/triage.json).

The score counts a survivor as killed only when a rerun on a later gate killed it
(--rerun-survivors), and leaves out the mutants the triage shows equivalent. A row of a
hand-written patch has "source": "patch" and no seed, so it never counts in the sample.
"""

import collections
import json
import os
import statistics
import sys

from . import core

DEFAULT_RESULTS = os.path.join(core.REPO, "reports", "mutation", "results.jsonl")
DEFAULT_TRIAGE = os.path.join(core.REPO, "reports", "mutation", "triage.json")
DEFAULT_OUT = os.path.join(core.REPO, "reports", "mutation.md")
DEFAULT_PATCHES_OUT = os.path.join(core.REPO, "reports", "mutation_handwritten.md")
DEFAULT_SEED, DEFAULT_SAMPLE, DEFAULT_FOLDERS = 20261202, 150, ["lib", "tools/nsv"]


def load_results(path):
    if not os.path.exists(path):
        return []
    rows = []
    with open(path) as f:
        for number, line in enumerate(f, start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    sys.exit(f"{path}:{number} is not a JSON line ({e}); fix or remove it")
    return rows


def load_triage(path):
    if not os.path.exists(path):
        return {}
    try:
        with open(path) as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        sys.exit(f"{path} is not valid JSON ({e})")


def final_verdict(row):
    if row["verdict"] == "survived" and row.get("rerun", {}).get("verdict") == "killed":
        return "killed_later"
    return row["verdict"]


def shown_equivalent(row, triage):
    return final_verdict(row) == "survived" and triage.get(row["key"], {}).get("status") == "equivalent"


def tally(rows, triage, group):
    groups = collections.defaultdict(list)
    for r in rows:
        groups[group(r)].append(r)
    out = []
    for name in sorted(groups):
        judged = groups[name]
        killed = sum(final_verdict(r) in ("killed", "killed_later") for r in judged)
        equivalent = sum(shown_equivalent(r, triage) for r in judged)
        out.append({"name": name, "judged": len(judged), "killed": killed, "equivalent": equivalent,
                    "open": len(judged) - killed - equivalent})
    return out


def render_sample(rows, triage, seed=DEFAULT_SEED, target=DEFAULT_SAMPLE, folders=DEFAULT_FOLDERS, reproduce_extra="",
                  results="reports/mutation/results.jsonl"):
    sample = [r for r in rows if r.get("seed") == seed]
    judged = [r for r in sample if r["verdict"] != "stillborn"]
    survivors = [r for r in judged if r["verdict"] == "survived"]
    killed_first = sum(r["verdict"] == "killed" for r in judged)
    killed_later = sum(final_verdict(r) == "killed_later" for r in judged)
    equivalent = sum(shown_equivalent(r, triage) for r in judged)
    non_equivalent = len(judged) - equivalent
    killers = collections.Counter((r.get("killer") or "").split(" (")[0] for r in judged if r["verdict"] == "killed")
    return core.render(
        "mutation.md.j2", seed=seed, target=target, folders=" ".join(folders), reproduce_extra=reproduce_extra, results=results,
        commits=sorted({r["commit"] for r in sample}), date=core.today(),
        judged=len(judged), stillborn=len(sample) - len(judged),
        killed_first=killed_first, killed_later=killed_later, equivalent=equivalent,
        open=non_equivalent - killed_first - killed_later,
        score=(killed_first + killed_later) / non_equivalent if non_equivalent else None,
        score_first=killed_first / non_equivalent if non_equivalent else None,
        timeouts=sum("timeout" in (r.get("killer") or "") for r in judged),
        by_operator=tally(judged, triage, lambda r: r["operator"]),
        by_folder=tally(judged, triage, lambda r: "/".join(r["path"].split("/")[:2]) + "/"),
        killers=killers.most_common(),
        median_build_s=statistics.median([r["build_s"] for r in judged]) if judged else None,
        median_test_s=statistics.median([r["test_s"] for r in judged]) if judged else None,
        total_s=sum(r.get("build_s", 0) + r.get("test_s", 0) for r in sample),
        survivors=[{**r, "final": final_verdict(r), "triage": {"status": "", "reason": "", **triage.get(r["key"], {})}}
                   for r in survivors])


def patch_rows(rows):
    """The latest verdict of each hand-written patch, in the patches' order."""
    latest = {r["key"]: r for r in rows if r.get("source") == "patch"}
    return [latest[k] for k in sorted(latest)]


def render_patches(rows):
    mutants = patch_rows(rows)
    return core.render("mutation_handwritten.md.j2", mutants=mutants,
                       commits=sorted({r["commit"] for r in mutants}), dates=sorted({r["date"] for r in mutants}))


def write(rows, triage_path=DEFAULT_TRIAGE, out=DEFAULT_OUT, patches_out=DEFAULT_PATCHES_OUT, **sample):
    """Both documents from the sampler's rows (each only when it has rows to show)."""
    written = []
    if any(r.get("seed") == sample.get("seed", DEFAULT_SEED) for r in rows):
        core.write_atomically(out, render_sample(rows, load_triage(triage_path), **sample))
        written.append(out)
    if patch_rows(rows):
        core.write_atomically(patches_out, render_patches(rows))
        written.append(patches_out)
    return written


def add_arguments(parser):
    parser.add_argument("--results", default=DEFAULT_RESULTS, help="the sampler's rows (default reports/mutation/results.jsonl)")
    parser.add_argument("--triage", default=DEFAULT_TRIAGE, help="the triage of survivors (default reports/mutation/triage.json)")
    parser.add_argument("--out", default=DEFAULT_OUT, help="the sample's report (default reports/mutation.md)")
    parser.add_argument("--patches-out", default=DEFAULT_PATCHES_OUT,
                        help="the hand-written patches' report (default reports/mutation_handwritten.md)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"the sample's seed (default {DEFAULT_SEED})")
    parser.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, help=f"the sample's size (default {DEFAULT_SAMPLE})")
    parser.add_argument("--folders", nargs="+", default=DEFAULT_FOLDERS, help="the sampled folders (default lib tools/nsv)")


def main(args):
    for path in write(load_results(args.results), args.triage, args.out, args.patches_out,
                      seed=args.seed, target=args.sample, folders=args.folders):
        print(f"wrote {path}")
    return 0
