#include "nsv/engine/report_sections.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "nsv/engine/csv.hpp"
#include "nsv/npy.hpp"
#include "nsv/strategy.hpp"

namespace nsv::engine {
namespace fs = std::filesystem;
namespace {

std::string out_path(const SectionOptions& o, const std::string& file) { return (fs::path(o.out_dir) / file).string(); }

void write_step_files(const StepRuns& steps, const SectionOptions& o) {
  nlohmann::json all = nlohmann::json::array();
  std::string csv = csv_line({"param", "rows", "cols", "role", "split_axis", "tp", "strategy_requested", "strategy_used",
                              "scale_from", "rel_diff", "cosine", "norm_tp1", "norm_tpN", "norm_ratio", "bit_identical",
                              "rel_diff_vs_whole_tp1", "bytes_sent_max", "flops_max", "note"});
  for (const auto& [spec, out] : steps) {
    all.push_back(out.to_json(spec));
    for (const auto& r : out.steps[0])
      csv += csv_line({r.param.name, std::to_string(r.param.rows), std::to_string(r.param.cols), role_name(r.param.role),
                       std::to_string(r.param.split_axis), std::to_string(spec.tp), spec.strategy, r.strategy,
                       std::string(scale_from_name(spec.muon.scale_from)), fmt::format("{:.9g}", r.rel_diff),
                       fmt::format("{:.9g}", r.cosine), fmt::format("{:.9g}", r.norm_1), fmt::format("{:.9g}", r.norm_n),
                       fmt::format("{:.9g}", r.norm_ratio), r.bit_identical ? "true" : "false",
                       fmt::format("{:.9g}", r.rel_diff_vs_whole), std::to_string(r.bytes_sent), std::to_string(r.flops),
                       r.note});
  }
  write_file_atomically(out_path(o, "step.csv"), csv);
  write_file_atomically(out_path(o, "step.json"), all.dump(1) + "\n");
}

}  // namespace

SweepOutcome run_report_sweep(const SweepSpec& spec, const std::string& name, const SectionOptions& o) {
  SweepRunOptions opt;
  opt.out = out_path(o, name + ".csv");
  opt.resume = o.resume;
  opt.progress = o.progress;
  opt.threads = o.threads;
  opt.label = name;
  return run_sweep(spec, opt);
}

std::vector<AmplificationRow> run_report_amplification(AmplificationSpec spec, const SectionOptions& o) {
  spec.threads = o.threads;
  spec.progress = o.progress;
  const auto rows = run_amplification(spec);
  std::string text = csv_line(amplification_header());
  for (const auto& r : rows) text += csv_line(amplification_fields(spec, r));
  write_file_atomically(out_path(o, "amplification.csv"), text);
  return rows;
}

nlohmann::json run_report_gram_stability(const ReportPlan& plan, const SectionOptions& o) {
  GramStabilitySpec spec = plan.gram;
  spec.threads = o.threads;
  spec.progress = o.progress;
  const auto rows = run_gram_stability(spec);
  std::string text = csv_line(gram_stability_header());
  for (const auto& fields : gram_stability_table(rows)) text += csv_line(fields);
  write_file_atomically(out_path(o, "gram_stability.csv"), text);
  return gram_stability_stats(spec, rows, gram_stress_summary(out_path(o, "gram_stress.csv"), plan.gram_stress));
}

void run_report_gram_stress(const ReportPlan& plan, const SectionOptions& o) {
  GramStressSpec spec = plan.gram_stress;
  spec.threads = o.threads;
  spec.progress = o.progress;
  std::string text = csv_line(gram_stress_header());
  for (const auto& r : run_gram_stress(spec)) text += csv_line(gram_stress_fields(r));
  write_file_atomically(out_path(o, "gram_stress.csv"), text);
}

StepSpec report_step_spec(const ReportPlan& plan, const std::string& grads_dir, int tp, Strategy s, ScaleFrom scale) {
  StepSpec spec;
  spec.grads_dir = grads_dir;
  spec.tp = tp;
  spec.strategy = std::string(strategy_name(s));
  spec.muon.lr = plan.step_lr;
  spec.muon.beta = plan.step_momentum;
  spec.muon.scale_from = scale;
  return spec;
}

StepRuns run_report_steps(const ReportPlan& plan, const std::string& grads_dir, const SectionOptions& o) {
  StepRuns steps;
  if (!fs::is_directory(grads_dir) || available_grad_steps(grads_dir) < 1) return steps;
  for (int tp : plan.step_tps)
    for (ScaleFrom scale : {ScaleFrom::global, ScaleFrom::local})
      for (Strategy s : kAllStrategies) {
        const StepSpec spec = report_step_spec(plan, grads_dir, tp, s, scale);
        steps.emplace_back(spec, run_step(spec));
      }
  write_step_files(steps, o);
  return steps;
}

}  // namespace nsv::engine
