// What products=symmetric costs in accuracy (SPEC issue 8): the distance of the fp32/bf16 result
// to the same kernel's float64 result (the map to ~1e-14), for products=symmetric and
// products=full on the same inputs, as JSON lines (median and max over seeds; a run whose output
// is not finite -- the gram loop diverging on rank-deficient inputs in bf16 -- is counted, and
// the statistics are null when any run diverged).
//
//   nsv_products_accuracy [SEEDS]     (default 24; 128 x 512 inputs: gaussian, lowrank:16, lowrank:4)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "nsv/backend.hpp"
#include "nsv/metrics.hpp"
#include "nsv/spectra.hpp"

namespace {

// "null" when any value is not finite (JSON has no Inf or NaN).
std::string statistic(std::vector<double> v, bool maximum) {
  for (const double x : v)
    if (!std::isfinite(x)) return "null";
  std::sort(v.begin(), v.end());
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", maximum ? v.back() : v[v.size() / 2]);
  return text;
}

long count_non_finite(const std::vector<double>& v) {
  return std::count_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); });
}

}  // namespace

int main(int argc, char** argv) {
  const int seeds = argc > 1 ? std::max(1, std::stoi(argv[1])) : 24;
  const auto backend = nsv::make_cpu_backend();
  for (const char* name : {"gaussian", "lowrank:16", "lowrank:4"}) {
    const nsv::Spectrum spectrum = nsv::parse_spectrum(name);
    for (const nsv::DType dtype : {nsv::DType::fp32, nsv::DType::bf16})
      for (const nsv::Kernel kernel : {nsv::Kernel::standard, nsv::Kernel::gram})
        for (const int steps : {5, 10}) {
          std::vector<double> errors[2];
          for (int seed = 0; seed < seeds; ++seed) {
            const nsv::MatD g = nsv::make_matrix(spectrum, 128, 512, static_cast<std::uint64_t>(seed));
            nsv::NsConfig cfg;
            cfg.kernel = kernel;
            cfg.steps = steps;
            cfg.dtype = nsv::DType::fp64;  // the map; both products modes agree on it to ~1e-14
            const nsv::MatD map = nsv::newton_schulz(*backend, g, cfg);
            cfg.dtype = dtype;
            for (const nsv::Products how : {nsv::Products::symmetric, nsv::Products::full}) {
              cfg.products = how;
              errors[how == nsv::Products::full].push_back(nsv::rel_diff(nsv::newton_schulz(*backend, g, cfg), map));
            }
          }
          std::printf(
              "{\"input\": \"%s\", \"dtype\": \"%s\", \"kernel\": \"%s\", \"steps\": %d, \"seeds\": %d, "
              "\"symmetric_median\": %s, \"symmetric_max\": %s, \"symmetric_non_finite\": %ld, "
              "\"full_median\": %s, \"full_max\": %s, \"full_non_finite\": %ld}\n",
              (spectrum.text() + " 128x512").c_str(),
              std::string(nsv::dtype_name(dtype)).c_str(), std::string(nsv::kernel_name(kernel)).c_str(), steps, seeds,
              statistic(errors[0], false).c_str(), statistic(errors[0], true).c_str(), count_non_finite(errors[0]),
              statistic(errors[1], false).c_str(), statistic(errors[1], true).c_str(), count_non_finite(errors[1]));
          std::fflush(stdout);
        }
  }
}
