"""Wrong implementations every check must fail, and correct ones every check must pass (issue 27).

Each wrong kernel or TP update is a plausible way to be wrong, not a realistic bug (those are
seeded_kernel_bugs.py and numpy_tp.py): it returns something of the right shape and type that is
not Newton-Schulz of its input. A verification tool that passes any of them is broken. The gate
(python/tests/test_wrong_implementations.py) runs each through check_kernel / check_tp with the
default required set and asserts: the verdict is FAIL, and the named property is among those that
failed (the one that must catch it: a property whose premise the wrong output can switch off, as
K3-K5 once could for a 10x-scaled bf16 output, would show up here).

The correct ones are nsverify's own reference offered as a user's callable, in every dtype, and the
numpy implementations of examples/: they must pass.
"""

import numpy as np

import nsverify
import numpy_ns
import numpy_tp


def reference(**knobs):
    """nsverify's reference as a callable: NS of G with these knobs (products="full", the checks' default).
    A kernel answers every input, so it computes the NaN and norm-overflowing ones K8 hands it, which
    nsverify.ns refuses by default."""
    knobs = dict(dict(products="full"), **knobs)

    def ns(G, steps):
        return nsverify.ns(G, steps=steps, allow_unnormalizable=True, **knobs)
    return ns


def scaled(factor, **knobs):
    """The reference's result times `factor`: the right direction, the wrong size."""
    base = reference(**knobs)

    def ns(G, steps):
        return base(G, steps) * np.float32(factor)
    return ns


def identity(G, steps):
    """A copy of the input."""
    return np.array(G, copy=True)


def input_returned(G, steps):
    """The input array itself (the caller's gradient becomes the update)."""
    return G


def zeros(G, steps):
    return np.zeros_like(G)


def constant(G, steps):
    return np.ones_like(G)


def transposed_output(G, steps):
    """NS of G transposed in its own shape: the result read in the wrong order."""
    X = numpy_ns.standard_ns(G, steps)
    return np.ascontiguousarray(X.T).reshape(X.shape)


def random_orthogonal(G, steps):
    """An orthogonal matrix of G's shape that has nothing to do with G (a fresh one every call)."""
    rng = np.random.default_rng()
    m, n = G.shape[-2:]
    q, _ = np.linalg.qr(rng.standard_normal((max(m, n), min(m, n))))
    return (q if m >= n else q.T).astype(G.dtype)


def wrong_coefficients(G, steps):
    """Standard NS with the `you` schedule's first triple instead of keller's."""
    X, transposed = numpy_ns._wide(G)
    X = numpy_ns._standard_loop(numpy_ns._normalized(X), steps, coeffs=(4.0848, -6.8946, 2.9270))
    return np.ascontiguousarray(X.T) if transposed else X


def too_few_steps(G, steps):
    """Standard NS that stops one step early."""
    return numpy_ns.standard_ns(G, max(0, steps - 1))


def normalizes_in_place(G, steps):
    """Standard NS that divides the caller's array by its norm in place first (a published Gram NS
    routine does this to its input tensor)."""
    G /= np.float32(np.sqrt(np.sum(np.square(G, dtype=np.float64)))) + np.float32(numpy_ns.EPS)
    return numpy_ns.standard_ns(G, steps)


def columns_normalized(G, steps):
    """Standard NS on G with each column divided by its own norm instead of the whole matrix by its
    Frobenius norm. Row and column permutations and sign flips commute with that, rotations do not:
    only K3's Householder reflections catch it (the structured transforms' negative control)."""
    X = np.array(G, dtype=np.float32)
    X = X / (np.linalg.norm(X, axis=0, keepdims=True) + np.float32(numpy_ns.EPS)) / np.float32(np.sqrt(X.shape[-1]))
    wide, transposed = numpy_ns._wide(X)
    X = numpy_ns._standard_loop(wide, steps)
    return np.ascontiguousarray(X.T) if transposed else X


def clips_large_entries(G, steps):
    """Standard NS of G with its entries clipped to [-8, 8] first (gradient clipping by value done
    inside the orthogonalization). Drawn gradients rarely hold such entries, so the reference
    comparison seldom sees it; G scaled by up to 16 does: K2's positive scaling, whose predicted
    eps effect must stay the eps's alone (an effect estimated too large would let it pass)."""
    return numpy_ns.standard_ns(np.clip(G, -8, 8), steps)


# (name, callable, check_kernel arguments, the property that must catch it)
WRONG_KERNELS = [
    ("identity", identity, dict(kernel="standard"), "agrees_with_the_reference_within_its_own_error"),
    ("input_returned", input_returned, dict(kernel="standard"), "input_is_left_untouched_and_not_aliased"),
    ("zeros", zeros, dict(kernel="standard"), "singular_values_stay_in_the_band_of_the_scalar_map"),
    ("constant", constant, dict(kernel="standard"), "zero_matrix_maps_to_zero"),
    ("transposed_output", transposed_output, dict(kernel="standard"), "agrees_with_the_reference_within_its_own_error"),
    ("random_orthogonal", random_orthogonal, dict(kernel="standard"), "repeated_calls_give_the_same_bits"),
    ("wrong_coefficients", wrong_coefficients, dict(kernel="standard"), "agrees_with_the_reference_within_its_own_error"),
    ("too_few_steps", too_few_steps, dict(kernel="standard"), "agrees_with_the_reference_within_its_own_error"),
    ("normalizes_in_place", normalizes_in_place, dict(kernel="standard"), "input_is_left_untouched_and_not_aliased"),
    ("columns_normalized", columns_normalized, dict(kernel="standard"),
     "orthogonal_transformations_commute_with_ns_within_rounding"),
    ("clips_large_entries", clips_large_entries, dict(kernel="standard"),
     "positive_scaling_changes_the_result_only_by_eps_and_rounding"),
] + [
    (f"scaled_{factor}_{dtype}", scaled(factor, kernel="gram", dtype=dtype), dict(kernel="gram", dtype=dtype),
     "agrees_with_the_reference_within_its_own_error")
    for factor in (1.25, 10) for dtype in ("fp64", "fp32", "bf16", "fp16")
]

# (name, callable, check_kernel arguments): they must pass
CORRECT_KERNELS = [
    (f"reference_{kernel}_{dtype}", reference(kernel=kernel, dtype=dtype), dict(kernel=kernel, dtype=dtype))
    for kernel in ("standard", "gram") for dtype in ("fp64", "fp32", "bf16", "fp16")
] + [
    ("numpy_standard_ns", numpy_ns.standard_ns, dict(kernel="standard", batched=True)),
    ("numpy_gram_ns", numpy_ns.gram_ns, dict(kernel="gram", batched=True)),
]


# ------------------------------------------------------------------------------------------------
# TP updates: fn(shards, spec) -> one result per rank.

def tp_identity(shards, spec):
    return [np.array(s, copy=True) for s in shards]


def tp_zeros(shards, spec):
    return [np.zeros_like(s) for s in shards]


def tp_constant(shards, spec):
    return [np.ones_like(s) for s in shards]


def right_only_at_tp_1(shards, spec):
    """The whole matrix's NS when one rank holds it, each shard's own NS otherwise."""
    if spec.tp == 1:
        return [numpy_ns.standard_ns(shards[0], spec.steps)]
    return numpy_tp.per_shard_ns(shards, spec)


# (name, callable, check_tp arguments, the property that must catch it); the kernel is "standard"
WRONG_TP = [
    ("identity_claimed_exact", tp_identity, dict(claim="exact"), "tp_1_result_computes_the_target_within_rounding"),
    ("zeros_claimed_exact", tp_zeros, dict(claim="exact"), "tp_1_result_computes_the_target_within_rounding"),
    ("constant_claimed_exact", tp_constant, dict(claim="exact"), "tp_1_result_computes_the_target_within_rounding"),
    ("constant_claimed_rounding", tp_constant, dict(claim="rounding"), "tp_result_is_within_the_s5_bound_of_the_target"),
    ("per_shard_ns_claimed_exact", numpy_tp.per_shard_ns, dict(claim="exact"), "tp_result_equals_its_own_tp_1_result_bit_for_bit"),
    ("norm_per_shard_claimed_rounding", numpy_tp.norm_per_shard, dict(claim="rounding"),
     "tp_result_is_within_the_s5_bound_of_the_target"),
    ("right_only_at_tp_1_claimed_exact", right_only_at_tp_1, dict(claim="exact"),
     "tp_result_equals_its_own_tp_1_result_bit_for_bit"),
    ("right_only_at_tp_1_claimed_rounding", right_only_at_tp_1, dict(claim="rounding"),
     "tp_result_is_within_the_s5_bound_of_the_target"),
    # TP x DP meshes (fn(pieces, spec), one piece per mesh rank)
    ("mesh_identity_claimed_exact", tp_identity, dict(claim="exact", dp=2, dp_partition="zero"),
     "tp_1_result_computes_the_target_within_rounding"),
    ("mesh_per_piece_ns_fsdp_claimed_exact", numpy_tp.mesh_per_piece_ns, dict(claim="exact", dp=3, dp_partition="fsdp"),
     "tp_result_equals_its_own_tp_1_result_bit_for_bit"),
    ("mesh_per_piece_ns_zero_claimed_rounding", numpy_tp.mesh_per_piece_ns, dict(claim="rounding", dp=2, dp_partition="zero"),
     "tp_1_result_computes_the_target_within_rounding"),
    ("mesh_dp_gather_per_shard_ns_claimed_exact", numpy_tp.mesh_dp_gather_per_shard_ns,
     dict(claim="exact", dp=2, dp_partition="fsdp"), "tp_result_equals_its_own_tp_1_result_bit_for_bit"),
]

# (name, callable, check_tp arguments): they must pass
CORRECT_TP = [
    ("allreduce_ns", numpy_tp.allreduce_ns, dict(claim="rounding")),
    ("allreduce_muon_update", numpy_tp.allreduce_muon_update, dict(claim="rounding", aspect_scale=True)),
    ("per_head_ns", numpy_tp.per_head_ns, dict(claim="exact", target="per_head")),
    ("mesh_gather_ns_zero", numpy_tp.mesh_gather_ns, dict(claim="exact", dp=3, dp_partition="zero")),
    ("mesh_gather_ns_fsdp", numpy_tp.mesh_gather_ns, dict(claim="exact", dp=2, dp_partition="fsdp")),
    ("mesh_dp_gather_allreduce_ns", numpy_tp.mesh_dp_gather_allreduce_ns, dict(claim="rounding", dp=2, dp_partition="zero")),
]
