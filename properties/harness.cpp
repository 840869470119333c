// The Boost.Test module of every property executable (compiled once: nsv_property_harness), and
// the summary printed at the end of a run, named by the executable and the test units it ran.
#define BOOST_TEST_MODULE nsverify_properties
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <iostream>
#include <string>

#include "check.hpp"

namespace nsv::checks {

Tally& tally() {
  static Tally t;
  return t;
}

namespace {

// "executable --run_test=units" of this run (ctest runs one group of an executable's suites).
std::string run_name() {
  const auto& master = boost::unit_test::framework::master_test_suite();
  std::string name = master.argc > 0 ? std::filesystem::path(master.argv[0]).filename().string() : "properties";
  for (int i = 1; i < master.argc; ++i)
    if (std::string(master.argv[i]).rfind("--run_test=", 0) == 0) name += std::string(" ") + master.argv[i];
  return name;
}

// Prints how much was checked, so that a green run says what it covered.
struct Summary {
  Summary() = default;
  ~Summary() {
    const Tally& t = tally();
    std::cout << "\n[nsverify] " << run_name() << ": "
              << t.properties << " properties passed, " << t.cases << " generated cases; " << t.quantified
              << " quantified measurements reported\n";
    for (const auto& [name, ratio] : t.worst_ratio)
      std::cout << "[nsverify]   " << name << ": worst measured/bound " << ratio << "\n";
  }
};

BOOST_TEST_GLOBAL_FIXTURE(Summary);

}  // namespace
}  // namespace nsv::checks
