#include "nsv/analysis/diagnose.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "diagnose_bounds.hpp"
#include "nsv/invalid_field.hpp"
#include "nsv/layout.hpp"
#include "nsv/metrics.hpp"
#include "nsv/analysis/model_config.hpp"

namespace nsv {
namespace {

// One run's dumped matrices of one parameter, assembled to the whole shape.
struct RunInputs {
  MatD grad, delta;
  std::optional<MatD> momentum, weight;
  DType delta_dtype = DType::fp32;
  bool inputs_narrower_than_fp32 = false;
};

// kind at every rank 0..layout.tp()-1 assembled (load_run_dump has checked each shard's shape
// against the layout, assemble checks it again); nullopt when no rank dumped it. Throws when only
// some ranks did.
std::optional<MatD> assembled(const RunDump& dump, const std::string& name, DumpKind kind, const Layout& layout, DType* dtype,
                              bool* narrow) {
  std::vector<MatD> shards;
  std::vector<int> missing;
  for (int r = 0; r < layout.tp(); ++r) {
    const DumpedMatrix* m = dump.find(name, kind, r);
    if (!m) {
      missing.push_back(r);
      continue;
    }
    if (!all_finite(m->values)) throw std::invalid_argument(m->file + ": tensor '" + m->tensor + "' holds NaN or Inf");
    if (dtype) *dtype = m->dtype;
    if (narrow && (m->dtype == DType::bf16 || m->dtype == DType::fp16)) *narrow = true;
    shards.push_back(m->values);
  }
  if (shards.empty()) return std::nullopt;
  if (!missing.empty())
    throw std::invalid_argument("the " + std::string(dump_kind_name(kind)) + " of " + name + " is dumped by some ranks but not by rank " +
                                std::to_string(missing.front()) + " (tp = " + std::to_string(layout.tp()) + ": every rank dumps its shard)");
  return assemble(shards, layout);
}

std::optional<RunInputs> load_inputs(const RunDump& dump, const std::string& name, const Layout& layout, const char* run) {
  RunInputs in;
  auto delta = assembled(dump, name, DumpKind::delta, layout, &in.delta_dtype, nullptr);
  auto grad = assembled(dump, name, DumpKind::grad, layout, nullptr, &in.inputs_narrower_than_fp32);
  in.momentum = assembled(dump, name, DumpKind::momentum, layout, nullptr, &in.inputs_narrower_than_fp32);
  in.weight = assembled(dump, name, DumpKind::weight, layout, nullptr, nullptr);
  if (!delta && !grad && !in.momentum && !in.weight) return std::nullopt;
  if (!delta) throw std::invalid_argument(std::string("the ") + run + " dumps " + name + " but not its delta (w_after - w_before)");
  if (!grad) throw std::invalid_argument(std::string("the ") + run + " dumps " + name + " but not its gradient");
  in.delta = std::move(*delta);
  in.grad = std::move(*grad);
  return in;
}

struct Recomputed {
  MatD fp32, fp64;
};

// Every semantics that applies to p on `layout`, recomputed from the blend.
std::map<Semantics, Recomputed> recompute(const Backend& b, const MatD& blend, const MuonParam& p, const Layout& layout,
                                          const MuonConfig& cfg) {
  std::map<Semantics, Recomputed> out;
  const std::int64_t head_dim = p.heads_on_rows() ? p.head_dim : 0;
  const std::vector<MatD> shards = split(blend, layout);
  for (const SemanticsRecord& rec : semantics_records()) {
    if (!rec.of_muon_updates || !semantics_inapplicable_reason(rec, layout, head_dim).empty()) continue;
    MuonConfig c64 = cfg;
    c64.ns.dtype = DType::fp64;
    const MatD u32 = assemble(semantics_blocks(rec, ResultKind::muon_update, b, shards, layout, head_dim, cfg), layout);
    const MatD u64 = assemble(semantics_blocks(rec, ResultKind::muon_update, b, shards, layout, head_dim, c64), layout);
    out.emplace(rec.semantics, Recomputed{u32, u64});
  }
  return out;
}

RunVerdict judge(const RunInputs& in, const std::map<Semantics, Recomputed>& semantics, const MuonConfig& cfg) {
  RunVerdict v;
  if (in.inputs_narrower_than_fp32) {
    v.not_classified = "the gradient or momentum is dumped narrower than fp32, so the run's own inputs are not known to the bit";
    return v;
  }
  if (!in.weight) {
    v.not_classified = "no weights before the step are dumped (kind weight): the rounding of w_after - w_before cannot be bounded";
    return v;
  }
  v.delta_rounding = detail::delta_rounding(in.delta, *in.weight, cfg.weight_decay, in.delta_dtype);
  const MatD observed = -(in.delta + cfg.lr * cfg.weight_decay * *in.weight) / cfg.lr;
  for (const SemanticsRecord& rec : semantics_records()) {
    const auto it = semantics.find(rec.semantics);
    if (it == semantics.end()) continue;
    SemanticsFit f;
    f.semantics = rec.semantics;
    f.rel_diff = rel_diff(observed, it->second.fp32);
    f.own_error = rel_diff(it->second.fp32, it->second.fp64);
    f.bound = detail::match_bound(f.own_error, v.delta_rounding);
    f.within = f.rel_diff <= f.bound;
    for (const SemanticsFit& earlier : v.fits)
      if (compare_bits(semantics.at(earlier.semantics).fp32, it->second.fp32, DType::fp32).identical) f.same_bits_as.push_back(earlier.semantics);
    if (f.within && !v.match) v.match = f.semantics;
    else if (f.within && f.same_bits_as.empty()) v.also_within.push_back(f.semantics);
    v.fits.push_back(std::move(f));
  }
  return v;
}

const SemanticsFit* fit_of(const RunVerdict& v, Semantics s) {
  for (const auto& f : v.fits)
    if (f.semantics == s) return &f;
  return nullptr;
}

MatD blend_from(const RunInputs& in, const MuonConfig& cfg) {
  if (in.momentum) return blend_of(in.grad, *in.momentum, cfg);
  MatD momentum = MatD::Zero(in.grad.rows(), in.grad.cols());  // the first step: momentum starts at zero
  return momentum_and_blend(momentum, in.grad, cfg);
}

}  // namespace

MatrixComparison compare_matrices(const MatD& a, const MatD& reference) {
  return {rel_diff(a, reference), cosine(a, reference), norm_ratio(a, reference), max_abs_diff(a, reference),
          compare_bits(a, reference, DType::fp32).identical};
}

Diagnosis diagnose(const Backend& b, const RunDump& reference, const RunDump& candidate, const ModelConfig& model, int tp,
                   const MuonConfig& cfg) {
  const ModelDims& dims = model.dims;
  if (tp < 1) throw InvalidField("tp", "must be at least 1, got " + std::to_string(tp));
  if (!(cfg.lr > 0)) throw InvalidField("lr", "must be positive (the update is recovered as -delta / lr), got " + std::to_string(cfg.lr));
  cfg.ns.validate();
  if (reference.max_rank() > 0)
    throw std::invalid_argument("the reference is the tp = 1 run, but it holds tensors of rank " + std::to_string(reference.max_rank()));
  if (candidate.max_rank() >= tp)
    throw std::invalid_argument("the candidate holds tensors of rank " + std::to_string(candidate.max_rank()) + ", but tp = " +
                                std::to_string(tp) + " has ranks 0.." + std::to_string(tp - 1));
  Diagnosis d;
  d.model = dims.name;
  d.tp = tp;
  d.muon = cfg;
  for (const RunDump* dump : {&reference, &candidate}) d.skipped.insert(d.skipped.end(), dump->skipped.begin(), dump->skipped.end());
  std::set<std::string> known;
  for (const DumpedParam& dp : dump_params(model)) {  // the family's own matrices and names
    const MuonParam& p = dp.param;
    const std::string& name = dp.name;
    known.insert(name);
    const Layout whole = autotp_layout(p, 1), sharded = autotp_layout(p, tp);
    const auto ref = load_inputs(reference, name, whole, "reference");
    const auto cand = load_inputs(candidate, name, sharded, "candidate");
    if (!ref && !cand) {
      d.not_dumped.push_back(name);
      continue;
    }
    if (!ref || !cand) throw std::invalid_argument(name + " is dumped by the " + (ref ? "reference" : "candidate") + " only");
    ParamDiagnosis pd;
    pd.param = p;
    pd.name = name;
    pd.widths = sharded.widths();
    pd.first_step = !ref->momentum || !cand->momentum;
    if (ref->momentum.has_value() != cand->momentum.has_value())
      throw std::invalid_argument(name + ": the momentum is dumped by the " + (ref->momentum ? "reference" : "candidate") + " only");
    pd.grad = compare_matrices(cand->grad, ref->grad);
    if (ref->weight && cand->weight) pd.weight = compare_matrices(*cand->weight, *ref->weight);
    pd.update = compare_matrices(cand->delta, ref->delta);
    const auto ref_semantics = recompute(b, blend_from(*ref, cfg), p, whole, cfg);
    const auto cand_semantics = recompute(b, blend_from(*cand, cfg), p, sharded, cfg);
    pd.reference = judge(*ref, ref_semantics, cfg);
    pd.candidate = judge(*cand, cand_semantics, cfg);
    const Semantics s = pd.reference.match.value_or(Semantics::whole);
    const SemanticsFit *fr = fit_of(pd.reference, s), *fc = fit_of(pd.candidate, s);
    if (fr && fc && cand_semantics.count(s)) {
      pd.input_difference = rel_diff(cand_semantics.at(s).fp64, ref_semantics.at(s).fp64);
      pd.invariance_bound = detail::invariance_bound(pd.input_difference, fr->bound, fc->bound);
      const MatD u_ref = -(ref->delta + cfg.lr * cfg.weight_decay * *ref->weight) / cfg.lr;
      const MatD u_cand = -(cand->delta + cfg.lr * cfg.weight_decay * *cand->weight) / cfg.lr;
      pd.tp_invariant = rel_diff(u_cand, u_ref) <= pd.invariance_bound;
    }
    d.params.push_back(std::move(pd));
  }
  for (const RunDump* dump : {&reference, &candidate})
    for (const auto& [key, m] : dump->matrices)
      if (known.count(key.param) == 0)
        throw std::invalid_argument(m.file + ": tensor '" + m.tensor + "' is " + key.param + ", which the model (" + dims.name + ", " +
                                    std::to_string(dims.layers) + " layer(s)) does not have");
  if (d.params.empty()) {
    std::string names;
    for (const MuonParam& p : model.layer_params()) names += (names.empty() ? "" : ", ") + p.name;
    throw std::invalid_argument("the reference and the candidate hold no Muon matrix of the model (the " + model.model_type +
                                " family's matrices are named " + names + ")");
  }
  return d;
}

}  // namespace nsv
