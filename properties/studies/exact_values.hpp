#pragma once
// Values the report's statistics are checked on, and the statistics as their definitions say.
// Results are drawn as multiples of 1/64 up to most/64: a sum of a few thousand of them is exact
// in fp64, so a statistic computed in any order is the same double and compares with ==.
#include <rapidcheck.h>

#include <vector>

namespace nsv::props {

inline rc::Gen<double> sixty_fourths(int most) {
  return rc::gen::map(rc::gen::inRange(0, most + 1), [](int k) { return k / 64.0; });
}

// The element at rank n/2 of the sorted values (the upper median), found by counting; 0 for none.
inline double upper_median(const std::vector<double>& v) {
  for (double x : v) {
    std::size_t below = 0, at_most = 0;
    for (double y : v) {
      below += y < x;
      at_most += y <= x;
    }
    if (below <= v.size() / 2 && v.size() / 2 < at_most) return x;
  }
  return 0;
}

}  // namespace nsv::props
