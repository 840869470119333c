// The TP claims and the semantics diagnosis (checks/tp_catalogue.hpp) run on the library's own
// strategies on simulated ranks, by each record's promise: what promises bit-identity must pass
// the exact claim (tp-invariance and computing the target), what is exact in exact arithmetic the
// rounding claim, and the diagnosis must name what each computes. The same claims and diagnosis
// run on a user's Python TP function (python/) and on torch process groups. Negative controls:
// `shard` (per-shard NS, AutoTP today) claimed exact fails tp-invariance, and a tp-invariant
// function that computes something else (the identity) fails "computes the target".
#include <boost/test/unit_test.hpp>
#include <deque>
#include <string>

#include "check.hpp"
#include "nsv/strategy.hpp"
#include "property_run.hpp"
#include "tp_catalogue.hpp"

using namespace nsv;

namespace {

checks::TpCheck check_of(Semantics target, ResultKind kind) {
  checks::TpCheck c;
  c.kind = kind;
  c.target = target;
  c.scope.max_side = 24;  // the bounds' S runs NS several times per case: small sides keep the gate fast
  c.scope.max_tp = 6;
  return c;
}

checks::TpCheck natural_check(Strategy s, ResultKind kind) {
  const bool heads = natural_target(s) == Target::per_head;
  return check_of(heads ? Semantics::per_head : kind == ResultKind::ns ? Semantics::whole_ns : Semantics::whole, kind);
}

void require_property(std::string_view name, const checks::TpUnderTest& impl, const checks::TpCheck& c) {
  const checks::TpProperty& p = *checks::find_tp_property(name);
  checks::check_property([&] { p.body(impl, c); }, true);
}

// The property's outcome at the gate's seed, for the negative controls.
checks::PropertyOutcome outcome_of(const char* name, const checks::TpUnderTest& impl, const checks::TpCheck& c) {
  const checks::TpProperty& p = *checks::find_tp_property(name);
  return checks::run_property(name, [&] { p.body(impl, c); }, {rc::detail::configuration().testParams.seed, 30, 100}, nullptr);
}

// Every rank returns its shard: tp-invariant (the identity commutes with any split) and wrong.
class Identity final : public checks::TpUnderTest {
 public:
  std::string name() const override { return "the identity"; }
  std::vector<MatD> run(const checks::TpCase&, const std::vector<MatD>& shards, const NsConfig&) const override { return shards; }
};

constexpr const char* kInvariance = "tp_result_equals_its_own_tp_1_result_bit_for_bit";
constexpr const char* kTarget = "tp_1_result_computes_the_target_within_rounding";
constexpr const char* kS5 = "tp_result_is_within_the_s5_bound_of_the_target";

}  // namespace

namespace {

// One test case per strategy and property its promise requires (so that a replay line names
// exactly one property run), registered before main runs: `<strategy>__<property>`.
struct ClaimRegistration {
  ClaimRegistration() {
    boost::unit_test::test_suite* suite = BOOST_TEST_SUITE("tp_catalogue_claims");
    for (const StrategyRecord& r : strategy_records()) {
      if (r.promise == Promise::none) continue;
      const bool exact = r.promise == Promise::bit_identical;
      for (const checks::TpProperty& p : checks::tp_properties()) {
        if (!(exact ? p.required_by_exact : p.required_by_rounding)) continue;
        names().push_back(std::string(r.name) + "__" + std::string(p.name));
        suite->add(boost::unit_test::make_test_case(
            [s = r.strategy, name = p.name] {
              require_property(name, checks::SimulatedTp(s, ResultKind::ns), natural_check(s, ResultKind::ns));
            },
            boost::unit_test::const_string(names().back()), __FILE__, __LINE__));
      }
    }
    boost::unit_test::framework::master_test_suite().add(suite);
  }
  // The test names, alive as long as the test tree (Boost keeps a view of them).
  static std::deque<std::string>& names() {
    static std::deque<std::string> kept;
    return kept;
  }
};
const ClaimRegistration registration;

}  // namespace

BOOST_AUTO_TEST_SUITE(sharding_tp_catalogue)

BOOST_AUTO_TEST_SUITE(tp_catalogue)

BOOST_AUTO_TEST_CASE(negative_controls_per_shard_claimed_exact_and_the_identity_fail) {
  const checks::TpCheck whole = check_of(Semantics::whole_ns, ResultKind::ns);
  const checks::PropertyOutcome shard = outcome_of(kInvariance, checks::SimulatedTp(Strategy::shard, ResultKind::ns), whole);
  BOOST_TEST(shard.status == checks::Status::fails, "shard claimed exact: " << shard.message);
  const checks::PropertyOutcome identity_invariance = outcome_of(kInvariance, Identity(), whole);
  BOOST_TEST(identity_invariance.status == checks::Status::holds, "the identity is tp-invariant: " << identity_invariance.message);
  const checks::PropertyOutcome identity_target = outcome_of(kTarget, Identity(), whole);
  BOOST_TEST(identity_target.status == checks::Status::fails, "the identity computes the target: " << identity_target.message);
  BOOST_TEST(identity_target.detail.has_value());
  BOOST_TEST(identity_target.detail->kind == checks::FailureDetail::Kind::bound);
}

// The diagnosis names what each strategy computes, as NS results and as Muon updates: every
// sampled layout within the bound of that semantics.
BOOST_AUTO_TEST_CASE(the_diagnosis_names_what_each_strategy_computes) {
  struct Expected {
    Strategy strategy;
    ResultKind kind;
    ScaleFrom scale;
    Semantics semantics;
  };
  const Expected expected[] = {
      {Strategy::shard, ResultKind::ns, ScaleFrom::local, Semantics::per_shard_ns},
      {Strategy::gather, ResultKind::ns, ScaleFrom::local, Semantics::whole_ns},
      {Strategy::gram_allreduce, ResultKind::ns, ScaleFrom::local, Semantics::whole_ns},
      {Strategy::shard, ResultKind::muon_update, ScaleFrom::local, Semantics::per_shard},
      {Strategy::shard, ResultKind::muon_update, ScaleFrom::global, Semantics::per_shard_global_scale},
      {Strategy::gather, ResultKind::muon_update, ScaleFrom::global, Semantics::whole},
  };
  for (const Expected& e : expected) {
    const checks::SimulatedTp impl(e.strategy, e.kind, e.scale);
    const Semantics whole = e.kind == ResultKind::ns ? Semantics::whole_ns : Semantics::whole;
    const checks::TpDiagnosis d = checks::diagnose_tp(impl, check_of(whole, e.kind), 12, 20261130);
    BOOST_TEST_CONTEXT(impl.name()) {
      bool found = false;
      for (const checks::CandidateTally& t : d.candidates)
        if (t.record->semantics == e.semantics) {
          found = true;
          BOOST_TEST(t.cases == 12);
          BOOST_TEST(t.matched == t.cases);
        }
      BOOST_TEST(found);
      for (const checks::DiagnosisCase& c : d.cases) BOOST_TEST(c.error.empty());
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
