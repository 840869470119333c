// The step engine (nsv/engine/step_engine.hpp: `nsv step`, the report's real-gradient step and
// training study) on generated gradients of small Llama layers, every strategy, scale source, tp
// and step count:
//
// SE1  each parameter's row describes that parameter under the layout AutoTP gives it (its name
//      and shape, the shard widths, rank 0's shard); per_head runs on the matrices with heads on
//      the split rows and falls back, with a note saying so, elsewhere; the tp = 1 scale is the
//      whole matrix's aspect scale (1 for per-head NS).
// SE2  the figures agree with one another as their definitions make them: rel. diff r, norm
//      ratio q and cosine c of the same two updates satisfy r^2 = q^2 + 1 - 2 q c (the law of
//      cosines, ||a - b||^2 = ||a||^2 + ||b||^2 - 2 <a, b>, divided by ||b||^2), and q is the
//      ratio of the two norms the row gives. Bound: each of the four sums over the n elements
//      is within gamma_n of its exact value (the squares relatively, the dot product within
//      gamma_n sum |a_i b_i| <= gamma_n ||a|| ||b||; an element difference of two fp32 values
//      rounds once, u), and the figures' own divisions, roots and squares add at most 10 u each
//      term, so |r^2 - (q^2 + 1 - 2 q c)| <= (gamma_n + 10 u)(r^2 + (1 + q)^2); two norms taken
//      by different summation orders give q within (2 gamma_n + 4 u) q of norm_n / norm_1.
// SE3  where SPEC §4 promises bit identity the engine reports it: at tp = 1 every strategy, and
//      gather and owner with the global scale at every tp (S1, S2); a bit-identical row has
//      rel. diff 0 and norm ratio 1. Its negative control: shard at tp >= 2 is bit-identical on
//      none of a layer's matrices.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "check.hpp"
#include "nsv/cost_model.hpp"
#include "nsv/engine/step_engine.hpp"
#include "nsv/layout.hpp"
#include "nsv/model.hpp"
#include "nsv/muon.hpp"
#include "nsv/strategy.hpp"

using namespace nsv;
using namespace nsv::engine;

namespace {

constexpr double kU = std::numeric_limits<double>::epsilon() / 2;

// gamma_n = n u / (1 - n u): the relative error of a sum of n terms (Higham, Accuracy and Stability, §3.1).
double summation_gamma(double n) { return n * kU / (1 - n * kU); }

rc::Gen<StepSpec> small_steps() {
  return rc::gen::exec([] {
    StepSpec spec;
    const std::int64_t heads = 4, head_dim = *rc::gen::element<std::int64_t>(8, 16);
    spec.dims = ModelDims{"small-llama", heads * head_dim, heads, *rc::gen::element<std::int64_t>(1, 2, 4), head_dim,
                          *rc::gen::element<std::int64_t>(64, 96), 1, 128, false};
    spec.seed = *rc::gen::inRange<std::uint64_t>(0, 1000);
    spec.tp = *rc::gen::element(1, 2, 3, 4);  // element: inRange scales its range with the size
    spec.steps_k = *rc::gen::element(1, 2);
    spec.strategy = std::string(strategy_name(*rc::gen::elementOf(std::vector<Strategy>(std::begin(kAllStrategies), std::end(kAllStrategies)))));
    spec.muon.lr = 0.05;
    spec.muon.beta = 0.95;
    spec.muon.scale_from = *rc::gen::element(ScaleFrom::local, ScaleFrom::global);
    spec.muon.ns.steps = *rc::gen::element(1, 3, 5);
    return spec;
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(study_step_engine)

NSV_PROPERTY(SE1_to_SE3_each_row_is_its_parameter_and_its_figures_agree, ()) {
  const StepSpec spec = *small_steps();
  const StepOutcome out = run_step(spec);
  const std::vector<MuonParam> params = llama_layer_params(spec.dims);
  const Strategy strategy = parse_strategy(spec.strategy);
  RC_ASSERT(out.steps.size() == static_cast<std::size_t>(spec.steps_k));
  for (const auto& rows : out.steps) {
    RC_ASSERT(rows.size() == params.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const ParamStep& r = rows[i];
      const MuonParam& p = params[i];
      RC_LOG() << p.name << " " << p.rows << "x" << p.cols << " tp " << spec.tp << " " << r.strategy << ": rel " << r.rel_diff
               << " ratio " << r.norm_ratio << " cos " << r.cosine << " bits " << r.bit_identical << "\n";
      // SE1
      RC_ASSERT(r.param.name == p.name && r.param.rows == p.rows && r.param.cols == p.cols);
      const Layout layout = autotp_layout(p, spec.tp);
      RC_ASSERT(r.widths == layout.widths());
      RC_ASSERT(r.rank0_shard == shard_shape(layout, p.rows, p.cols, 0));
      const bool falls_back = strategy == Strategy::per_head && !p.heads_on_rows();
      RC_ASSERT(r.note.empty() == !falls_back);
      const Strategy used = falls_back ? parse_strategy(spec.fallback) : strategy;
      RC_ASSERT(r.strategy == strategy_name(used));
      RC_ASSERT(r.scale_1 == (used == Strategy::per_head ? 1.0 : aspect_scale(p.rows, p.cols)));
      if (used != Strategy::per_head) RC_ASSERT(r.rel_diff_vs_whole == r.rel_diff);
      // SE2
      const double n = static_cast<double>(p.rows * p.cols), q = r.norm_ratio;
      RC_ASSERT_WITHIN(std::abs(r.rel_diff * r.rel_diff - (q * q + 1 - 2 * q * r.cosine)),
                       (summation_gamma(n) + 10 * kU) * (r.rel_diff * r.rel_diff + (1 + q) * (1 + q)), "law of cosines (SE2)");
      RC_ASSERT_WITHIN(std::abs(q - r.norm_n / r.norm_1), (2 * summation_gamma(n) + 4 * kU) * q, "two summation orders of the norms (SE2)");
      // SE3
      const bool promised = spec.tp == 1 || ((used == Strategy::gather || used == Strategy::owner) && spec.muon.scale_from == ScaleFrom::global);
      if (promised) RC_ASSERT(r.bit_identical);
      if (r.bit_identical) RC_ASSERT(r.rel_diff == 0.0 && q == 1.0);
    }
  }
}

BOOST_AUTO_TEST_CASE(SE3_negative_control_shard_at_tp_2_is_not_bit_identical) {
  StepSpec spec;
  spec.dims = ModelDims{"small-llama", 64, 4, 2, 16, 96, 1, 128, false};
  spec.tp = 2;
  spec.muon.scale_from = ScaleFrom::global;
  const StepOutcome out = run_step(spec);
  int identical = 0;
  for (const ParamStep& r : out.steps[0]) identical += r.bit_identical;
  BOOST_TEST_MESSAGE("shard at tp 2: " << identical << " of " << out.steps[0].size() << " matrices bit-identical");
  BOOST_TEST(identical == 0);
}

BOOST_AUTO_TEST_SUITE_END()
