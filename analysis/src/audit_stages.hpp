#pragma once
// The stages of run_audit (audit.cpp): one matrix, the plans over a step, the findings.
#include <vector>

#include "nsv/analysis/audit.hpp"

namespace nsv::audit_stages {

// audit_strategy.cpp: roles, shards, every strategy's promise and costs, the cheapest exact ones
// (everything but the measurement).
ParamAudit audit_param(const MuonParam&, const AuditOptions&);

// audit_totals.cpp: parameter and FLOP counts and every plan of kAllPlans over an optimizer step.
AuditTotals audit_totals(const ModelConfig&, const std::vector<ParamAudit>&, const AuditOptions&);

// audit_findings.cpp
Recommendation recommend(const AuditTotals&, int tp);
std::vector<AuditNote> audit_notes(const ModelConfig&, const std::vector<ParamAudit>&, const AuditOptions&);

}  // namespace nsv::audit_stages
