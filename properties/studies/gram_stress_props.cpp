// Dao-AILab's stress test as nsverify runs it (tools/nsv/gram_stress.cpp, report §6b): its
// orthogonality metric ||P P^T - I_m||_F / sqrt(m), which the study evaluates without the m x m
// product (through ||P^T P||_F^2 - 2 ||P||_F^2 + m), against what linear algebra allows it to be.
//
// GS2  for a tall m x n estimate P with singular values s_1..s_n (rank <= n < m),
//      ||P P^T - I_m||_F^2 = sum_i (s_i^2 - 1)^2 + (m - n), so
//        (m - n) / m  <=  orth_error^2  <=  (m - n + n max(1, ((1 + bv)^2 - 1)^2)) / m,
//      bv = max(s_1 - 1, 0) being the bound violation the study reports from P^T P's top
//      eigenvalue (each (s_i^2 - 1)^2 is at most 1 for s_i <= 1 and at most ((1 + bv)^2 - 1)^2
//      above). The band comes from the rank and the largest singular value, a second path
//      through P: a metric the study forgets, or evaluates with a wrong sign or term, leaves it.
//      fp64 rounding of the evaluation (m, n <= 64, entries of size <= 1.2) is below 1e-12,
//      allowed as 1e-9 on both sides.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <vector>

#include "check.hpp"
#include "gram_stress.hpp"

using nsv::cli::GramStressRow;
using nsv::cli::GramStressSpec;
using nsv::cli::PolarMetrics;

namespace {

constexpr double kEvaluation = 1e-9;

GramStressSpec tiny_spec(std::int64_t n, int aspect) {
  GramStressSpec spec;
  spec.n = n;
  spec.aspect = aspect;
  spec.repeats = 1;
  spec.gamma_samples = 1;
  spec.threads = 1;
  spec.progress = false;
  return spec;
}

struct Band {
  double floor2, ceiling2;
  bool holds(double orth_error) const {
    const double e2 = orth_error * orth_error;
    return e2 >= floor2 - kEvaluation && e2 <= ceiling2 + kEvaluation;
  }
};

Band band(std::int64_t n, int aspect, double bound_violation) {
  const double rows = static_cast<double>(n * aspect), cols = static_cast<double>(n);
  const double above = std::pow(1 + bound_violation, 2) - 1;
  return {(rows - cols) / rows, (rows - cols + cols * std::max(1.0, above * above)) / rows};
}

const std::vector<std::pair<std::int64_t, int>> kShapes{{12, 2}, {16, 4}};  // n >= 10: the script's spectra need it

}  // namespace

BOOST_AUTO_TEST_SUITE(gram_stress_metrics)

BOOST_AUTO_TEST_CASE(GS2_orthogonality_error_lies_in_the_band_of_rank_and_top_singular_value) {
  for (const auto& [n, aspect] : kShapes) {
    const std::vector<GramStressRow> rows = nsv::cli::run_gram_stress(tiny_spec(n, aspect));
    BOOST_TEST(rows.size() == 11u * tiny_spec(n, aspect).restarts.size());  // ten designed spectra + one Gamma
    for (const GramStressRow& r : rows)
      for (const auto& [method, m] : {std::pair{"standard", r.reference}, std::pair{"gram", r.ours}}) {
        if (!std::isfinite(m.orth_error)) continue;  // a blow-up is reported as such, not measured
        const Band b = band(n, aspect, m.bound_violation);
        BOOST_TEST(b.holds(m.orth_error), method << " on " << r.spectrum << " (" << n * aspect << "x" << n << ", restarts "
                                                 << r.restart_at << "): orth_error^2 " << m.orth_error * m.orth_error
                                                 << " outside [" << b.floor2 << ", " << b.ceiling2 << "]");
      }
  }
}

// Negative control: the band has teeth on both sides for the shapes above. The exact polar
// factor (every s_i = 1, orth_error^2 = (m - n)/m) is inside; a metric never computed (0) is
// below the floor; one without its 1/sqrt(m) normalization is above the ceiling.
BOOST_AUTO_TEST_CASE(GS2_negative_control_the_band_rejects_a_missing_or_doubled_metric) {
  for (const auto& [n, aspect] : kShapes) {
    const Band b = band(n, aspect, 0.0);
    const double exact = std::sqrt(1.0 - 1.0 / aspect);
    BOOST_TEST(b.holds(exact));
    BOOST_TEST(!b.holds(0.0));
    BOOST_TEST(!b.holds(exact * std::sqrt(static_cast<double>(n * aspect))));
  }
}

BOOST_AUTO_TEST_SUITE_END()
