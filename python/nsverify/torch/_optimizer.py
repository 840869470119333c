"""nsverify.torch.check_optimizer: a whole Muon optimizer on real TP (x DP) gloo ranks against the same
optimizer at tp = 1."""

import os
import re

import numpy as np

from .. import _args
from .._kernel import _name, given_settings
from .._records import DEFAULT_SEED, DEFAULTS, settings
from .._reference import config as _config
from .._results import PropertyResult
from ._optimizer_compare import compare_step, lr_wd, ns_part, observed_route, rounding_bound, ulp_self_test
from ._optimizer_diagnosis import diagnose
from ._optimizer_grads import gradient, initial_weights
from ._optimizer_plan import compare_with_plan
from ._optimizer_params import Param, Plan, layout_of, params_list, per_shard_params
from ._optimizer_result import OptimizerCheckResult, collectives_of
from ._optimizer_runs import Inputs, PoolExecutor, Run, jobs
from ._pool import RankFailure, function_ref
from ._tensors import tidy

_D = DEFAULTS["optimizer"]
REPLAY = re.compile(r"^opt:(\d+):(\d+):([^:]+):(\d+)$")


class Settings:
    """check_optimizer's arguments, typed strictly against the optimizer check's record (_records), then checked
    together (layout, world_size, replay, the rounding bound's binding)."""

    def __init__(self, make_optimizer, params, given):
        import torch
        if not callable(make_optimizer):
            raise TypeError(f"make_optimizer must be a callable make_optimizer(named_params, ctx) -> optimizer, got "
                            f"{type(make_optimizer).__name__}")
        if given.get("layout") == "dtensor":
            if int(torch.__version__.split(".")[0]) < 2:
                raise ValueError(f"layout='dtensor': DTensor needs torch >= 2 (torch.distributed.tensor); this is torch "
                                 f"{torch.__version__}, so DTensor parameters cannot be made here (and are not faked)")
            raise NotImplementedError("layout='dtensor' is not implemented yet: use 'plain', 'megatron', 'deepspeed' or "
                                      "a callable")
        s = settings("optimizer", **given)
        self.factory = make_optimizer
        self.params = params_list(params)
        self.tp, self.dp, self.partition = s["tp"], s["dp"], s["dp_partition"]
        self.layout, self.steps, self.grads, self.claim = s["layout"], s["steps"], s["grads"], s["claim"]
        self.reference = make_optimizer if s["reference"] == "tp1" else s["reference"]
        self.compare_state = s["compare_state"]
        self.strategy = s["strategy"]
        if self.strategy and s["dp"] is not None:
            raise ValueError("strategy= compares each step's TP collectives with one-axis plans of the cost model; with "
                             "dp= the DP stage's are mixed in: leave strategy unset (the mesh plans: nsv audit --dp)")
        self.world_size = self.tp * (self.dp or 1)
        if s["world_size"] is not None and s["world_size"] != self.world_size:
            raise ValueError(f"world_size must be tp x dp = {self.world_size} (or None), got {s['world_size']}")
        self.timeout, self.backend = s["timeout"], s["backend"]
        self.seed = DEFAULT_SEED if s["seed"] is None else s["seed"]
        self.max_success = s["max_success"]
        self.replay = _parse_replay(s["replay"], self.params)
        self.knobs = dict(kernel=s["kernel"], steps=s["ns_steps"], dtype=s["dtype"], accumulate=s["accumulate"],
                          products=s["products"], coeffs=s["coeffs"], restart_at=s["restart_at"])
        _config(**self.knobs)
        self.threads = s["threads"]
        self.bound_fn = None
        if self.claim == "rounding":
            import nsverify
            self.bound_fn = getattr(nsverify, "tp_rounding_bound", None)
            if self.bound_fn is None:
                raise NotImplementedError("claim='rounding' needs nsverify.tp_rounding_bound (the S5 bound 2 S + N1 of NS "
                                          "on a TP layout), which this build does not have yet")
        self.factory_ref, self.reference_ref = function_ref(self.factory), function_ref(self.reference)
        self.layout_ref = function_ref(self.layout) if callable(self.layout) else self.layout


def _parse_replay(text, params):
    if not text:
        return None
    m = REPLAY.match(text)
    if not m:
        raise ValueError(f"replay must be a string 'opt:<seed>:<draw>:<names>:<steps>' from a result's .replay, got {text!r}")
    names = m.group(3).split(",")
    known = {p.name for p in params}
    if not set(names) <= known:
        raise ValueError(f"replay names parameters that params does not declare: {sorted(set(names) - known)}")
    return int(m.group(1)), int(m.group(2)), names, int(m.group(4))


def draw_inputs(S, params, seed, draw, steps):
    return Inputs({p.name: initial_weights(p, seed, draw) for p in params},
                  {p.name: [gradient(S.grads, p, seed, draw, s, S.dp) for s in range(1, steps + 1)] for p in params})


class Case:
    """One draw on some parameters for some steps: the TP run, the reference, the control, the verdict."""

    def __init__(self, S, ex, params, seed, draw, steps):
        self.S, self.ex, self.params, self.seed, self.draw, self.steps = S, ex, params, seed, draw, steps
        self.tp_plan, self.ref_plan = Plan(params, S.tp, S.dp, S.partition), Plan(params, 1, S.dp, S.partition)
        self.inputs = draw_inputs(S, params, seed, draw, steps)
        self.tp_run = self.ref_run = self.shard_run = None
        self.fault, self.per_shard, self.per_shard_note, self.self_test = None, {}, None, None
        self.lrwd = None
        self.status, self.reason, self.failing, self.rows, self.records = None, "", {}, [], []

    @property
    def replay(self):
        return f"opt:{self.seed}:{self.draw}:{','.join(p.name for p in self.params)}:{self.steps}"

    def _run(self, world, plan, params, inputs, steps, factory, is_reference, **kw):
        replies = self.ex.run(world, jobs(plan, params, inputs, steps, factory, self.S.layout_ref, is_reference,
                                          full=callable(self.S.layout), **kw))
        return Run(plan, params, inputs, replies, steps)

    def run_reference(self, params, inputs=None, steps=None, double_step=False):
        """The reference factory at tp = 1 on `params` (a Run), or the failure's message (a hypothesis that fails
        to run is "not testable")."""
        try:
            return self._run("ref", Plan(params, 1, self.S.dp, self.S.partition), params, inputs or self.inputs,
                             steps or self.steps, self.S.reference_ref, True, double_step=double_step)
        except RankFailure as e:
            return f"the run failed: {tidy(str(e))}"

    def run_variant(self, what, shard_params, spec_of=None):
        """The reference factory at tp = 1 with each parameter of shard_params replaced by its per-shard stand-ins."""
        params = [q for p in self.params for q in shard_params.get(p.name, [p])]
        inputs = self.inputs.with_shards(shard_params, self.tp_plan)
        try:
            return self._run("ref", Plan(params, 1, self.S.dp, self.S.partition), params, inputs, self.steps,
                             self.S.reference_ref, True, spec_of=spec_of)
        except RankFailure as e:
            return f"the {what} run failed: {tidy(str(e))}"

    def execute(self):
        S = self.S
        try:
            self.tp_run = self._run("tp", self.tp_plan, self.params, self.inputs, self.steps, S.factory_ref, False)
        except RankFailure as e:
            self.fault = f"the TP run (tp {S.tp}{f' x dp {S.dp}' if S.dp else ''}) failed: {tidy(str(e))}"
            return
        try:
            self.ref_run = self._run("ref", self.ref_plan, self.params, self.inputs, self.steps, S.reference_ref, True)
        except RankFailure as e:
            self.fault = f"the reference (tp 1) failed, so nothing can be compared: {tidy(str(e))}"
            return
        self.self_test = ulp_self_test(self.params, self.ref_run)
        if S.claim == "exact":
            self._negative_control()
        if S.claim == "rounding" or S.claim == "none":
            self.lrwd = self.measure_lrwd()

    def _negative_control(self):
        """Per TP-split Muon parameter: is the per-shard reference bit-identical to the whole-matrix one? Then
        this case cannot tell a per-shard optimizer from a whole-matrix one for it."""
        shard_params = per_shard_params(self.params, self.tp_plan)
        if not shard_params:
            self.per_shard_note = "no TP-split Muon parameter" + (" (tp = 1)" if self.S.tp == 1 else "")
            return
        run = self.run_variant("per-shard control", shard_params)
        if isinstance(run, str):
            self.per_shard_note = f"not run: {run}"
            return
        self.shard_run = run
        for name, stand_ins in shard_params.items():
            p = stand_ins[0].parent
            same = all(np.array_equal(self.tp_plan.assemble(p, [run.weights[s][q.name] for q in stand_ins])[0],
                                      self.ref_run.weights[s][name]) for s in range(1, self.steps + 1))
            self.per_shard[name] = not same

    def measure_lrwd(self):
        """{name: (lr*wd, why None)} from one zero-gradient step of the reference factory from fresh state."""
        zero = Inputs(self.inputs.weights, {p.name: [np.zeros(p.shape, np.float32)] for p in self.params})
        run = self.run_reference(self.params, inputs=zero, steps=1)
        if isinstance(run, str):
            return {p.name: (None, f"the zero-gradient probe {run}") for p in self.params}
        return {p.name: lr_wd(run, p.name) for p in self.params}

    def route(self, which, p, lw):
        """The route the first step's update took in the TP run ("tp") or the reference ("ref"): (route, why)."""
        run = self.tp_run if which == "tp" else self.ref_run
        u, g = ns_part(run, p.name, 1, lw), np.atleast_2d(self.inputs.grads[p.name][0]).astype(np.float64)
        cuts = [] if which == "ref" or p.split is None else \
            [(a, b) for a, b in zip(self.tp_plan.shards(p, u.reshape(p.shape)), self.tp_plan.shards(p, g)) if a.size]
        return observed_route(u, g, cuts)

    def judge(self):
        """status "holds" | "fails" | "nothing checked", reason, failing {name: first step}, parameter rows."""
        S = self.S
        if self.fault:
            self.status, self.reason = "fails", self.fault
            return
        self.records = [compare_step(p, self.tp_run, self.ref_run, s, S.compare_state)
                        for p in self.params for s in range(1, self.steps + 1)]
        lrwd = self.lrwd or {}
        checked = []
        for p in self.params:
            recs = [r for r in self.records if r["param"] == p.name]
            differs = [r["step"] for r in recs if not r["bit_identical"] or r["replicated_ranks_differ"]
                       or (S.compare_state and not r["state_identical"])]
            lw = lrwd.get(p.name, (None, ""))[0]
            row = dict(name=p.name, shape=list(p.shape), split=p.split, route=p.resolved_route,
                       local_shapes=[list(s) for s in self.tp_plan.local_shapes(p)],
                       route_reference=self.route("ref", p, lw)[0], route_tp=self.route("tp", p, lw)[0],
                       state_notes=sorted(self.tp_run.state_notes.get(p.name, ())), status="", why="")
            bounded = S.claim == "rounding" and p.split is not None and p.resolved_route == "muon"
            if S.claim == "rounding" and bounded:
                b = rounding_bound(p, layout_of(p, S.tp), self.tp_run, self.ref_run, self.steps, lrwd[p.name],
                                   S.bound_fn, S.knobs)
                elementwise = [r["step"] for r in recs if r["replicated_ranks_differ"]
                               or (S.compare_state and not r["state_identical"])]
                row["bound"] = b
                if b["status"] == "fails" or elementwise:
                    row["status"], row["why"] = "fails", b.get("reason") or \
                        f"state tensors not bit-identical from step {elementwise[0]} (they do not depend on NS)"
                    self.failing[p.name] = min(elementwise + [r["step"] for r in b.get("steps", [])
                                                             if r["measured"] > r["bound"]] or [self.steps])
                else:
                    row["status"], row["why"] = b["status"], b.get("reason", "")
                    if b["status"] == "holds" and S.tp > 1:
                        checked.append(p.name)
            elif S.claim == "none":
                row["status"] = "differs" if differs else "bit-identical"
                if differs:
                    self.failing[p.name] = differs[0]
            else:
                words = "" if S.claim == "exact" else " (elementwise under the rounding claim: AdamW-routed or replicated)"
                if differs:
                    row["status"], row["why"] = "fails", f"not bit-identical to the reference from step {differs[0]}{words}"
                    self.failing[p.name] = differs[0]
                else:
                    row["status"] = "holds"
                    if S.claim == "exact" and self.per_shard.get(p.name):
                        checked.append(p.name)
                    elif S.claim == "rounding" and S.tp > 1:
                        checked.append(p.name)
                    elif S.claim == "exact":
                        row["why"] = "bit-identical, but " + (
                            "the per-shard control is bit-identical too: not discriminating" if p.name in self.per_shard
                            else "not a TP-split Muon parameter: nothing to discriminate")
            self.rows.append(row)
        if S.claim == "none":
            self.status, self.reason = "nothing checked", "claim='none': diagnosis only"
        elif self.failing:
            self.status = "fails"
            self.reason = f"{len(self.failing)} of {len(self.params)} parameters fail: {', '.join(self.failing)}"
        elif checked:
            self.status, self.reason = "holds", f"{len(checked)} parameter(s) checked: {', '.join(checked)}"
        else:
            self.status = "nothing checked"
            self.reason = ("no parameter was compared where TP could make a difference: " +
                           ("tp = 1" if S.tp == 1 else self.per_shard_note if self.per_shard_note and S.claim == "exact"
                            else "no parameter discriminates a per-shard optimizer from a whole-matrix one (the "
                                 "per-shard control is bit-identical to the reference)" if S.claim == "exact"
                            else "no rounding bound could be checked"))


def _shrink(case):
    """The failing parameters alone, up to the last of their first failing steps (at least two): kept if it still
    fails."""
    if case.fault or not case.failing:
        return case
    names = set(case.failing)
    params = [p for p in case.params if p.name in names]
    # at least two steps where the draw had them: hypotheses about state across steps stay testable
    steps = max(max(case.failing.values()), min(2, case.steps))
    if len(params) == len(case.params) and steps == case.steps:
        return case
    smaller = Case(case.S, case.ex, params, case.seed, case.draw, steps)
    smaller.execute()
    smaller.judge()
    return smaller if smaller.status == "fails" else case


def _run_cases(S, ex):
    if S.replay:
        seed, draw, names, steps = S.replay
        case = Case(S, ex, [p for p in S.params if p.name in names], seed, draw, steps)
        case.execute()
        case.judge()
        return case, [case.status]
    statuses, first = [], None
    for draw in range(S.max_success):
        case = Case(S, ex, S.params, S.seed, draw, S.steps)
        case.execute()
        case.judge()
        statuses.append(case.status)
        first = first or case
        if case.status == "fails" or (S.claim == "none" and case.failing):
            return _shrink(case), statuses
    return first, statuses


def check_optimizer(make_optimizer, params, *, tp=_D["tp"], dp=_D["dp"], dp_partition=_D["dp_partition"],
                    layout=_D["layout"], steps=_D["steps"], grads=_D["grads"], claim=_D["claim"], reference=_D["reference"],
                    compare_state=_D["compare_state"], world_size=_D["world_size"], timeout=_D["timeout"], seed=_D["seed"],
                    max_success=_D["max_success"], replay=_D["replay"], kernel=_D["kernel"], ns_steps=_D["ns_steps"],
                    dtype=_D["dtype"], accumulate=_D["accumulate"], products=_D["products"], coeffs=_D["coeffs"],
                    restart_at=_D["restart_at"], backend=_D["backend"], threads=_D["threads"], strategy=None, _executor=None):
    """Check a whole Muon optimizer on real TP (x DP) gloo ranks against the same optimizer at tp = 1.

    make_optimizer(named_params, ctx) -> torch.optim.Optimizer (or any object with step() and zero_grad())
        is called on every rank with that rank's parameters, a list of (name, torch.nn.Parameter), and ctx
        a types.SimpleNamespace:
          tp, dp             the degrees (dp 1 without DP)
          rank, world_size   this rank in the mesh (mesh rank d * tp + t) and the mesh's size
          tp_rank, dp_rank   its TP and DP index
          tp_group, dp_group its TP group (the tp ranks of its DP index; a group of one at tp = 1) and DP group
          group              the whole mesh (every rank of this world)
          dp_partition       None without dp, else "zero" or "fsdp"
          is_reference       True in the tp = 1 runs (the reference, the control, the diagnosis' reruns)
          specs              {name: SimpleNamespace} for every parameter of the run:
            name, shape (full), split (None, 0 or 1), sizes (each TP rank's width along split), ranges (per TP
            rank, its (begin, end) pieces of the split axis; a fused QKV has three), local_shape (this rank's
            TP shard), local_shapes (every TP rank's), heads, kv_heads, head_dim, fused, route ("muon" or
            "adamw": "auto" resolved as 2-D -> muon, else adamw), piece (None without dp; with dp "zero":
            (begin, end) in the TP shard's row-major elements; "fsdp": (begin, end) rows), piece_shape, pieces
            (every DP rank's piece of this TP shard).
    params  a list of nsverify.torch.Param (Param.from_config(config.json) for a model's layers). Shards follow
            AutoTP's rules (nsverify.autotp_layout / fused_qkv_layout, as check_tp and nsv audit): uneven and
            zero-width shards (tp > KV groups: a (0, n) or (m, 0) parameter) included.
    tp      the tensor-parallel degree (1..64). world_size: None, or tp x dp (checked).
    dp      None (TP alone) or 1..64 data-parallel ranks: every TP shard is cut again, dp_partition "zero"
            (the shard's row-major elements in pieces of ceil(N / dp), handed as 1-D parameters) or "fsdp"
            (ceil(rows / dp) whole rows); trailing pieces are shorter or empty.
    layout  how each local tensor is presented: "plain" (a bare nn.Parameter), "megatron" (attributes
            tensor_model_parallel, partition_dim, partition_stride = 1 as Megatron-Core sets them; replicated:
            False, -1, 1), "deepspeed" (what DeepSpeed AutoTP's config_tp_params sets on a replaced module's
            weight: tensor_model_parallel, ds_is_replaced_module, gather_params, _tp_partition), or a callable
            (full: torch.Tensor, spec, ctx) -> nn.Parameter holding this rank's shard or piece (its shape and
            values are checked). "dtensor" is refused: DTensor needs torch >= 2.
            make_optimizer, a reference factory and a layout callable reach the ranks as check_tp's fn does: by
            reference from a module the ranks import, else by value (cloudpickle: a factory or class defined in
            a script's, a notebook's or a REPL's __main__, a lambda, a closure); __main__ is never re-run on a rank,
            and what cannot be sent (a closure over a lock, an open file) is a RankStartError saying what to change.
    steps   optimizer steps per run (1..1000).
    grads   "random": per (step, parameter) a seeded gaussian, power-law or low-rank gradient (float32); or a
            callable grads(step, name, shape, dp_rank) -> the full gradient of DP rank dp_rank. Under DP the
            optimizer gets the DP mean (float64, rounded to float32 once), the same bits in every run. Gradients
            are injected into .grad before each step: nothing is trained.
    claim   "exact": every parameter's weights, every step, and every compared state tensor bit-identical to
              the reference's (the TP run's shards and pieces assembled). Built-in negative control: each
              TP-split Muon parameter is also run at tp = 1 as its shards registered as separate parameters; a
              parameter where that per-shard run is bit-identical to the whole-matrix reference cannot tell a
              per-shard optimizer apart and is "not discriminating"; if none discriminates the verdict is
              NOTHING CHECKED. The comparison must flag a 1-ULP change of the reference (a self-test per case).
            "rounding": each TP-split Muon parameter's cumulative weight change within a bound derived from
              nsverify.tp_rounding_bound (S5's 2 S + N1 for NS of the reference's momentum on the layout; the
              derivation: _optimizer_compare.rounding_bound), lr*wd measured from the factory by a zero-gradient
              step; the elementwise parts (AdamW-routed and replicated parameters, the state tensors) still
              bit-identical. A parameter whose reference has no momentum state is "nothing checked" with why.
            "none": diagnosis only; the verdict is NOTHING CHECKED.
            A check where no parameter was compared where TP could change it (tp = 1, nothing split) is NOTHING
            CHECKED with the reason, never a pass.
    reference  "tp1" (the same factory at tp = 1, in a world of its own of dp ranks, so the default group's size
            is the reference's) or a second factory to take as the reference.
    compare_state  compare the optimizer's state tensors of each parameter's shape (optimizer.state[p]).
    timeout seconds one run of the factory (all steps) may take on the ranks: a rank that raises (SystemExit
            included), hangs, dies, or leaves a parameter of another shape fails the check with every rank's
            message, within the limit, and no rank process outlives the check.
    seed    the draws' seed (None: nsverify's default). max_success: draws of gradients (and initial weights);
            the first failing draw is reported. Shrinking: its failing parameters alone, up to the first step
            where one fails, kept if it still fails. replay: the result's .replay string
            "opt:<seed>:<draw>:<names>:<steps>" reruns exactly that draw on those parameters and steps.
    kernel, ns_steps, dtype, accumulate, products, coeffs, restart_at  the NS your optimizer runs (nsverify's
            knobs, the record's defaults): used only by claim="rounding"'s bound.
    backend the torch.distributed backend ("gloo"). threads: torch threads per rank (1: reproducible bits).
    strategy  the TP strategy the optimizer runs, if it says ("gather", "owner", "gram_allreduce", ...): each step's
            collectives of every TP rank beside the cost model's plan of it, summed over the TP-split Muon
            parameters (``result.plan``; refused with dp=). None: the collectives are recorded, not compared.

    Each failing parameter is diagnosed by rerunning the factory at tp = 1 on transformed inputs: per-shard NS
    with local-shape scale, whole-matrix NS with local-shape scale, routed to the other group, stale head
    count, a shard overwritten by another rank's, NS skipped, NS run twice, momentum advanced twice, weight
    decay applied after the update (see _optimizer_diagnosis: bitwise where the factory can produce the
    hypothesis, else a tolerance derived from float32 rounding). The route observed (NS or elementwise, the
    table's "route" column and information in the diagnosis, never its verdict) is judged from the first step's
    update: NS leaves the singular values of the update nearly equal (spread <= 2) where the gradient's spread >= 3.

    Returns an OptimizerCheckResult (truthy only if the claim holds and something was checked): verdict,
    per-parameter table, .records per (parameter, step), .diagnosis, .collectives (per world, rank and step),
    .negative_control, .environment, .replay, .to_dict().
    """
    given = given_settings(locals(), restart_at, not_settings=("make_optimizer", "params", "_executor"))
    import torch
    S = Settings(make_optimizer, params, given)
    ex = _executor or PoolExecutor(S.factory, S.tp, S.dp, S.backend, S.timeout, S.threads)
    try:
        case, statuses = _run_cases(S, ex)
        diagnosis = {}
        if case.failing and not case.fault:
            if case.lrwd is None:
                case.lrwd = case.measure_lrwd()
            diagnosis = diagnose(case, set(case.failing), case.lrwd)
        stats = ex.stats()
    finally:
        if _executor is None:
            ex.close()
    if "fails" in statuses or (S.claim == "none" and case.failing):
        status = "fails" if S.claim != "none" else "nothing checked"
        reason = case.reason
    elif "holds" in statuses:
        status, reason = "holds", f"{statuses.count('holds')} of {len(statuses)} draw(s) held; " + case.reason
    else:
        status, reason = "nothing checked", case.reason
    words = dict(exact="every parameter's weights and state bit-identical to the tp = 1 reference at every step",
                 rounding="each TP-split Muon parameter within its derived rounding bound; the elementwise parts "
                          "bit-identical", none="no claim (diagnosis only)")[S.claim]
    failed = status == "fails"
    prop = PropertyResult(code="OPT", name=f"optimizer_{S.claim}_against_the_tp_1_reference", claim=words,
                          status=status, promise="map", cases=len(statuses),
                          cases_checked=sum(s != "nothing checked" for s in statuses), message=reason,
                          replay=case.replay if failed else "")
    name = _name(make_optimizer)
    subject = f"check_optimizer({name}: claim {S.claim}, tp {S.tp}" + (f" x dp {S.dp} ({S.partition})" if S.dp else "") + \
        f", {len(case.params)} parameter(s), {case.steps} step(s))"
    nc = dict(per_shard=case.per_shard, per_shard_note=case.per_shard_note, ulp_self_test=case.self_test)
    env = dict(torch=torch.__version__, backend=S.backend, tp=S.tp, dp=S.dp, dp_partition=S.partition if S.dp else None,
               world_size=S.world_size, reference_world=S.dp or 1, layout=S.layout if isinstance(S.layout, str) else
               _name(S.layout), timeout_s=S.timeout, threads=S.threads, seed=S.seed, draws=len(statuses),
               draw_statuses=statuses, pid=os.getpid(), **stats)
    result = OptimizerCheckResult(subject, prop, S.claim, reason, case.rows, case.records, diagnosis,
                                  dict(tp=collectives_of(case.tp_run), reference=collectives_of(case.ref_run)), nc, env,
                                  case.replay if failed else None, case.fault)
    if S.strategy:
        result.plan = compare_with_plan(S.strategy, case.params, S.tp, collectives_of(case.tp_run), S.knobs)
    result.seed = S.seed
    return result


def assert_optimizer(make_optimizer, params, **kwargs):
    """check_optimizer(make_optimizer, params, **kwargs); raises nsverify.CheckFailed (an AssertionError) with the
    full report unless it passes (FAIL or NOTHING CHECKED). Returns the OptimizerCheckResult when it passes."""
    from .._assertions import CheckFailed
    result = check_optimizer(make_optimizer, params, **kwargs)
    if not result:
        raise CheckFailed(result)
    return result


def run_from_cli(args):
    """check_optimizer from a dict of the command line's values (for ``nsv check --kind optimizer``):
    "impl" ("FILE.py:FACTORY") or "make_optimizer" (a callable); "params" (a list of Param keyword dicts, or the
    path of a JSON file holding one) or "config" (a config.json) with "layers"; "reference_impl" (FILE.py:FACTORY,
    optional); every other key a keyword of check_optimizer (tp, dp, dp_partition, layout, steps, claim, ...)."""
    args = dict(args)
    factory = args.pop("make_optimizer", None) or load_factory(_args.text("impl", args.pop("impl", None)))
    if args.get("reference_impl"):
        args["reference"] = load_factory(args.pop("reference_impl"))
    args.pop("reference_impl", None)
    config, layers = args.pop("config", None), args.pop("layers", 1)
    params = args.pop("params", None)
    if (config is None) == (params is None):
        raise ValueError("give exactly one of params (a list of Param dicts or a JSON file of one) and config (a "
                         "config.json)")
    if config is not None:
        params = Param.from_config(config, layers=layers)
    elif isinstance(params, (str, os.PathLike)):
        import json
        with open(params) as f:
            params = json.load(f)
    return check_optimizer(factory, params, **args)


def load_factory(spec):
    """The factory named "FILE.py:NAME". A file inside a package (folders holding __init__.py) is imported by its
    dotted name from the package's root, so that its relative imports work; a lone file by its own name from its
    folder. The ranks find it the same way (the folder is on the sys.path handed to them)."""
    import importlib
    import sys
    path, sep, attr = spec.rpartition(":")
    if not sep or not path.endswith(".py") or not attr:
        raise ValueError(f"impl must be FILE.py:FACTORY, got {spec!r}")
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"impl: {path}: no such file")
    parts, root = [os.path.splitext(os.path.basename(path))[0]], os.path.dirname(path)
    while os.path.isfile(os.path.join(root, "__init__.py")):
        parts.insert(0, os.path.basename(root))
        root = os.path.dirname(root)
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        module = importlib.import_module(".".join(parts))
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 - the user's module: any error (SystemExit included) is "cannot load"
        raise ValueError(f"impl: {path} raised {type(e).__name__} while being imported: {e}") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ValueError(f"impl: {path} has no callable {attr!r}")
    return factory
