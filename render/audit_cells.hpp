#pragma once
// Cells shared by the audit's terminal text and markdown (audit_text.cpp, audit_markdown.cpp).
#include <cstdint>
#include <string>

#include "nsv/analysis/audit.hpp"

namespace nsv::render {

// The strategies exact for `target`, short names, `*` marking exactness in exact arithmetic.
std::string exact_list(const ParamAudit&, Target);
// The measured shard divergence: "mean (max), update mean" and the proxy's shape.
std::string divergence_cell(const ParamAudit&);
// The model, tp, grain and NS configuration in one line.
std::string header_line(const AuditResult&);
// "14336x4096", or "8 x 14336x4096" for a matrix with several copies per layer (routed experts).
std::string shape_text(const MuonParam&);
// "column_parallel (dim 0)", "replicated".
std::string role_text(const MuonParam&);
// Bytes sent by the busiest rank.
std::uint64_t busiest_sent(const StrategyAudit&);

}  // namespace nsv::render
