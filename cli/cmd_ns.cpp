// nsv ns: the kernel on one matrix or a batch, with optional timing.
#include <algorithm>
#include <fmt/format.h>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cli_common.hpp"
#include "commands.hpp"
#include "nsv/backend.hpp"
#include "nsv/config_schema.hpp"
#include "nsv/input_limits.hpp"
#include "nsv/metrics.hpp"
#include "nsv/npy.hpp"
#include "nsv/render/config_json.hpp"

namespace nsv::cli {
namespace {

struct NsCommand {
  NsOptions ns;
  std::string input, output, backend = std::string(name_of(kDefaultBackend));
  int repeat = 1;
  bool json = false, allow_non_finite = false;

  void run() const {
    refuse_output_over_inputs("--output", output, {{"--input", input}, {"--coeffs", ns.coeffs}});
    const NsConfig cfg = ns.config();
    std::vector<long> shape;
    const Batch batch = [&] {  // the parsed array goes as soon as it is copied into matrices
      const NpyArray array = read_npy(input, [&](const std::vector<long>& dims) { require_ns_shape(input, InputShape::of(dims)); });
      shape = array.shape;
      return array.batch();
    }();
    for (const auto& m : batch) require_normalizable(m, cfg, input);
    const auto engine = make_backend(backend);
    std::vector<double> seconds;
    Batch result;
    for (int r = 0; r < repeat; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      result = engine->newton_schulz(batch, cfg);
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const std::vector<double> run_seconds = seconds;  // in run order, for --json
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    std::uint64_t flops = 0;
    double norm2 = 0.0;
    bool finite = true;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      flops += ns_flops(cfg, batch[i].rows(), batch[i].cols());
      norm2 += result[i].squaredNorm();
      finite = finite && all_finite(result[i]);
    }
    if (!finite && !allow_non_finite)
      throw std::runtime_error("the result holds NaN or Inf (the iteration overflowed " + std::string(dtype_name(cfg.dtype)) +
                               "); nothing was written. Use a wider --dtype or another --coeffs, or pass --allow-non-finite "
                               "to write it anyway");
    if (!output.empty()) {
      const bool wide = cfg.dtype == DType::fp64;
      if (shape.size() == 2) write_npy(output, result[0], wide);
      else write_npy(output, result, wide);
    }
    nlohmann::json j = config_json(cfg);
    j.update({{"shape", shape}, {"backend", engine->name()}, {"repeat", repeat}, {"seconds", median}, {"run_seconds", run_seconds}, {"flops", flops},
              {"gflops", flops / median / 1e9}, {"output_norm", std::sqrt(norm2)}, {"finite", finite}, {"output", output}});
    if (json) {
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf("NS %s %s steps=%d coeffs=%s on %s %s: ||X||_F = %.6g, finite = %s\n", kernel_name(cfg.kernel).data(),
                  dtype_name(cfg.dtype).data(), cfg.steps, cfg.coeffs.name.c_str(), j["shape"].dump().c_str(),
                  input.c_str(), std::sqrt(norm2), finite ? "yes" : "NO");
      std::printf("median %.4g s per call over %d run(s), %.3g GFLOP/s (FLOPs of the plain algorithm)\n", median, repeat,
                  flops / median / 1e9);
      if (!output.empty()) std::printf("wrote %s\n", output.c_str());
    }
  }
};

}  // namespace

void add_ns_command(CLI::App& app) {
  auto cmd_state = std::make_shared<NsCommand>();
  auto* cmd = app.add_subcommand("ns", "Newton-Schulz of one matrix (2-D .npy) or a batch (3-D .npy)");
  cmd_state->ns.add_to(*cmd);
  cmd->add_option("--input", cmd_state->input, "input matrix, .npy float32/float64 C order")->required()->check(CLI::ExistingFile);
  cmd->add_option("--output", cmd_state->output, "write the result here (.npy; float64 for --dtype fp64, else float32)");
  cmd->add_option("--repeat", cmd_state->repeat, "run R times, report the median time (--json: also each run's, run_seconds)")->check(CLI::Range(1, 100000))->capture_default_str();
  cmd->add_option("--backend", cmd_state->backend, choices_text<BackendChoice>(" | ", true))->capture_default_str();
  cmd->add_flag("--json", cmd_state->json, "machine-readable summary on stdout");
  cmd->add_flag("--allow-non-finite", cmd_state->allow_non_finite,
                "write the result and exit 0 even when it holds NaN or Inf (studies of blow-ups); by default that is an error");
  cmd->callback([cmd_state] { cmd_state->run(); });
}

}  // namespace nsv::cli
