"""OptimizerCheckResult: what nsverify.torch.check_optimizer found, as a readable report and as JSON-safe data."""

import math

import numpy as np

from .._results import CheckResult, _table
from ._tp import tally


class OptimizerCheckResult(CheckResult):
    """check_optimizer's result: truthy only if the claim holds and something was checked.

    verdict          "PASS" | "FAIL" | "NOTHING CHECKED" (with ``reason``)
    claim, reason    the claim, and why the verdict is what it is, in words
    parameters       per parameter: name, shape, split, local shapes, route (declared, the reference's and
                     the TP run's as observed), status under the claim and why, the rounding bound's steps
    records          per (parameter, step): rel_diff, cosine, norm_ratio of ΔW_t against the reference's,
                     bit_identical / mismatches / max_ulps / worst of the weights W_t, each state tensor's bits,
                     the TP ranks whose replicated copy differs
    diagnosis        per failing parameter: every hypothesis with its status and measure, and those matched
    collectives      {"tp": ..., "reference": ...}: per rank its setup calls and its calls per step
    negative_control the per-shard control per TP-split Muon parameter (discriminating or not) and the
                     comparison engine's 1-ULP self-test
    environment      torch, backend, tp, dp, worlds, time limit, draws, failed runs, ...
    replay           pass as replay= to rerun the reported (failing, shrunk) case; fault: a rank fault's message
    plan             with strategy=: each step's TP collectives per rank beside the cost model's plan
                     (_optimizer_plan.compare_with_plan); None otherwise
    """

    def __init__(self, subject, prop, claim, reason, parameters, records, diagnosis, collectives, negative_control,
                 environment, replay, fault):
        super().__init__(subject, [prop])
        self.claim, self.reason = claim, reason
        self.parameters, self.records, self.diagnosis = parameters, records, diagnosis
        self.collectives, self.negative_control, self.environment = collectives, negative_control, environment
        self.replay, self.fault = replay, fault
        self.plan = None

    def collectives_summary(self):
        """{world: {rank: {step: "all_gather x2, ..."}}}: each rank's calls per step by kind."""
        out = {}
        for world, ranks in self.collectives.items():
            out[world] = {r["rank"]: {s + 1: ", ".join(f"{k} x{v}" for k, v in tally(calls)[0].items()) or "none"
                                      for s, calls in enumerate(r["steps"])} for r in ranks}
        return out

    def table(self):
        rows = []
        for p in self.parameters:
            recs = [r for r in self.records if r["param"] == p["name"]]
            rel = " ".join("-" if r["rel_diff"] is None else f"{r['rel_diff']:.2g}" for r in recs)
            bad = [r for r in recs if not r["bit_identical"]]
            bits = "yes" if recs and not bad else "no" if bad else "-"
            if bad:
                bits += f" (from step {bad[0]['step']}, max {bad[0]['max_ulps']} ULPs)"
            if any(not r["state_identical"] for r in recs):
                bits += ", state differs"
            if any(r["replicated_ranks_differ"] for r in recs):
                bits += ", TP copies differ"
            d = self.diagnosis.get(p["name"])
            rows.append([p["name"], "x".join(map(str, p["shape"])), "-" if p["split"] is None else p["split"],
                         " ".join("x".join(map(str, s)) for s in p["local_shapes"]),
                         f"{p['route']}: {p['route_reference'] or '?'}/{p['route_tp'] or '?'}", rel, bits, p["status"],
                         (d["matched"][0] if d and d["matched"] else "none matched" if d else "")])
        return _table(rows, ["parameter", "shape", "split", "local shapes", "route decl: ref/tp", "rel_diff ΔW per step",
                             "bit-identical", "status", "diagnosis"])

    def __str__(self):
        lines = [f"{self.subject}: {self.verdict}", f"claim {self.claim}: {self.reason}"]
        if self.fault:
            lines.append(f"fault: {self.fault}")
        if self.parameters:
            lines.append(self.table())
        for p in self.parameters:
            if p.get("why"):
                lines.append(f"  {p['name']}: {p['why']}")
        for name, d in self.diagnosis.items():
            lines.append(f"diagnosis of {name}: " + (", ".join(d["matched"]) if d["matched"] else "none of the hypotheses"))
            for h in d["hypotheses"]:
                lines.append(f"  {h['hypothesis']}: {h['status']} ({h['measure']})")
        nc = self.negative_control
        if nc.get("per_shard"):
            lines.append("negative control (per-shard NS at tp = 1): " + "; ".join(
                f"{n}: {'discriminating' if v else 'not discriminating (bit-identical to the whole-matrix reference)'}"
                for n, v in nc["per_shard"].items()))
        elif nc.get("per_shard_note"):
            lines.append(f"negative control: {nc['per_shard_note']}")
        if nc.get("ulp_self_test"):
            lines.append(f"self-test: a 1-ULP change of {nc['ulp_self_test']['param']} flagged "
                         f"({nc['ulp_self_test']['words']})")
        for world, ranks in self.collectives_summary().items():
            for r, steps in ranks.items():
                lines.append(f"{world} rank {r} collectives: " + "; ".join(f"step {s}: {c}" for s, c in steps.items()))
        if self.plan:
            plan = self.plan
            planned = "; ".join(f"rank {r}: " + (", ".join(f"{k} x{v}" for k, v in c.items()) or "none")
                                for r, c in enumerate(plan["planned"]))
            lines.append(f"cost model ({plan['strategy']}): every step {'equal to' if plan['equal'] else 'NOT equal to'} "
                         f"the plan per step ({planned})" + (f"; not planned: {', '.join(plan['left_out'])}"
                                                             if plan["left_out"] else ""))
        env = self.environment
        lines.append(f"environment: torch {env.get('torch')}, {env.get('backend')}, tp {env.get('tp')} x dp "
                     f"{env.get('dp') or 1} ({env.get('world_size')} ranks), reference world {env.get('reference_world')}, "
                     f"layout {env.get('layout')}, {env.get('draws')} draw(s), limit {env.get('timeout_s')} s")
        if self.replay:
            lines.append(f"replay: {self.replay!r}")
        return "\n".join(lines)

    __repr__ = __str__

    def to_dict(self):
        """JSON-safe: numpy values as Python ones, non-finite numbers as None with their paths in "non_finite"."""
        d = super().to_dict()
        d.update(claim=self.claim, reason=self.reason, parameters=self.parameters, records=self.records,
                 diagnosis=self.diagnosis, collectives=self.collectives, negative_control=self.negative_control,
                 environment=self.environment, replay=self.replay, fault=self.fault, plan=self.plan)
        non_finite = []
        d = _safe(d, "", non_finite)
        d["non_finite"] = non_finite
        return d


def _safe(x, path, non_finite):
    if isinstance(x, dict):
        return {str(k): _safe(v, f"{path}/{k}", non_finite) for k, v in x.items()}
    if isinstance(x, (list, tuple, set)):
        return [_safe(v, f"{path}/{i}", non_finite) for i, v in enumerate(sorted(x) if isinstance(x, set) else x)]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        if not math.isfinite(x):
            non_finite.append(path)
            return None
        return float(x)
    if isinstance(x, np.ndarray):
        return _safe(x.tolist(), path, non_finite)
    if isinstance(x, (np.bool_,)):
        return bool(x)
    return x


def collectives_of(run):
    """A run's collectives per rank: setup (the factory) and per step, as [(name, bytes)]."""
    if run is None:
        return []
    return [dict(rank=r, setup=[list(c) for c in run.setup_calls[r]], steps=[[list(c) for c in step[r]] for step in run.calls])
            for r in range(len(run.setup_calls))]

