#pragma once
// The TP claims and the semantics diagnosis, written once against TpUnderTest and run on every
// implementation of a tensor-parallel NS or Muon update: the strategies on simulated ranks
// (properties/sharding/tp_catalogue_props.cpp), a user's Python TP function (python/), torch
// process groups. What a result can compute is the library's semantics table (nsv/semantics.hpp),
// the one `nsv diagnose` names a training run's update by.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nsv/kernels.hpp"
#include "nsv/semantics.hpp"
#include "tp_cases.hpp"

namespace nsv::checks {

// What the callee left in the shards it was handed, beside its results (the shard-untouched
// property): each rank's shard as the call left it, and whether its result shares the shard's memory.
struct ObservedTpCall {
  std::vector<MatD> outputs, shards_after;
  std::vector<bool> output_aliases_shard;
};

class TpUnderTest {
 public:
  virtual ~TpUnderTest() = default;
  virtual std::string name() const = 0;
  // Each rank's result for its shard of case t (the shards in rank order, as AutoTP lays them out).
  virtual std::vector<MatD> run(const TpCase& t, const std::vector<MatD>& shards, const NsConfig& cfg) const = 0;
  // The shards handed over in buffers the checker inspects after the call. By default run() on
  // copies: an implementation that cannot write the caller's shards (the simulated ranks).
  virtual ObservedTpCall run_observed(const TpCase& t, const std::vector<MatD>& shards, const NsConfig& cfg) const;
};

// A strategy of the library on simulated ranks, computing an NS result or a Muon update.
class SimulatedTp final : public TpUnderTest {
 public:
  SimulatedTp(Strategy strategy, ResultKind kind, ScaleFrom scale_from = ScaleFrom::global);
  std::string name() const override;
  std::vector<MatD> run(const TpCase& t, const std::vector<MatD>& shards, const NsConfig& cfg) const override;

 private:
  Strategy strategy_;
  ResultKind kind_;
  ScaleFrom scale_from_;
};

// What the implementation claims, and where its cases are drawn.
enum class TpClaim { exact, rounding, none };
struct TpCheck {
  NsConfig cfg;
  ResultKind kind = ResultKind::ns;    // plain NS results, or Muon updates (the aspect scale applied)
  Semantics target = Semantics::whole_ns;  // of `kind`: whole_ns or per_head; whole or per_head
  TpScope scope;
};
// The target's record; throws std::invalid_argument when it is not a target of `kind`.
const SemanticsRecord& target_record(const TpCheck&);

struct TpProperty {
  std::string_view code, name, claim;
  bool required_by_exact = false, required_by_rounding = false;
  std::int64_t min_side = 1;  // the smallest side its cases may have (8 where a rounding bound is claimed)
  void (*body)(const TpUnderTest&, const TpCheck&);
};
std::span<const TpProperty> tp_properties();
const TpProperty* find_tp_property(std::string_view name);
// Why `p` cannot run in the check's scope ("" when it can): a pinned shape below its min_side.
std::string not_applicable(const TpProperty& p, const TpCheck&);

// The S5 bound of a TP result against one semantics (sharding/allreduce_bound.hpp):
//     rel_diff(result, target) <= 2 S + N1
// S   the computation's own error: the largest rel_diff(., its float64 result) among equivalent
//     evaluations. For the whole matrix: NS of it and both all-reduce loops (gram_allreduce,
//     gram_restart_allreduce) run with the whole matrix on one rank (the orientation the split
//     forces, no partial sums), each on the matrix and on two row/column permutations of it
//     (permuted back) — whichever loop a TP all-reduce runs, its own error is one of these draws.
//     For per-shard and per-head NS: the blocks' own error, assembled.
// N1  the reduction noise a split adds at the first step: rel_diff of both all-reduce loops on
//     this layout after one step against one step of NS of the whole matrix (whole-matrix
//     semantics only; per-shard and per-head NS communicate nothing).
// Why 2: the result and the target are two evaluations of one float64 map, each within S of it
// (plus N1 for the reduction, propagated like any other rounding error). An aspect scale is one
// factor per block: it changes neither relative figure.
struct TpBound {
  double s = 0, n1 = 0;
  double value() const { return 2 * s + n1; }
};
TpBound tp_bound(const TpCase&, const MatD& g, const SemanticsRecord&, const NsConfig&);
extern const std::string_view kTpBoundDerivation;

// Every rank's block of `record`'s result on case t (the reference's computation).
std::vector<MatD> semantics_result(const SemanticsRecord&, ResultKind, const TpCase&, const MatD& g, const NsConfig&);

// The diagnosis: on `count` layouts sampled from the check's scope (seeded, reproducible), the
// distance of the implementation's assembled result to every semantics of its kind that applies.
struct CandidateDistance {
  const SemanticsRecord* record = nullptr;
  double distance = 0, bound = 0;
  bool bit_identical = false;
  bool matches() const { return bit_identical || distance <= bound; }
};
struct DiagnosisCase {
  std::string layout;
  std::string error;  // what the implementation raised or returned wrongly on this layout
  std::vector<CandidateDistance> candidates;
};
struct CandidateTally {
  const SemanticsRecord* record = nullptr;
  int cases = 0, matched = 0, bit_identical = 0;
  double median_distance = 0, max_distance = 0;
};
struct TpDiagnosis {
  std::vector<DiagnosisCase> cases;
  std::vector<CandidateTally> candidates;  // in record order
};
TpDiagnosis diagnose_tp(const TpUnderTest&, const TpCheck&, int count, std::uint64_t seed);

}  // namespace nsv::checks
