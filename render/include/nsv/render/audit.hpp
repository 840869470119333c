#pragma once
// An audit (nsv/analysis/audit.hpp) in words: the JSON of schema nsv.audit/1, markdown for reports,
// terminal text, and the sentences each of them carries (one place for the words).
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "nsv/analysis/audit.hpp"

namespace nsv {

// Stable schema "nsv.audit/1" (fields are only ever added):
//   schema, tp, grain, measured
//   model       {name, source, architecture, model_type, hidden_size, num_attention_heads,
//                num_key_value_heads, head_dim, intermediate_size, num_hidden_layers, vocab_size,
//                tie_word_embeddings, qkv_bias, family, autotp_rule, deepspeed_commit,
//                num_experts, expert_intermediate_size, deepspeed_experts (none | expert_parallel)}
//   ns          {kernel, steps, dtype, accumulate, coeffs, restart_at (array of steps)}
//   cost_model  {latency_us, link_gbps, tflops, wire_dtype, formula}
//   parameters[] one per Muon matrix of a layer, in the family record's order:
//     name, rows, cols, elements, copies (per layer), expert, fused (none | glm | phi3 | bloom |
//     bigcode | gate_up), sub_matrices[] {name, begin, rows, rows_per_rank[tp], replicated,
//     whole_heads, mixed_under_shard}, expert_parallel null | {experts_per_rank[tp], flops[tp],
//     time_s}, role (column_parallel | row_parallel | replicated), split_axis, heads,
//     head_dim, kv_groups, shard_rule (head_aligned | grain), shard_sizes[tp],
//     zero_width_ranks[], per_head_applies, per_head_note, whole_ns_flops,
//     aspect_scale {global, local[tp]},
//     exact_strategies[] {strategy, target (whole | per_head),
//                         exactness (bit_identical | exact_in_exact_arithmetic)},
//     strategies {<strategy>: {target, exactness (... | inexact | not_applicable), applicable,
//                 why_not | (time_s, step_share_s,
//                 collectives {all_gather, all_reduce, all_to_all, broadcast (always 0)},
//                 ranks[tp] {rank, flops, bytes_sent, bytes_received, messages,
//                            extra_memory_bytes, compute_s, latency_s, bandwidth_s, time_s})}},
//     cheapest_exact {bit_identical, any, per_head} (strategy names or null),
//     shard_divergence null | {rel_diff_mean, rel_diff_max, rank_rel_diff[], cosine_min,
//                 update_rel_diff_mean, update_rel_diff_max, measured_on (full_shape | proxy),
//                 proxy_scale, proxy_exact_ratio, proxy_spectrum_scale, rows, cols, head_dim,
//                 shard_sizes[], spectrum, seconds}
//   totals      {layers, muon_params_per_layer, muon_params, total_params, non_muon_params,
//                per_head_params, per_head_exact_fraction_params, per_head_exact_fraction_flops,
//                ns_flops_whole_per_step,
//                step_time_s {<plan>: seconds}   (the figure of step time per strategy vs tp),
//                plans[] {name, description, semantics, exactness (bit_identical |
//                         exact_in_exact_arithmetic | inexact | partial), choice[one per matrix], step_time_s,
//                         compute_s, latency_s, bandwidth_s, bytes_sent_max_rank,
//                         bytes_sent_total, messages_max_rank, flops_max_rank,
//                         peak_extra_memory_bytes},
//                experts null | {matrices_per_step, deepspeed (expert_parallel | none),
//                         tensor_parallel_shard, tensor_parallel_exact, expert_parallel: each
//                         {exactness, step_time_s, flops_max_rank, bytes_sent_max_rank, ...}}}
//   recommendation (text), notes[] (text)
// Plans (kAllPlans): shard, gather, owner, gram_allreduce, gram_restart_allreduce (one strategy
// for every matrix), per_head+shard, cheapest_bit_identical, cheapest_exact,
// per_head+cheapest_bit_identical.
//   mesh        (only at dp > 1) {tp, dp, dp_partition (zero | fsdp), mesh_rank_order,
//                parameters[] {name, rows, cols, copies, whole_ns_flops, composes,
//                  cheapest_exact {bit_identical, any}, strategies[] {strategy, target, applicable,
//                  exactness, why_not | (time_s, step_share_s, flops_max_rank, bytes_sent_max_rank,
//                  messages_max_rank, extra_memory_max_rank_bytes)}},
//                steps[] {strategy, exactness, step_time_s}, fastest_bit_identical_step,
//                owner_load[] {assignment (round_robin | by_size), matrices_per_step,
//                  step_imbalance, worst_layer_imbalance, busiest_flops, mean_flops,
//                  dp_owner_gather_step_time_s, dp_owner_owner_step_time_s}}
nlohmann::json audit_json(const AuditResult&);
// The TP x DP part alone (audit_mesh.cpp): the "mesh" object, and its markdown tables (which the
// markdown and terminal outputs append).
nlohmann::json mesh_audit_json(const MeshAudit&);
std::string mesh_audit_markdown(const MeshAudit&);
std::string audit_markdown(const AuditResult&);
std::string audit_text(const AuditResult&, bool per_rank = false);

// The sentences (audit_words.cpp).
std::string_view plan_description(Plan);
std::string_view plan_semantics(Plan);
std::string_view plan_exactness(const PlanTotals&);    // the promise's name, or "partial"
std::string_view strategy_exactness(const StrategyAudit&);  // the promise's name, or "not_applicable"
std::string per_head_note(const ParamAudit&);          // what per_head covers, or why it does not apply
std::string recommendation_text(const AuditResult&);
std::string note_text(const AuditNote&, const AuditResult&);

}  // namespace nsv
