#pragma once
// What the CUDA backend's tests share: the device gate (Boost.Test preconditions), the backends
// under test, reproducible inputs, the optional CSV output, and the yardstick of every bounded
// GPU claim. Definitions in cuda_test_support.cpp.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "nsv/backend.hpp"
#include "nsv/cuda_backend.hpp"

namespace nsv::cuda_tests {

namespace utf = boost::unit_test;

// --- device gate -----------------------------------------------------------------------------------

bool have_device(std::string* why = nullptr);

// True in nsv_cuda_tests_emulated (tests/emulated_device.cpp), where sizes are kept small.
bool emulated();

// Preconditions of the test suites that need a device, and of the one that needs none.
boost::test_tools::assertion_result needs_device(utf::test_unit_id);
boost::test_tools::assertion_result needs_no_device(utf::test_unit_id);

// --- helpers ---------------------------------------------------------------------------------------

MatD gaussian(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed, double scale = 1.0);
MatD small_integers(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed);
NsConfig config(Kernel k, DType d);
const Backend& cpu();
const Backend& gpu(bool tf32 = false, bool batched = false);
std::string shape_name(const MatD& m);

// A CSV file under $NSV_GPU_REPORT_DIR, header written on first use; no-op without the variable.
class Csv {
 public:
  Csv(const std::string& name, const std::string& header) {
    const char* dir = std::getenv("NSV_GPU_REPORT_DIR");
    if (!dir || !*dir) return;
    out_.open(std::string(dir) + "/" + name, std::ios::trunc);
    if (out_) out_ << header << "\n";
  }
  template <class... T>
  void row(const T&... v) {
    if (!out_) return;
    std::ostringstream s;
    s.precision(9);
    int i = 0;
    ((s << (i++ ? "," : "") << v), ...);
    out_ << s.str() << "\n";
    out_.flush();
  }

 private:
  std::ofstream out_;
};

// The yardstick of every bounded GPU claim, measured on the CPU reference for input g, kernel k
// and dtype d: the larger of
//   own error    rel(NS_d(g), NS_fp64(g)): the dtype's rounding error of the kernel. fp64 has no
//                wider oracle here: the fp32 value scaled by the unit roundoffs (2^-53 / 2^-24).
//                TF32 (10 explicit mantissa bits, u = 2^-11) is scaled likewise from bf16
//                (u = 2^-8), an over-estimate: bf16 also rounds every elementwise result.
//   order noise  rel(NS_d(g Q) Q^T, NS_d(g)) for a random permutation Q of the long axis (the axis
//                every Gram product sums over): equal in exact arithmetic, so this is how much
//                the kernel's result moves when only the summation order changes - which is
//                exactly what differs between OpenBLAS and cuBLAS. (In fp64 it is the dominant
//                term: NS amplifies a perturbation of a small singular value by up to a^steps.)
struct OwnErrors {
  MatD ref64;
  std::map<DType, MatD> cpu;
  std::map<DType, double> own, noise;
  double yardstick(DType d, bool tf32 = false) const {
    if (tf32) return std::max(own.at(DType::bf16) * std::ldexp(1.0, -3), noise.at(DType::fp32));
    return std::max(own.at(d), noise.at(d));
  }
};

OwnErrors own_errors(const MatD& g, Kernel k);

// Two results that are both within the kernel's own error e of the exact map differ by at most
// about 2e; 4e leaves room for the GPU's different summation orders without hiding a real
// defect (a wrong orientation, a missed rounding or a wrong scalar shows as O(1) or O(u_dtype^0.5)).
inline constexpr double kAgreementFactor = 4.0;

}  // namespace nsv::cuda_tests
