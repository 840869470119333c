#pragma once
// Float values the foundation suites draw and compare: every float (NaN, infinities and
// subnormals allowed), and bit equality that treats any two NaNs as equal.
#include <bit>
#include <cmath>
#include <cstdint>

#include "generators/floats.hpp"

namespace nsv::checks {

inline bool same_bits_or_both_nan(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

inline FloatKnobs<float> every_float() {
  FloatKnobs<float> k;
  k.allow_nan = k.allow_inf = k.allow_subnormal = true;
  return k;
}

}  // namespace nsv::checks
