#pragma once
// floats<T>: IEEE values with validated knobs. The default is what Arbitrary<double> gives
// (finite, normal), but the knobs reach NaN, infinities and subnormals, which Arbitrary never
// makes. Every random choice goes through rc::gen.
#include <rapidcheck.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace nsv::checks {

template <class T>
struct FloatKnobs {
  bool allow_nan = false;
  bool allow_inf = false;
  bool allow_subnormal = false;
  T min_magnitude = 0;                               // 0 allows +-0
  T max_magnitude = std::numeric_limits<T>::max();   // finite; infinities come from allow_inf

  // Throws std::invalid_argument for knobs that contradict each other or cannot be met.
  void validate() const {
    using L = std::numeric_limits<T>;
    auto fail = [](const std::string& why) { throw std::invalid_argument("floats<T> knobs: " + why); };
    if (std::isnan(min_magnitude) || std::isnan(max_magnitude)) fail("magnitude bounds must not be NaN");
    if (min_magnitude < 0 || max_magnitude < 0) fail("magnitude bounds are magnitudes: they must be >= 0");
    if (std::isinf(max_magnitude) || std::isinf(min_magnitude))
      fail("magnitude bounds must be finite; use allow_inf for infinities");
    if (min_magnitude > max_magnitude) fail("min_magnitude > max_magnitude");
    const auto subnormal = [](T v) { return v > 0 && v < L::min(); };
    if (!allow_subnormal && (subnormal(min_magnitude) || subnormal(max_magnitude)))
      fail("a magnitude bound is subnormal but allow_subnormal is false");
    if (allow_subnormal && (min_magnitude >= L::min() || max_magnitude < L::denorm_min()))
      fail("allow_subnormal is true but [min_magnitude, max_magnitude] holds no subnormal");
  }
};

namespace detail {
template <class T>
using FloatBits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
}  // namespace detail

template <class T>
rc::Gen<T> floats(FloatKnobs<T> knobs = {}) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "floats<T>: float or double");
  using L = std::numeric_limits<T>;
  using Bits = detail::FloatBits<T>;
  knobs.validate();
  // Magnitudes are drawn uniformly in bit-pattern space, i.e. roughly log-uniformly: every
  // exponent of the range is equally likely, which is what reaches rounding edge cases.
  const T lowest_drawn = knobs.allow_subnormal ? std::max(knobs.min_magnitude, L::denorm_min())
                                               : std::max(knobs.min_magnitude, L::min());
  const bool any_nonzero = knobs.max_magnitude >= lowest_drawn;  // else only 0 is in range
  const Bits lo = std::bit_cast<Bits>(lowest_drawn), hi = std::bit_cast<Bits>(std::max(knobs.max_magnitude, lowest_drawn));
  auto magnitude = rc::gen::map(rc::gen::inRange<Bits>(lo, hi + 1), [](Bits b) { return std::bit_cast<T>(b); });

  std::vector<T> specials;
  auto special_if = [&](T v) {
    if (v >= knobs.min_magnitude && v <= knobs.max_magnitude) specials.push_back(v);
  };
  special_if(T(0));
  special_if(T(1));
  special_if(L::min());
  special_if(knobs.max_magnitude);
  special_if(knobs.min_magnitude);
  if (knobs.allow_subnormal) {
    special_if(L::denorm_min());
    special_if(std::nextafter(L::min(), T(0)));  // the largest subnormal
  }
  auto sign = rc::gen::arbitrary<bool>();
  auto with_sign = [](std::pair<T, bool> p) { return p.second ? -p.first : p.first; };

  std::vector<std::pair<std::size_t, rc::Gen<T>>> choices;
  if (any_nonzero) choices.push_back({8, rc::gen::map(rc::gen::pair(magnitude, sign), with_sign)});
  choices.push_back({2, rc::gen::map(rc::gen::pair(rc::gen::elementOf(specials), sign), with_sign)});
  if (knobs.allow_nan)
    choices.push_back({1, rc::gen::element(L::quiet_NaN(), -L::quiet_NaN(), L::signaling_NaN())});
  if (knobs.allow_inf) choices.push_back({1, rc::gen::element(L::infinity(), -L::infinity())});
  // weightedOneOf takes an initializer_list; this list is built at run time, so pick by a
  // weighted index (shrinking towards 0, the ordinary values).
  std::size_t total = 0;
  for (const auto& c : choices) total += c.first;
  return rc::gen::mapcat(rc::gen::resize(100, rc::gen::inRange<std::size_t>(0, total)), [choices](std::size_t k) {
    for (const auto& [weight, gen] : choices) {
      if (k < weight) return gen;
      k -= weight;
    }
    return choices.back().second;
  });
}

}  // namespace nsv::checks
