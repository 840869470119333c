// An audit as terminal text: fixed-width tables, then the recommendation and the notes.
#include <algorithm>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "audit_cells.hpp"
#include "format.hpp"
#include "nsv/render/audit.hpp"

namespace nsv {
namespace {

using namespace render;

std::string matrices_table(const AuditResult& a) {
  const char* row = "%-10s %13s %-16s %-24s %-40s %-9s %s\n";
  std::string out = "Muon matrices of one layer (x" + std::to_string(a.totals.layers) + " layers):\n";
  out += printf_format(row, "matrix", "shape", "role", "shard sizes", "exact for whole", "per_head",
                       a.options.measure ? "`shard` NS rel.diff mean (max), update mean" : "");
  for (const auto& pa : a.params) {
    const auto& p = pa.param;
    out += printf_format(row, p.name.c_str(), shape_text(p).c_str(), role_name(p.role).c_str(), sizes_text(pa.shard_sizes).c_str(), exact_list(pa, Target::whole).c_str(),
                         pa.per_head_applies ? "exact" : "n/a", divergence_cell(pa).c_str());
  }
  return out + "  (* = equal in exact arithmetic, rounding-level differences in floating point)\n";
}

// One row per matrix, one column per strategy.
template <class Cell>
std::string strategy_rows(const AuditResult& a, Cell cell) {
  std::string out;
  for (const auto& pa : a.params) {
    out += printf_format("%-10s", pa.param.name.c_str());
    for (Strategy s : kAllStrategies) out += printf_format(" %16s", cell(pa, pa.strategy(s)).c_str());
    out += "\n";
  }
  return out;
}

std::string time_table(const AuditResult& a) {
  std::string out =
      "Estimated time per matrix and layer: the slowest rank's (owner: the mean over ranks, as the owner rotates over\n"
      "the matrices of a step); < marks the cheapest strategy exact for `whole`:\n" +
      printf_format("%-10s", "matrix");
  for (Strategy s : kAllStrategies) out += printf_format(" %16s", audit_short_name(s).c_str());
  out += "\n";
  return out + strategy_rows(a, [](const ParamAudit& pa, const StrategyAudit& st) {
           std::string cell = st.applicable ? fmt_time(st.step_share_s) : "n/a";
           if (pa.cheapest_exact && *pa.cheapest_exact == st.strategy) cell += " <";
           return cell;
         });
}

std::string communication_table(const AuditResult& a) {
  return "Communication per matrix (bytes sent by the busiest rank / messages):\n" +
         strategy_rows(a, [](const ParamAudit&, const StrategyAudit& st) -> std::string {
           if (!st.applicable) return "n/a";
           std::uint64_t msg = 0;
           for (const auto& r : st.ranks) msg = std::max(msg, r.messages);
           const std::uint64_t b = busiest_sent(st);
           return b == 0 ? "-" : fmt_bytes(double(b)) + "/" + std::to_string(msg);
         });
}

std::string per_rank_table(const AuditResult& a) {
  std::string out = "Per rank (FLOPs, bytes sent/received, messages, extra memory, time):\n";
  for (const auto& pa : a.params)
    for (const auto& st : pa.strategies) {
      if (!st.applicable) continue;
      out += "  " + pa.param.name + " / " + std::string(strategy_name(st.strategy)) + "\n";
      for (std::size_t r = 0; r < st.ranks.size(); ++r) {
        const auto& c = st.ranks[r];
        out += printf_format("    rank %3zu  %10.3f GFLOP  sent %11s  recv %11s  msgs %4llu  mem %11s  %s\n", r, double(c.flops) / 1e9,
                             fmt_bytes(double(c.bytes_sent)).c_str(), fmt_bytes(double(c.bytes_received)).c_str(),
                             static_cast<unsigned long long>(c.messages), fmt_bytes(double(c.extra_memory)).c_str(),
                             fmt_time(c.time_s()).c_str());
      }
    }
  return out;
}

std::string step_table(const AuditTotals& t) {
  const char* row = "  %-32s %-26s %12s %14s %14s %12s\n";
  std::string out = "Whole model, one optimizer step (" + std::to_string(t.layers) + " layers):\n";
  out += "  Muon parameters: " + fmt_count(t.muon_params) + " (" + fmt_count(t.muon_params_per_layer) + " per layer) of " +
         fmt_count(t.total_params) + " in the model\n";
  out += "  per-head can make exact: " + fmt_pct(t.per_head_exact_fraction_params) + " of the Muon parameters, " +
         fmt_pct(t.per_head_exact_fraction_flops) + " of the NS FLOPs (" +
         printf_format("%.2f", double(t.ns_flops_whole_per_step) / 1e12) + " TFLOP per step unsharded)\n";
  out += printf_format(row, "plan", "exactness", "step time", "sent/rank", "sent (all)", "peak mem");
  for (const auto& p : t.plans)
    out += printf_format(row, std::string(plan_name(p.plan)).c_str(), std::string(plan_exactness(p)).c_str(),
                         fmt_time(p.step_time_s).c_str(), fmt_bytes(double(p.bytes_sent_max_rank)).c_str(),
                         fmt_bytes(double(p.bytes_sent_total)).c_str(), fmt_bytes(double(p.peak_extra_memory)).c_str());
  return out;
}

}  // namespace

std::string audit_text(const AuditResult& a, bool per_rank) {
  // Sections, each after an empty line.
  std::vector<std::string> sections = {"nsv audit: " + header_line(a) + "\n", matrices_table(a), time_table(a), communication_table(a)};
  if (per_rank) sections.push_back(per_rank_table(a));
  sections.push_back(step_table(a.totals));
  sections.push_back("Recommendation: " + recommendation_text(a) + "\n");
  std::string notes = "Notes:\n";
  for (const auto& n : a.notes) notes += fmt::format("  - {}\n", note_text(n, a));
  sections.push_back(notes);
  if (a.mesh) sections.push_back(mesh_audit_markdown(*a.mesh));
  return fmt::format("{}", fmt::join(sections, "\n"));
}

}  // namespace nsv
