"""reports/optimizers/README.md: nsverify.torch.check_optimizer on the optimizer catalogue
(examples/optimizers) on real gloo ranks, and the seed's figure reproduced.

Rendered from DIR/optimizers.json (tools/report/optimizer_checks_report.py runs the checks and writes it).
"""

import json
import os

from . import core

DEFAULT_DIR = os.path.join(core.REPO, "reports", "optimizers")


def short(name):
    """layers.0.self_attn.q_proj.weight -> q_proj; layers.0.input_layernorm.weight -> input_layernorm."""
    parts = name.split(".")
    return parts[-2] if parts[-1] == "weight" and len(parts) > 1 else name


def shape(s):
    return "x".join(map(str, s))


def parameter_rows(check):
    """One row per parameter: its shards, status and why, rel_diff per step, bits, diagnosis."""
    r = check["result"]
    rows = []
    for p in r["parameters"]:
        recs = [x for x in r["records"] if x["param"] == p["name"]]
        bad = [x for x in recs if not x["bit_identical"]]
        bits = "yes" if recs and not bad else "no" if bad else "-"
        if bad:
            bits = f"no from step {bad[0]['step']} (max {bad[0]['max_ulps']} ULPs)"
        if any(not x["state_identical"] for x in recs):
            bits += ", state differs"
        if any(x["replicated_ranks_differ"] for x in recs):
            bits += ", TP copies differ"
        d = r["diagnosis"].get(p["name"])
        expected = check["expected_diagnosis"]
        if d is None:
            diag = ""
        elif not d["matched"]:
            diag = "none matched"
        else:
            diag = ", ".join(f"**{m}**" if m == expected else m for m in d["matched"])
        bound = p.get("bound") or {}
        rows.append(dict(name=short(p["name"]), shape=shape(p["shape"]),
                         split="-" if p["split"] is None else p["split"],
                         local=" ".join(shape(s) for s in p["local_shapes"]),
                         route=f"{p['route']}: {p['route_reference'] or '?'}/{p['route_tp'] or '?'}",
                         rel=[x["rel_diff"] for x in recs], bits=bits, status=p["status"],
                         why=p.get("why") or "", diagnosis=diag,
                         bound=[(s["measured"], s["bound"]) for s in bound.get("steps", [])]))
    return rows


def collective_rows(check):
    """One row per (world, rank): setup calls, then each step's calls and payload bytes."""
    out = []
    for world, ranks in check["result"]["collectives"].items():
        for r in ranks:
            out.append(dict(world="TP run" if world == "tp" else "reference", rank=r["rank"], setup=r["setup"],
                            steps=r["steps"]))
    return out


def diagnosis_summary(check):
    """(diagnosed, failing, extra): failing parameters whose matches include the expected diagnosis (or, where
    none may match, match nothing), and the other hypotheses that matched beside it; (None, failing, []) where
    the CATALOGUE record states no diagnosis for this claim (it states them under "exact")."""
    diag = check["result"]["diagnosis"]
    expected = check["expected_diagnosis"]
    if expected is None:
        return None, len(diag), []
    ok = sum(1 for d in diag.values() if (expected in d["matched"] if expected else not d["matched"]))
    extra = sorted({m for d in diag.values() for m in d["matched"] if m != expected})
    return ok, len(diag), extra


def cell(check):
    """The overview's cell: the verdict, and how it stands against the CATALOGUE record."""
    r = check["result"]
    text = r["verdict"]
    if check["expected_verdict"] and r["verdict"] != check["expected_verdict"]:
        return f"**{text}** (expected {check['expected_verdict']})"
    ok, failing, extra = diagnosis_summary(check)
    if failing and ok is None:
        text += f", {failing} failing"
    elif failing:
        text += f", {ok}/{failing} diagnosed"
        if extra:
            text += " (+" + ", ".join(extra) + ")"
    return text


def seed_ranges(rows):
    """The seed figure's matrices by split: (least, largest rel_diff, how many inside the seed's 0.3-0.7, how many)."""
    out = {}
    for split in (0, 1):
        rel = [r["rel_diff"] for r in rows if r["split"] == split and r["rel_diff"] is not None]
        if rel:
            out[split] = dict(low=min(rel), high=max(rel), inside=sum(0.3 <= x <= 0.7 for x in rel), n=len(rel))
    return out


def context(data):
    cat = data["catalogue"]
    checks = cat["checks"]
    by = {}
    for c in checks:
        c["rows"], c["collective_rows"] = parameter_rows(c), collective_rows(c)
        c["summary"] = diagnosis_summary(c)
        c["cell"] = cell(c)
        c["as_expected"] = c["expected_verdict"] is None or c["result"]["verdict"] == c["expected_verdict"]
        by.setdefault(c["module"], []).append(c)
    claims = {}
    for c in checks:
        claims.setdefault(c["module"], [])
        if c["claim"] not in claims[c["module"]]:
            claims[c["module"]].append(c["claim"])
    overview = [dict(entry=e, cells={(c["mesh"], c["claim"]): c["cell"] for c in by[e["module"]]},
                     claims=claims[e["module"]]) for e in cat["catalogue"]]
    shards, tp_meshes = {}, []
    for c in checks:  # each parameter's TP shards per mesh without dp, from the checks that ran
        if not c["knobs"].get("dp") and c["rows"]:
            tp_meshes += [c["mesh"]] if c["mesh"] not in tp_meshes else []
            for r in c["rows"]:
                shards.setdefault(r["name"], {}).setdefault(c["mesh"], r["local"])
    for s in data["seed"]["configs"]:
        s["ranges"] = seed_ranges(s["rows"])
    unexpected = [c for c in checks if not c["as_expected"]]
    misdiagnosed = [c for c in checks if c["summary"][0] is not None and c["summary"][0] < c["summary"][1]]
    extra = [c for c in checks if c["summary"][2]]
    return dict(data, cat=cat, by=by, shards=shards, tp_meshes=tp_meshes, overview=overview, unexpected=unexpected, misdiagnosed=misdiagnosed, extra=extra,
                tally=dict(checks=len(checks), seconds=sum(c["seconds"] for c in checks)), short=short, shape=shape)


def render(out_dir):
    with open(os.path.join(out_dir, "optimizers.json")) as f:
        data = json.load(f)
    return core.render("optimizer_report.md.j2", **context(data))


def add_arguments(parser):
    parser.add_argument("out_dir", nargs="?", default=DEFAULT_DIR,
                        help="the folder of optimizers.json (default reports/optimizers)")


def main(args):
    path = os.path.join(args.out_dir, "README.md")
    core.write_atomically(path, render(args.out_dir))
    print(f"wrote {path}")
    return 0
