#include "backend_kernel.hpp"

#include <omp.h>

#include "reference_runs.hpp"

namespace nsv::checks {

BackendKernel::BackendKernel(const Backend& backend, bool reference)
    : backend_(backend), reference_(reference), default_threads_(omp_get_max_threads()) {}

std::string BackendKernel::name() const {
  return std::string(reference_ ? "the reference's " : "the ") + std::string(backend_.name()) + " backend";
}

// The CPU backend runs independent matrices on OpenMP threads; another backend's parallelism is
// its device's.
unsigned BackendKernel::abilities() const {
  return kBatches | kMixedBatches | kAnyConfig | (backend_.name() == "cpu" ? kThreadCount : 0u);
}

MatD BackendKernel::run(const MatD& g, const NsConfig& cfg) const { return newton_schulz(backend_, g, cfg); }

Batch BackendKernel::run_batch(const Batch& batch, const NsConfig& cfg) const { return backend_.newton_schulz(batch, cfg); }

void BackendKernel::set_threads(int threads) const {
  if (backend_.name() != "cpu") KernelUnderTest::set_threads(threads);
  omp_set_num_threads(threads > 0 ? threads : default_threads_);
}

const BackendKernel& cpu_reference_kernel() {
  static const BackendKernel kernel(checks::cpu(), true);
  return kernel;
}

}  // namespace nsv::checks
