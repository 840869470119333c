#include "nsv/metrics.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace nsv {
namespace {

void same_shape(const MatD& a, const MatD& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols())
    throw std::invalid_argument("compared matrices differ in shape: " + std::to_string(a.rows()) + "x" +
                                std::to_string(a.cols()) + " vs " + std::to_string(b.rows()) + "x" + std::to_string(b.cols()));
}

// Frobenius norms in a fixed element order (no alignment-dependent vectorized reductions).
double dot(const MatD& a, const MatD& b) {
  double s = 0.0;
  for (Eigen::Index i = 0; i < a.size(); ++i) s += a.data()[i] * b.data()[i];
  return s;
}
double norm(const MatD& a) { return std::sqrt(dot(a, a)); }

}  // namespace

double distance(const MatD& a, const MatD& b) {
  same_shape(a, b);
  return norm(MatD(a - b));
}

double rel_diff(const MatD& a, const MatD& ref) {
  const double d = distance(a, ref), r = norm(ref);
  if (r == 0.0) return d == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  return d / r;
}

double cosine(const MatD& a, const MatD& b) {
  same_shape(a, b);
  const double na = norm(a), nb = norm(b);
  if (na == 0.0 && nb == 0.0) return 1.0;
  if (na == 0.0 || nb == 0.0) return 0.0;
  return dot(a, b) / (na * nb);
}

double norm_ratio(const MatD& a, const MatD& ref) {
  same_shape(a, ref);
  const double r = norm(ref);
  return r == 0.0 ? (norm(a) == 0.0 ? 1.0 : std::numeric_limits<double>::infinity()) : norm(a) / r;
}

double max_abs_diff(const MatD& a, const MatD& b) {
  same_shape(a, b);
  double m = 0.0;
  for (Eigen::Index i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a.data()[i] - b.data()[i]));
  return m;
}

bool all_finite(const MatD& m) {
  for (Eigen::Index i = 0; i < m.size(); ++i)
    if (!std::isfinite(m.data()[i])) return false;
  return true;
}

ElementDiff compare_bits(const MatD& a, const MatD& b, DType ulp_dtype) {
  same_shape(a, b);
  ElementDiff d;
  for (Eigen::Index i = 0; i < a.size(); ++i) {
    const double x = a.data()[i], y = b.data()[i];
    if (std::bit_cast<std::uint64_t>(x) == std::bit_cast<std::uint64_t>(y)) continue;
    d.identical = false;
    ++d.mismatches;
    const std::uint64_t u = ulp_distance(ulp_dtype, x, y);
    if (d.row < 0 || u > d.ulps) {
      d.ulps = u;
      d.row = i / a.cols();
      d.col = i % a.cols();
      d.a = x;
      d.b = y;
    }
  }
  return d;
}

std::string ElementDiff::describe() const {
  if (identical) return "bit-identical";
  std::ostringstream s;
  s << mismatches << " element(s) differ; worst at (" << row << "," << col << "): " << std::hexfloat << a
    << " vs " << b << std::defaultfloat << " (";
  if (ulps == kNoUlpDistance)
    s << "no ULP distance: a NaN is involved";
  else
    s << ulps << " ulp";
  s << ", " << std::setprecision(9) << a << " vs " << b << ")";
  return s.str();
}

}  // namespace nsv
