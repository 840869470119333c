// report.json's "step" (§5 of README.md; engine/report_step_stats.cpp step_stats) from the step
// engine's runs, against the section's definitions evaluated here by scanning the runs:
//
// RS9  at the seed's tp (2): "today" is shard with the local scale; the headline is its first
//      matrix; per matrix, today's figures and each strategy's with the global scale (null where
//      it did not run), applicable where the run has no fallback note; the range of today's
//      cosines and of the all-reduce strategies' rel. diffs; the all-reduce strategies'
//      bit-identical matrices with their rel. diff at the next larger tp the runs have; gather
//      with the local scale where it is not bit-identical (the aspect scale alone), with rank 0's
//      shard shape and the first rank's scale; per_head against whole where it applies; per
//      matrix shard's rel. diff and cosine at every tp, both scales; the Muon settings and the
//      model's dimensions as the first run has them. Without shard's two runs at tp 2 the
//      section says it is not available.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "check.hpp"
#include "nsv/engine/report_stats.hpp"
#include "nsv/strategy.hpp"
#include "studies/exact_values.hpp"
#include "studies/step_runs.hpp"

using namespace nsv;
using namespace nsv::engine;
using nlohmann::json;
using nsv::checks::assert_range;
using nsv::checks::run_of;

namespace {

std::string shape(std::int64_t r, std::int64_t c) { return std::to_string(r) + "x" + std::to_string(c); }

void assert_param_figures(const json& got, const ParamStep& r) {
  RC_ASSERT(got.at("param") == r.param.name && got.at("shape") == shape(r.param.rows, r.param.cols));
  RC_ASSERT(got.at("split_axis") == r.param.split_axis && got.at("rel_diff") == r.rel_diff && got.at("cosine") == r.cosine);
  RC_ASSERT(got.at("bit_identical") == r.bit_identical && got.at("applicable") == r.note.empty());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(study_report_stats)

NSV_PROPERTY(RS9_the_step_table_is_its_runs_scanned, ()) {
  const std::vector<int> tps = *rc::gen::element(std::vector<int>{2}, std::vector<int>{2, 4}, std::vector<int>{2, 4, 8});
  const StepRuns runs = *nsv::checks::step_runs(tps, true);
  const json got = step_stats(runs, "fixtures/grads");
  const std::size_t params = nsv::checks::drawn_params().size();
  RC_ASSERT(got.at("available") == true && got.at("grads") == "fixtures/grads" && got.at("tp") == 2);
  const StepSpec& first = runs.front().first;
  RC_ASSERT(got.at("muon").at("lr") == first.muon.lr && got.at("muon").at("momentum") == first.muon.beta);
  RC_ASSERT(got.at("muon").at("ns_steps") == first.muon.ns.steps && got.at("muon").at("nesterov") == first.muon.nesterov);
  RC_ASSERT(got.at("dims").at("hidden") == runs.front().second.dims.hidden && got.at("init_std") == 0.02);

  const auto today = [&](std::size_t i) { return run_of(runs, 2, Strategy::shard, ScaleFrom::local, i); };
  const ParamStep& q = *today(0);
  const json& h = got.at("headline");
  RC_ASSERT(h.at("param") == q.param.name && h.at("rel_diff") == q.rel_diff && h.at("cosine") == q.cosine);
  RC_ASSERT(h.at("norm_tp1") == q.norm_1 && h.at("norm_tpN") == q.norm_n && h.at("norm_ratio") == q.norm_ratio);

  RC_ASSERT(got.at("per_param").size() == params);
  std::vector<double> cosines, allreduce;
  for (std::size_t i = 0; i < params; ++i) {
    const json& row = got.at("per_param").at(i);
    assert_param_figures(row.at("today"), *today(i));
    cosines.push_back(today(i)->cosine);
    for (Strategy s : kAllStrategies) {
      const json* cell = nullptr;
      for (const json& c : row.at("strategies"))
        if (c.at("strategy") == strategy_name(s)) cell = &c;
      RC_ASSERT(cell != nullptr);
      const ParamStep* r = run_of(runs, 2, s, ScaleFrom::global, i);
      RC_ASSERT(cell->at("result").is_null() == (r == nullptr));
      if (r) assert_param_figures(cell->at("result"), *r);
    }
  }
  assert_range(got.at("today_cosine"), cosines);
  for (Strategy s : {Strategy::gram_allreduce, Strategy::gram_restart_allreduce})
    for (std::size_t i = 0; i < params; ++i)
      if (const ParamStep* r = run_of(runs, 2, s, ScaleFrom::global, i)) allreduce.push_back(r->rel_diff);
  assert_range(got.at("allreduce_rel_diff"), allreduce);

  // The coincidences: the next larger tp the runs have, whatever order they list them in.
  std::optional<int> next;
  for (const auto& [spec, out] : runs)
    if (spec.tp > 2 && (!next || spec.tp < *next)) next = spec.tp;
  json coincidences = json::array();
  for (Strategy s : {Strategy::gram_allreduce, Strategy::gram_restart_allreduce})
    for (std::size_t i = 0; i < params; ++i)
      if (const ParamStep* r = run_of(runs, 2, s, ScaleFrom::global, i); r && r->bit_identical) {
        const ParamStep* there = next ? run_of(runs, *next, s, ScaleFrom::global, i) : nullptr;
        coincidences.push_back({{"strategy", strategy_name(s)}, {"param", r->param.name},
                                {"next_tp", there ? json(*next) : json(nullptr)},
                                {"next_rel_diff", there ? json(there->rel_diff) : json(nullptr)}});
      }
  RC_ASSERT(got.at("coincidences") == coincidences);

  json alone = json::array(), per_head = json::array();
  for (std::size_t i = 0; i < params; ++i) {
    if (const ParamStep* g = run_of(runs, 2, Strategy::gather, ScaleFrom::local, i); g && !g->bit_identical)
      alone.push_back({{"param", g->param.name}, {"shape", shape(g->param.rows, g->param.cols)},
                       {"shard_shape", shape(g->rank0_shard.first, g->rank0_shard.second)}, {"rel_diff", g->rel_diff},
                       {"norm_ratio", g->norm_ratio}, {"scale_tp1", g->scale_1}, {"scale_tpN", g->scales_n.front()}});
    if (const ParamStep* p = run_of(runs, 2, Strategy::per_head, ScaleFrom::global, i); p && p->note.empty())
      per_head.push_back({{"param", p->param.name}, {"rel_diff_vs_whole", p->rel_diff_vs_whole}});
  }
  RC_ASSERT(got.at("aspect_scale_alone") == alone);
  RC_ASSERT(got.at("per_head_vs_whole") == per_head);

  std::vector<int> listed;
  for (const auto& [spec, out] : runs)
    if (std::find(listed.begin(), listed.end(), spec.tp) == listed.end()) listed.push_back(spec.tp);
  const json& by_tp = got.at("shard_vs_tp");
  RC_ASSERT(by_tp.at("tps").get<std::vector<int>>() == listed);
  for (std::size_t i = 0; i < params; ++i)
    for (const auto& [scale, key] : {std::pair{ScaleFrom::local, "local"}, std::pair{ScaleFrom::global, "global"}})
      for (std::size_t k = 0; k < listed.size(); ++k) {
        const json& cell = by_tp.at("rows").at(i).at(key).at(k);
        const ParamStep* r = run_of(runs, listed[k], Strategy::shard, scale, i);
        RC_ASSERT(cell.at("tp") == listed[k]);
        RC_ASSERT(cell.at("rel_diff") == (r ? json(r->rel_diff) : json(nullptr)) && cell.at("cosine") == (r ? json(r->cosine) : json(nullptr)));
      }
}

BOOST_AUTO_TEST_CASE(RS9_without_shards_two_runs_at_tp_2_the_step_is_not_available) {
  const StepRuns none;
  BOOST_TEST(step_stats(none, "fixtures/grads").at("available") == false);
}

BOOST_AUTO_TEST_SUITE_END()
