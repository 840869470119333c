// Peak memory of one NS call through the CPU backend (SPEC issue 8, target (f)), measured in
// process: the kernel's peak resident set is reset (/proc/self/clear_refs, "5") after the input
// exists, so the high-water mark (VmHWM) less the resident set before the call is what the call
// itself added, its result included. Printed as JSON, also in copies of the input: as the
// library receives it (MatD, 8 bytes per element) and as an fp32 array (4 bytes per element).
//
//   nsv_peak_memory ROWSxCOLS standard|gram STEPS [fp32|bf16|fp16|fp64]
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include "nsv/backend.hpp"
#include "nsv/spectra.hpp"

namespace {

long status_kib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  throw std::runtime_error("/proc/self/status has no " + field);
}

void reset_peak() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  if (!clear) throw std::runtime_error("cannot reset the peak RSS through /proc/self/clear_refs");
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s ROWSxCOLS standard|gram STEPS [dtype]\n", argv[0]);
    return 2;
  }
  const std::string shape = argv[1];
  const auto x = shape.find('x');
  if (x == std::string::npos) throw std::invalid_argument("shape must be ROWSxCOLS, got " + shape);
  const long rows = std::stol(shape.substr(0, x)), cols = std::stol(shape.substr(x + 1));
  nsv::NsConfig cfg;
  cfg.kernel = nsv::parse_kernel(argv[2]);
  cfg.steps = std::stoi(argv[3]);
  if (argc > 4) cfg.dtype = nsv::parse_dtype(argv[4]);
  nsv::Batch input;
  input.push_back(nsv::gaussian_matrix(rows, cols, 1));
  const auto backend = nsv::make_cpu_backend();
  reset_peak();
  const long before = status_kib("VmRSS");
  const nsv::Batch out = backend->newton_schulz(input, cfg);
  const long peak = status_kib("VmHWM");
  const double grown = static_cast<double>(peak - before) * 1024.0, elements = static_cast<double>(rows) * cols;
  std::printf(
      "{\"shape\": \"%s\", \"kernel\": \"%s\", \"dtype\": \"%s\", \"steps\": %d, \"rss_before_kib\": %ld, "
      "\"peak_kib\": %ld, \"growth_kib\": %ld, \"copies_of_matd_input\": %.3f, \"copies_of_fp32_input\": %.3f}\n",
      shape.c_str(), argv[2], std::string(nsv::dtype_name(cfg.dtype)).c_str(), cfg.steps, before, peak, peak - before,
      grown / (8 * elements), grown / (4 * elements));
  return out.empty() ? 1 : 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "nsv_peak_memory: %s\n", e.what());
  return 1;
}
