#pragma once
// How far apart two matrices are, in the measures the suite reports.
#include <cstdint>
#include <string>

#include "nsv/dtype.hpp"
#include "nsv/lapack_spectra.hpp"  // singular_values, polar_factor: the measures the bounds take from a spectrum
#include "nsv/matrix.hpp"

namespace nsv {

// ||a - b||_F, summed in a fixed element order (the same bits on every run and alignment).
double distance(const MatD& a, const MatD& b);
// ||a - ref||_F / ||ref||_F; 0 when both are zero, +inf when only ref is zero.
double rel_diff(const MatD& a, const MatD& ref);
// <a, b> / (||a|| ||b||); 1 when both are zero.
double cosine(const MatD& a, const MatD& b);
// ||a||_F / ||ref||_F.
double norm_ratio(const MatD& a, const MatD& ref);
double max_abs_diff(const MatD& a, const MatD& b);
bool all_finite(const MatD& m);

// The worst element of a bitwise comparison, numpy.testing style.
struct ElementDiff {
  bool identical = true;          // every element has the same bits (NaNs compared by bits)
  std::int64_t mismatches = 0;
  Eigen::Index row = -1, col = -1;  // worst element (largest ULP distance)
  double a = 0, b = 0;
  std::uint64_t ulps = 0;
  std::string describe() const;    // "3 of 64 elements differ; worst at (1,2): a=0x1.8p+0 b=... (4 ulp)"
};
ElementDiff compare_bits(const MatD& a, const MatD& b, DType ulp_dtype);

}  // namespace nsv
