// The Boost.Test module of one property executable, and the summary printed at its end.
// NSV_TEST_MODULE (a compile definition) names the executable's master suite.
#define BOOST_TEST_MODULE NSV_TEST_MODULE
#include <boost/test/unit_test.hpp>
#include <iostream>

#include "check.hpp"

namespace nsv::props {

Tally& tally() {
  static Tally t;
  return t;
}

namespace {

// Prints how much was checked, so that a green run says what it covered.
struct Summary {
  Summary() = default;
  ~Summary() {
    const Tally& t = tally();
    std::cout << "\n[nsverify] " << boost::unit_test::framework::master_test_suite().p_name.get() << ": "
              << t.properties << " properties passed, " << t.cases << " generated cases; " << t.quantified
              << " quantified measurements reported\n";
    for (const auto& [name, ratio] : t.worst_ratio)
      std::cout << "[nsverify]   " << name << ": worst measured/bound " << ratio << "\n";
  }
};

BOOST_TEST_GLOBAL_FIXTURE(Summary);

}  // namespace
}  // namespace nsv::props
