// The training study's statistics (report.json "training"): per checkpoint and parameter the
// update difference at each tp and the gradient's spectrum, their trend over training and how
// the two go together.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "nsv/strategy.hpp"
#include "nsv/engine/rank_correlation.hpp"
#include "nsv/engine/report_training.hpp"

namespace nsv::engine {
namespace {

using nlohmann::json;

const StepOutcome* find_run(const StepRuns& runs, int tp, Strategy s, ScaleFrom scale) {
  return find_step(runs, tp, std::string(strategy_name(s)), scale);
}

double mean_of(const std::vector<double>& v) { return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()); }

// The rel. diff of parameter i under (s, scale) at each tp; null where it did not run.
json per_tp(const TrainingCheckpoint& c, const std::vector<int>& tps, std::size_t i, Strategy s, ScaleFrom scale) {
  json cells = json::array();
  for (int tp : tps) {
    const StepOutcome* out = find_run(c.runs, tp, s, scale);
    cells.push_back(out ? json(out->steps[0][i].rel_diff) : json(nullptr));
  }
  return cells;
}

json checkpoint_rows(const TrainingCheckpoint& c, const std::vector<int>& tps) {
  json rows = json::array();
  const auto& params = c.runs.front().second.steps[0];
  for (std::size_t i = 0; i < params.size(); ++i) {
    double allreduce_max = 0;
    bool exact_identical = true, per_head_applies = false;
    double per_head = 0;
    for (int tp : tps)
      for (Strategy s : kAllStrategies) {
        const StepOutcome* out = find_run(c.runs, tp, s, ScaleFrom::global);
        if (!out) continue;
        const ParamStep& r = out->steps[0][i];
        const StrategyRecord& rec = strategy_record(s);
        if (rec.operand == Operand::sharded_frame) allreduce_max = std::max(allreduce_max, r.rel_diff);
        if (rec.promise == Promise::bit_identical && r.note.empty()) exact_identical = exact_identical && r.bit_identical;
        if (s == Strategy::per_head && r.note.empty() && tp == tps.front()) {
          per_head_applies = true;
          per_head = r.rel_diff_vs_whole;
        }
      }
    const RankMeasures& rm = c.spectra[i].second;
    rows.push_back({{"param", params[i].param.name}, {"shape", std::to_string(params[i].param.rows) + "x" + std::to_string(params[i].param.cols)},
                    {"min_side", rm.min_side}, {"stable_rank", rm.stable_rank}, {"effective_rank", rm.effective_rank},
                    {"effective_rank_fraction", rm.effective_rank / static_cast<double>(rm.min_side)},
                    {"shard_local", per_tp(c, tps, i, Strategy::shard, ScaleFrom::local)},
                    {"shard_global", per_tp(c, tps, i, Strategy::shard, ScaleFrom::global)},
                    {"allreduce_max", allreduce_max}, {"exact_identical", exact_identical},
                    {"per_head_vs_whole", per_head_applies ? json(per_head) : json(nullptr)}});
  }
  return rows;
}

// Per strategy (global scale) over the checkpoint's parameters and tps: the largest rel. diff and
// how many (parameter, tp) cases were bit-identical, of those the strategy applies to.
json strategy_summary(const TrainingCheckpoint& c, const std::vector<int>& tps) {
  json out = json::array();
  for (Strategy s : kAllStrategies) {
    double worst = 0;
    std::size_t identical = 0, cases = 0;
    for (int tp : tps)
      if (const StepOutcome* run = find_run(c.runs, tp, s, ScaleFrom::global))
        for (const ParamStep& r : run->steps[0])
          if (r.note.empty()) {
            ++cases;
            identical += r.bit_identical ? 1 : 0;
            worst = std::max(worst, r.rel_diff);
          }
    out.push_back({{"strategy", strategy_name(s)}, {"max_rel_diff", worst}, {"bit_identical", identical}, {"cases", cases}});
  }
  return out;
}

json model_summary(const json& m) {
  const json& losses = m.at("loss_per_step");
  const json& evals = m.at("eval_loss");
  json steps = json::array();
  for (const json& c : m.at("checkpoints")) steps.push_back(c.at("step"));
  return {{"name", m.at("name")}, {"layers", m.at("layers")}, {"dumped_layer", m.at("dumped_layer")},
          {"train_steps", losses.size() - 1}, {"loss_first", losses.front()}, {"loss_last", losses.back()},
          {"eval_first", evals.front().at("loss")}, {"eval_last", evals.back().at("loss")},
          {"loss_per_step", losses}, {"eval_loss", evals}, {"checkpoint_steps", steps}};
}

}  // namespace

json training_stats(const TrainingRuns& t) {
  if (t.checkpoints.empty()) return {{"available", false}, {"dir", t.dir}};
  const std::vector<int> tps = step_tps(t.checkpoints.front().runs);
  const json& d = t.description;

  json models = json::array();
  for (const json& m : d.at("models")) models.push_back(model_summary(m));

  json checkpoints = json::array();
  std::vector<double> erank, srank;
  std::vector<std::vector<double>> shard_global(tps.size()), shard_local(tps.size());
  double allreduce_max = 0;
  std::size_t exact_cases = 0, exact_identical = 0;
  for (const TrainingCheckpoint& c : t.checkpoints) {
    const json rows = checkpoint_rows(c, tps);
    json mean_local = json::array(), mean_global = json::array();
    for (std::size_t k = 0; k < tps.size(); ++k) {
      std::vector<double> loc, glo;
      for (const json& r : rows) {
        loc.push_back(r["shard_local"][k].get<double>());
        glo.push_back(r["shard_global"][k].get<double>());
      }
      mean_local.push_back(mean_of(loc));
      mean_global.push_back(mean_of(glo));
      shard_local[k].insert(shard_local[k].end(), loc.begin(), loc.end());
      shard_global[k].insert(shard_global[k].end(), glo.begin(), glo.end());
    }
    std::vector<double> fractions, stable;
    for (const json& r : rows) {
      stable.push_back(r["stable_rank"].get<double>());
      erank.push_back(r["effective_rank_fraction"].get<double>());
      srank.push_back(r["stable_rank"].get<double>());
      fractions.push_back(r["effective_rank_fraction"].get<double>());
      allreduce_max = std::max(allreduce_max, r["allreduce_max"].get<double>());
      ++exact_cases;
      exact_identical += r["exact_identical"].get<bool>() ? 1 : 0;
    }
    checkpoints.push_back({{"model", c.model}, {"layers", c.layers}, {"layer", c.layer}, {"step", c.step}, {"loss", c.loss},
                           {"params", rows}, {"strategies", strategy_summary(c, tps)}, {"mean_shard_local", mean_local}, {"mean_shard_global", mean_global},
                           {"mean_effective_rank_fraction", mean_of(fractions)}, {"mean_stable_rank", mean_of(stable)}});
  }

  json correlation = json::array();
  for (std::size_t k = 0; k < tps.size(); ++k)
    correlation.push_back({{"tp", tps[k]}, {"n", erank.size()},
                           {"effective_rank_vs_shard_global", spearman(erank, shard_global[k])},
                           {"stable_rank_vs_shard_global", spearman(srank, shard_global[k])},
                           {"effective_rank_vs_shard_local", spearman(erank, shard_local[k])},
                           // A rank-one G = u v^T cut into tp equal-norm blocks u_r v^T: each block's NS is
                           // f u_r v^T / (|u_r| |v|), the whole's block f u_r v^T / (|u| |v|) (the same f: both
                           // normalize their one singular value to 1), so block r differs by |1 - |u_r| / |u||
                           // and the whole by sqrt(tp (1 - 1/sqrt(tp))^2) = sqrt(tp) - 1.
                           {"rank_one_rel_diff", std::sqrt(static_cast<double>(tps[k])) - 1.0}});
  json overall = json::array();
  for (std::size_t k = 0; k < tps.size(); ++k) {
    const auto [lo, hi] = std::minmax_element(shard_local[k].begin(), shard_local[k].end());
    overall.push_back({{"tp", tps[k]}, {"shard_local_min", *lo}, {"shard_local_max", *hi}});
  }
  const auto [rmin, rmax] = std::minmax_element(erank.begin(), erank.end());
  return {{"available", true},
          {"dir", t.dir},
          {"tps", tps},
          {"hyper", d.at("hyper")},
          {"corpus", {{"package", d.at("corpus").at("package")}, {"files", d.at("corpus").at("files").size()},
                      {"tokens", d.at("corpus").at("tokens")}}},
          {"torch_version", d.at("torch_version")},
          {"models", models},
          {"checkpoints", checkpoints},
          {"correlation", correlation},
          {"shard_local_range", overall},
          {"effective_rank_fraction_range", {{"min", *rmin}, {"max", *rmax}}},
          {"allreduce_max", allreduce_max},
          {"exact_cases", exact_cases},
          {"exact_identical", exact_identical}};
}

}  // namespace nsv::engine
