#include "nsv/kernels.hpp"

#include <stdexcept>
#include <string>

#include "nsv/invalid_field.hpp"

namespace nsv {

Kernel parse_kernel(std::string_view s) {
  if (s == "standard") return Kernel::standard;
  if (s == "gram") return Kernel::gram;
  throw std::invalid_argument("unknown kernel '" + std::string(s) + "': expected standard or gram");
}

std::string_view kernel_name(Kernel k) { return k == Kernel::standard ? "standard" : "gram"; }

Products parse_products(std::string_view s) {
  if (s == "symmetric") return Products::symmetric;
  if (s == "full") return Products::full;
  throw std::invalid_argument("unknown products '" + std::string(s) +
                              "': expected symmetric (upper triangle, mirrored) or full (both triangles, as PyTorch)");
}

std::string_view products_name(Products p) { return p == Products::symmetric ? "symmetric" : "full"; }

void NsConfig::validate() const {
  if (steps < 0 || steps > 1000)
    throw InvalidField("steps", "must be between 0 and 1000, got " + std::to_string(steps));
  if (coeffs.triples.empty()) throw InvalidField("coeffs", "must hold at least one (a, b, c) triple, got an empty schedule");
  if (!(eps >= 0.0)) throw InvalidField("eps", "must be >= 0, got " + std::to_string(eps));
  if (accumulate == Accumulate::compute && dtype == DType::fp64)
    throw InvalidField("accumulate", "compute is meaningful for bf16/fp16/fp32 only, not with dtype fp64");
}

DType normalization_dtype(const NsConfig& cfg) {
  if (cfg.kernel == Kernel::standard) return cfg.dtype;
  return cfg.dtype == DType::fp64 ? DType::fp64 : DType::fp32;
}

std::uint64_t ns_flops(const NsConfig& cfg, std::int64_t rows, std::int64_t cols) {
  const auto p = static_cast<std::uint64_t>(std::min(rows, cols));
  const auto q = static_cast<std::uint64_t>(std::max(rows, cols));
  const auto steps = static_cast<std::uint64_t>(cfg.steps);
  const std::uint64_t gram = 2 * p * p * q, apply = 2 * p * p * q, small = 2 * p * p * p;
  if (cfg.kernel == Kernel::standard || p == q) return steps * (gram + small + apply);
  // Gram loop: one Gram at the start and one per restart, one application of Q per restart and
  // at the end; per step the polynomial (1 small product), Q's update (1, except on the first
  // step after a (re)start) and R's update (2, except before a restart and after the last step).
  const bool restarts = cfg.restart_at > 0 && cfg.restart_at < cfg.steps;
  std::uint64_t f = gram * (restarts ? 2 : 1) + apply * (restarts ? 2 : 1);
  if (cfg.steps == 0) return 0;
  for (int i = 0; i < cfg.steps; ++i) {
    f += small;
    const bool fresh_q = i == 0 || (restarts && i == cfg.restart_at);
    if (!fresh_q) f += small;
    if (i < cfg.steps - 1 && i + 1 != cfg.restart_at) f += 2 * small;
  }
  return f;
}

}  // namespace nsv
