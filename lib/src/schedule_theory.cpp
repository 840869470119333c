#include "nsv/schedule_theory.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nsv {

double scalar_step(const Coeffs& k, double x) {
  const double x2 = x * x;
  return x * (k.a + x2 * (k.b + k.c * x2));
}

namespace {

// The positive roots y of c y^2 + b y + d = 0 (b y + d = 0 for c = 0).
std::vector<double> positive_roots(double c, double b, double d) {
  std::vector<double> ys;
  if (c == 0) {
    if (b != 0) ys.push_back(-d / b);
  } else if (const double disc = b * b - 4 * c * d; disc >= 0) {
    ys = {(-b + std::sqrt(disc)) / (2 * c), (-b - std::sqrt(disc)) / (2 * c)};
  }
  std::erase_if(ys, [](double y) { return !(y > 0); });
  return ys;
}

// The largest |f(x)| over [lo, hi], f's extremes there being at the ends or at `critical` (a
// point of f' = 0, used where it lies inside; NaN where there is none).
template <class F>
double largest_magnitude(F f, ScalarInterval in, double critical) {
  double best = std::max(std::abs(f(in.lo)), std::abs(f(in.hi)));
  if (critical > in.lo && critical < in.hi) best = std::max(best, std::abs(f(critical)));
  return best;
}

}  // namespace

ScalarInterval interval_image(const Coeffs& k, ScalarInterval in) {
  std::vector<double> xs{in.lo, in.hi};
  for (double y : positive_roots(5 * k.c, 3 * k.b, k.a))  // p'(x) = a + 3b y + 5c y^2
    for (double x : {std::sqrt(y), -std::sqrt(y)})
      if (x > in.lo && x < in.hi) xs.push_back(x);
  ScalarInterval out{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
  for (double x : xs) {
    const double y = scalar_step(k, x);
    out.lo = std::min(out.lo, y);
    out.hi = std::max(out.hi, y);
  }
  return out;
}

ScalarInterval singular_value_image(const Coeffs& k, ScalarInterval in) {
  const ScalarInterval y = interval_image(k, in);
  if (y.lo >= 0) return y;
  if (y.hi <= 0) return {-y.hi, -y.lo};
  return {0.0, std::max(-y.lo, y.hi)};
}

ScalarInterval schedule_band(const CoeffSchedule& schedule, int steps, ScalarInterval in) {
  for (int s = 0; s < steps; ++s) in = singular_value_image(schedule.at_step(s), in);
  return in;
}

MapDerivativeBounds map_derivative_bounds(const CoeffSchedule& schedule, int steps, ScalarInterval in) {
  MapDerivativeBounds d;
  for (int s = 0; s < steps; ++s) {
    const Coeffs& k = schedule.at_step(s);
    const double no_critical = std::numeric_limits<double>::quiet_NaN();
    // p' as a function of y: extremes where d/dy (a + 3b y^2 + 5c y^4) = 0, y^2 = -3b / (10c)
    const double first = largest_magnitude([&](double y) { return k.a + y * y * (3 * k.b + 5 * k.c * y * y); }, in,
                                           k.c != 0 ? std::sqrt(-3 * k.b / (10 * k.c)) : no_critical);
    // p''(y) = 6b y + 20c y^3: extremes where 6b + 60c y^2 = 0
    const double second = largest_magnitude([&](double y) { return y * (6 * k.b + 20 * k.c * y * y); }, in,
                                            k.c != 0 ? std::sqrt(-k.b / (10 * k.c)) : no_critical);
    d.second = second * d.first * d.first + first * d.second;
    d.first *= first;
    in = singular_value_image(k, in);
  }
  return d;
}

double repelling_fixed_point(const Coeffs& k) {
  // |p(x)| = x: p(x) = x (c y^2 + b y + (a - 1) = 0) or p(x) = -x (c y^2 + b y + (a + 1) = 0)
  double best = -1.0;
  for (double d : {k.a - 1, k.a + 1})
    for (double y : positive_roots(k.c, k.b, d)) best = std::max(best, std::sqrt(y));
  return best > 0 ? best : std::numeric_limits<double>::infinity();
}

}  // namespace nsv
