#pragma once
// K2's premise: when scaling a matrix by a power of two is exact for the kernel's normalization,
// so that NS(2^k G) and NS(G) must be bit-identical; and K8's cases of extreme magnitudes. Used by
// the kernel catalogue (checks/kernel_catalogue.cpp), which runs them on every implementation
// under test.
#include <cmath>
#include <limits>

#include "nsv/dtype.hpp"
#include "nsv/kernels.hpp"
#include "nsv/matrix.hpp"

namespace nsv::checks {

// Zero, or at least the smallest normal number of d (d's subnormals lose bits under scaling).
inline bool zero_or_normal_in(DType d, double v) {
  const double smallest_normal = d == DType::fp64 ? std::numeric_limits<double>::min()
                                 : d == DType::fp16 ? 0x1p-14
                                                    : static_cast<double>(std::numeric_limits<float>::min());
  return v == 0.0 || (std::isfinite(v) && std::abs(v) >= smallest_normal);
}

// K2's premise for scaling by any positive s: every entry of the matrix is zero or normal in the
// dtypes the kernel rounds its input to (the compute dtype and the normalization dtype). A
// subnormal entry keeps fewer bits than the rounding bounds B(G) assume, and other bits at another
// scale: fp16's smallest normal is 2^-14, so a gradient of entries near 1e-7 is subnormal there,
// and 1/16 of it underflows to zero.
inline bool entries_normal_for(const MatD& m, const NsConfig& cfg) {
  const DType nd = normalization_dtype(cfg);
  for (Eigen::Index i = 0; i < m.size(); ++i)
    if (!zero_or_normal_in(cfg.dtype, m.data()[i]) || !zero_or_normal_in(nd, m.data()[i])) return false;
  return true;
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

// K8 by case: G scaled by 2^k and stored as a float32 gradient (`scaled`) is exactly one of
//   input_overflows     the float32 input itself overflows: an infinite input, flagged non-finite;
//   entry_overflows     an entry overflows the normalization dtype (the standard kernel casts to
//                       fp16/bf16 first): flagged non-finite;
//   norm_overflows      only the norm overflows it: exactly zero. DeepSpeed computes
//                       X / (||X|| + eps) the same way and gets the same zeros: a silent,
//                       documented limitation, pinned so that it cannot change unnoticed;
//   exact               K2's premise holds: the bits of the unscaled input;
//   underflows_to_zero  every rounded entry is zero: exactly zero;
//   finite              otherwise (eps not absorbed by a small norm, subnormal entries): finite.
enum class ExtremeCase { input_overflows, entry_overflows, norm_overflows, exact, underflows_to_zero, finite };

inline ExtremeCase extreme_case(const MatD& g, const MatD& scaled, int k, const NsConfig& cfg) {
  if (!scaled.allFinite()) return ExtremeCase::input_overflows;
  const DType nd = normalization_dtype(cfg);
  bool entry_overflows = false, all_zero = true;
  double sum = 0;
  for (Eigen::Index i = 0; i < scaled.size(); ++i) {
    const double r = round_to(nd, scaled.data()[i]);
    entry_overflows = entry_overflows || std::isinf(r);
    all_zero = all_zero && r == 0.0;
    sum += r * r;
  }
  if (entry_overflows) return ExtremeCase::entry_overflows;
  if (std::isinf(round_to(nd, std::sqrt(sum)))) return ExtremeCase::norm_overflows;
  if (power_of_two_scaling_is_exact(g, k, cfg)) return ExtremeCase::exact;
  return all_zero ? ExtremeCase::underflows_to_zero : ExtremeCase::finite;
}

inline const char* extreme_case_label(ExtremeCase c) {
  switch (c) {
    case ExtremeCase::input_overflows: return "float32 input overflows: flagged";
    case ExtremeCase::entry_overflows: return "an entry overflows the normalization dtype: flagged";
    case ExtremeCase::norm_overflows: return "only the norm overflows: zero (DeepSpeed's behaviour)";
    case ExtremeCase::exact: return "exact: the bits of the unscaled input";
    case ExtremeCase::underflows_to_zero: return "underflows to zero";
    case ExtremeCase::finite: return "finite";
  }
  return "?";
}

}  // namespace nsv::checks
