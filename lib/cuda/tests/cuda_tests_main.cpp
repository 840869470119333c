// GPU tests of the CUDA backend (SPEC §4 "GPU properties"), Boost.Test: the test module, the
// device banner, and the tests that need no device.
//
// Without a usable CUDA device every test that needs one is skipped (Boost.Test precondition),
// and the executable prints "no CUDA device: <reason>; GPU tests skipped" once, which ctest's
// SKIP_REGULAR_EXPRESSION turns into a "Skipped" result. The tests that check the behaviour
// without a device run instead.
//
// The suites:
//   pure        backend names (no device involved).
//   no_device   the clear error when no device is present.
//   thin_layer  (thin_layer_tests.cpp) the device API against exact host arithmetic: GEMM
//               orientation/strides on integer data (exact in every dtype), mirror, and the
//               elementwise kernels bit for bit against the CPU reference's formulas.
//   backend     (backend_tests.cpp) CPU <-> GPU agreement per dtype within bounds derived from
//               the kernel's own error; per-head bit-identity across batch counts 8/4/2/1 (looped
//               must be exact; batched is measured); determinism; K1 transpose; sharded
//               iterations; special inputs.
//
// With NSV_GPU_REPORT_DIR set, the agreement and per-head measurements are also written there
// as CSV (tools/gpu/run_gpu_checks.sh sets it to reports/gpu/).
#define BOOST_TEST_MODULE nsv_cuda_tests
#include <boost/test/included/unit_test.hpp>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "cuda_test_support.hpp"
#include "device.hpp"

using namespace nsv;
using namespace nsv::cuda_tests;

namespace {

struct DeviceBanner {
  DeviceBanner() {
    std::string why;
    if (!have_device(&why)) {
      std::printf("%s; GPU tests skipped\n", why.c_str());
      return;
    }
    const auto& d = cuda::probe_device();
    std::printf("CUDA device: %s, compute capability %d.%d, %d SMs, %.1f GiB, driver %d, runtime %d, cuBLAS %d\n",
                d.name.c_str(), d.cc_major, d.cc_minor, d.sm_count, static_cast<double>(d.total_memory) / (1 << 30),
                d.driver_version, d.runtime_version, d.cublas_version);
  }
};
BOOST_TEST_GLOBAL_FIXTURE(DeviceBanner);

}  // namespace

// ====================================================================================================
BOOST_AUTO_TEST_SUITE(pure)

BOOST_AUTO_TEST_CASE(backend_names_parse) {
  BOOST_TEST(!parse_cuda_backend_name("cuda").tf32);
  BOOST_TEST(!parse_cuda_backend_name("cuda").batched);
  BOOST_TEST(parse_cuda_backend_name("cuda-tf32").tf32);
  BOOST_TEST(parse_cuda_backend_name("cuda-tf32-batched").batched);
  BOOST_TEST(!parse_cuda_backend_name("cuda-batched-loop").batched);
  BOOST_TEST(cuda_backend_name(CudaOptions{true, true}) == "cuda-tf32-batched");
  BOOST_CHECK_THROW(parse_cuda_backend_name("cuda-fast"), std::invalid_argument);
  BOOST_CHECK_THROW(parse_cuda_backend_name("cudax"), std::invalid_argument);
  BOOST_CHECK_THROW(parse_cuda_backend_name("cpu"), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

// ====================================================================================================
BOOST_AUTO_TEST_SUITE(no_device, *utf::precondition(needs_no_device))

BOOST_AUTO_TEST_CASE(unavailable_is_a_clear_error) {
  std::string why;
  BOOST_TEST(!cuda_backend_available(&why));
  BOOST_TEST_MESSAGE("reason: " << why);
  BOOST_TEST((why.rfind("no CUDA device", 0) == 0 || why.rfind("no usable CUDA device", 0) == 0), "reason: " << why);
  try {
    (void)make_backend("cuda");
    BOOST_ERROR("make_backend(\"cuda\") did not throw without a device");
  } catch (const std::runtime_error& e) {
    BOOST_TEST(std::string(e.what()).find(why) != std::string::npos, e.what());
  }
  BOOST_CHECK_THROW((void)make_cuda_backend(CudaOptions{true, true}), std::runtime_error);
  BOOST_CHECK_THROW((void)make_cuda_backend(true), std::runtime_error);
}

BOOST_AUTO_TEST_SUITE_END()
