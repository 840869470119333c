#pragma once
// The training study of `nsv report`: the Muon step at tp = 1 and tp = N on
// gradients a model produced while it trained (fixtures/training, tools/make_grads.py --train),
// per checkpoint and parameter, beside the spectra of those gradients.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "nsv/rank_measures.hpp"
#include "nsv/engine/report_plan.hpp"
#include "nsv/engine/report_sections.hpp"
#include "nsv/engine/report_stats.hpp"

namespace nsv::engine {

// One dumped gradient of training: a folder `nsv step --grads` reads, and what ran on it.
struct TrainingCheckpoint {
  std::string model, folder;  // folder: DIR/<model>/ckpt<step>
  int layers = 0, layer = 0, step = 0;
  double loss = 0;
  std::vector<std::pair<std::string, RankMeasures>> spectra;  // per Muon matrix, in layer order
  StepRuns runs;                                              // every (tp, strategy, scale) of the plan
};

struct TrainingRuns {
  std::string dir;
  nlohmann::json description;  // DIR/training.json as read (loss curves, hyper-parameters, corpus)
  std::vector<TrainingCheckpoint> checkpoints;
};

// Reads DIR/training.json, runs every strategy at every tp of the plan (global scale, and `shard`
// with the local scale too) on each checkpoint it lists, and writes <out_dir>/training.csv.
// Empty (nothing written) when DIR/training.json does not exist; a malformed one is refused
// with the file and the field.
TrainingRuns run_report_training(const ReportPlan&, const std::string& dir, const SectionOptions&);

// report.json's "training": every number the template cites and the figure draws.
nlohmann::json training_stats(const TrainingRuns&);

}  // namespace nsv::engine
