"""The seeded bugs, each with the check that must catch it and the property that does: one table,
read by the gate (python/tests/test_seeded_bugs.py) and the report (tools/report/python_checks_report.py)."""

import numpy_tp
import seeded_kernel_bugs as kernel_bugs

# (implementation, check_kernel arguments, the property that must catch it: one the default promise
# "map" requires, so that the default check fails)
KERNEL_BUGS = [
    (kernel_bugs.transpose_rule_inverted, dict(kernel="gram"), "agrees_with_the_reference_within_its_own_error"),
    (kernel_bugs.gram_restart_dropped, dict(kernel="gram"), "agrees_with_the_reference_within_its_own_error"),
    (kernel_bugs.batch_shares_one_norm, dict(kernel="standard", batched=True), "batched_matches_loop_within_rounding"),
    (kernel_bugs.nan_silently_zeroed, dict(kernel="standard"), "non_finite_input_gives_non_finite_output"),
    (kernel_bugs.inplace_normalization, dict(kernel="standard"), "input_is_left_untouched_and_not_aliased"),
]

# (implementation, check_tp arguments, the property that must catch it); the kernel is "standard"
TP_BUGS = [
    (numpy_tp.norm_per_shard, dict(claim="rounding"), "tp_result_is_within_the_s5_bound_of_the_target"),
    (numpy_tp.per_shard_ns, dict(claim="exact"), "tp_result_equals_its_own_tp_1_result_bit_for_bit"),
    (numpy_tp.autotp_muon_update, dict(claim="exact", aspect_scale=True), "tp_result_equals_its_own_tp_1_result_bit_for_bit"),
    (numpy_tp.local_aspect_scale, dict(claim="rounding", aspect_scale=True), "tp_result_is_within_the_s5_bound_of_the_target"),
    (numpy_tp.allgather_equal_buffers, dict(claim="exact"), "tp_result_equals_its_own_tp_1_result_bit_for_bit"),
]
