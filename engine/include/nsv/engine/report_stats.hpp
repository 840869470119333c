#pragma once
// The statistics the report's prose cites, computed from the runs into report.json (one object
// per README section). Formatting and wording live in tools/report/ (the Jinja2 templates);
// comparisons with the seed's figures live there too, with the figures in
// fixtures/seed_reference.json.
#include <cstddef>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "nsv/engine/amplification.hpp"
#include "nsv/engine/report_plan.hpp"
#include "nsv/engine/sweep_row.hpp"
#include "nsv/engine/step_engine.hpp"

namespace nsv::engine {

// Mean, sample standard deviation and range of a list of values.
struct Stats {
  double mean = 0, sd = 0, min = 0, max = 0;
  std::size_t n = 0;
};
Stats stats(const std::vector<double>& v);
nlohmann::json range_json(const Stats&);       // {min, max, n}
nlohmann::json mean_sd_json(const Stats&);     // {mean, sd, n}

std::vector<double> collect(const std::vector<SweepRow>& rows, const std::function<bool(const SweepRow&)>& keep,
                            const std::function<double(const SweepRow&)>& value = [](const SweepRow& r) { return r.rel_diff_mean; });

// Largest |rel. diff gram - rel. diff standard| over the `shard` cases run with both kernels.
nlohmann::json kernel_gap_json(const std::vector<SweepRow>&);

// §1: every (shape, kernel, tp, axis) cell of the seed sweep: rel. diff and per-rank rel. diff.
nlohmann::json seed_table_stats(const std::vector<SweepRow>& seed);
// §2: per strategy, its promise checked over the main sweep.
nlohmann::json strategy_check_stats(const std::vector<SweepRow>& main, const std::map<std::string, std::size_t>& skipped);
// §3: `shard` vs tp and split axis (main sweep), vs aspect ratio, vs spectrum.
nlohmann::json divergence_stats(const ReportPlan&, const std::vector<SweepRow>& main, const std::vector<SweepRow>& aspect,
                                const std::vector<SweepRow>& spectrum);
// §4: bytes, messages, FLOPs and memory per rank of one matrix of the main sweep.
nlohmann::json communication_stats(const std::vector<SweepRow>& main);

using StepRuns = std::vector<std::pair<StepSpec, StepOutcome>>;
// The run of (tp, strategy, scale source) among `steps`, or null; the tps they ran at, in order.
const StepOutcome* find_step(const StepRuns& steps, int tp, const std::string& strategy, ScaleFrom scale);
std::vector<int> step_tps(const StepRuns& steps);
// §5: the real-gradient Muon step (null-like {"available": false} without gradient fixtures).
nlohmann::json step_stats(const StepRuns&, const std::string& grads_dir);
// §6: the reduction-order amplification study.
nlohmann::json amplification_stats(const AmplificationSpec&, const std::vector<AmplificationRow>&);

}  // namespace nsv::engine
