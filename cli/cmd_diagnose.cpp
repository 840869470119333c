// nsv diagnose: a training run's tensor dumps at tp = 1 and tp = N, per Muon matrix: how far the
// updates are apart, which semantics each run computed, and whether the run is tp-invariant.
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>

#include "cli_common.hpp"
#include "commands.hpp"
#include "nsv/analysis/diagnose.hpp"
#include "nsv/analysis/model_config.hpp"
#include "nsv/npy.hpp"
#include "nsv/render/diagnosis.hpp"
#include "nsv/analysis/run_dump.hpp"

namespace nsv::cli {
namespace {

// --muon lr=0.02,momentum=0.95,nesterov=true,wd=0: any subset, in any order.
void parse_muon(const std::string& text, MuonConfig& cfg) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    at = comma + 1;
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    const auto bad = [&](const std::string& why) {
      return std::invalid_argument("--muon " + item + ": " + why + " (expected lr=X,momentum=X,nesterov=true|false,wd=X)");
    };
    if (eq == std::string::npos || value.empty()) throw bad("not KEY=VALUE");
    if (key == "nesterov") {
      if (value != "true" && value != "false") throw bad("nesterov is true or false");
      cfg.nesterov = value == "true";
      continue;
    }
    double v = 0;
    std::size_t used = 0;
    try {
      v = std::stod(value, &used);
    } catch (const std::logic_error&) {
      throw bad("not a number");
    }
    if (used != value.size() || !std::isfinite(v)) throw bad("not a number");
    if (key == "lr") {
      if (!(v > 0)) throw bad("lr must be positive");
      cfg.lr = v;
    } else if (key == "momentum") {
      if (!(v >= 0 && v < 1)) throw bad("momentum must be in [0, 1)");
      cfg.beta = v;
    } else if (key == "wd") {
      if (!(v >= 0)) throw bad("wd must be non-negative");
      cfg.weight_decay = v;
    } else {
      throw bad("unknown key '" + key + "'");
    }
  }
}

struct DiagnoseCommand {
  NsOptions ns;
  std::string config, muon, output;
  std::vector<std::string> reference, candidate;
  int tp = 2;
  bool json = false, markdown = false;

  void run() {
    MuonConfig cfg;
    cfg.lr = 0.02;
    parse_muon(muon, cfg);
    cfg.ns = ns.config();
    const ModelConfig model = load_model_config(config);
    // Every tensor's name, rank and shape checked against the model and its layout before its data is read.
    const RunDump ref = load_run_dump(reference, model, 1), cand = load_run_dump(candidate, model, tp);
    if (!output.empty()) refuse_run_input(output, "--output");  // any file read above, under any name
    const Diagnosis d = diagnose(*make_cpu_backend(), ref, cand, model, tp, cfg);
    // On stderr too, so that a user reading only --json or --output is told.
    if (json || !output.empty()) std::fputs(weights_warning(d).c_str(), stderr);
    const std::string out = json ? diagnosis_json(d).dump(1) + "\n" : markdown ? diagnosis_markdown(d) : diagnosis_text(d);
    if (output.empty()) std::fputs(out.c_str(), stdout);
    else write_file_atomically(output, out);
  }
};

}  // namespace

void add_diagnose_command(CLI::App& app) {
  auto st = std::make_shared<DiagnoseCommand>();
  auto* cmd = app.add_subcommand("diagnose",
                                 "diagnose a training run from its tensor dumps (safetensors or .npy) at tp=1 and tp=N: update "
                                 "difference per Muon matrix, which semantics each run computed, tp-invariance");
  cmd->add_option("--config", st->config, "the model's Hugging Face config.json")->required();
  cmd->add_option("--tp", st->tp, "the candidate's tensor-parallel degree")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_option("--reference", st->reference, "tp=1 dump: .safetensors/.npy files or folders (comma-separated)")
      ->required()->delimiter(',');
  cmd->add_option("--candidate", st->candidate, "tp=N dump: files or folders, one file per rank or rank-suffixed names (comma-separated)")
      ->required()->delimiter(',');
  cmd->add_option("--muon", st->muon, "the run's Muon settings: lr=X,momentum=X,nesterov=true|false,wd=X (default lr=0.02,momentum=0.95,nesterov=true,wd=0)");
  st->ns.add_to(*cmd);
  auto* j = cmd->add_flag("--json", st->json, "machine-readable output (schema nsv.diagnose/1)");
  auto* m = cmd->add_flag("--markdown", st->markdown, "markdown tables");
  j->excludes(m);
  cmd->add_option("--output", st->output, "write to FILE (atomically) instead of stdout");
  cmd->callback([st] { st->run(); });
}

}  // namespace nsv::cli
