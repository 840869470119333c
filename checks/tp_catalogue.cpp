#include "tp_catalogue.hpp"

#include <rapidcheck.h>

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>

#include "assertions.hpp"
#include "generators/tiers.hpp"
#include "generators/transforms.hpp"
#include "nsv/metrics.hpp"
#include "reference_runs.hpp"
#include "sharding/allreduce_bound.hpp"
#include "tolerances.hpp"

namespace nsv::checks {
namespace {

constexpr Strategy kAllReduceLoops[] = {Strategy::gram_allreduce, Strategy::gram_restart_allreduce};

MuonConfig muon_of(const NsConfig& cfg) {
  MuonConfig m;
  m.ns = cfg;
  return m;
}

// The case's mesh, where it has one (the per-piece semantics are of its pieces).
std::optional<MeshLayout> mesh_of(const TpCase& t) {
  if (!t.dp) return std::nullopt;
  return t.mesh();
}

bool applies(const SemanticsRecord& rec, const TpCase& t) {
  const std::optional<MeshLayout> mesh = mesh_of(t);
  return semantics_inapplicable_reason(rec, t.layout, t.heads_on_rows() ? t.head_dim : 0, mesh ? &*mesh : nullptr).empty();
}

// S of the whole-matrix semantics: the largest own error among the equivalent evaluations of
// NS(g) (S5's (a), (b) and (c), sharding/allreduce_bound.hpp, where the draws are measured): the
// kernel, and both all-reduce loops with the whole matrix on one rank (whichever loop a TP
// all-reduce runs, its own error is one of these draws), each on g and on kPermutedDraws
// row/column permutations of it (permuted back), and on those permutations both loops on the
// case's layout. The loops' draws on the permuted inputs matter: the Gram loop on a short-axis
// split carries a rank-deficient Gram whose error varies with the summation order by up to 4x
// (sharding/allreduce_bound.hpp): with fewer draws a correct result can exceed 2 S + N1.
double whole_own_error(const TpCase& t, const MatD& g, const NsConfig& cfg) {
  const NsConfig cfg64 = checks::oracle_config(cfg);
  const MatD whole64 = checks::ns(g, cfg64);
  const Layout one_rank = contiguous_layout(t.axis(), {t.layout.dim, 0});
  const auto loop_error = [&](Strategy loop, const MatD& x, const MatD& x64, const Layout& on) {
    return checks::shard::own_error_on(loop, checks::cpu(), x, x64, on, cfg);
  };
  const auto own_errors = [&](const MatD& x, const MatD& x64) {
    double s = rel_diff(checks::ns(x, cfg), x64);
    for (Strategy loop : kAllReduceLoops) s = std::max(s, loop_error(loop, x, x64, one_rank));
    return s;
  };
  double s = own_errors(g, whole64);
  checks::shard::PermutedDraws perms;
  perms.sample(g.rows(), g.cols(), t.seed);  // from the case's seed (outside a property)
  for (int k = 0; k < checks::shard::kPermutedDraws; ++k) {
    const MatD x = perms.apply(k, g), x64 = perms.apply(k, whole64);
    s = std::max(s, own_errors(x, x64));
    if (t.layout.tp() > 1)
      for (Strategy loop : kAllReduceLoops) s = std::max(s, loop_error(loop, x, x64, t.layout));
  }
  return s;
}

double reduction_noise(const TpCase& t, const MatD& g, NsConfig cfg) {
  cfg.steps = std::min(cfg.steps, 1);
  const MatD whole = checks::ns(g, cfg);
  double n1 = 0;
  for (Strategy loop : kAllReduceLoops)
    n1 = std::max(n1, rel_diff(assemble(run_strategy(loop, checks::cpu(), shard_matrix(g, t.layout), cfg).outputs, t.layout), whole));
  return n1;
}

// The implementation's result on case t, every rank's block of its shard's shape (a failed case
// saying what came back otherwise).
std::vector<MatD> checked_run(const TpUnderTest& impl, const TpCase& t, const MatD& g, const NsConfig& cfg) {
  const std::vector<MatD> shards = split(g, t.layout);
  std::vector<MatD> out = impl.run(t, shards, cfg);
  if (out.size() != shards.size())
    fail_predicate(impl.name() + " returned " + std::to_string(out.size()) + " blocks for " + std::to_string(shards.size()) + " ranks");
  for (std::size_t r = 0; r < shards.size(); ++r)
    if (out[r].rows() != shards[r].rows() || out[r].cols() != shards[r].cols())
      fail_predicate("rank " + std::to_string(r) + ": " + impl.name() + " returned " + std::to_string(out[r].rows()) + "x" +
                     std::to_string(out[r].cols()) + " for a " + std::to_string(shards[r].rows()) + "x" +
                     std::to_string(shards[r].cols()) + " shard");
  return out;
}

TpCase draw(const TpCheck& c, std::int64_t min_side) {
  TpScope scope = c.scope;
  scope.min_side = std::max(scope.min_side, min_side);
  scope.heads_on_rows = scope.heads_on_rows || c.target == Semantics::per_head;
  const TpCase t = *tp_cases(scope);
  note_input(t.describe());
  RC_TAG(t.rule);
  RC_CLASSIFY(t.layout.tp() >= 2, "tp >= 2");
  return t;
}

// claim exact, first half: every rank's block has the bits of the same function's result with
// the whole matrix on one rank (a TP result that does not depend on tp reproduces it bit for bit).
void tp_invariance(const TpUnderTest& impl, const TpCheck& c) {
  const TpCase t = draw(c, 1);
  const MatD g = t.matrix();
  note_matrix("input", g);
  const std::vector<MatD> outputs = checked_run(impl, t, g, c.cfg);
  const TpCase whole = t.on_one_rank();
  const std::vector<MatD> expected = split(assemble(checked_run(impl, whole, g, c.cfg), whole.layout), t.layout);
  for (int r = 0; r < t.layout.tp(); ++r)
    assert_bit_identical("rank " + std::to_string(r) + "'s block and the same rows/cols of the function's result at tp 1",
                         outputs[static_cast<std::size_t>(r)], expected[static_cast<std::size_t>(r)], c.cfg.dtype);
}

// rel_diff of the implementation's assembled result on case t to the target's, within the TP
// bound of that case (2 S + N1; at tp 1 there is no reduction and N1 is the loops' own noise).
void assert_within_the_bound_of_the_target(const TpUnderTest& impl, const TpCheck& c, const TpCase& t, const std::string& whose) {
  const MatD g = t.matrix();
  note_matrix("input", g);
  const SemanticsRecord& rec = target_record(c);
  const MatD yours = assemble(checked_run(impl, t, g, c.cfg), t.layout);
  const MatD target = assemble(semantics_result(rec, c.kind, t, g, c.cfg), t.layout);
  note_matrix("output", yours);
  note_matrix("target", target);
  const TpBound b = tp_bound(t, g, rec, c.cfg);
  assert_within("rel_diff(" + whose + ", " + std::string(rec.label) + ")", rel_diff(yours, target), b.value(),
                "2 S + N1 with S = " + exact(b.s) + " and N1 = " + exact(b.n1) + "; " + std::string(kTpBoundDerivation));
}

// claims exact and rounding: the function's whole-matrix (tp 1) result computes the target,
// within the bound of two evaluations of one map. A tp-invariant function that computes
// something else (the identity, zeros, a constant) fails here.
void computes_the_target(const TpUnderTest& impl, const TpCheck& c) {
  const TpCase whole = draw(c, checks::kTwoDrawMinSide).on_one_rank();
  note_input(whole.describe());
  assert_within_the_bound_of_the_target(impl, c, whole, "the function's result at tp 1");
}

// claim rounding: the assembled result at any tp within the S5 bound 2 S + N1 of the target.
void within_the_s5_bound(const TpUnderTest& impl, const TpCheck& c) {
  assert_within_the_bound_of_the_target(impl, c, draw(c, checks::kTwoDrawMinSide), "assembled result");
}

// claims exact and rounding: every rank's shard keeps its bits through the call (an in-place
// normalization of the shard changes the rank's gradient behind the optimizer's back), and no
// rank's result is a view of its shard.
void shards_untouched(const TpUnderTest& impl, const TpCheck& c) {
  const TpCase t = draw(c, 1);
  const MatD g = t.matrix();
  note_matrix("input", g);
  const std::vector<MatD> shards = split(g, t.layout);
  const ObservedTpCall call = impl.run_observed(t, shards, c.cfg);
  const DType buffer = c.cfg.dtype == DType::fp64 ? DType::fp64 : DType::fp32;
  for (std::size_t r = 0; r < shards.size(); ++r) {
    const std::string rank = "rank " + std::to_string(r);
    assert_bit_identical(rank + "'s shard after the call and before it", call.shards_after.at(r), shards[r], buffer);
    assert_that(!call.output_aliases_shard.at(r),
                rank + "'s result shares memory with its shard: the rank's gradient and its update are one buffer");
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

const std::string_view kTpBoundDerivation =
    "S is the computation's own error, max over equivalent evaluations (NS of the whole matrix and both all-reduce loops "
    "with the whole matrix on one rank, each on it and on three permutations of it, and both loops on this layout on "
    "those permutations; for per-shard and per-head NS the blocks' own error), N1 one step's "
    "reduction noise of the all-reduce loops on this layout; the result and the target are two evaluations of one float64 "
    "map, each within S of it (S5, sharding/allreduce_bound.hpp)";

SimulatedTp::SimulatedTp(Strategy strategy, ResultKind kind, ScaleFrom scale_from)
    : strategy_(strategy), kind_(kind), scale_from_(scale_from) {}

std::string SimulatedTp::name() const {
  return std::string(strategy_name(strategy_)) + (kind_ == ResultKind::muon_update ? " (Muon update)" : "") + " on simulated ranks";
}

ObservedTpCall TpUnderTest::run_observed(const TpCase& t, const std::vector<MatD>& shards, const NsConfig& cfg) const {
  return {run(t, shards, cfg), shards, std::vector<bool>(shards.size(), false)};
}

std::vector<MatD> SimulatedTp::run(const TpCase& t, const std::vector<MatD>& shards, const NsConfig& cfg) const {
  const std::int64_t head_dim = t.heads_on_rows() ? t.head_dim : 0;
  if (kind_ == ResultKind::ns) return run_strategy(strategy_, checks::cpu(), ShardedMatrix{shards, t.layout, head_dim}, cfg).outputs;
  MuonConfig m = muon_of(cfg);
  m.scale_from = scale_from_;
  return sharded_update_from_blends(checks::cpu(), shards, t.layout, head_dim, strategy_, m).updates;
}

const SemanticsRecord& target_record(const TpCheck& c) {
  const SemanticsRecord& rec = semantics_record(c.target);
  const bool whole_or_head = rec.strategy == Strategy::gather || rec.strategy == Strategy::per_head;
  if (!rec.of(c.kind) || !whole_or_head || (rec.strategy == Strategy::gather && rec.scale_from != ScaleFrom::global))
    throw std::invalid_argument("target: " + std::string(rec.label) + " is not a target of " +
                                (c.kind == ResultKind::ns ? "an NS result" : "a Muon update") + " (whole or per_head)");
  return rec;
}

// A function-local table: front ends register tests from it before main runs.
std::span<const TpProperty> tp_properties() {
  static const TpProperty table[] = {
      {.code = "S-exact",
       .name = "tp_result_equals_its_own_tp_1_result_bit_for_bit",
       .claim = "every rank's block has the bits of the function's own result with the whole matrix on one rank",
       .required_by_exact = true,
       .body = tp_invariance},
      {.code = "S-target",
       .name = "tp_1_result_computes_the_target_within_rounding",
       .claim = "the function's result at tp 1 is the target within 2 S + N1 (two evaluations of one map)",
       .required_by_exact = true,
       .required_by_rounding = true,
       .min_side = kMinDrawnSide,
       .body = computes_the_target},
      {.code = "S5",
       .name = "tp_result_is_within_the_s5_bound_of_the_target",
       .claim = "the assembled result at any tp is the target within 2 S + N1",
       .required_by_rounding = true,
       .min_side = checks::kTwoDrawMinSide,
       .body = within_the_s5_bound},
      {.code = "S-untouched",
       .name = "tp_shards_are_left_untouched_and_not_aliased",
       .claim = "every rank's shard keeps its bits and every rank's result is a new buffer",
       .required_by_exact = true,
       .required_by_rounding = true,
       .body = shards_untouched},
  };
  return table;
}

std::string not_applicable(const TpProperty& p, const TpCheck& c) {
  if (c.scope.shape && std::min(c.scope.shape->first, c.scope.shape->second) < p.min_side)
    return "the bound is claimed for sides >= " + std::to_string(p.min_side);
  return "";
}

const TpProperty* find_tp_property(std::string_view name) {
  for (const TpProperty& p : tp_properties())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<MatD> semantics_result(const SemanticsRecord& rec, ResultKind kind, const TpCase& t, const MatD& g, const NsConfig& cfg) {
  const std::optional<MeshLayout> mesh = mesh_of(t);
  return semantics_blocks(rec, kind, checks::cpu(), split(g, t.layout), t.layout, t.heads_on_rows() ? t.head_dim : 0, muon_of(cfg),
                          mesh ? &*mesh : nullptr);
}

namespace {

// The matrices a block semantics runs NS on, each on its own: the shards, every head block of
// them, or every mesh piece as the tensor its rank holds (a ZeRO piece: a 1 x n row).
std::vector<MatD> ns_blocks(const SemanticsRecord& rec, const TpCase& t, const MatD& g) {
  const std::vector<MatD> shards = split(g, t.layout);
  std::vector<MatD> blocks;
  if (rec.of_mesh_pieces) {
    const MeshLayout m = t.mesh();
    const std::vector<MatD> pieces = pieces_of_shards(shards, m);
    for (int r = 0; r < m.size(); ++r) {
      const auto [rows, cols] = m.piece_matrix_shape(r);
      blocks.push_back(shard_from_flat(pieces[static_cast<std::size_t>(r)], rows, cols));
    }
  } else if (rec.strategy == Strategy::per_head && t.head_dim > 0) {
    for (const MatD& s : shards)
      for (Eigen::Index h = 0; h + t.head_dim <= s.rows(); h += t.head_dim) blocks.push_back(s.middleRows(h, t.head_dim));
  } else {
    blocks = shards;
  }
  return blocks;
}

}  // namespace

TpBound tp_bound(const TpCase& t, const MatD& g, const SemanticsRecord& rec, const NsConfig& cfg) {
  TpBound b;
  if (rec.strategy == Strategy::gather) {
    b.s = whole_own_error(t, g, cfg);
    b.n1 = reduction_noise(t, g, cfg);
  } else {
    // the blocks' own error, unscaled (a scale is one factor per block)
    const SemanticsRecord& unscaled = semantics_record(rec.strategy != Strategy::shard ? Semantics::per_head
                                                       : rec.of_mesh_pieces              ? Semantics::per_piece_ns
                                                                                         : Semantics::per_shard_ns);
    b.s = rel_diff(assemble(semantics_result(unscaled, ResultKind::ns, t, g, cfg), t.layout),
                   assemble(semantics_result(unscaled, ResultKind::ns, t, g, checks::oracle_config(cfg)), t.layout));
    // Below kTwoDrawMinSide one draw of a block's rounding can fall far below another correct
    // evaluation's (tolerances.hpp; a ZeRO piece is a 1 x n row, whose error is its normalization's,
    // computed more or less accurately by correct kernels): there S is at least each such block's
    // a-priori B (rounding_bound, relative to its NS; the assembled relative error is at most the
    // largest block's).
    for (const MatD& block : ns_blocks(unscaled, t, g))
      if (block.size() > 0 && std::min(block.rows(), block.cols()) < checks::kTwoDrawMinSide)
        b.s = std::max(b.s, checks::rounding_bound(block, cfg));
  }
  return b;
}

TpDiagnosis diagnose_tp(const TpUnderTest& impl, const TpCheck& c, int count, std::uint64_t seed) {
  TpScope scope = c.scope;
  scope.min_side = std::max<std::int64_t>(scope.min_side, checks::kTwoDrawMinSide);
  scope.heads_on_rows = scope.heads_on_rows || c.target == Semantics::per_head;
  const auto gen = tp_cases(scope);
  std::map<const SemanticsRecord*, std::vector<CandidateDistance>> by_record;
  TpDiagnosis d;
  for (int i = 0; i < count; ++i) {
    // sizes spread over RapidCheck's range, so that small and large cases both occur
    const TpCase t = checks::sample(gen, seed + static_cast<std::uint64_t>(i), 1 + (99 * i) / std::max(1, count - 1));
    const MatD g = t.matrix();
    DiagnosisCase dc;
    dc.layout = t.describe();
    std::vector<MatD> outputs;
    try {
      outputs = checked_run(impl, t, g, c.cfg);
    } catch (const rc::detail::CaseResult& r) {
      dc.error = r.description;
    } catch (const std::exception& e) {
      dc.error = e.what();
    }
    if (dc.error.empty()) {
      const MatD yours = assemble(outputs, t.layout);
      for (const SemanticsRecord& rec : semantics_records()) {
        if (!rec.of(c.kind) || !applies(rec, t)) continue;
        const MatD candidate = assemble(semantics_result(rec, c.kind, t, g, c.cfg), t.layout);
        CandidateDistance cd{&rec, rel_diff(yours, candidate), tp_bound(t, g, rec, c.cfg).value(),
                             compare_bits(yours, candidate, c.cfg.dtype).identical};
        dc.candidates.push_back(cd);
        by_record[&rec].push_back(cd);
      }
    }
    d.cases.push_back(std::move(dc));
  }
  for (const SemanticsRecord& rec : semantics_records()) {
    const auto it = by_record.find(&rec);
    if (it == by_record.end()) continue;
    CandidateTally tally{&rec};
    std::vector<double> distances;
    for (const CandidateDistance& cd : it->second) {
      ++tally.cases;
      tally.matched += cd.matches();
      tally.bit_identical += cd.bit_identical;
      distances.push_back(cd.distance);
    }
    tally.median_distance = median(distances);
    tally.max_distance = *std::max_element(distances.begin(), distances.end());
    d.candidates.push_back(tally);
  }
  return d;
}

}  // namespace nsv::checks
