#include "nsv/render/diagnosis.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace nsv {
namespace {

std::string label(Semantics s) { return std::string(semantics_record(s).label); }

const SemanticsFit* closest(const RunVerdict& v) {
  const SemanticsFit* best = nullptr;
  for (const auto& f : v.fits)
    if (!best || f.rel_diff < best->rel_diff) best = &f;
  return best;
}

// The semantics whose recomputation has the same bits as the match (indistinguishable here).
std::vector<Semantics> same_bits_as_match(const RunVerdict& v) {
  std::vector<Semantics> out;
  for (const auto& f : v.fits)
    if (v.match && std::find(f.same_bits_as.begin(), f.same_bits_as.end(), *v.match) != f.same_bits_as.end()) out.push_back(f.semantics);
  return out;
}

std::string names(const std::vector<Semantics>& list) {
  std::vector<std::string> labels;
  for (Semantics x : list) labels.push_back(label(x));
  return fmt::format("{}", fmt::join(labels, "; "));
}

nlohmann::json comparison_json(const MatrixComparison& c) {
  return {{"rel_diff", c.rel_diff}, {"cosine", c.cosine}, {"norm_ratio", c.norm_ratio}, {"max_abs_diff", c.max_abs_diff},
          {"bit_identical", c.bit_identical}};
}

nlohmann::json verdict_json(const RunVerdict& v) {
  nlohmann::json fits = nlohmann::json::array();
  for (const auto& f : v.fits) {
    nlohmann::json same = nlohmann::json::array();
    for (Semantics s : f.same_bits_as) same.push_back(semantics_record(s).key);
    fits.push_back({{"semantics", semantics_record(f.semantics).key}, {"label", label(f.semantics)}, {"rel_diff", f.rel_diff},
                    {"own_error", f.own_error}, {"bound", f.bound}, {"within", f.within}, {"same_bits_as", same}});
  }
  nlohmann::json also = nlohmann::json::array();
  for (Semantics s : v.also_within) also.push_back(semantics_record(s).key);
  return {{"match", v.match ? nlohmann::json(semantics_record(*v.match).key) : nlohmann::json()},
          {"label", v.match ? nlohmann::json(label(*v.match)) : nlohmann::json()},
          {"verdict", verdict_words(v)}, {"also_within", also}, {"not_classified", v.not_classified},
          {"delta_rounding", v.delta_rounding}, {"fits", fits}};
}

std::string widths_text(const std::vector<std::int64_t>& w) { return fmt::format("{}", fmt::join(w, "/")); }

std::string header_line(const Diagnosis& d) {
  return fmt::format("{}: tp = 1 (reference) vs tp = {} (candidate); Muon lr {:g}, momentum {:g}{}, wd {:g}; {} NS, {} steps, {}, "
                     "products {}",
                     d.model, d.tp, d.muon.lr, d.muon.beta, d.muon.nesterov ? " (Nesterov)" : "", d.muon.weight_decay,
                     kernel_name(d.muon.ns.kernel), d.muon.ns.steps, dtype_name(d.muon.ns.dtype), products_name(d.muon.ns.products));
}

std::string invariance_words(const ParamDiagnosis& p) {
  if (p.invariance_bound == 0) return "not judged";
  return fmt::format("{} (update rel. diff {:.3g} vs bound {:.3g})", p.tp_invariant ? "yes" : "no", p.update.rel_diff, p.invariance_bound);
}

}  // namespace

std::string weights_warning(const Diagnosis& d) {
  const ParamDiagnosis* worst = nullptr;
  std::size_t differ = 0;
  for (const auto& p : d.params)
    if (p.weight && !p.weight->bit_identical) {
      ++differ;
      if (!worst || p.weight->rel_diff > worst->weight->rel_diff) worst = &p;
    }
  if (!worst) return "";
  return fmt::format("warning: the weights before the step differ between the runs for {} of {} matrices (largest rel. diff {:.3g}, "
                     "{}): the runs did not start this step from the same state, so their updates differ for that reason too; "
                     "dump both runs at the same step of the same seed and data\n",
                     differ, d.params.size(), worst->weight->rel_diff, worst->name);
}

std::string verdict_words(const RunVerdict& v) {
  if (!v.not_classified.empty()) return "not classified: " + v.not_classified;
  if (!v.match) {
    const SemanticsFit* c = closest(v);
    return c ? fmt::format("unexplained (closest: {}, rel. diff {:.3g} > bound {:.3g})", label(c->semantics), c->rel_diff, c->bound)
             : "unexplained";
  }
  std::string s = label(*v.match);
  if (const auto same = same_bits_as_match(v); !same.empty()) s += " (the same bits here as: " + names(same) + ")";
  if (!v.also_within.empty()) s += " (also within bound: " + names(v.also_within) + ")";
  return s;
}

nlohmann::json diagnosis_json(const Diagnosis& d) {
  nlohmann::json params = nlohmann::json::array();
  for (const auto& p : d.params)
    params.push_back({{"name", p.name}, {"matrix", p.param.name}, {"rows", p.param.rows}, {"cols", p.param.cols},
                      {"split_axis", p.param.split_axis}, {"shard_widths", p.widths}, {"first_step", p.first_step},
                      {"grad", p.grad ? comparison_json(*p.grad) : nlohmann::json()},
                      {"weight", p.weight ? comparison_json(*p.weight) : nlohmann::json()}, {"update", comparison_json(p.update)},
                      {"reference", verdict_json(p.reference)}, {"candidate", verdict_json(p.candidate)},
                      {"tp_invariant", p.tp_invariant}, {"invariance_bound", p.invariance_bound},
                      {"input_difference", p.input_difference}});
  return {{"schema", "nsv.diagnose/1"},
          {"model", d.model},
          {"tp", d.tp},
          {"muon", {{"lr", d.muon.lr}, {"momentum", d.muon.beta}, {"nesterov", d.muon.nesterov}, {"wd", d.muon.weight_decay}}},
          {"ns", {{"kernel", kernel_name(d.muon.ns.kernel)}, {"steps", d.muon.ns.steps}, {"dtype", dtype_name(d.muon.ns.dtype)},
                  {"accumulate", accumulate_name(d.muon.ns.accumulate)}, {"products", products_name(d.muon.ns.products)}}},
          {"bounds", {{"match", kMatchBoundDerivation}, {"invariance", kInvarianceBoundDerivation}}},
          {"params", params},
          {"not_dumped", d.not_dumped},
          {"skipped", d.skipped}};
}

std::string diagnosis_markdown(const Diagnosis& d) {
  std::string s = "## nsv diagnose\n\n" + header_line(d) + "\n\n";
  if (const std::string w = weights_warning(d); !w.empty()) s += "**" + w.substr(0, w.size() - 1) + "**\n\n";
  s += "| matrix | shards | grad rel. diff | update rel. diff | cosine | norm ratio | bit-identical | reference computes | "
       "candidate computes | tp-invariant |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& p : d.params)
    s += fmt::format("| {} | {} | {} | {:.4g} | {:.5f} | {:.4f} | {} | {} | {} | {} |\n", p.name, widths_text(p.widths),
                     p.grad ? fmt::format("{:.3g}", p.grad->rel_diff) : "-", p.update.rel_diff, p.update.cosine, p.update.norm_ratio,
                     p.update.bit_identical ? "yes" : "no", verdict_words(p.reference), verdict_words(p.candidate), invariance_words(p));
  s += "\nEach semantics recomputed from the run's own gradient and momentum: rel. diff of the dumped update to it, and the "
       "derived bound (3 x the kernel's own fp64-oracle error + the rounding of w_after - w_before + u32).\n\n"
       "| matrix | run | semantics | rel. diff | bound | within |\n|---|---|---|---|---|---|\n";
  for (const auto& p : d.params)
    for (const auto* run : {&p.reference, &p.candidate})
      for (const auto& f : run->fits)
        s += fmt::format("| {} | {} | {} | {:.3g} | {:.3g} | {} |\n", p.param.name, run == &p.reference ? "tp = 1" : fmt::format("tp = {}", d.tp),
                         label(f.semantics), f.rel_diff, f.bound, f.within ? "yes" : "no");
  if (!d.not_dumped.empty()) s += "\nNot dumped: " + std::to_string(d.not_dumped.size()) + " Muon matrices of the model.\n";
  if (!d.skipped.empty()) s += "Skipped: " + std::to_string(d.skipped.size()) + " tensors that are not decoder-layer matrices.\n";
  return s;
}

std::string diagnosis_text(const Diagnosis& d) {
  std::string s = "nsv diagnose: " + header_line(d) + "\n" + weights_warning(d);
  for (const auto& p : d.params) {
    s += fmt::format("\n{} ({}x{}, split on dim {}, shards {}){}\n", p.name, p.param.rows, p.param.cols, p.param.split_axis,
                     widths_text(p.widths), p.first_step ? "  [no momentum dumped: taken as the first step]" : "");
    if (p.grad)
      s += fmt::format("  gradients  rel. diff {:.3g}, max |diff| {:.3g}{}\n", p.grad->rel_diff, p.grad->max_abs_diff,
                       p.grad->bit_identical ? ", bit-identical" : "");
    if (p.weight && !p.weight->bit_identical)
      s += fmt::format("  weights before the step differ: rel. diff {:.3g}, max |diff| {:.3g}\n", p.weight->rel_diff, p.weight->max_abs_diff);
    s += fmt::format("  update     rel. diff {:.4g}, cosine {:.5f}, norm ratio {:.4f}{}\n", p.update.rel_diff, p.update.cosine,
                     p.update.norm_ratio, p.update.bit_identical ? ", bit-identical" : "");
    s += "  reference  " + verdict_words(p.reference) + "\n";
    s += "  candidate  " + verdict_words(p.candidate) + "\n";
    s += "  tp-invariant: " + invariance_words(p) + "\n";
    for (const auto* run : {&p.reference, &p.candidate})
      for (const auto& f : run->fits)
        s += fmt::format("    {:<7} {:<36} rel. diff {:>10.3g}  bound {:>9.3g}  {}\n", run == &p.reference ? "tp=1" : fmt::format("tp={}", d.tp),
                         label(f.semantics), f.rel_diff, f.bound, f.within ? "within" : "");
  }
  if (!d.not_dumped.empty()) s += fmt::format("\nnot dumped ({}): {}\n", d.not_dumped.size(), fmt::join(d.not_dumped, ", "));
  if (!d.skipped.empty()) s += fmt::format("skipped, not decoder-layer matrices ({}): {}\n", d.skipped.size(), fmt::join(d.skipped, ", "));
  return s;
}

}  // namespace nsv
