// Negative control of the exact comparator (checks/assertions.hpp, RC_ASSERT_BIT_IDENTICAL):
// on the reference's own outputs, in every dtype, a one-ULP change of one element is reported at
// its index as exactly 1 ulp, and the assertion fails.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>

#include "check.hpp"
#include "generators/configs.hpp"
#include "generators/matrices.hpp"
#include "reference_runs.hpp"

namespace nsv::checks {
namespace {

// The value one unit in the last place of `d` further from zero than v (v representable in d).
double one_ulp_further(DType d, double v) {
  switch (d) {
    case DType::fp64: return std::nextafter(v, std::copysign(std::numeric_limits<double>::infinity(), v));
    case DType::fp32:
      return std::nextafter(static_cast<float>(v), std::copysign(std::numeric_limits<float>::infinity(), static_cast<float>(v)));
    case DType::bf16: {
      auto bits = Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(static_cast<float>(v)));
      return static_cast<double>(static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(static_cast<std::uint16_t>(bits + 1))));
    }
    case DType::fp16: {
      auto bits = Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(static_cast<float>(v)));
      return static_cast<double>(static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(static_cast<std::uint16_t>(bits + 1))));
    }
  }
  return v;
}

}  // namespace

}  // namespace nsv::checks

// The suite (the CTest group kernel_properties) sits in nsv: in nsv::checks its namespace would
// clash with the catalogue's checks::kernel_properties().
namespace nsv {
BOOST_AUTO_TEST_SUITE(kernel_properties)
using namespace nsv::checks;

BOOST_AUTO_TEST_SUITE(exact_comparator)

// Negative control for every RC_ASSERT_BIT_IDENTICAL [exact]: one element moved by one ULP of
// the compute dtype is reported, at the right index, as exactly 1 ulp, and the assertion fails.
// Premise: the element is finite, so it has a neighbour one ULP further from zero (the next bit
// pattern; infinity after the largest finite value). An infinity or a NaN has none, and NS in
// half precision can blow up, so outputs can hold them: such an element is replaced by a NaN of
// the other sign, and the comparator must still report exactly that element, with no ULP
// distance (a NaN has no position on the format's integer line). Both branches are classified.
NSV_PROPERTY(bit_identity_comparator_detects_a_single_ulp_change, ()) {
  const TestMatrix g = *matrices();
  const NsConfig cfg = *ns_configs();
  const MatD x = ns(g.values, cfg);
  const auto index = *rc::gen::inRange<Eigen::Index>(0, x.size());
  const double before = x.data()[index];
  const bool finite = std::isfinite(before);
  RC_CLASSIFY(!finite, "non-finite output element, changed to a NaN");
  MatD y = x;
  y.data()[index] = finite ? one_ulp_further(cfg.dtype, before)
                           : std::copysign(std::numeric_limits<double>::quiet_NaN(), std::signbit(before) ? 1.0 : -1.0);
  const ElementDiff diff = compare_bits(x, y, cfg.dtype);
  RC_ASSERT_FALSE(diff.identical);
  RC_ASSERT(diff.mismatches == 1);
  RC_ASSERT(diff.row * x.cols() + diff.col == index);
  RC_ASSERT(diff.ulps == (finite ? 1u : kNoUlpDistance));
  bool failed = false;
  try {
    RC_ASSERT_BIT_IDENTICAL(x, y, cfg.dtype);
  } catch (const rc::detail::CaseResult& r) {
    failed = r.type == rc::detail::CaseResult::Type::Failure &&
             r.description.find(finite ? "(1 ulp" : "no ULP distance") != std::string::npos;
  }
  RC_ASSERT(failed);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()

}  // namespace nsv
