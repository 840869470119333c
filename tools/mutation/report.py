"""Renders reports/mutation.md from the sampler's results and the hand triage of survivors
(template: report.md.j2). The score counts a survivor as killed only when a rerun on a later
gate killed it (--rerun-survivors), and leaves out the mutants the triage shows equivalent."""
from __future__ import annotations

import collections
import datetime
import json
import statistics
import sys
from pathlib import Path

import jinja2


def final_verdict(row: dict) -> str:
    if row["verdict"] == "survived" and row.get("rerun", {}).get("verdict") == "killed":
        return "killed_later"
    return row["verdict"]


def load_triage(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        sys.exit(f"sample.py: {path} is not valid JSON ({e})")


def shown_equivalent(row: dict, triage: dict) -> bool:
    return final_verdict(row) == "survived" and triage.get(row["key"], {}).get("status") == "equivalent"


def tally(rows: list[dict], triage: dict, group) -> list[dict]:
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


def write(args, rows: list[dict]) -> None:
    triage = load_triage(args.triage)
    sample = [r for r in rows if r.get("seed") == args.seed]
    judged = [r for r in sample if r["verdict"] != "stillborn"]
    survivors = [r for r in judged if r["verdict"] == "survived"]
    killed_first = sum(r["verdict"] == "killed" for r in judged)
    killed_later = sum(final_verdict(r) == "killed_later" for r in judged)
    equivalent = sum(shown_equivalent(r, triage) for r in judged)
    non_equivalent = len(judged) - equivalent
    killers = collections.Counter((r.get("killer") or "").split(" (")[0] for r in judged if r["verdict"] == "killed")
    context = {
        "seed": args.seed, "target": args.sample, "folders": " ".join(args.folders),
        "commits": sorted({r["commit"] for r in sample}),
        "date": datetime.date.today().isoformat(),
        "judged": len(judged), "stillborn": len(sample) - len(judged),
        "killed_first": killed_first, "killed_later": killed_later, "equivalent": equivalent,
        "open": non_equivalent - killed_first - killed_later,
        "score": (killed_first + killed_later) / non_equivalent if non_equivalent else None,
        "score_first": killed_first / non_equivalent if non_equivalent else None,
        "timeouts": sum("timeout" in (r.get("killer") or "") for r in judged),
        "by_operator": tally(judged, triage, lambda r: r["operator"]),
        "by_folder": tally(judged, triage, lambda r: "/".join(r["path"].split("/")[:2]) + "/"),
        "killers": killers.most_common(),
        "median_build_s": statistics.median([r["build_s"] for r in judged]) if judged else None,
        "median_test_s": statistics.median([r["test_s"] for r in judged]) if judged else None,
        "total_s": sum(r.get("build_s", 0) + r.get("test_s", 0) for r in sample),
        "survivors": [{**r, "final": final_verdict(r), "triage": {"status": "", "reason": "", **triage.get(r["key"], {})}} for r in survivors],
    }
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent), keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    text = env.get_template("report.md.j2").render(**context)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(args.out)
