// The diagnosis of the checked-in training runs (fixtures/runs, tools/make_grads.py --runs): from
// the dumps alone, the library names the semantics each run's optimizer computed, for the
// attention matrices q_proj (column-parallel, heads on dim 0) and o_proj (row-parallel), at
// tp = 2 and 4; and the negative controls that show the verdicts are not given for free.
#include <boost/test/unit_test.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "nsv/backend.hpp"
#include "nsv/analysis/diagnose.hpp"
#include "nsv/layout.hpp"
#include "nsv/muon.hpp"
#include "nsv/analysis/model_config.hpp"
#include "nsv/analysis/run_dump.hpp"

using namespace nsv;

namespace {

const std::string kRuns = std::string(NSV_FIXTURES_DIR) + "/runs";

MuonConfig run_config() {  // as fixtures/runs/runs.json records
  MuonConfig cfg;
  cfg.lr = 0.02;
  cfg.beta = 0.95;
  cfg.nesterov = true;
  cfg.ns.kernel = Kernel::standard;
  return cfg;
}

const ModelConfig& tiny_llama() {
  static const ModelConfig model = load_model_config(std::string(NSV_FIXTURES_DIR) + "/models/tiny-llama.json");
  return model;
}

RunDump candidate(int tp, const std::string& semantics) {
  const std::string dir = kRuns + "/tp" + std::to_string(tp);
  return load_run_dump({dir, dir + "/" + semantics}, tiny_llama(), tp);
}

Diagnosis diagnose_run(const RunDump& cand, int tp) {
  static const RunDump reference = load_run_dump({kRuns + "/reference"}, tiny_llama(), 1);
  return diagnose(*make_cpu_backend(), reference, cand, tiny_llama(), tp, run_config());
}

const ParamDiagnosis& param(const Diagnosis& d, const std::string& matrix) {
  for (const auto& p : d.params)
    if (p.param.name == matrix) return p;
  throw std::runtime_error("the runs hold no " + matrix);
}

struct Expected {
  const char* run;
  Semantics q_proj, o_proj;  // per_head applies to q/k/v only: the run stepped o_proj as gather
};
const Expected kRunsExpected[] = {
    {"shard", Semantics::per_shard, Semantics::per_shard},
    {"gather", Semantics::whole, Semantics::whole},
    {"per_head", Semantics::per_head, Semantics::whole},
};

std::string name(const std::optional<Semantics>& s) { return s ? std::string(semantics_record(*s).key) : "unexplained"; }

}  // namespace

BOOST_AUTO_TEST_SUITE(diagnose_runs)

BOOST_AUTO_TEST_SUITE(diagnosis)

BOOST_AUTO_TEST_CASE(each_run_is_named_by_the_semantics_its_optimizer_computed) {
  for (int tp : {2, 4})
    for (const Expected& e : kRunsExpected) {
      const Diagnosis d = diagnose_run(candidate(tp, e.run), tp);
      for (const auto& [matrix, want] : {std::pair{"q_proj", e.q_proj}, std::pair{"o_proj", e.o_proj}}) {
        const ParamDiagnosis& p = param(d, matrix);
        BOOST_TEST_CONTEXT("tp " << tp << ", run " << e.run << ", " << matrix) {
          BOOST_TEST(name(p.reference.match) == "whole");
          BOOST_TEST(name(p.candidate.match) == name(want));
          BOOST_TEST(p.candidate.also_within.empty());
          // tp-invariant exactly when the candidate computed what the reference did
          BOOST_TEST(p.tp_invariant == (want == Semantics::whole));
          // the gradients differ (the TP forward's reduction order), the updates never by the bit
          BOOST_TEST(!p.grad->bit_identical);
          BOOST_TEST(!p.update.bit_identical);
          // both runs start the step from the same weights (runs.json: one seed), so no warning
          BOOST_TEST_REQUIRE(p.weight.has_value());
          BOOST_TEST(p.weight->bit_identical);
        }
      }
    }
}

// Discrimination, not luck: every semantics that does not give the match's bits misses the
// candidate's update by more than 1000 times its own bound (measured: 0.29 .. 1.7 against bounds
// of 4e-6 .. 1.5e-5), so no rounding-level slack decides a verdict.
BOOST_AUTO_TEST_CASE(the_other_semantics_miss_by_orders_of_magnitude_more_than_the_bound) {
  for (int tp : {2, 4})
    for (const Expected& e : kRunsExpected)
      for (const auto& p : diagnose_run(candidate(tp, e.run), tp).params)
        for (const auto& f : p.candidate.fits) {
          if (f.semantics == *p.candidate.match) continue;
          if (std::find(f.same_bits_as.begin(), f.same_bits_as.end(), *p.candidate.match) != f.same_bits_as.end()) continue;
          BOOST_TEST_CONTEXT("tp " << tp << ", run " << e.run << ", " << p.param.name << ", " << semantics_record(f.semantics).key)
          BOOST_TEST(f.rel_diff > 1000 * f.bound);
        }
}

// Negative control of the match bound: one rank's update changed by 2^-12 relative (2.4e-4,
// about 20 times the largest bound) leaves that run unexplained instead of forcing a category.
BOOST_AUTO_TEST_CASE(an_update_changed_by_a_quarter_per_mille_is_unexplained) {
  for (const Expected& e : kRunsExpected) {
    RunDump cand = candidate(2, e.run);
    for (auto& [key, m] : cand.matrices)
      if (key.kind == DumpKind::delta && key.rank == 1) m.values *= 1.0 + 0x1p-12;
    const Diagnosis d = diagnose_run(cand, 2);
    for (const auto& p : d.params) {
      BOOST_TEST_CONTEXT("run " << e.run << ", " << p.param.name) {
        BOOST_TEST(name(p.candidate.match) == "unexplained");
        BOOST_TEST(!p.tp_invariant);
      }
    }
  }
}

// The reference against itself at tp = 1: the same bits, tp-invariant, whole-matrix NS.
BOOST_AUTO_TEST_CASE(the_reference_against_itself_is_bit_identical_and_invariant) {
  const Diagnosis d = diagnose_run(load_run_dump({kRuns + "/reference"}, tiny_llama(), 1), 1);
  for (const auto& p : d.params) {
    BOOST_TEST(p.update.bit_identical);
    BOOST_TEST(p.grad->bit_identical);
    BOOST_TEST(p.tp_invariant);
    BOOST_TEST(name(p.candidate.match) == "whole");
  }
}

// Without the weights before the step the rounding of w_after - w_before has no bound, and the
// run is not classified (the comparison is still made).
BOOST_AUTO_TEST_CASE(a_dump_without_weights_is_compared_but_not_classified) {
  RunDump cand = candidate(2, "shard");
  std::erase_if(cand.matrices, [](const auto& kv) { return kv.first.kind == DumpKind::weight; });
  const Diagnosis d = diagnose_run(cand, 2);
  for (const auto& p : d.params) {
    BOOST_TEST(!p.candidate.match.has_value());
    BOOST_TEST(!p.candidate.not_classified.empty());
    BOOST_TEST(p.update.rel_diff > 0.1);
  }
}

// The library's own guard on ranks (the CLI's reader refuses such a file before, run_dump.cpp
// check_rank, so only a dump built in memory reaches it): a candidate whose largest rank equals
// tp is refused, naming that rank; at its own tp it is diagnosed.
BOOST_AUTO_TEST_CASE(a_candidate_holding_a_rank_past_tp_is_refused) {
  const RunDump cand = candidate(4, "shard");
  BOOST_CHECK_EXCEPTION(diagnose_run(cand, 3), std::invalid_argument, [](const std::invalid_argument& e) {
    return std::string(e.what()).find("holds tensors of rank 3, but tp = 3 has ranks 0..2") != std::string::npos;
  });
  BOOST_CHECK_NO_THROW(diagnose_run(cand, 4));
}

// Negative control of the weights comparison: one rank's weight shard changed by 2^-10 relative
// makes that matrix's weights differ, by the change's share of the whole weight's norm, and only it.
BOOST_AUTO_TEST_CASE(weights_that_differ_before_the_step_are_seen) {
  RunDump cand = candidate(2, "shard");
  for (auto& [key, m] : cand.matrices)
    if (key.kind == DumpKind::weight && key.rank == 1 && key.param.find("o_proj") != std::string::npos) m.values *= 1.0 + 0x1p-10;
  const Diagnosis d = diagnose_run(cand, 2);
  BOOST_TEST(param(d, "q_proj").weight->bit_identical);
  const ParamDiagnosis& o = param(d, "o_proj");
  BOOST_TEST(!o.weight->bit_identical);
  BOOST_TEST(o.weight->rel_diff > 0);
  BOOST_TEST(o.weight->rel_diff < 0x1p-10);  // one of two shards changed: at most 2^-10 of the norm
}

namespace {

// A run stepped here from a dump's gradients, momenta and weights, under `cfg` and one semantics
// (the strategy and the scale's source): each rank's update from its blend, applied as the
// optimizer applies it (apply_update: decay, then the update), its delta w_after - w_before in
// fp32. At tp 1 the whole matrix is one rank's.
RunDump restepped(const RunDump& dump, const Diagnosis& shape, int tp, Strategy strategy, ScaleFrom scale, const MuonConfig& cfg) {
  RunDump out = dump;
  std::erase_if(out.matrices, [](const auto& kv) { return kv.first.kind == DumpKind::delta; });
  for (const ParamDiagnosis& p : shape.params) {
    MuonConfig c = cfg;
    c.scale_from = scale;
    const Layout layout = autotp_layout(p.param, tp);
    const bool heads = strategy == Strategy::per_head && p.param.heads_on_rows();
    std::vector<MatD> blends, weights;
    for (int r = 0; r < tp; ++r) {
      blends.push_back(blend_of(dump.find(p.name, DumpKind::grad, r)->values, dump.find(p.name, DumpKind::momentum, r)->values, c));
      weights.push_back(dump.find(p.name, DumpKind::weight, r)->values);
    }
    // per-head runs step a matrix without heads as gather, with the whole matrix's scale (as the
    // checked-in per_head runs step o_proj)
    const bool as_gather = strategy == Strategy::per_head && !heads;
    if (as_gather) c.scale_from = ScaleFrom::global;
    const std::vector<MatD> updates =
        sharded_update_from_blends(*make_cpu_backend(), blends, layout, heads ? p.param.head_dim : 0,
                                   as_gather ? Strategy::gather : strategy, c)
            .updates;
    for (int r = 0; r < tp; ++r) {
      MatD after = weights[static_cast<std::size_t>(r)];
      apply_update(after, updates[static_cast<std::size_t>(r)], c);
      const MatD delta = (after - weights[static_cast<std::size_t>(r)]).unaryExpr([](double v) { return double(static_cast<float>(v)); });
      out.matrices[DumpKey{p.name, DumpKind::delta, r}] = DumpedMatrix{"restepped", p.name, DType::fp32, delta};
    }
  }
  return out;
}

}  // namespace

// The checked-in runs all step with weight decay 0 and Nesterov momentum. The same dumps stepped
// again with weight decay 0.1, with and without Nesterov, under each semantics: the diagnosis
// names each, at tp 2 and for the reference; and the negative controls: the same runs
// diagnosed with weight decay 0, or with the other momentum rule, are unexplained (the decay's
// sign and the blend are read, not assumed).
BOOST_AUTO_TEST_CASE(runs_with_weight_decay_with_and_without_nesterov_are_named) {
  struct Stepped {
    Strategy strategy;
    ScaleFrom scale;
    Semantics q_proj, o_proj;
  };
  const Stepped kStepped[] = {
      {Strategy::shard, ScaleFrom::local, Semantics::per_shard, Semantics::per_shard},
      {Strategy::gather, ScaleFrom::global, Semantics::whole, Semantics::whole},
      {Strategy::per_head, ScaleFrom::local, Semantics::per_head, Semantics::whole},
  };
  const int tp = 2;
  const RunDump reference_dump = load_run_dump({kRuns + "/reference"}, tiny_llama(), 1);
  const RunDump dump = candidate(tp, "shard");
  const Diagnosis one_rank = diagnose(*make_cpu_backend(), reference_dump, reference_dump, tiny_llama(), 1, run_config());
  const Diagnosis shape = diagnose_run(dump, tp);
  for (const bool nesterov : {true, false}) {
    MuonConfig cfg = run_config();
    cfg.weight_decay = 0.1;
    cfg.nesterov = nesterov;
    MuonConfig no_decay = cfg, other_blend = cfg;
    no_decay.weight_decay = 0;
    other_blend.nesterov = !nesterov;
    const RunDump reference = restepped(reference_dump, one_rank, 1, Strategy::gather, ScaleFrom::global, cfg);
    for (const Stepped& e : kStepped) {
      const RunDump cand = restepped(dump, shape, tp, e.strategy, e.scale, cfg);
      const Diagnosis d = diagnose(*make_cpu_backend(), reference, cand, tiny_llama(), tp, cfg);
      const Diagnosis undecayed = diagnose(*make_cpu_backend(), reference, cand, tiny_llama(), tp, no_decay);
      const Diagnosis reblended = diagnose(*make_cpu_backend(), reference, cand, tiny_llama(), tp, other_blend);
      for (const auto& [matrix, want] : {std::pair{"q_proj", e.q_proj}, std::pair{"o_proj", e.o_proj}}) {
        BOOST_TEST_CONTEXT("nesterov " << nesterov << ", " << strategy_name(e.strategy) << ", " << matrix) {
          BOOST_TEST(name(param(d, matrix).reference.match) == "whole");
          BOOST_TEST(name(param(d, matrix).candidate.match) == name(want));
          BOOST_TEST(name(param(undecayed, matrix).candidate.match) == "unexplained");
          BOOST_TEST(name(param(undecayed, matrix).reference.match) == "unexplained");
          BOOST_TEST(name(param(reblended, matrix).candidate.match) == "unexplained");
        }
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
