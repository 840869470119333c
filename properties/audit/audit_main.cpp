// The Boost.Test module of one audit property executable (NSV_TEST_MODULE names it), and the
// tally that check.hpp's NSV_PROPERTY adds to, printed at the end.
#define BOOST_TEST_MODULE NSV_TEST_MODULE
#include <boost/test/unit_test.hpp>
#include <iostream>

#include "check.hpp"

namespace nsv::props {

Tally& tally() {
  static Tally t;
  return t;
}

}  // namespace nsv::props

namespace {

struct AuditSummary {
  ~AuditSummary() {
    const nsv::props::Tally& t = nsv::props::tally();
    std::cout << "\n[nsverify] " << boost::unit_test::framework::master_test_suite().p_name.get() << ": " << t.properties
              << " properties passed, " << t.cases << " generated cases\n";
  }
};

}  // namespace

BOOST_TEST_GLOBAL_FIXTURE(AuditSummary);
