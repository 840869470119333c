#include "nsv/engine/report_audits.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "nsv/audit.hpp"
#include "nsv/model_config.hpp"
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
    per_config.push_back({{"config", cfg.filename().string()}, {"runs", runs}});
  }
  return {{"models", models_dir}, {"tps", tps}, {"configs", per_config}};
}

}  // namespace nsv::engine
