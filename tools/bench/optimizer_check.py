#!/usr/bin/env python3
"""Benchmark (not a timed test): one nsverify.torch.check_optimizer, its wall time and nsverify's own share
beside the optimizer's.

  tiny   the gather Muon (examples/optimizers/gather_tp_muon.py) on one tiny Llama layer
         (Param.from_config: hidden 32, intermediate 46, 4 heads, 2 KV heads; the layer of
         reports/optimizers/) at tp 2, 3 steps, claim "exact": the median of --repeat checks
  layer  the same optimizer on Llama-3-8B's layer shapes (hidden 4096, intermediate 14336, 32 heads, 8 KV
         heads, 1 layer) at tp 2, 1 step: one check (--layer; about 20 minutes on 2 cores)

Per check: the wall time; the optimizer's time, per run of the factory (the TP run, the reference, the
per-shard control, the diagnosis' reruns) the slowest rank's make_optimizer() plus its step() calls
(the ranks run side by side; _optimizer_worker.run_job times them: `setup_s`, each step's `step_s`), summed
over the runs; nsverify's own time, the rest, split into starting the rank processes, the rest of the runs
(shipping each rank's tensors and reading back its weights and state) and what the checker does between runs
(drawing the inputs, comparing, the routes' spectra, the diagnosis' measures). The first check of a process
also starts the multiprocessing forkserver (torch imported once, the ranks forked from it): its wall time is
shown beside the median.

    PYTHONPATH=build/python /usr/bin/python3 tools/bench/optimizer_check.py [--repeat 5] [--layer] [--json FILE]

tools/bench/run_all.sh runs it as its optional stage `optimizer` (STAGES=optimizer; with --layer where
OPTIMIZER_LAYER=1) and reports/performance.md shows the rows.
"""

import argparse
import json
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))

import nsverify.torch as nt  # noqa: E402
from nsverify._records import DEFAULTS  # noqa: E402
from nsverify.torch._optimizer_runs import PoolExecutor  # noqa: E402
from optimizers import gather_tp_muon  # noqa: E402

TINY = dict(hidden_size=32, intermediate_size=46, num_attention_heads=4, num_key_value_heads=2)
LLAMA3_8B = dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8)


class TimedExecutor(PoolExecutor):
    """check_optimizer's pools, each run timed: its wall time, the slowest rank's optimizer time (factory +
    step() calls, from the replies), and the rank processes' start."""

    def __init__(self, *args):
        super().__init__(*args)
        self.runs, self.starts = [], []
        for pool in self.pools.values():
            pool.start = self._timed(pool.start)

    def _timed(self, start):
        def wrapped(*a, **k):
            t = time.perf_counter()
            try:
                return start(*a, **k)
            finally:
                self.starts.append(time.perf_counter() - t)
        return wrapped

    def run(self, world, jobs):
        t, replies = time.perf_counter(), None
        try:
            replies = super().run(world, jobs)
            return replies
        finally:
            wall = time.perf_counter() - t
            setup = max((r.get("setup_s", 0.0) for r in replies or []), default=0.0)
            steps = max((sum(s.get("step_s", 0.0) for s in r["steps"]) for r in replies or []), default=0.0)
            optimizer = max((r.get("setup_s", 0.0) + sum(s.get("step_s", 0.0) for s in r["steps"])
                             for r in replies or []), default=0.0)
            self.runs.append(dict(world=world, ranks=len(jobs), wall_s=wall, optimizer_s=optimizer, setup_s=setup,
                                  step_s=steps, timed=bool(replies) and all("step_s" in s for r in replies
                                                                           for s in r["steps"])))


def measure(label, config, tp, steps):
    d = DEFAULTS["optimizer"]
    params = nt.Param.from_config(config)
    ex = TimedExecutor(gather_tp_muon.make_optimizer, tp, None, d["backend"], 7200.0, d["threads"])
    started = time.perf_counter()
    try:
        result = nt.check_optimizer(gather_tp_muon.make_optimizer, params, tp=tp, steps=steps, max_success=1,
                                    timeout=7200.0, _executor=ex)
        wall = time.perf_counter() - started
    finally:
        ex.close()
    if not all(r["timed"] for r in ex.runs):
        sys.exit("the ranks' replies carry no step times (setup_s, step_s): rebuild build/python "
                 "(cmake --build build) so that it has _optimizer_worker.run_job's timing")
    in_runs = sum(r["wall_s"] for r in ex.runs)
    optimizer = sum(r["optimizer_s"] for r in ex.runs)
    start = sum(ex.starts)
    row = dict(case=label, config=config, tp=tp, steps=steps, params=len(params), verdict=result.verdict,
               runs=len(ex.runs), wall_s=wall, optimizer_s=optimizer,
               optimizer_step_s=sum(r["step_s"] for r in ex.runs), optimizer_setup_s=sum(r["setup_s"] for r in ex.runs),
               nsverify_s=wall - optimizer, pool_start_s=start, in_runs_other_s=in_runs - optimizer - start,
               between_runs_s=wall - in_runs)
    row["nsverify_share"] = row["nsverify_s"] / wall
    print(f"{label}: {result.verdict}, {wall:.2f} s ({len(ex.runs)} runs; optimizer {optimizer:.2f} s, nsverify "
          f"{row['nsverify_s']:.2f} s)", file=sys.stderr, flush=True)
    return row


def median_row(rows):
    out = dict(rows[0], repeat=len(rows), walls=[r["wall_s"] for r in rows], first_wall_s=rows[0]["wall_s"])
    for k in ("wall_s", "optimizer_s", "optimizer_step_s", "optimizer_setup_s", "nsverify_s", "pool_start_s",
              "in_runs_other_s", "between_runs_s", "nsverify_share"):
        out[k] = statistics.median(r[k] for r in rows)
    return out


def table(rows):
    lines = ["| case | runs | wall s | first check's wall s | optimizer s (step()) | nsverify s | share | pool start s "
             "| rest of the runs s | between runs s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']}{' (median of %d)' % r['repeat'] if r.get('repeat', 1) > 1 else ''} | {r['runs']} | "
                     f"{r['wall_s']:.2f} | {r.get('first_wall_s', r['wall_s']):.2f} | "
                     f"{r['optimizer_s']:.2f} ({r['optimizer_step_s']:.2f}) | {r['nsverify_s']:.2f} | "
                     f"{100 * r['nsverify_share']:.0f}% | {r['pool_start_s']:.2f} | {r['in_runs_other_s']:.2f} | "
                     f"{r['between_runs_s']:.2f} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="checks of the tiny layer (the median is reported)")
    ap.add_argument("--layer", action="store_true", help="also one check on Llama-3-8B's layer shapes (long)")
    ap.add_argument("--no-tiny", action="store_true", help="skip the tiny layer")
    ap.add_argument("--json", help="write the rows here (a JSON list)")
    args = ap.parse_args()
    rows = []
    if not args.no_tiny:
        rows.append(median_row([measure("tiny Llama layer (hidden 32), tp 2, 3 steps", TINY, 2, 3)
                                for _ in range(args.repeat)]))
    if args.layer:
        rows.append(measure("Llama-3-8B layer (hidden 4096, intermediate 14336), tp 2, 1 step", LLAMA3_8B, 2, 1))
    print(table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
