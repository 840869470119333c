// Sharding property S6 (SPEC §4): `shard` (NS on each rank's own shard, AutoTP today) diverges
// from whole-matrix NS (negative control, quantified), and the seed's figures (SPEC §5).
#include <boost/test/unit_test.hpp>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "check.hpp"
#include "generators/configs.hpp"
#include "generators/tiers.hpp"
#include "sharding/layout_generators.hpp"
#include "nsv/strategies.hpp"
#include "convergence_band.hpp"
#include "sharding/sharding_support.hpp"

using namespace nsv;
using namespace nsv::checks::shard;

BOOST_AUTO_TEST_SUITE(sharding_divergence)

// S6 (quantified, negative control): on Gaussian inputs, at tp >= 2 on either axis, the update
// `shard` produces differs from whole-matrix NS by more than 0.1 (rel_diff of the assembled
// update against the whole result), for both kernels. Generated: any shape up to the tier's
// limit (1 x n and n x 1 included), any split rule that leaves at least two ranks holding
// something (with one non-empty rank `shard` is `whole`); asserted on the domain below.
//
// Domain of the assertion (measured first, then fixed; outside it the divergence is reported,
// not asserted):
//  - balanced splits: the non-empty shards within 2x of each other in width, as AutoTP's
//    head-aligned and grain-1 rules give. A grain-64 split of 65 rows into 64 + 1 leaves one rank
//    with nearly the whole matrix (measured 0.099);
//  - both sides >= 4: a 2 x 2 or 2 x 4 Gaussian matrix is often nearly rank one, and then every
//    row's own NS is nearly the matching row of the whole NS (measured 0.07);
//  - any aspect for a split of the long axis (minimum over 130000 shapes with sides 4..128:
//    0.275);
//  - for a split of the short axis, that side >= 8 and the long side at most 4x it (minimum over
//    140000 shapes up to 128: 0.146). Outside, coincidences of the scalar map: the shards of a
//    very tall matrix cut into a few columns hold nearly orthogonal columns of nearly equal norm,
//    so whole-matrix NS scales each column by about phi(1/sqrt(k)) and shard NS by phi(1) (phi:
//    keller x 5 on a normalized singular value, k columns in all); phi oscillates instead of
//    converging to 1, and phi(1/sqrt 3) = 0.686 vs phi(1) = 0.696, so 128 x 3 at tp 3 diverges by
//    as little as 0.02 (3 x 11 cut 2 + 1 rows: 0.065; 115 x 8 at tp 4: 0.090).
BOOST_AUTO_TEST_CASE(S6_shard_diverges_from_whole_by_more_than_a_tenth) {
  std::map<std::string, Stats> stats;
  auto stat = [&](const std::string& name) -> Stats& { return stats.try_emplace(name, "S6 " + name).first->second; };
  const auto prop = [&] {
    const auto rows = *rc::gen::inRange<std::int64_t>(1, nsv::checks::max_dim() + 1);
    const auto cols = *rc::gen::inRange<std::int64_t>(1, nsv::checks::max_dim() + 1);
    const int axis = *axes();
    const std::int64_t dim = axis == 0 ? rows : cols;
    RC_PRE(dim >= 2);
    const int tp = *rc::gen::inRange(2, static_cast<int>(std::min<std::int64_t>(8, dim)) + 1);
    const SplitRule rule = *split_rules(dim, tp);
    const auto sizes = rule.sizes();
    RC_PRE(std::count_if(sizes.begin(), sizes.end(), [](auto s) { return s > 0; }) >= 2);
    const Kernel kernel = *rc::gen::arbitrary<Kernel>();
    const MatD g = gaussian(rows, cols, *matrix_seeds());
    NsConfig cfg;
    cfg.kernel = kernel;
    const Layout layout = contiguous_layout(axis, sizes);
    const MatD whole = newton_schulz(backend(), g, cfg);
    const auto run = run_strategy(Strategy::shard, backend(), shard_matrix(g, layout), cfg);
    const double d = rel_diff(assemble(run.outputs, layout), whole);
    const auto cmp = compare_with_target(run, whole, layout);
    RC_LOG() << "rel_diff(shard, whole) = " << checks::exact(d) << " (" << layout_text(layout) << ")\n";
    const std::int64_t other = axis == 0 ? cols : rows;
    const bool long_split = dim >= other;
    std::int64_t widest = 0, narrowest = dim;
    for (auto w : sizes)
      if (w > 0) {
        widest = std::max(widest, w);
        narrowest = std::min(narrowest, w);
      }
    const bool balanced = widest <= 2 * narrowest;
    const bool asserted = balanced && std::min(rows, cols) >= 4 && (long_split || (dim >= 8 && other <= 4 * dim));
    if (asserted) RC_ASSERT(d > 0.1);
    stat(std::string("rel_diff(shard assembled, whole), ") +
         (!asserted ? "outside the asserted domain (reported only)"
          : long_split ? "balanced long-axis split, sides >= 4"
                       : "balanced short-axis split, short side >= 8, aspect <= 4"))
        .add(d);
    stat("per-rank mean rel_diff, all cases").add(cmp.rel_diff_mean);
  };
  checks::check_property(prop);
  for (auto& [name, st] : stats) st.report();
}

// The seed table (SPEC §5): shard on 512 x 1024, 5 steps, fp32, per-rank rel_diff against the
// matching block of the whole NS, mean over ranks, averaged over 5 Gaussian matrices (seeds
// 1..5), within +-0.02 of the seed's single-matrix figures (SPEC: Gaussian expectations match to
// about +-0.01; one matrix's spread is of that order). One whole NS per seed and kernel is shared
// by the four (tp, axis) cells.
BOOST_AUTO_TEST_CASE(S6_seed_table_512x1024_is_reproduced) {
  ++checks::tally().quantified;
  struct Cell {
    int tp, axis;
    double seed_gram, seed_standard;
  };
  const std::array<Cell, 4> cells = {{{2, 0, 0.3435, 0.3418}, {2, 1, 0.6831, 0.6758}, {4, 0, 0.3821, 0.3809}, {4, 1, 0.6646, 0.6602}}};
  constexpr int kSeeds = 5;
  std::map<std::pair<int, int>, std::array<double, 2>> mean;  // (kernel, cell) -> sum
  for (int seed = 1; seed <= kSeeds; ++seed) {
    const MatD g = gaussian(512, 1024, static_cast<std::uint64_t>(seed));
    for (Kernel k : {Kernel::gram, Kernel::standard}) {
      NsConfig cfg;
      cfg.kernel = k;
      const MatD whole = newton_schulz(backend(), g, cfg);
      std::cout << "[figure] S6 seed " << seed << " " << kernel_name(k) << ":";
      for (std::size_t i = 0; i < cells.size(); ++i) {
        const Layout layout = even_layout(cells[i].axis, cells[i].axis == 0 ? 512 : 1024, cells[i].tp);
        const auto run = run_strategy(Strategy::shard, backend(), shard_matrix(g, layout), cfg);
        const double d = compare_with_target(run, whole, layout).rel_diff_mean;
        mean[{static_cast<int>(k), static_cast<int>(i)}][0] += d / kSeeds;
        std::cout << " tp" << cells[i].tp << "/dim" << cells[i].axis << " " << d;
      }
      std::cout << std::endl;
    }
  }
  for (Kernel k : {Kernel::gram, Kernel::standard}) {
    std::cout << "[figure] S6 seed table 512x1024 " << kernel_name(k) << " (mean of 5 seeds; seed's figure):";
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const double m = mean[{static_cast<int>(k), static_cast<int>(i)}][0];
      const double ref = k == Kernel::gram ? cells[i].seed_gram : cells[i].seed_standard;
      std::cout << " tp" << cells[i].tp << "/dim" << cells[i].axis << " " << m << " (" << ref << ")";
      BOOST_TEST(std::abs(m - ref) <= 0.02,
                 kernel_name(k) << " tp " << cells[i].tp << " dim " << cells[i].axis << ": " << m << " vs seed " << ref);
    }
    std::cout << std::endl;
  }
}

// The kernel isolation: 256 x 256, tp 2, dim-0 split; the seed measured 0.5273 / 0.5234
// on one matrix (and 0.53 for both kernels). Mean over ranks and 5 Gaussian matrices in
// [0.52, 0.53], both kernels.
BOOST_AUTO_TEST_CASE(S6_seed_figure_256x256_tp2_dim0) {
  ++checks::tally().quantified;
  for (Kernel k : {Kernel::gram, Kernel::standard}) {
    NsConfig cfg;
    cfg.kernel = k;
    double m = 0;
    std::cout << "[figure] S6 256x256 tp2 dim0 " << kernel_name(k) << " per seed (rank 0 / rank 1):";
    for (int seed = 1; seed <= 5; ++seed) {
      const MatD g = gaussian(256, 256, static_cast<std::uint64_t>(seed));
      const Layout layout = even_layout(0, 256, 2);
      const auto c = compare_with_target(run_strategy(Strategy::shard, backend(), shard_matrix(g, layout), cfg),
                                         newton_schulz(backend(), g, cfg), layout);
      std::cout << " " << c.ranks[0].rel_diff << "/" << c.ranks[1].rel_diff;
      m += c.rel_diff_mean / 5;
    }
    std::cout << "; mean " << m << std::endl;
    BOOST_TEST(m >= 0.52);
    BOOST_TEST(m <= 0.53);
  }
}

// The coincidence behind the S6 domain: a tall 128 x 3 Gaussian matrix split into its 3 columns
// (tp 3, dim 1). With exactly orthogonal columns of equal norm the divergence would be
// |phi(1) / phi(1/sqrt 3) - 1| = 0.016; the columns' spread of norms and angles (singular values
// 1/sqrt 3 +- ~15%, where phi is steep) adds to it. Quantified: reported over 10 matrices, and
// asserted that the > 0.1 claim does fail here for some of them (the reason it is not asserted
// for short-axis splits of aspect > 4).
BOOST_AUTO_TEST_CASE(S6_short_axis_split_of_an_extreme_aspect_matrix_can_nearly_agree) {
  ++checks::tally().quantified;
  NsConfig cfg;
  const auto phi = [&](double x) { return checks::scalar_map(cfg, x); };
  const double predicted = std::abs(phi(1.0) / phi(1.0 / std::sqrt(3.0)) - 1.0);
  Stats st("S6 128x3 split in columns at tp 3, rel_diff(shard, whole) over seeds 1..10");
  for (int seed = 1; seed <= 10; ++seed) {
    const MatD g = gaussian(128, 3, static_cast<std::uint64_t>(seed));
    const Layout layout = even_layout(1, 3, 3);
    const double d = rel_diff(assemble(run_strategy(Strategy::shard, backend(), shard_matrix(g, layout), cfg).outputs, layout),
                              newton_schulz(backend(), g, cfg));
    st.add(d);
  }
  BOOST_TEST(st.min() < 0.1);
  std::cout << "[figure] S6 phi(1) = " << phi(1.0) << ", phi(1/sqrt 2) = " << phi(1 / std::sqrt(2.0)) << ", phi(1/sqrt 3) = "
            << phi(1 / std::sqrt(3.0)) << "; predicted column-split divergence at k = 3: " << predicted << std::endl;
  st.report();
}

BOOST_AUTO_TEST_SUITE_END()
