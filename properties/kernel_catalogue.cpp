// The kernel property catalogue (checks/kernel_catalogue.hpp) run on nsverify's CPU reference:
// every record that applies to the reference becomes a Boost test case of the suite
// `kernel_catalogue`, drawing from every configuration of the generators (both kernels, every
// dtype, accumulation, product mode and schedule, 0..10 steps) and every shape up to the tier's
// size. The same records run on a user's callable (python/) and on the CUDA backend; what does
// not apply to the reference (it takes its input by value; REF would compare it with itself) is
// printed, with the reason, by `catalogue_coverage_on_the_reference`.
#include <boost/test/unit_test.hpp>
#include <string>

#include "backend_kernel.hpp"
#include "check.hpp"
#include "generators/tiers.hpp"
#include "kernel_catalogue.hpp"

namespace nsv::checks {
namespace {

const checks::KernelDomain& reference_domain() {
  static const checks::KernelDomain domain = checks::every_configuration(max_dim());
  return domain;
}

void run_on_the_reference(const checks::KernelProperty& p) {
  check_property([&p] { p.body(checks::cpu_reference_kernel(), reference_domain()); }, true);
}

// One test case per applicable record, registered before main runs, in the catalogue's order.
struct CatalogueRegistration {
  CatalogueRegistration() {
    boost::unit_test::test_suite* suite = BOOST_TEST_SUITE("kernel_catalogue");
    for (const checks::KernelProperty& p : checks::kernel_properties())
      if (checks::not_applicable(p, checks::cpu_reference_kernel(), std::nullopt).empty())
        suite->add(boost::unit_test::make_test_case([&p] { run_on_the_reference(p); },
                                                  boost::unit_test::const_string(p.name.data(), p.name.size()), __FILE__, __LINE__));
    boost::unit_test::framework::master_test_suite().add(suite);
  }
};
const CatalogueRegistration registration;

}  // namespace

}  // namespace nsv::checks

// The suite (the CTest group kernel_properties) sits in nsv: in nsv::checks its namespace would
// clash with the catalogue's checks::kernel_properties().
namespace nsv {
BOOST_AUTO_TEST_SUITE(kernel_properties)
using namespace nsv::checks;

BOOST_AUTO_TEST_CASE(catalogue_coverage_on_the_reference) {
  int applicable = 0;
  for (const checks::KernelProperty& p : checks::kernel_properties()) {
    const std::string why_not = checks::not_applicable(p, checks::cpu_reference_kernel(), std::nullopt);
    if (why_not.empty()) ++applicable;
    else BOOST_TEST_MESSAGE(p.code << ' ' << p.name << ": not applicable: " << why_not);
  }
  BOOST_TEST(applicable > 0);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace nsv
