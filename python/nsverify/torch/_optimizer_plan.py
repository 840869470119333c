"""The collectives of check_optimizer's TP run beside the cost model's plan of the strategy the optimizer says
it runs (strategy=): per step and rank, the recorded calls by kind against the plan of every TP-split Muon
parameter summed (nsverify.plan_strategy on its full shape, split axis and heads, the same layout AutoTP
cuts). A fused [Q; K; V] matrix has no one-matrix plan: its parameters are named as not planned."""

from .._reference import plan_strategy
from ._tp import tally


def planned_step(strategy, params, tp, knobs):
    """Per rank: the planned {kind: calls} of one optimizer step, and the parameters left out with why."""
    per_rank = [dict() for _ in range(tp)]
    left_out = []
    for p in params:
        if p.split is None or p.resolved_route != "muon":
            continue
        if p.fused:
            left_out.append(f"{p.name} (fused [Q; K; V]: no one-matrix plan)")
            continue
        rows, cols = p.shape
        plan = plan_strategy(strategy, rows, cols, tp, axis=p.split, heads=p.heads or 0, kv_heads=p.kv_heads or 0,
                             **knobs)
        for r in range(tp):
            for kind, count in plan["collectives"].items():
                if count:
                    per_rank[r][kind] = per_rank[r].get(kind, 0) + count
    return [dict(sorted(c.items())) for c in per_rank], left_out


def compare_with_plan(strategy, params, tp, tp_collectives, knobs):
    """{"strategy", "planned" (per rank), "left_out", "steps": [{"step", "ranks": [{"rank", "calls", "equal"}]}],
    "equal"}: each step's recorded calls per rank against the plan."""
    planned, left_out = planned_step(strategy, params, tp, knobs)
    steps = []
    for s in range(len(tp_collectives[0]["steps"]) if tp_collectives else 0):
        ranks = []
        for r, rank in enumerate(tp_collectives):
            counts, payload = tally([tuple(c) for c in rank["steps"][s]])
            ranks.append(dict(rank=r, calls=counts, payload_bytes=payload, equal=counts == planned[r]))
        steps.append(dict(step=s + 1, ranks=ranks))
    return dict(strategy=strategy, planned=planned, left_out=left_out, steps=steps,
                equal=all(rk["equal"] for st in steps for rk in st["ranks"]))
