// The property runner itself (checks/property_run.hpp), which every front end's verdict comes
// from: each status is reached by the body that earns it and by no other (a property whose every
// case asserted nothing checked nothing; it did not hold), and a replay runs its one case: the
// body runs in full once, on the failing case, however long the shrink path to it.
#include <boost/test/unit_test.hpp>
#include <rapidcheck.h>

#include <string>
#include <vector>

#include "assertions.hpp"
#include "check.hpp"
#include "property_run.hpp"

using nsv::checks::PropertyOutcome;
using nsv::checks::Status;

namespace {

const nsv::checks::RunSettings kSettings{.seed = 20261207, .max_success = 40, .max_size = 100, .shrink_seconds = 5};

PropertyOutcome run(const std::function<void()>& body, const nsv::checks::ReplayMap* replay = nullptr) {
  return nsv::checks::run_property("runner_under_test", body, kSettings, replay);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(foundation)

BOOST_AUTO_TEST_SUITE(property_runner)

BOOST_AUTO_TEST_CASE(every_status_is_reached_by_its_own_body_only) {
  const PropertyOutcome vacuous = run([] { *rc::gen::inRange(0, 100); });
  BOOST_TEST(vacuous.status == Status::nothing_checked);
  BOOST_TEST(vacuous.cases == 40);
  BOOST_TEST(vacuous.cases_checked == 0);
  BOOST_TEST(vacuous.message.find("checked nothing") != std::string::npos, vacuous.message);

  const PropertyOutcome some = run([] {
    if (*rc::gen::inRange(0, 100) % 2 == 0) nsv::checks::assert_that(true, "an even draw");
  });
  BOOST_TEST(some.status == Status::holds);
  BOOST_TEST(some.cases == 40);
  BOOST_TEST(some.cases_checked > 0);
  BOOST_TEST(some.cases_checked < 40);

  const PropertyOutcome fails = run([] { nsv::checks::assert_that(*rc::gen::inRange(0, 1000) < 500, "a draw below 500"); });
  BOOST_TEST(fails.status == Status::fails);
  BOOST_TEST(!fails.replay.empty());
  BOOST_TEST(!fails.counterexample.empty());

  const PropertyOutcome gave_up = run([] { RC_DISCARD("outside every premise"); });
  BOOST_TEST(gave_up.status == Status::inconclusive);
  BOOST_TEST(gave_up.message.find("gave up") != std::string::npos, gave_up.message);
}

// A failure that shrinks through many steps (a value in 0..10^6 shrinking towards the threshold)
// and its replay: the replay's body runs in full once, on the shrunk value; on the walk down the
// shrink path it runs only for its draws (walking_to_the_replayed_case).
BOOST_AUTO_TEST_CASE(a_replay_runs_the_shrunk_case_alone) {
  std::vector<int> run_in_full;
  const auto body = [&] {
    const int x = *rc::gen::inRange(0, 1000000);
    if (nsv::checks::walking_to_the_replayed_case()) return;
    run_in_full.push_back(x);
    nsv::checks::assert_that(x < 1000, "a draw below 1000");
  };
  const PropertyOutcome first = run(body);
  BOOST_TEST_REQUIRE(first.status == Status::fails);
  BOOST_TEST_REQUIRE(run_in_full.size() > 10U);  // the search and the shrinking ran many cases
  const int shrunk = run_in_full.back();         // RapidCheck evaluates the shrunk case last
  BOOST_TEST(shrunk == 1000);
  run_in_full.clear();
  const nsv::checks::ReplayMap replay = nsv::checks::parse_replay(first.replay);
  const PropertyOutcome again = run(body, &replay);
  BOOST_TEST(again.status == Status::fails);
  BOOST_TEST(again.message == first.message);
  BOOST_TEST(run_in_full == std::vector<int>{shrunk}, boost::test_tools::per_element());
  BOOST_TEST(!nsv::checks::walking_to_the_replayed_case());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
