#pragma once
// The report's diagnosis section: `nsv diagnose` on the checked-in training runs (fixtures/runs,
// tools/make_grads.py --runs) for every tp and semantics they hold.
#include <nlohmann/json.hpp>
#include <string>

namespace nsv::engine {

// report.json's "diagnosis": {available, runs, config, cases: [{tp, run, command, diagnosis}]},
// each diagnosis an nsv.diagnose/1 document; also written to <out_dir>/diagnosis.json.
// {available: false, runs} when runs_dir holds no runs.json.
nlohmann::json run_report_diagnosis(const std::string& runs_dir, const std::string& config, const std::string& out_dir);

}  // namespace nsv::engine
