#pragma once
// Drawn runs of the step engine, as the report's step table and training study hold them: per
// tp, every strategy with the global scale, shard and gather with the local scale too; per_head
// refused (a note) on the matrices without heads on the split rows. Figures are multiples of
// 1/64 (exact_values.hpp). `keep` draws whether a run other than shard's at tp 2 is there (a run
// the plan did not have); `shuffled` lists the tps in a drawn order.
#include <rapidcheck.h>

#include <algorithm>
#include <string>
#include <vector>

#include "nsv/engine/report_stats.hpp"
#include "nsv/strategy.hpp"
#include "studies/exact_values.hpp"

namespace nsv::checks {

struct DrawnParam {
  std::string name;
  std::int64_t rows, cols;
  int split_axis;
  bool heads_on_rows;
};

inline const std::vector<DrawnParam>& drawn_params() {
  static const std::vector<DrawnParam> params{{"q_proj", 64, 64, 0, true}, {"o_proj", 64, 64, 1, false}, {"down_proj", 64, 128, 1, false}};
  return params;
}

// Matrix `param`'s row of the run at (tp, s, scale), or null where there is none.
inline const engine::ParamStep* run_of(const engine::StepRuns& runs, int tp, Strategy s, ScaleFrom scale, std::size_t param) {
  for (const auto& [spec, out] : runs)
    if (spec.tp == tp && spec.strategy == strategy_name(s) && spec.muon.scale_from == scale) return &out.steps[0][param];
  return nullptr;
}

inline rc::Gen<engine::StepRuns> step_runs(const std::vector<int>& plan_tps, bool drop_runs) {
  return rc::gen::exec([plan_tps, drop_runs] {
    std::vector<int> tps = plan_tps;
    if (*rc::gen::arbitrary<bool>()) std::reverse(tps.begin(), tps.end());
    engine::StepRuns runs;
    for (int tp : tps)
      for (Strategy s : kAllStrategies)
        for (ScaleFrom scale : {ScaleFrom::global, ScaleFrom::local}) {
          if (scale == ScaleFrom::local && s != Strategy::shard && s != Strategy::gather) continue;
          const bool needed = tp == 2 && s == Strategy::shard;
          if (drop_runs && !needed && *rc::gen::weightedElement<bool>({{1, true}, {5, false}})) continue;
          engine::StepSpec spec;
          spec.tp = tp;
          spec.strategy = std::string(strategy_name(s));
          spec.muon.scale_from = scale;
          engine::StepOutcome out;
          out.dims = spec.dims;
          out.initializer_range = 0.02;
          out.steps.emplace_back();
          for (const DrawnParam& d : drawn_params()) {
            engine::ParamStep p;
            p.param.name = d.name;
            p.param.rows = d.rows, p.param.cols = d.cols, p.param.split_axis = d.split_axis;
            p.rank0_shard = d.split_axis == 0 ? std::pair{d.rows / tp, d.cols} : std::pair{d.rows, d.cols / tp};
            p.rel_diff = *sixty_fourths(128);
            p.cosine = *sixty_fourths(64);
            p.norm_1 = 1 + *sixty_fourths(64);
            p.norm_n = 1 + *sixty_fourths(64);
            p.norm_ratio = *sixty_fourths(128);
            p.scale_1 = 1 + *sixty_fourths(64);
            for (int rank = 0; rank < tp; ++rank) p.scales_n.push_back(1 + *sixty_fourths(64));
            p.bit_identical = *rc::gen::weightedElement<bool>({{3, true}, {1, false}});
            p.rel_diff_vs_whole = *sixty_fourths(128);
            if (s == Strategy::per_head && !d.heads_on_rows) p.note = "per_head n/a: heads on dim 1 (row-parallel); ran shard";
            out.steps[0].push_back(p);
          }
          runs.emplace_back(spec, out);
        }
    return runs;
  });
}

}  // namespace nsv::checks
