#include "nsv/engine/report_document.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "nsv/engine/report_audits.hpp"
#include "nsv/engine/report_diagnosis.hpp"
#include "nsv/engine/report_schedules.hpp"
#include "nsv/engine/report_stats.hpp"
#include "nsv/engine/report_training.hpp"
#include "nsv/strategy.hpp"

namespace nsv::engine {
namespace {

using nlohmann::json;

json strategy_records_json() {
  json t = json::array();
  for (const StrategyRecord& r : strategy_records())
    t.push_back({{"name", r.name}, {"short_name", r.short_name}, {"target", target_name(r.target)},
                 {"promise", promise_name(r.promise)}, {"summary", r.summary}});
  return t;
}

// The statistics of the four sweeps: several keys of report.json.
json sweep_statistics(const ReportPlan& plan, const SweepOutcome& main, const SweepOutcome& seed, const SweepOutcome& aspect,
                      const SweepOutcome& spectrum) {
  return {{"seed_tables", seed_table_stats(seed.rows)},
          {"strategy_checks", strategy_check_stats(main.rows, main.skipped)},
          {"divergence", divergence_stats(plan, main.rows, aspect.rows, spectrum.rows)},
          {"communication", communication_stats(main.rows)}};
}

void put(json& report, const ReportSection& section, json result) {
  if (section.key.empty())
    report.update(result);
  else
    report[section.key] = std::move(result);
}

}  // namespace

const std::map<std::string, ReportSection>& report_sections() {
  static const std::map<std::string, ReportSection> sections = {
      {"sweeps", {"", [](const ReportInputs&, const ReportPlan& p, SectionOptions o) {
                    o.resume = true;  // only the cases missing from the CSVs run
                    return sweep_statistics(p, run_report_sweep(p.main, "sweep", o), run_report_sweep(p.seed, "seed_sweep", o),
                                            run_report_sweep(p.aspect, "aspect_sweep", o), run_report_sweep(p.spectrum, "spectrum_sweep", o));
                  }}},
      {"audits", {"audits", [](const ReportInputs& in, const ReportPlan& p, const SectionOptions& o) {
                    return run_report_audits(in.models, p.audit_tps, o.out_dir, in.failure_text);
                  }}},
      {"diagnosis", {"diagnosis", [](const ReportInputs& in, const ReportPlan&, const SectionOptions& o) {
                       return run_report_diagnosis(in.runs, (std::filesystem::path(in.models) / "tiny-llama.json").string(), o.out_dir);
                     }}},
      {"step", {"step", [](const ReportInputs& in, const ReportPlan& p, const SectionOptions& o) {
                  return step_stats(run_report_steps(p, in.grads, o), in.grads);
                }}},
      {"schedules", {"schedules", [](const ReportInputs&, const ReportPlan& p, const SectionOptions& o) { return run_report_schedules(p.schedules, o); }}},
      {"gram_stability", {"gram_stability", [](const ReportInputs&, const ReportPlan& p, const SectionOptions& o) { return run_report_gram_stability(p, o); }}},
      {"gram_stress", {"gram_stability", [](const ReportInputs&, const ReportPlan& p, const SectionOptions& o) {
                         run_report_gram_stress(p, o);
                         return run_report_gram_stability(p, o);
                       }}},
      {"training", {"training", [](const ReportInputs& in, const ReportPlan& p, const SectionOptions& o) {
                      return training_stats(run_report_training(p, in.training, o));
                    }}},
  };
  return sections;
}

json report_skeleton(const ReportPlan& plan) {
  return {{"schema", "nsv.report/1"}, {"run", {{"timings", json::array()}}}, {"strategies", strategy_records_json()}, {"plan", plan_json(plan)}};
}

void rerun_report_section(json& report, const std::string& name, const ReportInputs& in, const ReportPlan& plan, const SectionOptions& o) {
  const ReportSection& section = report_sections().at(name);
  put(report, section, section.run(in, plan, o));
  report["plan"] = plan_json(plan);
}

int run_full_report(json& report, const ReportInputs& in, const ReportPlan& plan, const SectionOptions& o,
                    const std::function<void(const ReportStep&)>& timed) {
  SweepOutcome main, seed, aspect, spectrum;
  std::vector<AmplificationRow> amp;
  timed([&] {
    main = run_report_sweep(plan.main, "sweep", o);
    return fmt::format("main sweep ({} cases)", main.rows.size());
  });
  timed([&] {
    seed = run_report_sweep(plan.seed, "seed_sweep", o);
    aspect = run_report_sweep(plan.aspect, "aspect_sweep", o);
    spectrum = run_report_sweep(plan.spectrum, "spectrum_sweep", o);
    return fmt::format("seed, aspect and spectrum sweeps ({} cases)", seed.rows.size() + aspect.rows.size() + spectrum.rows.size());
  });
  timed([&] {
    amp = run_report_amplification(plan.amp, o);
    return std::string("reduction-order amplification study");
  });
  for (const auto& [name, title] : {std::pair{"gram_stability", "Gram NS stability study"},
                                    std::pair{"schedules", "coefficient schedules under sharding"},
                                    std::pair{"step", "real-gradient Muon step"}, std::pair{"audits", "model audits"},
                                    std::pair{"diagnosis", "diagnosis of the training-run dumps"},
                                    std::pair{"training", "gradients from training"}})
    timed([&, name = name, title = title] {
      const ReportSection& section = report_sections().at(name);
      put(report, section, section.run(in, plan, o));
      return std::string(title);
    });
  report.update(sweep_statistics(plan, main, seed, aspect, spectrum));
  report["amplification"] = amplification_stats(plan.amp, amp);
  return main.threads;
}

}  // namespace nsv::engine
