#pragma once
// The per-model audits of `nsv report` (§7): `nsv audit` in-process on every bundled config.
#include <exception>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nsv::engine {

// Audits every models_dir/*.json at each tp with `nsv audit`'s default options, writes
// out_dir/audit/<stem>_tp<N>.md and .json, and returns what the report cites: per config and tp
// the files and the recommendation, or why the audit failed in the front end's words
// (`failure_text`: nsv names an InvalidField's field by its flag, as `nsv audit` would). Per
// config also the TP x DP audits at tp 8, dp 8 and 64 (ZeRO's partition): out_dir/audit/
// <stem>_tp8_dp<N>.md and their summaries ("meshes").
nlohmann::json run_report_audits(const std::string& models_dir, const std::vector<int>& tps, const std::string& out_dir,
                                 const std::function<std::string(const std::exception&)>& failure_text);

}  // namespace nsv::engine
