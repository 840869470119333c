#pragma once
// What `nsv report` runs: the four sweeps, the amplification study, the real-gradient steps and
// the audits, each as the spec its engine takes. --quick shrinks seeds and TP degrees.
#include <nlohmann/json.hpp>
#include <vector>

#include "nsv/engine/amplification.hpp"
#include "nsv/engine/gram_stability.hpp"
#include "nsv/engine/gram_stress.hpp"
#include "nsv/engine/schedule_study.hpp"
#include "nsv/engine/sweep_engine.hpp"

namespace nsv::engine {

struct ReportPlan {
  SweepSpec main, seed, aspect, spectrum;
  AmplificationSpec amp;
  std::vector<int> step_tps;
  double step_lr = 0.05, step_momentum = 0.95;  // the seed's Muon settings
  std::vector<int> audit_tps{2, 4, 8};
  GramStabilitySpec gram;  // the Gram NS stability study
  GramStressSpec gram_stress;  // Dao-AILab's stress test (nsv report --only gram_stress: slow, its CSV is kept)
  ScheduleStudySpec schedules;  // schedule_study_plan
};

ReportPlan make_report_plan(bool quick);

// The schedule study as the report runs it: every built-in schedule on small matrices, so that
// the section takes under a minute on one core.
ScheduleStudySpec schedule_study_plan(bool quick);

// Every parameter of the plan, for report.json (the prose names shapes, seeds, TP degrees).
nlohmann::json plan_json(const ReportPlan&);

}  // namespace nsv::engine
