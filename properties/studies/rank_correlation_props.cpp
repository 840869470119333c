// The training study's rank correlation (nsv/engine/rank_correlation.hpp: report.json "training",
// how the update difference goes with the gradient's effective and stable rank), against its
// definition evaluated the slow way.
//
// RC1  ranks(v)_i is v_i's mean rank among its ties: 1 + #{j : v_j < v_i} + (#{j : v_j = v_i} - 1) / 2,
//      counted here over all pairs (O(n^2), no sort, no run-length scan: the study sorts and
//      walks runs of equal values, a different path). Ranks are multiples of 1/2 below 2^53,
//      so both are exact: compared with ==.
// RC2  spearman(x, y) is Pearson's correlation of those ranks, evaluated here by the textbook
//      formula (n Σxy − Σx Σy) / sqrt((n Σx² − (Σx)²)(n Σy² − (Σy)²)). On half-integer ranks of
//      n <= 40 values every sum and product is a multiple of 1/4 below 2^30, exact in fp64, so
//      this side rounds only in the last sqrt and division (2 ulp); the study's two-pass form
//      rounds its means (n ulp per deviation, deviations <= n): both lie within 1e-12 of the
//      true value, allowed as 2e-12 apart.
// Inputs are drawn from a few distinct values, so most vectors have ties (the path the study's
// run-length scan exists for); RC_CLASSIFY shows the share.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <vector>

#include "check.hpp"
#include "nsv/engine/rank_correlation.hpp"

namespace {

std::vector<double> mean_ranks_by_counting(const std::vector<double>& v) {
  std::vector<double> r;
  for (const double vi : v) {
    double below = 0, equal = 0;
    for (const double vj : v) {
      below += vj < vi ? 1 : 0;
      equal += vj == vi ? 1 : 0;
    }
    r.push_back(1 + below + (equal - 1) / 2);
  }
  return r;
}

double textbook_pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxy += x[i] * y[i];
    sxx += x[i] * x[i];
    syy += y[i] * y[i];
  }
  const double vx = n * sxx - sx * sx, vy = n * syy - sy * sy;
  return vx > 0 && vy > 0 ? (n * sxy - sx * sy) / std::sqrt(vx * vy) : 0.0;
}

bool has_ties(const std::vector<double>& v) {
  for (std::size_t i = 0; i < v.size(); ++i)
    for (std::size_t j = i + 1; j < v.size(); ++j)
      if (v[i] == v[j]) return true;
  return false;
}

rc::Gen<std::vector<double>> few_valued(std::size_t n) {
  return rc::gen::container<std::vector<double>>(n, rc::gen::map(rc::gen::inRange(-3, 4), [](int k) { return 0.25 * k; }));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(study_rank_correlation)

BOOST_AUTO_TEST_SUITE(rank_correlation)

NSV_PROPERTY(RC1_ranks_are_the_mean_ranks_among_ties, ()) {
  const auto n = *rc::gen::inRange<std::size_t>(0, 41);
  const std::vector<double> v = *few_valued(n);
  RC_CLASSIFY(has_ties(v), "ties");
  RC_ASSERT(nsv::engine::ranks(v) == mean_ranks_by_counting(v));
}

NSV_PROPERTY(RC2_spearman_is_pearson_of_the_mean_ranks, ()) {
  const auto n = *rc::gen::inRange<std::size_t>(2, 41);
  const std::vector<double> x = *few_valued(n), y = *few_valued(n);
  RC_CLASSIFY(has_ties(x) || has_ties(y), "ties");
  const double want = textbook_pearson(mean_ranks_by_counting(x), mean_ranks_by_counting(y));
  const double got = nsv::engine::spearman(x, y);
  RC_LOG() << std::hexfloat << "spearman " << got << ", by definition " << want << "\n";
  RC_ASSERT(std::abs(got - want) <= 2e-12);
}

// Negative control: ties change the answer, so a ranking that breaks ties by position instead of
// averaging them is told apart. x = (1, 1, 2) ranks (1.5, 1.5, 3); broken ties would give
// (1, 2, 3) and a correlation of exactly 1 with y = (1, 2, 3), against sqrt(3)/2 averaged.
BOOST_AUTO_TEST_CASE(RC_negative_control_tied_ranks_are_averaged) {
  const std::vector<double> x{1, 1, 2}, y{1, 2, 3};
  BOOST_TEST(mean_ranks_by_counting(x) == (std::vector<double>{1.5, 1.5, 3}));
  BOOST_TEST(std::abs(nsv::engine::spearman(x, y) - std::sqrt(3.0) / 2) <= 1e-15);
  BOOST_TEST(textbook_pearson({1, 2, 3}, y) == 1.0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
