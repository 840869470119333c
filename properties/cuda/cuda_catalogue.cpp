// The kernel property catalogue (checks/kernel_catalogue.hpp) run on the CUDA backend, exactly as
// properties/kernel_catalogue.cpp runs it on the CPU reference: one Boost test case per record that
// applies, the same generators, bounds and assertion engine. Linked twice (CMakeLists.txt): on the
// real device layer (a GPU machine: tools/gpu/run_gpu_checks.sh) and on its host emulation (every
// machine: the backend's logic above the platform layer). Without a usable device every case is
// skipped with the reason.
#include <boost/test/unit_test.hpp>
#include <memory>
#include <string>

#include "backend_kernel.hpp"
#include "check.hpp"
#include "generators/configs.hpp"
#include "generators/tiers.hpp"
#include "kernel_catalogue.hpp"
#include "nsv/backend.hpp"

namespace nsv::checks {
namespace {

namespace utf = boost::unit_test;

// The CUDA backend, or why there is none (no device, or a build without CUDA).
const Backend* cuda_backend(std::string* why) {
  static std::string reason;
  static const std::unique_ptr<Backend> backend = [] {
    std::string w;
    if (!cuda_backend_available(&w)) {
      reason = w;
      return std::unique_ptr<Backend>();
    }
    return make_cuda_backend();
  }();
  if (why) *why = reason;
  return backend.get();
}

boost::test_tools::assertion_result needs_cuda(utf::test_unit_id) {
  std::string why;
  if (cuda_backend(&why)) return true;
  boost::test_tools::assertion_result r(false);
  r.message() << "no CUDA backend: " << why << "; CUDA catalogue skipped";
  return r;
}

const checks::BackendKernel& cuda_kernel() {
  static const checks::BackendKernel kernel(*cuda_backend(nullptr), false);
  return kernel;
}

// Every configuration the generators draw that the CUDA backend runs: accumulate=compute models
// PyTorch's CPU GEMM and is the CPU backend's alone (cuda_backend.cpp refuses it, naming the field).
const checks::KernelDomain& cuda_domain() {
  static const checks::KernelDomain domain{
      .configs = rc::gen::suchThat(ns_configs(), [](const NsConfig& c) { return c.accumulate != Accumulate::compute; }),
      .max_dim = max_dim(),
      .shape = std::nullopt,
      .compute_accumulation = false};
  return domain;
}

// A record that does not apply to the backend (it has no OpenMP thread count) says why and checks nothing.
void run_on_cuda(const checks::KernelProperty& p) {
  const std::string why_not = checks::not_applicable(p, cuda_kernel(), std::nullopt);
  if (!why_not.empty()) {
    BOOST_TEST_MESSAGE(p.code << ' ' << p.name << ": not applicable: " << why_not);
    return;
  }
  check_property([&p] { p.body(cuda_kernel(), cuda_domain()); }, true);
}

struct CudaCatalogueRegistration {
  CudaCatalogueRegistration() {
    utf::test_suite* suite = BOOST_TEST_SUITE("cuda_catalogue");
    for (const checks::KernelProperty& p : checks::kernel_properties()) {
      auto* test = utf::make_test_case([&p] { run_on_cuda(p); }, utf::const_string(p.name.data(), p.name.size()), __FILE__,
                                       __LINE__);
      test->add_precondition(needs_cuda);
      suite->add(test);
    }
    utf::framework::master_test_suite().add(suite);
  }
};
const CudaCatalogueRegistration registration;

}  // namespace
}  // namespace nsv::checks
