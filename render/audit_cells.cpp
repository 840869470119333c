#include "audit_cells.hpp"

#include <algorithm>

#include "format.hpp"

namespace nsv::render {

std::string exact_list(const ParamAudit& pa, Target target) {
  std::string s;
  for (const auto& st : pa.strategies) {
    if (st.target != target || !st.exact()) continue;
    // * marks equality in exact arithmetic only (rounding-level differences in floating point).
    s += (s.empty() ? "" : ", ") + audit_short_name(st.strategy) + (st.promise == Promise::exact_arithmetic ? "*" : "");
  }
  return s.empty() ? "-" : s;
}

std::string divergence_cell(const ParamAudit& pa) {
  if (!pa.divergence) return "";
  const auto& d = *pa.divergence;
  std::string s = printf_format("%.3f (%.3f), update %.3f", d.rel_diff_mean, d.rel_diff_max, d.update_rel_diff_mean);
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

std::string shape_text(const MuonParam& p) {
  const std::string shape = std::to_string(p.rows) + "x" + std::to_string(p.cols);
  return p.copies > 1 ? std::to_string(p.copies) + " x " + shape : shape;
}

std::string role_text(const MuonParam& p) {
  return p.role == Role::replicated ? role_name(p.role) : role_name(p.role) + " (dim " + std::to_string(p.split_axis) + ")";
}

std::uint64_t busiest_sent(const StrategyAudit& st) {
  std::uint64_t b = 0;
  for (const auto& r : st.ranks) b = std::max(b, r.bytes_sent);
  return b;
}

}  // namespace nsv::render
