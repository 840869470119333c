// Sharding properties S5 (the all-reduce strategies stay within rounding noise of the whole
// kernel) and S7 (the reduction order changes fp32 bits at rounding level; how NS amplifies it).
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "check.hpp"
#include "generators/configs.hpp"
#include "generators/tiers.hpp"
#include "generators/transforms.hpp"
#include "sharding/layout_generators.hpp"
#include "nsv/communicator.hpp"
#include "nsv/strategies.hpp"
#include "reference_runs.hpp"
#include "sharding/allreduce_bound.hpp"
#include "sharding/sharding_support.hpp"

using namespace nsv;
using namespace nsv::checks::shard;

BOOST_AUTO_TEST_SUITE(sharding_bounded)

// S5 gram_allreduce and gram_restart_allreduce vs whole (bounded; derivation and the reason for
// sides >= kTwoDrawMinSide in tolerances.hpp). Any shape with both sides in [16, max_dim], tp 2..8, either
// axis, uneven splits (grain rule with remainders, grain 64, head-aligned), both kernels, fp32,
// keller x 5. Reported: rel_diff(dist32, whole32) / own(whole32) (dist vs whole in units of the kernel's error),
// the SPEC's ratio rel_diff(dist32, whole64) / own(whole32) (an independent PyTorch check found
// <= 1.3), and how the algorithm's own error compares with the whole kernel's, per strategy,
// split axis (long / short) and kernel.
BOOST_AUTO_TEST_CASE(S5_allreduce_strategies_stay_within_twice_the_kernels_own_fp32_error) {
  std::map<std::string, Stats> ratio, spec_ratio, orientation;
  Stats margin("S5 (rel_diff(dist, whole) - N1) / S, all cases");
  Stats noise("S5 1-step rel_diff(dist32, whole32) (N1), all cases");
  const auto prop = [&] {
    S5Case c;
    c.shard = *shard_cases(parallel_tp_degrees(), checks::kTwoDrawMinSide, nsv::checks::max_dim());
    c.kernel = *rc::gen::arbitrary<Kernel>();
    const MatD g = c.shard.matrix();
    c.draw(g.rows(), g.cols());
    NsConfig cfg;
    cfg.kernel = c.kernel;
    cfg.dtype = DType::fp32;
    for (Strategy s : {Strategy::gram_allreduce, Strategy::gram_restart_allreduce}) {
      const S5Measure m = measure_s5(s, g, c.shard.layout(), cfg, &c);
      RC_LOG() << strategy_name(s) << ": rel(dist,whole) " << checks::exact(m.dist_vs_whole) << ", own whole "
               << m.own_whole << ", own same-algorithm " << m.own_ref << ", S " << m.scale << ", N1 " << m.noise1 << "\n";
      RC_ASSERT_WITHIN(m.dist_vs_whole, 2 * m.scale + m.noise1, kS5Derivation);
      const std::string grp = group_name(s, m, c.kernel);
      ratio.try_emplace(grp, "S5 rel_diff(dist32, whole32) / rel_diff(whole32, whole64): " + grp).first->second.add(m.dist_vs_whole / m.own_whole);
      spec_ratio.try_emplace(grp, "S5 rel_diff(dist32, whole64) / rel_diff(whole32, whole64): " + grp).first->second.add(m.dist_vs_exact / m.own_whole);
      orientation.try_emplace(grp, "S5 own error of the strategy's algorithm on one rank / whole kernel's: " + grp).first->second.add(m.own_ref / m.own_whole);
      margin.add((m.dist_vs_whole - m.noise1) / m.scale);
      noise.add(m.noise1);
    }
  };
  checks::check_property(prop);
  for (auto* group : {&ratio, &spec_ratio, &orientation})
    for (auto& [name, st] : *group) st.report();
  margin.report();
  noise.report();
}

// The figures at a fixed shape: 128 x 256 (the seed's 512 x 1024 aspect) at tp 2 and 4, both
// axes, both kernels, both strategies: 1-step and 5-step rel_diff against whole, the kernel's own
// error, the bound, and the number of all-reduces each performed.
BOOST_AUTO_TEST_CASE(S5_figures_at_128x256_one_and_five_steps) {
  ++checks::tally().quantified;
  const MatD g = gaussian(128, 256, 5);
  for (Kernel k : {Kernel::standard, Kernel::gram})
    for (Strategy s : {Strategy::gram_allreduce, Strategy::gram_restart_allreduce})
      for (int tp : {2, 4})
        for (int axis : {0, 1}) {
          NsConfig cfg;
          cfg.kernel = k;
          const Layout layout = even_layout(axis, axis == 0 ? 128 : 256, tp);
          const S5Measure m = measure_s5(s, g, layout, cfg, nullptr);
          std::cout << "[figure] S5 128x256 " << kernel_name(k) << " " << strategy_name(s) << " tp " << tp << " axis " << axis
                    << (m.long_split ? " (long)" : " (short)") << ": 1-step " << m.noise1 << ", 5-step " << m.dist_vs_whole
                    << " (own whole " << m.own_whole << ", own same-algorithm " << m.own_ref << ", ratio to own "
                    << m.dist_vs_whole / m.own_whole << "), " << m.all_reduces << " all-reduces" << std::endl;
          BOOST_TEST(m.dist_vs_whole <= 2 * m.scale + m.noise1, kS5Derivation);
          // Quantified finding: on a short-axis split (here dim 0 of a wide matrix, as k/v_proj
          // under GQA) the Gram the all-reduce can form is the large, rank-deficient one over the
          // long axis. The standard loop does not mind (its own error stays that of the kernel);
          // the gram loop's Q then carries eigenvalues a^k (~12 after 2 steps, ~41 after 3) on
          // the null space, and its fp32 error grows ~10x over the gram kernel's, which iterates
          // on the small side. (Should the library fall back to the standard loop there, as the
          // whole kernel does for its own orientation, this is the check to update.)
          if (!m.long_split) {
            if (s == Strategy::gram_restart_allreduce)
              BOOST_TEST(m.own_ref > 2 * m.own_whole, "gram_restart_allreduce short-axis own error " << m.own_ref
                                                                                                  << " vs whole " << m.own_whole);
            else
              BOOST_TEST(m.own_ref < 2 * m.own_whole);
          }
          // the ledger of SPEC §3: steps Gram + 1 scalar; restart: 2 Gram + 1 scalar
          BOOST_TEST(m.all_reduces == (s == Strategy::gram_allreduce ? 6 : 3));
        }
}

// =============================================================================================
// S7 reduction order.

namespace {

// gamma_k = k u / (1 - k u): the relative error bound of k rounded additions (Higham, Thm 4.2).
double gamma(int k) { return k * kUnitFp32 / (1 - k * kUnitFp32); }

// max over x in [0, 1] of |phi'(x)|, phi the 5-step scalar map: the Lipschitz constant of the
// odd function phi on [-1, 1], which bounds the Frobenius-norm Lipschitz constant of the matrix
// map X -> U phi(Sigma) V^T on matrices with ||X||_F <= 1 (Hermitian dilation: for odd phi it is a
// Hermitian matrix function, whose Frobenius Lipschitz constant is the scalar one). Evaluated on
// a grid of 2^20 points and enlarged by 1% (phi' is a polynomial; its variation between grid
// points of width 1e-6 is far below 1%).
double phi_lipschitz(const NsConfig& cfg) {
  double lip = 0;
  const int n = 1 << 20;
  for (int i = 0; i <= n; ++i) {
    double x = static_cast<double>(i) / n, d = 1;
    for (int s = 0; s < cfg.steps; ++s) {
      const Coeffs& k = cfg.coeffs.at_step(s);
      d *= k.a + x * x * (3 * k.b + 5 * k.c * x * x);
      x = scalar_step(k, x);
    }
    lip = std::max(lip, std::abs(d));
  }
  return 1.01 * lip;
}

MatD to_matd(const MatF& m) { return m.cast<double>(); }
MatF to_matf(const MatD& m) { return m.cast<float>(); }

double frob(const MatD& m) { return std::sqrt(m.cwiseAbs2().sum()); }

}  // namespace

// S7a (bounded): every all-reduce order's fp32 sum is within gamma_{tp-1} sum|x| of the exact
// sum, elementwise (tp - 1 rounded additions in any order, tree included, whose depth is at most
// tp - 1); so two orders differ by at most 2 gamma_{tp-1} sum|x|. At tp = 2 every order adds the
// same two numbers, and fp addition is commutative: the orders agree bit for bit (exact).
NSV_PROPERTY(S7_every_reduction_order_is_within_rounding_of_the_exact_sum, ()) {
  const int tp = *parallel_tp_degrees();
  const auto rows = *rc::gen::inRange<std::int64_t>(1, nsv::checks::max_dim() + 1);
  const auto cols = *rc::gen::inRange<std::int64_t>(1, nsv::checks::max_dim() + 1);
  const auto seed = *matrix_seeds();
  std::vector<MatF> parts;
  for (int r = 0; r < tp; ++r) parts.push_back(to_matf(gaussian(rows, cols, seed + static_cast<std::uint64_t>(r))));
  std::vector<MatD> sums;
  for (ReductionOrder o : kAllReductionOrders) {
    auto comm = make_simulated_communicator(tp, o);
    const MatF s = comm->all_reduce(parts, DType::fp32);
    for (Eigen::Index i = 0; i < s.size(); ++i) {
      long double exact = 0, magnitude = 0;
      for (const auto& p : parts) {
        exact += p.data()[i];
        magnitude += std::abs(static_cast<long double>(p.data()[i]));
      }
      const double err = static_cast<double>(std::abs(static_cast<long double>(s.data()[i]) - exact));
      RC_ASSERT_WITHIN(err, gamma(tp - 1) * static_cast<double>(magnitude),
                       "gamma_{tp-1} sum|x|: tp-1 rounded fp32 additions in any order");
    }
    sums.push_back(to_matd(s));
  }
  if (tp == 2)
    for (std::size_t k = 1; k < sums.size(); ++k) RC_ASSERT_BIT_IDENTICAL(sums[k], sums[0], DType::fp32, "tp 2: order " + std::to_string(k) + " vs rank order");
}

// S7b (quantified + bounded): how NS amplifies the reduction-order difference of a gradient.
// The gradient is the sum of tp per-rank Gaussian contributions; G_a is its rank-order fp32 sum,
// G_b the sum in the order (reverse, ring, tree) that differs most from it; delta =
// rel_diff(G_b, G_a). Reported: delta, and update rel_diff / delta for the fp32 and fp64
// kernels. Asserted:
//  - exact: identical gradients give identical updates (the kernel is deterministic);
//  - bounded (fp64): rel_diff(NS64(G_b), NS64(G_a)) <= 2 L delta / ||NS64(G_a)||_F (+ 1e-12):
//    the normalized inputs differ by at most 2 delta in Frobenius norm (||x/|x| - y/|y||| <=
//    2 ||x - y|| / |x|), the map on normalized inputs has Lipschitz constant L = max |phi'| on
//    [0, 1] (phi_lipschitz above), and float64's own rounding is ~1e-15;
//  - fp32 amplification is finite.
BOOST_AUTO_TEST_CASE(S7_ns_amplification_of_reduction_order_differences) {
  ++checks::tally().quantified;
  std::map<std::string, Stats> stats;
  auto stat = [&](const std::string& name) -> Stats& { return stats.try_emplace(name, "S7 " + name).first->second; };
  NsConfig base;
  const double lip = phi_lipschitz(base);
  std::cout << "[figure] S7 Lipschitz constant of the keller x 5 scalar map on [0, 1] (with 1% margin): " << lip << std::endl;
  const auto prop = [&] {
    const int tp = *rc::gen::inRange(3, 9);
    const auto rows = *rc::gen::inRange<std::int64_t>(2, nsv::checks::max_dim() + 1);
    const auto cols = *rc::gen::inRange<std::int64_t>(2, nsv::checks::max_dim() + 1);
    const auto seed = *matrix_seeds();
    const Kernel kernel = *rc::gen::arbitrary<Kernel>();
    std::vector<MatF> parts;
    for (int r = 0; r < tp; ++r) parts.push_back(to_matf(gaussian(rows, cols, seed + static_cast<std::uint64_t>(r))));
    const MatD ga = to_matd(make_simulated_communicator(tp, ReductionOrder::rank)->all_reduce(parts, DType::fp32));
    MatD gb = ga;
    double delta = 0;
    for (ReductionOrder o : {ReductionOrder::reverse, ReductionOrder::ring, ReductionOrder::tree}) {
      const MatD s = to_matd(make_simulated_communicator(tp, o)->all_reduce(parts, DType::fp32));
      if (rel_diff(s, ga) > delta) {
        delta = rel_diff(s, ga);
        gb = s;
      }
      std::int64_t differing = 0;
      for (Eigen::Index i = 0; i < s.size(); ++i) differing += s.data()[i] != ga.data()[i];
      stat(std::string("fraction of gradient elements differing from rank order, order ") + std::string(reduction_order_name(o)))
          .add(static_cast<double>(differing) / static_cast<double>(s.size()));
    }
    NsConfig c32;
    c32.kernel = kernel;
    NsConfig c64 = c32;
    c64.dtype = DType::fp64;
    const MatD a32 = newton_schulz(backend(), ga, c32), b32 = newton_schulz(backend(), gb, c32);
    const MatD a64 = newton_schulz(backend(), ga, c64), b64 = newton_schulz(backend(), gb, c64);
    if (delta == 0) {
      RC_ASSERT_BIT_IDENTICAL(b32, a32, DType::fp32, "identical gradients, fp32 updates");
      return;
    }
    const double upd64 = rel_diff(b64, a64), upd32 = rel_diff(b32, a32);
    RC_LOG() << "tp " << tp << " " << rows << "x" << cols << " " << kernel_name(kernel) << ": delta " << checks::exact(delta)
             << ", update rel diff fp64 " << upd64 << ", fp32 " << upd32 << "\n";
    RC_ASSERT_WITHIN(upd64, 2 * lip * delta / frob(a64) + 1e-12,
                     "2 L delta / ||NS(G_a)||_F: normalization at most doubles the relative perturbation, the map's "
                     "Lipschitz constant is L");
    RC_ASSERT(std::isfinite(upd32 / delta));
    stat("gradient rel_diff between reduction orders (largest of reverse/ring/tree vs rank), tp 3..8").add(delta);
    stat(std::string("amplification fp64 (update rel diff / gradient rel diff), ") + std::string(kernel_name(kernel))).add(upd64 / delta);
    stat(std::string("amplification fp32 (update rel diff / gradient rel diff), ") + std::string(kernel_name(kernel))).add(upd32 / delta);
    stat(std::string("fp64 amplification / its bound 2L/||NS||, ") + std::string(kernel_name(kernel)))
        .add(upd64 / delta / (2 * lip / frob(a64)));
  };
  checks::check_property(prop);
  for (auto& [name, st] : stats) st.report();
  // negative control: at tp >= 3 the orders do change bits somewhere
  BOOST_TEST(stat("fraction of gradient elements differing from rank order, order reverse").max() > 0.0);
  BOOST_TEST(stat("fraction of gradient elements differing from rank order, order tree").max() > 0.0);
}

BOOST_AUTO_TEST_SUITE_END()
