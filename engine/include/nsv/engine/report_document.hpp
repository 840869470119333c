#pragma once
// report.json, assembled: its skeleton (schema, the strategy table, the plan), each section's
// object under its key, and the order a full report computes them in. The front end (`nsv
// report`) times each step, adds what only it knows (the command, the commit, the figures' note),
// writes the file, draws the figures and renders README.md; it computes no figure.
#include <exception>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "nsv/engine/report_plan.hpp"
#include "nsv/engine/report_sections.hpp"

namespace nsv::engine {

// Where the report reads its fixtures, and how a failed audit reads in report.json.
struct ReportInputs {
  std::string grads = "fixtures/grads", models = "fixtures/models", runs = "fixtures/runs", training = "fixtures/training";
  std::function<std::string(const std::exception&)> failure_text = [](const std::exception& e) { return std::string(e.what()); };
};

// A section `nsv report --only NAME` reruns on its own into an existing report.json.
struct ReportSection {
  std::string key;  // report.json's key; empty: the section writes several keys, its result's members
  std::function<nlohmann::json(const ReportInputs&, const ReportPlan&, const SectionOptions&)> run;
};
// By --only name: sweeps (their statistics from the CSVs in the output folder, resumed), audits,
// diagnosis, step, schedules, gram_stability, gram_stress (the stress test, then gram_stability),
// training.
const std::map<std::string, ReportSection>& report_sections();

// {"schema", "run": {"timings": []}, "strategies", "plan"}: what every report.json starts with.
nlohmann::json report_skeleton(const ReportPlan&);

// Reruns one section into `report`, whose other sections stay; the plan is the current one.
void rerun_report_section(nlohmann::json& report, const std::string& name, const ReportInputs&, const ReportPlan&, const SectionOptions&);

// A step of the full report: runs it and returns the words its timing line says.
using ReportStep = std::function<std::string()>;
// Computes every section of a full report into `report` (from report_skeleton), each step
// handed to `timed` (which runs it); returns the main sweep's thread count.
int run_full_report(nlohmann::json& report, const ReportInputs&, const ReportPlan&, const SectionOptions&,
                    const std::function<void(const ReportStep&)>& timed);

}  // namespace nsv::engine
