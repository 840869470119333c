#pragma once
// K2's premise: when scaling a matrix by a power of two is exact for the kernel's normalization,
// so that NS(2^k G) and NS(G) must be bit-identical. Shared by the kernel properties of the
// reference (kernel_exact.cpp) and of a user's kernel (python/src/kernel_properties.cpp).
#include <cmath>
#include <limits>

#include "nsv/dtype.hpp"
#include "nsv/kernels.hpp"
#include "nsv/matrix.hpp"

namespace nsv::props {

// Zero, or at least the smallest normal number of d (d's subnormals lose bits under scaling).
inline bool zero_or_normal_in(DType d, double v) {
  const double smallest_normal = d == DType::fp64 ? std::numeric_limits<double>::min()
                                 : d == DType::fp16 ? 0x1p-14
                                                    : static_cast<double>(std::numeric_limits<float>::min());
  return v == 0.0 || (std::isfinite(v) && std::abs(v) >= smallest_normal);
}

// K2's premise for scaling `base` by 2^k: every entry, and the rounded norm, scale exactly in
// the normalization dtype (nothing overflows, nothing is or becomes subnormal), and eps is at
// most half an ULP of both rounded norms, so ||G|| + eps rounds to ||G||. Mirrors normalize.cpp.
inline bool power_of_two_scaling_is_exact(const MatD& base, int k, const NsConfig& cfg) {
  const DType nd = normalization_dtype(cfg);
  double sum = 0.0;
  for (Eigen::Index i = 0; i < base.size(); ++i) {
    const double r = round_to(nd, base.data()[i]), rs = round_to(nd, std::ldexp(base.data()[i], k));
    if (!zero_or_normal_in(nd, r) || !zero_or_normal_in(nd, rs) || rs != std::ldexp(r, k)) return false;
    sum += r * r;
  }
  const double norm = round_to(nd, std::sqrt(sum)), scaled_norm = round_to(nd, std::ldexp(norm, k));
  if (norm == 0.0 || !zero_or_normal_in(nd, norm) || !zero_or_normal_in(nd, scaled_norm) || scaled_norm != std::ldexp(norm, k))
    return false;
  const double eps = round_to(nd, cfg.eps);
  auto absorbed = [&](double n) { return round_to(nd, n + eps) == n; };
  return absorbed(norm) && absorbed(scaled_norm);
}

}  // namespace nsv::props
