#pragma once
// How properties are declared and how they assert.
//
// NSV_PROPERTY(name, (args)) declares a RapidCheck property as a Boost test case, like
// RapidCheck's RC_BOOST_PROP, and also adds its successful cases to the run's tally (printed at
// the end by the global fixture in harness.cpp). A failure reports RapidCheck's shrunk
// counterexample through BOOST_FAIL; RapidCheck prints its seed when it starts and a
// RC_PARAMS="reproduce=..." line at exit, which replays exactly the failing case.
//
// Inside a property use RC_ASSERT / RC_FAIL and the helpers below, never BOOST_CHECK: a Boost
// assertion would not make RapidCheck shrink.
#include <rapidcheck.h>

#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

#include "assertions.hpp"
#include "shrink_budget.hpp"
#include "nsv/dtype.hpp"
#include "nsv/matrix.hpp"
#include "nsv/metrics.hpp"

namespace nsv::checks {

struct Tally {
  int properties = 0;
  long cases = 0;
  int quantified = 0;                          // plain tests that measure and report a figure
  std::map<std::string, double> worst_ratio;   // per bounded property: max measured / bound
};
Tally& tally();  // harness.cpp

// Remembers how much of its tolerance a bounded property used (printed at the end of the run:
// the margin each derived bound leaves). The assertions of checks/assertions.hpp record the
// same figure for every bounded claim; check_property moves it to the run's tally.
inline void record_ratio(double measured, double bound) {
  if (!(bound > 0) || !std::isfinite(measured)) return;
  double& worst = checks::case_log().worst_ratio;
  worst = std::max(worst, measured / bound);
}

// The command that reruns one failing case exactly: RapidCheck's reproduce parameter for it, and
// every environment setting the draw depends on (the tier's NSV_PROPS_MAX_DIM, the thread counts
// OpenMP and OpenBLAS run with, the OpenBLAS kernel the tests pin), then this executable
// restricted to the property.
inline std::string replay_command(const std::string& id, const rc::detail::Reproduce& reproduce) {
  rc::detail::Configuration config = rc::detail::configuration();
  config.reproduce = {{id, reproduce}};
  std::ostringstream cmd;
  cmd << "RC_PARAMS=\"" << rc::detail::configToMinimalString(config) << "\"";
  for (const char* name : {"NSV_PROPS_MAX_DIM", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE"})
    if (const char* value = std::getenv(name)) cmd << ' ' << name << '=' << value;
  const auto& master = boost::unit_test::framework::master_test_suite();
  cmd << ' ' << (master.argc > 0 ? master.argv[0] : "<test executable>") << " --run_test=" << id;
  return cmd.str();
}

// How long a failing property may shrink its counterexample (NSV_SHRINK_SECONDS, default 120):
// shrinking a wide-tier case can otherwise outlast the test's timeout and report nothing.
inline double shrink_seconds() {
  const char* text = std::getenv("NSV_SHRINK_SECONDS");
  if (!text) return 120.0;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(seconds >= 0))
    throw std::invalid_argument(std::string("NSV_SHRINK_SECONDS must be a number of seconds >= 0, got '") + text + "'");
  return seconds;
}

// Runs the property body `property` of the current Boost test case through RapidCheck (its
// configuration from RC_PARAMS), counts its cases in the run's tally, and fails the test case
// with the shrunk counterexample and its replay command. `must_check`: the property asserts
// through checks/assertions.hpp (the catalogue's properties do), and a run in which no case
// asserted anything (every case outside the premise) is a failure, not a pass.
template <class Property>
void check_property(Property&& property, bool must_check = false) {
  const auto& test_case = boost::unit_test::framework::current_test_case();
  rc::detail::TestMetadata metadata;
  metadata.id = test_case.full_name();
  metadata.description = test_case.p_name;
  checks::case_log() = {};
  int checked_cases = 0;
  const double budget_seconds = shrink_seconds();
  checks::ShrinkBudget budget(budget_seconds);
  const auto counted = [&property, &checked_cases, &budget] {
    checks::case_log().checked = 0;
    budget.run(property);
    if (checks::case_log().checked > 0) ++checked_cases;
  };
  const auto start = std::chrono::steady_clock::now();
  const auto result = rc::detail::checkTestable(counted, metadata);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (checks::case_log().worst_ratio > 0) {
    double& worst = tally().worst_ratio[test_case.p_name];
    worst = std::max(worst, checks::case_log().worst_ratio);
  }
  if (result.template is<rc::detail::SuccessResult>()) {
    const auto success = result.template get<rc::detail::SuccessResult>();
    ++tally().properties;
    tally().cases += success.numSuccess;
    std::ostringstream distribution;
    if (!success.distribution.empty()) rc::detail::printResultMessage(result, distribution);
    BOOST_TEST_MESSAGE(metadata.id << ": " << success.numSuccess << " cases passed in " << seconds << " s"
                                   << (must_check ? ", " + std::to_string(checked_cases) + " inside the premise" : std::string())
                                   << distribution.str());
    BOOST_CHECK(success.numSuccess > 0);
    if (must_check)
      BOOST_CHECK_MESSAGE(checked_cases > 0, metadata.id << ": none of the " << success.numSuccess
                                                         << " cases lay inside the premise: the property checked nothing");
  } else {
    std::ostringstream message;
    message << '\n';
    if (result.template is<rc::detail::FailureResult>() &&
        checks::ShrinkBudget::spent(result.template get<rc::detail::FailureResult>().description) && budget.last_failure())
      message << "Falsified; shrinking stopped after NSV_SHRINK_SECONDS=" << budget_seconds
              << " s, the last failing case stands:\n\n" << budget.last_failure()->second << "\n\n" << budget.last_failure()->first;
    else
      rc::detail::printResultMessage(result, message);
    if (result.template is<rc::detail::FailureResult>())
      message << "\nreplay exactly this case (from the build folder's properties/ or anywhere):\n  "
              << replay_command(metadata.id, result.template get<rc::detail::FailureResult>().reproduce) << '\n';
    BOOST_FAIL(message.str());
  }
}

using checks::exact;  // a value in hexfloat and decimal

// Logs a matrix to RapidCheck's per-case log, exactly, if it is small enough to read.
inline void log_matrix(const std::string& name, const MatD& m) {
  if (m.size() > 64) {
    RC_LOG() << name << ": " << m.rows() << "x" << m.cols() << " (too large to print)\n";
    return;
  }
  RC_LOG() << name << " " << m.rows() << "x" << m.cols() << " (hexfloat, row-major):";
  for (Eigen::Index i = 0; i < m.size(); ++i) RC_LOG() << ' ' << std::hexfloat << m.data()[i];
  RC_LOG() << std::defaultfloat << '\n';
}

// Why a and b are not bit-identical, or "" when they are: the shapes, or how many elements
// differ and the worst one (largest ULP distance in `ulp_dtype`) with its index and both values
// in hexfloat. Bits, not values: -0 differs from +0, and a NaN equals the same NaN.
inline std::string bit_difference(const MatD& a, const MatD& b, DType ulp_dtype) {
  if (a.rows() != b.rows() || a.cols() != b.cols())
    return "shapes differ: " + std::to_string(a.rows()) + "x" + std::to_string(a.cols()) + " vs " +
           std::to_string(b.rows()) + "x" + std::to_string(b.cols());
  const ElementDiff diff = compare_bits(a, b, ulp_dtype);
  return diff.identical ? std::string() : diff.describe();
}

// The optional context argument of RC_ASSERT_BIT_IDENTICAL, as the start of its message.
inline std::string context_prefix() { return {}; }
inline std::string context_prefix(const std::string& context) { return context + ": "; }

}  // namespace nsv::checks

#define NSV_PROPERTY(Name, ArgList)                                                  \
  void nsv_property_##Name ArgList;                                                  \
  BOOST_AUTO_TEST_CASE(Name) { ::nsv::checks::check_property(&nsv_property_##Name); } \
  void nsv_property_##Name ArgList

// Exact claim: every element has the same bits. On failure: the context (optional: which step,
// rank or block was compared), how many elements differ, the worst one (largest ULP distance in
// `dtype`), its index and both values in hexfloat; or that the shapes differ. The comparison
// engine is checks/assertions.hpp, shared with every implementation under test; its negative
// controls are in comparator_props.cpp and sharding/layout_props.cpp.
#define RC_ASSERT_BIT_IDENTICAL(a, b, dtype, ...) \
  ::nsv::checks::assert_bit_identical(::nsv::checks::context_prefix(__VA_ARGS__) + #a " and " #b, (a), (b), (dtype))

// Bounded claim: `measured <= bound`, false for NaN. On failure: both figures exactly, and the
// derivation of the bound.
#define RC_ASSERT_WITHIN(measured, bound, derivation) ::nsv::checks::assert_within(#measured, (measured), (bound), (derivation))
