// The real-gradient Muon step (§5) and amplification (§6) statistics of the report.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "nsv/coeffs.hpp"
#include "nsv/strategy.hpp"
#include "nsv/engine/report_stats.hpp"

namespace nsv::engine {
namespace {

using nlohmann::json;

std::string shape_text(std::int64_t rows, std::int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

json param_json(const ParamStep& p) {
  return {{"param", p.param.name}, {"shape", shape_text(p.param.rows, p.param.cols)}, {"split_axis", p.param.split_axis},
          {"rel_diff", p.rel_diff}, {"cosine", p.cosine}, {"bit_identical", p.bit_identical},
          {"applicable", p.note.empty()}};
}

// Per parameter at the table's tp: AutoTP today (shard, local scale) and every strategy with the
// global scale.
json strategy_table(const StepRuns& steps, const StepOutcome& today, int tp) {
  json rows = json::array();
  for (std::size_t i = 0; i < today.steps[0].size(); ++i) {
    json per = json::array();
    for (Strategy s : kAllStrategies) {
      const StepOutcome* out = find_step(steps, tp, std::string(strategy_name(s)), ScaleFrom::global);
      per.push_back(out ? json{{"strategy", strategy_name(s)}, {"result", param_json(out->steps[0][i])}}
                        : json{{"strategy", strategy_name(s)}, {"result", nullptr}});
    }
    rows.push_back({{"today", param_json(today.steps[0][i])}, {"strategies", per}});
  }
  return rows;
}

// Bit-identical results of the all-reduce strategies, with what the same pair gives at the next tp.
json coincidences(const StepRuns& steps, int tp) {
  // The next larger tp the runs have, whatever order they list them in.
  std::optional<int> next;
  for (int t : step_tps(steps))
    if (t > tp && (!next || t < *next)) next = t;
  json out = json::array();
  for (Strategy s : kAllStrategies) {
    if (strategy_record(s).operand != Operand::sharded_frame) continue;
    const std::string name(strategy_name(s));
    const StepOutcome* here = find_step(steps, tp, name, ScaleFrom::global);
    const StepOutcome* there = next ? find_step(steps, *next, name, ScaleFrom::global) : nullptr;
    if (!here) continue;
    for (std::size_t i = 0; i < here->steps[0].size(); ++i)
      if (here->steps[0][i].bit_identical)
        out.push_back({{"strategy", name}, {"param", here->steps[0][i].param.name},
                       {"next_tp", there ? json(*next) : json(nullptr)},
                       {"next_rel_diff", there ? json(there->steps[0][i].rel_diff) : json(nullptr)}});
  }
  return out;
}

json shard_vs_tp(const StepRuns& steps, const StepOutcome& today) {
  const std::vector<int> tps = step_tps(steps);
  json rows = json::array();
  for (std::size_t i = 0; i < today.steps[0].size(); ++i) {
    json row{{"param", today.steps[0][i].param.name}};
    for (auto [scale, key] : {std::pair{ScaleFrom::local, "local"}, std::pair{ScaleFrom::global, "global"}}) {
      json cells = json::array();
      for (int tp : tps)
        if (const StepOutcome* out = find_step(steps, tp, "shard", scale))
          cells.push_back({{"tp", tp}, {"rel_diff", out->steps[0][i].rel_diff}, {"cosine", out->steps[0][i].cosine}});
        else
          cells.push_back({{"tp", tp}, {"rel_diff", nullptr}, {"cosine", nullptr}});
      row[key] = cells;
    }
    rows.push_back(row);
  }
  return {{"tps", tps}, {"rows", rows}};
}

}  // namespace

const StepOutcome* find_step(const StepRuns& steps, int tp, const std::string& strategy, ScaleFrom scale) {
  for (const auto& [spec, out] : steps)
    if (spec.tp == tp && spec.strategy == strategy && spec.muon.scale_from == scale) return &out;
  return nullptr;
}

std::vector<int> step_tps(const StepRuns& steps) {
  std::vector<int> tps;
  for (const auto& [spec, out] : steps)
    if (std::find(tps.begin(), tps.end(), spec.tp) == tps.end()) tps.push_back(spec.tp);
  return tps;
}

json step_stats(const StepRuns& steps, const std::string& grads_dir) {
  constexpr int kTp = 2;  // the seed's comparison
  const StepOutcome* today = find_step(steps, kTp, "shard", ScaleFrom::local);
  if (!today || !find_step(steps, kTp, "shard", ScaleFrom::global)) return {{"available", false}, {"grads", grads_dir}};
  const StepSpec& spec = steps.front().first;
  const auto& d = today->dims;
  const ParamStep& q = today->steps[0][0];

  json aspect_alone = json::array();
  if (const StepOutcome* g = find_step(steps, kTp, "gather", ScaleFrom::local))
    for (const auto& r : g->steps[0])
      if (!r.bit_identical)
        aspect_alone.push_back({{"param", r.param.name}, {"shape", shape_text(r.param.rows, r.param.cols)},
                                {"shard_shape", shape_text(r.rank0_shard.first, r.rank0_shard.second)},
                                {"rel_diff", r.rel_diff}, {"norm_ratio", r.norm_ratio},
                                {"scale_tp1", r.scale_1}, {"scale_tpN", r.scales_n.empty() ? 1.0 : r.scales_n[0]}});
  json per_head = json::array();
  if (const StepOutcome* ph = find_step(steps, kTp, "per_head", ScaleFrom::global))
    for (const auto& r : ph->steps[0])
      if (r.note.empty()) per_head.push_back({{"param", r.param.name}, {"rel_diff_vs_whole", r.rel_diff_vs_whole}});

  std::vector<double> today_cos, allreduce_rd;
  for (const auto& r : today->steps[0]) today_cos.push_back(r.cosine);
  for (Strategy s : kAllStrategies)
    if (strategy_record(s).operand == Operand::sharded_frame)
      if (const StepOutcome* out = find_step(steps, kTp, std::string(strategy_name(s)), ScaleFrom::global))
        for (const auto& r : out->steps[0]) allreduce_rd.push_back(r.rel_diff);

  return {{"available", true},
          {"grads", grads_dir},
          {"tp", kTp},
          {"dims", {{"hidden", d.hidden}, {"heads", d.heads}, {"kv_heads", d.kv_heads}, {"head_dim", d.head_dim},
                    {"intermediate", d.intermediate}, {"layers", d.layers}, {"vocab", d.vocab}}},
          {"init_std", today->initializer_range ? json(*today->initializer_range) : json(nullptr)},
          {"muon", {{"lr", spec.muon.lr}, {"momentum", spec.muon.beta}, {"nesterov", spec.muon.nesterov},
                    {"kernel", kernel_name(spec.muon.ns.kernel)}, {"ns_steps", spec.muon.ns.steps},
                    {"dtype", dtype_name(spec.muon.ns.dtype)}}},
          {"headline", {{"param", q.param.name}, {"rel_diff", q.rel_diff}, {"cosine", q.cosine}, {"norm_tp1", q.norm_1},
                        {"norm_tpN", q.norm_n}, {"norm_ratio", q.norm_ratio}}},
          {"per_param", strategy_table(steps, *today, kTp)},
          {"today_cosine", range_json(stats(today_cos))},
          {"allreduce_rel_diff", range_json(stats(allreduce_rd))},
          {"coincidences", coincidences(steps, kTp)},
          {"aspect_scale_alone", aspect_alone},
          {"per_head_vs_whole", per_head},
          {"shard_vs_tp", shard_vs_tp(steps, *today)}};
}

json amplification_stats(const AmplificationSpec& spec, const std::vector<AmplificationRow>& amp) {
  const double a = builtin_schedule("keller").triples.front().a;  // the NS polynomial's slope at 0
  json rows = json::array();
  for (const auto& sp : spec.spectra)
    for (int k = 1; k <= spec.max_steps; ++k) {
      std::vector<const AmplificationRow*> sel;
      for (const auto& r : amp)
        if (r.spectrum == sp && r.steps == k) sel.push_back(&r);
      const auto mean = [&](double AmplificationRow::*member) {
        double s = 0;
        for (const auto* r : sel) s += r->*member;
        return sel.empty() ? 0.0 : s / static_cast<double>(sel.size());
      };
      rows.push_back({{"spectrum", sp}, {"steps", k}, {"n", sel.size()}, {"a_pow_k", std::pow(a, k)},
                      {"grad_rel_diff", mean(&AmplificationRow::grad_rel)}, {"whole", mean(&AmplificationRow::whole_amp)},
                      {"gram_allreduce_order", mean(&AmplificationRow::ar_order_amp)},
                      {"gram_allreduce_vs_whole", mean(&AmplificationRow::ar_vs_whole)},
                      {"gram_restart_order", mean(&AmplificationRow::rs_order_amp)},
                      {"gram_restart_vs_whole", mean(&AmplificationRow::rs_vs_whole)},
                      {"kernel_err_standard", mean(&AmplificationRow::kernel_err_standard)},
                      {"kernel_err_gram", mean(&AmplificationRow::kernel_err_gram)}});
    }
  // The strategies' distance from whole-matrix NS, in units of the kernel's own fp32 error (S5).
  double worst_ratio = 0;
  std::map<std::string, double> whole_at_max;
  for (const auto& r : amp) {
    worst_ratio = std::max(worst_ratio, r.ar_vs_whole / std::max(r.kernel_err_standard, 1e-300));
    worst_ratio = std::max(worst_ratio, r.rs_vs_whole / std::max(r.kernel_err_gram, 1e-300));
    if (r.steps == spec.max_steps) whole_at_max[r.spectrum] = std::max(whole_at_max[r.spectrum], r.whole_amp);
  }
  json peaks = json::array();
  for (const auto& [sp, v] : whole_at_max) peaks.push_back({{"spectrum", sp}, {"whole", v}});
  return {{"a", a}, {"rows", rows}, {"whole_at_max_steps", peaks}, {"worst_ratio_to_kernel_error", worst_ratio}};
}

}  // namespace nsv::engine
