#pragma once
// The reference's runs the bounded properties measure with: NS on the CPU backend, the float64
// oracle (the same kernel in fp64), and independent runs side by side on the two cores.
//
// The kernel in float64 is the oracle for every narrower dtype: its own rounding (u = 2^-53) is
// 10^8 times below fp32's, so the difference between a dtype's result and the float64 result on
// the same input is that dtype's own error (the "kernel's own error" the tolerances scale).
#include <Eigen/Core>
#include <algorithm>
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>

#include "nsv/backend.hpp"
#include "nsv/kernels.hpp"

namespace nsv::checks {

inline const Backend& cpu() {
  static const std::unique_ptr<Backend> backend = make_cpu_backend();
  return *backend;
}

inline MatD ns(const MatD& g, const NsConfig& cfg) { return newton_schulz(cpu(), g, cfg); }

// Independent reference runs side by side, each on its own OpenMP thread with OpenBLAS pinned to
// one, so each has the bits it has alone (the reference's K10 and K7-bitwise claims, checked in the
// gate) in a fraction of the wall time: a batch of one configuration, or two configurations (the
// float64 oracle beside a narrower run). An exception inside a run is rethrown on the caller's thread.
// Only runs of at least kSideBySideMinElements go side by side: below, an OpenMP team's start and
// join outweigh the run, and on a loaded machine they can cost a scheduler time slice each, which
// the thousands of small runs of a shrinking counterexample would pay. The bits are the same
// either way.
inline constexpr Eigen::Index kSideBySideMinElements = Eigen::Index{1} << 16;  // 256 x 256
inline Batch ns_batch(const Batch& inputs, const NsConfig& cfg) {
  const bool large = std::all_of(inputs.begin(), inputs.end(), [](const MatD& x) { return x.size() >= kSideBySideMinElements; });
  if (large) return cpu().newton_schulz(inputs, cfg);
  Batch out;
  for (const MatD& x : inputs) out.push_back(ns(x, cfg));
  return out;
}
// {a(), b()}, each on its own OpenMP thread where `large` (else one after the other); an
// exception inside either is rethrown on the caller's thread.
template <class A, class B>
auto side_by_side(bool large, const A& a, const B& b) {
  std::invoke_result_t<A> ra;
  std::invoke_result_t<B> rb;
  std::exception_ptr failed[2];
#pragma omp parallel sections num_threads(2) if (large)
  {
#pragma omp section
    try {
      ra = a();
    } catch (...) {
      failed[0] = std::current_exception();
    }
#pragma omp section
    try {
      rb = b();
    } catch (...) {
      failed[1] = std::current_exception();
    }
  }
  for (const auto& f : failed)
    if (f) std::rethrow_exception(f);
  return std::pair{std::move(ra), std::move(rb)};
}

inline NsConfig with_dtype(NsConfig cfg, DType d) {
  cfg.dtype = d;
  if (d == DType::fp64) cfg.accumulate = Accumulate::fp32;  // fp64 accumulates in fp64
  return cfg;
}
inline NsConfig with_kernel(NsConfig cfg, Kernel k) {
  cfg.kernel = k;
  return cfg;
}
inline NsConfig oracle_config(const NsConfig& cfg) { return with_dtype(cfg, DType::fp64); }

}  // namespace nsv::checks
