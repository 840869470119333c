// The TP x DP part of an audit (nsv/analysis/mesh_audit.hpp) as JSON and markdown tables (the terminal
// output prints the same tables).
#include <fmt/format.h>

#include "format.hpp"
#include "nsv/config_schema.hpp"
#include "nsv/render/audit.hpp"

namespace nsv {
namespace {

using nlohmann::json;
using render::fmt_time;

json strategy_json(const MeshStrategyAudit& s) {
  json j = {{"strategy", mesh_strategy_name(s.strategy)},
            {"target", target_name(s.target)},
            {"applicable", s.applicable},
            {"exactness", s.applicable ? promise_name(s.promise) : "not_applicable"}};
  if (!s.applicable) {
    j["why_not"] = s.why_not;
    return j;
  }
  j.update({{"time_s", s.time_s},
            {"step_share_s", s.step_share_s},
            {"flops_max_rank", s.flops_max_rank},
            {"bytes_sent_max_rank", s.bytes_sent_max_rank},
            {"messages_max_rank", s.messages_max_rank},
            {"extra_memory_max_rank_bytes", s.extra_memory_max_rank}});
  return j;
}

json optional_name(const std::optional<MeshStrategy>& s) { return s ? json(mesh_strategy_name(*s)) : json(nullptr); }

std::string time_of(const MeshParamAudit& pa, const std::optional<MeshStrategy>& s) {
  if (!s) return "-";
  const MeshStrategyAudit& a = pa.strategy(*s);
  return fmt_time(a.time_s) + (s->stage == DpStage::dp_owner ? " (step share " + fmt_time(a.step_share_s) + ")" : "");
}

std::string naive_cell(const MeshParamAudit& pa) {
  const MeshStrategyAudit& a = pa.strategy({DpStage::mesh, Strategy::shard});
  return a.applicable ? std::string(promise_name(a.promise)) : "not applicable (" + a.why_not + ")";
}

}  // namespace

json mesh_audit_json(const MeshAudit& m) {
  json params = json::array();
  for (const MeshParamAudit& pa : m.params) {
    json strategies = json::array();
    for (const MeshStrategyAudit& s : pa.strategies) strategies.push_back(strategy_json(s));
    params.push_back({{"name", pa.param.name},
                      {"rows", pa.param.rows},
                      {"cols", pa.param.cols},
                      {"copies", pa.param.copies},
                      {"whole_ns_flops", pa.whole_ns_flops},
                      {"composes", composed_layout(pa.layout).has_value()},
                      {"cheapest_exact", {{"bit_identical", optional_name(pa.cheapest_bit_identical)}, {"any", optional_name(pa.cheapest_exact)}}},
                      {"strategies", strategies}});
  }
  json steps = json::array();
  for (const MeshStepTotals& t : m.steps)
    if (t.applies_to_every_matrix)
      steps.push_back({{"strategy", mesh_strategy_name(t.strategy)}, {"exactness", promise_name(t.promise)}, {"step_time_s", t.step_time_s}});
  json loads = json::array();
  for (const OwnerLoad& l : m.owner_loads)
    loads.push_back({{"assignment", owner_assignment_name(l.assignment)},
                     {"matrices_per_step", l.matrices_per_step},
                     {"step_imbalance", l.step_imbalance},
                     {"worst_layer_imbalance", l.worst_layer_imbalance},
                     {"busiest_flops", l.busiest_flops},
                     {"mean_flops", l.mean_flops},
                     {"dp_owner_gather_step_time_s", l.gather_step_time_s},
                     {"dp_owner_owner_step_time_s", l.owner_step_time_s}});
  return {{"tp", m.tp},
          {"dp", m.dp},
          {"dp_partition", name_of(m.partition)},
          {"mesh_rank_order", "d * tp + t"},
          {"parameters", params},
          {"steps", steps},
          {"fastest_bit_identical_step", optional_name(m.fastest_bit_identical_step)},
          {"owner_load", loads}};
}

std::string mesh_audit_markdown(const MeshAudit& m) {
  std::string out = fmt::format("### TP x DP: tp {} x dp {}, {} partition of each TP shard\n\n", m.tp, m.dp,
                                m.partition == DpPartition::zero ? "ZeRO's flat" : "FSDP2's row");
  out += "A mesh strategy is a DP stage, then a TP strategy (mesh rank d * tp + t):\n\n";
  for (DpStage stage : kAllDpStages) out += fmt::format("- `{}+S`: {}\n", dp_stage_name(stage), dp_stage_summary(stage));
  out += "\n";
  out += "| matrix | shape | cheapest bit-identical | its time | cheapest exact | its time | NS of each 2-D block (mesh+shard) |\n";
  out += "|---|---|---|---|---|---|---|\n";
  for (const MeshParamAudit& pa : m.params)
    out += fmt::format("| {}{} | {} x {} | {} | {} | {} | {} | {} |\n", pa.param.name,
                       pa.param.copies > 1 ? fmt::format(" (x{})", pa.param.copies) : std::string(), pa.param.rows, pa.param.cols,
                       pa.cheapest_bit_identical ? mesh_strategy_name(*pa.cheapest_bit_identical) : "-", time_of(pa, pa.cheapest_bit_identical),
                       pa.cheapest_exact ? mesh_strategy_name(*pa.cheapest_exact) : "-", time_of(pa, pa.cheapest_exact), naive_cell(pa));
  out += "\nOne strategy for every matrix, over an optimizer step (dp_owner: matrices dealt round-robin):\n\n";
  out += "| strategy | exactness | step time |\n|---|---|---|\n";
  for (const MeshStepTotals& t : m.steps)
    if (t.applies_to_every_matrix)
      out += fmt::format("| {}{} | {} | {} |\n", mesh_strategy_name(t.strategy),
                         m.fastest_bit_identical_step == t.strategy ? " (fastest bit-identical)" : "", promise_name(t.promise),
                         fmt_time(t.step_time_s));
  out += "\nOwner over DP: whole matrices dealt to the DP indices; the busiest index's NS FLOPs over the mean:\n\n";
  out += "| assignment | matrices per step | busiest / mean, step | busiest / mean, worst layer | dp_owner+gather step | dp_owner+owner step |\n";
  out += "|---|---|---|---|---|---|\n";
  for (const OwnerLoad& l : m.owner_loads)
    out += fmt::format("| {} | {} | {:.3f} | {:.2f} | {} | {} |\n", owner_assignment_name(l.assignment), l.matrices_per_step,
                       l.step_imbalance, l.worst_layer_imbalance, fmt_time(l.gather_step_time_s), fmt_time(l.owner_step_time_s));
  return out;
}

}  // namespace nsv
