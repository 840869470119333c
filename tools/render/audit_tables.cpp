// An audit as terminal text and as markdown tables (nsv report's per-model audits).
#include <cstdio>
#include <sstream>

#include "format.hpp"
#include "nsv/render/audit.hpp"

namespace nsv {
namespace {

using render::audit_short_name;
using render::fmt_bytes;
using render::fmt_count;
using render::fmt_pct;
using render::fmt_time;
using render::printf_format;
using render::sizes_text;

std::string exact_list(const ParamAudit& pa, Target target) {
  std::string s;
  for (const auto& st : pa.strategies) {
    if (st.target != target) continue;
    if (!st.exact()) continue;
    // * marks equality in exact arithmetic only (rounding-level differences in floating point).
    s += (s.empty() ? "" : ", ") + audit_short_name(st.strategy) + (st.promise == Promise::exact_arithmetic ? "*" : "");
  }
  return s.empty() ? "-" : s;
}

std::string divergence_cell(const ParamAudit& pa) {
  if (!pa.divergence) return "";
  const auto& d = *pa.divergence;
  std::string s = printf_format("%.3f", d.rel_diff_mean) + " (" + printf_format("%.3f", d.rel_diff_max) + "), update " + printf_format("%.3f", d.update_rel_diff_mean);
  if (d.proxy) s += " proxy " + std::to_string(d.rows) + "x" + std::to_string(d.cols) + (d.proxy_exact_ratio ? "" : "~");
  return s;
}

std::string header_line(const AuditResult& a) {
  const ModelDims& d = a.model.dims;
  const AuditOptions& o = a.options;
  return d.name + " (" + a.model.architecture + ": hidden " + std::to_string(d.hidden) + ", " + std::to_string(d.heads) +
         " heads / " + std::to_string(d.kv_heads) + " KV of " + std::to_string(d.head_dim) + ", intermediate " +
         std::to_string(d.intermediate) + ", " + std::to_string(d.layers) + " layers, vocab " + std::to_string(d.vocab) +
         (d.tie_word_embeddings ? ", tied embeddings" : "") + ") at tp = " + std::to_string(o.tp) + ", grain " +
         std::to_string(o.grain) + "; NS " + std::string(kernel_name(o.ns.kernel)) + " " + std::string(dtype_name(o.ns.dtype)) +
         ", " + std::to_string(o.ns.steps) + " steps, " + o.ns.coeffs.name;
}

}  // namespace

std::string audit_text(const AuditResult& a, bool per_rank) {
  std::ostringstream out;
  const AuditTotals& t = a.totals;
  const bool measured = a.options.measure;
  out << "nsv audit: " << header_line(a) << "\n\n";
  out << "Muon matrices of one layer (x" << t.layers << " layers):\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-10s %13s %-16s %-24s %-40s %-9s %s\n", "matrix", "shape", "role", "shard sizes",
                "exact for whole", "per_head", measured ? "`shard` NS rel.diff mean (max), update mean" : "");
  out << line;
  for (const auto& pa : a.params) {
    const auto& p = pa.param;
    std::snprintf(line, sizeof line, "%-10s %13s %-16s %-24s %-40s %-9s %s\n", p.name.c_str(),
                  (std::to_string(p.rows) + "x" + std::to_string(p.cols)).c_str(), role_name(p.role).c_str(),
                  sizes_text(pa.shard_sizes).c_str(), exact_list(pa, Target::whole).c_str(), pa.per_head_applies ? "exact" : "n/a",
                  divergence_cell(pa).c_str());
    out << line;
  }
  out << "  (* = equal in exact arithmetic, rounding-level differences in floating point)\n\n";

  out << "Estimated time per matrix and layer: the slowest rank's (owner: the mean over ranks, as the owner rotates over\n"
         "the matrices of a step); < marks the cheapest strategy exact for `whole`:\n";
  std::snprintf(line, sizeof line, "%-10s", "matrix");
  out << line;
  for (Strategy s : kAllStrategies) {
    std::snprintf(line, sizeof line, " %16s", audit_short_name(s).c_str());
    out << line;
  }
  out << "\n";
  for (const auto& pa : a.params) {
    std::snprintf(line, sizeof line, "%-10s", pa.param.name.c_str());
    out << line;
    for (Strategy s : kAllStrategies) {
      const auto& st = pa.strategy(s);
      std::string cell = st.applicable ? fmt_time(st.step_share_s) : "n/a";
      if (pa.cheapest_exact && *pa.cheapest_exact == s) cell += " <";
      std::snprintf(line, sizeof line, " %16s", cell.c_str());
      out << line;
    }
    out << "\n";
  }
  out << "\nCommunication per matrix (bytes sent by the busiest rank / messages):\n";
  for (const auto& pa : a.params) {
    std::snprintf(line, sizeof line, "%-10s", pa.param.name.c_str());
    out << line;
    for (Strategy s : kAllStrategies) {
      const auto& st = pa.strategy(s);
      std::string cell = "n/a";
      if (st.applicable) {
        std::uint64_t b = 0, msg = 0;
        for (const auto& r : st.ranks) b = std::max(b, r.bytes_sent), msg = std::max(msg, r.messages);
        cell = b == 0 ? "-" : fmt_bytes(double(b)) + "/" + std::to_string(msg);
      }
      std::snprintf(line, sizeof line, " %16s", cell.c_str());
      out << line;
    }
    out << "\n";
  }
  if (per_rank) {
    out << "\nPer rank (FLOPs, bytes sent/received, messages, extra memory, time):\n";
    for (const auto& pa : a.params)
      for (const auto& st : pa.strategies) {
        if (!st.applicable) continue;
        out << "  " << pa.param.name << " / " << strategy_name(st.strategy) << "\n";
        for (std::size_t r = 0; r < st.ranks.size(); ++r) {
          const auto& c = st.ranks[r];
          std::snprintf(line, sizeof line, "    rank %3zu  %10.3f GFLOP  sent %11s  recv %11s  msgs %4llu  mem %11s  %s\n", r,
                        double(c.flops) / 1e9, fmt_bytes(double(c.bytes_sent)).c_str(), fmt_bytes(double(c.bytes_received)).c_str(),
                        static_cast<unsigned long long>(c.messages), fmt_bytes(double(c.extra_memory)).c_str(),
                        fmt_time(c.time_s()).c_str());
          out << line;
        }
      }
  }

  out << "\nWhole model, one optimizer step (" << t.layers << " layers):\n";
  out << "  Muon parameters: " << fmt_count(t.muon_params) << " (" << fmt_count(t.muon_params_per_layer) << " per layer) of "
      << fmt_count(t.total_params) << " in the model\n";
  out << "  per-head can make exact: " << fmt_pct(t.per_head_exact_fraction_params) << " of the Muon parameters, "
      << fmt_pct(t.per_head_exact_fraction_flops) << " of the NS FLOPs (" << printf_format("%.2f", double(t.ns_flops_whole_per_step) / 1e12)
      << " TFLOP per step unsharded)\n";
  std::snprintf(line, sizeof line, "  %-32s %-26s %12s %14s %14s %12s\n", "plan", "exactness", "step time", "sent/rank",
                "sent (all)", "peak mem");
  out << line;
  for (const auto& p : t.plans) {
    std::snprintf(line, sizeof line, "  %-32s %-26s %12s %14s %14s %12s\n", std::string(plan_name(p.plan)).c_str(),
                  std::string(plan_exactness(p)).c_str(),
                  fmt_time(p.step_time_s).c_str(), fmt_bytes(double(p.bytes_sent_max_rank)).c_str(),
                  fmt_bytes(double(p.bytes_sent_total)).c_str(), fmt_bytes(double(p.peak_extra_memory)).c_str());
    out << line;
  }
  out << "\nRecommendation: " << recommendation_text(a) << "\n";
  out << "\nNotes:\n";
  for (const auto& n : a.notes) out << "  - " << note_text(n, a) << "\n";
  return out.str();
}

std::string audit_markdown(const AuditResult& a) {
  std::ostringstream out;
  const AuditTotals& t = a.totals;
  const AuditOptions& o = a.options;
  const bool measured = o.measure;
  out << "## " << a.model.dims.name << " at tp = " << o.tp << (o.grain > 1 ? ", grain " + std::to_string(o.grain) : std::string()) << "\n\n";
  out << header_line(a) << ".\n\n";
  out << "### Muon matrices of one layer\n\n";
  out << "| matrix | shape | role | shard sizes | exact for `whole` | exact for `per_head` | cheapest exact (whole) |"
      << (measured ? " `shard` NS rel. diff mean (max), update mean |" : "") << "\n";
  out << "|---|---|---|---|---|---|---|" << (measured ? "---|" : "") << "\n";
  for (const auto& pa : a.params) {
    const auto& p = pa.param;
    out << "| " << p.name << " | " << p.rows << "x" << p.cols << " | " << role_name(p.role) << " (dim " << p.split_axis << ") | "
        << sizes_text(pa.shard_sizes) << " | " << exact_list(pa, Target::whole) << " | " << (pa.per_head_applies ? "per_head" : "n/a")
        << " | " << (pa.cheapest_exact ? audit_short_name(*pa.cheapest_exact) : "-");
    if (pa.cheapest_bit_identical && pa.cheapest_exact && *pa.cheapest_bit_identical != *pa.cheapest_exact)
      out << " (bit-identical: " << audit_short_name(*pa.cheapest_bit_identical) << ")";
    out << " |";
    if (measured) out << " " << divergence_cell(pa) << " |";
    out << "\n";
  }
  out << "\n\\* equal in exact arithmetic; rounding-level differences in floating point.\n\n";
  out << "### Estimated time per matrix\n\n| matrix |";
  for (Strategy s : kAllStrategies) out << " " << strategy_name(s) << " |";
  out << "\n|---|";
  for (std::size_t i = 0; i < std::size(kAllStrategies); ++i) out << "---|";
  out << "\n";
  for (const auto& pa : a.params) {
    out << "| " << pa.param.name << " |";
    for (Strategy s : kAllStrategies) {
      const auto& st = pa.strategy(s);
      std::uint64_t b = 0;
      for (const auto& r : st.ranks) b = std::max(b, r.bytes_sent);
      out << " " << (st.applicable ? fmt_time(st.step_share_s) + (b ? " / " + fmt_bytes(double(b)) : "") : "n/a") << " |";
    }
    out << "\n";
  }
  out << "\nPer matrix and layer: estimated time (the slowest rank's; owner: the mean over ranks, as the owner rotates "
         "over the matrices of a step) / bytes sent by the busiest rank.\n\n";
  out << "### One optimizer step (" << t.layers << " layers)\n\n";
  out << "Muon parameters: " << fmt_count(t.muon_params) << " (" << fmt_count(t.muon_params_per_layer) << " per layer) of "
      << fmt_count(t.total_params) << ". Per-head can make exact " << fmt_pct(t.per_head_exact_fraction_params)
      << " of the Muon parameters and " << fmt_pct(t.per_head_exact_fraction_flops) << " of the NS FLOPs.\n\n";
  out << "| plan | exactness | est. step time | bytes sent (busiest rank) | bytes sent (all ranks) | peak extra memory |\n";
  out << "|---|---|---|---|---|---|\n";
  for (const auto& p : t.plans)
    out << "| " << plan_name(p.plan) << " | " << plan_exactness(p) << " | " << fmt_time(p.step_time_s) << " | " << fmt_bytes(double(p.bytes_sent_max_rank))
        << " | " << fmt_bytes(double(p.bytes_sent_total)) << " | " << fmt_bytes(double(p.peak_extra_memory)) << " |\n";
  out << "\n**Recommendation.** " << recommendation_text(a) << "\n\n";
  for (const auto& n : a.notes) out << "- " << note_text(n, a) << "\n";
  out << "\n";
  return out.str();
}

}  // namespace nsv
