#include "cuda_test_support.hpp"

#include <algorithm>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "device.hpp"
#include "nsv/metrics.hpp"

namespace nsv::cuda_tests {

bool have_device(std::string* why) { return cuda_backend_available(why); }

bool emulated() { return cuda::probe_device().name.rfind("host emulation", 0) == 0; }

boost::test_tools::assertion_result needs_device(utf::test_unit_id) {
  std::string why;
  if (have_device(&why)) return true;
  boost::test_tools::assertion_result r(false);
  r.message() << why;
  return r;
}

boost::test_tools::assertion_result needs_no_device(utf::test_unit_id) {
  if (!have_device()) return true;
  boost::test_tools::assertion_result r(false);
  r.message() << "a CUDA device is present";
  return r;
}

MatD gaussian(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed, double scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0.0, scale);
  MatD m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng);
  return m;
}

MatD small_integers(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> d(-2, 2);
  MatD m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = d(rng);
  return m;
}

NsConfig config(Kernel k, DType d) {
  NsConfig cfg;
  cfg.kernel = k;
  cfg.dtype = d;
  cfg.accumulate = Accumulate::fp32;
  return cfg;
}

const Backend& cpu() {
  static const std::unique_ptr<Backend> b = make_cpu_backend();
  return *b;
}

const Backend& gpu(bool tf32, bool batched) {
  static std::map<std::pair<bool, bool>, std::unique_ptr<Backend>> cache;
  auto& slot = cache[{tf32, batched}];
  if (!slot) slot = make_cuda_backend(CudaOptions{tf32, batched});
  return *slot;
}

std::string shape_name(const MatD& m) { return std::to_string(m.rows()) + "x" + std::to_string(m.cols()); }

namespace {

// NS of g with the long axis permuted by a seeded shuffle, the permutation undone on the result.
MatD permuted_ns(const MatD& g, const NsConfig& cfg, std::uint64_t seed) {
  const bool cols = g.cols() >= g.rows();
  std::vector<Eigen::Index> perm(static_cast<std::size_t>(cols ? g.cols() : g.rows()));
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<Eigen::Index>(i);
  std::mt19937_64 rng(seed);
  std::shuffle(perm.begin(), perm.end(), rng);
  MatD gq(g.rows(), g.cols());
  for (std::size_t j = 0; j < perm.size(); ++j) {
    if (cols)
      gq.col(static_cast<Eigen::Index>(j)) = g.col(perm[j]);
    else
      gq.row(static_cast<Eigen::Index>(j)) = g.row(perm[j]);
  }
  const MatD r = newton_schulz(cpu(), gq, cfg);
  MatD out(g.rows(), g.cols());
  for (std::size_t j = 0; j < perm.size(); ++j) {
    if (cols)
      out.col(perm[j]) = r.col(static_cast<Eigen::Index>(j));
    else
      out.row(perm[j]) = r.row(static_cast<Eigen::Index>(j));
  }
  return out;
}

}  // namespace

OwnErrors own_errors(const MatD& g, Kernel k) {
  OwnErrors e;
  e.ref64 = newton_schulz(cpu(), g, config(k, DType::fp64));
  for (DType d : {DType::fp64, DType::fp32, DType::bf16, DType::fp16}) {
    e.cpu[d] = newton_schulz(cpu(), g, config(k, d));
    e.own[d] = rel_diff(e.cpu[d], e.ref64);
    e.noise[d] = rel_diff(permuted_ns(g, config(k, d), 77), e.cpu[d]);
  }
  e.own[DType::fp64] = e.own[DType::fp32] * std::ldexp(1.0, -29);
  return e;
}

}  // namespace nsv::cuda_tests
