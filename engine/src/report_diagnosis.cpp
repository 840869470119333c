#include "nsv/engine/report_diagnosis.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "nsv/backend.hpp"
#include "nsv/config_schema.hpp"
#include "nsv/input_file.hpp"
#include "nsv/analysis/model_config.hpp"
#include "nsv/npy.hpp"
#include "nsv/render/diagnosis.hpp"
#include "nsv/analysis/run_dump.hpp"

namespace nsv::engine {
namespace fs = std::filesystem;

namespace {

// The runs' Muon and NS settings, as tools/make_grads.py recorded them in runs.json (`file`).
MuonConfig muon_of(const nlohmann::json& runs, const std::string& file) {
  const auto& m = runs.at("muon");
  MuonConfig cfg;
  cfg.lr = m.at("lr").get<double>();
  cfg.beta = m.at("momentum").get<double>();
  cfg.nesterov = m.at("nesterov").get<bool>();
  cfg.weight_decay = m.at("wd").get<double>();
  try {  // an unknown name is the file's fault, not an option's
    cfg.ns.kernel = parse_named<Kernel>(m.at("ns").get<std::string>(), "ns");
    cfg.ns.dtype = parse_named<DType>(m.at("ns_dtype").get<std::string>(), "ns_dtype");
  } catch (const InvalidField& e) {
    throw std::invalid_argument(file + ": muon." + e.what());
  }
  cfg.ns.steps = m.at("ns_steps").get<int>();
  return cfg;
}

std::vector<std::string> subfolders(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory()) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

nlohmann::json run_report_diagnosis(const std::string& runs_dir, const std::string& config, const std::string& out_dir) {
  const fs::path runs(runs_dir), description = runs / "runs.json";
  if (!fs::exists(description)) return {{"available", false}, {"runs", runs_dir}};
  const auto meta = nlohmann::json::parse(read_input_file(description.string(), "run description"));
  const MuonConfig cfg = muon_of(meta, description.string());
  const ModelConfig model = load_model_config(config);
  const auto backend = make_cpu_backend();
  const RunDump reference = load_run_dump({(runs / "reference").string()}, model, 1);
  nlohmann::json cases = nlohmann::json::array(), all = nlohmann::json::array();
  for (int tp : meta.at("tps").get<std::vector<int>>()) {
    const fs::path dir = runs / ("tp" + std::to_string(tp));
    for (const std::string& run : subfolders(dir)) {
      const Diagnosis d = diagnose(*backend, reference, load_run_dump({dir.string(), (dir / run).string()}, model, tp), model, tp, cfg);
      const std::string command = "nsv diagnose --config " + config + " --tp " + std::to_string(tp) + " --kernel " +
                                  std::string(kernel_name(cfg.ns.kernel)) + " --reference " + (runs / "reference").string() +
                                  " --candidate " + dir.string() + "," + (dir / run).string();
      cases.push_back({{"tp", tp}, {"run", run}, {"command", command}, {"diagnosis", diagnosis_json(d)}});
      all.push_back(diagnosis_json(d));
    }
  }
  write_file_atomically((fs::path(out_dir) / "diagnosis.json").string(), all.dump(1) + "\n");
  return {{"available", true}, {"runs", runs_dir}, {"config", config}, {"cases", cases}};
}

}  // namespace nsv::engine
