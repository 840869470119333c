#pragma once
// Values the report's statistics are checked on, and the statistics as their definitions say.
// Results are drawn as multiples of 1/64 up to most/64: a sum of a few thousand of them is exact
// in fp64, so a statistic computed in any order is the same double and compares with ==.
#include <rapidcheck.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace nsv::checks {

inline rc::Gen<double> sixty_fourths(int most) {
  return rc::gen::map(rc::gen::inRange(0, most + 1), [](int k) { return k / 64.0; });
}

// Their sum in order (exact on these values) over their count; 0 for none, as the engine's means.
inline double exact_mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

// A {min, max, n} object of report.json against the values it ranges over (0, 0, 0 for none).
inline void assert_range(const nlohmann::json& range, const std::vector<double>& v) {
  RC_ASSERT(range.at("n").get<std::size_t>() == v.size());
  RC_ASSERT(range.at("min").get<double>() == (v.empty() ? 0.0 : *std::min_element(v.begin(), v.end())));
  RC_ASSERT(range.at("max").get<double>() == (v.empty() ? 0.0 : *std::max_element(v.begin(), v.end())));
}

// The item of a report.json array whose `field` is `value`.
inline const nlohmann::json& item_where(const nlohmann::json& array, const std::string& field, const std::string& value) {
  for (const nlohmann::json& item : array)
    if (item.at(field).get<std::string>() == value) return item;
  throw std::out_of_range("no " + field + " " + value);
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

}  // namespace nsv::checks
