#pragma once
// The per-model audits of `nsv report` (§7): `nsv audit` in-process on every bundled config.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nsv::cli {

// Audits every models_dir/*.json at each tp with `nsv audit`'s default options, writes
// out_dir/audit/<stem>_tp<N>.md and .json, and returns what the report cites: per config and tp
// the files and the recommendation, or why the audit failed.
nlohmann::json run_report_audits(const std::string& models_dir, const std::vector<int>& tps, const std::string& out_dir);

}  // namespace nsv::cli
