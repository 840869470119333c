#pragma once
// A backend of the library (the CPU reference, the CUDA backend) as an implementation under test
// of the kernel catalogue: it runs any configuration, takes batches of mixed shapes, and (the CPU
// reference) has an OpenMP thread count.
#include <string>

#include "kernel_under_test.hpp"
#include "nsv/backend.hpp"

namespace nsv::checks {

class BackendKernel final : public KernelUnderTest {
 public:
  // `reference`: this is nsverify's CPU reference (the premises' and REF's yardstick).
  BackendKernel(const Backend& backend, bool reference);

  std::string name() const override;
  unsigned abilities() const override;
  bool is_reference() const override { return reference_; }
  MatD run(const MatD& g, const NsConfig& cfg) const override;
  Batch run_batch(const Batch& batch, const NsConfig& cfg) const override;
  void set_threads(int threads) const override;

 private:
  const Backend& backend_;
  bool reference_;
  int default_threads_;
};

// The CPU reference, shared by every property of a process.
const BackendKernel& cpu_reference_kernel();

}  // namespace nsv::checks
