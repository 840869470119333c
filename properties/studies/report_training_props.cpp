// report.json's "training" (§5c of README.md; engine/report_training_stats.cpp) from the runs on
// each checkpoint, against the section's definitions evaluated here by scanning the runs:
//
// RS8  per checkpoint and parameter: shard's rel. diff at each tp with the local and the global
//      scale, the largest rel. diff of the all-reduce strategies (the sharded_frame operands) over
//      every tp, whether every bit-identical strategy that applies was bit-identical at every tp,
//      per_head against whole at the first tp where it applies, the spectra's ranks and the
//      effective rank's share of the short side; per strategy, its largest rel. diff and its
//      bit-identical cases among those it applies to; the per-tp means of shard's rel. diffs, the
//      means of the ranks; over all checkpoints the ranges, the largest all-reduce rel. diff, the
//      bit-identical counts, and Spearman's correlation (study_rank_correlation checks spearman)
//      of the ranks with shard's rel. diffs, pair by pair as the checkpoints list them; the
//      rank-one figure sqrt(tp) - 1; the models' loss curves and the corpus as the description
//      gives them.
// Runs are drawn as studies/step_runs.hpp draws them (figures multiples of 1/64: sums are exact
// and figures compare with ==).
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "check.hpp"
#include "studies/exact_values.hpp"
#include "studies/step_runs.hpp"
#include "nsv/engine/rank_correlation.hpp"
#include "nsv/engine/report_training.hpp"
#include "nsv/strategy.hpp"

using namespace nsv;
using namespace nsv::engine;
using nlohmann::json;
using nsv::checks::exact_mean;
using nsv::checks::sixty_fourths;

namespace {

rc::Gen<TrainingRuns> training_runs() {
  return rc::gen::exec([] {
    TrainingRuns t;
    t.dir = "fixtures/training";
    const std::vector<int> tps = *rc::gen::element(std::vector<int>{2}, std::vector<int>{2, 4}, std::vector<int>{2, 4, 8});
    const int checkpoints = *rc::gen::element(1, 2, 3);
    json models = json::array();
    json losses = json::array({2.5, 2.0, 1.75}), evals = json::array({{{"step", 0}, {"loss", 2.75}}, {{"step", 2}, {"loss", 2.25}}});
    json steps = json::array();
    for (int c = 0; c < checkpoints; ++c) {
      TrainingCheckpoint k;
      k.model = "tiny", k.folder = "fixtures/training/tiny/ckpt" + std::to_string(c), k.layers = 2, k.layer = 1, k.step = 10 * c;
      k.loss = *sixty_fourths(256);
      for (const auto& param : nsv::checks::drawn_params()) {
        RankMeasures m;
        m.min_side = 64;
        m.stable_rank = 1 + *sixty_fourths(1024);
        m.effective_rank = 1 + *sixty_fourths(2048);
        k.spectra.emplace_back(param.name, m);
      }
      k.runs = *nsv::checks::step_runs(tps, false);
      t.checkpoints.push_back(std::move(k));
      steps.push_back({{"step", 10 * c}});
    }
    models.push_back({{"name", "tiny"}, {"layers", 2}, {"dumped_layer", 1}, {"loss_per_step", losses}, {"eval_loss", evals},
                      {"checkpoints", steps}});
    t.description = {{"models", models}, {"hyper", {{"lr", 0.02}}}, {"torch_version", "1.13"},
                     {"corpus", {{"package", "numpy"}, {"files", json::array({"a.py", "b.py"})}, {"tokens", 1000}}}};
    return t;
  });
}

// Every run is drawn (step_runs without dropping): a missing one is the generator's fault.
const ParamStep& result(const TrainingCheckpoint& c, int tp, Strategy s, ScaleFrom scale, std::size_t param) {
  const ParamStep* r = nsv::checks::run_of(c.runs, tp, s, scale, param);
  if (!r) throw std::logic_error("step_runs drew no run at this tp, strategy and scale");
  return *r;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(study_report_stats)

NSV_PROPERTY(RS8_training_statistics_are_their_runs_scanned, ()) {
  const TrainingRuns t = *training_runs();
  const json got = training_stats(t);
  std::vector<int> tps;
  for (const auto& [spec, out] : t.checkpoints.front().runs)
    if (std::find(tps.begin(), tps.end(), spec.tp) == tps.end()) tps.push_back(spec.tp);
  RC_ASSERT(got.at("available") == true && got.at("dir") == t.dir);
  RC_ASSERT(got.at("tps").get<std::vector<int>>() == tps);
  RC_ASSERT(got.at("hyper") == t.description.at("hyper") && got.at("torch_version") == t.description.at("torch_version"));
  RC_ASSERT(got.at("corpus").at("files").get<std::size_t>() == 2 && got.at("corpus").at("tokens") == 1000);
  const json& model = got.at("models").at(0);
  RC_ASSERT(model.at("train_steps").get<std::size_t>() == 2 && model.at("loss_first") == 2.5 && model.at("loss_last") == 1.75);
  RC_ASSERT(model.at("eval_first") == 2.75 && model.at("eval_last") == 2.25);
  RC_ASSERT(model.at("checkpoint_steps").size() == t.checkpoints.size());

  std::vector<double> erank, srank;
  std::vector<std::vector<double>> global(tps.size()), local(tps.size());
  double allreduce_all = 0;
  std::size_t exact_cases = 0, exact_identical = 0;
  RC_ASSERT(got.at("checkpoints").size() == t.checkpoints.size());
  for (std::size_t ci = 0; ci < t.checkpoints.size(); ++ci) {
    const TrainingCheckpoint& c = t.checkpoints[ci];
    const json& g = got.at("checkpoints").at(ci);
    RC_ASSERT(g.at("step") == c.step && g.at("loss") == c.loss && g.at("model") == c.model);
    std::vector<double> fractions, stables;
    for (std::size_t i = 0; i < nsv::checks::drawn_params().size(); ++i) {
      const json& row = g.at("params").at(i);
      RC_ASSERT(row.at("param") == nsv::checks::drawn_params()[i].name);
      double allreduce = 0;
      bool identical = true;
      json per_head = nullptr;
      for (std::size_t k = 0; k < tps.size(); ++k) {
        const double loc = result(c, tps[k], Strategy::shard, ScaleFrom::local, i).rel_diff;
        const double glo = result(c, tps[k], Strategy::shard, ScaleFrom::global, i).rel_diff;
        RC_ASSERT(row.at("shard_local").at(k) == loc && row.at("shard_global").at(k) == glo);
        local[k].push_back(loc), global[k].push_back(glo);
        for (Strategy s : {Strategy::gram_allreduce, Strategy::gram_restart_allreduce})
          allreduce = std::max(allreduce, result(c, tps[k], s, ScaleFrom::global, i).rel_diff);
        for (Strategy s : {Strategy::gather, Strategy::owner, Strategy::per_head}) {
          const ParamStep& r = result(c, tps[k], s, ScaleFrom::global, i);
          if (r.note.empty()) identical = identical && r.bit_identical;
        }
        const ParamStep& ph = result(c, tps[k], Strategy::per_head, ScaleFrom::global, i);
        if (k == 0 && ph.note.empty()) per_head = ph.rel_diff_vs_whole;
      }
      const RankMeasures& m = c.spectra[i].second;
      RC_ASSERT(row.at("allreduce_max") == allreduce && row.at("exact_identical") == identical && row.at("per_head_vs_whole") == per_head);
      RC_ASSERT(row.at("stable_rank") == m.stable_rank && row.at("effective_rank") == m.effective_rank);
      RC_ASSERT(row.at("effective_rank_fraction") == m.effective_rank / static_cast<double>(m.min_side));
      fractions.push_back(m.effective_rank / static_cast<double>(m.min_side)), stables.push_back(m.stable_rank);
      erank.push_back(fractions.back()), srank.push_back(m.stable_rank);
      allreduce_all = std::max(allreduce_all, allreduce);
      ++exact_cases, exact_identical += identical;
    }
    RC_ASSERT(g.at("mean_effective_rank_fraction") == exact_mean(fractions) && g.at("mean_stable_rank") == exact_mean(stables));
    for (std::size_t k = 0; k < tps.size(); ++k) {
      std::vector<double> loc, glo;
      for (std::size_t i = 0; i < nsv::checks::drawn_params().size(); ++i)
        loc.push_back(result(c, tps[k], Strategy::shard, ScaleFrom::local, i).rel_diff),
            glo.push_back(result(c, tps[k], Strategy::shard, ScaleFrom::global, i).rel_diff);
      RC_ASSERT(g.at("mean_shard_local").at(k) == exact_mean(loc) && g.at("mean_shard_global").at(k) == exact_mean(glo));
    }
    for (Strategy s : kAllStrategies) {
      double worst = 0;
      std::size_t cases = 0, identical = 0;
      for (int tp : tps)
        for (std::size_t i = 0; i < nsv::checks::drawn_params().size(); ++i) {
          const ParamStep& r = result(c, tp, s, ScaleFrom::global, i);
          if (!r.note.empty()) continue;
          ++cases, identical += r.bit_identical, worst = std::max(worst, r.rel_diff);
        }
      const json* summary = nullptr;
      for (const json& x : g.at("strategies"))
        if (x.at("strategy") == strategy_name(s)) summary = &x;
      RC_ASSERT(summary != nullptr);
      RC_ASSERT(summary->at("max_rel_diff") == worst && summary->at("cases") == cases && summary->at("bit_identical") == identical);
    }
  }
  RC_ASSERT(got.at("allreduce_max") == allreduce_all);
  RC_ASSERT(got.at("exact_cases") == exact_cases && got.at("exact_identical") == exact_identical);
  RC_ASSERT(got.at("effective_rank_fraction_range").at("min") == *std::min_element(erank.begin(), erank.end()));
  RC_ASSERT(got.at("effective_rank_fraction_range").at("max") == *std::max_element(erank.begin(), erank.end()));
  for (std::size_t k = 0; k < tps.size(); ++k) {
    const json& cor = got.at("correlation").at(k);
    RC_ASSERT(cor.at("tp") == tps[k] && cor.at("n") == erank.size());
    RC_ASSERT(cor.at("effective_rank_vs_shard_global") == spearman(erank, global[k]));
    RC_ASSERT(cor.at("stable_rank_vs_shard_global") == spearman(srank, global[k]));
    RC_ASSERT(cor.at("effective_rank_vs_shard_local") == spearman(erank, local[k]));
    RC_ASSERT(cor.at("rank_one_rel_diff") == std::sqrt(static_cast<double>(tps[k])) - 1.0);
    const json& range = got.at("shard_local_range").at(k);
    RC_ASSERT(range.at("tp") == tps[k]);
    RC_ASSERT(range.at("shard_local_min") == *std::min_element(local[k].begin(), local[k].end()));
    RC_ASSERT(range.at("shard_local_max") == *std::max_element(local[k].begin(), local[k].end()));
  }
}

BOOST_AUTO_TEST_SUITE_END()
