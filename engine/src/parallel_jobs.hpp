#pragma once
// The studies' parallel loop: independent jobs on OpenMP threads (dynamic schedule: jobs differ
// in cost), a progress bar, and the first job's exception reported once every job has finished
// (an exception must not leave an OpenMP region).
#include <omp.h>

#include <cstddef>
#include <exception>
#include <stdexcept>
#include <string>

#include "nsv/engine/progress.hpp"

namespace nsv::engine {

// job(i) for every i in [0, n); threads <= 0: OMP_NUM_THREADS or all cores. Throws
// std::runtime_error("<label>: <the first failure's message>").
template <class Job>
void run_parallel_jobs(std::size_t n, int threads, const std::string& label, bool progress, const Job& job) {
  std::string error;
  omp_set_max_active_levels(1);
  Progress bar(label, n, progress);
  const auto count = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > 0 ? threads : omp_get_max_threads())
  for (std::ptrdiff_t j = 0; j < count; ++j) {
    try {
      job(static_cast<std::size_t>(j));
    } catch (const std::exception& e) {
#pragma omp critical(nsv_parallel_jobs_error)
      if (error.empty()) error = e.what();
    }
    bar.advance();
  }
  bar.finish();
  if (!error.empty()) throw std::runtime_error(label + ": " + error);
}

}  // namespace nsv::engine
