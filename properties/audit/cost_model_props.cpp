// The cost model (issue 6): plan_strategy, which never runs NS, produces the very ledger, FLOPs
// and extra memory that run_strategy produces on simulated ranks, for every strategy, tp 1..8,
// both axes, uneven, zero-width and fused layouts; hand-counted ledgers of a full-size matrix;
// and the alpha-beta time arithmetic.
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "check.hpp"
#include "reference_runs.hpp"
#include "generators/configs.hpp"
#include "nsv/backend.hpp"
#include "nsv/cost_model.hpp"
#include "nsv/analysis/model_config.hpp"
#include "nsv/spectra.hpp"
#include "nsv/strategies.hpp"

using namespace nsv;

namespace {

using nsv::checks::cpu;  // one CPU backend per executable (reference_runs.hpp)

std::string describe(const Ledger& l) {
  std::ostringstream s;
  s << "calls";
  for (Collective c : kAllCollectives) s << " " << collective_name(c) << "=" << l.count(c);
  for (std::size_t r = 0; r < l.ranks.size(); ++r)
    s << " | r" << r << " sent " << l.ranks[r].bytes_sent << " recv " << l.ranks[r].bytes_received << " msgs " << l.ranks[r].messages;
  return s.str();
}

std::string describe(const Layout& layout) {
  std::ostringstream s;
  s << "axis " << layout.axis << " widths [";
  for (auto w : layout.widths()) s << w << " ";
  s << "]";
  return s.str();
}

// Empty when plan and run agree on everything the cost model reports, else what differs.
std::string mismatch(Strategy s, const MatD& g, const Layout& layout, std::int64_t head_dim, const NsConfig& cfg,
                     const StrategyOptions& opt) {
  std::string run_error, plan_error;
  StrategyRun run;
  StrategyPlan plan;
  try {
    run = run_strategy(s, cpu(), shard_matrix(g, layout, head_dim), cfg, opt);
  } catch (const std::invalid_argument& e) {
    run_error = e.what();
  }
  try {
    plan = plan_strategy(s, layout, g.rows(), g.cols(), head_dim, cfg, opt);
  } catch (const std::invalid_argument& e) {
    plan_error = e.what();
  }
  if (run_error != plan_error) return "run error '" + run_error + "' vs plan error '" + plan_error + "'";
  if (!run_error.empty()) return {};
  std::ostringstream why;
  if (run.ledger.calls != plan.ledger.calls || run.ledger.ranks.size() != plan.ledger.ranks.size())
    why << "calls differ: run " << describe(run.ledger) << " / plan " << describe(plan.ledger);
  for (std::size_t r = 0; r < run.ledger.ranks.size() && r < plan.ledger.ranks.size(); ++r) {
    const auto &a = run.ledger.ranks[r], &b = plan.ledger.ranks[r];
    if (a.bytes_sent != b.bytes_sent || a.bytes_received != b.bytes_received || a.messages != b.messages)
      why << "rank " << r << " traffic: run " << describe(run.ledger) << " / plan " << describe(plan.ledger) << "; ";
  }
  // run_strategy reports the plan's FLOPs and memory, so comparing those would be a test that
  // cannot fail. The FLOPs a run really counts exist where the backend runs the sharded
  // iteration on data: there, the count of the data run must equal the shape-only plan's.
  if (strategy_record(s).operand == Operand::sharded_frame) {
    auto comm = make_simulated_communicator(layout.tp(), opt.order);
    const auto counted = cpu().newton_schulz_sharded(split(g, layout), layout.axis, strategy_record(s).iteration, *comm, cfg).flops_per_rank;
    if (counted != plan.flops) {
      why << "flops counted by the data run / planned:";
      for (std::size_t r = 0; r < counted.size(); ++r) why << " " << counted[r] << "/" << (r < plan.flops.size() ? plan.flops[r] : 0);
      why << "; ";
    }
  }
  return why.str();
}

// The layouts of the exhaustive check for a split axis of length dim at tp ranks.
std::vector<std::pair<std::string, Layout>> layouts_for(int axis, std::int64_t dim, int tp) {
  std::vector<std::pair<std::string, Layout>> out;
  out.push_back({"grain 1", contiguous_layout(axis, grain_sizes(dim, tp, 1))});  // uneven when tp does not divide dim
  out.push_back({"grain 4", contiguous_layout(axis, grain_sizes(dim, tp, 4))});  // remainder on the last rank
  for (std::int64_t kv : {1, 2, 4})  // head-aligned, zero-width ranks whenever tp > kv
    if (dim % kv == 0) out.push_back({"head-aligned kv " + std::to_string(kv), contiguous_layout(axis, head_aligned_sizes(dim, kv, tp))});
  std::vector<std::int64_t> first_holds_all(static_cast<std::size_t>(tp), 0);
  first_holds_all[0] = dim;
  out.push_back({"one rank holds all", contiguous_layout(axis, first_holds_all)});
  if (dim >= 2) {  // fused [A; B], each part split by the grain rule
    const std::int64_t a = dim / 2, b = dim - a;
    out.push_back({"fused", fused_layout(axis, {grain_sizes(a, tp, 1), grain_sizes(b, tp, 1)})});
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(audit_cost_model)

BOOST_AUTO_TEST_SUITE(ledger_equals_simulation)

BOOST_AUTO_TEST_CASE(every_strategy_tp_1_to_8_both_axes_uneven_zero_width_fused) {
  int compared = 0, inapplicable = 0;
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{12, 20}, {20, 12}, {16, 16}, {4, 9}};
  for (Kernel kernel : {Kernel::standard, Kernel::gram})
    for (const auto& [rows, cols] : shapes)
      for (int tp = 1; tp <= 8; ++tp)
        for (int axis : {0, 1}) {
          const std::int64_t dim = axis == 0 ? rows : cols;
          const MatD g = gaussian_matrix(rows, cols, static_cast<std::uint64_t>(rows * 1000 + cols * 10 + tp));
          for (const auto& [name, layout] : layouts_for(axis, dim, tp))
            for (Strategy s : kAllStrategies) {
              NsConfig cfg;
              cfg.kernel = kernel;
              cfg.dtype = (tp % 2) ? DType::fp32 : DType::fp16;  // the Gram all-reduce's wire dtype
              StrategyOptions opt;
              opt.storage = (tp % 3) ? DType::fp32 : DType::bf16;  // the gathers' wire dtype
              for (std::int64_t head_dim : {std::int64_t{0}, std::int64_t{2}}) {
                const std::string why = mismatch(s, g, layout, head_dim, cfg, opt);
                BOOST_CHECK_MESSAGE(why.empty(), strategy_name(s) << " " << kernel_name(kernel) << " " << rows << "x" << cols
                                                                  << " tp " << tp << " " << name << " " << describe(layout)
                                                                  << " head_dim " << head_dim << ": " << why);
                try {
                  plan_strategy(s, layout, rows, cols, head_dim, cfg, opt);
                  ++compared;
                } catch (const std::invalid_argument&) {
                  ++inapplicable;
                }
              }
            }
        }
  BOOST_TEST_MESSAGE("plan == run on " << compared << " cases (" << inapplicable << " where both reject per_head alike)");
  BOOST_TEST(compared > 3000);
}

// Any shape, any partition of the split axis (zeros included), fused or not, any NS
// configuration, wire dtype and reduction order: the plan is the simulation's ledger.
NSV_PROPERTY(plan_equals_run_on_any_layout, ()) {
  const auto rows = *rc::gen::inRange<std::int64_t>(1, 33);
  const auto cols = *rc::gen::inRange<std::int64_t>(1, 33);
  const int tp = *rc::gen::inRange(1, 11);
  const int axis = *rc::gen::inRange(0, 2);
  const std::int64_t dim = axis == 0 ? rows : cols;
  // A random partition of dim into tp (possibly empty) pieces, optionally in two fused parts.
  const bool fused = dim >= 2 && *rc::gen::arbitrary<bool>();
  auto partition = [&](std::int64_t length) {
    auto cuts = *rc::gen::container<std::vector<std::int64_t>>(static_cast<std::size_t>(tp - 1), rc::gen::inRange<std::int64_t>(0, length + 1));
    cuts.push_back(0);
    cuts.push_back(length);
    std::sort(cuts.begin(), cuts.end());
    std::vector<std::int64_t> sizes;
    for (std::size_t i = 1; i < cuts.size(); ++i) sizes.push_back(cuts[i] - cuts[i - 1]);
    return sizes;
  };
  Layout layout;
  if (fused) {
    const auto a = *rc::gen::inRange<std::int64_t>(1, dim);
    layout = fused_layout(axis, {partition(a), partition(dim - a)});
  } else {
    layout = contiguous_layout(axis, partition(dim));
  }
  const NsConfig cfg = *checks::ns_configs();
  StrategyOptions opt;
  opt.storage = *checks::dtypes();
  opt.order = *rc::gen::elementOf(kAllReductionOrders);
  const Strategy s = *rc::gen::elementOf(std::vector<Strategy>(std::begin(kAllStrategies), std::end(kAllStrategies)));
  const auto head_dim = *rc::gen::inRange<std::int64_t>(0, 5);
  RC_LOG() << strategy_name(s) << " " << rows << "x" << cols << " tp " << tp << " " << describe(layout) << " head_dim "
           << head_dim << " " << kernel_name(cfg.kernel) << " " << dtype_name(cfg.dtype) << " steps " << cfg.steps << "\n";
  const MatD g = gaussian_matrix(rows, cols, *rc::gen::inRange<std::uint64_t>(0, 1000));
  const std::string why = mismatch(s, g, layout, head_dim, cfg, opt);
  if (!why.empty()) RC_FAIL(why);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(full_size)

// Llama-3-8B at tp 8, counted by hand from the byte model in communicator.hpp.
BOOST_AUTO_TEST_CASE(hand_counted_llama_3_8b_ledgers) {
  NsConfig cfg;  // gram, 5 steps, restart at 2
  cfg.dtype = DType::fp16;
  const StrategyOptions opt;  // gathers and all-to-alls in fp32
  const Layout q = contiguous_layout(0, head_aligned_sizes(4096, 8, 8));  // q_proj: 512 rows per rank
  const std::uint64_t shard_bytes = 512ULL * 4096 * 4;                    // 8 MiB in fp32

  const StrategyPlan gather = plan_strategy(Strategy::gather, q, 4096, 4096, 128, cfg, opt);
  BOOST_TEST(gather.ledger.count(Collective::all_gather) == 1);
  for (const auto& t : gather.ledger.ranks) {
    BOOST_TEST(t.bytes_sent == 7 * shard_bytes);
    BOOST_TEST(t.bytes_received == 7 * shard_bytes);
    BOOST_TEST(t.messages == 7u);
  }
  BOOST_TEST(gather.extra_memory[3] == 2ULL * 4096 * 4096 * 4);

  const StrategyPlan owner = plan_strategy(Strategy::owner, q, 4096, 4096, 128, cfg, opt);
  BOOST_TEST(owner.ledger.count(Collective::all_to_all) == 2);
  BOOST_TEST(owner.ledger.ranks[0].bytes_received == 7 * shard_bytes);
  BOOST_TEST(owner.ledger.ranks[0].bytes_sent == 7 * shard_bytes);
  BOOST_TEST(owner.ledger.ranks[0].messages == 7u);
  BOOST_TEST(owner.ledger.ranks[5].bytes_sent == shard_bytes);
  BOOST_TEST(owner.ledger.ranks[5].bytes_received == shard_bytes);
  BOOST_TEST(owner.ledger.ranks[5].messages == 1u);
  BOOST_TEST(owner.flops[5] == 0u);
  const StrategyPlan owner5 = plan_owner(q, 4096, 4096, cfg, opt, 5);
  BOOST_TEST(owner5.ledger.ranks[5].bytes_received == 7 * shard_bytes);
  BOOST_TEST(owner5.flops[5] == owner.flops[0]);

  // q_proj is square: the Gram is 4096 x 4096 either way and the standard loop runs (1 scalar +
  // 5 Gram all-reduces). Ring all-reduce: 2 (p-1)/p N bytes each way, 2 (p-1) messages.
  const std::uint64_t gram_bytes = 4096ULL * 4096 * 2;  // fp16
  for (Strategy s : {Strategy::gram_allreduce, Strategy::gram_restart_allreduce}) {
    const StrategyPlan p = plan_strategy(s, q, 4096, 4096, 128, cfg, opt);
    BOOST_TEST(p.ledger.count(Collective::all_reduce) == 6);
    BOOST_TEST(p.ledger.ranks[2].bytes_sent == 2 * 7 * 4 / 8 + 5 * (2 * 7 * gram_bytes / 8));
    BOOST_TEST(p.ledger.ranks[2].messages == 6u * 14);
  }
  // k_proj 1024 x 4096, 128 rows per rank: the Gram is over the 4096 unsharded columns, not
  // square against the 1024 sharded rows, so the gram loop runs: 1 scalar + 2 Gram all-reduces.
  const Layout k = contiguous_layout(0, head_aligned_sizes(1024, 8, 8));
  const StrategyPlan kr = plan_strategy(Strategy::gram_restart_allreduce, k, 1024, 4096, 128, cfg, opt);
  BOOST_TEST(kr.ledger.count(Collective::all_reduce) == 3);
  BOOST_TEST(kr.ledger.ranks[0].bytes_sent == 2 * 7 * 4 / 8 + 2 * (2 * 7 * gram_bytes / 8));
  BOOST_TEST(kr.extra_memory[0] == 3 * gram_bytes);

  // per_head: 4 heads of 128 rows per rank, each a 128 x 4096 NS; shard: one 512 x 4096 NS.
  const StrategyPlan ph = plan_strategy(Strategy::per_head, q, 4096, 4096, 128, cfg, opt);
  BOOST_TEST(ph.flops[7] == 4 * ns_flops(cfg, 128, 4096));
  BOOST_TEST(ph.ledger.total_calls() == 0);
  const StrategyPlan sh = plan_strategy(Strategy::shard, q, 4096, 4096, 128, cfg, opt);
  BOOST_TEST(sh.flops[7] == ns_flops(cfg, 512, 4096));
}

// Planning never touches matrix data: every strategy of Llama-3-70B's largest matrix (28672 x
// 8192, 940 MB in fp32) at tp 8 takes well under a second.
BOOST_AUTO_TEST_CASE(planning_full_size_matrices_is_instant) {
  const auto t0 = std::chrono::steady_clock::now();
  const Layout gate = contiguous_layout(0, grain_sizes(28672, 8, 1));
  for (Strategy s : kAllStrategies) {
    try {
      plan_strategy(s, gate, 28672, 8192, 0, NsConfig{}, {});
    } catch (const std::invalid_argument&) {
      BOOST_TEST((s == Strategy::per_head));
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  BOOST_TEST(seconds < 1.0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(time_model)

BOOST_AUTO_TEST_CASE(alpha_beta_arithmetic) {
  StrategyPlan p;
  p.ledger.ranks.resize(2);
  p.flops = {989000000000000ULL, 0};
  p.extra_memory = {0, 7};
  p.ledger.ranks[1] = {450000000000ULL, 225000000000ULL, 2};
  const CostParams cp;  // 5 us, 450 GB/s, 989 TFLOP/s
  const RankCost a = rank_cost(p, 0, cp), b = rank_cost(p, 1, cp);
  BOOST_TEST(a.compute_s == 1.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(a.latency_s == 0.0);
  BOOST_TEST(b.compute_s == 0.0);
  BOOST_TEST(b.latency_s == 10e-6, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(b.bandwidth_s == 1.0, boost::test_tools::tolerance(1e-12));  // the slower direction: 450 GB sent
  BOOST_TEST(b.time_s() == 1.0 + 10e-6, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(b.extra_memory == 7u);
  CostParams bad;
  bad.link_gbps = 0;
  BOOST_CHECK_THROW(bad.validate(), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
