#include "nsv/engine/report_audits.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "nsv/analysis/audit.hpp"
#include "nsv/analysis/model_config.hpp"
#include "nsv/npy.hpp"
#include "nsv/render/audit.hpp"

namespace nsv::engine {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;

// `nsv audit --config FILE --tp N`'s options: the library's defaults (DeepSpeed's gram NS in fp16
// on a GPU, SPEC §1.5), which are also the defaults of cmd_audit.cpp's flags.
AuditOptions audit_options(int tp) {
  AuditOptions o;
  o.tp = tp;
  return o;
}

struct AuditDocuments {
  std::string markdown, json, recommendation;
};

AuditDocuments render_audit(const AuditResult& a) {
  return {audit_markdown(a), audit_json(a).dump(2) + "\n", recommendation_text(a)};
}

// What the report's tables say of one audit: the per-head-exact share, the fastest bit-identical
// plan against today's shard path, the fused matrices and whether per_head applies to them, and
// for MoE models the two placements of the routed experts.
json summary_of(const AuditResult& a) {
  const Recommendation& r = a.recommendation;
  json fused = json::array();
  for (const auto& pa : a.params)
    if (!pa.parts.empty())
      fused.push_back({{"matrix", pa.param.name}, {"kind", fused_kind_name(pa.param.fused)}, {"per_head_applies", pa.per_head_applies}});
  json experts = nullptr;
  if (const auto& e = a.totals.experts)
    experts = {{"deepspeed", expert_placement_name(e->deepspeed)},
               {"expert_parallel_s", e->expert_parallel.step_time_s},
               {"tensor_parallel_exact_s", e->tensor_parallel_exact.step_time_s},
               {"tensor_parallel_shard_s", e->tensor_parallel_shard.step_time_s},
               {"tensor_parallel_exact_bytes", e->tensor_parallel_exact.bytes_sent_max_rank}};
  return {{"family", a.model.model_type},
          {"per_head_fraction_params", r.per_head_fraction_params},
          {"per_head_fraction_flops", r.per_head_fraction_flops},
          {"shard_step_time_s", r.shard_step_time_s},
          {"bit_identical_plan", plan_name(r.bit_identical.plan)},
          {"bit_identical_step_time_s", r.bit_identical.step_time_s},
          {"bit_identical_vs_shard_s", r.bit_identical.vs_shard_s},
          {"fused", fused},
          {"experts", experts}};
}

json audit_one(const fs::path& config, int tp, const fs::path& audit_dir,
               const std::function<std::string(const std::exception&)>& failure_text) {
  const std::string stem = fmt::format("{}_tp{}", config.stem().string(), tp);
  json entry{{"tp", tp}};
  try {
    const AuditResult audit = run_audit(load_model_config(config.string()), audit_options(tp));
    entry["summary"] = summary_of(audit);
    const AuditDocuments docs = render_audit(audit);
    write_file_atomically((audit_dir / (stem + ".md")).string(), docs.markdown);
    write_file_atomically((audit_dir / (stem + ".json")).string(), docs.json);
    entry["markdown"] = "audit/" + stem + ".md";
    entry["json"] = "audit/" + stem + ".json";
    entry["recommendation"] = docs.recommendation;
  } catch (const std::exception& e) {
    entry["error"] = failure_text(e);
  }
  return entry;
}

// The TP x DP audits: every config at tp 8 (one NVLink node) with 8 and 64 data-parallel
// ranks, ZeRO's flat partition (DeepSpeed's); the report cites the step totals and the owner load
// balance, the markdown file holds every matrix's strategies.
constexpr int kMeshTp = 8;
constexpr int kMeshDps[] = {8, 64};

json mesh_summary_of(const MeshAudit& m) {
  const auto step_s = [&m](DpStage stage, Strategy s) { return m.step({stage, s}).step_time_s; };
  json loads = json::object();
  for (const OwnerLoad& l : m.owner_loads)
    loads[std::string(owner_assignment_name(l.assignment))] = {{"step_imbalance", l.step_imbalance},
                                                               {"worst_layer_imbalance", l.worst_layer_imbalance},
                                                               {"dp_owner_gather_step_time_s", l.gather_step_time_s}};
  int block_applies = 0;
  for (const MeshParamAudit& pa : m.params) block_applies += pa.strategy({DpStage::mesh, Strategy::shard}).applicable ? 1 : 0;
  return {{"matrices_per_step", m.owner_loads.front().matrices_per_step},
          {"fastest_bit_identical", m.fastest_bit_identical_step ? json(mesh_strategy_name(*m.fastest_bit_identical_step)) : json(nullptr)},
          {"fastest_bit_identical_step_time_s", m.fastest_bit_identical_step ? m.step(*m.fastest_bit_identical_step).step_time_s : 0.0},
          {"dp_gather_gather_step_time_s", step_s(DpStage::dp_gather, Strategy::gather)},
          {"dp_gather_shard_step_time_s", step_s(DpStage::dp_gather, Strategy::shard)},
          {"mesh_shard_step_time_s", m.step({DpStage::mesh, Strategy::shard}).applies_to_every_matrix
                                         ? json(step_s(DpStage::mesh, Strategy::shard))
                                         : json(nullptr)},
          {"owner_load", loads},
          {"matrices_per_layer", m.params.size()},
          {"block_matrices", block_applies}};
}

json mesh_audit_one(const fs::path& config, int dp, const fs::path& audit_dir,
                    const std::function<std::string(const std::exception&)>& failure_text) {
  const std::string stem = fmt::format("{}_tp{}_dp{}", config.stem().string(), kMeshTp, dp);
  json entry{{"tp", kMeshTp}, {"dp", dp}, {"dp_partition", "zero"}};
  try {
    AuditOptions o = audit_options(kMeshTp);
    o.dp = dp;
    const AuditResult audit = run_audit(load_model_config(config.string()), o);
    entry["summary"] = mesh_summary_of(*audit.mesh);
    write_file_atomically((audit_dir / (stem + ".md")).string(), mesh_audit_markdown(*audit.mesh));
    entry["markdown"] = "audit/" + stem + ".md";
  } catch (const std::exception& e) {
    entry["error"] = failure_text(e);
  }
  return entry;
}

}  // namespace

json run_report_audits(const std::string& models_dir, const std::vector<int>& tps, const std::string& out_dir,
                       const std::function<std::string(const std::exception&)>& failure_text) {
  std::vector<fs::path> configs;
  if (fs::is_directory(models_dir))
    for (const auto& e : fs::directory_iterator(models_dir))
      if (e.path().extension() == ".json") configs.push_back(e.path());
  std::sort(configs.begin(), configs.end());
  const fs::path audit_dir = fs::path(out_dir) / "audit";
  if (!configs.empty()) fs::create_directories(audit_dir);
  json per_config = json::array();
  for (const auto& cfg : configs) {
    json runs = json::array();
    for (int tp : tps) runs.push_back(audit_one(cfg, tp, audit_dir, failure_text));
    json meshes = json::array();
    for (int dp : kMeshDps) meshes.push_back(mesh_audit_one(cfg, dp, audit_dir, failure_text));
    per_config.push_back({{"config", cfg.filename().string()}, {"runs", runs}, {"meshes", meshes}});
  }
  return {{"models", models_dir}, {"tps", tps}, {"configs", per_config}};
}

}  // namespace nsv::engine
