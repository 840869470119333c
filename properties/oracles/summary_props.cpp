// Oracle O3 (issue 13): the per-rank comparison summaries of compare_with_target
// (lib/src/strategies.cpp) against a direct formula, on head-aligned layouts with more ranks
// than KV groups, where the ranks past KV hold nothing (zero width).
//
// The documented summaries (strategies.hpp, metrics.hpp): per rank holding a non-empty shard,
// rel_diff = ||out - ref||_F / ||ref||_F, cosine = <out, ref> / (||out|| ||ref||), norm_ratio =
// ||out|| / ||ref||, ref the rank's block of the target; rel_diff_mean and rel_diff_max over those
// ranks only (a zero-width rank neither counts nor adds 0); bit_identical over every element.
//
// What makes the oracle independent: the sums of squares and products are plain loops in long
// double over the rank's rows of the target, indexed from the head-aligned sizes written out here
// (KV groups per rank, not nsv::split); no nsv::rel_diff, cosine, norm_ratio, norm or split.
// Kind: bounded per rank (the two sides sum the same terms in different orders and precisions),
// exact for the mean and max as functions of the per-rank values, and exact for which ranks count.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "check.hpp"
#include "generators/configs.hpp"
#include "generators/tiers.hpp"
#include "nsv/strategies.hpp"
#include "sharding/layout_generators.hpp"

using namespace nsv;
using namespace nsv::checks::shard;

namespace {

// The rows each rank holds under the head-aligned rule, written from its documentation
// (layout.hpp): rank r holds KV/tp KV groups, one more for r < KV % tp, each dim/KV rows.
std::vector<std::int64_t> rows_per_rank(std::int64_t dim, std::int64_t kv, int tp) {
  std::vector<std::int64_t> rows;
  for (int r = 0; r < tp; ++r) rows.push_back((kv / tp + (r < kv % tp ? 1 : 0)) * (dim / kv));
  return rows;
}

struct Direct {
  double rel_diff, cosine, norm_ratio;
};

// The three measures of out against rows [first, first + out.rows()) of target.
Direct direct_measures(const MatD& out, const MatD& target, std::int64_t first) {
  long double diff2 = 0, out2 = 0, ref2 = 0, dot = 0;
  for (Eigen::Index i = 0; i < out.rows(); ++i)
    for (Eigen::Index j = 0; j < out.cols(); ++j) {
      const long double a = out(i, j), b = target(first + i, j);
      diff2 += (a - b) * (a - b);
      out2 += a * a;
      ref2 += b * b;
      dot += a * b;
    }
  return {static_cast<double>(std::sqrt(diff2 / ref2)), static_cast<double>(dot / std::sqrt(out2 * ref2)),
          static_cast<double>(std::sqrt(out2 / ref2))};
}

// How far nsv's fp64 evaluation of one measure may be from the direct one, relative to it. nsv
// forms n squares (or products) and their sums in fp64: each term carries <= 3u (one subtraction,
// one product; 1u for out2, ref2, dot terms without a subtraction), each running sum of n terms
// <= (n - 1)u relative (nonnegative terms; for the dot product relative to sum |a b|, which for
// cosine near 1 is the dot itself), a square root halves a relative error and adds u, a quotient
// or product of two adds u. For rel_diff: (3u + (n-1)u)/2 + u for each norm, + u for the quotient:
// (n + 2)u + 2u = (n + 4)u; the same or less for norm_ratio; cosine: dot (n u) and two norms
// ((n + 1)u/2 + u each) and two operations: (2n + 5)u. The long double side is ~2^11 times more
// accurate and neglected. The dot product's error is relative to sum |a b| <= ||a|| ||b||, so for
// cosine the bound is absolute (value 1): (2n + 5)u. A rank whose output equals its block
// bitwise gives exactly 0 on both sides.
double measure_bound(double value, std::int64_t n, double factor_n, double constant) {
  constexpr double u = 0x1p-53;
  return (factor_n * static_cast<double>(n) + constant) * u * std::abs(value);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(oracle_summaries)

// =============================================================================================
// O3 compare_with_target's per-rank measures and its mean and max over non-empty ranks equal the
// direct formula on head-aligned layouts where some ranks hold nothing.
NSV_PROPERTY(O3_comparison_summaries_equal_the_direct_formula_with_zero_width_ranks, ()) {
  const HeadCase hc = *rc::gen::suchThat(head_cases(rc::gen::inRange(2, 9), 24), [](const HeadCase& c) { return c.tp > c.kv; });
  const Strategy strategy = *rc::gen::element(Strategy::shard, Strategy::gather);
  RC_TAG(strategy_name(strategy));
  NsConfig ns;
  ns.kernel = *rc::gen::arbitrary<Kernel>();
  const MatD g = hc.matrix();
  const Layout layout = hc.layout();
  const auto rows = rows_per_rank(hc.rows(), hc.kv, hc.tp);
  const MatD target = target_result(Target::whole, backend(), g, hc.head_dim, ns);
  const StrategyRun run = run_strategy(strategy, backend(), shard_matrix(g, layout, hc.head_dim), ns);
  const Comparison c = compare_with_target(run, target, layout);

  RC_ASSERT(static_cast<int>(c.ranks.size()) == hc.tp);
  double sum = 0, max = 0;
  int counted = 0;
  std::int64_t first = 0;
  for (int r = 0; r < hc.tp; ++r) {
    const auto i = static_cast<std::size_t>(r);
    const RankComparison& rank = c.ranks[i];
    RC_LOG() << "rank " << r << ": " << rows[i] << " rows, rel_diff " << checks::exact(rank.rel_diff) << "\n";
    RC_ASSERT(rank.rows == rows[i]);
    if (rows[i] == 0) {
      first += rows[i];
      continue;
    }
    const Direct d = direct_measures(run.outputs[i], target, first);
    const std::int64_t n = rows[i] * hc.in;
    RC_ASSERT_WITHIN(std::abs(rank.rel_diff - d.rel_diff), measure_bound(d.rel_diff, n, 1, 4), "(n + 4) u (measure_bound)");
    RC_ASSERT_WITHIN(std::abs(rank.norm_ratio - d.norm_ratio), measure_bound(d.norm_ratio, n, 1, 4), "(n + 4) u (measure_bound)");
    RC_ASSERT_WITHIN(std::abs(rank.cosine - d.cosine), measure_bound(1.0, n, 2, 5), "(2n + 5) u absolute (measure_bound)");
    sum += rank.rel_diff;
    max = std::max(max, rank.rel_diff);
    ++counted;
    first += rows[i];
  }
  RC_ASSERT(counted < hc.tp);  // the layouts drawn hold zero-width ranks
  RC_ASSERT(c.rel_diff_mean == sum / counted);
  RC_ASSERT(c.rel_diff_max == max);
}

// Negative control: counting the zero-width ranks (as zeros) would change the mean: on some drawn
// case with rel_diff > 0 (the per-shard strategy), sum / tp differs from sum / non-empty ranks,
// so the exact comparison above sees a mean over the wrong set of ranks.
BOOST_AUTO_TEST_CASE(O3_negative_control_mean_over_all_ranks_differs) {
  const auto gen = rc::gen::suchThat(head_cases(rc::gen::inRange(2, 9), 24), [](const HeadCase& c) { return c.tp > c.kv; });
  int seen = 0;
  for (int seed = 0; seed < 20; ++seed) {
    const HeadCase hc = nsv::checks::sample(gen, static_cast<std::uint64_t>(seed));
    NsConfig ns;
    const MatD g = hc.matrix();
    const Layout layout = hc.layout();
    const StrategyRun run = run_strategy(Strategy::shard, backend(), shard_matrix(g, layout, hc.head_dim), ns);
    const Comparison c = compare_with_target(run, target_result(Target::whole, backend(), g, hc.head_dim, ns), layout);
    double sum = 0;
    for (const auto& r : c.ranks) sum += r.rel_diff;
    if (c.rel_diff_mean != sum / hc.tp) ++seen;
  }
  BOOST_TEST_MESSAGE("mean over all ranks differs from the reported mean on " << seen << " of 20 draws");
  BOOST_CHECK(seen > 0);
}

BOOST_AUTO_TEST_SUITE_END()
