// Muon-step properties M1-M3 (SPEC §4) and the Muon golden check against DeepSpeed's own
// muon_update sequences (fixtures/golden/deepspeed/mu_019_*, mu_020_*).
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "sharding/allreduce_bound.hpp"
#include "check.hpp"
#include "generators/configs.hpp"
#include "generators/tiers.hpp"
#include "generators/transforms.hpp"
#include "sharding/layout_generators.hpp"
#include "nsv/muon.hpp"
#include "nsv/npy.hpp"
#include "nsv/strategies.hpp"
#include "sharding/sharding_support.hpp"

using namespace nsv;
using namespace nsv::checks::shard;

namespace {

// A momentum buffer: zero (the first step) or a previous EMA of gradients (Gaussian x 0.1).
MatD initial_momentum(std::int64_t rows, std::int64_t cols, bool zero, std::uint64_t seed) {
  if (zero) return MatD::Zero(rows, cols);
  return (gaussian(rows, cols, seed) * 0.1).cast<float>().cast<double>();
}

struct StepCase {
  MuonConfig cfg;
  bool zero_momentum = true;
  std::uint64_t momentum_seed = 0, grad_seed = 0;
};

void showValue(const StepCase& c, std::ostream& os) {
  os << kernel_name(c.cfg.ns.kernel) << " " << dtype_name(c.cfg.ns.dtype) << " accumulate=" << accumulate_name(c.cfg.ns.accumulate) << " "
     << c.cfg.ns.coeffs.name << " steps=" << c.cfg.ns.steps << (c.cfg.nesterov ? " nesterov" : " plain momentum")
     << (c.zero_momentum ? ", zero momentum" : ", momentum seed " + std::to_string(c.momentum_seed)) << ", grad seed "
     << c.grad_seed;
}

rc::Gen<StepCase> step_cases(rc::Gen<NsConfig> ns = nsv::checks::ns_configs()) {
  return rc::gen::map(rc::gen::tuple(ns, rc::gen::arbitrary<bool>(), rc::gen::arbitrary<bool>(), matrix_seeds(), matrix_seeds()),
                      [](const std::tuple<NsConfig, bool, bool, std::uint64_t, std::uint64_t>& t) {
                        StepCase c;
                        c.cfg.ns = std::get<0>(t);
                        c.cfg.nesterov = std::get<1>(t);
                        c.cfg.scale_from = ScaleFrom::global;
                        c.zero_momentum = std::get<2>(t);
                        c.momentum_seed = std::get<3>(t);
                        c.grad_seed = std::get<4>(t);
                        return c;
                      });
}

}  // namespace

// =============================================================================================
// M1 one Muon step at tp = N with an exact strategy equals tp = 1, including the momentum and
// the scale from the global shape. Kind: exact (gather, owner: the same fp32 elementwise momentum
// arithmetic on the same values, then the same NS; per_head with the per-head target). Two
// consecutive steps, so the second starts from the first's momentum.

BOOST_AUTO_TEST_SUITE(sharding_muon)

NSV_PROPERTY(M1_muon_step_with_gather_or_owner_equals_tp_1_bit_for_bit, ()) {
  const ShardCase sc = *shard_cases();
  const StepCase c = *step_cases();
  const Strategy strategy = *rc::gen::element(Strategy::gather, Strategy::owner);
  const Layout layout = sc.layout();
  MatD mom_whole = initial_momentum(sc.rows, sc.cols, c.zero_momentum, c.momentum_seed);
  std::vector<MatD> mom_shards = split(mom_whole, layout);
  for (int step = 0; step < 2; ++step) {
    const MatD grad = gaussian(sc.rows, sc.cols, c.grad_seed + static_cast<std::uint64_t>(step));
    const MatD whole = muon_update(backend(), mom_whole, grad, c.cfg);
    const auto sharded = sharded_muon_update(backend(), mom_shards, split(grad, layout), layout, 0, strategy, c.cfg);
    const std::string at = std::string(strategy_name(strategy)) + " step " + std::to_string(step);
    RC_ASSERT_BIT_IDENTICAL(assemble(sharded.updates, layout), whole, DType::fp32, at + " update");
    RC_ASSERT_BIT_IDENTICAL(assemble(mom_shards, layout), mom_whole, DType::fp32, at + " momentum");
    for (double s : sharded.scales) RC_ASSERT(s == aspect_scale(sc.rows, sc.cols));
  }
}

NSV_PROPERTY(M1_muon_step_with_per_head_equals_per_head_muon_at_tp_1_bit_for_bit, ()) {
  const HeadCase hc = *head_cases();
  const StepCase c = *step_cases();
  const Layout layout = hc.layout();
  MatD mom_whole = initial_momentum(hc.rows(), hc.in, c.zero_momentum, c.momentum_seed);
  std::vector<MatD> mom_shards = split(mom_whole, layout);
  for (int step = 0; step < 2; ++step) {
    const MatD grad = gaussian(hc.rows(), hc.in, c.grad_seed + static_cast<std::uint64_t>(step));
    const MatD whole = muon_update(backend(), mom_whole, grad, c.cfg, hc.heads());
    const auto sharded =
        sharded_muon_update(backend(), mom_shards, split(grad, layout), layout, hc.head_dim, Strategy::per_head, c.cfg);
    RC_ASSERT_BIT_IDENTICAL(assemble(sharded.updates, layout), whole, DType::fp32, "per_head step " + std::to_string(step) + " update");
    RC_ASSERT_BIT_IDENTICAL(assemble(mom_shards, layout), mom_whole, DType::fp32, "per_head step " + std::to_string(step) + " momentum");
  }
}

// M1 for the all-reduce strategies: the momentum is exact (elementwise arithmetic on the same
// values); the update is bounded as in S5 (the strategy's NS output within 2 S + N1 of the whole
// kernel's), plus 2u for the fp32 rounding of the aspect scale applied to each.
NSV_PROPERTY(M1_muon_step_with_allreduce_strategies_is_within_rounding_of_tp_1, ()) {
  S5Case pc;
  pc.shard = *shard_cases(parallel_tp_degrees(), checks::kTwoDrawMinSide, nsv::checks::max_dim());
  NsConfig ns;
  ns.kernel = *rc::gen::arbitrary<Kernel>();
  const StepCase c = *step_cases(rc::gen::just(ns));
  const Strategy strategy = *rc::gen::element(Strategy::gram_allreduce, Strategy::gram_restart_allreduce);
  const Layout layout = pc.shard.layout();
  pc.draw(pc.shard.rows, pc.shard.cols);
  MatD mom_whole = initial_momentum(pc.shard.rows, pc.shard.cols, c.zero_momentum, c.momentum_seed);
  std::vector<MatD> mom_shards = split(mom_whole, layout);
  const MatD grad = gaussian(pc.shard.rows, pc.shard.cols, c.grad_seed);
  MatD mom_copy = mom_whole;
  const MatD blend = momentum_and_blend(mom_copy, grad, c.cfg);  // the NS input of both sides
  const MatD whole = muon_update(backend(), mom_whole, grad, c.cfg);
  const auto sharded = sharded_muon_update(backend(), mom_shards, split(grad, layout), layout, 0, strategy, c.cfg);
  RC_ASSERT_BIT_IDENTICAL(assemble(mom_shards, layout), mom_whole, DType::fp32, "momentum");
  const S5Measure m = measure_s5(strategy, blend, layout, c.cfg.ns, &pc);
  const double d = rel_diff(assemble(sharded.updates, layout), whole);
  RC_LOG() << strategy_name(strategy) << ": update rel diff " << checks::exact(d) << ", S " << m.scale << ", N1 " << m.noise1 << "\n";
  RC_ASSERT_WITHIN(d, 2 * m.scale + m.noise1 + 2 * kUnitFp32,
                   "2 S + N1 (S5) + 2u: the same aspect scale applied to both in fp32");
}

// =============================================================================================
// M2 the scale sqrt(rows/cols) (when rows > cols) from the local shard shape differs from the
// global one exactly when rows > cols for the shard or for the whole matrix. Kind: exact.

NSV_PROPERTY(M2_local_scale_differs_from_global_exactly_when_shard_or_whole_is_tall, ()) {
  const ShardCase sc = *shard_cases(tp_degrees(), 1, 4 * nsv::checks::max_dim());
  const Layout layout = sc.layout();
  const double global = aspect_scale(sc.rows, sc.cols);
  for (int r = 0; r < layout.tp(); ++r) {
    const std::int64_t w = layout.width(r);
    const std::int64_t rs = sc.axis == 0 ? w : sc.rows, cs = sc.axis == 0 ? sc.cols : w;
    const double local = aspect_scale(rs, cs);
    RC_LOG() << "rank " << r << " " << rs << "x" << cs << ": local " << local << ", global " << global << "\n";
    if (w == 0) {
      RC_ASSERT(local == 1.0);  // an empty shard has no aspect to scale by
      continue;
    }
    if (w == layout.dim) {
      RC_ASSERT(local == global);  // this rank holds everything
      continue;
    }
    RC_ASSERT((local != global) == (rs > cs || sc.rows > sc.cols));
  }
}

// The scales sharded_muon_update applies are the ones it reports: the shard's shape with
// ScaleFrom::local, the whole matrix's with ScaleFrom::global (1 for per_head, which scales each
// head block itself), and the update is the orthogonalized block times that scale.
NSV_PROPERTY(M2_sharded_muon_update_applies_and_reports_the_configured_scale, ()) {
  const ShardCase sc = *shard_cases(tp_degrees(), 1, nsv::checks::max_dim());
  MuonConfig cfg;
  cfg.ns.kernel = *rc::gen::arbitrary<Kernel>();
  const Layout layout = sc.layout();
  const MatD grad = gaussian(sc.rows, sc.cols, sc.seed);
  std::map<ScaleFrom, ShardedUpdate> runs;
  for (ScaleFrom from : {ScaleFrom::local, ScaleFrom::global}) {
    cfg.scale_from = from;
    std::vector<MatD> mom = split(MatD::Zero(sc.rows, sc.cols), layout);
    runs.emplace(from, sharded_muon_update(backend(), mom, split(grad, layout), layout, 0, Strategy::gather, cfg));
  }
  for (int r = 0; r < layout.tp(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    const std::int64_t w = layout.width(r);
    const std::int64_t rs = sc.axis == 0 ? w : sc.rows, cs = sc.axis == 0 ? sc.cols : w;
    const double sl = runs[ScaleFrom::local].scales[i], sg = runs[ScaleFrom::global].scales[i];
    RC_ASSERT(sl == aspect_scale(rs, cs));
    RC_ASSERT(sg == aspect_scale(sc.rows, sc.cols));
    // same NS output (gather), different scale: u_local = fl(y * sl), u_global = fl(y * sg), y fp32
    const MatD& ul = runs[ScaleFrom::local].updates[i];
    const MatD& ug = runs[ScaleFrom::global].updates[i];
    const MatD& y = runs[ScaleFrom::local].run.outputs[i];
    for (Eigen::Index e = 0; e < y.size(); ++e) {
      RC_ASSERT(ul.data()[e] == static_cast<double>(static_cast<float>(y.data()[e]) * static_cast<float>(sl)));
      RC_ASSERT(ug.data()[e] == static_cast<double>(static_cast<float>(y.data()[e]) * static_cast<float>(sg)));
    }
  }
}

// The figure of SPEC §1.4: gate_proj 11008 x 4096 at tp 2 (dim 0): the shard 5504 x 4096 scales by
// sqrt(5504/4096) = sqrt(43/32) = 1.1592, the whole by sqrt(11008/4096) = sqrt(43/16) = 1.6394.
// The sharded step is checked on 86 x 32 (the same aspect ratio, 43/16) for speed.
BOOST_AUTO_TEST_CASE(M2_gate_proj_scale_figures) {
  ++checks::tally().quantified;
  BOOST_TEST(aspect_scale(5504, 4096) == std::sqrt(43.0 / 32.0));
  BOOST_TEST(aspect_scale(11008, 4096) == std::sqrt(43.0 / 16.0));
  BOOST_TEST(std::abs(aspect_scale(5504, 4096) - 1.1592) < 5e-5);
  BOOST_TEST(std::abs(aspect_scale(11008, 4096) - 1.6394) < 5e-5);
  BOOST_TEST(aspect_scale(4096, 11008) == 1.0);  // down_proj: wide, no scale
  const Layout layout = even_layout(0, 86, 2);
  const MatD grad = gaussian(86, 32, 1);
  for (ScaleFrom from : {ScaleFrom::local, ScaleFrom::global}) {
    MuonConfig cfg;
    cfg.scale_from = from;
    for (Strategy s : {Strategy::shard, Strategy::gather}) {
      std::vector<MatD> mom = split(MatD::Zero(86, 32), layout);
      const auto u = sharded_muon_update(backend(), mom, split(grad, layout), layout, 0, s, cfg);
      const double expect = from == ScaleFrom::local ? std::sqrt(43.0 / 32.0) : std::sqrt(43.0 / 16.0);
      for (double v : u.scales) BOOST_TEST(v == expect);
      std::cout << "[figure] M2 86x32 (gate_proj aspect) tp 2 " << strategy_name(s) << " scale_from " << scale_from_name(from)
                << ": scales " << u.scales[0] << ", " << u.scales[1] << std::endl;
    }
  }
  std::cout << "[figure] M2 gate_proj 11008x4096 tp 2: local scale " << aspect_scale(5504, 4096) << ", global "
            << aspect_scale(11008, 4096) << " (ratio " << aspect_scale(5504, 4096) / aspect_scale(11008, 4096) << ")" << std::endl;
}

// =============================================================================================
// M3 a non-finite gradient: the momentum is unchanged (bitwise), the update non-finite.
// Kind: exact. Under TP each rank's guard sees its own shard (DeepSpeed): the rank holding the
// bad value keeps its momentum and yields a non-finite update; the strategies that mix the
// shards (gather, owner, all-reduce) make every rank's update non-finite (for steps >= 1).
// Both with Nesterov (the blend lerp(grad, momentum, beta) is non-finite) and without (the
// update is the momentum the skipped step would have produced).

NSV_PROPERTY(M3_non_finite_gradient_keeps_momentum_and_gives_non_finite_update, ()) {
  const ShardCase sc = *shard_cases(tp_degrees(), 1, nsv::checks::max_dim());
  const StepCase c = *step_cases();
  const double bad = *rc::gen::element(std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                                       -std::numeric_limits<double>::infinity());
  MatD grad = gaussian(sc.rows, sc.cols, c.grad_seed);
  const auto at = *rc::gen::inRange<Eigen::Index>(0, grad.size());
  grad.data()[at] = bad;
  const MatD mom0 = initial_momentum(sc.rows, sc.cols, c.zero_momentum, c.momentum_seed);
  // tp = 1
  MatD mom = mom0;
  const MatD u = muon_update(backend(), mom, grad, c.cfg);
  RC_ASSERT_BIT_IDENTICAL(mom, mom0, DType::fp32, "tp 1 momentum after a non-finite gradient");
  RC_ASSERT(!all_finite(u));
  // tp = N, every strategy but per_head (which needs heads; its shards are separate anyway)
  const Layout layout = sc.layout();
  const Eigen::Index bad_row = at / sc.cols, bad_col = at % sc.cols;
  const std::int64_t bad_pos = sc.axis == 0 ? bad_row : bad_col;
  int bad_rank = -1;
  for (int r = 0; r < layout.tp(); ++r)
    for (const auto& range : layout.ranks[static_cast<std::size_t>(r)])
      if (bad_pos >= range.begin && bad_pos < range.end) bad_rank = r;
  RC_ASSERT(bad_rank >= 0);
  for (Strategy s : {Strategy::shard, Strategy::gather, Strategy::gram_allreduce, Strategy::gram_restart_allreduce, Strategy::owner}) {
    std::vector<MatD> moms = split(mom0, layout);
    const auto before = moms;
    const auto su = sharded_muon_update(backend(), moms, split(grad, layout), layout, 0, s, c.cfg);
    const auto b = static_cast<std::size_t>(bad_rank);
    RC_ASSERT_BIT_IDENTICAL(moms[b], before[b], DType::fp32, std::string(strategy_name(s)) + ": momentum of the rank holding the bad value");
    RC_ASSERT(!all_finite(su.updates[b]));
    // With at least one step, the Gram products mix the non-finite norm and values into every
    // element; with 0 steps (normalization only) a finite value divided by the infinite norm is
    // a finite 0, correctly.
    if (s != Strategy::shard && c.cfg.ns.steps > 0)
      for (std::size_t r = 0; r < su.updates.size(); ++r)
        if (su.updates[r].size() > 0) RC_ASSERT(!all_finite(su.updates[r]));
  }
}

// =============================================================================================
// Golden: DeepSpeed's muon_update, three steps from a zero momentum, beta 0.95, Nesterov,
// 5-step fp32 NS (fixtures/golden/deepspeed/manifest.json, kind muon_update):
// mu_019 is 64 x 128 (no scale), mu_020 256 x 128 (scaled by sqrt(2)); standard and gram.
//  - momentum: exact, bit for bit (not merely within 1 ulp). momentum <- lerp(momentum, grad,
//    0.05) is, per element, one fp32 subtraction and one fused multiply-add (PyTorch's CPU lerp
//    kernel: fmadd(w, end - start, start), rounded once), and nsv::lerp_fp32 performs exactly
//    these two correctly rounded operations on the same bits. Negative control: the unfused form
//    start + w (end - start) (two roundings) is checked to differ from DeepSpeed's momentum,
//    by thousands of ulps where the sum cancels, so the comparison is not vacuous.
//  - update: bounded. Ours and DeepSpeed's are two fp32 evaluations of the same map on the same
//    (bitwise equal) input: rel_diff <= 2 S + 2u, S our own fp32 error (max over the whole
//    kernel and two permuted evaluations, as in S5), assuming DeepSpeed's fp32 kernel is no less
//    accurate than ours (its GEMMs are fp32 sums in another order: another draw of the same
//    noise); 2u for the final fp32 scale multiply on each side.
BOOST_AUTO_TEST_CASE(muon_golden_sequences_match_deepspeed) {
  ++checks::tally().quantified;
  const std::string dir = std::string(NSV_FIXTURES_DIR) + "/golden/deepspeed/";
  for (const std::string seq : {"mu_019", "mu_020"})
    for (Kernel k : {Kernel::standard, Kernel::gram}) {
      const std::string name = seq + "_" + std::string(kernel_name(k));
      MuonConfig cfg;
      cfg.beta = 0.95;
      cfg.nesterov = true;
      cfg.ns.kernel = k;
      cfg.ns.steps = 5;
      cfg.ns.dtype = DType::fp32;
      MatD mom;
      for (int step = 0; step < 3; ++step) {
        const MatD grad = read_npy(dir + name + "_grad" + std::to_string(step) + ".npy").matrix();
        const MatD want_update = read_npy(dir + name + "_update" + std::to_string(step) + ".npy").matrix();
        const MatD want_mom = read_npy(dir + name + "_momentum" + std::to_string(step) + ".npy").matrix();
        if (step == 0) mom = MatD::Zero(grad.rows(), grad.cols());
        const MatD mom_before_step = mom;
        MatD mom_before = mom;
        const MatD blend = momentum_and_blend(mom_before, grad, cfg);
        const MatD update = muon_update(backend(), mom, grad, cfg);
        const std::string diff = checks::bit_difference(mom, want_mom, DType::fp32);
        BOOST_TEST(diff.empty(), name << " step " << step << " momentum: " << diff);
        if (step > 0) {  // negative control: the unfused lerp
          const MatD unfused = mom_before_step.binaryExpr(grad, [](double m, double g) {
            const float w = static_cast<float>(1.0 - 0.95), mf = static_cast<float>(m), d = static_cast<float>(g) - mf;
            const volatile float product = w * d;  // rounded on its own
            return static_cast<double>(mf + product);
          });
          const ElementDiff nd = compare_bits(unfused, want_mom, DType::fp32);
          BOOST_TEST(!nd.identical);
          std::cout << "[figure] golden " << name << " step " << step << ": an unfused lerp would differ in " << nd.mismatches
                    << " of " << want_mom.size() << " momentum elements, worst " << nd.ulps << " ulp" << std::endl;
        }
        // S: our own fp32 error of NS on the blend, max over equivalent evaluations
        NsConfig c64 = cfg.ns;
        c64.dtype = DType::fp64;
        const MatD e = newton_schulz(backend(), blend, c64);
        double s = rel_diff(newton_schulz(backend(), blend, cfg.ns), e);
        for (int p = 0; p < 2; ++p) {
          std::vector<Eigen::Index> rp(static_cast<std::size_t>(blend.rows())), cp(static_cast<std::size_t>(blend.cols()));
          for (std::size_t i = 0; i < rp.size(); ++i) rp[i] = static_cast<Eigen::Index>((i * (2 * p + 3) + p) % rp.size());
          for (std::size_t i = 0; i < cp.size(); ++i) cp[i] = static_cast<Eigen::Index>((i * (2 * p + 5) + 1) % cp.size());
          // strides 3, 5 (p = 0) and 5, 7 (p = 1) are coprime to 64, 128 and 256: permutations
          s = std::max(s, rel_diff(newton_schulz(backend(), permuted(blend, rp, cp), cfg.ns), permuted(e, rp, cp)));
        }
        const double d = rel_diff(update, want_update);
        const double own = rel_diff(newton_schulz(backend(), blend, cfg.ns), e);
        const MatD exact_update = e * aspect_scale(grad.rows(), grad.cols());
        std::cout << "[figure] golden " << name << " step " << step << ": momentum " << (diff.empty() ? "bit-identical" : "DIFFERS")
                  << ", update rel_diff " << d << " (ours vs fp64 " << own << ", DeepSpeed vs fp64 "
                  << rel_diff(want_update, exact_update) << ", bound 2S+2u " << 2 * s + 2 * kUnitFp32 << ")" << std::endl;
        BOOST_TEST(d <= 2 * s + 2 * kUnitFp32, name << " step " << step << " update rel_diff " << d << " > 2 S + 2u");
      }
    }
}

BOOST_AUTO_TEST_SUITE_END()
