"""The checker checked like the code it checks: properties, not one-bug tests, for
the classes of checker bugs that survived mutation testing.

1. REF judges a kernel by the dtype it claims: a kernel computing in a coarser dtype than it claims
   fails, one checked in the dtype it computes in passes (every claimed x computed pair).
2. A replay runs exactly the one shrunk case: as many calls of fn as that case makes, each handed
   the saved counterexample input bit for bit, also where the case was shrunk (the walk down
   RapidCheck's shrink path runs the property for its draws only, fn not called).
3. Pinned shapes with heads and GQA KV heads hand fn the head geometry and AutoTP's KV-group shards,
   checked against an independent implementation of AutoTP's rule (nsverify.torch.check_tp: the
   check whose scope pins shape, heads and kv_heads; skipped without torch).
4. nsv sweep --json runs the Cartesian product of what it was given, minus its skip rules, and
   echoes the lists; nsv shard --json echoes the head geometry it was given and promises only
   against the strategy's own target; nsv ns --json times as many runs as --repeat asks and
   reports their median.
5. nsv ns --output writes the bits of the dtype's round-to-nearest-even, read back by a reader
   written here (no nsv command writes safetensors: the library's writer has no CLI caller).
"""
import ast
import functools
import itertools
import json
import os
import struct
import subprocess
import uuid

import numpy as np
import pytest

import nsverify

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NSV = os.environ.get("NSV_BINARY", os.path.join(ROOT, "build", "cli", "nsv"))

REF = "agrees_with_the_reference_within_its_own_error"
K3 = "orthogonal_transformations_commute_with_ns_within_rounding"


# ------------------------------------------------------------------------------------------------
# 1. REF x every claimed dtype x every coarser computed dtype.

SIGNIFICAND_BITS = {"fp64": 53, "fp32": 24, "fp16": 11, "bf16": 8}
# The knobs both sides share, so that the dtype is the only thing claimed wrong.
SHARED = dict(kernel="standard", products="full", accumulate="fp32")
CROSS = [(claimed, computed) for claimed, computed in itertools.product(SIGNIFICAND_BITS, repeat=2)
         if SIGNIFICAND_BITS[computed] <= SIGNIFICAND_BITS[claimed]]


def reference_computing_in(dtype):
    """nsverify's own reference as a user's kernel that really computes in `dtype`, returning the
    array type check_kernel hands it (float64 for an fp64 claim), so only the precision is wrong."""
    def ns(G, steps):
        out = nsverify.ns(G, steps=steps, dtype=dtype, **SHARED)
        return np.asarray(out, dtype=G.dtype)
    ns.__qualname__ = f"reference_computing_in_{dtype}"
    return ns


@pytest.mark.parametrize("claimed,computed", CROSS, ids=[f"claims-{c}-computes-{d}" for c, d in CROSS])
def test_ref_passes_a_kernel_in_the_dtype_it_computes_in_and_fails_it_in_any_finer_claim(claimed, computed):
    # shapes drawn up to 48 (REF asserts on sides of at least 16), every spectrum of the generators
    result = nsverify.check_kernel(reference_computing_in(computed), dtype=claimed, properties=[REF], max_dim=48,
                                   max_success=12, shrink_seconds=0, **SHARED)
    p = result[REF]
    if claimed == computed:
        assert p.status == "holds" and p.cases_checked > 0, str(result)
    else:
        # REF's bound is derived from the claimed dtype: a coarser rounding than claimed is outside it
        assert p.status == "fails", str(result)


# ------------------------------------------------------------------------------------------------
# 2. A replay runs exactly the one shrunk case.

class Recorder:
    """fn wrapped: every input it was handed, copied before fn runs."""

    def __init__(self, fn):
        self.fn, self.inputs = fn, []
        self.__qualname__ = getattr(fn, "__qualname__", "recorded")

    def __call__(self, G, steps):
        self.inputs.append(np.array(G, copy=True))
        return self.fn(G, steps)


def wrong_from_side_20(G, steps):
    """The reference on matrices whose sides are all below 20, each column normalized on its own on
    larger ones: a different map (REF fails; one call per case) that only rotations expose (K3 fails;
    a call on G and one on U G V^T per case). The small cases drawn first pass, so the failing case
    is not the first one: a run that ignored replay= would call fn more often than the case does."""
    from wrong_implementations import columns_normalized
    if max(G.shape) < 20:
        return nsverify.ns(G, steps=steps, kernel="standard", products="full")
    return columns_normalized(G, steps)


def saved_calls(p):
    """The saved input of each call of the failing case, in call order: [path of "call 1 input", ...]."""
    paths, k = [], 1
    while f"call {k} input" in p.files:
        paths.append(p.files[f"call {k} input"])
        k += 1
    assert len(paths) == sum(1 for label in p.files if label.startswith("call ") and label.endswith(" input")), p.files
    return paths


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype == np.float32 and a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


REPLAYED = (REF, K3)


def first_failure_and_replays(tmp_path, shrink_seconds):
    """check_kernel on wrong_from_side_20 (arrays saved), then each failing property replayed through a
    Recorder with the same arguments: (first result, {name: [saved input paths]}, {name: [inputs handed]})."""
    args = dict(kernel="standard", products="full", properties=list(REPLAYED), max_success=40, max_dim=24,
                shrink_seconds=shrink_seconds)
    first = nsverify.check_kernel(wrong_from_side_20, counterexamples=tmp_path / "first", **args)
    saved, handed = {}, {}
    for name in REPLAYED:
        p = first[name]
        assert p.status == "fails" and p.replay and p.cases > 0, str(first)  # not the first case drawn
        saved[name] = saved_calls(p)
        recorder = Recorder(wrong_from_side_20)
        again = nsverify.check_kernel(recorder, replay=p.replay, counterexamples=tmp_path / "again", **args)
        assert again[name].status == "fails" and again[name].message == p.message, str(again)  # the same case
        assert all(q.status in ("not run", "not applicable") for q in again.properties if q.name != name), str(again)
        handed[name] = recorder.inputs
    assert len(saved[REF]) != len(saved[K3]), saved  # two call patterns
    return first, saved, handed


@pytest.mark.parametrize("shrink_seconds", [0, 1])
def test_a_replay_ends_on_the_saved_case_and_runs_no_other_drawn_case(tmp_path, shrink_seconds):
    first, saved, handed = first_failure_and_replays(tmp_path, shrink_seconds)
    for name in REPLAYED:
        inputs = handed[name]
        # the replay's last case is the saved one: each of its calls handed the saved input bit for bit
        assert len(inputs) >= len(saved[name])
        for got, path in zip(inputs[-len(saved[name]):], saved[name]):
            assert same_bits(got, np.load(path)), (name, path)
        assert same_bits(np.load(saved[name][0]), np.load(first[name].files["input"])), name  # call 1 is the drawn input
        if shrink_seconds == 0:
            # nothing shrunk: the replay is that case alone, not the passing cases drawn before it
            assert len(inputs) == len(saved[name]), (name, len(inputs), saved[name])


def test_a_replay_of_a_shrunk_case_runs_that_case_alone(tmp_path):
    first, saved, handed = first_failure_and_replays(tmp_path, shrink_seconds=1)
    for name in REPLAYED:
        assert first[name].calls > (first[name].cases + 1) * len(saved[name]), name  # shrinking ran cases
        assert len(handed[name]) == len(saved[name]), (name, len(handed[name]), len(saved[name]))
        for got, path in zip(handed[name], saved[name]):
            assert same_bits(got, np.load(path)), (name, path)


# ------------------------------------------------------------------------------------------------
# 3. Pinned shapes with heads and GQA: the head geometry and the KV-group shards fn is handed.

def autotp_kv_group_widths(rows, heads, kv_heads, tp):
    """AutoTP's head-aligned split of `rows` written out here (not the library's): the KV groups dealt
    to the ranks as evenly as possible, the first kv_heads % tp ranks one group more; a group is
    heads / kv_heads query heads of rows / heads rows each."""
    head_dim, group = rows // heads, heads // kv_heads
    groups = [kv_heads // tp + (1 if r < kv_heads % tp else 0) for r in range(tp)]
    return [g * group * head_dim for g in groups]


def record_spec_and_run_per_head_ns(folder, shard, spec, group):
    """check_tp's fn on a rank: writes what it was handed to `folder`, returns per-head NS of its
    shard (each head_dim-row block on its own: a correct per-head update, so the check passes)."""
    import torch
    import numpy_ns
    fields = ("rank", "tp", "world_size", "axis", "rows", "cols", "rule", "heads", "kv_heads", "head_dim", "sizes")
    seen = {k: getattr(spec, k) for k in fields}
    seen.update(shapes=[list(s) for s in spec.shapes], ranges=[[list(p) for p in r] for r in spec.ranges],
                shard_shape=list(spec.shard_shape), handed=list(shard.shape))
    with open(os.path.join(folder, f"{uuid.uuid4().hex}.json"), "w") as f:
        json.dump(seen, f)
    X = shard.detach().numpy()
    blocks = [numpy_ns.standard_ns(X[h:h + spec.head_dim], spec.steps) for h in range(0, X.shape[0], spec.head_dim)]
    out = np.concatenate(blocks) if blocks else np.zeros(X.shape, np.float32)
    return torch.from_numpy(np.ascontiguousarray(out, dtype=np.float32))


# (rows, cols, heads, kv_heads, tp): GQA with even and uneven KV groups per rank, ranks past the KV
# groups (zero width), and no GQA (kv_heads == heads) with an uneven split
PINNED = [(24, 16, 6, 3, 2), (32, 16, 8, 2, 2), (40, 16, 10, 5, 3), (36, 12, 6, 3, 4), (16, 8, 4, 2, 4), (24, 16, 4, 4, 3)]


@pytest.mark.parametrize("rows,cols,heads,kv_heads,tp", PINNED)
def test_pinned_gqa_shapes_hand_fn_the_head_geometry_and_whole_kv_groups(tmp_path, rows, cols, heads, kv_heads, tp):
    pytest.importorskip("torch")
    import nsverify.torch as nt
    folder = tmp_path / "seen"
    folder.mkdir()
    fn = functools.partial(record_spec_and_run_per_head_ns, str(folder))
    result = nt.check_tp(fn, world_size=tp, shape=(rows, cols), heads=heads, kv_heads=kv_heads, axis=0,
                         target="per_head", claim="exact", kernel="standard", steps=2, max_success=2,
                         diagnosis_cases=0, shrink_seconds=0, timeout=60)
    assert result, str(result)
    seen = [json.load(open(folder / name)) for name in sorted(os.listdir(folder))]
    assert {s["tp"] for s in seen} == {1, tp}  # the drawn layout and the exact claim's whole matrix
    for s in seen:
        widths = autotp_kv_group_widths(rows, heads, kv_heads, s["tp"])
        assert sum(widths) == rows
        assert (s["rows"], s["cols"], s["axis"]) == (rows, cols, 0), s
        assert (s["heads"], s["kv_heads"], s["head_dim"]) == (heads, kv_heads, rows // heads), s
        assert s["sizes"] == widths, s
        assert [tuple(shape) for shape in s["shapes"]] == [(w, cols) for w in widths], s
        begins = np.cumsum([0] + widths)
        assert [[tuple(p) for p in r if p[1] > p[0]] for r in s["ranges"]] == [
            [(int(b), int(b) + w)] if w else [] for b, w in zip(begins, widths)], s
        assert s["handed"] == s["shard_shape"] == [widths[s["rank"] % s["tp"]], cols], s


# ------------------------------------------------------------------------------------------------
# 4. nsv sweep --json against what the command was given.

# Lists with a repeated value (steps 1), a strategy without heads on dim 1 (per_head), a second
# reduction order (which only the all-reduce strategy varies with): each skip rule has cases.
SWEEP = dict(shapes=["16x32", "24x16"], tp=[1, 2], axis=[0, 1], kernel=["standard", "gram"],
             strategy=["gather", "shard", "per_head", "gram_allreduce"], dtype=["fp32", "bf16"], steps=[1, 2, 1],
             reduction_order=["rank", "reverse"])
SWEEP_SEEDS, SWEEP_HEADS = 2, 2
ALL_REDUCE_STRATEGIES = {"gram_allreduce", "gram_restart_allreduce"}  # the strategies whose collective is an all-reduce


def run_sweep(given, seeds, heads):
    flags = [f"--{name.replace('_', '-')}={','.join(str(v) for v in values)}" for name, values in given.items()]
    out = subprocess.run([NSV, "sweep", *flags, f"--seeds={seeds}", f"--heads={heads}", "--json", "--quiet", "--threads=1"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def expected_sweep(given, seeds):
    """The Cartesian product of the lists (repeats included) and, of it, what the skip rules leave, the
    first matching rule naming the reason: {case key}, [count per rule], the product's size."""
    ran, skipped, product = set(), {"per_head on dim 1": 0, "order without an all-reduce": 0, "duplicate": 0}, 0
    for shape, seed, kernel, dtype, steps, tp, axis, strategy, (order_index, order) in itertools.product(
            given["shapes"], range(seeds), given["kernel"], given["dtype"], given["steps"], given["tp"], given["axis"],
            given["strategy"], enumerate(given["reduction_order"])):
        product += 1
        rows, cols = (int(x) for x in shape.split("x"))
        key = (rows, cols, seed, kernel, dtype, steps, tp, axis, strategy, order)
        if strategy == "per_head" and axis == 1:
            skipped["per_head on dim 1"] += 1
        elif order_index > 0 and strategy not in ALL_REDUCE_STRATEGIES:
            skipped["order without an all-reduce"] += 1
        elif key in ran:
            skipped["duplicate"] += 1
        else:
            ran.add(key)
    return ran, sorted(skipped.values()), product


def check_sweep_json(doc, given, seeds, heads):
    cases = doc["cases"]
    keys = [(c["rows"], c["cols"], c["seed"], c["kernel"], c["dtype"], c["steps"], c["tp"], c["axis"], c["strategy"],
             c["reduction_order"]) for c in cases]
    shapes = {tuple(int(x) for x in s.split("x")) for s in given["shapes"]}
    for c in cases:  # every field lies in what was given
        assert (c["rows"], c["cols"]) in shapes and c["seed"] in range(seeds), c
        for field in ("tp", "axis", "kernel", "strategy", "dtype", "steps", "reduction_order"):
            assert c[field] in given[field], (field, c)
        assert c["heads"] == c["kv_heads"] == heads and c["spectrum"] == "gaussian", c
        assert c["target"] == ("per_head" if c["strategy"] == "per_head" else "whole"), c
        assert len(c["rel_diff_ranks"]) == c["tp"], c  # one figure per rank: the case ran at its tp
    ran, skipped, product = expected_sweep(given, seeds)
    assert len(keys) == len(set(keys)), "a case ran twice"
    assert set(keys) == ran
    summary = doc["summary"]
    assert summary["cases"] == summary["ran"] == len(cases) and summary["resumed"] == 0, summary
    assert summary["cases"] + sum(summary["skipped"].values()) == product, summary
    assert sorted(summary["skipped"].values()) == [n for n in skipped if n], summary["skipped"]
    parameters = doc["parameters"]
    for field, values in given.items():  # echoed as given, repeats and order kept
        assert parameters[field] == values, (field, parameters[field])
    assert parameters["seeds"] == seeds and parameters["heads"] == heads, parameters


def test_sweep_json_runs_the_product_of_its_lists_minus_the_skip_rules():
    check_sweep_json(run_sweep(SWEEP, SWEEP_SEEDS, SWEEP_HEADS), SWEEP, SWEEP_SEEDS, SWEEP_HEADS)


# ------------------------------------------------------------------------------------------------
# 4b. nsv shard --json echoes the layout it was given, and promises only against the strategy's own
#     target (gather compared with per-head NS promises nothing).

def run_shard(*flags):
    out = subprocess.run([NSV, "shard", "--shape=32x24", "--kernel=standard", "--json", *flags],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("tp, heads, kv_heads", [(2, 8, 2), (4, 4, 4), (2, 16, 4)])
def test_shard_json_echoes_the_head_geometry_it_was_given(tp, heads, kv_heads):
    doc = run_shard(f"--tp={tp}", f"--heads={heads}", f"--kv-heads={kv_heads}", "--strategy=per_head")
    assert (doc["heads"], doc["kv_heads"], doc["head_dim"], doc["tp"]) == (heads, kv_heads, 32 // heads, tp), doc
    assert doc["shard_sizes"] == autotp_kv_group_widths(32, heads, kv_heads, tp), doc


@pytest.mark.parametrize("strategy, target, promise", [
    ("gather", "whole", "bit_identical"), ("gather", "per_head", "inexact"), ("per_head", "per_head", "bit_identical"),
    ("per_head", "whole", "inexact"), ("shard", "whole", "inexact"), ("owner", "whole", "bit_identical"),
    ("gram_allreduce", "whole", "exact_in_exact_arithmetic"), ("gram_allreduce", "per_head", "inexact")])
def test_shard_json_promises_only_against_the_strategys_own_target(strategy, target, promise):
    doc = run_shard("--tp=2", "--heads=4", f"--strategy={strategy}", f"--target={target}")
    assert (doc["strategy"], doc["target"], doc["promise"]) == (strategy, target, promise), doc
    if promise == "bit_identical":
        assert doc["bit_identical"], doc


# ------------------------------------------------------------------------------------------------
# 4c. nsv ns --json: one timing per run --repeat asks for, and the median of those.

@pytest.mark.parametrize("repeat", [1, 2, 5])
def test_ns_json_times_as_many_runs_as_repeat_asks(tmp_path, repeat):
    source = tmp_path / "g.npy"
    np.save(source, np.arange(1, 49, dtype=np.float32).reshape(6, 8))
    out = subprocess.run([NSV, "ns", f"--input={source}", f"--repeat={repeat}", "--kernel=standard", "--json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads(out.stdout)
    assert doc["repeat"] == repeat and len(doc["run_seconds"]) == repeat, doc
    assert doc["seconds"] == sorted(doc["run_seconds"])[repeat // 2], doc


# ------------------------------------------------------------------------------------------------
# 5. nsv ns --output on values that need rounding, read back by a reader written here.

def read_npy_bits(path):
    """An .npy file parsed by hand (magic, version, header length, the header's dict, raw data):
    (header dict, the data as unsigned integers of the element's width, shaped)."""
    raw = open(path, "rb").read()
    assert raw[:6] == b"\x93NUMPY", raw[:6]
    major = raw[6]
    length_format, start = ("<H", 10) if major == 1 else ("<I", 12)
    (length,) = struct.unpack(length_format, raw[8:start])
    header = ast.literal_eval(raw[start:start + length].decode("latin1"))
    data = raw[start + length:]
    width = int(header["descr"][2:])
    assert header["descr"] in ("<f4", "<f8") and not header["fortran_order"], header
    assert len(data) == width * int(np.prod(header["shape"])), (len(data), header)
    return header, np.frombuffer(data, dtype=f"<u{width}").reshape(header["shape"])


# compute dtype -> (significand bits, the container nsv reads the input from)
ROUNDED = {"bf16": (8, np.float32), "fp16": (11, np.float32), "fp32": (24, np.float64)}


def round_bits(x, bits, mode="even"):
    """x (float32 or float64) rounded to a `bits`-bit significand on its own bit pattern (normal range):
    to nearest, ties to even (bf16 of float32: + 0x7FFF + ((b >> 16) & 1), then truncate); or "truncate",
    or "away" (ties away from zero) to show that the inputs tell the rules apart."""
    uint = np.uint32 if x.dtype == np.float32 else np.uint64
    drop = np.finfo(x.dtype).nmant + 1 - bits
    b = x.view(uint).astype(np.uint64)
    half = np.uint64(1) << np.uint64(drop - 1)
    add = {"even": half - np.uint64(1) + ((b >> np.uint64(drop)) & np.uint64(1)), "truncate": np.uint64(0), "away": half}[mode]
    kept = (b + add) >> np.uint64(drop) << np.uint64(drop)
    return kept.astype(uint).view(x.dtype)


def matrix_needing_rounding(bits, container, rows=8, cols=16):
    """A rows x cols matrix of `container` values, some exactly halfway between two `bits`-bit numbers
    (lower neighbour even and odd, at the top of a binade), some one container ulp either side, in
    both signs; the rest filled so that the *rounded* matrix has a power-of-two Frobenius norm (at
    least 8), so NS with 0 steps (X / (||X|| + eps), eps absorbed) is exact: the rounded input over
    the norm. Returns (matrix, the norm)."""
    ulp = 2.0 ** (1 - bits)  # the rounded values' spacing in [1, 2)
    tiny = np.finfo(container).eps  # the container's spacing at 1
    halfway = [1 + k * ulp + ulp / 2 for k in (0, 1, 6, 7, 2 ** (bits - 1) - 1)]
    tricky = halfway + [1 + 3 * ulp + ulp / 2 + tiny * s for s in (-2, 2)]
    values = np.array(tricky + [-v for v in tricky], dtype=container)
    n = [int(v / ulp) for v in round_bits(values, bits).astype(np.float64)]  # rounded values in ulps, exact
    total = sum(m * m for m in n)
    target = 4
    while target < max(total, 64 / ulp ** 2):  # the norm sqrt(target) ulp is a power of two >= 8
        target *= 4
    deficit, fill = target - total, []
    while deficit:  # squares of `bits`-bit integers (exact in the compute dtype) making up the rest
        m = int(np.floor(np.sqrt(deficit)))
        while m * m > deficit:
            m -= 1
        shift = max(0, m.bit_length() - bits)
        m = m >> shift << shift
        fill.append(m)
        deficit -= m * m
    rng = np.random.default_rng(bits)
    flat = np.zeros(rows * cols, dtype=container)
    entries = np.concatenate([values, rng.choice([-1.0, 1.0], len(fill)) * np.array(fill, dtype=np.float64) * ulp])
    assert len(entries) <= flat.size
    flat[rng.permutation(flat.size)[:len(entries)]] = entries.astype(container)
    return flat.reshape(rows, cols), float(np.sqrt(target)) * ulp


def expected_output_bits(G, bits, norm, mode="even"):
    """What nsv ns --steps 0 must write, as float32 bits: the input rounded to the compute dtype (by
    `mode`), over the power-of-two norm (exact)."""
    return (round_bits(G, bits, mode).astype(np.float64) / norm).astype(np.float32).view(np.uint32)


@pytest.mark.parametrize("dtype", list(ROUNDED))
def test_ns_output_holds_the_round_to_nearest_even_bits_of_the_dtype(tmp_path, dtype):
    bits, container = ROUNDED[dtype]
    G, norm = matrix_needing_rounding(bits, container)
    batch = np.stack([G, -G[::-1, ::-1]])  # the 3-D writer too: the second matrix has the same norm
    expected = np.stack([expected_output_bits(g, bits, norm) for g in batch])
    # the inputs need rounding: truncation and ties-away would give other bits
    for wrong in ("truncate", "away"):
        assert not np.array_equal(np.stack([expected_output_bits(g, bits, norm, wrong) for g in batch]), expected), wrong
    for name, given, want in (("matrix", G, expected[0]), ("batch", batch, expected)):
        source, written = tmp_path / f"{name}-in.npy", tmp_path / f"{name}-out.npy"
        np.save(source, np.ascontiguousarray(given))
        out = subprocess.run([NSV, "ns", f"--input={source}", f"--output={written}", f"--dtype={dtype}",
                              "--kernel=standard", "--steps=0"], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        header, data = read_npy_bits(written)
        assert header["descr"] == "<f4" and tuple(header["shape"]) == given.shape, header  # float32 for every dtype but fp64
        assert np.array_equal(data, want), (dtype, name, np.argwhere(data != want)[:5])


def test_a_tp_replay_calls_fn_on_its_one_case_only():
    """check_tp's replay of a shrunk S5 failure (one call per case): fn is called once, on the shards
    of the shrunk case (the first run's failing case and the replay's are the same)."""
    import numpy_tp
    seen = []

    def per_shard_recorded(shards, spec):
        seen.append((spec.rows, spec.cols, spec.tp, [np.array(s, copy=True) for s in shards]))
        return numpy_tp.per_shard_ns(shards, spec)

    args = dict(claim="rounding", kernel="standard", diagnosis_cases=0, shrink_seconds=1)
    first = nsverify.check_tp(per_shard_recorded, **args)
    failed = [p for p in first.properties if p.status == "fails"]
    assert failed and failed[0].replay, str(first)
    calls_first = len(seen)
    seen.clear()
    again = nsverify.check_tp(per_shard_recorded, replay=failed[0].replay, **args)
    assert again[failed[0].name].status == "fails" and again[failed[0].name].message == failed[0].message, str(again)
    assert calls_first > 1 + failed[0].cases and len(seen) == 1, (calls_first, len(seen))
