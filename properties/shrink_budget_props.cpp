// The harness's shrink budget (check.hpp: NSV_SHRINK_SECONDS; checks/shrink_budget.hpp). A
// property that fails whenever 500 integers in 1..1000 sum to 200000 or more (the first case
// almost surely: the mean is 250250, the deviation 6450), each case taking 5 ms: shrinking lowers
// one element at a time and is refused near the threshold, thousands of cases (half a minute
// unbudgeted). It must report its last failing case once the budget has passed, instead of
// shrinking on into a timeout. It fails by design, so the suite is disabled: CTest's
// harness_shrink_budget runs it explicitly with NSV_SHRINK_SECONDS=1 and passes when the report
// says the budget stopped the shrinking.
#include <rapidcheck.h>

#include <chrono>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"

BOOST_AUTO_TEST_SUITE(harness_shrink_budget, *boost::unit_test::disabled())

NSV_PROPERTY(a_slowly_shrinking_failure_reports_within_the_budget, ()) {
  const auto values = *rc::gen::container<std::vector<int>>(500, rc::gen::inRange(1, 1001));
  const long sum = std::accumulate(values.begin(), values.end(), 0L);
  nsv::checks::note_input("500 integers summing to " + std::to_string(sum));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (sum >= 200000) RC_FAIL("the sum is 200000 or more");
}

BOOST_AUTO_TEST_SUITE_END()
