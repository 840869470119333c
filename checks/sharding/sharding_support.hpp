#pragma once
// Shared machinery of the sharding, layout and Muon-step properties (SPEC §4 L, S, M): the
// reference backend, the one-ulp change of the exact comparator's negative controls, a small
// distribution summary printed by the quantified tests, and layout helpers.
//
// Exact claims use RC_ASSERT_BIT_IDENTICAL (check.hpp), whose negative controls in
// layout_props.cpp require a one-ulp change of one element to be reported, so "identical" is
// never vacuous.
#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <limits>
#include <mutex>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "nsv/backend.hpp"
#include "nsv/layout.hpp"
#include "nsv/metrics.hpp"
#include "nsv/strategies.hpp"

namespace nsv::checks::shard {

// The CPU reference backend, shared by every property of an executable.
inline const Backend& backend() {
  static const std::unique_ptr<Backend> b = make_cpu_backend();
  return *b;
}

// --------------------------------------------------------------------------------------------
// The smallest change an exact comparator must see: one ulp of fp32 (the storage dtype of
// every value in these properties) at element i.
inline MatD with_one_ulp_changed(MatD m, Eigen::Index i) {
  const float v = static_cast<float>(m.data()[i]);
  m.data()[i] = static_cast<double>(std::nextafter(v, std::numeric_limits<float>::infinity()));
  return m;
}

// Two ledgers with the same calls and, rank by rank, the same bytes and messages.
inline bool same_ledger(const Ledger& a, const Ledger& b) {
  if (a.calls != b.calls || a.ranks.size() != b.ranks.size()) return false;
  for (std::size_t r = 0; r < a.ranks.size(); ++r)
    if (a.ranks[r].bytes_sent != b.ranks[r].bytes_sent || a.ranks[r].bytes_received != b.ranks[r].bytes_received ||
        a.ranks[r].messages != b.ranks[r].messages)
      return false;
  return true;
}

// --------------------------------------------------------------------------------------------
// A distribution of measured values, summarised for the report (quantified claims).
class Stats {
 public:
  explicit Stats(std::string name) : name_(std::move(name)) {}
  void add(double v) {
    std::lock_guard<std::mutex> lock(mu_);
    values_.push_back(v);
  }
  std::size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  double quantile(double q) const {
    std::vector<double> v = values_;
    std::sort(v.begin(), v.end());
    if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
    const auto k = static_cast<std::size_t>(std::floor(q * static_cast<double>(v.size() - 1) + 0.5));
    return v[std::min(k, v.size() - 1)];
  }
  double min() const { return quantile(0.0); }
  double max() const { return quantile(1.0); }
  double mean() const {
    return values_.empty() ? std::numeric_limits<double>::quiet_NaN()
                           : std::accumulate(values_.begin(), values_.end(), 0.0) / static_cast<double>(values_.size());
  }
  // One line, "[figure] name: n=.. min .. p50 .. p90 .. p99 .. max .. mean ..".
  void report(std::ostream& os = std::cout) const {
    os << "[figure] " << name_ << ": n=" << values_.size();
    if (!values_.empty())
      os << std::setprecision(4) << " min " << min() << " p50 " << quantile(0.5) << " p90 " << quantile(0.9) << " p99 "
         << quantile(0.99) << " max " << max() << " mean " << mean() << std::defaultfloat;
    os << std::endl;
  }

 private:
  std::string name_;
  std::vector<double> values_;
  std::mutex mu_;
};

// --------------------------------------------------------------------------------------------
// Layout helpers.

inline std::int64_t split_extent(const MatD& m, int axis) { return axis == 0 ? m.rows() : m.cols(); }
inline std::int64_t other_extent(const MatD& m, int axis) { return axis == 0 ? m.cols() : m.rows(); }

inline std::string sizes_text(const std::vector<std::int64_t>& s) {
  std::ostringstream o;
  o << "[";
  for (std::size_t i = 0; i < s.size(); ++i) o << (i ? "," : "") << s[i];
  o << "]";
  return o.str();
}

inline std::string layout_text(const Layout& l) {
  std::ostringstream o;
  o << "axis " << l.axis << " dim " << l.dim << " widths " << sizes_text(l.widths());
  return o.str();
}

// The result of running a strategy, assembled into the whole matrix.
inline MatD assembled(const StrategyRun& run, const Layout& layout) { return assemble(run.outputs, layout); }

}  // namespace nsv::checks::shard
