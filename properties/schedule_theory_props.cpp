// The scalar theory of a schedule step (lib/src/schedule_theory.cpp), against the polynomial
// itself evaluated on a dense grid: a second computation that needs no calculus.
//
// ST1  interval_image(k, [lo, hi]) is the range of p(x) = a x + b x^3 + c x^5 on [lo, hi]:
//      every grid value p(x_i) lies in it (to 1e-12 relative), and its ends are within h L of the
//      grid's extremes, h the grid step and L = |a| + 3|b| m^2 + 5|c| m^4 (m = max(|lo|, |hi|))
//      a bound on |p'| there: the true extreme is attained within h of a grid point (mean value
//      theorem). Cubic steps (c = 0, the `cubic5` schedule) have the one critical point
//      y = -a / (3b) the library finds by another formula than the quintic's.
// ST2  repelling_fixed_point(k) is a fixed point of |p| (|p(x*)| = x* to 1e-9 relative) beyond
//      which |p(x)| > x on the grid up to 4 x*; +inf only where |p(x)| - x keeps its sign on the
//      grid over (0, 10].
// ST3  map_derivative_bounds(schedule, steps, [0, w]) bounds the composed map's derivatives: on
//      the grid, |phi(x + h) - phi(x)| <= D1 h and |phi(x + h) - 2 phi(x) + phi(x - h)| <= D2 h^2
//      (mean value theorem: h phi'(xi) and h^2 phi''(xi)), plus 8 u max |phi| for the float64
//      evaluations; and it is not vacuous: for one step the bounds are the largest |p'| and |p''|
//      themselves, on keller's step over [0, 1] p'(0) = a and p''(1) = 6b + 20c, to 1e-10 relative.
// PX1  first_step_prescaled(cfg, s) (the audit's spectrum-matched proxies) runs p_0(x / s) as
//      its first step, evaluated here as the original step on x / s, and every later step k of
//      the cfg.steps that run as cfg's own p_k: equal to 1e-13 relative (a few roundings of each evaluation).
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <limits>

#include "check.hpp"
#include "generators/configs.hpp"
#include "nsv/coeffs.hpp"
#include "nsv/analysis/proxy_measurement.hpp"
#include "nsv/schedule_theory.hpp"

using namespace nsv;

namespace {

constexpr int kGrid = 4000;

rc::Gen<Coeffs> step_coefficients() {
  const auto real = [](int lo, int hi) { return rc::gen::map(rc::gen::inRange(lo, hi), [](int v) { return v / 1000.0; }); };
  return rc::gen::apply([](double a, double b, bool cubic, double c) { return Coeffs{a, b, cubic ? 0.0 : c}; },
                        real(500, 4001), real(-6000, 1001), rc::gen::arbitrary<bool>(), real(-500, 3001));
}

double p(const Coeffs& k, double x) { return k.a * x + k.b * x * x * x + k.c * x * x * x * x * x; }

}  // namespace

BOOST_AUTO_TEST_SUITE(foundation)

BOOST_AUTO_TEST_SUITE(schedule_theory)

NSV_PROPERTY(ST1_interval_image_is_the_range_of_the_step_polynomial, ()) {
  const Coeffs k = *step_coefficients();
  const double lo = *rc::gen::inRange(-1500, 1500) / 1000.0;
  const double hi = lo + *rc::gen::inRange(1, 1500) / 1000.0;
  RC_CLASSIFY(k.c == 0, "cubic");
  const ScalarInterval image = interval_image(k, {lo, hi});
  double grid_lo = std::numeric_limits<double>::infinity(), grid_hi = -grid_lo;
  const double h = (hi - lo) / kGrid;
  for (int i = 0; i <= kGrid; ++i) {
    const double v = p(k, i == kGrid ? hi : lo + i * h);
    grid_lo = std::min(grid_lo, v);
    grid_hi = std::max(grid_hi, v);
  }
  const double m = std::max(std::abs(lo), std::abs(hi));
  const double slope = std::abs(k.a) + 3 * std::abs(k.b) * m * m + 5 * std::abs(k.c) * m * m * m * m;
  const double rounding = 1e-12 * (1 + std::abs(grid_lo) + std::abs(grid_hi));
  RC_LOG() << std::hexfloat << "a " << k.a << " b " << k.b << " c " << k.c << " on [" << lo << ", " << hi << "]: image ["
           << image.lo << ", " << image.hi << "], grid [" << grid_lo << ", " << grid_hi << "]\n";
  RC_ASSERT(image.lo <= grid_lo + rounding);
  RC_ASSERT(image.hi >= grid_hi - rounding);
  RC_ASSERT(image.lo >= grid_lo - h * slope - rounding);
  RC_ASSERT(image.hi <= grid_hi + h * slope + rounding);
}

NSV_PROPERTY(ST2_repelling_fixed_point_is_the_last_crossing_of_the_diagonal, ()) {
  const Coeffs k = *step_coefficients();
  const double x = repelling_fixed_point(k);
  RC_CLASSIFY(std::isinf(x), "none");
  const auto gap = [&](double v) { return std::abs(p(k, v)) - v; };
  if (std::isinf(x)) {
    for (int i = 2; i <= kGrid; ++i) RC_ASSERT((gap(10.0 * (i - 1) / kGrid) > 0) == (gap(10.0 * i / kGrid) > 0));
    return;
  }
  RC_ASSERT(x > 0);
  RC_ASSERT(std::abs(gap(x)) <= 1e-9 * x);
  for (int i = 1; i <= kGrid; ++i) RC_ASSERT(gap(x * (1 + 3.0 * i / kGrid)) > 0);
}

NSV_PROPERTY(ST3_map_derivative_bounds_bound_the_maps_differences, ()) {
  CoeffSchedule schedule;
  schedule.triples = *rc::gen::container<std::vector<Coeffs>>(*rc::gen::inRange<std::size_t>(1, 4), step_coefficients());
  const int steps = static_cast<int>(schedule.triples.size());
  const double w = *rc::gen::inRange(1, 1201) / 1000.0;
  const MapDerivativeBounds d = map_derivative_bounds(schedule, steps, {0.0, w});
  const auto phi = [&](double x) {
    for (int k = 0; k < steps; ++k) x = p(schedule.at_step(k), x);
    return x;
  };
  double top = 0;
  for (int i = 0; i <= kGrid; ++i) top = std::max(top, std::abs(phi(w * i / kGrid)));
  RC_PRE(std::isfinite(d.second) && std::isfinite(top));
  const double h = w / kGrid, rounding = 8 * std::ldexp(1.0, -53) * top, slack = 1 + 1e-12;
  RC_LOG() << "w " << w << ": D1 " << d.first << " D2 " << d.second << " max |phi| " << top << "\n";
  for (int i = 0; i < kGrid; ++i) RC_ASSERT(std::abs(phi((i + 1) * h) - phi(i * h)) <= d.first * h * slack + rounding);
  for (int i = 1; i < kGrid; ++i)
    RC_ASSERT(std::abs(phi((i + 1) * h) - 2 * phi(i * h) + phi((i - 1) * h)) <= d.second * h * h * slack + rounding);
}

BOOST_AUTO_TEST_CASE(ST3_map_derivative_bounds_of_one_step_are_its_largest_derivatives) {
  const CoeffSchedule keller = builtin_schedule("keller");
  const Coeffs& k = keller.at_step(0);
  const MapDerivativeBounds d = map_derivative_bounds(keller, 1, {0.0, 1.0});
  BOOST_CHECK_CLOSE(d.first, std::abs(k.a), 1e-8);                 // percent
  BOOST_CHECK_CLOSE(d.second, std::abs(6 * k.b + 20 * k.c), 1e-8);  // p''(1); |p''| at y^2 = -b / (10c) is 9.3
}

NSV_PROPERTY(PX1_a_prescaled_first_step_is_the_step_on_x_over_s, ()) {
  NsConfig cfg;
  cfg.coeffs = *checks::schedules();
  cfg.steps = *rc::gen::inRange(1, 9);
  const double s = *rc::gen::inRange(1001, 8000) / 1000.0;
  const NsConfig scaled = first_step_prescaled(cfg, s);
  for (int step = 0; step < cfg.steps; ++step)  // the steps that run
    for (const double x : {0.01, 0.3, 0.77, 1.0, 1.3}) {
      const double want = scalar_step(cfg.coeffs.at_step(step), step == 0 ? x / s : x);
      const double got = scalar_step(scaled.coeffs.at_step(step), x);
      RC_LOG() << cfg.coeffs.name << " step " << step << " s " << s << " x " << x << ": " << got << " vs " << want << "\n";
      RC_ASSERT(std::abs(got - want) <= 1e-13 * (1 + std::abs(want)));
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
