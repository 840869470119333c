// The amplification study's rows (engine/src/amplification.cpp, report §6, amplification.csv), each
// against its definition (amplification.hpp) evaluated here on the row's two gradients:
//
// AM1  the rows are the product spectrum x seed x axis x steps, in that order, and each row's
//      figures are, on G_rank and G_rev of its (spectrum, seed):
//        grad_rel      rel_diff(G_rev, G_rank)
//        whole_amp     rel_diff(NS(G_rev), NS(G_rank)) / grad_rel, the standard kernel
//        ar_order_amp  gram_allreduce on the even shards of G_rank along the row's axis with its
//                      Grams all-reduced in reverse vs rank order, standard loop / grad_rel
//        ar_vs_whole   gram_allreduce (rank order) against NS(G_rank), standard kernel / grad_rel
//        rs_*          the same for gram_restart_allreduce, against the Gram kernel
//        kernel_err_*  rel_diff(NS_fp32(G_rank), NS_fp64(G_rank)) / grad_rel, each kernel
//      The reference's bits depend only on the input and the configuration, so each figure is
//      compared with ==.
// AM2  the two gradients are one sum of tp fp32 parts in two orders: the parts make G within
//      their roundings (bound derived below), G_rank is p_0 + p_1 + ... and G_rev is
//      p_{tp-1} + ... + p_0, each written out in fp32 here; and the study refuses tp = 2, where
//      the two orders add the same two terms (a + b == b + a) and every ratio would be 0 / 0.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "nsv/backend.hpp"
#include "nsv/coeffs.hpp"
#include "nsv/communicator.hpp"
#include "nsv/engine/amplification.hpp"
#include "nsv/layout.hpp"
#include "nsv/metrics.hpp"
#include "nsv/muon.hpp"
#include "nsv/spectra.hpp"
#include "nsv/strategies.hpp"

using namespace nsv;
using namespace nsv::engine;

namespace {

// Small studies: every figure of every row is recomputed, so the matrices stay tiny. Sizes are
// drawn with element (inRange scales its range with RapidCheck's size).
rc::Gen<AmplificationSpec> small_amplification_studies() {
  return rc::gen::exec([] {
    AmplificationSpec spec;
    spec.rows = *rc::gen::element<std::int64_t>(6, 8, 12, 16);
    spec.cols = *rc::gen::element<std::int64_t>(6, 8, 16, 24);
    spec.tp = *rc::gen::element(3, 4, 5);
    spec.spectra = *rc::gen::element(std::vector<std::string>{"gaussian"}, std::vector<std::string>{"lowrank:2"},
                                     std::vector<std::string>{"gaussian", "lowrank:2"});
    spec.axes = *rc::gen::element(std::vector<int>{0}, std::vector<int>{1}, std::vector<int>{0, 1});
    spec.seeds = *rc::gen::element(1, 2);
    spec.max_steps = *rc::gen::element(1, 2, 3);
    spec.coeffs = *rc::gen::elementOf(builtin_schedule_names());  // the schedule study runs it for each
    spec.threads = 1;
    spec.progress = false;
    return spec;
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(study_amplification)

NSV_PROPERTY(AM1_each_amplification_row_is_its_definition_on_its_two_gradients, ()) {
  const AmplificationSpec spec = *small_amplification_studies();
  const std::vector<AmplificationRow> rows = run_amplification(spec);
  RC_ASSERT(rows.size() == spec.spectra.size() * static_cast<std::size_t>(spec.seeds) * spec.axes.size() *
                               static_cast<std::size_t>(spec.max_steps));
  const auto backend = make_cpu_backend();
  const CoeffSchedule schedule = resolve_schedule(spec.coeffs);
  std::size_t at = 0;
  for (std::size_t s = 0; s < spec.spectra.size(); ++s)
    for (int seed = 0; seed < spec.seeds; ++seed) {
      const AmplificationInputs in = amplification_inputs(spec, s, seed);
      for (int axis : spec.axes)
        for (int k = 1; k <= spec.max_steps; ++k) {
          const AmplificationRow& r = rows.at(at++);
          RC_ASSERT(r.spectrum == spec.spectra[s] && r.seed == seed && r.axis == axis && r.steps == k);
          NsConfig standard, gram;
          standard.kernel = Kernel::standard;
          gram.kernel = Kernel::gram;
          standard.steps = gram.steps = k;
          standard.coeffs = gram.coeffs = schedule;
          NsConfig standard64 = standard, gram64 = gram;
          standard64.dtype = gram64.dtype = DType::fp64;
          const double grad_rel = rel_diff(in.reverse_order, in.rank_order);
          const MatD whole_standard = newton_schulz(*backend, in.rank_order, standard);
          const MatD whole_gram = newton_schulz(*backend, in.rank_order, gram);
          const Layout layout = even_layout(axis, axis == 0 ? spec.rows : spec.cols, spec.tp);
          const ShardedMatrix shards = shard_matrix(in.rank_order, layout);
          const auto run = [&](Strategy strategy, const NsConfig& cfg, ReductionOrder order) {
            return assemble(run_strategy(strategy, *backend, shards, cfg, {order, DType::fp32}).outputs, layout);
          };
          const MatD ar = run(Strategy::gram_allreduce, standard, ReductionOrder::rank);
          const MatD rs = run(Strategy::gram_restart_allreduce, gram, ReductionOrder::rank);
          RC_ASSERT(r.grad_rel == grad_rel);
          RC_ASSERT(r.whole_amp == rel_diff(newton_schulz(*backend, in.reverse_order, standard), whole_standard) / grad_rel);
          RC_ASSERT(r.ar_order_amp == rel_diff(run(Strategy::gram_allreduce, standard, ReductionOrder::reverse), ar) / grad_rel);
          RC_ASSERT(r.ar_vs_whole == rel_diff(ar, whole_standard) / grad_rel);
          RC_ASSERT(r.rs_order_amp == rel_diff(run(Strategy::gram_restart_allreduce, gram, ReductionOrder::reverse), rs) / grad_rel);
          RC_ASSERT(r.rs_vs_whole == rel_diff(rs, whole_gram) / grad_rel);
          RC_ASSERT(r.kernel_err_standard == rel_diff(whole_standard, newton_schulz(*backend, in.rank_order, standard64)) / grad_rel);
          RC_ASSERT(r.kernel_err_gram == rel_diff(whole_gram, newton_schulz(*backend, in.rank_order, gram64)) / grad_rel);
        }
    }
}

NSV_PROPERTY(AM2_the_two_gradients_are_two_orders_of_one_sum_of_parts_that_make_g, ()) {
  AmplificationSpec spec = *small_amplification_studies();
  const int seed = *rc::gen::element(0, 1, 7);
  const AmplificationInputs in = amplification_inputs(spec, 0, seed);
  RC_ASSERT(in.g == make_matrix(parse_spectrum(spec.spectra[0]), spec.rows, spec.cols, static_cast<std::uint64_t>(seed)));
  RC_ASSERT(in.parts.size() == static_cast<std::size_t>(spec.tp));
  // The parts make G: the last is the rest G - (p_0 + ... + p_{tp-2}) taken in fp64 (tp - 1
  // roundings, each at most u_64 (|G| + sum |p_r|)) and rounded once to fp32 (at most
  // u_32 |rest| <= u_32 |p_last| / (1 - u_32) <= u_32 (1 + 2 u_32) |p_last|); the sum and the
  // difference taken here in fp64 add tp + 1 more roundings of the same magnitudes:
  //   |sum p_r - G| <= u_32 (1 + 2 u_32) |p_last| + 2 tp u_64 (|G| + sum |p_r|)   elementwise.
  const double u32 = std::ldexp(1.0, -24), u64 = std::ldexp(1.0, -53);
  MatD sum = MatD::Zero(spec.rows, spec.cols), magnitudes = in.g.cwiseAbs();
  for (const MatF& p : in.parts) {
    sum += p.cast<double>();
    magnitudes += p.cast<double>().cwiseAbs();
  }
  const MatD bound = u32 * (1 + 2 * u32) * in.parts.back().cast<double>().cwiseAbs() + 2 * spec.tp * u64 * magnitudes;
  RC_ASSERT(((sum - in.g).cwiseAbs().array() <= bound.array()).all());
  // The two orders, as fp32 sums written out: p_0 + p_1 + ... and p_{tp-1} + ... + p_0.
  MatF forward = in.parts.front(), backward = in.parts.back();
  for (std::size_t r = 1; r < in.parts.size(); ++r) forward = (forward + in.parts[r]).eval();
  for (std::size_t r = in.parts.size() - 1; r-- > 0;) backward = (backward + in.parts[r]).eval();
  RC_ASSERT(in.rank_order == forward.cast<double>());
  RC_ASSERT(in.reverse_order == backward.cast<double>());
  // Negative control of the premise tp >= 3: at tp = 2 the two orders are one sum, and the study
  // refuses to divide by their zero difference.
  spec.tp = 2;
  const AmplificationInputs two = amplification_inputs(spec, 0, seed);
  RC_ASSERT(two.rank_order == two.reverse_order);
  try {
    run_amplification(spec);
    RC_FAIL("run_amplification ran at tp = 2");
  } catch (const std::invalid_argument& e) {
    RC_ASSERT(std::string(e.what()).find("tp >= 3") != std::string::npos);
  }
}

BOOST_AUTO_TEST_SUITE_END()
