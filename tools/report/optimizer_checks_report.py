#!/usr/bin/env python3
"""Writes reports/optimizers/: nsverify.torch.check_optimizer on every optimizer of the catalogue
(examples/optimizers), on real gloo ranks, against tp = 1.

  optimizers.json  every check's result (verdict, per parameter its shards, status and rel_diff per
                   step, the diagnosis of each failing parameter, every rank's collectives per step),
                   trimmed from the results' to_dict(); and the seed's figure reproduced
  README.md        rendered from optimizers.json: `python3 tools/report optimizers reports/optimizers`
                   (tools/report/nsvreport/optimizer_checks.py)

Sections: each optimizer of CATALOGUE on one tiny Llama layer (Param.from_config of TINY: hidden 32,
intermediate 46, 4 heads of 8, 2 KV heads: q/k/v/o zero-width on TP ranks 2 and 3 at tp 3 and 4, the MLP
uneven at tp 3 (16/15/15) and 4 (12/12/11/11)) at tp 2, 3, 4 and tp 2 x dp 2 with ZeRO and FSDP pieces, claim
"exact" (and its CATALOGUE record's other claims at every mesh); then the seed's figure: the per-shard
optimizer's update against the whole-matrix one, per matrix of one Llama layer at tp 2, one step (the seed's
own Llama config, and TinyLlama-1.1B's layer downsized by 4: one check at its real dims had not finished after
5 minutes on 2 cores, `--real-dims` runs them). tools/report.sh runs this when /usr/bin/python3 imports torch (about
3 minutes on 2 cores).

    PYTHONPATH=build/python /usr/bin/python3 tools/report/optimizer_checks_report.py [--out reports/optimizers]
        [--render-only] [--real-dims]
"""

import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))  # the kernels, TP functions and bug catalogues it checks (nsvreport: this folder)

from nsvreport import core, optimizer_checks  # noqa: E402

#: The tiny Llama layer every optimizer is checked on (a Hugging Face config's fields).
TINY = dict(hidden_size=32, intermediate_size=46, num_attention_heads=4, num_key_value_heads=2)
MESHES = [("tp 2", dict(tp=2)), ("tp 3", dict(tp=3)), ("tp 4", dict(tp=4)),
          ("tp 2 x dp 2 zero", dict(tp=2, dp=2, dp_partition="zero")),
          ("tp 2 x dp 2 fsdp", dict(tp=2, dp=2, dp_partition="fsdp"))]
KNOBS = dict(steps=3, max_success=1)
#: The seed's figure: the per-shard optimizer at tp 2, one step, on one layer of these configs.
SEED_CONFIGS = [
    ("the seed's Llama (hidden 256, 8 heads of 32, intermediate 512)",
     dict(hidden_size=256, intermediate_size=512, num_attention_heads=8, num_key_value_heads=8), None),
    ("TinyLlama-1.1B downsized by 4 (hidden 512, intermediate 1408, 32 heads of 16, 4 KV heads)",
     dict(hidden_size=512, intermediate_size=1408, num_attention_heads=32, num_key_value_heads=4),
     "TinyLlama-1.1B's own dims (hidden 2048, intermediate 5632, 32 heads of 64, 4 KV heads): one check_optimizer "
     "at tp 2, one step, had not finished after 5 minutes on 2 cores (stopped there; at a quarter of the size it "
     "takes about 15 s, most of it the checker's SVDs of the updates and the diagnosis' reruns, which grow as the "
     "cube of the side), so this report runs the layer with every side divided by 4 (the same aspect ratios, head "
     "and KV-group counts); `--real-dims` runs the real one"),
]
REAL_DIMS = ("TinyLlama-1.1B (hidden 2048, intermediate 5632, 32 heads of 64, 4 KV heads)",
             dict(hidden_size=2048, intermediate_size=5632, num_attention_heads=32, num_key_value_heads=4), None)
RECORD_KEYS = ("param", "step", "rel_diff", "cosine", "norm_ratio", "bit_identical", "mismatches", "max_ulps",
               "state_identical", "replicated_ranks_differ")


def log(text):
    print(f"optimizer_checks_report: {text}", file=sys.stderr, flush=True)


def call(module, reference, mesh, claim, knobs):
    ref = "" if reference == "self" else f", reference={reference}.make_optimizer"
    args = "".join(f", {k}={v!r}" for k, v in dict(mesh, claim=claim, **knobs).items())
    return f"check_optimizer({module}.make_optimizer, PARAMS{args}{ref})"


def collectives(result):
    """{world: [{rank, setup: {calls, bytes}, steps: [{calls, bytes}]}]}: each rank's calls by kind and their
    payload bytes, in the factory (setup) and in each step."""
    from nsverify.torch._tp import tally

    def one(calls):
        counts, payload = tally([tuple(c) for c in calls])
        return dict(calls=", ".join(f"{k} x{v}" for k, v in counts.items()) or "none", bytes=payload)
    return {world: [dict(rank=r["rank"], setup=one(r["setup"]), steps=[one(s) for s in r["steps"]]) for r in ranks]
            for world, ranks in result.collectives.items()}


def diagnosis(d, expected):
    """Per failing parameter: the hypotheses matched, and each hypothesis' status; its measure (in words) only
    for those that matched, did not match the expected defect or could not be told apart."""
    return {name: dict(matched=x["matched"],
                       hypotheses=[dict(hypothesis=h["hypothesis"], status=h["status"],
                                        **({"measure": h["measure"]} if h["status"] != "no match" or
                                           h["hypothesis"] == expected else {})) for h in x["hypotheses"]])
            for name, x in d.items()}


def trim(result, expected=None):
    """The result's dict without what changes from run to run (the process id) or repeats (the rounding bound's
    derivation, the records' worst-element strings, the raw collectives: summarized per rank and step, the
    measures of the hypotheses that did not match but the expected one's)."""
    d = result.to_dict()
    env = {k: v for k, v in d["environment"].items() if k != "pid"}
    params = []
    for p in d["parameters"]:
        p = dict(p)
        if p.get("bound"):
            p["bound"] = dict(p["bound"], steps=[{k: s[k] for k in ("step", "measured", "bound")}
                                                 for s in p["bound"].get("steps", [])])
        params.append(p)
    return dict(verdict=d["verdict"], claim=d["claim"], reason=d["reason"], subject=d["subject"], parameters=params,
                records=[{k: r.get(k) for k in RECORD_KEYS} for r in d["records"]],
                diagnosis=diagnosis(d["diagnosis"], expected),
                collectives=collectives(result), negative_control=d["negative_control"], environment=env,
                replay=d["replay"], fault=d["fault"])


def expectation(entry, claim, mesh, per_shard):
    """(verdict, diagnosis, note) the CATALOGUE record makes for this check: the diagnosis every failing parameter
    must match under claim "exact" ("": none may match; None: not judged, under the other claims). An optimizer
    correct at tp = 1 only is held to the per-shard defect's record on a TP mesh."""
    if not entry.tensor_parallel and mesh["tp"] > 1:
        if mesh.get("dp_partition") == "zero":
            return "FAIL", None, "ZeRO hands each rank a 1-D piece, which it cannot orthogonalize: a rank fault"
        return "FAIL", per_shard.diagnosis, (
            "on a TP shard it runs Newton-Schulz on the shard but scales the update by the whole matrix's shape "
            "(scale_of reads spec.shape): per-shard NS with the full-shape scale, which is hypothesis (1) only where "
            "Keller's sqrt(max(1, rows/cols)) of the shard and of the matrix agree (q, k, v here); the diagnosis has "
            "no hypothesis for the others")
    verdict = "PASS" if claim in entry.must_pass else "FAIL" if claim in entry.must_fail else None
    return verdict, entry.diagnosis if claim == "exact" else None, None


def catalogue_section():
    import nsverify.torch as nt
    import optimizers
    entries = {e.module: e for e in optimizers.CATALOGUE}
    params = nt.Param.from_config(TINY)
    catalogue, checks = [], []
    for entry in optimizers.CATALOGUE:
        module = sys.modules[entry.factory.__module__]
        catalogue.append(dict(module=entry.module, kind=entry.kind, diagnosis=entry.diagnosis,
                              must_pass=list(entry.must_pass), must_fail=list(entry.must_fail),
                              reference=entry.reference, tensor_parallel=entry.tensor_parallel,
                              doc=(module.__doc__ or "").strip().split("\n\n")[0]))
        claims = ["exact"] + [c for c in entry.must_pass + entry.must_fail if c != "exact"]
        reference = "tp1" if entry.reference == "self" else entries[entry.reference].factory
        for label, mesh in MESHES:
            for claim in claims:
                start = time.monotonic()
                result = nt.check_optimizer(entry.factory, params, claim=claim, reference=reference, **mesh, **KNOBS)
                seconds = time.monotonic() - start
                verdict, expected, note = expectation(entry, claim, mesh, entries["per_shard_muon"])
                checks.append(dict(module=entry.module, mesh=label, knobs=mesh, claim=claim, seconds=seconds,
                                   call=call(entry.module, entry.reference, mesh, claim, KNOBS),
                                   expected_verdict=verdict, expected_diagnosis=expected, expected_note=note,
                                   result=trim(result, expected)))
                log(f"{entry.module}, {label}, claim {claim}: {result.verdict} ({seconds:.1f} s)")
    return dict(config=TINY, params=[p.to_dict() for p in params], meshes=[m for m, _ in MESHES], knobs=KNOBS,
                catalogue=catalogue, checks=checks)


def spectrum(seed, name, shape):
    """The spectrum kind check_optimizer drew for this parameter's gradient at draw 0, step 1 (its first draw from
    the same generator: _optimizer_grads.gradient_spectrum); None for a vector."""
    from nsverify.torch._optimizer_grads import _rng, gradient_spectrum
    return gradient_spectrum(_rng(seed, 0, 1, name, 0))["kind"] if len(shape) == 2 else None


def per_shard_muon_diagnosis():
    import optimizers
    return next(e.diagnosis for e in optimizers.CATALOGUE if e.module == "per_shard_muon")


def seed_section(configs):
    """The per-shard optimizer (DeepSpeed AutoTP's Muon today) at tp 2, one step, per matrix of one layer: the
    update's rel_diff, cosine and norm ratio against the whole-matrix update (check_optimizer's records)."""
    import nsverify.torch as nt
    from optimizers import per_shard_muon
    ref = json.loads((ROOT / "fixtures" / "seed_reference.json").read_text())
    out = []
    for label, config, note in configs:
        params = nt.Param.from_config(config)
        start = time.monotonic()
        result = nt.check_optimizer(per_shard_muon.make_optimizer, params, tp=2, steps=1, max_success=1, claim="exact",
                                    timeout=3600)
        seconds = time.monotonic() - start
        d = trim(result, per_shard_muon_diagnosis())
        shapes = {p["name"]: p for p in d["parameters"]}
        rows = [dict(r, shape=shapes[r["param"]]["shape"], split=shapes[r["param"]]["split"],
                     local_shapes=shapes[r["param"]]["local_shapes"], spectrum=spectrum(result.seed, r["param"],
                                                                                        shapes[r["param"]]["shape"]),
                     matched=d["diagnosis"].get(r["param"], {}).get("matched")) for r in d["records"]]
        out.append(dict(label=label, config=config, note=note, seconds=seconds, verdict=d["verdict"], rows=rows,
                        call=f"check_optimizer(per_shard_muon.make_optimizer, Param.from_config({config!r}), tp=2, "
                             f"steps=1, max_success=1, claim='exact')"))
        log(f"seed figure, {label}: {d['verdict']} ({seconds:.1f} s)")
    return dict(configs=out, reference=dict(real_gradient=ref["real_gradient"]["deepspeed"],
                                            square=ref["kernel_tables"]["square"],
                                            wide=ref["kernel_tables"]["wide"]))


def dumps(data):
    """JSON, indented but for the catalogue's checks: one line each (a megabyte indented, a line per check in diffs)."""
    checks = data["catalogue"]["checks"]
    head = json.dumps(dict(data, catalogue=dict(data["catalogue"], checks="@CHECKS@")), indent=1)
    return head.replace('"@CHECKS@"', "[\n" + ",\n".join(json.dumps(c) for c in checks) + "\n ]")


def main():
    ap = core.writer_parser(__doc__, "optimizers", "optimizers.json")
    ap.add_argument("--real-dims", action="store_true",
                    help="the seed's figure on TinyLlama-1.1B's real layer too (over 5 minutes on 2 cores)")
    args = ap.parse_args()
    out = core.output_folder(args)
    if not args.render_only:
        import nsverify
        import torch
        started = time.monotonic()
        t = time.monotonic()
        catalogue = catalogue_section()
        log(f"catalogue in {time.monotonic() - t:.0f} s")
        t = time.monotonic()
        seed = seed_section(SEED_CONFIGS + ([REAL_DIMS] if args.real_dims else []))
        log(f"seed figure in {time.monotonic() - t:.0f} s")
        data = dict(version=nsverify.__version__, torch=torch.__version__, seconds=time.monotonic() - started,
                    catalogue=catalogue, seed=seed)
        core.write_atomically(out / "optimizers.json", core.without_machine_paths(dumps(data)) + "\n")
    core.write_atomically(out / "README.md", optimizer_checks.render(str(out)))
    log(f"wrote {out / 'README.md'}")


if __name__ == "__main__":
    main()
