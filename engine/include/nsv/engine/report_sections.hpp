#pragma once
// Running the sections of `nsv report`, each writing its data files into the output folder.
#include <string>
#include <vector>

#include "nsv/engine/amplification.hpp"
#include "nsv/strategy.hpp"
#include "nsv/engine/report_plan.hpp"
#include "nsv/engine/report_stats.hpp"
#include "nsv/engine/sweep_engine.hpp"

namespace nsv::engine {

struct SectionOptions {
  std::string out_dir;
  bool resume = false, progress = true;
  int threads = 0;
};

// <out_dir>/<name>.csv
SweepOutcome run_report_sweep(const SweepSpec&, const std::string& name, const SectionOptions&);
// <out_dir>/amplification.csv
std::vector<AmplificationRow> run_report_amplification(AmplificationSpec, const SectionOptions&);
// The Muon step the report runs on a gradient folder: the plan's lr and momentum, one strategy,
// tp and scale source (the step table and the training study both run these).
StepSpec report_step_spec(const ReportPlan&, const std::string& grads_dir, int tp, Strategy, ScaleFrom);
// Every strategy x tp x scale source on the gradients of grads_dir: <out_dir>/step.csv and
// step.json. Empty (and nothing written) without gradient fixtures.
// <out_dir>/gram_stability.csv; report.json's section, with the stress-test comparison read from
// <out_dir>/gram_stress.csv when that file is there.
nlohmann::json run_report_gram_stability(const ReportPlan&, const SectionOptions&);
// Dao-AILab's stress test (minutes): <out_dir>/gram_stress.csv.
void run_report_gram_stress(const ReportPlan&, const SectionOptions&);
StepRuns run_report_steps(const ReportPlan&, const std::string& grads_dir, const SectionOptions&);

}  // namespace nsv::engine
